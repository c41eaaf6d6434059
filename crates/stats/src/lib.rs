//! Statistics over repeated runs, knowing nothing of where the numbers came from.
//!
//! - [`Summary`]: n, mean, median, min, max, sample standard deviation and the 95%
//!   confidence interval of the mean (Student's t), as the seeds report them;
//!   [`Summary::of_quantity`] and [`mean_interval`]: an interval that respects the
//!   [`Quantity`] (never below 0 for counts and times, whole numbers for counts,
//!   none from fewer than [`MIN_RUNS_FOR_INTERVAL`] runs), its [`Method`] named.
//! - [`compare_means`]: Welch's test where it means something, [`NotApplicable`]
//!   (with the reason) where it does not.
//! - [`ratio_of_means`]: a ratio with its own interval; 0 / 0 is undefined.
//! - [`harmonic_mean`], [`harmonic_mean_ci95`]: the mean to use for throughputs
//!   (records per second), as the 5-level seed does for ebizzy.
//! - [`welch`] and [`student`]: two-sample t-tests (Welch's by default; Student's
//!   equal-variance test because the seed used R's `var.equal = TRUE`).
//! - [`outlier_indices`] and [`find_outliers`] (modified Z-score) and [`Warning`]:
//!   messages that say why a figure should not be trusted and what to do about it;
//!   [`diagnose_counter`] names the counter and the runs.
//! - [`median_interval`]: the median with a distribution-free (order-statistic)
//!   interval, its coverage named.
//! - [`Log2Hist`] and [`percentiles_from_log2`]: funclatency-style latency histograms.
//!
//! Invariants kept by every function here:
//! - Non-finite input (NaN, ±inf) is rejected with [`StatsError::NonFinite`], never
//!   propagated silently into a result.
//! - A quantity that is undefined for the input (a spread from one sample) is `None`,
//!   not NaN, so that JSON output never carries a null the reader did not expect.

mod bootstrap;
mod error;
mod hist;
mod interval;
mod median;
mod outliers;
mod quantity;
mod ratio;
mod significance;
mod summary;
mod ttest;
mod warning;

pub use bootstrap::BOOTSTRAP_RESAMPLES;

pub use error::StatsError;
pub use hist::{
    log2_bucket, log2_bucket_bounds, percentiles_from_log2, quantile_from_log2, Log2Hist,
    LOG2_BUCKETS,
};
pub use interval::{mean_interval, MeanInterval, Method, MIN_RUNS_FOR_INTERVAL};
pub use median::{median_interval, MedianInterval};
pub use outliers::{find_outliers, modified_z_scores, outlier_indices, Outlier, OUTLIER_THRESHOLD};
pub use quantity::Quantity;
pub use ratio::{ratio_of_means, Ratio, RatioInterval};
pub use significance::{compare_means, NotApplicable, Significance};
pub use summary::{harmonic_mean, harmonic_mean_ci95, t_quantile, Interval, Summary, CONFIDENCE};
pub use ttest::{student, student_from_moments, welch, welch_from_moments, Moments, TTest};
pub use warning::{diagnose, diagnose_counter, Warning, MAX_REL_CI_HALF_WIDTH, MIN_RUN_NS};
