//! Swap entries in one address space: reclaim writing a private anonymous
//! page out, the fault that brings it back, and the zap and fork of the
//! entries (Linux mm/vmscan.c, mm/rmap.c, mm/memory.c, mm/swapfile.c). The
//! device and its swap cache, shared by the fork family, are
//! [`crate::swap::SwapDevice`].
//!
//! Only with a swap device configured ([`crate::MmConfig::swap`]): with
//! none, no entry is ever made and none of this runs. The check sits on
//! the paths of non-present, non-empty entries only; the fault on an empty
//! PTE never reads the swap state.

use super::{AddressSpace, PageKind, Rss};
use crate::config::SwapDeviceKind;
use crate::counters::{FaultKind, ThreadCtx};
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::fault::VmFault;
use crate::swap::SwapEntry;
use pt::{Attrs, Entry, Level, Perms, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;

impl AddressSpace {
    /// Swap entries in this space's page tables (Linux `MM_SWAPENTS`,
    /// VmSwap in pages).
    pub fn swap_entries(&self) -> i64 {
        self.swapents.load(Ordering::Relaxed)
    }

    /// Slots of the family's swap device in use (entries or cache).
    pub fn swap_slots_used(&self) -> usize {
        self.shares.swap.slots_used()
    }

    // Linux: include/linux/swap.h, vm_swap_full
    /// Whether fewer than half the device's slots are free (a slot is
    /// free when no entry names it and the swap cache holds nothing for
    /// it): then a fault that brings a page back frees its slot.
    pub(crate) fn swap_full(&self) -> bool {
        let Some(capacity) = self.swap_slots() else {
            return false;
        };
        let free = capacity.saturating_sub(self.shares.swap.slots_used() as u64);
        free * 2 < capacity
    }

    /// The device's slots (pages), if a swap device is configured.
    pub(crate) fn swap_slots(&self) -> Option<u64> {
        self.cfg.swap.map(|b| b / self.page)
    }

    /// Whether a swap device is configured.
    #[inline]
    pub(crate) fn has_swap(&self) -> bool {
        self.cfg.swap.is_some_and(|b| b >= self.page)
    }

    /// Whether the swap device does its I/O synchronously (zram).
    pub(crate) fn swap_sync(&self) -> bool {
        self.cfg.swap_device == SwapDeviceKind::Sync
    }

    // Linux: mm/vmscan.c, shrink_folio_list (add_to_swap, try_to_unmap,
    // pageout) for an anonymous base page, and __remove_mapping for a clean
    // one already in the swap cache
    /// MADV_PAGEOUT of the present private anonymous page `pa` at `va`
    /// (PTE lock held; no other process maps it, the caller checked), with
    /// a swap device: its PTE becomes a swap entry (RssAnon drops, VmSwap
    /// grows). A page written since it was last swapped (`dirty`) is
    /// written again and stays in the swap cache while the write runs
    /// (reclaim does not wait: an asynchronous block device), so its next
    /// access finds it there; a clean page already in the swap cache is
    /// freed now. Returns false (the page stays) when the device is full.
    pub(crate) fn swap_out_pte(
        &self,
        table: TableAddr,
        va: VirtAddr,
        pa: u64,
        dirty: bool,
        d: &mut Deferred,
    ) -> bool {
        let Some(capacity) = self.swap_slots() else {
            return false;
        };
        let sync = self.swap_sync();
        let Some((slot, free_frame)) = self.shares.swap.swap_out(pa, dirty, capacity, sync) else {
            return false;
        };
        // try_to_unmap_one: the entry keeps PageAnonExclusive.
        let exclusive = self.not_exclusive.exclusive(pa);
        self.not_exclusive.remove(pa);
        let val = SwapEntry { slot, exclusive }.to_val();
        self.pt
            .set_entry(table, Level::PTE, va, &Entry::Swap { val });
        d.add_flush(va.get(), self.page);
        self.rss_add(Rss::Anon, -1);
        self.swapents.fetch_add(1, Ordering::Relaxed);
        if free_frame {
            d.frames.push((pa, self.page));
        }
        true
    }

    // Linux: mm/vmscan.c, shrink_folio_list (folio_alloc_swap of a large
    // folio: cluster_alloc_swap_entry refuses a swap file, !SWP_BLKDEV)
    // and try_to_unmap_one over the folio's PTEs
    /// MADV_PAGEOUT reclaiming the exclusive large anonymous folio
    /// `[head, head + size)`, mapped whole by PTEs of `table` from `base`
    /// (PTE lock held), on a block device: it is written whole to
    /// contiguous slots, its PTEs become swap entries (RssAnon drops by the
    /// folio, VmSwap grows by it), and it waits whole in the swap cache
    /// (asynchronous I/O) or leaves memory (synchronous I/O). No subpage
    /// goes to the zero page: the folio is not split. Returns false, having
    /// changed nothing, where Linux splits it instead: no swap or a swap
    /// file, a folio mapped in part or elsewhere, or no free cluster.
    pub(crate) fn swap_out_folio(
        &self,
        table: TableAddr,
        base: VirtAddr,
        head: u64,
        size: u64,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        if !self.has_swap() || self.cfg.swap_device == SwapDeviceKind::File {
            return Ok(false);
        }
        let Some(capacity) = self.swap_slots() else {
            return Ok(false);
        };
        let n = size / self.page;
        let whole = super::lock_plain(&self.folios)
            .get(&head)
            .is_some_and(|f| f.size == size && f.mapped == n);
        if !whole || self.shares.shared(head) {
            return Ok(false);
        }
        for i in 0..n {
            let at = base.add(i * self.page);
            if !matches!(self.pt.read_entry(table, Level::PTE, at)?,
                Entry::Leaf { pa, .. } if pa == head + i * self.page)
            {
                return Ok(false);
            }
        }
        let sync = self.swap_sync();
        let Some(first) = self
            .shares
            .swap
            .swap_out_folio(head, n, self.page, capacity, sync)
        else {
            return Ok(false);
        };
        self.pt.contpte_try_unfold(table, Level::PTE, base)?;
        // The model's frames are per page from here: the swap cache holds
        // them one per slot, and knows them as one folio
        // (SwapDevice::cached_folio).
        self.pt.mem().split_data(head, size)?;
        if super::lock_plain(&self.folios).remove(&head).is_some() {
            self.nr_folios.fetch_sub(1, Ordering::Release);
        }
        self.shares.written.forget(head, size, self.page);
        for i in 0..n {
            let pa = head + i * self.page;
            let exclusive = self.not_exclusive.exclusive(pa);
            self.not_exclusive.remove(pa);
            let val = SwapEntry {
                slot: first + i,
                exclusive,
            }
            .to_val();
            self.pt.set_entry(
                table,
                Level::PTE,
                base.add(i * self.page),
                &Entry::Swap { val },
            );
            if sync {
                d.frames.push((pa, self.page));
            }
        }
        d.add_flush(base.get(), size);
        self.rss_add(Rss::Anon, -(n as i64));
        self.swapents.fetch_add(n as i64, Ordering::Relaxed);
        Ok(true)
    }

    // Linux: mm/memory.c, do_swap_page (a large folio in the swap cache
    // whose every PTE still holds its entry, within the VMA and the PMD:
    // mapped whole, nr_pages at once)
    /// A fault on the exclusive entry `entry` at `va` whose slot belongs to
    /// the large folio `folio` (first slot, pages, first frame) that is
    /// whole in the swap cache (PTE lock held): if every PTE of the folio's
    /// range holds its entry, exclusive, and the range lies in the VMA and
    /// the PMD, the whole folio is mapped, writable, in one minor fault.
    /// Returns false, having changed nothing, otherwise (the page alone is
    /// mapped then).
    fn swap_in_folio(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        table: TableAddr,
        entry: SwapEntry,
        (first_slot, pages, first_pa): (u64, u64, u64),
    ) -> Result<bool, Errno> {
        let VmFault { vma, va, write, .. } = *vmf;
        let idx = entry.slot - first_slot;
        let start = va.get() - idx * self.page;
        let end = start + pages * self.page;
        let pmd_start = va.align_down(self.pmd_size).get();
        if start < pmd_start.max(vma.start) || end > (pmd_start + self.pmd_size).min(vma.end) {
            return Ok(false);
        }
        for i in 0..pages {
            let at = VirtAddr::new(start + i * self.page);
            let want = SwapEntry {
                slot: first_slot + i,
                exclusive: true,
            }
            .to_val();
            if self.pt.read_entry(table, Level::PTE, at)? != (Entry::Swap { val: want }) {
                return Ok(false);
            }
        }
        let swap = &self.shares.swap;
        let cluster_hits = self.cfg.swap_readahead.kind == crate::config::SwapRaKind::Cluster;
        let mut ra_hit = false;
        for i in 0..pages {
            let got = swap.swapin(first_slot + i, first_pa + i * self.page, cluster_hits);
            ra_hit |= got.is_some_and(|g| g.ra_hit && first_slot + i == entry.slot);
        }
        self.swap_cache_found(vmf, ra_hit);
        self.swapents.fetch_sub(pages as i64, Ordering::Relaxed);
        self.rss_add(Rss::Anon, pages as i64);
        // should_try_to_free_swap, for the whole folio (folio_free_swap).
        let free = write || vma.flags.locked || self.swap_full();
        let anon = self.leaf_attrs(vma, PageKind::Anon, write);
        for i in 0..pages {
            let pa = first_pa + i * self.page;
            let freed = free && swap.free_swap(pa);
            self.not_exclusive.remove(pa);
            let attrs = Attrs {
                dirty: write || freed,
                ..anon
            };
            self.pt.set_entry(
                table,
                Level::PTE,
                VirtAddr::new(start + i * self.page),
                &Entry::Leaf {
                    pa,
                    attrs,
                    contiguous: false,
                },
            );
        }
        ctx.fault_kind = FaultKind::FileRead;
        Ok(true)
    }

    // Linux: mm/memory.c, do_swap_page (with do_wp_page for a write to a
    // page another entry still names)
    /// A fault on the swap entry `orig` (value `val`) of `table`. The page
    /// comes from the swap cache (a minor fault) or is read into a new
    /// frame (a major fault). Mapped writable when the entry was exclusive
    /// (dirty if the access writes: the slot is freed then, as
    /// `should_try_to_free_swap` does for a write); read-only when fork
    /// shared the entry, and a write then copies the page unless no other
    /// entry or mapping is left (`wp_can_reuse_anon_folio`). `Ok(None)`:
    /// the PMD entry changed, retry.
    pub(crate) fn do_swap_page(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        table: TableAddr,
        orig: Entry,
        val: u64,
    ) -> Result<Option<bool>, Errno> {
        let VmFault {
            vma,
            pmd_table,
            va,
            write,
        } = *vmf;
        let entry = SwapEntry::from_val(val);
        let swap = &self.shares.swap;
        // A miss in the swap cache: a major fault, which reads ahead
        // (Linux: swap_cache_get_folio, then swapin_readahead), unless a
        // synchronous device reads the page alone, past the cache (the
        // entry the only one naming its slot).
        let cached = swap.cached(entry.slot);
        let uncached =
            !cached && self.swap_sync() && swap.slot(entry.slot).is_some_and(|s| s.count == 1);
        if !cached && !uncached {
            self.swap_read_ahead(vmf, table, entry)?;
        }
        let mem = self.pt.mem();
        // Frames are had before the lock: one to read into, one to copy to.
        let fresh = mem.alloc_data(self.page)?;
        let copy_to = if write && !entry.exclusive {
            match mem.alloc_data(self.page) {
                Ok(pa) => Some(pa),
                Err(e) => {
                    mem.free_data(fresh, self.page)?;
                    return Err(e.into());
                }
            }
        } else {
            None
        };
        // The frames not used: `read` (the page was read into `fresh`),
        // `copied` (the copy went to `copy_to`).
        let release = |read: bool, copied: bool| -> Result<(), Errno> {
            if !read {
                mem.free_data(fresh, self.page)?;
            }
            if let (Some(c), false) = (copy_to, copied) {
                mem.free_data(c, self.page)?;
            }
            Ok(())
        };
        let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
            release(false, false)?;
            return Ok(None);
        };
        if self.pt.read_entry(table, Level::PTE, va)? != orig {
            drop(g);
            release(false, false)?;
            return Ok(Some(false));
        }
        if uncached && swap.swapin_uncached(entry.slot) {
            // The new folio is the process's alone (exclusive, writable);
            // its slot is gone, so the model keeps it dirty.
            self.swapents.fetch_sub(1, Ordering::Relaxed);
            self.rss_add(Rss::Anon, 1);
            self.not_exclusive.remove(fresh);
            let attrs = Attrs {
                dirty: true,
                ..self.leaf_attrs(vma, PageKind::Anon, write)
            };
            self.pt.set_entry(
                table,
                Level::PTE,
                va,
                &Entry::Leaf {
                    pa: fresh,
                    attrs,
                    contiguous: false,
                },
            );
            ctx.fault_kind = FaultKind::FileRead;
            drop(g);
            release(true, false)?;
            return Ok(Some(true));
        }
        if entry.exclusive {
            if let Some(folio) = swap.cached_folio(entry.slot, self.page) {
                if self.swap_in_folio(ctx, vmf, table, entry, folio)? {
                    drop(g);
                    release(false, false)?;
                    return Ok(Some(false));
                }
            }
        }
        let cluster_hits = self.cfg.swap_readahead.kind == crate::config::SwapRaKind::Cluster;
        let Some(got) = swap.swapin(entry.slot, fresh, cluster_hits) else {
            drop(g);
            release(false, false)?;
            return Err(Errno::Internal(format!(
                "a swap entry names slot {} that is not in use",
                entry.slot
            )));
        };
        if !got.major {
            self.swap_cache_found(vmf, got.ra_hit);
        }
        self.swapents.fetch_sub(1, Ordering::Relaxed);
        self.rss_add(Rss::Anon, 1);
        let slot = swap.slot(entry.slot);
        // Another process maps the cached frame already: one more holder.
        let mapped_elsewhere = slot.is_some_and(|s| s.mapped > 1);
        if mapped_elsewhere {
            self.shares.get(got.pa);
        }
        let others = mapped_elsewhere || slot.is_some_and(|s| s.count > 0);
        let anon = self.leaf_attrs(vma, PageKind::Anon, write);
        let (pa, attrs) = if let (Some(new), true) = (copy_to, others) {
            // wp_page_copy: the copy is this process's own; the cached
            // frame keeps its other users.
            if mapped_elsewhere {
                self.shares.put(got.pa);
            }
            swap.unmap_copy(got.pa);
            ctx.fault_kind = FaultKind::Cow;
            (new, anon)
        } else {
            let exclusive = entry.exclusive || (write && !others);
            if exclusive && !mapped_elsewhere {
                self.not_exclusive.remove(got.pa);
            } else {
                self.not_exclusive.insert(got.pa);
            }
            // should_try_to_free_swap: a write (the reuse's
            // folio_free_swap), a locked VMA, or swap more than half full
            // (vm_swap_full) frees the slot once no entry names it; the
            // page is then dirty (folio_free_swap: folio_set_dirty, so
            // reclaim writes it again), which the model keeps in the PTE.
            let freed = (write || vma.flags.locked || self.swap_full()) && swap.free_swap(got.pa);
            ctx.fault_kind = FaultKind::FileRead;
            let attrs = Attrs {
                perms: Perms {
                    write: anon.perms.write && exclusive && !mapped_elsewhere,
                    ..anon.perms
                },
                dirty: write || freed,
                ..anon
            };
            (got.pa, attrs)
        };
        self.pt.set_entry(
            table,
            Level::PTE,
            va,
            &Entry::Leaf {
                pa,
                attrs,
                contiguous: false,
            },
        );
        drop(g);
        release(got.major, pa != got.pa)?;
        Ok(Some(got.major))
    }

    // Linux: mm/memory.c, zap_nonpresent_ptes → free_swap_and_cache_nr
    /// Clears the swap entry `val` at `va` (PTE lock held): VmSwap drops,
    /// and the slot is freed when no entry names it any more, with the
    /// cached frame if no process maps it.
    pub(crate) fn zap_swap_pte(&self, table: TableAddr, va: VirtAddr, val: u64, d: &mut Deferred) {
        self.pt.pte_clear(table, Level::PTE, va);
        self.swapents.fetch_sub(1, Ordering::Relaxed);
        if let Some(pa) = self.shares.swap.free_entry(SwapEntry::from_val(val).slot) {
            d.frames.push((pa, self.page));
        }
    }

    // Linux: mm/memory.c, copy_nonpresent_pte (swap_duplicate; the
    // exclusive marker cleared on both sides)
    /// Copies the swap entry `val` of the parent's `src` table at `addr`
    /// into the child's `dst` table.
    pub(crate) fn copy_swap_pte(
        &self,
        child: &AddressSpace,
        src: TableAddr,
        dst: TableAddr,
        addr: VirtAddr,
        val: u64,
    ) {
        let mut e = SwapEntry::from_val(val);
        self.shares.swap.duplicate(e.slot);
        if e.exclusive {
            e.exclusive = false;
            self.pt
                .set_entry(src, Level::PTE, addr, &Entry::Swap { val: e.to_val() });
        }
        child
            .pt
            .set_entry(dst, Level::PTE, addr, &Entry::Swap { val: e.to_val() });
        child.swapents.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether `pa` is in the swap cache under a slot that a swap entry
    /// still names (some process has not faulted it back in).
    pub(crate) fn swap_named(&self, pa: u64) -> bool {
        let swap = &self.shares.swap;
        swap.active()
            && swap
                .slot_of_frame(pa)
                .and_then(|s| swap.slot(s))
                .is_some_and(|s| s.count > 0)
    }

    /// The unmap of a present anonymous base page `pa` whose last holder
    /// this was (`last`) or not: whether the swap cache keeps the frame
    /// (see [`crate::swap::SwapDevice::unmap_frame`]). One load when the
    /// family has no swap in use.
    #[inline]
    pub(crate) fn swap_cache_keeps(&self, pa: u64, last: bool) -> bool {
        self.shares.swap.active() && self.shares.swap.unmap_frame(pa, last)
    }
}
