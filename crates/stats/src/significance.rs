//! Whether two configurations differ, or why a test would mean nothing.
//!
//! [`crate::welch`] always returns numbers: for two exact counters (524,802 against
//! 524,803 in every run) its standard error is 0 and it reports `p = 0`, a p-value
//! that no test computed. [`compare_means`] returns a p-value only where Welch's test
//! means something, and otherwise a typed [`NotApplicable`] that says why:
//! - fewer than 2 runs on a side (no variance to test with);
//! - no spread on either side (the difference is exact, so there is nothing to infer);
//! - the same values on both sides (the samples are identical: no evidence either way
//!   is needed or possible).

use crate::error::StatsError;
use crate::summary::mean;
use crate::ttest::{welch, TTest};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why no significance test is given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum NotApplicable {
    /// A side has fewer than 2 runs.
    TooFewRuns { a: usize, b: usize },
    /// Every run of `a` gave `a_value` and every run of `b` gave `b_value`.
    NoSpread { a_value: f64, b_value: f64 },
    /// Both samples hold the same values.
    IdenticalSamples,
}

impl fmt::Display for NotApplicable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NotApplicable::TooFewRuns { a, b } => write!(
                f,
                "not applicable: {a} and {b} runs, a test needs at least 2 on each side"
            ),
            NotApplicable::NoSpread { a_value, b_value } if a_value == b_value => write!(
                f,
                "not applicable: every run of both gave {a_value}, the values are equal"
            ),
            NotApplicable::NoSpread { a_value, b_value } => write!(
                f,
                "not applicable: every run gave {a_value} against {b_value}, \
                 so the difference of {} is exact",
                b_value - a_value
            ),
            NotApplicable::IdenticalSamples => {
                f.write_str("not applicable: both samples hold the same values")
            }
        }
    }
}

/// The outcome of [`compare_means`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Significance {
    /// Welch's test was meaningful and this is its result.
    Tested { test: TTest },
    /// No test: the reason.
    NotApplicable { why: NotApplicable },
}

impl Significance {
    /// The p-value, only where a test was meaningful.
    pub fn p(&self) -> Option<f64> {
        match self {
            Significance::Tested { test } => Some(test.p),
            Significance::NotApplicable { .. } => None,
        }
    }
}

/// Welch's test of `a` against `b` where it means something, else the reason it
/// does not (see the module documentation). Use it instead of [`crate::welch`]
/// wherever a p-value is shown: print [`Significance::p`], or the `Display` of
/// [`NotApplicable`] in its place.
///
/// # Errors
/// [`StatsError::NonFinite`] for a NaN or infinite value.
pub fn compare_means(a: &[f64], b: &[f64]) -> Result<Significance, StatsError> {
    if a.len() < 2 || b.len() < 2 {
        crate::error::check_finite(a)?;
        crate::error::check_finite(b)?;
        let why = NotApplicable::TooFewRuns {
            a: a.len(),
            b: b.len(),
        };
        return Ok(Significance::NotApplicable { why });
    }
    let test = welch(a, b)?;
    let constant = |s: &[f64]| s.iter().all(|&v| v == s[0]);
    if constant(a) && constant(b) {
        let why = NotApplicable::NoSpread {
            a_value: mean(a),
            b_value: mean(b),
        };
        return Ok(Significance::NotApplicable { why });
    }
    let sorted = |s: &[f64]| {
        let mut v = s.to_vec();
        v.sort_by(f64::total_cmp);
        v
    };
    if sorted(a) == sorted(b) {
        let why = NotApplicable::IdenticalSamples;
        return Ok(Significance::NotApplicable { why });
    }
    Ok(Significance::Tested { test })
}
