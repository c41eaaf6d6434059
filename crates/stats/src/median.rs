//! The median of a sample with a distribution-free interval: two order
//! statistics `x(j) <= x(k)` (1-based) that enclose the population's median
//! with a probability that depends only on `n`, whatever the distribution
//! (the sign-test interval).
//!
//! With the sample sorted, the median lies below `x(j)` only when fewer than
//! `j` values fell below it, so the coverage of `[x(j), x(n+1-j)]` is
//! `1 - 2 P(B < j)` with `B ~ Binomial(n, 1/2)`. It comes in steps: the
//! narrowest symmetric pair reaching 95% is chosen; from fewer than six
//! values none does, and the whole range is given with its (lower)
//! coverage, named. Coverage assumes independent, identically distributed
//! runs (runs that alternate with others on a busy host are neither, quite).
//!
//! Invariants: `lo <= median <= hi`, all three values of the sample (the
//! median of an even sample the mean of its two middle values); `coverage`
//! is exact for the ranks given.

use crate::error::{check_finite, StatsError};
use crate::summary::CONFIDENCE;
use serde::Serialize;

/// The median and its order-statistic interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianInterval {
    pub n: usize,
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
    /// The 1-based ranks of `lo` and `hi` in the sorted sample.
    pub ranks: (usize, usize),
    /// The interval's coverage of the population median (0..=1).
    pub coverage: f64,
}

impl MedianInterval {
    /// The method, named, for a report ("order statistics 1 and 5 of 5,
    /// coverage 93.8%").
    pub fn method(&self) -> String {
        format!(
            "order statistics {} and {} of {} (distribution-free), coverage {:.1}%",
            self.ranks.0,
            self.ranks.1,
            self.n,
            self.coverage * 100.0
        )
    }
}

/// `P(B < j)` for `B ~ Binomial(n, 1/2)`.
fn below(n: usize, j: usize) -> f64 {
    let mut p = 0.0;
    let mut c = 1.0f64; // C(n, i)
    for i in 0..j.min(n + 1) {
        if i > 0 {
            c = c * (n + 1 - i) as f64 / i as f64;
        }
        p += c;
    }
    p / 2f64.powi(n as i32)
}

/// The coverage of `[x(j), x(n+1-j)]`.
pub fn coverage(n: usize, j: usize) -> f64 {
    1.0 - 2.0 * below(n, j)
}

/// The median of `samples` with its interval (see the module documentation).
///
/// # Errors
/// [`StatsError::Empty`] for no sample, [`StatsError::NonFinite`] for NaN or
/// infinity.
pub fn median_interval(samples: &[f64]) -> Result<MedianInterval, StatsError> {
    if samples.is_empty() {
        return Err(StatsError::Empty);
    }
    check_finite(samples)?;
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    // The largest j (narrowest interval) whose coverage still reaches the
    // level; j = 1 (the range) when none does.
    let mut j = 1;
    while j < n.div_ceil(2) && coverage(n, j + 1) >= CONFIDENCE {
        j += 1;
    }
    let k = n + 1 - j;
    Ok(MedianInterval {
        n,
        median,
        lo: v[j - 1],
        hi: v[k - 1],
        ranks: (j, k),
        coverage: coverage(n, j),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_of_the_range_is_one_minus_two_halves_to_the_n() {
        for n in 1..12 {
            let expect = 1.0 - 2.0 * 0.5f64.powi(n as i32);
            assert!((coverage(n, 1) - expect).abs() < 1e-12, "n = {n}");
        }
    }

    #[test]
    fn five_runs_give_the_range_at_93_8_percent() {
        let m = median_interval(&[5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
        assert_eq!((m.median, m.lo, m.hi), (3.0, 1.0, 5.0));
        assert_eq!(m.ranks, (1, 5));
        assert!((m.coverage - 0.9375).abs() < 1e-12);
        assert!(m.method().contains("93.8%"));
    }

    #[test]
    fn larger_samples_narrow_and_keep_95_percent() {
        // n = 20: the sign-test interval is x(6)..x(15), coverage 95.9%.
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let m = median_interval(&v).unwrap();
        assert_eq!(m.ranks, (6, 15));
        assert_eq!((m.lo, m.hi, m.median), (6.0, 15.0, 10.5));
        assert!(m.coverage >= CONFIDENCE && coverage(20, 7) < CONFIDENCE);
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(median_interval(&[]).is_err());
        assert!(median_interval(&[1.0, f64::NAN]).is_err());
    }
}
