//! Log2 latency histograms, as bcc's funclatency draws them: bucket `i` counts values
//! in `[2^i, 2^(i+1))` nanoseconds, bucket 0 also holds 0 (so it is `[0, 2)`). This is
//! the layout of `workload::result::LatencyHistogram::buckets`.
//!
//! Percentiles are estimated by assuming values spread uniformly within a bucket: the
//! estimate always lies in the bucket that holds the true percentile, so its error is
//! at most the bucket's width (a factor of 2).
//!
//! [`Log2Hist::record`] is a few instructions and never allocates, so a backend can
//! record every access; histograms of threads are combined with [`Log2Hist::merge`].

/// Buckets needed for every `u64` value.
pub const LOG2_BUCKETS: usize = 64;

/// The bucket of a value: `floor(log2(ns))`, with 0 and 1 in bucket 0.
#[inline]
pub fn log2_bucket(ns: u64) -> usize {
    (u64::BITS - 1 - (ns | 1).leading_zeros()) as usize
}

/// The smallest and largest value (both inclusive) bucket `i` holds:
/// `(0, 1)` for bucket 0, `(2^i, 2^(i+1) - 1)` otherwise.
///
/// # Panics
/// If `i >= LOG2_BUCKETS`.
pub fn log2_bucket_bounds(i: usize) -> (u64, u64) {
    assert!(i < LOG2_BUCKETS, "log2 bucket {i} out of range");
    let low = if i == 0 { 0 } else { 1u64 << i };
    let high = if i == LOG2_BUCKETS - 1 {
        u64::MAX
    } else {
        (1u64 << (i + 1)) - 1
    };
    (low, high)
}

/// A log2 histogram of nanosecond values with exact count, sum, min and max.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Log2Hist {
    buckets: [u64; LOG2_BUCKETS],
    count: u64,
    /// Saturates rather than wraps: 2^64 ns is 584 years of accumulated latency.
    sum_ns: u64,
    min_ns: u64,
    max_ns: u64,
}

impl Default for Log2Hist {
    fn default() -> Self {
        Self::new()
    }
}

impl Log2Hist {
    /// An empty histogram.
    pub const fn new() -> Log2Hist {
        Log2Hist {
            buckets: [0; LOG2_BUCKETS],
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    /// Counts one value.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.buckets[log2_bucket(ns)] += 1;
        self.count += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Adds every value of `other` to `self`.
    pub fn merge(&mut self, other: &Log2Hist) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the values recorded (saturating at `u64::MAX`).
    pub fn sum_ns(&self) -> u64 {
        self.sum_ns
    }

    /// The smallest value recorded; `None` when empty.
    pub fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min_ns)
    }

    /// The largest value recorded; `None` when empty.
    pub fn max_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max_ns)
    }

    /// The exact mean; `None` when empty.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }

    /// All 64 bucket counts.
    pub fn bucket_counts(&self) -> &[u64; LOG2_BUCKETS] {
        &self.buckets
    }

    /// The bucket counts up to the last non-empty bucket (empty when nothing was
    /// recorded): the form `LatencyHistogram::buckets` stores.
    pub fn buckets(&self) -> Vec<u64> {
        let len = self
            .buckets
            .iter()
            .rposition(|&c| c > 0)
            .map_or(0, |i| i + 1);
        self.buckets[..len].to_vec()
    }

    /// Estimated (p50, p99, p99.9), kept within the exact min and max; `None` when
    /// empty.
    pub fn percentiles(&self) -> Option<(u64, u64, u64)> {
        let (a, b, c) = percentiles_from_log2(&self.buckets)?;
        let clamp = |v: u64| v.clamp(self.min_ns, self.max_ns);
        Some((clamp(a), clamp(b), clamp(c)))
    }
}

/// The estimated `q`-quantile (0 < q ≤ 1) of the values counted by log2 `buckets`:
/// the bucket holding the `ceil(q·N)`-th smallest value is found, and the value is
/// interpolated linearly within it. `None` when the buckets are all empty or `q` is
/// outside (0, 1].
pub fn quantile_from_log2(buckets: &[u64], q: f64) -> Option<f64> {
    if !(q > 0.0 && q <= 1.0) {
        return None;
    }
    let buckets = &buckets[..buckets.len().min(LOG2_BUCKETS)];
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = q * total as f64;
    let mut before = 0u64;
    for (i, &c) in buckets.iter().enumerate() {
        if c == 0 {
            continue;
        }
        // Integer cumulative counts: `before + c >= rank` iff it reaches ceil(rank).
        if (before + c) as f64 >= rank {
            let (low, high) = log2_bucket_bounds(i);
            let width = high as f64 - low as f64 + 1.0;
            let frac = ((rank - before as f64) / c as f64).clamp(0.0, 1.0);
            return Some((low as f64 + frac * width).min(high as f64));
        }
        before += c;
    }
    // Only reached through rounding when q = 1: the largest non-empty bucket's top.
    let last = buckets.iter().rposition(|&c| c > 0)?;
    Some(log2_bucket_bounds(last).1 as f64)
}

/// Estimated (p50, p99, p99.9) in nanoseconds, rounded, from log2 `buckets`
/// (see [`quantile_from_log2`]); `None` when all buckets are empty.
pub fn percentiles_from_log2(buckets: &[u64]) -> Option<(u64, u64, u64)> {
    let q = |p| quantile_from_log2(buckets, p).map(|v: f64| v.round() as u64);
    Some((q(0.5)?, q(0.99)?, q(0.999)?))
}
