//! The value axis of a chart: linear, or logarithmic where values span orders of
//! magnitude (THP's 512 faults beside 0 TLB misses, a latency tail beside its median).
//!
//! plotters draws on a linear coordinate; a log axis is drawn by mapping each value
//! to `log10(value)` ([`ValueAxis::coord`]) and labelling only whole decades
//! ([`ValueAxis::tick_label`]). Zero and values below the axis' floor (the power of ten
//! strictly below the smallest positive value) are drawn at the floor, and every bar carries
//! its value written above it, so a zero stays readable.

use super::axis_value;
use crate::number::Unit;

/// How a chart's value axis is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum YScale {
    /// Logarithmic when the positive values span [`LOG_SPAN`] or more, else linear.
    #[default]
    Auto,
    Linear,
    Log,
}

/// Largest over smallest positive value from which [`YScale::Auto`] goes logarithmic
/// (three orders of magnitude).
pub const LOG_SPAN: f64 = 1e3;

/// A value axis chosen for some data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ValueAxis {
    Linear,
    /// Logarithmic, with `floor` (a power of ten) at the bottom of the axis.
    Log {
        floor: f64,
    },
}

impl ValueAxis {
    /// The axis `scale` gives for `values` (values, interval bounds). A log axis
    /// needs a positive value; without one the axis is linear.
    pub(crate) fn choose(scale: YScale, values: impl Iterator<Item = f64>) -> ValueAxis {
        let (mut lo, mut hi, mut negative) = (f64::INFINITY, 0.0f64, false);
        for v in values {
            if v > 0.0 {
                lo = lo.min(v);
                hi = hi.max(v);
            }
            negative |= v < 0.0;
        }
        let log = match scale {
            YScale::Linear => false,
            YScale::Log => hi > 0.0,
            YScale::Auto => hi > 0.0 && !negative && hi / lo >= LOG_SPAN,
        };
        if log {
            // The decade strictly below the smallest value, so that its bar shows.
            ValueAxis::Log {
                floor: 10f64.powf(lo.log10().ceil() - 1.0),
            }
        } else {
            ValueAxis::Linear
        }
    }

    /// Where `v` is drawn on plotters' linear coordinate.
    pub(crate) fn coord(&self, v: f64) -> f64 {
        match *self {
            ValueAxis::Linear => v,
            ValueAxis::Log { floor } => v.max(floor).log10(),
        }
    }

    /// The bottom of the axis, where bars start.
    pub(crate) fn base(&self) -> f64 {
        self.coord(0.0)
    }

    /// The label of the tick at coordinate `c` of an axis `span` coordinates tall:
    /// the value, or on a log axis the decade (and nothing between decades).
    /// Durations ([`Unit::Nanoseconds`]) are written in the time unit the axis
    /// needs ("25 ms", not "25M").
    pub(crate) fn tick_label(&self, c: f64, span: f64, unit: Unit) -> String {
        match self {
            ValueAxis::Linear => axis_value(c, span, unit),
            ValueAxis::Log { .. } if (c - c.round()).abs() < 1e-9 => {
                let v = 10f64.powf(c.round());
                if v < 0.01 {
                    // "1e-6" reads better than "0.000001".
                    format!("1e{}", c.round())
                } else {
                    axis_value(v, v, unit)
                }
            }
            ValueAxis::Log { .. } => String::new(),
        }
    }
}
