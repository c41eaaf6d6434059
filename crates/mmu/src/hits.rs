//! The first-level TLB's hit path: the entries of recent hits, 16 pages
//! direct mapped, checked before any TLB array. A hit here costs a compare
//! and a few stores whatever the array's size, associativity or
//! replacement policy, which is what makes replaying billions of TLB hits
//! cheap.
//!
//! It is transparent: it changes no hit, miss or statistic, only when the
//! work is done.
//!
//! ## Invariants
//!
//! - A valid slot mirrors the first-level entry it names (`entry`) as that
//!   entry was when the slot was filled. Every change to the TLB arrays
//!   (fills, invalidations, flag updates, flushes) is preceded by
//!   [`HitCache::clear`] (by the CPU that owns both), so a valid slot's
//!   entry is still there, unchanged.
//! - A hit here defers the entry's replacement update (LRU touch): the slot
//!   keeps the time of its last hit (`stamp`, from `clock`) and its hit
//!   count. [`HitCache::sync`] runs before anything reads or changes the
//!   replacement state or the statistics: it touches the entries of the
//!   slots hit since the last sync in the order of their last hits, which
//!   leaves an LRU order exactly as touching at every hit would have (the
//!   order depends only on each entry's last touch), and adds the counts.
//!   Only arrays whose replacement allows this use the cache
//!   (`TlbLevel::touches_replayable`).

use crate::stats::MmuStats;
use crate::tlb::{Slot, TlbEntry, TlbLevel};

/// Slots (a power of two).
const SLOTS: usize = 16;

#[derive(Debug, Clone, Copy)]
struct HitSlot {
    /// The entry's virtual base (`va & mask`); 1 (never a masked address) when empty.
    tag: u64,
    /// `!(size - 1)`; 0 when empty.
    mask: u64,
    pa_base: u64,
    flags: u8,
    shift: u8,
    /// Hits not yet counted in the statistics.
    hits: u64,
    /// When the last of those hits happened.
    stamp: u64,
    entry: Slot,
}

impl HitSlot {
    const EMPTY: HitSlot = HitSlot {
        tag: 1,
        mask: 0,
        pa_base: 0,
        flags: 0,
        shift: 0,
        hits: 0,
        stamp: 0,
        entry: Slot::NONE,
    };
}

/// See the module documentation.
pub(crate) struct HitCache {
    slots: [HitSlot; SLOTS],
    clock: u64,
    /// Slots hit since the last sync.
    dirty: u32,
    /// Slots filled since the last clear.
    valid: u32,
    /// Whether this CPU's first level may use the cache at all.
    enabled: bool,
}

/// A hit: the physical address and the entry's size shift.
pub(crate) struct Hit {
    pub pa: u64,
    pub shift: u8,
}

impl HitCache {
    pub(crate) fn new(l1: &TlbLevel) -> HitCache {
        HitCache {
            slots: [HitSlot::EMPTY; SLOTS],
            clock: 0,
            dirty: 0,
            valid: 0,
            enabled: l1.touches_replayable(),
        }
    }

    #[inline(always)]
    fn index(va: u64) -> usize {
        (va >> 12) as usize & (SLOTS - 1)
    }

    /// A hit on a recent entry that permits `need`, if any.
    #[inline(always)]
    pub(crate) fn hit(&mut self, va: u64, need: u8) -> Option<Hit> {
        let i = Self::index(va);
        let s = &mut self.slots[i];
        if va & s.mask != s.tag || s.flags & need != need {
            return None;
        }
        s.hits += 1;
        self.clock += 1;
        s.stamp = self.clock;
        self.dirty |= 1 << i;
        Some(Hit {
            pa: s.pa_base | (va & !s.mask),
            shift: s.shift,
        })
    }

    /// Remembers a first-level hit on `entry` (just looked up, so already
    /// touched) for the page of `va`.
    #[inline]
    pub(crate) fn fill(&mut self, va: u64, entry: Slot, e: TlbEntry) {
        if !self.enabled {
            return;
        }
        let i = Self::index(va);
        debug_assert_eq!(self.dirty & (1 << i), 0, "filled before a sync");
        let mask = !((1u64 << e.shift()) - 1);
        self.valid |= 1 << i;
        self.slots[i] = HitSlot {
            tag: va & mask,
            mask,
            pa_base: e.pa_base(),
            flags: e.flags(),
            shift: e.shift(),
            hits: 0,
            stamp: 0,
            entry,
        };
    }

    /// Replays the deferred touches into `l1` and counts the hits into
    /// `stats` (see the module invariants). The slots stay valid.
    #[inline(always)]
    pub(crate) fn sync(&mut self, l1: &mut TlbLevel, stats: &mut MmuStats) {
        if self.dirty != 0 {
            self.replay(l1, stats);
        }
    }

    #[inline(never)]
    fn replay(&mut self, l1: &mut TlbLevel, stats: &mut MmuStats) {
        let mut order = [(0u64, 0usize); SLOTS];
        let mut n = 0;
        for i in slots_in(self.dirty) {
            order[n] = (self.slots[i].stamp, i);
            n += 1;
        }
        order[..n].sort_unstable();
        for &(_, i) in &order[..n] {
            let s = &mut self.slots[i];
            l1.touch(s.entry);
            stats.l1_hits_by_size[usize::from(s.shift)] += s.hits;
            s.hits = 0;
        }
        self.dirty = 0;
    }

    /// [`HitCache::sync`], then forgets every slot: before the TLB arrays change.
    #[inline(always)]
    pub(crate) fn clear(&mut self, l1: &mut TlbLevel, stats: &mut MmuStats) {
        self.sync(l1, stats);
        if self.valid != 0 {
            self.forget();
        }
    }

    #[inline(never)]
    fn forget(&mut self) {
        for i in slots_in(self.valid) {
            self.slots[i] = HitSlot::EMPTY;
        }
        self.valid = 0;
    }

    /// Adds the hits not yet counted to `stats` (for a read that must not
    /// change anything).
    pub(crate) fn count_pending(&self, stats: &mut MmuStats) {
        for i in slots_in(self.dirty) {
            let s = &self.slots[i];
            stats.l1_hits_by_size[usize::from(s.shift)] += s.hits;
        }
    }
}

/// The slots a mask (`dirty`, `valid`) names, lowest first.
fn slots_in(mut mask: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            i
        })
    })
}
