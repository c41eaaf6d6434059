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
        let Some((slot, free_frame)) = self.shares.swap.swap_out(pa, dirty, capacity) else {
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
        // (Linux: swap_cache_get_folio, then swapin_readahead).
        if !swap.cached(entry.slot) {
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
