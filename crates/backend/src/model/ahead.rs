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

    /// The next access's offset, and the offsets `k` x [`PREFETCH_AHEAD`]
    /// accesses after it (`ahead[k - 1]`, for `k` from 1 to [`STAGES`]) where
    /// the touch has them; `None` when the touch is done.
    #[inline]
    pub(super) fn next(&mut self) -> Option<(u64, [Option<u64>; STAGES])> {
        if self.len == 0 {
            return None;
        }
        let off = self.ring[self.head];
        let mut ahead = [None; STAGES];
        for (k, a) in ahead.iter_mut().enumerate().take(STAGES - 1) {
            let d = (k + 1) * PREFETCH_AHEAD;
            if self.len > d {
                *a = Some(self.ring[(self.head + d) % DEPTH]);
            }
        }
        match self.offsets.next() {
            Some(last) => {
                // The ring is full: `last` is DEPTH accesses ahead, and
                // takes the slot of the offset handed out.
                ahead[STAGES - 1] = Some(last);
                self.ring[self.head] = last;
            }
            None => self.len -= 1,
        }
        self.head = (self.head + 1) % DEPTH;
        Some((off, ahead))
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
            while let Some((o, ahead)) = ring.next() {
                got.push((o, ahead.to_vec()));
            }
            prop_assert_eq!(got, plain);
            prop_assert_eq!(ring.next(), None);
        }
    }
}
