//! Reading a question's results: a counter's per-run values, mean or
//! summary at a mark of one configuration's repeats.
//!
//! Values are read from the runs themselves (not from the aggregate), so
//! that every summary the study prints is made here with the kind of
//! quantity it measures ([`stats::Summary::of_quantity`]): a count's or a
//! time's interval never reaches below zero, and fewer than five runs that
//! differ get no interval at all. A counter a run lacks (the model has no
//! machine time: its wall-clock counter is ptlab's own speed) is skipped,
//! never read as zero.

use crate::exec::ConfigResult;
use stats::{Quantity, Summary};

/// `counter` at the first mark called `mark` of every run that has it.
pub(crate) fn samples(r: &ConfigResult, mark: &str, counter: &str) -> Vec<f64> {
    r.runs
        .iter()
        .filter_map(|run| run.marks.iter().find(|m| m.name == mark))
        .filter_map(|m| m.counters.get(counter))
        .map(|v| v as f64)
        .collect()
}

/// Mean of `counter` at `mark` over the runs (NaN if no run has it).
pub(crate) fn mean(r: &ConfigResult, mark: &str, counter: &str) -> f64 {
    let v = samples(r, mark, counter);
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Summary of `counter` at `mark` over the repeats, its interval chosen for
/// the kind of quantity (`None` if no run has the counter).
pub(crate) fn summary(
    r: &ConfigResult,
    mark: &str,
    counter: &str,
    quantity: Quantity,
) -> Option<Summary> {
    Summary::of_quantity(&samples(r, mark, counter), quantity).ok()
}

/// Summary of a figure derived per run (`f` of each run's counters at
/// `mark`, e.g. a rate), runs where `f` is undefined left out.
pub(crate) fn derived(
    r: &ConfigResult,
    quantity: Quantity,
    f: impl Fn(&dyn Fn(&str, &str) -> f64) -> f64,
) -> Option<Summary> {
    let v: Vec<f64> = r
        .runs
        .iter()
        .map(|run| {
            let at = |mark: &str, counter: &str| {
                run.marks
                    .iter()
                    .find(|m| m.name == mark)
                    .and_then(|m| m.counters.get(counter))
                    .map_or(f64::NAN, |v| v as f64)
            };
            f(&at)
        })
        .filter(|v| v.is_finite())
        .collect();
    Summary::of_quantity(&v, quantity).ok()
}

/// `a / b`, NaN when `b` is 0.
pub(crate) fn per(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        f64::NAN
    } else {
        a / b
    }
}
