//! Reading the modeled system's predicted time from a question's model
//! runs: `predicted_ns` and the interval the cost file's own intervals give
//! (`predicted_lo_ns`, `predicted_hi_ns`), at a mark or between two.
//!
//! Predicted time is virtual time: the same run gives the same figure on
//! any host, so one run is enough and its interval is the cost file's (every
//! figure at the low, then the high end of its interval, on the same
//! schedule), not a spread of runs. It is never ptlab's own speed
//! (`model_wall_ns`), which appears nowhere in the study.

use super::read::mean;
use crate::exec::ConfigResult;
use report::Unit;

/// A predicted duration: the point figure and the cost file's interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub(crate) struct Predicted {
    pub ns: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Predicted {
    /// Undefined (the run has no prediction).
    pub(crate) const NONE: Predicted = Predicted {
        ns: f64::NAN,
        lo: f64::NAN,
        hi: f64::NAN,
    };

    /// Whether the run predicted anything.
    pub(crate) fn is_some(&self) -> bool {
        self.ns.is_finite()
    }

    /// `self / per` for a figure per event (`per` > 0).
    pub(crate) fn per(&self, per: f64) -> Predicted {
        if per > 0.0 {
            Predicted {
                ns: self.ns / per,
                lo: self.lo / per,
                hi: self.hi / per,
            }
        } else {
            Predicted::NONE
        }
    }

    /// For a sentence or a table: "36.5 ms (cost-file interval 30.1 ms to
    /// 44.0 ms)".
    pub(crate) fn text(&self) -> String {
        if !self.is_some() {
            return "n/a".into();
        }
        format!(
            "{} (cost-file interval {} to {})",
            report::human(self.ns, Unit::Nanoseconds),
            report::human(self.lo, Unit::Nanoseconds),
            report::human(self.hi, Unit::Nanoseconds)
        )
    }

    /// Just the point figure, in human units.
    pub(crate) fn short(&self) -> String {
        if self.is_some() {
            report::human(self.ns, Unit::Nanoseconds)
        } else {
            "n/a".into()
        }
    }
}

/// The predicted time at `mark` (mean over the runs: they are equal).
pub(crate) fn at(r: &ConfigResult, mark: &str) -> Predicted {
    Predicted {
        ns: mean(r, mark, counters::PREDICTED_NS.name),
        lo: mean(r, mark, counters::PREDICTED_LO_NS.name),
        hi: mean(r, mark, counters::PREDICTED_HI_NS.name),
    }
}

/// The predicted time from mark `from` to mark `to`.
pub(crate) fn between(r: &ConfigResult, from: &str, to: &str) -> Predicted {
    let (a, b) = (at(r, from), at(r, to));
    Predicted {
        ns: b.ns - a.ns,
        lo: b.lo - a.lo,
        hi: b.hi - a.hi,
    }
}

/// The relative difference `b / a - 1` of two point figures, in percent.
pub(crate) fn percent(a: &Predicted, b: &Predicted) -> f64 {
    100.0 * (b.ns / a.ns - 1.0)
}

/// The sentence every time section's method ends with.
pub(crate) const TIME_METHOD: &str =
    "Times are the model's predictions in virtual time (each modeled CPU has a clock advanced \
     by the cost file's figures; locks are held and waited for, and the memory bandwidth the \
     CPUs share is queued for, in virtual time): deterministic, one run each, with the interval \
     the cost file's own intervals give (every figure at its low, then its high end, on the \
     same schedule). Measured times, where this host could run the workload, are the kernel \
     backend's wall-clock times on this 2-vCPU guest, shared with other work: noisy.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prediction_per_event_and_its_text() {
        let p = Predicted {
            ns: 2000.0,
            lo: 1000.0,
            hi: 4000.0,
        };
        assert_eq!(p.per(2.0).ns, 1000.0);
        assert!(!p.per(0.0).is_some());
        assert_eq!(p.text(), "2.00 us (cost-file interval 1.00 us to 4.00 us)");
        assert_eq!(Predicted::NONE.text(), "n/a");
    }
}
