//! [`TableLines`]: which last-level table lines one modeled CPU's data
//! caches hold, as far as pricing a TLB miss needs to know.
//!
//! A walk whose last-level entry's line is in the caches costs
//! `tlb.miss_walk_cached` (measured over pages whose tables stay cached);
//! one that must fetch the line costs `tlb.miss_walk` (measured over a
//! 1 GiB working set, whose table lines come from memory). Sequential
//! runs through fresh mappings, and pages just faulted or mapped around
//! a fault, walk the first kind; random accesses over a large region the
//! second.
//!
//! The unit is a pair of 64-byte lines, 16 eight-byte entries: the L2
//! cache's adjacent-line prefetcher (Intel's spatial prefetcher) completes
//! the 128-byte pair of every line it fetches, and a fault-around window
//! (`fault_around_bytes`, 64 KiB) is exactly one pair. The memory is
//! direct-mapped, [`PAIRS`] entries (256 KiB of table lines: the share of a
//! 1-2 MiB L2 the tables keep beside the data; an assumption, not a
//! measurement).
//!
//! ## Invariants
//! 1. Deterministic: the answer depends only on the walks recorded before,
//!    in order (no host clock, no randomness).
//! 2. A walk records its pair: a second walk of the same pair with no walk
//!    of a conflicting pair between is cached.

/// Entries of the direct-mapped memory.
pub const PAIRS: usize = 2048;

/// Entries per pair of lines (two 64-byte lines of 8-byte entries).
const ENTRIES_PER_PAIR_SHIFT: u32 = 4;

/// One CPU's memory of last-level table line pairs.
#[derive(Debug, Clone)]
pub struct TableLines {
    /// The pair held in each slot, plus one (0: empty).
    tags: Vec<u64>,
    /// log2 of the base page: one last-level entry maps one page.
    page_shift: u32,
}

impl TableLines {
    /// An empty memory for pages of `page` bytes.
    pub fn new(page: u64) -> TableLines {
        TableLines {
            tags: vec![0; PAIRS],
            page_shift: page.max(1).trailing_zeros(),
        }
    }

    /// A walk to `va`: whether its last-level entry's line pair was cached;
    /// the pair is cached afterwards.
    #[inline]
    pub fn walk(&mut self, va: u64) -> bool {
        let pair = va >> (self.page_shift + ENTRIES_PER_PAIR_SHIFT);
        let slot = &mut self.tags[(pair as usize) % PAIRS];
        let hit = *slot == pair + 1;
        *slot = pair + 1;
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequential_run_fetches_one_pair_per_sixteen_pages() {
        let mut l = TableLines::new(4096);
        let cached = (0..1024u64).filter(|p| l.walk(p << 12)).count();
        assert_eq!(cached, 1024 - 1024 / 16);
    }

    #[test]
    fn pages_far_apart_in_conflicting_slots_evict_each_other() {
        let mut l = TableLines::new(4096);
        let far = (PAIRS as u64) << 16;
        assert!(!l.walk(0));
        assert!(!l.walk(far));
        assert!(!l.walk(0));
        assert!(l.walk(4096));
    }

    #[test]
    fn random_pages_over_a_large_region_mostly_miss() {
        // 262,144 pages (1 GiB), visited in a fixed scattered order.
        let mut l = TableLines::new(4096);
        let n = 1u64 << 18;
        let cached = (0..n)
            .map(|i| (i * 0x9E37_79B9) % n)
            .filter(|p| l.walk(p << 12))
            .count();
        assert!(cached < (n / 8) as usize, "{cached} of {n} cached");
    }
}
