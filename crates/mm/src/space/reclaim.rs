//! Reclaim on request (MADV_COLD, MADV_PAGEOUT) and lazy-free discard of
//! anonymous memory, and the split of large anonymous folios, as Linux 6.18
//! does them with no swap device (mm/madvise.c
//! `madvise_cold_or_pageout_pte_range`, `madvise_free_huge_pmd`; mm/vmscan.c
//! `shrink_folio_list`; mm/rmap.c `try_to_unmap_one`; mm/huge_memory.c
//! `__folio_split` with `remap_page(RMP_USE_SHARED_ZEROPAGE)`), as measured
//! on a 6.18 host (the reclaim-* and thp-split-* validation workloads).
//!
//! With no swap:
//! - A private anonymous page stays where it is (there is nowhere to write
//!   it), unless MADV_FREE made it lazily free and no write dirtied it
//!   since: reclaim then discards it (RssAnon drops; the next read maps the
//!   zero page, the next write a new page). The model knows a lazily freed
//!   page by its clean entry: every other anonymous entry is dirty (Linux
//!   maps anonymous pages dirty in a writable VMA, and only MADV_FREE
//!   cleans them). A lazily freed PMD-mapped THP is discarded whole: its PMD
//!   is split into a PTE table first (`TTU_SPLIT_HUGE_PMD`), whose entries
//!   are then cleared, so the next accesses fault base pages.
//! - A large anonymous folio that MADV_PAGEOUT reclaims is split into base
//!   pages (the swap allocation fails and `shrink_folio_list` falls back to
//!   base pages, which stay). MADV_COLD, MADV_PAGEOUT and MADV_FREE split a
//!   folio their range covers only in part. Either split maps every subpage
//!   no write reached to the shared zero page and frees it (6.12's
//!   `try_to_map_unused_to_zeropage`), unless the VMA is locked; subpages no
//!   longer mapped are freed. Splitting only a PMD (a partial MADV_DONTNEED,
//!   an mprotect of part) keeps the folio, as before.
//! - A folio another process maps (fork) is left alone
//!   (`folio_maybe_mapped_shared`), as is the huge zero page.
//!
//! With swap, a large folio MADV_PAGEOUT reclaims whole is written whole
//! on a block device and split first on a swap file (`space::swap`).
//!
//! What is written is kept per base page of large folios
//! (`share::WrittenPages`), noted by [`AddressSpace::note_write`] on each
//! write access while the space has large folios.

use super::{lock_plain, AddressSpace, PageKind, Rss};
use crate::cache::{MemObject, ObjectKind};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::Vma;
use crate::walk::PmdExtent;
use pt::{Entry, Level, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;

/// Which of the page-level advices a walk applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageAdvice {
    Cold,
    PageOut,
    Free,
}

/// What the walk does next with a huge PMD entry after
/// [`AddressSpace::huge_pmd_reclaim`].
pub(crate) enum HugeStep {
    /// Nothing more to do for this PMD entry.
    Done,
    /// The entry changed (split into a PTE table): walk it again.
    Walk,
    /// The whole-PMD MADV_FREE: mark the huge entry lazily free.
    Lazyfree,
}

impl AddressSpace {
    /// Whether writes must be noted ([`AddressSpace::note_write`]): the
    /// space has large anonymous folios. One load, for the access path.
    #[inline]
    pub fn tracks_writes(&self) -> bool {
        self.nr_folios.load(Ordering::Relaxed) != 0
    }

    /// A write access reached physical address `pa`: if it lies in a large
    /// anonymous folio of this space, its base page is no longer all zero.
    pub fn note_write(&self, pa: u64) {
        let pa = pa & !(self.page - 1);
        if self.folio_of(pa).is_some() {
            self.shares.written.insert(pa);
        }
    }

    /// A huge PMD entry met by MADV_COLD, MADV_PAGEOUT or MADV_FREE over
    /// `ext` (Linux: the `pmd_trans_huge` part of
    /// `madvise_cold_or_pageout_pte_range`, and `madvise_free_huge_pmd`).
    pub(crate) fn huge_pmd_reclaim(
        &self,
        ctx: &mut ThreadCtx,
        ext: PmdExtent,
        how: PageAdvice,
        d: &mut Deferred,
    ) -> Result<HugeStep, Errno> {
        let PmdExtent {
            vma,
            pmd_table,
            start: a,
            ..
        } = ext;
        if let Some(obj) = vma.object() {
            return self.object_huge_pmd_reclaim(ctx, ext, obj, how, d);
        }
        let g = self.pmd_lock(ctx, pmd_table);
        let Entry::Leaf { pa, attrs, .. } = self.pt.read_entry(pmd_table, Level::PMD, a)? else {
            drop(g);
            return Ok(HugeStep::Walk);
        };
        // The huge zero page and a folio another process maps are left
        // alone.
        if Some(pa) == self.huge_zero_pa || self.shares.shared(pa) {
            return Ok(HugeStep::Done);
        }
        let split_folio = match (how, ext.whole(self.pmd_size)) {
            (PageAdvice::Free, true) => {
                self.set_lazyfree(pa, true);
                return Ok(HugeStep::Lazyfree);
            }
            (PageAdvice::Cold, true) => return Ok(HugeStep::Done),
            // A lazily freed THP: try_to_unmap splits the PMD, then
            // discards each clean entry (the PTE walk that follows); one
            // written since is kept whole (`folio_set_swapbacked`), mapped
            // by PTEs.
            (PageAdvice::PageOut, true) if self.lazyfree(pa) => {
                if attrs.dirty {
                    self.set_lazyfree(pa, false);
                    self.split_huge_pmd_locked(vma, pmd_table, a, d)?;
                    return Ok(HugeStep::Done);
                }
                false
            }
            _ => true,
        };
        let haddr = a.align_down(self.pmd_size);
        let whole_pageout = how == PageAdvice::PageOut && ext.whole(self.pmd_size);
        self.split_huge_pmd_locked(vma, pmd_table, a, d)?;
        drop(g);
        if split_folio {
            if let Some(table) = self.pt.next_table(pmd_table, Level::PMD, haddr) {
                if let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, haddr, table) {
                    // shrink_folio_list: a block device takes the folio
                    // whole; else (or full) it is split for base pages.
                    if !(whole_pageout
                        && self.swap_out_folio(table, haddr, pa, self.pmd_size, d)?)
                    {
                        self.split_folio(vma, table, haddr, pa, self.pmd_size, d)?;
                    }
                    drop(g);
                }
            }
        }
        Ok(HugeStep::Walk)
    }

    /// Before a PTE table's share `ext` is walked by MADV_COLD,
    /// MADV_PAGEOUT or MADV_FREE (PTE lock of `table` held): splits the
    /// large folios mapped there that the range covers only in part, and
    /// those MADV_PAGEOUT reclaims (Linux: the `folio_test_large` part of
    /// `madvise_cold_or_pageout_pte_range` and `madvise_free_pte_range`,
    /// and `shrink_folio_list`'s fallback to base pages).
    pub(crate) fn split_for_reclaim(
        &self,
        ext: PmdExtent,
        table: TableAddr,
        how: PageAdvice,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let PmdExtent {
            vma,
            start: a,
            end: next,
            ..
        } = ext;
        if self.nr_folios.load(Ordering::Acquire) == 0 || !vma.is_anon() {
            return Ok(());
        }
        let mut va = a;
        while va < next {
            let Entry::Leaf { pa, .. } = self.pt.read_entry(table, Level::PTE, va)? else {
                va += self.page;
                continue;
            };
            let Some((head, size)) = self.folio_of(pa) else {
                va += self.page;
                continue;
            };
            let base = va.sub(pa - head);
            let after = base.add(size).max(va.add(self.page));
            if self.shares.shared(head)
                || base.align_down(self.pmd_size) != va.align_down(self.pmd_size)
            {
                va = after;
                continue;
            }
            let covered = base >= a && base.add(size) <= next;
            let split = match how {
                PageAdvice::Cold => !covered,
                PageAdvice::Free => {
                    if covered {
                        self.set_lazyfree(head, true);
                    }
                    !covered
                }
                // A lazily freed folio is discarded by the walk if still
                // clean, else kept whole; any other is split.
                PageAdvice::PageOut if covered && self.lazyfree(head) => {
                    if self.folio_dirty(table, base, head, size)? {
                        self.set_lazyfree(head, false);
                    }
                    false
                }
                // A block device takes a folio the range covers whole.
                PageAdvice::PageOut => {
                    !(covered && self.swap_out_folio(table, base, head, size, d)?)
                }
            };
            if split {
                self.split_folio(vma, table, base, head, size, d)?;
            }
            va = after;
        }
        Ok(())
    }

    /// Whether the large folio at `head` is lazily free.
    fn lazyfree(&self, head: u64) -> bool {
        lock_plain(&self.folios)
            .get(&head)
            .is_some_and(|f| f.lazyfree)
    }

    fn set_lazyfree(&self, head: u64, on: bool) {
        if let Some(f) = lock_plain(&self.folios).get_mut(&head) {
            f.lazyfree = on;
        }
    }

    /// Whether an entry mapping the folio at `head` from `base` is dirty
    /// (a folio MADV_FREE did not leave clean).
    fn folio_dirty(
        &self,
        table: TableAddr,
        base: VirtAddr,
        head: u64,
        size: u64,
    ) -> Result<bool, Errno> {
        for i in 0..size / self.page {
            if let Entry::Leaf { pa, attrs, .. } =
                self.pt
                    .read_entry(table, Level::PTE, base.add(i * self.page))?
            {
                if pa == head + i * self.page && attrs.dirty {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    // Linux: mm/huge_memory.c, __folio_split + remap_page(RMP_USE_SHARED_ZEROPAGE)
    /// Splits the exclusive anonymous folio `[head, head + size)`, mapped
    /// by PTEs of `table` from `base` (PTE lock held), into base pages: a
    /// mapped subpage no write reached is mapped to the zero page and freed
    /// (not in a locked VMA), a subpage no longer mapped is freed, the rest
    /// stay as base pages. Nothing happens if the folio is mapped anywhere
    /// else (another VMA, after mremap; the caller checked fork).
    pub(crate) fn split_folio(
        &self,
        vma: &Vma,
        table: TableAddr,
        base: VirtAddr,
        head: u64,
        size: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let n = size / self.page;
        let Some(folio) = lock_plain(&self.folios).get(&head).copied() else {
            return Ok(());
        };
        if folio.size != size || self.shares.shared(head) {
            return Ok(());
        }
        let mut mapped = Vec::with_capacity(n as usize);
        for i in 0..n {
            let at = base.add(i * self.page);
            let here = matches!(
                self.pt.read_entry(table, Level::PTE, at)?,
                Entry::Leaf { pa, .. } if pa == head + i * self.page
            );
            mapped.push(here);
        }
        if mapped.iter().filter(|m| **m).count() as u64 != folio.mapped {
            return Ok(());
        }
        self.pt.contpte_try_unfold(table, Level::PTE, base)?;
        self.pt.mem().split_data(head, size)?;
        if lock_plain(&self.folios).remove(&head).is_some() {
            self.nr_folios.fetch_sub(1, Ordering::Release);
        }
        let zero_ok = !vma.flags.locked;
        let zero_attrs = self.leaf_attrs(vma, PageKind::Zero, false);
        for (i, here) in mapped.into_iter().enumerate() {
            let pa = head + i as u64 * self.page;
            let at = base.add(i as u64 * self.page);
            if !here {
                d.frames.push((pa, self.page));
            } else if zero_ok && !self.shares.written.contains(pa) {
                // try_to_map_unused_to_zeropage
                self.pt.set_entry(
                    table,
                    Level::PTE,
                    at,
                    &Entry::Leaf {
                        pa: self.zero_pa,
                        attrs: zero_attrs,
                        contiguous: false,
                    },
                );
                d.add_flush(at.get(), self.page);
                self.rss_add(Rss::Anon, -1);
                self.not_exclusive.remove(pa);
                d.frames.push((pa, self.page));
            }
        }
        self.shares.written.forget(head, size, self.page);
        Ok(())
    }

    /// MADV_PAGEOUT of a present anonymous page: discarded if MADV_FREE
    /// left it clean and no other process maps it (Linux: the lazyfree
    /// branch of `try_to_unmap_one`); any other is written to swap if
    /// there is a swap device and no other process maps it
    /// ([`AddressSpace::swap_out_pte`]), else stays.
    pub(crate) fn pageout_anon_pte(
        &self,
        table: TableAddr,
        va: VirtAddr,
        pa: u64,
        dirty: bool,
        d: &mut Deferred,
    ) {
        // A clean page in the swap cache was read back from swap, not
        // lazily freed (MADV_FREE takes pages out of the swap cache).
        let swap_backed = dirty || self.shares.swap.slot_of_frame(pa).is_some();
        if swap_backed {
            // A lazily freed page written since is only made swap-backed
            // again by this pass (try_to_unmap_one: folio_set_swapbacked
            // when the PTE is dirty), and stays.
            let was_lazyfree = self.lazyfree_pages.remove(pa);
            if self.has_swap()
                && !was_lazyfree
                && self.folio_of(pa).is_none()
                && !self.shares.shared(pa)
            {
                self.swap_out_pte(table, va, pa, dirty, d);
            }
            return;
        }
        self.lazyfree_pages.remove(pa);
        match self.folio_of(pa) {
            // A page of a folio reclaim kept (written since MADV_FREE).
            Some((head, _)) if !self.lazyfree(head) || self.shares.shared(head) => return,
            None if self.shares.shared(pa) => return,
            _ => {}
        }
        self.pt.pte_clear(table, Level::PTE, va);
        d.add_flush(va.get(), self.page);
        self.rss_add(Rss::Anon, -1);
        self.put_anon_page(pa, d);
    }

    /// MADV_PAGEOUT of a present page-cache page that no other process
    /// maps (Linux: `shrink_folio_list` after `try_to_unmap`): it is
    /// unmapped, then
    /// - a clean page is dropped from the cache: the next access of a file
    ///   page reads it back (a major fault), of a shmem page allocates it
    ///   again (a shmem page only read was never dirtied);
    /// - a dirty file page stays, dirty: reclaim leaves writeback to
    ///   kswapd and marks the folio `PG_reclaim`, the bit `PG_readahead`
    ///   shares, so fault-around skips it until a fault on it clears the
    ///   mark (or writeback ends it);
    /// - a dirty shmem page stays with no swap (`shmem_writeout` has nowhere
    ///   to write it); with swap it goes to the swap cache, where
    ///   fault-around does not see it: the next access of it is a fault of
    ///   its own, minor (the write is asynchronous and only memory
    ///   pressure, which the model has not, frees the swap cache's copy),
    ///   which brings it back into the page cache, dirty.
    pub(crate) fn pageout_cache_pte(
        &self,
        vma: &Vma,
        table: TableAddr,
        va: VirtAddr,
        pte_dirty: bool,
        rss: Rss,
        d: &mut Deferred,
    ) {
        let Some(obj) = vma.object() else {
            return;
        };
        let idx = vma.pgoff_of(va.get(), self.page_shift);
        let mut pages = obj.lock();
        // A page of a large folio: reclaimed, split or left whole by
        // `object_folios_reclaim` before this walk.
        if MemObject::folio_of(&pages, idx).is_some_and(|f| f.order > 0) {
            return;
        }
        let dirty = pte_dirty || MemObject::is_dirty(&pages, idx);
        self.pt.pte_clear(table, Level::PTE, va);
        d.add_flush(va.get(), self.page);
        self.rss_add(rss, -1);
        if !dirty {
            if let Some(f) = MemObject::evict(&mut pages, idx) {
                d.frames.push((f, self.page));
            }
            return;
        }
        MemObject::set_dirty(&mut pages, idx, true);
        if obj.kind == ObjectKind::File {
            MemObject::mark_reclaim(&mut pages, idx);
        } else if self.has_swap() {
            // Linux: mm/shmem.c, shmem_writeout: the page leaves the page
            // cache for the swap cache (a swap entry in the shmem mapping,
            // not in any PTE: VmSwap does not count it).
            MemObject::shmem_swap_out(&mut pages, idx, self.swap_sync());
        }
    }
}
