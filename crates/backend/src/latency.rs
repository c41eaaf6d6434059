//! Per-access latency: a fixed-size histogram the child fills without
//! allocating, and its conversion to the format's log2 histogram with
//! percentiles.
//!
//! Each power of two `[2^e, 2^(e+1))` nanoseconds is split into 16 equal
//! sub-buckets (values below 16 ns have one bucket each), so a percentile is
//! known to within 1/16 of its value (6.25%) while the histogram stays a
//! fixed array of [`FINE_BUCKETS`] counters.

use workload::result::LatencyHistogram;

/// Sub-buckets per power of two.
const SUB: usize = 16;
const SUB_BITS: u32 = 4;
/// Counters in a [`FineHist`]: values below 16 in slots 0..16, then 16 slots
/// for each exponent 4..=63.
pub(crate) const FINE_BUCKETS: usize = 61 * SUB;
/// `u64` words of a [`FineHist`] on the wire: buckets, count, sum, max.
pub(crate) const HIST_WORDS: usize = FINE_BUCKETS + 3;

/// A latency histogram in fixed memory.
#[derive(Clone)]
pub(crate) struct FineHist {
    pub buckets: [u64; FINE_BUCKETS],
    pub count: u64,
    pub sum_ns: u64,
    pub max_ns: u64,
}

impl FineHist {
    pub fn new() -> Box<FineHist> {
        Box::new(FineHist {
            buckets: [0; FINE_BUCKETS],
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        })
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.buckets[fine_index(ns)] += 1;
        self.count += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn merge(&mut self, other: &FineHist) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    pub fn clear(&mut self) {
        self.buckets.fill(0);
        self.count = 0;
        self.sum_ns = 0;
        self.max_ns = 0;
    }

    /// Writes the histogram as [`HIST_WORDS`] words.
    pub fn to_words(&self, out: &mut [u64]) {
        out[..FINE_BUCKETS].copy_from_slice(&self.buckets);
        out[FINE_BUCKETS] = self.count;
        out[FINE_BUCKETS + 1] = self.sum_ns;
        out[FINE_BUCKETS + 2] = self.max_ns;
    }

    pub fn from_words(words: &[u64]) -> Box<FineHist> {
        let mut h = FineHist::new();
        h.buckets.copy_from_slice(&words[..FINE_BUCKETS]);
        h.count = words[FINE_BUCKETS];
        h.sum_ns = words[FINE_BUCKETS + 1];
        h.max_ns = words[FINE_BUCKETS + 2];
        h
    }

    /// The format's histogram: log2 buckets (trailing empty ones dropped)
    /// and percentiles, each the upper edge of the sub-bucket holding that
    /// rank, never above the maximum seen.
    pub fn to_result(&self) -> LatencyHistogram {
        let mut log2 = vec![0u64; 64];
        for (i, n) in self.buckets.iter().enumerate() {
            if *n > 0 {
                log2[log2_bucket(i)] += n;
            }
        }
        let used = log2.iter().rposition(|n| *n > 0).map_or(0, |i| i + 1);
        log2.truncate(used);
        LatencyHistogram {
            buckets: log2,
            count: self.count,
            sum_ns: self.sum_ns,
            p50_ns: self.percentile(0.50),
            p99_ns: self.percentile(0.99),
            p999_ns: self.percentile(0.999),
            max_ns: self.max_ns,
        }
    }

    fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((p * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return upper_edge(i).min(self.max_ns);
            }
        }
        self.max_ns
    }
}

/// The sub-bucket of `ns`.
#[inline]
pub(crate) fn fine_index(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros(); // >= 4
    let sub = (ns >> (e - SUB_BITS)) as usize - SUB;
    (e as usize - 3) * SUB + sub
}

/// The largest value in sub-bucket `i`.
pub(crate) fn upper_edge(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let (e, sub) = ((i / SUB) as u32 + 3, (i % SUB) as u64);
    let width = 1u64 << (e - SUB_BITS);
    ((SUB as u64 + sub) << (e - SUB_BITS)) + (width - 1)
}

/// The log2 bucket (`[2^k, 2^(k+1))`, 0 also holding 0 ns) of sub-bucket `i`.
fn log2_bucket(i: usize) -> usize {
    if i < SUB {
        return if i <= 1 {
            0
        } else {
            63 - (i as u64).leading_zeros() as usize
        };
    }
    i / SUB + 3
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn value_lies_in_its_bucket(ns in any::<u64>()) {
            let i = fine_index(ns);
            prop_assert!(i < FINE_BUCKETS);
            prop_assert!(ns <= upper_edge(i));
            if i > 0 {
                prop_assert!(ns > upper_edge(i - 1) || upper_edge(i - 1) == upper_edge(i));
            }
            // Sub-buckets are at most 1/16 of their value wide.
            let low = if i == 0 { 0 } else { upper_edge(i - 1) + 1 };
            prop_assert!(upper_edge(i) - low <= low / 16);
            // The log2 bucket is the floor of log2.
            let k = log2_bucket(i);
            prop_assert_eq!(k, if ns <= 1 { 0 } else { 63 - ns.leading_zeros() as usize });
        }

        #[test]
        fn percentiles_bracket_exact_ones(mut values in prop::collection::vec(0u64..10_000_000, 1..400)) {
            let mut h = FineHist::new();
            for v in &values {
                h.record(*v);
            }
            values.sort_unstable();
            let r = h.to_result();
            prop_assert_eq!(r.count, values.len() as u64);
            prop_assert_eq!(r.buckets.iter().sum::<u64>(), values.len() as u64);
            prop_assert_eq!(r.max_ns, *values.last().unwrap());
            for (p, got) in [(0.5, r.p50_ns), (0.99, r.p99_ns), (0.999, r.p999_ns)] {
                let rank = ((p * values.len() as f64).ceil() as usize).clamp(1, values.len());
                let exact = values[rank - 1];
                prop_assert!(got >= exact && got <= exact + exact / 16 + 1, "p{p}: {got} vs {exact}");
            }
            prop_assert!(r.p50_ns <= r.p99_ns && r.p99_ns <= r.p999_ns && r.p999_ns <= r.max_ns);
        }
    }

    #[test]
    fn words_round_trip_and_merge() {
        let mut a = FineHist::new();
        let mut b = FineHist::new();
        a.record(5);
        a.record(1000);
        b.record(1_000_000);
        let mut words = vec![0u64; HIST_WORDS];
        a.to_words(&mut words);
        let mut c = FineHist::from_words(&words);
        c.merge(&b);
        let r = c.to_result();
        assert_eq!((r.count, r.sum_ns, r.max_ns), (3, 1_001_005, 1_000_000));
        assert_eq!(r.buckets.len(), 20); // 2^19 <= 10^6 < 2^20
        c.clear();
        assert_eq!(c.to_result().count, 0);
    }
}
