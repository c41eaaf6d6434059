//! Range operations over the page tables: zap (munmap, MADV_DONTNEED),
//! change_protection (mprotect), MADV_FREE, MADV_PAGEOUT, writeback
//! (msync), splitting huge PMDs, reclaiming empty PTE tables and
//! `free_pgtables`. Each keeps the lock protocol of [`crate::locking`].
//!
//! The walks carry [`VirtAddr`]es; the range operations the system calls
//! start (`zap_range`, `change_protection`, `free_pgtables`, ...) take the
//! VMA layer's bare words and convert them once on entry.

use crate::cache::MemObject;
use crate::config::Reclaim;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::{lock_plain, AddressSpace, Elsewhere, HugeStep, PageAdvice, PageKind, Rss};
use crate::vma::Vma;
use pt::{Attrs, Entry, Level, PhysAddr, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;

/// What to do with each present PTE of a range.
#[derive(Clone, Copy)]
enum PteOp<'a> {
    Protect,
    Free,
    /// MADV_PAGEOUT; the object pages another process maps are kept.
    PageOut(&'a Elsewhere),
    Cold,
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

impl AddressSpace {
    /// Calls `f(pmd_table, a, next)` for each PMD entry's share of
    /// `[start, end)` whose PMD table exists, skipping missing upper tables.
    fn for_each_pmd(
        &self,
        start: VirtAddr,
        end: VirtAddr,
        f: &mut dyn FnMut(TableAddr, VirtAddr, VirtAddr) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let mut a = start;
        while a < end {
            match self.find_pmd_table(a) {
                Ok(pmd_table) => {
                    let next = a.addr_end(self.pmd_size, end);
                    f(pmd_table, a, next)?;
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

    /// Handles a huge PMD leaf met by a range operation over `[a, next)`:
    /// splits it when the range covers only part of it. Returns the leaf
    /// (under `f`, with the PMD lock held) when covered whole.
    #[allow(clippy::too_many_arguments)]
    fn huge_pmd_range(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        a: VirtAddr,
        next: VirtAddr,
        d: &mut Deferred,
        whole: &mut dyn FnMut(&mut Deferred, u64, Attrs) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let g = self.pmd_lock(ctx, pmd_table);
        if let Entry::Leaf { pa, attrs, .. } = self.pt.read_entry(pmd_table, Level::PMD, a)? {
            if next.offset_from(a) == self.pmd_size {
                whole(d, pa, attrs)?;
            } else {
                self.split_huge_pmd_locked(vma, pmd_table, a, d)?;
            }
        }
        drop(g);
        Ok(())
    }

    /// Clears one present PTE and accounts it (Linux `zap_present_ptes`).
    /// Returns whether the gather's page batch is now full (Linux:
    /// `__tlb_remove_folio_pages` returning true, `force_break`).
    fn zap_pte(
        &self,
        vma: &Vma,
        table: TableAddr,
        va: VirtAddr,
        pa: u64,
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
        self.for_each_pmd(start, end, &mut |pmd_table, a, next| {
            self.zap_pmd_entry(ctx, vma, pmd_table, a, next, reclaim_pt, d)?;
            // No page-table lock is held here: a batch that filled (a THP's
            // entry, a reclaimed table) is flushed now.
            self.gather_check(ctx, d)
        })
    }

    /// The share `[a, next)` of one PMD entry of a zap (Linux
    /// `zap_pmd_range`'s loop body).
    #[allow(clippy::too_many_arguments)]
    fn zap_pmd_entry(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        a: VirtAddr,
        next: VirtAddr,
        reclaim_pt: bool,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        loop {
            match self.pt.read_entry(pmd_table, Level::PMD, a)? {
                Entry::Invalid => return Ok(()),
                Entry::Leaf { .. } => {
                    self.huge_pmd_range(ctx, vma, pmd_table, a, next, d, &mut |d, pa, _| {
                        self.zap_huge_pmd(vma, pmd_table, a, pa, d)
                    })?;
                    // Covered whole: done, unless a racing fault split the
                    // huge zero page meanwhile (then walk the new table).
                    if next.offset_from(a) == self.pmd_size
                        && !matches!(
                            self.pt.read_entry(pmd_table, Level::PMD, a)?,
                            Entry::Table { .. }
                        )
                    {
                        return Ok(());
                    }
                }
                Entry::Table { pa } => {
                    let table = TableAddr::new(pa);
                    if self.zap_pte_range(ctx, vma, pmd_table, table, a, next, reclaim_pt, d)? {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Linux `zap_pte_range`. `Ok(false)`: the PMD entry changed before the
    /// table could be locked; the caller retries.
    #[allow(clippy::too_many_arguments)]
    fn zap_pte_range(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        table: TableAddr,
        start: VirtAddr,
        end: VirtAddr,
        reclaim_pt: bool,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        let eager = self.cfg.reclaim == Reclaim::Eager;
        let whole_pmd = end.offset_from(start) >= self.pmd_size;
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
                if let Entry::Leaf { pa, .. } = self.pt.read_entry(table, Level::PTE, addr)? {
                    full = self.zap_pte(vma, table, addr, pa, d);
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

    /// Applies `op` to every present PTE in `[start, end)` of `vma`,
    /// splitting huge PMDs the range covers only in part.
    fn pte_walk(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        start: VirtAddr,
        end: VirtAddr,
        op: PteOp,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        self.for_each_pmd(start, end, &mut |pmd_table, a, next| loop {
            match self.pt.read_entry(pmd_table, Level::PMD, a)? {
                Entry::Invalid => return Ok(()),
                Entry::Leaf { .. } => {
                    if let Some(how) = op.reclaim() {
                        match self.huge_pmd_reclaim(ctx, vma, pmd_table, a, next, how, d)? {
                            HugeStep::Done => return Ok(()),
                            HugeStep::Walk => continue,
                            HugeStep::Lazyfree => {}
                        }
                    }
                    self.huge_pmd_range(ctx, vma, pmd_table, a, next, d, &mut |d, pa, attrs| {
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
                                // can_change_pmd_writable: not for a folio
                                // fork left non-exclusive.
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
                    })?;
                    // Covered whole: done, unless a racing fault split the
                    // huge zero page meanwhile (then walk the new table).
                    if next.offset_from(a) == self.pmd_size
                        && !matches!(
                            self.pt.read_entry(pmd_table, Level::PMD, a)?,
                            Entry::Table { .. }
                        )
                    {
                        return Ok(());
                    }
                }
                Entry::Table { pa } => {
                    let table = TableAddr::new(pa);
                    let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, a, table) else {
                        continue;
                    };
                    self.pt.contpte_try_unfold(table, Level::PTE, a)?;
                    if !next.is_aligned(self.pmd_size) {
                        self.pt.contpte_try_unfold(table, Level::PTE, next)?;
                    }
                    if let Some(how) = op.reclaim() {
                        self.split_for_reclaim(vma, table, a, next, how, d)?;
                    }
                    let mut va = a;
                    while va < next {
                        if let Entry::Leaf {
                            pa,
                            attrs,
                            contiguous,
                        } = self.pt.read_entry(table, Level::PTE, va)?
                        {
                            self.pte_op(vma, table, va, pa, attrs, contiguous, op, d)?;
                        }
                        va += self.page;
                    }
                    let eager_free =
                        self.cfg.reclaim == Reclaim::Eager && self.pt.present_entries(table) == 0;
                    drop(g);
                    if eager_free {
                        self.try_to_free_pte(ctx, pmd_table, table, a, d)?;
                    }
                    return Ok(());
                }
            }
        })
    }

    fn huge_attrs(&self, pmd_table: TableAddr, va: VirtAddr) -> Result<Attrs, Errno> {
        match self.pt.read_entry(pmd_table, Level::PMD, va)? {
            Entry::Leaf { attrs, .. } => Ok(attrs),
            _ => Err(Errno::Internal("huge leaf vanished under its lock".into())),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn pte_op(
        &self,
        vma: &Vma,
        table: TableAddr,
        va: VirtAddr,
        pa: u64,
        attrs: Attrs,
        contiguous: bool,
        op: PteOp,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
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

    /// Linux `change_protection` over `[start, end)` of `vma` (its VMA
    /// already carries the new protection).
    pub(crate) fn change_protection(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        start: u64,
        end: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        self.pte_walk(
            ctx,
            vma,
            VirtAddr::new(start),
            VirtAddr::new(end),
            PteOp::Protect,
            d,
        )
    }

    /// Linux `madvise_free_single_vma`.
    pub(crate) fn madvise_free(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        start: u64,
        end: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        self.pte_walk(
            ctx,
            vma,
            VirtAddr::new(start),
            VirtAddr::new(end),
            PteOp::Free,
            d,
        )
    }

    /// Linux `madvise_pageout`.
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
        self.pte_walk(
            ctx,
            vma,
            VirtAddr::new(start),
            VirtAddr::new(end),
            PteOp::PageOut(&elsewhere),
            d,
        )
    }

    /// Linux `madvise_cold`.
    pub(crate) fn cold(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        start: u64,
        end: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        self.pte_walk(
            ctx,
            vma,
            VirtAddr::new(start),
            VirtAddr::new(end),
            PteOp::Cold,
            d,
        )
    }

    /// Writeback of a shared file range (msync).
    pub(crate) fn writeback(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        start: u64,
        end: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        self.pte_walk(
            ctx,
            vma,
            VirtAddr::new(start),
            VirtAddr::new(end),
            PteOp::Writeback,
            d,
        )
    }

    /// Linux `free_pgtables` / `free_pgd_range`: frees every table below the
    /// root that overlaps `[start, end)` and lies wholly inside
    /// `[floor, ceiling)` (no VMA needs any part of it). Runs under the mmap
    /// lock held for writing (locking invariant 2).
    pub(crate) fn free_pgtables(
        &self,
        ctx: &ThreadCtx,
        start: u64,
        end: u64,
        floor: u64,
        ceiling: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        // Invalidates every thread's cached walk (upper tables may go).
        self.upper_gen.fetch_add(1, Ordering::Release);
        let (root, level) = (self.pt.root_table(), self.pt.root_level());
        let [start, end, floor, ceiling] = [start, end, floor, ceiling].map(VirtAddr::new);
        self.free_walk(ctx, root, level, start, end, floor, ceiling, d)
    }

    // Linux: mm/memory.c, free_pgd_range (down through free_pte_range)
    #[allow(clippy::too_many_arguments)]
    fn free_walk(
        &self,
        ctx: &ThreadCtx,
        table: TableAddr,
        level: Level,
        start: VirtAddr,
        end: VirtAddr,
        floor: VirtAddr,
        ceiling: VirtAddr,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if level.is_pte() || start >= end {
            return Ok(());
        }
        let size = self.pt.entry_size(level);
        let mut va = start.align_down(size);
        while va < end {
            if let Some(child) = self.pt.next_table(table, level, va) {
                let hi = va.saturating_add(size);
                if va >= floor && hi <= ceiling {
                    self.free_subtree(ctx, child, level.down(), va, d)?;
                    self.pt.unlink_table(table, level, va);
                    d.add_table(level.down(), child, va.get(), size);
                    self.gather_check(ctx, d)?;
                } else {
                    let (s, e) = (start.max(va), end.min(hi));
                    self.free_walk(ctx, child, level.down(), s, e, floor, ceiling, d)?;
                }
            }
            match va.checked_add(size) {
                Some(n) => va = n,
                None => break,
            }
        }
        Ok(())
    }

    fn free_subtree(
        &self,
        ctx: &ThreadCtx,
        table: TableAddr,
        level: Level,
        base: VirtAddr,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if level.is_pte() {
            let present = self.pt.present_entries(table);
            if present != 0 {
                return Err(Errno::Internal(format!(
                    "free_pgtables: PTE table at {base:#x} still maps {present} pages"
                )));
            }
            return Ok(());
        }
        let size = self.pt.entry_size(level);
        for i in 0..self.pt.ptrs_per_table(level) {
            let va = base + i * size;
            match self.pt.read_entry(table, level, va)? {
                Entry::Table { pa } => {
                    let child = TableAddr::new(pa);
                    self.free_subtree(ctx, child, level.down(), va, d)?;
                    // Linux: free_pte_range's pmd_clear (and pud_clear, ...):
                    // the entry goes before the table is gathered, so a
                    // table the gather frees midway is unreachable.
                    self.pt.unlink_table(table, level, va);
                    d.add_table(level.down(), child, va.get(), size);
                    self.gather_check(ctx, d)?;
                }
                Entry::Leaf { .. } => {
                    return Err(Errno::Internal(format!(
                        "free_pgtables: a leaf at {va:#x} outside every VMA"
                    )))
                }
                Entry::Invalid => {}
            }
        }
        Ok(())
    }
}
