//! Outliers by the modified Z-score of Iglewicz and Hoaglin (1993):
//! `Mᵢ = 0.6745 · (xᵢ - median) / MAD`, with MAD the median of `|xᵢ - median|`.
//! A run with `|Mᵢ| > 3.5` is an outlier. Median and MAD are used instead of mean and
//! standard deviation because the outliers themselves would inflate those.
//!
//! When more than half of the values are equal the MAD is 0 and the score is
//! undefined. Then the mean absolute deviation stands in, scaled so that it estimates
//! the same spread for normal data: `Mᵢ = (xᵢ - median) / (1.253314 · MeanAD)`.
//! When every value is equal all scores are 0: nothing stands out.

use crate::error::{check_finite, StatsError};
use crate::summary::median_of_sorted;
use serde::{Deserialize, Serialize};

/// `|M| > OUTLIER_THRESHOLD` marks an outlier (Iglewicz and Hoaglin's recommendation).
pub const OUTLIER_THRESHOLD: f64 = 3.5;

/// 0.6745 is the 0.75 quantile of the standard normal: MAD / 0.6745 estimates σ.
const MAD_SCALE: f64 = 0.6745;
/// √(π/2): MeanAD · √(π/2) estimates σ for normal data.
const MEAN_AD_SCALE: f64 = 1.253314;

/// The modified Z-score of every value, in input order.
///
/// # Errors
/// [`StatsError::Empty`] for an empty slice, [`StatsError::NonFinite`] for NaN or
/// infinite values.
pub fn modified_z_scores(samples: &[f64]) -> Result<Vec<f64>, StatsError> {
    if samples.is_empty() {
        return Err(StatsError::Empty);
    }
    check_finite(samples)?;
    let center = median(samples.to_vec());
    let deviations: Vec<f64> = samples.iter().map(|x| (x - center).abs()).collect();
    let mad = median(deviations.clone());
    if mad > 0.0 {
        return Ok(samples
            .iter()
            .map(|x| MAD_SCALE * (x - center) / mad)
            .collect());
    }
    let mean_ad = deviations.iter().sum::<f64>() / deviations.len() as f64;
    if mean_ad == 0.0 {
        return Ok(vec![0.0; samples.len()]);
    }
    Ok(samples
        .iter()
        .map(|x| (x - center) / (MEAN_AD_SCALE * mean_ad))
        .collect())
}

/// The indices (ascending) of the values whose modified Z-score exceeds
/// [`OUTLIER_THRESHOLD`] in absolute value.
///
/// # Errors
/// As [`modified_z_scores`].
pub fn outlier_indices(samples: &[f64]) -> Result<Vec<usize>, StatsError> {
    Ok(modified_z_scores(samples)?
        .iter()
        .enumerate()
        .filter(|(_, z)| z.abs() > OUTLIER_THRESHOLD)
        .map(|(i, _)| i)
        .collect())
}

/// One outlying value: where it is, what it is and how far out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Its index in the sample (run `index + 1` for people).
    pub index: usize,
    pub value: f64,
    /// Its modified Z-score (signed: negative for a value below the median).
    pub z: f64,
}

/// The outliers of `samples` (as [`outlier_indices`]) with their values and
/// scores, so that a caller can name the run and the counter
/// ([`crate::Warning::OutlierRuns`]).
///
/// # Errors
/// As [`modified_z_scores`].
pub fn find_outliers(samples: &[f64]) -> Result<Vec<Outlier>, StatsError> {
    Ok(modified_z_scores(samples)?
        .into_iter()
        .enumerate()
        .filter(|(_, z)| z.abs() > OUTLIER_THRESHOLD)
        .map(|(index, z)| Outlier {
            index,
            value: samples[index],
            z,
        })
        .collect())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    median_of_sorted(&v)
}
