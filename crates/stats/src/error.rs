//! The errors of the statistics layer: input a computation cannot be done on.

use thiserror::Error;

/// Why a statistic could not be computed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// The sample holds no value at all.
    #[error("no samples: at least one value is needed")]
    Empty,
    /// The computation needs more values than the sample has.
    #[error("too few samples: {needed} needed, {got} given")]
    TooFew { needed: usize, got: usize },
    /// A value is NaN or infinite.
    #[error("sample {index} is not a finite number ({value})")]
    NonFinite { index: usize, value: f64 },
    /// A value is out of the domain of the statistic (e.g. a harmonic mean of a
    /// non-positive throughput).
    #[error("sample {index} = {value} is out of range: {why}")]
    OutOfRange {
        index: usize,
        value: f64,
        why: &'static str,
    },
}

/// Checks that every value is finite.
pub(crate) fn check_finite(samples: &[f64]) -> Result<(), StatsError> {
    match samples.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(StatsError::NonFinite {
            index,
            value: samples[index],
        }),
        None => Ok(()),
    }
}
