//! The one generator of touch offsets, shared by every backend so that the
//! kernel and the model access the same bytes in the same order.
//!
//! It is [`workload::plan::Touch::offsets`] (the plan owns the definition:
//! seq, reverse and random patterns over `ceil(len / stride)` access points,
//! random drawn by a PCG generator seeded with the touch's `seed`); this
//! module is the name the backends call, so neither grows its own copy.
//! Creating and running the iterator allocates nothing (the kernel backend
//! runs it inside measured code).

use workload::plan::Touch;

/// Byte offsets from the region's start of the touch's `count` accesses, in
/// order. Deterministic: the same touch gives the same offsets every time.
pub fn touch_offsets(touch: &Touch) -> impl Iterator<Item = u64> + '_ {
    touch.offsets()
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::plan::{Access, Pattern, Range};

    fn touch(pattern: Pattern, count: u64, seed: u64) -> Touch {
        Touch {
            region: 0,
            range: Range {
                offset: 8192,
                len: 10 * 4096,
            },
            access: Access::Write,
            pattern,
            stride: 4096,
            count,
            seed,
            latency: false,
        }
    }

    #[test]
    fn seq_and_reverse_visit_every_point_in_order() {
        let seq: Vec<u64> = touch_offsets(&touch(Pattern::Seq, 10, 1)).collect();
        assert_eq!(seq, (0..10).map(|k| 8192 + k * 4096).collect::<Vec<_>>());
        let mut rev: Vec<u64> = touch_offsets(&touch(Pattern::Reverse, 10, 1)).collect();
        rev.reverse();
        assert_eq!(rev, seq);
    }

    #[test]
    fn random_is_deterministic_in_range_and_seeded() {
        let t = touch(Pattern::Random, 1000, 7);
        let a: Vec<u64> = touch_offsets(&t).collect();
        let b: Vec<u64> = touch_offsets(&t).collect();
        assert_eq!(a, b);
        assert!(a
            .iter()
            .all(|o| (8192..8192 + 10 * 4096).contains(o) && o % 4096 == 0));
        let c: Vec<u64> = touch_offsets(&touch(Pattern::Random, 1000, 8)).collect();
        assert_ne!(a, c);
        // 1000 draws over 10 points reach every point.
        let mut seen: Vec<u64> = a.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 10);
    }
}
