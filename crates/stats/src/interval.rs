//! The 95% confidence interval of a mean, chosen by the kind of quantity, with the
//! method named, or the reason there is none.
//!
//! Rules (invariants of [`mean_interval`]):
//! - Two runs or more, all equal: [`MeanInterval::NoSpread`] (exact counters of the model;
//!   a zero-width interval is the honest answer and is given as such).
//! - Fewer than [`MIN_RUNS_FOR_INTERVAL`] runs that differ: [`MeanInterval::TooFewRuns`],
//!   because a t-interval from 3 runs is not a finding (its t factor is 4.3).
//! - [`Quantity::Signed`]: Student's t, `mean ± t(0.975, n-1)·s/√n`.
//! - Non-negative kinds ([`Quantity::Count`], [`Quantity::Time`],
//!   [`Quantity::NonNegative`]): the expanded bootstrap percentile interval
//!   (see the `bootstrap` module), which stays within the sample's range, so its
//!   bounds are never negative; for counts the bounds are rounded outward to whole
//!   numbers.
//! - An estimated interval always contains the mean.

use crate::bootstrap::{expanded_alpha, percentile_bounds, replicates, BOOTSTRAP_RESAMPLES};
use crate::error::{check_finite, StatsError};
use crate::quantity::Quantity;
use crate::summary::{mean, sample_variance, t_quantile, Interval, CONFIDENCE};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Fewer runs than this get no interval (unless they are all equal).
pub const MIN_RUNS_FOR_INTERVAL: usize = 5;

/// How an interval was computed; `Display` gives the name printed beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Method {
    /// Student's t interval of the mean.
    StudentT,
    /// The expanded bootstrap percentile interval from `resamples` resamples.
    BootstrapPercentile { resamples: usize },
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Method::StudentT => f.write_str("Student's t"),
            Method::BootstrapPercentile { resamples } => {
                write!(f, "bootstrap percentile, {} resamples", grouped(resamples))
            }
        }
    }
}

/// The interval of a mean, or why there is none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MeanInterval {
    /// A 95% confidence interval computed by `method`.
    Estimated { interval: Interval, method: Method },
    /// Every one of the `n` runs gave `value`: the mean is exact.
    NoSpread { value: f64, n: usize },
    /// The `n` runs differ but are fewer than `needed`: no interval is given.
    TooFewRuns { n: usize, needed: usize },
}

impl Default for MeanInterval {
    /// No runs at all: the value a summary deserialized from older JSON carries.
    fn default() -> Self {
        MeanInterval::TooFewRuns {
            n: 0,
            needed: MIN_RUNS_FOR_INTERVAL,
        }
    }
}

impl MeanInterval {
    /// The bounds: the estimated interval, or the zero-width one of exact runs;
    /// `None` when there are too few runs.
    pub fn interval(&self) -> Option<Interval> {
        match *self {
            MeanInterval::Estimated { interval, .. } => Some(interval),
            MeanInterval::NoSpread { value, .. } => Some(Interval {
                low: value,
                high: value,
            }),
            MeanInterval::TooFewRuns { .. } => None,
        }
    }

    /// The method, when an interval was estimated.
    pub fn method(&self) -> Option<Method> {
        match *self {
            MeanInterval::Estimated { method, .. } => Some(method),
            _ => None,
        }
    }
}

impl fmt::Display for MeanInterval {
    /// Without units (the report layer scales numbers): "95% CI 300 to 340
    /// (bootstrap percentile, 10,000 resamples)", "exact: all 10 runs equal",
    /// "no interval: 3 runs, at least 5 needed".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MeanInterval::Estimated { interval, method } => write!(
                f,
                "{:.0}% CI {} to {} ({method})",
                CONFIDENCE * 100.0,
                interval.low,
                interval.high
            ),
            MeanInterval::NoSpread { n, .. } => write!(f, "exact: all {n} runs equal"),
            MeanInterval::TooFewRuns { n, needed } => {
                write!(
                    f,
                    "no interval: {n} run{}, at least {needed} needed",
                    plural(n)
                )
            }
        }
    }
}

/// The interval of the mean of `samples`, a quantity of kind `quantity`, by the
/// rules of the module documentation. Deterministic: the bootstrap is seeded.
///
/// Adopt it where a mean is shown with its spread: `mean_interval(&samples,
/// Quantity::Count)?.interval()` in place of `Summary::of(..).ci95`, and print
/// the method (`Display` of [`MeanInterval`] or [`Method`]) beside it.
///
/// # Errors
/// [`StatsError::Empty`], [`StatsError::NonFinite`], and [`StatsError::OutOfRange`]
/// for a negative value of a non-negative kind.
pub fn mean_interval(samples: &[f64], quantity: Quantity) -> Result<MeanInterval, StatsError> {
    check_quantity(samples, quantity)?;
    let n = samples.len();
    if n >= 2 && samples.iter().all(|&v| v == samples[0]) {
        return Ok(MeanInterval::NoSpread {
            value: samples[0],
            n,
        });
    }
    if n < MIN_RUNS_FOR_INTERVAL {
        return Ok(MeanInterval::TooFewRuns {
            n,
            needed: MIN_RUNS_FOR_INTERVAL,
        });
    }
    let m = mean(samples);
    let (interval, method) = match quantity {
        Quantity::Signed => (student_t(samples, m), Method::StudentT),
        _ => {
            let mut reps = replicates(&[samples], BOOTSTRAP_RESAMPLES, |means| means[0]);
            let (low, high) = percentile_bounds(&mut reps, expanded_alpha(n));
            let (mut low, mut high) = (low.min(m), high.max(m));
            if quantity.is_integer() {
                (low, high) = (low.floor(), high.ceil());
            }
            (
                Interval {
                    low: low.max(0.0),
                    high,
                },
                Method::BootstrapPercentile {
                    resamples: BOOTSTRAP_RESAMPLES,
                },
            )
        }
    };
    Ok(MeanInterval::Estimated { interval, method })
}

/// Student's t interval of the mean (n >= 2).
pub(crate) fn student_t(samples: &[f64], m: f64) -> Interval {
    let n = samples.len() as f64;
    let sd = sample_variance(samples, m).sqrt();
    let half = t_quantile(0.5 + CONFIDENCE / 2.0, n - 1.0) * sd / n.sqrt();
    Interval {
        low: m - half,
        high: m + half,
    }
}

/// Checks that `samples` is non-empty, finite and within the domain of `quantity`.
pub(crate) fn check_quantity(samples: &[f64], quantity: Quantity) -> Result<(), StatsError> {
    if samples.is_empty() {
        return Err(StatsError::Empty);
    }
    check_finite(samples)?;
    if quantity.is_non_negative() {
        if let Some(index) = samples.iter().position(|&v| v < 0.0) {
            return Err(StatsError::OutOfRange {
                index,
                value: samples[index],
                why: "this kind of quantity cannot be negative",
            });
        }
    }
    Ok(())
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `10000` → `"10,000"`.
pub(crate) fn grouped(v: usize) -> String {
    let digits = v.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
