//! What kind of quantity a sample measures, so that its interval can respect it.
//!
//! A confidence interval is a statement about a quantity; a count of faults cannot
//! be negative and cannot be 4.33, a duration cannot be negative either and is
//! usually skewed to the right. Student's t interval knows none of this, which is
//! how "322 (95% CI -219.8 to 863.8)" came about. [`Quantity`] lets
//! [`crate::Summary::of_quantity`] and [`crate::mean_interval`] pick a method that
//! fits (see [`crate::Method`]).

use serde::{Deserialize, Serialize};

/// The kind of a measured quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// Integer-valued and never negative: events (faults, IPIs, contended locks),
    /// pages, kilobytes. Interval bounds are whole numbers, never below 0.
    Count,
    /// A duration in nanoseconds (every time in ptlab is in ns: `*_ns` counters,
    /// `predicted_ns`): never negative, often skewed to the right.
    Time,
    /// Any other quantity that cannot be negative (a rate, a share, a ratio).
    NonNegative,
    /// A quantity that may take either sign (a difference): Student's t interval.
    #[default]
    Signed,
}

impl Quantity {
    /// Whether values of this kind are never negative.
    pub fn is_non_negative(self) -> bool {
        !matches!(self, Quantity::Signed)
    }

    /// Whether values of this kind are whole numbers.
    pub fn is_integer(self) -> bool {
        matches!(self, Quantity::Count)
    }
}
