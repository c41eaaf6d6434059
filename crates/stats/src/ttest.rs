//! Two-sample t-tests: is the difference between two configurations' means real?
//!
//! Conventions (those of R's `t.test(x, y)`): the difference is `mean(a) - mean(b)`,
//! `t` has its sign, the p-value is two-sided, and the interval is the 95% confidence
//! interval of the difference.
//!
//! Degenerate case, stated rather than left to produce NaN: when both samples have zero
//! variance (exact counters, as the model gives) the standard error is 0. Then equal
//! means give `t = 0, p = 1` (no evidence of a difference) and different means give
//! `t = ±inf, p = 0` (the difference is certain), with a zero-width interval at the
//! difference and `df = n_a + n_b - 2`.

use crate::error::{check_finite, StatsError};
use crate::summary::{mean, sample_variance, t_quantile, Interval, CONFIDENCE};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// What a t-test needs of one sample: its size, mean and sample variance (divisor n-1).
/// Building it from published figures lets a test be checked against a paper.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    pub n: usize,
    pub mean: f64,
    pub variance: f64,
}

impl Moments {
    /// The moments of `samples`.
    ///
    /// # Errors
    /// [`StatsError::TooFew`] with fewer than 2 values (no variance),
    /// [`StatsError::NonFinite`] for a NaN or infinite value.
    pub fn of(samples: &[f64]) -> Result<Moments, StatsError> {
        if samples.len() < 2 {
            return Err(StatsError::TooFew {
                needed: 2,
                got: samples.len(),
            });
        }
        check_finite(samples)?;
        let m = mean(samples);
        Ok(Moments {
            n: samples.len(),
            mean: m,
            variance: sample_variance(samples, m),
        })
    }
}

/// The result of a two-sample t-test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TTest {
    /// The t statistic, `diff / standard error`.
    pub t: f64,
    /// Degrees of freedom (fractional for Welch).
    pub df: f64,
    /// Two-sided p-value, in [0, 1].
    pub p: f64,
    /// `mean(a) - mean(b)`.
    pub diff: f64,
    /// 95% confidence interval of `diff`.
    pub ci95: Interval,
    /// `true` for Student's pooled-variance test, `false` for Welch's.
    pub equal_variance: bool,
}

impl TTest {
    /// Whether the difference is significant at level `alpha` (e.g. 0.05).
    pub fn significant(&self, alpha: f64) -> bool {
        self.p < alpha
    }
}

/// Welch's unequal-variance t-test of `a` against `b`, with Welch–Satterthwaite
/// degrees of freedom. The default test: it does not assume that two configurations
/// have the same spread.
///
/// # Errors
/// As [`Moments::of`], for either sample.
pub fn welch(a: &[f64], b: &[f64]) -> Result<TTest, StatsError> {
    Ok(welch_from_moments(Moments::of(a)?, Moments::of(b)?))
}

/// Student's equal-variance t-test (pooled variance, `df = n_a + n_b - 2`), what R
/// gives with `var.equal = TRUE` and the 5-level seed used.
///
/// # Errors
/// As [`Moments::of`], for either sample.
pub fn student(a: &[f64], b: &[f64]) -> Result<TTest, StatsError> {
    Ok(student_from_moments(Moments::of(a)?, Moments::of(b)?))
}

/// [`welch`] from each sample's moments.
pub fn welch_from_moments(a: Moments, b: Moments) -> TTest {
    let (na, nb) = (a.n as f64, b.n as f64);
    let va = a.variance / na;
    let vb = b.variance / nb;
    let se = (va + vb).sqrt();
    // Welch–Satterthwaite: (va + vb)² / (va²/(na-1) + vb²/(nb-1)).
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    finish(a.mean - b.mean, se, df, na + nb - 2.0, false)
}

/// [`student`] from each sample's moments.
pub fn student_from_moments(a: Moments, b: Moments) -> TTest {
    let (na, nb) = (a.n as f64, b.n as f64);
    let df = na + nb - 2.0;
    let pooled = ((na - 1.0) * a.variance + (nb - 1.0) * b.variance) / df;
    let se = (pooled * (1.0 / na + 1.0 / nb)).sqrt();
    finish(a.mean - b.mean, se, df, df, true)
}

fn finish(diff: f64, se: f64, df: f64, degenerate_df: f64, equal_variance: bool) -> TTest {
    if se == 0.0 {
        let (t, p) = if diff == 0.0 {
            (0.0, 1.0)
        } else {
            (diff.signum() * f64::INFINITY, 0.0)
        };
        return TTest {
            t,
            df: degenerate_df,
            p,
            diff,
            ci95: Interval {
                low: diff,
                high: diff,
            },
            equal_variance,
        };
    }
    let t = diff / se;
    let dist = StudentsT::new(0.0, 1.0, df).expect("df > 0 when se > 0 and n >= 2");
    // Two-sided: both tails beyond |t|; sf keeps precision for tiny p-values.
    let p = (2.0 * dist.sf(t.abs())).clamp(0.0, 1.0);
    let half = t_quantile(0.5 + CONFIDENCE / 2.0, df) * se;
    TTest {
        t,
        df,
        p,
        diff,
        ci95: Interval {
            low: diff - half,
            high: diff + half,
        },
        equal_variance,
    }
}
