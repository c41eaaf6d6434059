//! Presence filters: counters that prove a cache miss without a scan.
//!
//! A filter keeps, per entry size (or walk-cache level: a "kind"), `len`
//! counters of the valid entries whose page number (or prefix) at that size
//! has those low bits. A zero proves that no entry of that kind can match;
//! a non-zero says only "maybe", and the caller scans. It never changes
//! which entry matches, hence never a statistic.
//!
//! ## Invariants
//!
//! - Every valid entry of the cache it shadows is counted once, in the
//!   counter of its kind and number: callers count an entry in when they
//!   insert it and out when they evict or invalidate it.
//! - `held[k]` is the number of valid entries of kind `k` counted in.
//! - Counters saturate: one that reached 255 stays there (it may then say
//!   "maybe" for ever, never "absent" wrongly).
//! - `len` is a power of two, or 0 for no filter (every query says maybe).
//! - With the filter on, every slot (`base[kind] | number & mask`) is inside
//!   `counts`, whatever the kind and number: the counters are read and
//!   written without bounds checks.

pub(crate) struct Presence {
    counts: Box<[u8]>,
    /// Valid entries of each kind: a kind with none answers "absent"
    /// without reading a counter (in a TLB that holds only 4 KiB entries,
    /// the 2 MiB and 1 GiB counters are never read).
    held: [u32; MAX_KINDS],
    /// `len - 1`: a slot is `base[kind] | number & mask`.
    mask: usize,
    /// `kind * len` for each kind the filter has, 0 for the others: every
    /// slot of a filter that is on lies inside `counts`.
    base: [usize; MAX_KINDS],
}

/// Kinds a filter can count (TLB sizes per array, walk-cache levels).
pub(crate) const MAX_KINDS: usize = 8;

impl Presence {
    /// A filter of `len` counters (a power of two, or 0 for none) for each
    /// of `kinds` kinds (at most [`MAX_KINDS`]).
    pub(crate) fn new(len: usize, kinds: usize) -> Presence {
        assert!(len == 0 || len.is_power_of_two());
        assert!(kinds <= MAX_KINDS);
        Presence {
            counts: vec![0; len * kinds].into_boxed_slice(),
            held: [0; MAX_KINDS],
            mask: len.wrapping_sub(1),
            base: std::array::from_fn(|k| if k < kinds { k * len } else { 0 }),
        }
    }

    /// Whether there is a filter at all.
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        !self.counts.is_empty()
    }

    /// The index in `counts` of the counter of `kind` and `number`; in
    /// bounds whenever the filter is on: `counts` then holds `kinds * len`
    /// counters, `base` is below that in steps of `len` (0 past `kinds`),
    /// and `number & mask` is below `len`.
    #[inline(always)]
    fn slot(&self, kind: usize, number: u64) -> usize {
        let i = self.base[kind % MAX_KINDS] | (number as usize & self.mask);
        debug_assert!(i < self.counts.len());
        i
    }

    /// Whether an entry of `kind` may have `number` (always, without a
    /// filter).
    #[inline(always)]
    pub(crate) fn maybe(&self, kind: usize, number: u64) -> bool {
        !self.is_on()
            || self.held[kind % MAX_KINDS] != 0
            // SAFETY: the filter is on, so the slot is in bounds (`slot`).
                && unsafe { *self.counts.get_unchecked(self.slot(kind, number)) } != 0
    }

    /// Counts an entry of `kind` and `number` in (`up`) or out.
    #[inline(always)]
    pub(crate) fn count(&mut self, kind: usize, number: u64, up: bool) {
        if !self.is_on() {
            return;
        }
        let i = self.slot(kind, number);
        let held = &mut self.held[kind % MAX_KINDS];
        // SAFETY: the filter is on, so the slot is in bounds (`slot`).
        let c = unsafe { self.counts.get_unchecked_mut(i) };
        // A saturated counter stays: it may since count fewer entries.
        let live = u8::from(*c != u8::MAX);
        if up {
            *held += 1;
            *c += live;
        } else {
            debug_assert!(*c > 0 && *held > 0, "presence filter underflow");
            *held -= 1;
            *c -= live;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Against the multiset of entries counted in: every entry present
        /// is "maybe" (never a wrong "absent", saturated counters included),
        /// a number whose counter no present entry shares is "absent", and a
        /// kind with no entries is "absent" everywhere.
        #[test]
        fn never_absent_for_a_present_entry(
            ops in proptest::collection::vec((0usize..3, 0u64..40, proptest::bool::ANY), 1..600),
        ) {
            // 16 counters, 40 numbers: numbers share counters.
            let mut p = Presence::new(16, 3);
            let mut present: Vec<(usize, u64)> = Vec::new();
            for (kind, number, up) in ops {
                if up {
                    p.count(kind, number, true);
                    present.push((kind, number));
                } else if let Some(i) = present.iter().position(|&e| e == (kind, number)) {
                    p.count(kind, number, false);
                    present.swap_remove(i);
                }
                for k in 0..3 {
                    for n in 0..40 {
                        let same_slot = present.iter().any(|&(pk, pn)| pk == k && pn % 16 == n % 16);
                        let here = present.contains(&(k, n));
                        let m = p.maybe(k, n);
                        proptest::prop_assert!(!here || m, "present ({k}, {n}) said absent");
                        // Without saturation a zero counter means no entry.
                        if present.len() < 255 {
                            proptest::prop_assert_eq!(m, same_slot, "({}, {})", k, n);
                        }
                    }
                }
            }
        }
    }

    /// A counter that reached 255 stays "maybe" while its kind holds any
    /// entry, even after the entries that filled it are gone.
    #[test]
    fn a_saturated_counter_stays() {
        let mut p = Presence::new(16, 1);
        for _ in 0..300 {
            p.count(0, 5, true);
        }
        p.count(0, 6, true);
        for _ in 0..300 {
            p.count(0, 5, false);
        }
        assert!(p.maybe(0, 5), "saturated: no longer exact, still maybe");
        assert!(!p.maybe(0, 7));
        p.count(0, 6, false);
        assert!(!p.maybe(0, 5), "the kind holds nothing");
    }

    #[test]
    fn no_filter_says_maybe() {
        let mut p = Presence::new(0, 2);
        assert!(!p.is_on());
        p.count(1, 7, true);
        assert!(p.maybe(0, 3) && p.maybe(1, 7));
    }
}
