//! Statistics over repeated runs, knowing nothing of where the numbers came from.
//!
//! - [`Summary`]: n, mean, median, min, max, sample standard deviation and the 95%
//!   confidence interval of the mean (Student's t), as the seeds report them.
//! - [`harmonic_mean`], [`harmonic_mean_ci95`]: the mean to use for throughputs
//!   (records per second), as the 5-level seed does for ebizzy.
//! - [`welch`] and [`student`]: two-sample t-tests (Welch's by default; Student's
//!   equal-variance test because the seed used R's `var.equal = TRUE`).
//! - [`outlier_indices`] (modified Z-score) and [`Warning`]: messages that say why a
//!   figure should not be trusted and what to do about it.
//! - [`Log2Hist`] and [`percentiles_from_log2`]: funclatency-style latency histograms.
//!
//! Invariants kept by every function here:
//! - Non-finite input (NaN, ±inf) is rejected with [`StatsError::NonFinite`], never
//!   propagated silently into a result.
//! - A quantity that is undefined for the input (a spread from one sample) is `None`,
//!   not NaN, so that JSON output never carries a null the reader did not expect.

mod error;
mod hist;
mod outliers;
mod summary;
mod ttest;
mod warning;

pub use error::StatsError;
pub use hist::{
    log2_bucket, log2_bucket_bounds, percentiles_from_log2, quantile_from_log2, Log2Hist,
    LOG2_BUCKETS,
};
pub use outliers::{modified_z_scores, outlier_indices, OUTLIER_THRESHOLD};
pub use summary::{harmonic_mean, harmonic_mean_ci95, t_quantile, Interval, Summary, CONFIDENCE};
pub use ttest::{student, student_from_moments, welch, welch_from_moments, Moments, TTest};
pub use warning::{diagnose, Warning, MAX_REL_CI_HALF_WIDTH, MIN_RUN_NS};
