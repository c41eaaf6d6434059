//! The bootstrap, deterministic: resampling with replacement from a seeded
//! generator, so that the same sample always gives the same interval (reports are
//! byte-for-byte reproducible).
//!
//! The interval is the *expanded* bootstrap percentile interval (Hesterberg, "What
//! teachers should know about the bootstrap", 2015): the plain percentile interval
//! is too narrow for small samples (it behaves like `z·s/√n` with the biased `s`),
//! so the tail probability is shrunk until the percentile interval is as wide, for
//! normal data, as Student's t interval: `α' = 2·Φ(-√(n/(n-1)) · t(1-α/2, n-1))`.
//! Bootstrap means lie between the sample's min and max, so a quantity that cannot
//! be negative never gets a negative bound.

use crate::summary::{t_quantile, CONFIDENCE};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use statrs::distribution::{ContinuousCDF, Normal};

/// Resamples drawn for every bootstrap interval of this crate.
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// The generator's seed: fixed, so that intervals are reproducible.
const SEED: u64 = 0x7074_6c61_625f_6369; // "ptlab_ci"

/// The two-sided tail probability whose percentile interval matches Student's t
/// width for normal data of `n` values (`n >= 2`).
pub(crate) fn expanded_alpha(n: usize) -> f64 {
    let n = n as f64;
    let t = t_quantile(0.5 + CONFIDENCE / 2.0, n - 1.0);
    2.0 * Normal::standard().cdf(-(n / (n - 1.0)).sqrt() * t)
}

/// `resamples` bootstrap replicates of `stat`, each computed on one resample (with
/// replacement) of every sample in `samples`, in a deterministic order.
pub(crate) fn replicates(
    samples: &[&[f64]],
    resamples: usize,
    stat: impl Fn(&[f64]) -> f64,
) -> Vec<f64> {
    let mut rng = Pcg64Mcg::seed_from_u64(SEED);
    let mut means = vec![0.0; samples.len()];
    (0..resamples)
        .map(|_| {
            for (m, s) in means.iter_mut().zip(samples) {
                let sum: f64 = (0..s.len()).map(|_| s[rng.random_range(0..s.len())]).sum();
                *m = sum / s.len() as f64;
            }
            stat(&means)
        })
        .collect()
}

/// The `(alpha/2, 1 - alpha/2)` percentiles of `values` (sorted in place), taken
/// outward (the lower index rounded down, the upper one up).
pub(crate) fn percentile_bounds(values: &mut [f64], alpha: f64) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    let last = (values.len() - 1) as f64;
    let lo = ((alpha / 2.0) * last).floor() as usize;
    let hi = ((1.0 - alpha / 2.0) * last).ceil() as usize;
    (values[lo], values[hi.min(values.len() - 1)])
}
