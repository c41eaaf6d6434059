//! The ratio of two means with its own interval: "1.05 times as many (95% CI 1.03 to
//! 1.07)", and 0 / 0 as undefined, never 1.
//!
//! The interval is the expanded bootstrap percentile interval of
//! `mean(a*) / mean(b*)`, `a*` and `b*` resampled independently (the two
//! configurations' runs are independent), with the expansion of the smaller sample.
//! Invariants of [`ratio_of_means`]:
//! - both means 0: [`Ratio::Undefined`]; only the denominator's: [`Ratio::Infinite`];
//! - both samples without spread: the ratio is exact ([`RatioInterval::Exact`]);
//! - fewer than [`crate::MIN_RUNS_FOR_INTERVAL`] runs on a side that varies:
//!   [`RatioInterval::TooFewRuns`];
//! - a resample whose denominator mean is 0: [`RatioInterval::Unbounded`];
//! - an estimated interval contains the ratio.

use crate::bootstrap::{expanded_alpha, percentile_bounds, replicates, BOOTSTRAP_RESAMPLES};
use crate::error::{check_finite, StatsError};
use crate::interval::{Method, MIN_RUNS_FOR_INTERVAL};
use crate::summary::{mean, Interval, CONFIDENCE};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The interval of a ratio, or why there is none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RatioInterval {
    /// A 95% confidence interval computed by `method`.
    Estimated { interval: Interval, method: Method },
    /// Neither sample varies: the ratio is exact.
    Exact,
    /// A side that varies has fewer than `needed` runs.
    TooFewRuns { n: usize, needed: usize },
    /// Some resamples of the denominator have a mean of 0: no upper bound exists.
    Unbounded,
}

/// `mean(a) / mean(b)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ratio {
    /// A finite ratio and its interval.
    Defined { ratio: f64, interval: RatioInterval },
    /// Both means are 0: 0 / 0 has no value.
    Undefined,
    /// The denominator's mean is 0, the numerator's `numerator` is not.
    Infinite { numerator: f64 },
}

impl Ratio {
    /// The ratio when it is a finite number.
    pub fn value(&self) -> Option<f64> {
        match *self {
            Ratio::Defined { ratio, .. } => Some(ratio),
            _ => None,
        }
    }

    /// The bounds of its interval when one was estimated or the ratio is exact.
    pub fn interval(&self) -> Option<Interval> {
        match *self {
            Ratio::Defined {
                interval: RatioInterval::Estimated { interval, .. },
                ..
            } => Some(interval),
            Ratio::Defined {
                ratio,
                interval: RatioInterval::Exact,
            } => Some(Interval {
                low: ratio,
                high: ratio,
            }),
            _ => None,
        }
    }
}

impl fmt::Display for Ratio {
    /// "1.052 times (95% CI 1.031 to 1.074, bootstrap percentile, 10,000 resamples)",
    /// "2.000 times (exact)", "undefined (0 / 0)", "infinite (12 / 0)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Ratio::Defined { ratio, interval } => {
                write!(f, "{ratio:.3} times")?;
                match interval {
                    RatioInterval::Estimated { interval, method } => write!(
                        f,
                        " ({:.0}% CI {:.3} to {:.3}, {method})",
                        CONFIDENCE * 100.0,
                        interval.low,
                        interval.high
                    ),
                    RatioInterval::Exact => f.write_str(" (exact)"),
                    RatioInterval::TooFewRuns { n, needed } => {
                        write!(f, " (no interval: {n} runs, at least {needed} needed)")
                    }
                    RatioInterval::Unbounded => {
                        f.write_str(" (no interval: the denominator can be 0)")
                    }
                }
            }
            Ratio::Undefined => f.write_str("undefined (0 / 0)"),
            Ratio::Infinite { numerator } => write!(f, "infinite ({numerator} / 0)"),
        }
    }
}

/// `mean(a) / mean(b)` with its interval, by the rules of the module
/// documentation. Use it wherever "ratio to first" is shown, in place of dividing
/// two means (which shows 0 / 0 as 1 or NaN and gives no spread).
///
/// # Errors
/// [`StatsError::Empty`] if a sample is empty, [`StatsError::NonFinite`] for a NaN
/// or infinite value.
pub fn ratio_of_means(a: &[f64], b: &[f64]) -> Result<Ratio, StatsError> {
    for s in [a, b] {
        if s.is_empty() {
            return Err(StatsError::Empty);
        }
        check_finite(s)?;
    }
    let (ma, mb) = (mean(a), mean(b));
    if mb == 0.0 {
        return Ok(if ma == 0.0 {
            Ratio::Undefined
        } else {
            Ratio::Infinite { numerator: ma }
        });
    }
    let ratio = ma / mb;
    let varies = |s: &[f64]| s.iter().any(|&v| v != s[0]);
    let interval = if !varies(a) && !varies(b) {
        RatioInterval::Exact
    } else if a.len().min(b.len()) < MIN_RUNS_FOR_INTERVAL {
        RatioInterval::TooFewRuns {
            n: a.len().min(b.len()),
            needed: MIN_RUNS_FOR_INTERVAL,
        }
    } else {
        let mut reps = replicates(&[a, b], BOOTSTRAP_RESAMPLES, |m| m[0] / m[1]);
        if reps.iter().any(|r| !r.is_finite()) {
            RatioInterval::Unbounded
        } else {
            let (low, high) = percentile_bounds(&mut reps, expanded_alpha(a.len().min(b.len())));
            RatioInterval::Estimated {
                interval: Interval {
                    low: low.min(ratio),
                    high: high.max(ratio),
                },
                method: Method::BootstrapPercentile {
                    resamples: BOOTSTRAP_RESAMPLES,
                },
            }
        }
    };
    Ok(Ratio::Defined { ratio, interval })
}
