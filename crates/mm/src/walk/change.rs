//! The walks that visit the present entries of a range and change them in
//! place or apply a page-level advice to them: mprotect's
//! `change_protection`, MADV_FREE, MADV_COLD, MADV_PAGEOUT and the
//! writeback of msync. One walk ([`AddressSpace::walk_ptes`]) does all of
//! them; a [`PteOp`] says which, and each of its arms names the Linux
//! function it mirrors.

use super::PmdExtent;
use crate::cache::MemObject;
use crate::config::Reclaim;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::{AddressSpace, Elsewhere, HugeStep, PageAdvice, PageKind, Rss};
use crate::vma::Vma;
use pt::{Attrs, Entry, Level, TableAddr, VirtAddr};

/// What [`AddressSpace::walk_ptes`] does with each present entry of a
/// range.
#[derive(Clone, Copy)]
pub(crate) enum PteOp<'a> {
    /// Linux `change_protection` (mprotect; the VMA already carries the new
    /// protection).
    Protect,
    /// Linux `madvise_free_single_vma` (MADV_FREE).
    Free,
    /// Linux `madvise_pageout` (MADV_PAGEOUT); the object pages another
    /// process maps are kept. Made by [`AddressSpace::pageout`].
    PageOut(&'a Elsewhere),
    /// Linux `madvise_cold` (MADV_COLD).
    Cold,
    /// The writeback of a shared file range (msync; Linux `folio_mkclean`).
    Writeback,
}

impl PteOp<'_> {
    /// The page-level advice this op applies, if it is one.
    fn reclaim(self) -> Option<PageAdvice> {
        match self {
            PteOp::Free => Some(PageAdvice::Free),
            PteOp::PageOut(_) => Some(PageAdvice::PageOut),
            PteOp::Cold => Some(PageAdvice::Cold),
            PteOp::Protect | PteOp::Writeback => None,
        }
    }
}

/// A present PTE met by the walk, as read under its table's lock.
#[derive(Clone, Copy)]
struct PresentPte {
    va: VirtAddr,
    pa: u64,
    attrs: Attrs,
    contiguous: bool,
}

impl AddressSpace {
    /// Applies `op` to every present entry in `[start, end)` of `vma`,
    /// splitting huge PMDs the range covers only in part.
    pub(crate) fn walk_ptes(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        start: u64,
        end: u64,
        op: PteOp,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let (start, end) = (VirtAddr::new(start), VirtAddr::new(end));
        self.for_each_pmd(vma, start, end, &mut |ext| loop {
            match self.pt.read_entry(ext.pmd_table, Level::PMD, ext.start)? {
                Entry::Invalid | Entry::Swap { .. } => return Ok(()),
                Entry::Leaf { .. } => {
                    if let Some(how) = op.reclaim() {
                        match self.huge_pmd_reclaim(ctx, ext, how, d)? {
                            HugeStep::Done => return Ok(()),
                            HugeStep::Walk => continue,
                            HugeStep::Lazyfree => {}
                        }
                    }
                    self.huge_pmd_range(ctx, ext, d, &mut |d, pa, attrs| {
                        self.huge_pmd_op(ext, pa, attrs, op, d)
                    })?;
                    if self.huge_leaf_done(ext)? {
                        return Ok(());
                    }
                }
                Entry::Table { pa } => {
                    if self.pte_table_op(ctx, ext, TableAddr::new(pa), op, d)? {
                        return Ok(());
                    }
                }
            }
        })
    }

    /// Linux `madvise_pageout` over `[start, end)` of `vma`.
    pub(crate) fn pageout(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        start: u64,
        end: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let elsewhere = match vma.object() {
            Some(obj) => self.mapped_elsewhere(
                ctx,
                obj,
                vma.pgoff_of(start, self.page_shift),
                vma.pgoff_of(end, self.page_shift),
            ),
            None => Elsewhere::Pages(Default::default()),
        };
        self.walk_ptes(ctx, vma, start, end, PteOp::PageOut(&elsewhere), d)
    }

    /// `op` on the huge PMD leaf `ext` covers whole (PMD lock held).
    fn huge_pmd_op(
        &self,
        ext: PmdExtent,
        pa: u64,
        attrs: Attrs,
        op: PteOp,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let PmdExtent {
            vma,
            pmd_table,
            start: a,
            ..
        } = ext;
        let attrs = match op {
            // Linux: change_huge_pmd
            PteOp::Protect => {
                let kind = if Some(pa) == self.huge_zero_pa {
                    PageKind::Zero
                } else if let Some(rss) = self.file_pmd_rss(vma) {
                    PageKind::Cache(rss)
                } else {
                    PageKind::Anon
                };
                let mut new = self.leaf_attrs(vma, kind, attrs.dirty);
                // can_change_pmd_writable: not for a folio fork left
                // non-exclusive.
                if kind == PageKind::Anon && !self.not_exclusive.exclusive(pa) {
                    new.perms.write = false;
                }
                new
            }
            // Linux: madvise_free_huge_pmd (lazyfree: clean, old)
            PteOp::Free => Attrs {
                dirty: false,
                accessed: false,
                ..attrs
            },
            _ => attrs,
        };
        if attrs != self.huge_attrs(pmd_table, a)? {
            self.pt.set_entry(
                pmd_table,
                Level::PMD,
                a,
                &Entry::Leaf {
                    pa,
                    attrs,
                    contiguous: false,
                },
            );
            d.add_flush(a.get(), self.pmd_size);
        }
        Ok(())
    }

    /// `op` on every present PTE of `ext` in its PTE table `table` (the
    /// PTE-level half of Linux `change_pte_range` and the madvise walks).
    /// `Ok(false)`: the PMD entry changed before the table could be locked;
    /// the caller looks again.
    fn pte_table_op(
        &self,
        ctx: &mut ThreadCtx,
        ext: PmdExtent,
        table: TableAddr,
        op: PteOp,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        let PmdExtent {
            vma,
            pmd_table,
            start: a,
            end: next,
        } = ext;
        let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, a, table) else {
            return Ok(false);
        };
        self.pt.contpte_try_unfold(table, Level::PTE, a)?;
        if !next.is_aligned(self.pmd_size) {
            self.pt.contpte_try_unfold(table, Level::PTE, next)?;
        }
        if let Some(how) = op.reclaim() {
            self.split_for_reclaim(ext, table, how, d)?;
        }
        let mut va = a;
        while va < next {
            let e = self.pt.read_entry(table, Level::PTE, va)?;
            // Linux: madvise_free_pte_range frees a swap entry (the page
            // is lazily freed as it lies: gone; the next read maps zero).
            if let (Entry::Swap { val }, PteOp::Free) = (e, op) {
                self.zap_swap_pte(table, va, val, d);
            }
            if let Entry::Leaf {
                pa,
                attrs,
                contiguous,
            } = e
            {
                let pte = PresentPte {
                    va,
                    pa,
                    attrs,
                    contiguous,
                };
                self.pte_op(vma, table, pte, op, d)?;
            }
            va += self.page;
        }
        let eager_free = self.cfg.reclaim == Reclaim::Eager && self.pt.present_entries(table) == 0;
        drop(g);
        if eager_free {
            self.try_to_free_pte(ctx, pmd_table, table, a, d)?;
        }
        Ok(true)
    }

    fn huge_attrs(&self, pmd_table: TableAddr, va: VirtAddr) -> Result<Attrs, Errno> {
        match self.pt.read_entry(pmd_table, Level::PMD, va)? {
            Entry::Leaf { attrs, .. } => Ok(attrs),
            _ => Err(Errno::Internal("huge leaf vanished under its lock".into())),
        }
    }

    /// `op` on the present PTE `pte` of `table` (PTE lock held).
    fn pte_op(
        &self,
        vma: &Vma,
        table: TableAddr,
        pte: PresentPte,
        op: PteOp,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let PresentPte {
            va,
            pa,
            attrs,
            contiguous,
        } = pte;
        let kind = self.classify(vma, va.get(), pa);
        let new = match op {
            // Linux: change_pte_range (pte_modify + can_change_pte_writable)
            PteOp::Protect => {
                let dirty = attrs.dirty;
                let mut new = Attrs {
                    accessed: attrs.accessed,
                    ..self.leaf_attrs(vma, kind, dirty)
                };
                // can_change_pte_writable: an anonymous page that fork
                // made non-exclusive stays read-only (the write faults).
                if kind == PageKind::Anon && !self.not_exclusive.exclusive(pa) {
                    new.perms.write = false;
                }
                new
            }
            // Linux: madvise_free_pte_range: anon pages become clean and old
            // (lazyfree); they stay mapped and in RSS until reclaim.
            PteOp::Free => {
                // madvise_free_pte_range skips folios another process maps.
                if kind != PageKind::Anon || self.shares.shared(self.share_head(pa)) {
                    return Ok(());
                }
                // A page in the swap cache leaves it first, or is skipped
                // while another entry names its slot (folio_free_swap).
                if self.shares.swap.slot_of_frame(pa).is_some() && !self.shares.swap.free_swap(pa) {
                    return Ok(());
                }
                if self.has_swap() && self.folio_of(pa).is_none() {
                    self.lazyfree_pages.insert(pa);
                }
                Attrs {
                    dirty: false,
                    accessed: false,
                    ..attrs
                }
            }
            // Linux: madvise_pageout → reclaim_pages: with no swap only clean
            // file pages mapped once can go; they are unmapped and evicted.
            PteOp::Cold => return Ok(()),
            PteOp::PageOut(elsewhere) => {
                if kind == PageKind::Anon {
                    self.pageout_anon_pte(table, va, pa, attrs.dirty, d);
                    return Ok(());
                }
                if let PageKind::Cache(rss) = kind {
                    if !elsewhere.contains(vma.pgoff_of(va.get(), self.page_shift)) {
                        self.pageout_cache_pte(vma, table, va, attrs.dirty, rss, d);
                    }
                }
                return Ok(());
            }
            // Linux: folio_mkclean: write-protect and clean every mapping of
            // a dirty page being written back.
            PteOp::Writeback => {
                let Some(obj) = vma.object() else {
                    return Ok(());
                };
                if kind != PageKind::Cache(Rss::File) {
                    return Ok(());
                }
                let idx = vma.pgoff_of(va.get(), self.page_shift);
                let mut pages = obj.lock();
                if !attrs.dirty && !MemObject::is_dirty(&pages, idx) {
                    return Ok(());
                }
                MemObject::set_dirty(&mut pages, idx, false);
                self.leaf_attrs(vma, kind, false)
            }
        };
        if new != attrs {
            self.pt.set_entry(
                table,
                Level::PTE,
                va,
                &Entry::Leaf {
                    pa,
                    attrs: new,
                    contiguous,
                },
            );
            d.add_flush(va.get(), self.page);
        }
        Ok(())
    }
}
