//! Warnings about figures that should not be trusted, each saying why and what to do
//! (in the spirit of hyperfine's "statistical outliers were detected" warning).

use crate::interval::MeanInterval;
use crate::outliers::{find_outliers, outlier_indices, Outlier, OUTLIER_THRESHOLD};
use crate::quantity::Quantity;
use crate::summary::Summary;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Runs shorter than this (5 ms) are dominated by timer resolution, scheduling and
/// start-up noise.
pub const MIN_RUN_NS: f64 = 5_000_000.0;
/// A 95% CI half-width above this fraction of the mean (5%) is too wide to compare
/// configurations whose differences are often smaller (the seed's is 0.2%).
pub const MAX_REL_CI_HALF_WIDTH: f64 = 0.05;

/// Something that makes a measured figure doubtful. `Display` gives the message for
/// people: the finding, its reason, the remedy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// `outliers` of `runs` runs have a modified Z-score above 3.5.
    Outliers { outliers: usize, runs: usize },
    /// The mean run took `mean_run_ns`, less than [`MIN_RUN_NS`].
    TooShort { mean_run_ns: f64 },
    /// The 95% CI half-width is `rel_half_width` of the mean, above
    /// [`MAX_REL_CI_HALF_WIDTH`].
    WideCi { rel_half_width: f64 },
    /// Fewer than 2 runs: no spread can be estimated.
    FewRuns { runs: usize },
    /// The runs of `counter` listed in `outliers` (indices from 0) stand out of
    /// `runs` runs: [`diagnose_counter`]'s outlier warning, naming counter and runs.
    OutlierRuns {
        counter: String,
        runs: usize,
        outliers: Vec<Outlier>,
    },
    /// `counter` varies over `runs` runs, fewer than the `needed` an interval takes.
    TooFewForInterval {
        counter: String,
        runs: usize,
        needed: usize,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Warning::Outliers { outliers, runs } => write!(
                f,
                "{outliers} of {runs} runs {are} (modified Z-score > {OUTLIER_THRESHOLD}); \
                 the machine may be busy: rerun with more --repeat or on a quiet machine",
                are = if outliers == 1 {
                    "is a statistical outlier"
                } else {
                    "are statistical outliers"
                },
            ),
            Warning::OutlierRuns {
                ref counter,
                runs,
                ref outliers,
            } => {
                let numbers: Vec<String> =
                    outliers.iter().map(|o| (o.index + 1).to_string()).collect();
                let scores: Vec<String> = outliers.iter().map(|o| format!("{:.1}", o.z)).collect();
                let (which, is) = match numbers.as_slice() {
                    [one] => (format!("run {one}"), "is an outlier"),
                    [init @ .., last] => (
                        format!("runs {} and {last}", init.join(", ")),
                        "are outliers",
                    ),
                    [] => (String::from("no run"), "is an outlier"),
                };
                write!(
                    f,
                    "{which} of {runs} of {counter} {is} (modified z = {}): rerun with \
                     --repeat {} on a quiet machine, or look at what else ran at the time",
                    scores.join(", "),
                    (2 * runs).max(20),
                )
            }
            Warning::TooFewForInterval {
                ref counter,
                runs,
                needed,
            } => write!(
                f,
                "{counter} varies over only {runs} run{s}: no confidence interval is given \
                 ({needed} runs are needed); rerun with --repeat 10 or more",
                s = if runs == 1 { "" } else { "s" },
            ),
            Warning::TooShort { mean_run_ns } => write!(
                f,
                "runs take {} on average, less than {}: timer resolution and scheduling noise \
                 weigh too much; make each run do more work (a larger region, a repeat inside the workload)",
                human_ns(mean_run_ns),
                human_ns(MIN_RUN_NS),
            ),
            Warning::WideCi { rel_half_width } if !rel_half_width.is_finite() => write!(
                f,
                "the mean is 0 but the runs differ, so no relative precision can be given; \
                 check that the quantity is meant to vary between runs"
            ),
            Warning::WideCi { rel_half_width } => write!(
                f,
                "the 95% confidence interval is ±{:.1}% of the mean, wider than ±{:.0}%: \
                 the runs disagree too much to compare small differences; rerun with more --repeat \
                 or on a quiet machine",
                rel_half_width * 100.0,
                MAX_REL_CI_HALF_WIDTH * 100.0,
            ),
            Warning::FewRuns { runs } => write!(
                f,
                "only {runs} run{s}: no spread or confidence interval can be given; \
                 rerun with --repeat 10 or more",
                s = if runs == 1 { "" } else { "s" },
            ),
        }
    }
}

/// Everything doubtful about one repeated measurement: `samples` are the values of
/// one quantity over the runs, `mean_run_ns` the mean duration of a run when known.
/// Empty or non-finite input yields [`Warning::FewRuns`] with the number of finite
/// values, since no statistic can be trusted then.
pub fn diagnose(samples: &[f64], mean_run_ns: Option<f64>) -> Vec<Warning> {
    let mut out = Vec::new();
    if let Some(ns) = mean_run_ns {
        if ns.is_finite() && ns < MIN_RUN_NS {
            out.push(Warning::TooShort { mean_run_ns: ns });
        }
    }
    let summary = match Summary::of(samples) {
        Ok(s) if s.n >= 2 => s,
        _ => {
            let runs = samples.iter().filter(|v| v.is_finite()).count();
            out.push(Warning::FewRuns { runs });
            return out;
        }
    };
    if let Ok(idx) = outlier_indices(samples) {
        if !idx.is_empty() {
            out.push(Warning::Outliers {
                outliers: idx.len(),
                runs: samples.len(),
            });
        }
    }
    match summary.rel_ci_half_width {
        Some(r) if r > MAX_REL_CI_HALF_WIDTH => out.push(Warning::WideCi { rel_half_width: r }),
        // A mean of 0 with a non-zero spread: the relative width is unbounded.
        None => out.push(Warning::WideCi {
            rel_half_width: f64::INFINITY,
        }),
        _ => {}
    }
    out
}

/// Everything doubtful about one counter's values over the runs, each warning
/// naming the counter (and, for outliers, the runs): [`Warning::TooShort`] as in
/// [`diagnose`], [`Warning::FewRuns`] with fewer than 2 runs,
/// [`Warning::OutlierRuns`], [`Warning::TooFewForInterval`] when the runs differ
/// but are too few for an interval, and [`Warning::WideCi`] measured on the
/// interval that [`Summary::of_quantity`] gives for `quantity`. The replacement
/// for [`diagnose`] wherever the counter's name is known.
pub fn diagnose_counter(
    counter: &str,
    quantity: Quantity,
    samples: &[f64],
    mean_run_ns: Option<f64>,
) -> Vec<Warning> {
    let mut out = Vec::new();
    if let Some(ns) = mean_run_ns {
        if ns.is_finite() && ns < MIN_RUN_NS {
            out.push(Warning::TooShort { mean_run_ns: ns });
        }
    }
    let summary = match Summary::of_quantity(samples, quantity) {
        Ok(s) if s.n >= 2 => s,
        _ => {
            let runs = samples.iter().filter(|v| v.is_finite()).count();
            out.push(Warning::FewRuns { runs });
            return out;
        }
    };
    if let Ok(outliers) = find_outliers(samples) {
        if !outliers.is_empty() {
            out.push(Warning::OutlierRuns {
                counter: counter.to_string(),
                runs: samples.len(),
                outliers,
            });
        }
    }
    match summary.interval {
        MeanInterval::TooFewRuns { n, needed } => out.push(Warning::TooFewForInterval {
            counter: counter.to_string(),
            runs: n,
            needed,
        }),
        MeanInterval::Estimated { .. } => match summary.rel_ci_half_width {
            Some(r) if r > MAX_REL_CI_HALF_WIDTH => out.push(Warning::WideCi { rel_half_width: r }),
            None => out.push(Warning::WideCi {
                rel_half_width: f64::INFINITY,
            }),
            _ => {}
        },
        MeanInterval::NoSpread { .. } => {}
    }
    out
}

/// A duration for people: "830 ns", "4.20 us", "1.20 ms", "2.50 s".
fn human_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}
