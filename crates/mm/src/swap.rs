//! The swap device and its swap cache, shared by a fork family (Linux
//! mm/swapfile.c: the slots and their counts, `swap_map`; mm/swap_state.c:
//! the swap cache).
//!
//! A slot holds one base page written out by reclaim. Its `count` is the
//! number of swap entries (non-present PTEs) naming it, in every process of
//! the family (Linux `swap_count`, raised by fork's `swap_duplicate`,
//! lowered by `swap_free` when a fault maps the page again and by
//! `free_swap_and_cache` when a zap clears the entry). The swap cache keeps
//! the page's frame beside the slot while it is there (Linux
//! `SWAP_HAS_CACHE`): after reclaim wrote it (the write is asynchronous on a
//! swap file or an ordinary block device, so reclaim keeps the folio; a
//! device with synchronous I/O such as zram has written it by then, and
//! reclaim frees it), after a fault read it back,
//! until one of these frees it:
//! - a later reclaim that finds it clean and no longer mapped
//!   (`shrink_folio_list` → `__remove_mapping`);
//! - a write fault by the page's only user (`should_try_to_free_swap`,
//!   `folio_free_swap`);
//! - the last unmap of a page whose slot no entry names any more
//!   (`free_swap_cache`, `free_swap_and_cache`).
//!
//! A slot is free once no entry names it and the cache holds nothing for it.
//! The frame in the cache is counted as its own holder: it is freed when the
//! cache lets go of it and no process maps it.

use pt::sync::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A swap entry's value in a PTE ([`pt::Entry::Swap`]): the slot, and
/// whether the page was exclusive to the process when it was unmapped
/// (Linux `pte_swp_exclusive`; fork clears it on both sides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwapEntry {
    pub slot: u64,
    pub exclusive: bool,
}

impl SwapEntry {
    pub fn to_val(self) -> u64 {
        (self.slot << 1) | u64::from(self.exclusive)
    }
    pub fn from_val(val: u64) -> SwapEntry {
        SwapEntry {
            slot: val >> 1,
            exclusive: val & 1 != 0,
        }
    }
}

/// One slot in use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Swap entries naming the slot.
    pub(crate) count: u32,
    /// The frame in the swap cache, if any.
    pub(crate) cache: Option<u64>,
    /// PTEs mapping the cached frame (in every process of the family).
    pub(crate) mapped: u32,
    /// The cached frame was read ahead and no fault has found it yet
    /// (Linux `PG_readahead` on a swap-cache folio).
    pub(crate) readahead: bool,
    /// The large folio this slot was written with: its first slot and its
    /// pages (0: a base page). The folio stays one in the swap cache while
    /// every slot of it still caches the frame it was written from
    /// ([`SwapDevice::cached_folio`]).
    pub(crate) folio_base: u64,
    pub(crate) folio_pages: u32,
}

/// The system-wide state of cluster read-ahead (Linux: mm/swap_state.c,
/// `swapin_nr_pages`'s statics and `swapin_readahead_hits`).
#[derive(Debug, Default, Clone, Copy)]
struct ClusterRa {
    prev_offset: u64,
    last_pages: u32,
    hits: u32,
}

#[derive(Debug, Default)]
struct State {
    slots: HashMap<u64, Slot>,
    /// The slot of each frame in the swap cache.
    by_frame: HashMap<u64, u64>,
    /// Slots never used yet start here.
    next: u64,
    /// Freed slots, reused first (lowest last: any order keeps the counts).
    free: Vec<u64>,
    cluster_ra: ClusterRa,
}

/// What a fault on a swap entry found ([`SwapDevice::swapin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SwapIn {
    /// The frame that now holds the page (in the swap cache).
    pub(crate) pa: u64,
    /// The page was read from the device (the frame offered was used).
    pub(crate) major: bool,
    /// The page was found in the cache where read-ahead had put it (the
    /// first such find: Linux `folio_test_clear_readahead`).
    pub(crate) ra_hit: bool,
}

/// The family's swap device.
#[derive(Debug, Default)]
pub(crate) struct SwapDevice {
    state: Mutex<State>,
    /// Slots in use: zero means no process of the family has swapped
    /// anything (one load on the unmap path).
    used: AtomicUsize,
}

fn lock(m: &Mutex<State>) -> pt::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SwapDevice {
    /// Whether any slot is in use.
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.used.load(Ordering::Acquire) != 0
    }

    /// Slots in use (entries or cache).
    pub(crate) fn slots_used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// The slot whose cache holds `pa`, if any.
    pub(crate) fn slot_of_frame(&self, pa: u64) -> Option<u64> {
        if !self.active() {
            return None;
        }
        lock(&self.state).by_frame.get(&pa).copied()
    }

    /// The state of `slot` (a copy), if in use.
    pub(crate) fn slot(&self, slot: u64) -> Option<Slot> {
        lock(&self.state).slots.get(&slot).copied()
    }

    // Linux: mm/swap_state.c, add_to_swap (folio_alloc_swap) + try_to_unmap_one
    /// Reclaim unmaps the mapped page `pa` (mapped by exactly this one
    /// PTE) to a swap entry: a page already in the swap cache keeps its
    /// slot, which gains the entry; a clean one (`dirty` false: not
    /// written since it was read back) then leaves the cache, and the
    /// returned `free_frame` is true. Any other page gets a new slot of
    /// the `capacity` and stays in the cache while it is written. `None`
    /// when the device is full (the page stays mapped). `sync`: the device
    /// writes synchronously, so the page leaves the cache (and memory) as
    /// soon as no process maps it, written or not (`shrink_folio_list`
    /// frees a folio whose write already ended).
    pub(crate) fn swap_out(
        &self,
        pa: u64,
        dirty: bool,
        capacity: u64,
        sync: bool,
    ) -> Option<(u64, bool)> {
        let mut s = lock(&self.state);
        if let Some(&slot) = s.by_frame.get(&pa) {
            let sl = s.slots.get_mut(&slot).expect("a cached frame has its slot");
            sl.count += 1;
            sl.mapped = sl.mapped.saturating_sub(1);
            if (sync || !dirty) && sl.mapped == 0 {
                sl.cache = None;
                s.by_frame.remove(&pa);
                return Some((slot, true));
            }
            return Some((slot, false));
        }
        // Slot 0 is the swap header: slots run from 1 to the capacity.
        let slot = match s.free.pop() {
            Some(n) => n,
            None if s.next < capacity => {
                s.next += 1;
                s.next
            }
            None => return None,
        };
        s.slots.insert(
            slot,
            Slot {
                count: 1,
                cache: (!sync).then_some(pa),
                ..Slot::default()
            },
        );
        if !sync {
            s.by_frame.insert(pa, slot);
        }
        self.used.fetch_add(1, Ordering::AcqRel);
        Some((slot, sync))
    }

    // Linux: mm/swapfile.c, folio_alloc_swap → cluster_alloc_swap_entry
    // with the folio's order (a block device only: the caller checked)
    /// Reclaim writes the large folio of `pages` base pages at `pa` whole:
    /// it gets `pages` contiguous slots aligned to their number, in a
    /// cluster no slot was taken from yet (slot 0, the swap header, keeps
    /// the first cluster from ever being free), each named by one entry.
    /// The folio stays in the swap cache while it is written (`sync`
    /// false) or leaves memory at once (`sync`: the caller frees it).
    /// Returns the first slot, `None` when no such cluster is left (the
    /// caller splits the folio: `shrink_folio_list`'s fallback).
    pub(crate) fn swap_out_folio(
        &self,
        pa: u64,
        pages: u64,
        page: u64,
        capacity: u64,
        sync: bool,
    ) -> Option<u64> {
        let mut s = lock(&self.state);
        let base = (s.next + 1).next_multiple_of(pages);
        if base + pages - 1 > capacity {
            return None;
        }
        // The slots skipped to reach the cluster serve base pages.
        for skipped in s.next + 1..base {
            s.free.push(skipped);
        }
        s.next = base + pages - 1;
        for i in 0..pages {
            let frame = pa + i * page;
            s.slots.insert(
                base + i,
                Slot {
                    count: 1,
                    cache: (!sync).then_some(frame),
                    folio_base: base,
                    folio_pages: pages as u32,
                    ..Slot::default()
                },
            );
            if !sync {
                s.by_frame.insert(frame, base + i);
            }
        }
        self.used.fetch_add(pages as usize, Ordering::AcqRel);
        Some(base)
    }

    // Linux: mm/memory.c, do_swap_page (a large folio found in the swap
    // cache: folio_test_large && folio_test_swapcache)
    /// The large folio `slot` was written with, if it is still one in the
    /// swap cache, unmapped: its first slot, its pages and the frame of its
    /// first page.
    pub(crate) fn cached_folio(&self, slot: u64, page: u64) -> Option<(u64, u64, u64)> {
        let s = lock(&self.state);
        let sl = s.slots.get(&slot)?;
        let (base, pages) = (sl.folio_base, u64::from(sl.folio_pages));
        if pages == 0 {
            return None;
        }
        let first = s.slots.get(&base)?.cache?;
        let whole = (0..pages).all(|i| {
            s.slots.get(&(base + i)).is_some_and(|o| {
                o.folio_base == base && o.cache == Some(first + i * page) && o.mapped == 0
            })
        });
        whole.then_some((base, pages, first))
    }

    // Linux: mm/memory.c, do_swap_page (SWP_SYNCHRONOUS_IO and
    // __swap_count(entry) == 1: the folio skips the swap cache, and
    // swap_free_nr frees the slot)
    /// On a synchronous device, a fault on `slot` when its one entry is
    /// the faulting one and the page is not in the cache: the page is read
    /// straight into the faulting process's frame, and the slot is freed.
    /// Returns whether it was (else the fault goes through the cache).
    pub(crate) fn swapin_uncached(&self, slot: u64) -> bool {
        let mut s = lock(&self.state);
        let Some(sl) = s.slots.get(&slot) else {
            return false;
        };
        if sl.count != 1 || sl.cache.is_some() {
            return false;
        }
        s.slots.remove(&slot);
        s.free.push(slot);
        self.used.fetch_sub(1, Ordering::AcqRel);
        true
    }

    // Linux: mm/swapfile.c, swap_duplicate (fork's copy_nonpresent_pte)
    /// One more entry names `slot`.
    pub(crate) fn duplicate(&self, slot: u64) {
        if let Some(sl) = lock(&self.state).slots.get_mut(&slot) {
            sl.count += 1;
        }
    }

    // Linux: mm/memory.c, do_swap_page (swap_cache_get_folio, else
    // swapin_readahead + add_to_swap_cache; then swap_free for the entry)
    /// A fault maps the page of `slot` through one of its entries: the
    /// cached frame if there is one (a minor fault), else the page is read
    /// into `fresh`, which joins the cache (major). The entry's count goes
    /// and the frame gains a mapping. `None` if the slot is not in use (a
    /// bug of the caller).
    /// `cluster_hits`: a find of a read-ahead page counts toward the
    /// system-wide hits (cluster read-ahead; Linux `swapin_readahead_hits`).
    pub(crate) fn swapin(&self, slot: u64, fresh: u64, cluster_hits: bool) -> Option<SwapIn> {
        let mut s = lock(&self.state);
        let sl = s.slots.get_mut(&slot)?;
        sl.count = sl.count.checked_sub(1)?;
        sl.mapped += 1;
        let got = match sl.cache {
            Some(pa) => SwapIn {
                pa,
                major: false,
                ra_hit: std::mem::take(&mut sl.readahead),
            },
            None => {
                sl.cache = Some(fresh);
                s.by_frame.insert(fresh, slot);
                SwapIn {
                    pa: fresh,
                    major: true,
                    ra_hit: false,
                }
            }
        };
        if got.ra_hit && cluster_hits {
            s.cluster_ra.hits += 1;
        }
        Some(got)
    }

    /// Whether `slot` is in use with its page in the swap cache.
    pub(crate) fn cached(&self, slot: u64) -> bool {
        lock(&self.state)
            .slots
            .get(&slot)
            .is_some_and(|s| s.cache.is_some())
    }

    // Linux: mm/swap_state.c, __read_swap_cache_async from the read-ahead
    // loops (folio_set_readahead on a folio it allocated)
    /// Read-ahead reads `slot`'s page into `fresh` if the slot is named by
    /// an entry and not cached; the frame joins the cache unmapped, marked
    /// as read ahead. Returns whether `fresh` was used.
    pub(crate) fn read_ahead(&self, slot: u64, fresh: u64) -> bool {
        let mut s = lock(&self.state);
        let Some(sl) = s.slots.get_mut(&slot) else {
            return false;
        };
        if sl.count == 0 || sl.cache.is_some() {
            return false;
        }
        sl.cache = Some(fresh);
        sl.readahead = true;
        s.by_frame.insert(fresh, slot);
        true
    }

    // Linux: mm/swap_state.c, swapin_nr_pages
    /// The window of a cluster read-ahead at `offset` with at most
    /// `max_pages`, from the hits since the last one; updates the
    /// system-wide state.
    pub(crate) fn cluster_window(&self, offset: u64, max_pages: u32) -> u32 {
        if max_pages <= 1 {
            return 1;
        }
        let mut s = lock(&self.state);
        let ra = &mut s.cluster_ra;
        let hits = std::mem::take(&mut ra.hits);
        let pages =
            crate::swap_ra::nr_pages(ra.prev_offset, offset, hits, max_pages, ra.last_pages);
        if hits == 0 {
            ra.prev_offset = offset;
        }
        ra.last_pages = pages;
        pages
    }

    // Linux: mm/swapfile.c, folio_free_swap (should_try_to_free_swap on a
    // write fault, wp_can_reuse_anon_folio)
    /// Drops the cached frame `pa` from the cache and frees its slot, if
    /// no entry names the slot any more. Returns whether it did.
    pub(crate) fn free_swap(&self, pa: u64) -> bool {
        let mut s = lock(&self.state);
        let Some(&slot) = s.by_frame.get(&pa) else {
            return false;
        };
        if s.slots[&slot].count != 0 {
            return false;
        }
        s.by_frame.remove(&pa);
        s.slots.remove(&slot);
        s.free.push(slot);
        self.used.fetch_sub(1, Ordering::AcqRel);
        true
    }

    /// One more PTE maps the cached frame `pa` (fork's copy of a present
    /// page); nothing if the frame is not in the cache.
    pub(crate) fn map_more(&self, pa: u64) {
        let mut s = lock(&self.state);
        if let Some(&slot) = s.by_frame.get(&pa) {
            if let Some(sl) = s.slots.get_mut(&slot) {
                sl.mapped += 1;
            }
        }
    }

    /// A mapping of the cached frame `pa` is replaced by a private copy
    /// (the frame stays in the cache).
    pub(crate) fn unmap_copy(&self, pa: u64) {
        let mut s = lock(&self.state);
        if let Some(&slot) = s.by_frame.get(&pa) {
            if let Some(sl) = s.slots.get_mut(&slot) {
                sl.mapped = sl.mapped.saturating_sub(1);
            }
        }
    }

    // Linux: mm/swap_state.c, free_swap_cache (the unmap of a present page)
    /// A PTE mapping `pa` is gone (zap, copy-on-write); `last`: no process
    /// maps the frame any more. Returns `true` if the swap cache keeps the
    /// frame (its slot is still named by an entry: the caller must not
    /// free it), `false` if the frame is not the cache's (any more): then
    /// it goes as any anonymous page does.
    pub(crate) fn unmap_frame(&self, pa: u64, last: bool) -> bool {
        let mut s = lock(&self.state);
        let Some(&slot) = s.by_frame.get(&pa) else {
            return false;
        };
        let sl = s.slots.get_mut(&slot).expect("a cached frame has its slot");
        sl.mapped = sl.mapped.saturating_sub(1);
        if !last {
            return false;
        }
        if sl.count != 0 {
            return true;
        }
        s.by_frame.remove(&pa);
        s.slots.remove(&slot);
        s.free.push(slot);
        self.used.fetch_sub(1, Ordering::AcqRel);
        false
    }

    // Linux: mm/swapfile.c, free_swap_and_cache_nr (zap of a swap entry,
    // MADV_FREE of one)
    /// An entry naming `slot` is cleared. Returns the cached frame to free
    /// when the slot is then unused and no process maps the frame.
    pub(crate) fn free_entry(&self, slot: u64) -> Option<u64> {
        let mut s = lock(&self.state);
        let sl = s.slots.get_mut(&slot)?;
        sl.count = sl.count.saturating_sub(1);
        if sl.count != 0 || sl.mapped != 0 {
            return None;
        }
        let cache = sl.cache;
        s.slots.remove(&slot);
        if let Some(pa) = cache {
            s.by_frame.remove(&pa);
        }
        s.free.push(slot);
        self.used.fetch_sub(1, Ordering::AcqRel);
        cache
    }

    /// Every slot in use (for the invariant checks of the tests).
    pub(crate) fn slots(&self) -> Vec<(u64, Slot)> {
        let s = lock(&self.state);
        let mut v: Vec<_> = s.slots.iter().map(|(k, v)| (*k, *v)).collect();
        v.sort_by_key(|e| e.0);
        v
    }
}
