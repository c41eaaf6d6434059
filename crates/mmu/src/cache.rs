//! A set-associative array of tagged entries: the storage of every TLB array
//! and walk cache.
//!
//! Entries match by mask: entry `i` matches `key` when
//! `key & mask == tag`. A TLB entry of size `S` for address space
//! `asid` has `tag = (va & !(S-1)) | asid` and `mask = !(S-1) | 0xfff`, so one
//! comparison checks the page number at the entry's own size and the ASID
//! (kept in the low 12 bits, which no page number uses). An empty way has
//! `mask = 0` and `tag = u64::MAX`, which no key matches.
//!
//! An entry's tag, mask and value sit together ([`Way`]): a probe, a fill
//! and an eviction each touch one place per way.
//!
//! ## Invariants
//!
//! - `ways` has `sets * assoc` elements (`age` too under PLRU); set `s`
//!   occupies `[s * assoc, (s + 1) * assoc)`.
//! - Under LRU, `lru` orders every set by last use, emptied ways last (see
//!   the `lru` module): a touch and a victim search are constant time.
//! - No two valid ways of one set hold the same `(tag, mask)`
//!   ([`Cache::insert`] overwrites instead of duplicating).
//! - The hit path ([`Cache::probe`]) neither allocates, hashes nor divides.

use crate::config::Replacement;
use crate::lru::LruLists;

/// A tag no key matches (with mask 0).
const EMPTY_TAG: u64 = u64::MAX;

/// Bits of the key that hold the ASID.
pub(crate) const ASID_MASK: u64 = 0xfff;

/// One way: an entry, valid when `mask != 0`.
#[derive(Debug, Clone, Copy)]
struct Way<V> {
    tag: u64,
    mask: u64,
    val: V,
}

impl<V: Default> Way<V> {
    fn empty() -> Way<V> {
        Way {
            tag: EMPTY_TAG,
            mask: 0,
            val: V::default(),
        }
    }

    #[inline(always)]
    fn matches(&self, key: u64) -> bool {
        key & self.mask == self.tag
    }

    #[inline(always)]
    fn is_valid(&self) -> bool {
        self.mask != 0
    }
}

pub(crate) struct Cache<V> {
    assoc: usize,
    set_mask: u64,
    ways: Box<[Way<V>]>,
    /// PLRU: 1 if recently used (LRU and Random keep nothing here).
    age: Box<[u64]>,
    /// LRU: the order of every set (empty for the other policies).
    lru: Option<LruLists>,
    repl: Replacement,
    rng: u64,
}

impl<V: Copy + Default> Cache<V> {
    /// `entries / ways` must be a power of two (checked by the configuration).
    pub(crate) fn new(entries: usize, ways: usize, repl: Replacement, seed: u64) -> Cache<V> {
        let sets = entries / ways;
        debug_assert!(sets.is_power_of_two() && sets * ways == entries);
        Cache {
            assoc: ways,
            set_mask: sets as u64 - 1,
            ways: vec![Way::empty(); entries].into_boxed_slice(),
            age: if repl == Replacement::Plru {
                vec![0; entries].into_boxed_slice()
            } else {
                Box::new([])
            },
            lru: (repl == Replacement::Lru).then(|| LruLists::new(sets, ways)),
            repl,
            // xorshift must not start at 0.
            rng: seed | 1,
        }
    }

    /// The set that `index` (a page number or a prefix) falls in.
    #[inline]
    pub(crate) fn set_of(&self, index: u64) -> usize {
        (index & self.set_mask) as usize
    }

    pub(crate) fn is_fully_associative(&self) -> bool {
        self.set_mask == 0
    }

    /// The ways of `set` (a value of [`Cache::set_of`]).
    #[inline(always)]
    fn set(&self, set: usize) -> &[Way<V>] {
        debug_assert!(set as u64 <= self.set_mask);
        // Masked, any `set` names one of the `sets` sets.
        let base = (set & self.set_mask as usize) * self.assoc;
        // SAFETY: `base` is at most `(sets - 1) * assoc`, and `ways` holds
        // `sets * assoc` ways (module invariant).
        unsafe { self.ways.get_unchecked(base..base + self.assoc) }
    }

    /// The way of `set` matching `key`, its replacement state updated.
    #[inline(always)]
    pub(crate) fn probe(&mut self, set: usize, key: u64) -> Option<usize> {
        let w = self.set(set).iter().position(|w| w.matches(key))?;
        let i = set * self.assoc + w;
        self.touch_in(set, i);
        Some(i)
    }

    /// Whether entry `i` (any set) matches `key`; if so its replacement
    /// state is updated as [`Cache::probe`] would. `i` may be any index
    /// (a stale way prediction simply fails).
    #[inline(always)]
    pub(crate) fn probe_at(&mut self, i: usize, key: u64) -> bool {
        if self.ways.get(i).is_some_and(|w| w.matches(key)) {
            self.touch(i);
            true
        } else {
            false
        }
    }

    /// Marks entry `i` used, as a hit on it does.
    #[inline]
    pub(crate) fn touch_at(&mut self, i: usize) {
        self.touch(i);
    }

    /// See `TlbLevel::touches_replayable`.
    pub(crate) fn touches_replayable(&self) -> bool {
        self.repl != Replacement::Plru
    }

    /// [`Cache::touch`] of a way `i` known to be in `set`.
    #[inline(always)]
    fn touch_in(&mut self, set: usize, i: usize) {
        match &mut self.lru {
            Some(l) => l.touch_in(set, i),
            None => self.touch(i),
        }
    }

    #[inline(always)]
    fn touch(&mut self, i: usize) {
        if let Some(l) = &mut self.lru {
            l.touch(i);
            return;
        }
        if self.repl == Replacement::Plru {
            self.age[i] = 1;
            let base = i - i % self.assoc;
            let set = &mut self.age[base..base + self.assoc];
            if set.iter().all(|&b| b != 0) {
                set.fill(0);
                self.age[i] = 1;
            }
        }
    }

    #[inline]
    pub(crate) fn val(&self, i: usize) -> V {
        self.ways[i].val
    }

    #[inline]
    pub(crate) fn val_mut(&mut self, i: usize) -> &mut V {
        &mut self.ways[i].val
    }

    /// Inserts `(tag, mask) -> val` into `set`, replacing an entry with the
    /// same tag and mask, else an empty way, else the replacement victim.
    /// Returns the index used and whether a valid entry was evicted. (The
    /// model always knows a key is absent when it inserts: only the tests
    /// insert blind.)
    #[cfg(test)]
    pub(crate) fn insert(&mut self, set: usize, tag: u64, mask: u64, val: V) -> (usize, bool) {
        let base = set * self.assoc;
        match (base..base + self.assoc)
            .find(|&i| self.ways[i].tag == tag && self.ways[i].mask == mask)
        {
            Some(i) => {
                self.ways[i].val = val;
                self.touch(i);
                (i, false)
            }
            None => {
                let (i, old) = self.insert_absent(set, tag, mask, val);
                (i, old.is_some())
            }
        }
    }

    /// As [`Cache::insert`] for an entry known not to be in the set (a
    /// lookup of its key just missed): an empty way, else the victim.
    /// Returns the index used and the evicted entry's tag and value.
    // Always: the native walk, the nested walk and the host walk call it,
    // and the native walk must not lose it to a call (BENCHMARKS.md).
    #[inline(always)]
    pub(crate) fn insert_absent(
        &mut self,
        set: usize,
        tag: u64,
        mask: u64,
        val: V,
    ) -> (usize, Option<(u64, V)>) {
        debug_assert!(
            self.set(set).iter().all(|w| w.tag != tag || w.mask != mask),
            "insert_absent of a present entry"
        );
        let i = match &mut self.lru {
            // Emptied ways sit at the back of the LRU order (see `lru`):
            // the victim is an empty way if there is one. It becomes the
            // most recent, as the new entry's.
            Some(l) => l.renew_victim(set),
            None => {
                let i = self.victim_unordered(set);
                self.touch(i);
                i
            }
        };
        let w = &mut self.ways[i];
        let evicted = w.is_valid().then_some((w.tag, w.val));
        *w = Way { tag, mask, val };
        (i, evicted)
    }

    /// The way a PLRU or random set gives up: an empty one, else the policy's.
    #[cold]
    fn victim_unordered(&mut self, set: usize) -> usize {
        let base = set * self.assoc;
        if let Some(w) = self.set(set).iter().position(|w| !w.is_valid()) {
            return base + w;
        }
        match self.repl {
            Replacement::Plru => {
                let ages = &self.age[base..base + self.assoc];
                base + ages.iter().position(|&b| b == 0).unwrap_or(0)
            }
            _ => {
                // xorshift64
                let mut x = self.rng;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                self.rng = x;
                base + (x % self.assoc as u64) as usize
            }
        }
    }

    /// Empties entry `i`.
    pub(crate) fn invalidate(&mut self, i: usize) {
        self.ways[i] = Way::empty();
        match (&mut self.lru, self.repl) {
            (Some(l), _) => l.demote(i),
            (None, Replacement::Plru) => self.age[i] = 0,
            _ => {}
        }
    }

    /// Empties every valid way of `set` for which `f(tag, mask, val)` holds;
    /// returns how many.
    pub(crate) fn invalidate_in_set(
        &mut self,
        set: usize,
        f: impl FnMut(u64, u64, &V) -> bool,
    ) -> u64 {
        let base = set * self.assoc;
        self.invalidate_range(base..base + self.assoc, f)
    }

    /// Empties every way of `set` that `key` matches (as [`Cache::probe`]
    /// matches), calling `gone(tag, val)` for each first; returns how many.
    #[inline]
    pub(crate) fn invalidate_key(
        &mut self,
        set: usize,
        key: u64,
        mut gone: impl FnMut(u64, &V),
    ) -> u64 {
        self.invalidate_in_set(set, |t, m, v| {
            let hit = key & m == t;
            if hit {
                gone(t, v);
            }
            hit
        })
    }

    /// Empties every valid way (all sets) for which `f` holds; returns how many.
    pub(crate) fn invalidate_all(&mut self, f: impl FnMut(u64, u64, &V) -> bool) -> u64 {
        self.invalidate_range(0..self.ways.len(), f)
    }

    fn invalidate_range(
        &mut self,
        range: std::ops::Range<usize>,
        mut f: impl FnMut(u64, u64, &V) -> bool,
    ) -> u64 {
        let mut n = 0;
        for i in range {
            let w = self.ways[i];
            if w.is_valid() && f(w.tag, w.mask, &w.val) {
                self.invalidate(i);
                n += 1;
            }
        }
        n
    }

    /// Valid entries (for tests and dumps).
    pub(crate) fn occupancy(&self) -> usize {
        self.ways.iter().filter(|w| w.is_valid()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(page: u64) -> u64 {
        page << 12
    }
    const M: u64 = !0;

    #[test]
    fn lru_evicts_the_least_recently_used_way() {
        // One set of 3 ways.
        let mut c: Cache<u32> = Cache::new(3, 3, Replacement::Lru, 1);
        for p in 1..=3 {
            assert!(!c.insert(0, key(p), M, p as u32).1);
        }
        assert!(c.probe(0, key(1)).is_some()); // 1 is now the most recent
        assert!(c.insert(0, key(4), M, 4).1, "a full set evicts");
        assert!(c.probe(0, key(2)).is_none(), "2 was the LRU way");
        assert!(c.probe(0, key(1)).is_some() && c.probe(0, key(3)).is_some());
    }

    #[test]
    fn plru_victim_is_a_way_not_recently_used() {
        let mut c: Cache<u32> = Cache::new(4, 4, Replacement::Plru, 1);
        for p in 1..=4 {
            c.insert(0, key(p), M, 0);
        }
        // Filling the 4th way set all bits: they reset, leaving way 3 (page 4) marked.
        c.probe(0, key(1));
        c.insert(0, key(5), M, 0);
        assert!(
            c.probe(0, key(2)).is_none(),
            "way 1 (page 2) was the first clear bit"
        );
        assert!(c.probe(0, key(4)).is_some() && c.probe(0, key(1)).is_some());
    }

    #[test]
    fn masks_match_large_entries_and_wide_sets() {
        let mut c: Cache<u32> = Cache::new(72, 72, Replacement::Lru, 1);
        for p in 0..71 {
            c.insert(0, key(p * 3), !0xfff_u64 | ASID_MASK, p as u32);
        }
        // A 2 MiB entry for ASID 5 in the last way.
        let two_m = !((2u64 << 20) - 1) | ASID_MASK;
        c.insert(0, (0x4000_0000 & two_m) | 5, two_m, 99);
        let i = c
            .probe(0, 0x4012_3000 | 5)
            .expect("any page inside the 2 MiB entry");
        assert_eq!(c.val(i), 99);
        assert!(c.probe(0, 0x4012_3000 | 6).is_none(), "another ASID misses");
        assert_eq!(c.occupancy(), 72);
        let gone = c.invalidate_all(|t, _, _| t & ASID_MASK == 5);
        assert_eq!(gone, 1);
        assert_eq!(c.occupancy(), 71);
    }

    /// An emptied way is refilled before any valid way is evicted.
    #[test]
    fn lru_refills_emptied_ways_first() {
        let mut c: Cache<u32> = Cache::new(4, 4, Replacement::Lru, 1);
        for p in 1..=4 {
            c.insert(0, key(p), M, 0);
        }
        assert_eq!(c.invalidate_key(0, key(2), |_, _| {}), 1);
        assert!(!c.insert(0, key(5), M, 0).1, "the empty way took it");
        for p in [1, 3, 4, 5] {
            assert!(c.probe(0, key(p)).is_some(), "page {p} stayed");
        }
        assert!(c.insert(0, key(6), M, 0).1, "now a valid way goes");
        assert!(c.probe(0, key(1)).is_none(), "page 1 was the least recent");
    }

    #[test]
    fn reinserting_the_same_tag_does_not_duplicate() {
        let mut c: Cache<u32> = Cache::new(2, 2, Replacement::Random, 7);
        c.insert(0, key(1), M, 1);
        assert!(!c.insert(0, key(1), M, 2).1);
        assert_eq!(c.occupancy(), 1);
        let i = c.probe(0, key(1)).unwrap();
        assert_eq!(c.val(i), 2);
    }
}
