//! Zapping a range (Linux mm/memory.c `unmap_page_range` down to
//! `zap_pte_range`, mm/huge_memory.c `zap_huge_pmd`): entries cleared, what
//! they mapped gathered for release after the flush, and, with PT reclaim
//! (mm/pt_reclaim.c), the PTE tables the zap empties freed.

use super::PmdExtent;
use crate::cache::MemObject;
use crate::config::Reclaim;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::{lock_plain, AddressSpace, PageKind, Rss};
use crate::vma::Vma;
use pt::{Entry, Level, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;

impl AddressSpace {
    /// Linux `unmap_page_range` over `[start, end)` of `vma`; with
    /// `reclaim_pt` (MADV_DONTNEED) PTE tables emptied over their whole
    /// range are freed when reclaim is on (Linux `zap_pte_range` with
    /// `details->reclaim_pt`); with eager reclaim every emptied table is.
    pub(crate) fn zap_range(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        start: u64,
        end: u64,
        reclaim_pt: bool,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let (start, end) = (VirtAddr::new(start), VirtAddr::new(end));
        self.for_each_pmd(vma, start, end, &mut |ext| {
            self.zap_pmd_entry(ctx, ext, reclaim_pt, d)?;
            // No page-table lock is held here: a batch that filled (a THP's
            // entry, a reclaimed table) is flushed now.
            self.gather_check(ctx, d)
        })
    }

    /// One PMD entry's share of a zap (Linux `zap_pmd_range`'s loop body).
    fn zap_pmd_entry(
        &self,
        ctx: &mut ThreadCtx,
        ext: PmdExtent,
        reclaim_pt: bool,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        loop {
            match self.pt.read_entry(ext.pmd_table, Level::PMD, ext.start)? {
                Entry::Invalid | Entry::Swap { .. } => return Ok(()),
                Entry::Leaf { .. } => {
                    self.huge_pmd_range(ctx, ext, d, &mut |d, pa, _| {
                        self.zap_huge_pmd(ext.vma, ext.pmd_table, ext.start, pa, d)
                    })?;
                    if self.huge_leaf_done(ext)? {
                        return Ok(());
                    }
                }
                Entry::Table { pa } => {
                    let table = TableAddr::new(pa);
                    if self.zap_pte_range(ctx, ext, table, reclaim_pt, d)? {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Linux `zap_pte_range` over `ext`, whose PTE table is `table`.
    /// `Ok(false)`: the PMD entry changed before the table could be locked;
    /// the caller retries.
    fn zap_pte_range(
        &self,
        ctx: &mut ThreadCtx,
        ext: PmdExtent,
        table: TableAddr,
        reclaim_pt: bool,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        let PmdExtent {
            vma,
            pmd_table,
            start,
            end,
        } = ext;
        let eager = self.cfg.reclaim == Reclaim::Eager;
        let whole_pmd = ext.whole(self.pmd_size);
        // Linux: reclaim_pt_is_enabled: the zap covers the whole PMD range.
        let can_reclaim = (self.cfg.reclaim == Reclaim::On && reclaim_pt && whole_pmd) || eager;
        let batch = match self.cfg.debug.zap_batch {
            0 => u64::MAX,
            n => u64::from(n),
        };
        let mut direct = true;
        let mut addr = start;
        let mut first = true;
        loop {
            let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, addr, table) else {
                // Reclaimed by someone else (nothing left to zap) or never ours.
                return Ok(!first);
            };
            first = false;
            self.pt.contpte_try_unfold(table, Level::PTE, addr)?;
            if !end.is_aligned(self.pmd_size) {
                self.pt.contpte_try_unfold(table, Level::PTE, end)?;
            }
            let mut n = 0;
            let mut full = false;
            while addr < end && n < batch && !full {
                // A compact (sparse) table is visited entry by stored entry.
                let next = self.pt.skip_empty(table, Level::PTE, addr, end);
                if next > addr {
                    let skip = (next.offset_from(addr) / self.page).min(batch - n);
                    addr += skip * self.page;
                    n += skip;
                    continue;
                }
                match self.pt.read_entry(table, Level::PTE, addr)? {
                    Entry::Leaf { pa, attrs, .. } => {
                        full = self.zap_pte(vma, table, addr, pa, attrs.dirty, d);
                    }
                    Entry::Swap { val } => self.zap_swap_pte(table, addr, val, d),
                    _ => {}
                }
                addr += self.page;
                n += 1;
            }
            if full {
                // Linux: force_break — the gather is full: the PTE lock is
                // dropped, the TLB flushed and the batch freed
                // (tlb_flush_mmu), then the zap goes on; the table's
                // emptiness must be re-checked (direct_reclaim = false).
                drop(g);
                direct = false;
                self.tlb_flush_mmu(ctx, d)?;
                if addr < end {
                    continue;
                }
                break;
            }
            if addr < end {
                // Linux: need_resched() — the PTE lock is dropped midway, so
                // emptiness must be re-checked later (unless the bug knob).
                drop(g);
                if !self.cfg.debug.reclaim_without_recheck {
                    direct = false;
                }
                continue;
            }
            if can_reclaim && direct {
                let empty_known = !eager || whole_pmd;
                let empty = empty_known || self.pt.present_entries(table) == 0;
                if empty {
                    // Linux: try_get_and_clear_pmd — try-lock the PMD lock
                    // while holding the PTE lock (never wait: lock order).
                    direct = self.try_clear_pmd_locked(ctx, pmd_table, table, start, d);
                } else {
                    direct = false;
                }
                if direct {
                    drop(g);
                    return Ok(true);
                }
            } else {
                direct = false;
            }
            drop(g);
            break;
        }
        if can_reclaim && !direct {
            self.try_to_free_pte(ctx, pmd_table, table, start, d)?;
        }
        Ok(true)
    }

    /// Clears one present PTE (`dirty`: its dirty bit) and accounts it
    /// (Linux `zap_present_ptes`). Returns whether the gather's page batch
    /// is now full (Linux: `__tlb_remove_folio_pages` returning true,
    /// `force_break`).
    fn zap_pte(
        &self,
        vma: &Vma,
        table: TableAddr,
        va: VirtAddr,
        pa: u64,
        dirty: bool,
        d: &mut Deferred,
    ) -> bool {
        self.pt.pte_clear(table, Level::PTE, va);
        d.add_flush(va.get(), self.page);
        match self.classify(vma, va.get(), pa) {
            // vm_normal_page: no page, nothing gathered.
            PageKind::Zero => false,
            PageKind::Anon => {
                self.rss_add(Rss::Anon, -1);
                self.put_anon_page(pa, d);
                self.gather_page(d)
            }
            PageKind::Cache(rss) => {
                self.rss_add(rss, -1);
                // Linux: zap_present_folio_ptes: a page-cache folio written
                // through its PTE (a shmem page a read fault mapped
                // writable, written without a fault since) is dirtied from
                // the PTE's dirty bit, which the zap is about to lose;
                // reclaim then keeps it.
                if dirty {
                    if let Some(obj) = vma.object() {
                        let idx = vma.pgoff_of(va.get(), self.page_shift);
                        MemObject::set_dirty(&mut obj.lock(), idx, true);
                    }
                }
                // The gather holds the folio's reference until the flush.
                self.gather_page(d)
            }
        }
    }

    /// Linux `zap_huge_pmd` (caller holds the PMD lock).
    fn zap_huge_pmd(
        &self,
        vma: &Vma,
        pmd_table: TableAddr,
        haddr: VirtAddr,
        pa: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        self.pt.pte_clear(pmd_table, Level::PMD, haddr);
        d.add_flush(haddr.get(), self.pmd_size);
        if let Some(rss) = self.file_pmd_rss(vma) {
            // A page-cache folio: no deposit (x86-64 deposits none for
            // file THP), the cache keeps the frame; the gather holds a
            // reference (one entry).
            self.rss_add(rss, -((self.pmd_size / self.page) as i64));
            self.gather_page(d);
            return Ok(());
        }
        let dep = lock_plain(&self.deposits)
            .remove(&haddr.get())
            .ok_or_else(|| Errno::Internal(format!("no deposited table for {haddr:#x}")))?;
        // zap_deposited_table: freed with the gather, counted out of VmPTE.
        d.tables.tables.push((Level::PTE, dep));
        if Some(pa) != self.huge_zero_pa {
            // tlb_remove_page_size: the folio is one entry of the batch (a
            // full batch is flushed by the caller, once the lock is dropped).
            self.gather_page(d);
            let n = (self.pmd_size / self.page) as i64;
            self.rss_add(Rss::Anon, -n);
            self.anon_huge.fetch_sub(n, Ordering::Relaxed);
            if lock_plain(&self.folios).remove(&pa).is_some() {
                self.nr_folios.fetch_sub(1, Ordering::Release);
            }
            self.not_exclusive.remove(pa);
            // Another space of the family (fork) may still hold the folio.
            if !self.shares.put(pa) {
                self.shares.written.forget(pa, self.pmd_size, self.page);
                d.frames.push((pa, self.pmd_size));
            }
        }
        Ok(())
    }

    /// With the PTE lock of `table` held: take the PMD lock without waiting
    /// and unlink the table. `false` if the PMD lock was busy.
    fn try_clear_pmd_locked(
        &self,
        ctx: &mut ThreadCtx,
        pmd_table: TableAddr,
        table: TableAddr,
        va: VirtAddr,
        d: &mut Deferred,
    ) -> bool {
        let (pml, class) = self.pmd_lockptr(pmd_table);
        let (ptl, _) = self.pte_lockptr(table);
        let guard = if std::ptr::eq(pml, ptl) {
            None
        } else {
            ctx.counters.lock_acquisitions[class as usize] += 1;
            ctx.log_lock(std::ptr::from_ref(pml) as usize, class, true);
            match pml.try_lock() {
                Some(g) => Some(g),
                None => {
                    ctx.counters.lock_contended[class as usize] += 1;
                    return false;
                }
            }
        };
        let haddr = va.align_down(self.pmd_size);
        if let Some(t) = self.pt.unlink_table(pmd_table, Level::PMD, haddr) {
            debug_assert_eq!(t, table, "the PTE lock pins the PMD entry");
            d.add_table(Level::PTE, t, haddr.get(), self.pmd_size);
        }
        drop(guard);
        true
    }
}
