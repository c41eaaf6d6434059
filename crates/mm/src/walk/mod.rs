//! Range operations over the page tables: zap (munmap, MADV_DONTNEED),
//! change_protection (mprotect), MADV_FREE, MADV_COLD, MADV_PAGEOUT,
//! writeback (msync), splitting huge PMDs, reclaiming empty PTE tables and
//! `free_pgtables`. Each keeps the lock protocol of [`crate::locking`].
//!
//! - `zap`: clearing entries and releasing what they mapped
//!   (`unmap_page_range` down to `zap_pte_range`), with the PT reclaim of
//!   the tables a zap empties.
//! - `change`: the walks that change present entries in place or apply a
//!   page-level advice (`change_protection`, MADV_FREE, MADV_COLD,
//!   MADV_PAGEOUT, writeback): one walk, told what to do by a [`PteOp`].
//! - `free`: `free_pgtables`, freeing the tables no VMA covers any more.
//! - here, what they share: the walk over PMD entries and its unit
//!   ([`PmdExtent`]), splitting a huge PMD, and freeing an empty PTE table.
//!
//! The walks carry [`VirtAddr`]es; the range operations the system calls
//! start (`zap_range`, `walk_ptes`, `free_pgtables`, ...) take the VMA
//! layer's bare words and convert them once on entry.

mod change;
mod free;
mod zap;

pub(crate) use change::PteOp;

use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::{lock_plain, AddressSpace, PageKind};
use crate::vma::Vma;
use pt::{Attrs, Entry, Level, PhysAddr, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;

/// One PMD entry's share of a range walk over a VMA: `[start, end)` of
/// `vma`, whose entries all hang under the one entry of `pmd_table` for
/// `start` (a huge leaf or a PTE table). The walkers below the PMD level
/// take this instead of the four values apart.
///
/// Invariants, kept by its makers ([`AddressSpace::for_each_pmd`] and
/// fork's `copy_page_range`):
/// - `start < end`, both in the same PMD-aligned span of the space's PMD
///   size (`end` may be that span's end): an extent never crosses a PMD
///   entry, so [`PmdExtent::whole`] says whether it covers the entry;
/// - `pmd_table` is the PMD table holding the entry for `start`; the entry
///   itself may change under concurrent faults, so a walker re-reads it
///   under its lock;
/// - `[start, end)` lies inside `vma`.
#[derive(Clone, Copy)]
pub(crate) struct PmdExtent<'a> {
    pub(crate) vma: &'a Vma,
    pub(crate) pmd_table: TableAddr,
    pub(crate) start: VirtAddr,
    pub(crate) end: VirtAddr,
}

impl PmdExtent<'_> {
    /// Whether the extent covers its PMD entry's whole span (`pmd_size`,
    /// the space's PMD entry size).
    #[inline]
    pub(crate) fn whole(&self, pmd_size: u64) -> bool {
        self.end.offset_from(self.start) == pmd_size
    }
}

impl AddressSpace {
    /// Calls `f` with each PMD entry's share of `[start, end)` of `vma`
    /// whose PMD table exists, skipping missing upper tables.
    pub(crate) fn for_each_pmd(
        &self,
        vma: &Vma,
        start: VirtAddr,
        end: VirtAddr,
        f: &mut dyn FnMut(PmdExtent) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let mut a = start;
        while a < end {
            match self.find_pmd_table(a) {
                Ok(pmd_table) => {
                    let next = a.addr_end(self.pmd_size, end);
                    f(PmdExtent {
                        vma,
                        pmd_table,
                        start: a,
                        end: next,
                    })?;
                    a = next;
                }
                Err(level) => a = a.addr_end(self.pt.entry_size(level), end),
            }
        }
        Ok(())
    }

    /// Linux `__split_huge_pmd` (caller holds the PMD lock; the entry for
    /// `va` is a huge leaf): the deposited table becomes the PTE table.
    pub(crate) fn split_huge_pmd_locked(
        &self,
        vma: &Vma,
        pmd_table: TableAddr,
        va: VirtAddr,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let haddr = va.align_down(self.pmd_size);
        let Entry::Leaf { pa, .. } = self.pt.read_entry(pmd_table, Level::PMD, haddr)? else {
            return Ok(());
        };
        if let Some(rss) = self.file_pmd_rss(vma) {
            // Linux: __split_huge_pmd_locked on a file VMA only unmaps: the
            // page cache keeps the folio, later faults map it again.
            self.pt.pte_clear(pmd_table, Level::PMD, haddr);
            d.add_flush(haddr.get(), self.pmd_size);
            self.rss_add(rss, -((self.pmd_size / self.page) as i64));
            return Ok(());
        }
        let dep = lock_plain(&self.deposits)
            .remove(&haddr.get())
            .ok_or_else(|| Errno::Internal(format!("no deposited table for {haddr:#x}")))?;
        let zero = Some(pa) == self.huge_zero_pa;
        // Linux: __split_huge_zero_page_pmd maps the small zero page.
        let each = zero.then(|| {
            (
                PhysAddr::new(self.zero_pa),
                self.leaf_attrs(vma, PageKind::Zero, false),
            )
        });
        if !zero {
            let n = self.pmd_size / self.page;
            self.anon_huge.fetch_sub(n as i64, Ordering::Relaxed);
            // A folio shared by fork: every PTE of the split keeps the
            // PMD's (cleared) PageAnonExclusive.
            if self.not_exclusive.remove(pa) {
                for i in 0..n {
                    self.not_exclusive.insert(pa + i * self.page);
                }
            }
        }
        // The deposit was counted; installing it counts it again.
        self.pt.uncount_table(Level::PTE);
        self.pt
            .split_huge_leaf(pmd_table, Level::PMD, haddr, dep, each)?;
        d.add_flush(haddr.get(), self.pmd_size);
        Ok(())
    }

    /// Handles a huge PMD leaf met by a range operation over `ext`: splits
    /// it when the extent covers only part of it. Hands the leaf to `whole`
    /// (with the PMD lock held) when covered whole.
    fn huge_pmd_range(
        &self,
        ctx: &mut ThreadCtx,
        ext: PmdExtent,
        d: &mut Deferred,
        whole: &mut dyn FnMut(&mut Deferred, u64, Attrs) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let g = self.pmd_lock(ctx, ext.pmd_table);
        if let Entry::Leaf { pa, attrs, .. } =
            self.pt.read_entry(ext.pmd_table, Level::PMD, ext.start)?
        {
            if ext.whole(self.pmd_size) {
                whole(d, pa, attrs)?;
            } else {
                self.split_huge_pmd_locked(ext.vma, ext.pmd_table, ext.start, d)?;
            }
        }
        drop(g);
        Ok(())
    }

    /// After [`AddressSpace::huge_pmd_range`] handled a huge leaf: whether
    /// the PMD entry is done with. It is when the extent covered it whole,
    /// unless a racing fault split the huge zero page meanwhile (then the
    /// new PTE table is walked).
    fn huge_leaf_done(&self, ext: PmdExtent) -> Result<bool, Errno> {
        Ok(ext.whole(self.pmd_size)
            && !matches!(
                self.pt.read_entry(ext.pmd_table, Level::PMD, ext.start)?,
                Entry::Table { .. }
            ))
    }

    /// Linux `try_to_free_pte`: PMD lock, then PTE lock with the `pmd_same`
    /// re-check, then the emptiness re-check (invariant 5), then unlink.
    pub(crate) fn try_to_free_pte(
        &self,
        ctx: &mut ThreadCtx,
        pmd_table: TableAddr,
        table: TableAddr,
        va: VirtAddr,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let haddr = va.align_down(self.pmd_size);
        let pml = self.pmd_lock(ctx, pmd_table);
        if self.pt.next_table(pmd_table, Level::PMD, haddr) != Some(table) {
            drop(pml);
            return Ok(());
        }
        let (pm, _) = self.pmd_lockptr(pmd_table);
        let (tm, class) = self.pte_lockptr(table);
        let ptl = if std::ptr::eq(pm, tm) {
            None
        } else {
            Some(self.lock_counted(ctx, tm, class))
        };
        if self.pt.present_entries(table) == 0 {
            self.pt.unlink_table(pmd_table, Level::PMD, haddr);
            d.add_table(Level::PTE, table, haddr.get(), self.pmd_size);
        }
        drop(ptl);
        drop(pml);
        Ok(())
    }
}
