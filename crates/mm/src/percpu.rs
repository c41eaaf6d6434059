//! Address-space counters split into per-thread slots, as Linux keeps
//! `mm->rss_stat` in `percpu_counter`s (since 6.2): a fault adds to its own
//! slot (its own cache line), so threads faulting at once do not bounce one
//! line between them; a reader sums the slots.
//!
//! ## Invariants
//! - The value of counter `k` is the sum over the slots of `k`; a slot alone
//!   means nothing (a page counted in by one thread may be counted out by
//!   another, so a slot may go negative).
//! - Sums are exact when no update runs concurrently (the invariant
//!   checker's and the marks' case); under concurrent updates a sum is some
//!   interleaving's value, as `percpu_counter_sum` is.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// Slots per counter set (a thread uses `thread number % SLOTS`).
pub(crate) const SLOTS: usize = 16;

static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SLOT: usize = NEXT_THREAD.fetch_add(1, Ordering::Relaxed) % SLOTS;
}

#[repr(align(128))]
struct Slot<const N: usize>([AtomicI64; N]);

/// `N` counters, each split over [`SLOTS`] slots.
pub(crate) struct SplitCounters<const N: usize> {
    slots: Box<[Slot<N>]>,
}

impl<const N: usize> Default for SplitCounters<N> {
    fn default() -> Self {
        SplitCounters {
            slots: (0..SLOTS)
                .map(|_| Slot(std::array::from_fn(|_| AtomicI64::new(0))))
                .collect(),
        }
    }
}

/// This thread's slot.
#[inline]
pub(crate) fn slot() -> usize {
    SLOT.with(|s| *s)
}

impl<const N: usize> SplitCounters<N> {
    /// Adds `v` to counter `k` (this thread's slot).
    #[inline]
    pub(crate) fn add(&self, k: usize, v: i64) {
        self.slots[slot()].0[k].fetch_add(v, Ordering::Relaxed);
    }

    /// The value of counter `k`.
    pub(crate) fn sum(&self, k: usize) -> i64 {
        self.slots
            .iter()
            .map(|s| s.0[k].load(Ordering::Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_from_many_threads_sum_exactly() {
        let c = SplitCounters::<2>::default();
        std::thread::scope(|sc| {
            for t in 0..(SLOTS as i64 + 3) {
                let c = &c;
                sc.spawn(move || {
                    for _ in 0..1000 {
                        c.add(0, 1);
                        c.add(1, t);
                    }
                });
            }
        });
        // Counted out on another thread than they were counted in.
        c.add(0, -500);
        let n = SLOTS as i64 + 3;
        assert_eq!(c.sum(0), n * 1000 - 500);
        assert_eq!(c.sum(1), 1000 * n * (n - 1) / 2);
    }
}
