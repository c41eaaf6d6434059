//! MADV_COLLAPSE of shmem: a PMD range of a shmem object turned into one
//! PMD-sized folio mapped by one PMD entry, as Linux 6.18 does it
//! (mm/khugepaged.c `hpage_collapse_scan_file`, `collapse_file`,
//! `retract_page_tables`, `collapse_pte_mapped_thp`), as measured on a 6.18
//! host (the shmem-collapse-* validation workloads):
//!
//! - The mount's `huge=` option does not matter (MADV_COLLAPSE forces it,
//!   unless `shmem_enabled` is `deny`);
//!   MADV_NOHUGEPAGE does, and so does the VMA: only whole 2 MiB ranges whose
//!   file offset is aligned like their address collapse; a VMA with none
//!   fails the call with EINVAL.
//! - A range already mapped by a PMD counts as collapsed. A range whose
//!   pages are one PMD-sized folio already is mapped by a PMD here (its PTE
//!   table freed).
//! - A range with no page of the object at all fails with EINVAL, and the
//!   ranges after it are not tried (`SCAN_TRUNCATED` ends the walk).
//! - Otherwise the pages are copied into a new PMD-sized folio and its holes
//!   filled with zeros (every hole: MADV_COLLAPSE ignores `max_ptes_none`);
//!   the old pages are unmapped from every process and freed; the PTE table
//!   of the range is freed (VmPTE drops) and the calling process maps the
//!   new folio by one PMD entry (RssShmem counts all 2 MiB, no fault). In
//!   another process of the family the pages are unmapped but the model
//!   keeps its PTE table (Linux's `retract_page_tables` frees it too).

use super::{AddressSpace, PageKind, Rss};
use crate::cache::{MemObject, ObjectKind, Slot};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::Vma;
use pt::{Entry, Level, VirtAddr};

/// What became of one shmem PMD range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FileScan {
    /// Collapsed now (a new folio, or an existing one mapped by a PMD).
    Collapsed,
    /// Already mapped by a PMD entry.
    PmdMapped,
    /// No page of the object in the range (`SCAN_TRUNCATED`).
    Truncated,
}

impl AddressSpace {
    /// Whether MADV_COLLAPSE may make a THP anywhere in the shmem `vma`
    /// (Linux `thp_vma_allowable_order` with `TVA_FORCED_COLLAPSE`): not
    /// advised `nohugepage`, its file offset aligned like its address, and
    /// the shmem policies allow the PMD order when forced (only
    /// `shmem_enabled = deny`, or a PMD-size policy `never` on anonymous
    /// shmem, refuses).
    pub(super) fn shmem_collapsible(&self, vma: &Vma) -> bool {
        let pmd_pages = self.pmd_size >> self.page_shift;
        vma.is_shmem()
            && vma.shared
            && !vma.flags.nohugepage
            && self.huge_zero_pa.is_some()
            && self.vma_holds_pmd(vma)
            && (vma.start >> self.page_shift)
                .wrapping_sub(vma.pgoff(self.page_shift))
                .is_multiple_of(pmd_pages)
            && vma.object().is_some_and(|o| {
                let head = vma.pgoff(self.page_shift) & !(pmd_pages - 1);
                self.shmem_pmd_order_allowed(vma, o, head, true)
            })
    }

    // Linux: mm/khugepaged.c, hpage_collapse_scan_file → collapse_file →
    // retract_page_tables, then collapse_pte_mapped_thp (install_pmd)
    /// Collapses the PMD range at `haddr` of the shmem `vma`.
    pub(super) fn collapse_shmem_range(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        haddr: u64,
        d: &mut Deferred,
    ) -> Result<FileScan, Errno> {
        let obj = vma
            .object()
            .filter(|o| o.kind == ObjectKind::Shmem)
            .ok_or(Errno::Inval("not a shmem mapping"))?;
        let va = VirtAddr::new(haddr);
        let pmd_table = self.alloc_pmd_table(ctx, va)?;
        if matches!(
            self.pt.read_entry(pmd_table, Level::PMD, va)?,
            Entry::Leaf { .. }
        ) {
            return Ok(FileScan::PmdMapped);
        }
        let pmd_pages = self.pmd_size >> self.page_shift;
        let pmd_order = pmd_pages.trailing_zeros() as u8;
        let head = vma.pgoff_of(haddr, self.page_shift);
        let pa = {
            let pages = obj.lock();
            match pages.get(&head).copied() {
                Some(Slot::Cached { pa, folio, .. }) if folio.block => pa,
                _ => {
                    let present = (head..head + pmd_pages)
                        .any(|i| matches!(pages.get(&i), Some(Slot::Cached { .. })));
                    // collapse_file allocates the new folio (counted in
                    // thp_collapse_alloc) before it finds the range empty.
                    ctx.counters.thp_collapse_alloc += 1;
                    if !present {
                        return Ok(FileScan::Truncated);
                    }
                    drop(pages);
                    // collapse_file: the old pages leave every mapping first.
                    self.zap_range(ctx, vma, haddr, haddr + self.pmd_size, false, d)?;
                    self.zap_object_others(ctx, obj, head, head + pmd_pages)?;
                    let mut pages = obj.lock();
                    let (pa, old) = obj.replace_with_pmd_folio(&mut pages, head, pmd_order)?;
                    d.frames.extend(old);
                    pa
                }
            }
        };
        // retract_page_tables (this process's table; its PTEs map nothing
        // of the old pages any more, or only subpages of the folio), then
        // set_huge_pmd.
        let g = self.pmd_lock(ctx, pmd_table);
        if let Entry::Table { .. } = self.pt.read_entry(pmd_table, Level::PMD, va)? {
            drop(g);
            self.zap_range(ctx, vma, haddr, haddr + self.pmd_size, false, d)?;
            let _g = self.pmd_lock(ctx, pmd_table);
            if let Some(t) = self.pt.unlink_table(pmd_table, Level::PMD, va) {
                d.add_table(Level::PTE, t, haddr, self.pmd_size);
            }
        } else {
            drop(g);
        }
        let _g = self.pmd_lock(ctx, pmd_table);
        if self.pt.is_none(pmd_table, Level::PMD, va) {
            let attrs = self.leaf_attrs(vma, PageKind::Cache(Rss::Shmem), false);
            self.pt.set_entry(
                pmd_table,
                Level::PMD,
                va,
                &Entry::Leaf {
                    pa,
                    attrs,
                    contiguous: false,
                },
            );
            self.rss_add(Rss::Shmem, pmd_pages as i64);
        }
        Ok(FileScan::Collapsed)
    }
}

impl MemObject {
    /// Replaces the pages `[head, head + 2^pmd_order)` of a shmem object
    /// by one new PMD-sized folio holding their contents, its holes zeroed
    /// (Linux `collapse_file`: the new folio is dirty). Returns the new
    /// folio's frame and the old frames to free once unmapped.
    pub(crate) fn replace_with_pmd_folio(
        &self,
        pages: &mut std::collections::HashMap<u64, Slot>,
        head: u64,
        pmd_order: u8,
    ) -> Result<(u64, Vec<(u64, u64)>), Errno> {
        let page = 1u64 << self.mem.page_shift();
        let n = 1u64 << pmd_order;
        let mut old = Vec::new();
        for i in head..head + n {
            if let Some(Slot::Cached { pa, folio, .. }) = pages.remove(&i) {
                if folio.block {
                    // A PMD-sized folio is one frame, freed by its head.
                    if i & ((1u64 << folio.order) - 1) == 0 {
                        old.push((pa, page << folio.order));
                    }
                } else {
                    old.push((pa, page));
                }
            }
        }
        if !self.shmem_add_pmd_folio(pages, head, pmd_order)? {
            return Err(Errno::Internal("the collapsed range was emptied".into()));
        }
        for i in head..head + n {
            Self::set_dirty(pages, i, true);
        }
        let Some(Slot::Cached { pa, .. }) = pages.get(&head).copied() else {
            return Err(Errno::Internal("no new folio".into()));
        };
        Ok((pa, old))
    }
}
