//! The user's own program in a question's answer (`study --trace FILE`):
//! a question that compares two machines on its own workloads also replays
//! the recorded trace on both and says what they predict for it, beside
//! the TLB misses per 1,000 accesses that decide how much a walk's cost
//! matters to it.
//!
//! A question takes part by declaring [`Pair`] through [`declare`] after its
//! own experiments and adding [`finding`]'s sentence to its findings; the
//! figures it reads are the replay's own (predicted time at the trace's end,
//! its cost-file interval, the TLB counts), so the sentence holds no figure
//! of the question's workloads.

use super::experiments::{Experiment, ModelRun, Plan, Results};
use super::model;
use super::read::{mean, per};
use super::time::{self, Predicted};
use super::StudyOptions;
use crate::exec::ConfigResult;

/// The two machines a question compares, as inline configurations, and
/// what its sentence calls them.
pub(super) struct Pair {
    pub what: &'static str,
    pub base: &'static str,
    pub other: &'static str,
    /// The change, as the sentence says it ("a fifth level").
    pub change: &'static str,
}

/// Declares the replay of the study's trace under `pair`, when there is one.
pub(super) fn declare(o: StudyOptions, p: &mut Plan, pair: &Pair) -> Option<ModelRun> {
    let path = o.trace?;
    Some(p.model(Experiment::trace(
        &format!("your program, {}", pair.what),
        path,
        &[model(pair.base), model(pair.other)],
    )))
}

/// TLB misses per 1,000 accesses of a replay at its end.
fn misses_per_1000(r: &ConfigResult) -> f64 {
    1000.0
        * per(
            mean(r, "end", counters::TLB_MISSES.name),
            mean(r, "end", counters::ACCESSES.name),
        )
}

/// The sentence for the trace's replays, or `None` without a trace.
pub(super) fn finding(
    o: StudyOptions,
    r: &Results,
    h: Option<ModelRun>,
    pair: &Pair,
) -> Option<String> {
    let (path, h) = (o.trace?, h?);
    let runs = r.model(h);
    let (a, b) = (&runs[0], &runs[1]);
    let (ta, tb): (Predicted, Predicted) = (time::at(a, "end"), time::at(b, "end"));
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let accesses = mean(a, "end", counters::ACCESSES.name);
    Some(format!(
        "Your program ({name}, {} accesses replayed, a faulting access counted again at its \
         retry): {} changes its predicted time from {} to \
         {} ({:+.2}%; the cost files' intervals {} to {} against {} to {}); it misses the TLB \
         {:.1} times per 1,000 accesses under {} and {:.1} under {}.",
        report::group_thousands(accesses as i64),
        pair.change,
        ta.short(),
        tb.short(),
        time::percent(&ta, &tb),
        report::human(ta.lo, report::Unit::Nanoseconds),
        report::human(ta.hi, report::Unit::Nanoseconds),
        report::human(tb.lo, report::Unit::Nanoseconds),
        report::human(tb.hi, report::Unit::Nanoseconds),
        misses_per_1000(a),
        pair.base,
        misses_per_1000(b),
        pair.other,
    ))
}
