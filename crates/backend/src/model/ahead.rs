//! [`Ahead`]: a touch's offsets read up to [`STAGES`] x [`PREFETCH_AHEAD`]
//! accesses ahead of the access that uses them, so that the executor can
//! hint the host to fetch the walk of an access, in stages, before it is
//! made (a host-side speed trick: it changes no model state). The stages
//! are `pt::table::PrefetchStage`'s: the offset [`STAGES`] x
//! [`PREFETCH_AHEAD`] ahead gets its leaf table's bias word fetched, the
//! one [`PREFETCH_AHEAD`] ahead its leaf word, whose load of the bias then
//! finds it in the caches.
//!
//! The plain way is a copy of the offset generator per stage, each skipped
//! ahead; a random touch's generator draws a PCG number per offset, so
//! every copy adds the draws again. Here one generator fills a ring of the
//! next offsets: each access takes the oldest, and the ones a stage ahead
//! are read from the ring. Exact: `the_ring_gives_what_skipped_generators_give`
//! holds each access's offset and its stages' offsets to those of
//! generators skipped ahead, access by access.

use super::run::PREFETCH_AHEAD;

/// Prefetch stages, each [`PREFETCH_AHEAD`] accesses before the next.
pub(super) const STAGES: usize = 2;
/// Offsets the ring holds.
const DEPTH: usize = STAGES * PREFETCH_AHEAD;

/// The next offsets of one touch and the one to prefetch (see the module
/// documentation).
pub(super) struct Ahead<I> {
    offsets: I,
    ring: [u64; DEPTH],
    /// Index of the oldest offset in `ring`.
    head: usize,
    /// Offsets in `ring`.
    len: usize,
}

impl<I: Iterator<Item = u64>> Ahead<I> {
    /// The first `DEPTH` offsets of `offsets` read ahead.
    pub(super) fn new(mut offsets: I) -> Ahead<I> {
        let mut ring = [0; DEPTH];
        let mut len = 0;
        while len < DEPTH {
            match offsets.next() {
                Some(o) => {
                    ring[len] = o;
                    len += 1;
                }
                None => break,
            }
        }
        Ahead {
            offsets,
            ring,
            head: 0,
            len,
        }
    }

    /// The next access's offset; `None` when the touch is done. The
    /// offsets after it are then [`Ahead::later`]'s.
    #[inline]
    pub(super) fn next(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let off = self.ring[self.head];
        match self.offsets.next() {
            // The ring was full: the new offset takes the slot of the one
            // handed out, DEPTH accesses after it.
            Some(last) => self.ring[self.head] = last,
            None => self.len -= 1,
        }
        self.head = (self.head + 1) % DEPTH;
        Some(off)
    }

    /// The offset `d` accesses after the one [`Ahead::next`] handed out
    /// last (`1 <= d <= DEPTH`), if the touch has it.
    #[inline]
    pub(super) fn later(&self, d: usize) -> Option<u64> {
        (self.len >= d).then(|| self.ring[(self.head + d - 1) % DEPTH])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The plain path: the offsets, and beside each the offsets of one
        /// generator per stage, skipped that stage's distance ahead.
        #[test]
        fn the_ring_gives_what_skipped_generators_give(
            offsets in proptest::collection::vec(any::<u64>(), 0..80),
        ) {
            let mut skipped: Vec<_> = (1..=STAGES)
                .map(|k| offsets.clone().into_iter().skip(k * PREFETCH_AHEAD))
                .collect();
            let plain: Vec<(u64, Vec<Option<u64>>)> = offsets
                .iter()
                .map(|&o| (o, skipped.iter_mut().map(Iterator::next).collect()))
                .collect();
            let mut ring = Ahead::new(offsets.clone().into_iter());
            let mut got = Vec::new();
            while let Some(o) = ring.next() {
                let later: Vec<Option<u64>> =
                    (1..=STAGES).map(|k| ring.later(k * PREFETCH_AHEAD)).collect();
                got.push((o, later));
            }
            prop_assert_eq!(got, plain);
            prop_assert_eq!(ring.next(), None);
        }
    }
}
