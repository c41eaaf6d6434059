//! One sample described: location, spread and the confidence interval of the mean.
//!
//! [`Summary::of`] gives Student's t interval, `mean ± t(0.975, n-1) · s / √n`, the
//! one R's `lsr::ciMean` gives and the 5-level seed reports. It assumes independent
//! runs whose mean is close to normally distributed and a quantity that may take
//! either sign; for a count or a time it can reach below zero.
//! [`Summary::of_quantity`] knows the kind of quantity and picks an interval that
//! respects it (see [`crate::mean_interval`]); prefer it for every measured counter.

use crate::error::{check_finite, StatsError};
use crate::interval::{check_quantity, mean_interval, MeanInterval, Method};
use crate::quantity::Quantity;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The confidence level of every interval this crate reports.
pub const CONFIDENCE: f64 = 0.95;

/// A closed interval `[low, high]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

impl Interval {
    /// Half of the interval's width.
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }

    /// Whether `x` lies in the interval (bounds included).
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// The description of one sample (the values of one counter over repeated runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (divisor n-1); `None` when n < 2.
    pub stddev: Option<f64>,
    /// 95% confidence interval of the mean: Student's t from [`Summary::of`] (`None`
    /// when n < 2), the interval of [`Summary::interval`] from
    /// [`Summary::of_quantity`] (`None` with too few runs).
    pub ci95: Option<Interval>,
    /// CI half-width divided by |mean|; `None` when there is no CI, or when the mean
    /// is 0 and the half-width is not (the ratio is then unbounded). 0 when the
    /// half-width is 0.
    pub rel_ci_half_width: Option<f64>,
    /// The kind of quantity summarised ([`Quantity::Signed`] from [`Summary::of`]).
    #[serde(default)]
    pub quantity: Quantity,
    /// The interval with its method, or why there is none; `ci95` holds its bounds.
    #[serde(default)]
    pub interval: MeanInterval,
}

impl Summary {
    /// Describes `samples`.
    ///
    /// # Errors
    /// [`StatsError::Empty`] for an empty slice, [`StatsError::NonFinite`] when a value
    /// is NaN or infinite.
    pub fn of(samples: &[f64]) -> Result<Summary, StatsError> {
        if samples.is_empty() {
            return Err(StatsError::Empty);
        }
        check_finite(samples)?;
        let n = samples.len();
        let mean = mean(samples);
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = median_of_sorted(&sorted);
        let (stddev, ci95) = if n >= 2 {
            let sd = sample_variance(samples, mean).sqrt();
            let half = t_quantile(0.5 + CONFIDENCE / 2.0, (n - 1) as f64) * sd / (n as f64).sqrt();
            (
                Some(sd),
                Some(Interval {
                    low: mean - half,
                    high: mean + half,
                }),
            )
        } else {
            (None, None)
        };
        let interval = match ci95 {
            None => MeanInterval::TooFewRuns { n, needed: 2 },
            _ if sorted[0] == sorted[n - 1] => MeanInterval::NoSpread {
                value: sorted[0],
                n,
            },
            Some(interval) => MeanInterval::Estimated {
                interval,
                method: Method::StudentT,
            },
        };
        Ok(Summary {
            n,
            mean,
            median,
            min: sorted[0],
            max: sorted[n - 1],
            stddev,
            ci95,
            rel_ci_half_width: relative_half_width(ci95, mean),
            quantity: Quantity::Signed,
            interval,
        })
    }

    /// Describes `samples`, values of a quantity of kind `quantity`: as
    /// [`Summary::of`], but the interval is the one [`crate::mean_interval`]
    /// chooses (never below 0 for counts and times, whole numbers for counts, none
    /// for fewer than [`crate::MIN_RUNS_FOR_INTERVAL`] differing runs), and `ci95`
    /// holds its bounds. The drop-in replacement for [`Summary::of`] wherever the
    /// kind is known (for a counter, from its name's unit).
    ///
    /// # Errors
    /// As [`Summary::of`], and [`StatsError::OutOfRange`] for a negative value of a
    /// non-negative kind.
    pub fn of_quantity(samples: &[f64], quantity: Quantity) -> Result<Summary, StatsError> {
        check_quantity(samples, quantity)?;
        let mut s = Summary::of(samples)?;
        s.quantity = quantity;
        s.interval = mean_interval(samples, quantity)?;
        s.ci95 = s.interval.interval();
        s.rel_ci_half_width = relative_half_width(s.ci95, s.mean);
        Ok(s)
    }

    /// Summarises integer counters (the form a `Run` holds them in).
    ///
    /// # Errors
    /// [`StatsError::Empty`] for an empty slice.
    pub fn of_counts(samples: &[i64]) -> Result<Summary, StatsError> {
        let v: Vec<f64> = samples.iter().map(|&x| x as f64).collect();
        Summary::of(&v)
    }
}

/// CI half-width over |mean| (see [`Summary::rel_ci_half_width`]).
fn relative_half_width(ci95: Option<Interval>, mean: f64) -> Option<f64> {
    ci95.and_then(|ci| {
        let hw = ci.half_width();
        if hw == 0.0 {
            Some(0.0)
        } else if mean == 0.0 {
            None
        } else {
            Some(hw / mean.abs())
        }
    })
}

/// The `p`-quantile of Student's t distribution with `df` degrees of freedom
/// (`t_quantile(0.975, 29)` ≈ 2.045). `df` may be fractional (Welch); an infinite
/// `df` gives the normal quantile.
///
/// # Panics
/// If `p` is outside (0, 1) or `df` is not positive.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "quantile level {p} outside (0, 1)");
    if df.is_infinite() {
        // statrs's Student's t inverse does not terminate for infinite freedom.
        return Normal::standard().inverse_cdf(p);
    }
    let t = StudentsT::new(0.0, 1.0, df).expect("degrees of freedom must be positive");
    t.inverse_cdf(p)
}

/// The harmonic mean `n / Σ(1/xᵢ)`: the right mean of rates such as throughputs,
/// because it is the rate of the total work over the total time when each run does
/// the same work.
///
/// # Errors
/// [`StatsError::Empty`], [`StatsError::NonFinite`], and [`StatsError::OutOfRange`]
/// for a value that is not strictly positive.
pub fn harmonic_mean(samples: &[f64]) -> Result<f64, StatsError> {
    let reciprocals = reciprocals(samples)?;
    Ok(1.0 / mean(&reciprocals))
}

/// The 95% confidence interval of the harmonic mean, obtained by inverting the
/// Student's t interval of the mean of the reciprocals (the harmonic mean is the
/// reciprocal of that mean). `None` when n < 2, or when the reciprocals' interval
/// reaches down to zero or below, where no finite upper bound exists.
///
/// # Errors
/// As [`harmonic_mean`].
pub fn harmonic_mean_ci95(samples: &[f64]) -> Result<Option<Interval>, StatsError> {
    let reciprocals = reciprocals(samples)?;
    let s = Summary::of(&reciprocals)?;
    Ok(s.ci95.and_then(|ci| {
        (ci.low > 0.0).then(|| Interval {
            low: 1.0 / ci.high,
            high: 1.0 / ci.low,
        })
    }))
}

fn reciprocals(samples: &[f64]) -> Result<Vec<f64>, StatsError> {
    if samples.is_empty() {
        return Err(StatsError::Empty);
    }
    check_finite(samples)?;
    if let Some(index) = samples.iter().position(|&v| v <= 0.0) {
        return Err(StatsError::OutOfRange {
            index,
            value: samples[index],
            why: "a harmonic mean needs strictly positive values",
        });
    }
    Ok(samples.iter().map(|v| 1.0 / v).collect())
}

pub(crate) fn mean(samples: &[f64]) -> f64 {
    samples.iter().sum::<f64>() / samples.len() as f64
}

/// Two-pass variance (divisor n-1): subtracting the mean first keeps the precision
/// for values with a large common offset (timestamps, nanoseconds since boot).
pub(crate) fn sample_variance(samples: &[f64], mean: f64) -> f64 {
    let ss: f64 = samples.iter().map(|x| (x - mean) * (x - mean)).sum();
    ss / (samples.len() - 1) as f64
}

pub(crate) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}
