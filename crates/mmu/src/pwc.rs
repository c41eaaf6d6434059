//! Paging-structure caches (Intel's PML5E/PML4E/PDPTE/PDE caches, AMD's
//! page walk cache): per table level, the physical address of the next
//! table, keyed by the virtual-address bits that select the entry.
//!
//! An entry of the cache for level `l` is tagged by `va >> hw_shift(l)` (the
//! bits the walk used down to and including level `l`) and the ASID; a hit
//! lets the walk start at level `l - 1` (Intel SDM vol. 3A §4.10.3.2: the
//! processor uses the cache entry of the lowest level it has).
//!
//! ## Invariants
//!
//! - Only pointers to tables are cached, never leaves (SDM §4.10.3.1).
//! - `caches[l]` exists only for levels 1 to the root that the configuration
//!   names.
//! - `presence` counts every valid entry of `caches[l]` under kind `l` by
//!   its prefix (see the `presence` module): a lookup skips a level whose
//!   counter is zero without scanning it.

use crate::cache::{Cache, ASID_MASK};
use crate::config::PwcConfig;
use crate::presence::Presence;
use pt::geometry::MAX_LEVELS;
use pt::{TableAddr, VirtAddr};

pub(crate) struct Pwc {
    caches: [Option<Cache<u64>>; MAX_LEVELS],
    shifts: [u32; MAX_LEVELS],
    presence: Presence,
    /// Lowest and highest configured level (lookups scan this range).
    lowest: usize,
    highest: usize,
}

#[inline]
fn key(prefix: u64, asid: u16) -> u64 {
    (prefix << 12) | u64::from(asid)
}

/// The prefix a [`key`] was built from.
#[inline]
fn prefix_of(tag: u64) -> u64 {
    tag >> 12
}

impl Pwc {
    /// `hw_shifts[l]` is the lowest VA bit the hardware table of level `l`
    /// indexes.
    pub(crate) fn new(cfg: &[PwcConfig], hw_shifts: &[u32], seed: u64) -> Pwc {
        let mut caches: [Option<Cache<u64>>; MAX_LEVELS] = Default::default();
        let mut shifts = [0; MAX_LEVELS];
        shifts[..hw_shifts.len()].copy_from_slice(hw_shifts);
        let (mut lowest, mut highest) = (usize::MAX, 0);
        let mut largest = 0;
        for c in cfg {
            // A cache for a level the geometry lacks (a PML5E cache under
            // 4-level paging) exists but is never used.
            if c.level == 0 || c.level >= hw_shifts.len() {
                continue;
            }
            caches[c.level] = Some(Cache::new(
                c.entries as usize,
                c.ways as usize,
                c.replacement,
                seed.wrapping_mul(17).wrapping_add(c.level as u64),
            ));
            lowest = lowest.min(c.level);
            highest = highest.max(c.level);
            largest = largest.max(c.entries as usize);
        }
        Pwc {
            caches,
            shifts,
            presence: Presence::new(
                (largest * 8).next_power_of_two().clamp(64, 1 << 15),
                MAX_LEVELS,
            ),
            lowest,
            highest,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lowest == usize::MAX
    }

    /// The lowest level with an entry for `va`, and the table it points to.
    // Always: the native walk, the nested walk and the host walk call it,
    // and the native walk must not lose it to a call (BENCHMARKS.md).
    #[inline(always)]
    pub(crate) fn lookup(&mut self, va: VirtAddr, asid: u16) -> Option<(usize, TableAddr)> {
        if self.is_empty() {
            return None;
        }
        for l in self.lowest..=self.highest {
            let prefix = va.page_index(self.shifts[l]);
            if !self.presence.maybe(l, prefix) {
                continue;
            }
            if let Some(c) = &mut self.caches[l] {
                let set = c.set_of(prefix);
                if let Some(i) = c.probe(set, key(prefix, asid)) {
                    return Some((l, TableAddr::new(c.val(i))));
                }
            }
        }
        None
    }

    /// Caches the pointer read from the level-`level` entry for `va`. The
    /// walk fills only levels below the one its [`Pwc::lookup`] hit (or
    /// every level, if none did), and the lookup probed those, deepest
    /// first, and missed: the entry is known to be absent (debug-checked).
    // Always: the native walk, the nested walk and the host walk call it,
    // and the native walk must not lose it to a call (BENCHMARKS.md).
    #[inline(always)]
    pub(crate) fn fill(&mut self, level: usize, va: VirtAddr, asid: u16, table: TableAddr) {
        let prefix = va.page_index(self.shifts[level]);
        if let Some(c) = &mut self.caches[level] {
            let set = c.set_of(prefix);
            let (_, evicted) = c.insert_absent(set, key(prefix, asid), !0, table.pa());
            if let Some((tag, _)) = evicted {
                self.presence.count(level, prefix_of(tag), false);
            }
            self.presence.count(level, prefix, true);
        }
    }

    /// Empties, at every level, the entries for which `f(level, tag)` holds
    /// (tags as [`key`] builds them); returns how many.
    fn invalidate(&mut self, f: impl Fn(usize, u64) -> bool) -> u64 {
        let mut n = 0;
        for (l, c) in self.caches.iter_mut().enumerate() {
            if let Some(c) = c {
                let presence = &mut self.presence;
                n += c.invalidate_all(|t, _, _| {
                    let hit = f(l, t);
                    if hit {
                        presence.count(l, prefix_of(t), false);
                    }
                    hit
                });
            }
        }
        n
    }

    /// Empties every entry of `asid`; returns how many.
    pub(crate) fn flush_asid(&mut self, asid: u16) -> u64 {
        let a = u64::from(asid);
        self.invalidate(|_, t| t & ASID_MASK == a)
    }

    /// Empties everything.
    pub(crate) fn flush_all(&mut self) -> u64 {
        self.invalidate(|_, _| true)
    }

    /// Empties the entries of `asid` whose walks went through `[va, va + len)`.
    pub(crate) fn invalidate_range(&mut self, asid: u16, va: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let a = u64::from(asid);
        let last = va.saturating_add(len - 1);
        let shifts = self.shifts;
        self.invalidate(|l, t| {
            // Prefixes as the tags hold them (the top 12 bits dropped).
            let (lo, hi) = (key(va >> shifts[l], 0), key(last >> shifts[l], 0));
            t & ASID_MASK == a && (lo..=hi).contains(&(t & !ASID_MASK))
        })
    }

    /// Valid entries at `level` (for tests).
    pub(crate) fn occupancy(&self, level: usize) -> usize {
        self.caches[level].as_ref().map_or(0, |c| c.occupancy())
    }
}
