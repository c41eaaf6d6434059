//! Collapsing PTE-mapped anonymous ranges into PMD-mapped THPs: MADV_COLLAPSE
//! and khugepaged's scan, as Linux 6.18 does them for private anonymous
//! memory (mm/khugepaged.c: `madvise_collapse`, `khugepaged_scan_mm_slot`,
//! `hpage_collapse_scan_pmd`, `collapse_huge_page`), as measured on a 6.18
//! host (the collapse-* and khugepaged-* validation workloads):
//!
//! - Only whole 2 MiB-aligned ranges inside one VMA collapse; the rest of
//!   the advised range is left alone.
//! - A range whose PMD entry is empty (never faulted, or its table freed)
//!   cannot collapse: MADV_COLLAPSE fails with EINVAL there and tries no
//!   further range. A range already PMD-mapped counts as collapsed.
//! - A PTE table's entries may be empty, map the zero page, map pages
//!   another process shares (fork) or be read-only: MADV_COLLAPSE takes
//!   them all; khugepaged refuses more than `max_ptes_none` empty or zero
//!   entries, more than `max_ptes_shared` shared pages, and a range with no
//!   page of its own (nothing referenced).
//! - The collapse copies the pages into a new THP mapped by one PMD entry
//!   (RssAnon counts all 512 pages, AnonHugePages 2 MiB), frees the old
//!   pages (a shared one stays with the other process), and deposits the
//!   PTE table (VmPTE unchanged). The new THP goes on the deferred split
//!   queue, as a fault's does.
//! - MADV_COLLAPSE ignores the THP sysfs mode (it works without
//!   MADV_HUGEPAGE) but not MADV_NOHUGEPAGE (EINVAL); khugepaged scans only
//!   VMAs where a fault could take a THP (`thp_allowed`).
//!
//! MADV_COLLAPSE of shmem (`hpage_collapse_scan_file`) is in
//! `collapse_file`; of a regular file's page cache it fails with EINVAL, as
//! in Linux 6.18 built without `CONFIG_READ_ONLY_THP_FOR_FS`.

use super::collapse_file::FileScan;
use super::{AddressSpace, PageKind, Rss};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::Vma;
use pt::{Entry, Level, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;

/// The result of scanning one PMD range (Linux's `SCAN_*` codes that the
/// model can meet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// `SCAN_SUCCEED`: collapse this PTE table.
    Succeed(TableAddr, TableAddr),
    /// `SCAN_PMD_MAPPED`: already a huge PMD.
    PmdMapped,
    /// `SCAN_PMD_NONE` / `SCAN_PMD_NULL`: no PTE table.
    PmdNone,
    /// `SCAN_EXCEED_NONE_PTE` (khugepaged only).
    ExceedNone,
    /// `SCAN_EXCEED_SHARED_PTE` (khugepaged only).
    ExceedShared,
    /// `SCAN_LACK_REFERENCED_PAGE` (khugepaged only).
    LackReferenced,
    /// A swap entry in the range: Linux swaps such pages in first
    /// (`__collapse_huge_page_swapin`, up to `max_ptes_swap` for
    /// khugepaged); the model leaves the range as it is.
    Swapped,
}

impl AddressSpace {
    // Linux: mm/khugepaged.c, madvise_collapse
    /// MADV_COLLAPSE over `[addr, addr + len)`: collapses every whole
    /// aligned PMD range of each anonymous VMA there into a THP.
    ///
    /// # Errors
    /// [`Errno::Inval`] for a misaligned address, a VMA that cannot hold a
    /// THP (MADV_NOHUGEPAGE, page cache, no PMD leaves) or a range that
    /// could not be collapsed; [`Errno::NoMem`] for a hole in the range or
    /// no memory for the THP.
    pub fn madvise_collapse(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
    ) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self
            .collapse_range(ctx, addr, len, false, &mut d)
            .map(|_| ());
        self.finish_op(r, d)
    }

    // Linux: mm/khugepaged.c, khugepaged_scan_mm_slot (one pass over the range)
    /// What khugepaged does to `[addr, addr + len)` once its scan has
    /// passed over it: collapses each PMD range its limits allow (in VMAs
    /// where a fault could take a THP). Returns the ranges collapsed.
    ///
    /// # Errors
    /// [`Errno::NoMem`] if no memory is left for a THP;
    /// [`Errno::Internal`] on an inconsistency of the tables.
    pub fn khugepaged_scan(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
    ) -> Result<(Deferred, u64), Errno> {
        let mut d = Deferred::none();
        let r = self.collapse_range(ctx, addr, len, true, &mut d);
        let mut n = 0;
        let r = r.map(|c| n = c);
        self.finish_op(r, d).map(|d| (d, n))
    }

    /// The walk of [`Self::madvise_collapse`] and [`Self::khugepaged_scan`]:
    /// the number of ranges collapsed.
    pub(super) fn collapse_range(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        khugepaged: bool,
        d: &mut Deferred,
    ) -> Result<u64, Errno> {
        if !addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("madvise address not page-aligned"));
        }
        let len = self
            .page_align(len)
            .ok_or(Errno::NoMem("length overflows"))?;
        let end = addr
            .checked_add(len)
            .ok_or(Errno::NoMem("range wraps around"))?;
        // collapse_huge_page takes the mmap lock for writing; the model
        // holds it over the scan too (nothing else runs in between).
        let vmas = self.mmap_write(ctx);
        let list: Vec<Vma> = vmas.overlapping(addr, end).cloned().collect();
        let covered: u64 = list
            .iter()
            .map(|v| v.end.min(end) - v.start.max(addr))
            .sum();
        let mut collapsed = 0;
        for vma in &list {
            if !khugepaged && vma.is_shmem() {
                if !self.shmem_collapsible(vma) {
                    return Err(Errno::Inval(
                        "MADV_COLLAPSE of a VMA that cannot hold a THP",
                    ));
                }
                let hstart = vma.start.max(addr).next_multiple_of(self.pmd_size);
                let hend = vma.end.min(end) & !(self.pmd_size - 1);
                for h in (hstart..hend).step_by(self.pmd_size as usize) {
                    match self.collapse_shmem_range(ctx, vma, h, d)? {
                        FileScan::Collapsed => collapsed += 1,
                        FileScan::PmdMapped => {}
                        FileScan::Truncated => {
                            self.flush_unlinked_tables(ctx, d);
                            return Err(Errno::Inval("MADV_COLLAPSE of a range with no page"));
                        }
                    }
                }
                self.flush_unlinked_tables(ctx, d);
                continue;
            }
            let eligible = vma.is_anon()
                && !vma.flags.nohugepage
                && self.huge_zero_pa.is_some()
                && self.vma_holds_pmd(vma);
            if !eligible {
                if khugepaged {
                    continue;
                }
                return Err(Errno::Inval(
                    "MADV_COLLAPSE of a VMA that cannot hold a THP",
                ));
            }
            let hstart = vma.start.max(addr).next_multiple_of(self.pmd_size);
            let hend = vma.end.min(end) & !(self.pmd_size - 1);
            let mut h = hstart;
            while h < hend {
                let haddr = VirtAddr::new(h);
                h += self.pmd_size;
                if khugepaged && !self.thp_allowed(vma, haddr.get()) {
                    continue;
                }
                match self.scan_pmd(vma, haddr, khugepaged)? {
                    Scan::Succeed(pmd_table, table) => {
                        self.collapse_huge_page(ctx, vma, pmd_table, table, haddr, d)?;
                        collapsed += 1;
                    }
                    Scan::PmdMapped => {}
                    Scan::PmdNone if !khugepaged => {
                        return Err(Errno::Inval("MADV_COLLAPSE of a range with no PTE table"));
                    }
                    Scan::PmdNone
                    | Scan::ExceedNone
                    | Scan::ExceedShared
                    | Scan::LackReferenced
                    | Scan::Swapped => {}
                }
            }
        }
        drop(vmas);
        if covered < end - addr && !khugepaged {
            return Err(Errno::NoMem("madvise range has a hole"));
        }
        Ok(collapsed)
    }

    // Linux: mm/khugepaged.c, hpage_collapse_scan_pmd
    /// Whether the PMD range at `haddr` may collapse.
    fn scan_pmd(&self, vma: &Vma, haddr: VirtAddr, khugepaged: bool) -> Result<Scan, Errno> {
        let Ok(pmd_table) = self.find_pmd_table(haddr) else {
            return Ok(Scan::PmdNone);
        };
        let table = match self.pt.read_entry(pmd_table, Level::PMD, haddr)? {
            Entry::Invalid | Entry::Swap { .. } => return Ok(Scan::PmdNone),
            Entry::Leaf { .. } => return Ok(Scan::PmdMapped),
            Entry::Table { pa } => TableAddr::new(pa),
        };
        let limits = self.cfg.khugepaged;
        let (mut none_or_zero, mut shared, mut referenced) = (0u32, 0u32, 0u32);
        let n = self.pmd_size / self.page;
        for i in 0..n {
            let va = haddr.add(i * self.page);
            match self.pt.read_entry(table, Level::PTE, va)? {
                Entry::Leaf { pa, .. } if pa != self.zero_pa => {
                    if self.classify(vma, va.get(), pa) != PageKind::Anon {
                        return Err(Errno::Internal(format!(
                            "a page-cache page in anonymous VMA at {:#x}",
                            va.get()
                        )));
                    }
                    let head = self.folio_of(pa).map_or(pa, |(h, _)| h);
                    if self.shares.shared(head) {
                        shared += 1;
                        if khugepaged && shared > limits.max_ptes_shared {
                            return Ok(Scan::ExceedShared);
                        }
                    }
                    // The model's entries are all young.
                    referenced += 1;
                }
                Entry::Table { .. } => {
                    return Err(Errno::Internal("a table entry in a PTE table".into()));
                }
                Entry::Swap { .. } => return Ok(Scan::Swapped),
                _ => {
                    none_or_zero += 1;
                    if khugepaged && none_or_zero > limits.max_ptes_none {
                        return Ok(Scan::ExceedNone);
                    }
                }
            }
        }
        if khugepaged && referenced == 0 {
            return Ok(Scan::LackReferenced);
        }
        Ok(Scan::Succeed(pmd_table, table))
    }

    // Linux: mm/khugepaged.c, collapse_huge_page (+ __collapse_huge_page_copy)
    /// Replaces the PTE table `table` at `haddr` by a new THP holding its
    /// pages' contents, the table deposited under the huge PMD entry.
    fn collapse_huge_page(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        table: TableAddr,
        haddr: VirtAddr,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let mem = self.pt.mem();
        let folio = mem
            .alloc_data(self.pmd_size)
            .map_err(|_| Errno::NoMem("no memory for a THP"))?;
        // Linux: alloc_charge_folio counts THP_COLLAPSE_ALLOC.
        ctx.counters.thp_collapse_alloc += 1;
        let Some(pte_guard) = self.pte_offset_map_lock(ctx, pmd_table, haddr, table) else {
            mem.free_data(folio, self.pmd_size)?;
            return Err(Errno::Internal("the collapsed PTE table vanished".into()));
        };
        let n = self.pmd_size / self.page;
        let mut filled = Vec::new();
        let mut none_or_zero = 0;
        for i in 0..n {
            let va = haddr.add(i * self.page);
            match self.pt.ptep_get_and_clear(table, Level::PTE, va)? {
                Entry::Leaf { pa, .. } if pa != self.zero_pa => {
                    // A page of a large folio holds data only where a
                    // write reached it; any other anonymous page was made
                    // by a write.
                    let written = self.folio_of(pa).is_none() || self.shares.written.contains(pa);
                    if written {
                        filled.push(i);
                    }
                    // The old page's share of RssAnon passes to the THP.
                    self.put_anon_page(pa, d);
                }
                _ => none_or_zero += 1,
            }
        }
        drop(pte_guard);
        // pmdp_collapse_flush: the table leaves the tree and becomes the
        // THP's deposit (still counted in VmPTE).
        let g = self.pmd_lock(ctx, pmd_table);
        let Some(dep) = self.pt.unlink_table(pmd_table, Level::PMD, haddr) else {
            return Err(Errno::Internal("the collapsed PTE table vanished".into()));
        };
        let attrs = self.leaf_attrs(vma, PageKind::Anon, true);
        self.add_folio(folio, self.pmd_size);
        for i in filled {
            self.shares.written.insert(folio + i * self.page);
        }
        super::lock_plain(&self.deposits).insert(haddr.get(), dep);
        self.pt.set_entry(
            pmd_table,
            Level::PMD,
            haddr,
            &Entry::Leaf {
                pa: folio,
                attrs,
                contiguous: false,
            },
        );
        drop(g);
        self.rss_add(Rss::Anon, none_or_zero);
        self.anon_huge.fetch_add(n as i64, Ordering::Relaxed);
        d.add_flush(haddr.get(), self.pmd_size);
        d.flush_tables = true;
        Ok(())
    }
}
