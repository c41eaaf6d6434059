//! A second model of the `zen4`, `icelake` and `neoverse-n1` presets, for
//! the one case the 64 GiB benchmark exercises: 4 KiB pages of `x86-64-4l`,
//! one address space, every access permitted to a page whose accessed and
//! dirty bits are set.
//!
//! It is written from the presets' numbers alone (for 4 KiB pages, the first
//! level's sets and ways and the second level's: zen4 1 x 72 and 128 x 24,
//! icelake 16 x 4 and 128 x 16, neoverse-n1 1 x 48 and 256 x 5; walk caches
//! of 4 sets of 8 for level 1, 2 of 4 for level 2, 1 of 4 for level 3; LRU
//! everywhere) and shares none of the crate's structures, so it serves
//! twice:
//!
//! - the integration test `against_reference.rs` holds the crate's model to
//!   it access by access (the same physical address, hits, walks, references
//!   and walk-cache hits per level), for each of the three presets;
//! - `examples/bound64.rs` times the zen4 one beside the crate's model: how
//!   fast an exact model of these TLBs runs on this host when it knows
//!   nothing but this one case.
//!
//! ## Invariants
//!
//! - Each set of a [`Lru`] array is a circular list through its ways with
//!   the set's sentinel: from the sentinel, `next` runs from the most to the
//!   least recently used way.
//! - `present[t % FILTER]` counts the valid ways whose tag is `t` modulo
//!   `FILTER`: a zero proves a miss without a scan.
//! - Sizes are constants and indices masked to them, so the compiler drops
//!   most bounds checks without `unsafe`.

#![allow(dead_code)]

use pt::PhysMem;

/// A tag no page number or prefix reaches (they are below 2^52).
const EMPTY: u64 = u64::MAX;

/// x86-64 entry bits the walk reads.
const PRESENT: u64 = 1;
const HUGE: u64 = 1 << 7;
const ADDR: u64 = 0x000f_ffff_ffff_f000;

/// One LRU array of `SETS` sets (a power of two) of `WAYS` ways, with
/// `FILTER` counters (a power of two) behind its miss test. The sizes are
/// constants so that masked indices need no bounds checks.
pub struct Lru<const SETS: usize, const WAYS: usize, const FILTER: usize> {
    tags: Box<[[u64; WAYS]; SETS]>,
    vals: Box<[[u64; WAYS]; SETS]>,
    /// `[next, prev]` of every node: way `w` of set `s` is node
    /// `s * WAYS + w`, the sentinel of set `s` is node `SETS * WAYS + s`.
    links: Box<[[u32; 2]]>,
    present: Box<[u16; FILTER]>,
}

impl<const SETS: usize, const WAYS: usize, const FILTER: usize> Lru<SETS, WAYS, FILTER> {
    const SENTINELS: usize = SETS * WAYS;

    pub fn new() -> Self {
        assert!(SETS.is_power_of_two() && FILTER.is_power_of_two());
        let mut links = vec![[0u32; 2]; SETS * WAYS + SETS].into_boxed_slice();
        for s in 0..SETS {
            // A ring through the sentinel and the set's ways. Which empty
            // way fills first changes no hit or miss: only the order of the
            // valid ways does.
            let ring: Vec<usize> = std::iter::once(Self::SENTINELS + s)
                .chain(s * WAYS..(s + 1) * WAYS)
                .collect();
            for (k, &node) in ring.iter().enumerate() {
                let next = ring[(k + 1) % ring.len()];
                let prev = ring[(k + ring.len() - 1) % ring.len()];
                links[node] = [next as u32, prev as u32];
            }
        }
        Lru {
            tags: Box::new([[EMPTY; WAYS]; SETS]),
            vals: Box::new([[0; WAYS]; SETS]),
            links,
            present: Box::new([0; FILTER]),
        }
    }

    fn set_of(tag: u64) -> usize {
        tag as usize & (SETS - 1)
    }

    fn counter(&mut self, tag: u64) -> &mut u16 {
        &mut self.present[tag as usize & (FILTER - 1)]
    }

    /// Moves way `w` of `set` to the front of its list.
    fn make_recent(&mut self, set: usize, w: usize) {
        let (s, i) = (Self::SENTINELS + set, set * WAYS + w);
        let first = self.links[s][0] as usize;
        if first == i {
            return;
        }
        let [next, prev] = self.links[i];
        self.links[prev as usize][0] = next;
        self.links[next as usize][1] = prev;
        self.links[i] = [first as u32, s as u32];
        self.links[first][1] = i as u32;
        self.links[s][0] = i as u32;
    }

    /// The value cached under `tag`, made the most recent.
    #[inline]
    pub fn lookup(&mut self, tag: u64) -> Option<u64> {
        if *self.counter(tag) == 0 {
            return None;
        }
        let set = Self::set_of(tag);
        let w = self.tags[set].iter().position(|&t| t == tag)?;
        self.make_recent(set, w);
        Some(self.vals[set][w])
    }

    /// Caches `tag -> val` (known absent) in the least recent way of its set.
    #[inline]
    pub fn fill(&mut self, tag: u64, val: u64) {
        let set = Self::set_of(tag);
        let victim = self.links[Self::SENTINELS + set][1] as usize;
        let w = victim % WAYS;
        self.make_recent(set, w);
        let old = self.tags[set][w];
        if old != EMPTY {
            *self.counter(old) -= 1;
        }
        self.tags[set][w] = tag;
        self.vals[set][w] = val;
        *self.counter(tag) += 1;
    }
}

impl<const SETS: usize, const WAYS: usize, const FILTER: usize> Default
    for Lru<SETS, WAYS, FILTER>
{
    fn default() -> Self {
        Self::new()
    }
}

/// What the reference counts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub l1_hits: u64,
    pub l2_hits: u64,
    pub walks: u64,
    pub refs: u64,
    /// Walks that started below a walk-cache hit at level 1, 2, 3.
    pub pwc_hits: [u64; 4],
}

/// A reference CPU whose first level has `S1` sets of `W1` ways for 4 KiB
/// pages and whose second level has `S2` sets of `W2`. Tags are page numbers
/// (TLBs) and prefixes (walk caches), values physical addresses.
pub struct Model<const S1: usize, const W1: usize, const S2: usize, const W2: usize> {
    l1: Lru<S1, W1, 4096>,
    l2: Lru<S2, W2, 32768>,
    /// Walk caches of levels 1, 2 and 3, keyed by `va >> (12 + 9 * level)`.
    pwc1: Lru<4, 8, 256>,
    pwc2: Lru<2, 4, 256>,
    pwc3: Lru<1, 4, 256>,
    pub counts: Counts,
}

/// AMD Zen 4: L1 DTLB 72 entries fully associative, L2 3072 in 24 ways.
pub type Zen4 = Model<1, 72, 128, 24>;
/// Intel Ice Lake: 4 KiB DTLB 64 entries in 4 ways, STLB 2048 in 16 ways.
pub type IceLake = Model<16, 4, 128, 16>;
/// Arm Neoverse N1: L1 48 entries fully associative, L2 1280 in 5 ways.
pub type NeoverseN1 = Model<1, 48, 256, 5>;

impl<const S1: usize, const W1: usize, const S2: usize, const W2: usize> Default
    for Model<S1, W1, S2, W2>
{
    fn default() -> Self {
        Self::new()
    }
}

impl<const S1: usize, const W1: usize, const S2: usize, const W2: usize> Model<S1, W1, S2, W2> {
    pub fn new() -> Self {
        Model {
            l1: Lru::new(),
            l2: Lru::new(),
            pwc1: Lru::new(),
            pwc2: Lru::new(),
            pwc3: Lru::new(),
            counts: Counts::default(),
        }
    }

    /// The physical address of `va` under the 4-level tables rooted at
    /// `root` in `mem`: first level, second level, then a walk from the
    /// lowest walk-cache hit.
    #[inline]
    pub fn access(&mut self, mem: &PhysMem, root: u64, va: u64) -> u64 {
        let page = va >> 12;
        let offset = va & 0xfff;
        if let Some(pa) = self.l1.lookup(page) {
            self.counts.l1_hits += 1;
            return pa | offset;
        }
        if let Some(pa) = self.l2.lookup(page) {
            self.counts.l2_hits += 1;
            self.l1.fill(page, pa);
            return pa | offset;
        }
        let pa = self.walk(mem, root, va);
        self.l1.fill(page, pa);
        self.l2.fill(page, pa);
        pa | offset
    }

    #[inline(never)]
    fn walk(&mut self, mem: &PhysMem, root: u64, va: u64) -> u64 {
        // The lowest level with an entry wins.
        let (mut level, mut table) = if let Some(t) = self.pwc1.lookup(va >> 21) {
            (0, t)
        } else if let Some(t) = self.pwc2.lookup(va >> 30) {
            (1, t)
        } else if let Some(t) = self.pwc3.lookup(va >> 39) {
            (2, t)
        } else {
            (3, root)
        };
        if level < 3 {
            self.counts.pwc_hits[level + 1] += 1;
        }
        self.counts.walks += 1;
        loop {
            let shift = 12 + 9 * level;
            let raw = mem.read_walk(table + ((va >> shift) & 511) * 8);
            self.counts.refs += 1;
            assert!(raw & PRESENT != 0, "{va:#x}: not present at level {level}");
            if level == 0 {
                return raw & ADDR;
            }
            assert!(raw & HUGE == 0, "{va:#x}: a huge page at level {level}");
            table = raw & ADDR;
            match level {
                1 => self.pwc1.fill(va >> shift, table),
                2 => self.pwc2.fill(va >> shift, table),
                _ => self.pwc3.fill(va >> shift, table),
            }
            level -= 1;
        }
    }
}
