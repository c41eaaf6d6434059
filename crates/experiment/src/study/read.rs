//! Reading a question's results: a counter's mean or summary at a mark of
//! one configuration's repeats.

use crate::aggregate::MarkStats;
use crate::exec::ConfigResult;
use stats::Summary;

/// The first mark called `mark` of a result's runs.
fn mark_of<'a>(r: &'a ConfigResult, mark: &str) -> Option<&'a MarkStats> {
    r.aggregate.marks.iter().find(|m| m.name == mark)
}

/// Mean of `counter` at `mark` (NaN if absent).
pub(crate) fn mean(r: &ConfigResult, mark: &str, counter: &str) -> f64 {
    mark_of(r, mark)
        .and_then(|m| m.counters.get(counter))
        .map_or(f64::NAN, |c| c.mean())
}

/// Summary of `counter` at `mark` over the repeats.
pub(crate) fn summary(r: &ConfigResult, mark: &str, counter: &str) -> Option<Summary> {
    mark_of(r, mark)?.counters.get(counter)?.stats.clone()
}

/// `a / b`, NaN when `b` is 0.
pub(crate) fn per(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        f64::NAN
    } else {
        a / b
    }
}
