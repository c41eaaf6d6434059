//! Repeated runs of one configuration, summarized mark by mark and counter
//! by counter, and the derived figures people ask for (time per fault, per
//! access).
//!
//! Invariants:
//! - Times per fault and per access derive from the kernel's `elapsed_ns`
//!   only. A model run carries `model_wall_ns` (ptlab's own speed) instead,
//!   so it gets no derived time and a comparison never sets the model's
//!   speed beside the kernel's time.
//! - Every summary respects its counter's kind of quantity
//!   ([`report::views::summary_of`]): counts are whole, no interval goes
//!   below zero.
//! - A warning names its counter, its mark and the runs concerned.

use serde::Serialize;
use stats::{Ratio, Significance, Summary, TTest, Warning};
use std::collections::BTreeMap;
use workload::result::Run;

/// Derived per-segment figures: the segment of a mark is the time since the
/// previous mark (or the start).
pub const DERIVED: &[&str] = &[
    counters::NS_PER_FAULT.name,
    counters::NS_PER_ACCESS.name,
    counters::REFS_PER_1000_WALKS.name,
];

/// One counter at one mark over the repeats.
#[derive(Debug, Clone, Serialize)]
pub struct CounterStat {
    pub samples: Vec<f64>,
    /// Absent when a summary is undefined (no samples).
    pub stats: Option<Summary>,
}

impl CounterStat {
    /// The samples of counter `name`, summarised with its kind of quantity.
    fn of(name: &str, samples: Vec<f64>) -> CounterStat {
        let stats = report::views::summary_of(name, &samples);
        CounterStat { samples, stats }
    }
    pub fn mean(&self) -> f64 {
        self.stats.as_ref().map_or(f64::NAN, |s| s.mean)
    }
}

/// One mark over the repeats.
#[derive(Debug, Clone, Serialize)]
pub struct MarkStats {
    pub name: String,
    pub counters: BTreeMap<String, CounterStat>,
    /// Table pages per level name (means).
    pub pt_pages: BTreeMap<String, f64>,
}

/// All repeats of one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Aggregate {
    pub runs: usize,
    pub marks: Vec<MarkStats>,
    /// Warnings about the spread of the runs (outliers, short runs).
    pub warnings: Vec<String>,
}

/// Adds the derived figures of every mark of `run` (in place, as counters).
/// Only a run that measured the machine's time (the kernel's `elapsed_ns`)
/// gets times per fault and per access; a model run gets none.
pub fn derive(run: &mut Run) {
    derive_refs_per_walk(run);
    let mut prev_elapsed = 0;
    let mut prev_faults = 0;
    let mut prev_accesses = 0;
    for m in &mut run.marks {
        let Some(elapsed) = m.counters.get(counters::ELAPSED_NS.name) else {
            continue;
        };
        let faults = m.counters.get(counters::MINOR_FAULTS.name).unwrap_or(0)
            + m.counters.get(counters::MAJOR_FAULTS.name).unwrap_or(0);
        let accesses = m.counters.get(counters::ACCESSES.name);
        let dt = elapsed - prev_elapsed;
        if faults > prev_faults {
            m.counters
                .set(counters::NS_PER_FAULT.name, dt / (faults - prev_faults));
        }
        if let Some(a) = accesses {
            if a > prev_accesses {
                m.counters
                    .set(counters::NS_PER_ACCESS.name, dt / (a - prev_accesses));
            }
            prev_accesses = a;
        }
        prev_elapsed = elapsed;
        prev_faults = faults;
    }
}

/// A model run's memory references per 1000 walks since the previous mark
/// (integers, like every counter: 24000 is 24 references per walk), at
/// every mark whose segment walked.
fn derive_refs_per_walk(run: &mut Run) {
    let (mut prev_walks, mut prev_refs) = (0, 0);
    for m in &mut run.marks {
        let (Some(walks), Some(refs)) = (
            m.counters.get(counters::WALKS.name),
            m.counters.get(counters::WALK_REFS.name),
        ) else {
            continue;
        };
        if walks > prev_walks {
            m.counters.set(
                counters::REFS_PER_1000_WALKS.name,
                (refs - prev_refs) * 1000 / (walks - prev_walks),
            );
        }
        (prev_walks, prev_refs) = (walks, refs);
    }
}

/// Summarizes repeats of one configuration. Runs must have the same marks
/// in the same order (a workload's marks are fixed by its plan); a run
/// with other marks is a bug and panics.
pub fn aggregate(runs: &[Run]) -> Aggregate {
    let Some(first) = runs.first() else {
        return Aggregate {
            runs: 0,
            marks: Vec::new(),
            warnings: Vec::new(),
        };
    };
    let mut marks = Vec::new();
    for (i, m0) in first.marks.iter().enumerate() {
        let mut counters = BTreeMap::new();
        for name in m0.counters.values.keys() {
            let samples: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.marks.get(i))
                .filter_map(|m| m.counters.get(name))
                .map(|v| v as f64)
                .collect();
            counters.insert(name.clone(), CounterStat::of(name, samples));
        }
        let mut pt_pages = BTreeMap::new();
        for name in m0.counters.pt_pages.keys() {
            let v: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.marks.get(i))
                .filter_map(|m| m.counters.pt_pages.get(name))
                .map(|v| *v as f64)
                .collect();
            pt_pages.insert(name.clone(), v.iter().sum::<f64>() / v.len().max(1) as f64);
        }
        marks.push(MarkStats {
            name: m0.name.clone(),
            counters,
            pt_pages,
        });
    }
    let warnings = if runs.len() >= 3 {
        warnings_of(&marks)
    } else {
        Vec::new()
    };
    Aggregate {
        runs: runs.len(),
        marks,
        warnings,
    }
}

/// The warnings about repeated runs: at the last mark, everything doubtful
/// about the kernel's time (too short, too wide, outliers); at every mark,
/// the runs that stand out in a counter the tables show, by name and number.
fn warnings_of(marks: &[MarkStats]) -> Vec<String> {
    let mut out = Vec::new();
    let last = marks.len().saturating_sub(1);
    for (i, m) in marks.iter().enumerate() {
        for (name, c) in &m.counters {
            if !counters::is_default_column(name) {
                continue;
            }
            let q = c
                .stats
                .as_ref()
                .map_or_else(|| report::quantity_of(name), |s| s.quantity);
            let elapsed = name == counters::ELAPSED_NS.name;
            let run_ns = elapsed.then(|| c.mean());
            for w in stats::diagnose_counter(name, q, &c.samples, run_ns) {
                let keep = matches!(w, Warning::OutlierRuns { .. }) || (elapsed && i == last);
                if keep {
                    out.push(describe(&m.name, &w));
                }
            }
        }
    }
    out
}

/// A warning with the mark it is about.
fn describe(mark: &str, w: &Warning) -> String {
    format!("at mark \"{mark}\": {w}")
}

/// A comparison of one counter at one mark against the first configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Versus {
    /// This configuration's mean over the first one's (none for 0 / 0 or x / 0).
    pub ratio: Option<f64>,
    /// Welch's t-test against the first configuration (with 2+ runs each).
    pub welch: Option<TTest>,
    /// The ratio with its own interval ([`stats::ratio_of_means`]); 0 / 0 is
    /// [`Ratio::Undefined`].
    pub ratio_of_means: Option<Ratio>,
    /// Welch's test where it means something ([`stats::compare_means`]).
    pub significance: Option<Significance>,
}

/// Compares `b` to `a` (the first configuration).
pub fn versus(a: &CounterStat, b: &CounterStat) -> Versus {
    let (ma, mb) = (a.mean(), b.mean());
    let ratio = (ma != 0.0 && ma.is_finite() && mb.is_finite()).then(|| mb / ma);
    let welch = (a.samples.len() >= 2 && b.samples.len() >= 2)
        .then(|| stats::welch(&a.samples, &b.samples).ok())
        .flatten();
    Versus {
        ratio,
        welch,
        ratio_of_means: stats::ratio_of_means(&b.samples, &a.samples).ok(),
        significance: stats::compare_means(&a.samples, &b.samples).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::result::{Counters, Mark};

    fn run(elapsed: i64, faults: i64) -> Run {
        let mut c = Counters::default();
        c.set("elapsed_ns", elapsed);
        c.set("minor_faults", faults);
        Run {
            marks: vec![Mark {
                name: "end".into(),
                counters: c,
                latency: None,
            }],
        }
    }

    #[test]
    fn time_per_fault_is_per_segment() {
        let mut r = run(0, 0);
        let mut c2 = Counters::default();
        c2.set("elapsed_ns", 5000);
        c2.set("minor_faults", 10);
        r.marks[0].counters.set("elapsed_ns", 1000);
        r.marks[0].counters.set("minor_faults", 10);
        r.marks.push(Mark {
            name: "second".into(),
            counters: {
                let mut c = Counters::default();
                c.set("elapsed_ns", 5000);
                c.set("minor_faults", 30);
                c
            },
            latency: None,
        });
        derive(&mut r);
        assert_eq!(r.marks[0].counters.get("ns_per_fault"), Some(100));
        assert_eq!(r.marks[1].counters.get("ns_per_fault"), Some(200));
    }

    #[test]
    fn aggregates_mean_and_compares() {
        let a: Vec<Run> = (0..5).map(|i| run(1000 + i, 10)).collect();
        let b: Vec<Run> = (0..5).map(|i| run(2000 + i * 3, 10)).collect();
        let (aa, ab) = (aggregate(&a), aggregate(&b));
        let ea = &aa.marks[0].counters["elapsed_ns"];
        let eb = &ab.marks[0].counters["elapsed_ns"];
        assert!((ea.mean() - 1002.0).abs() < 1e-9);
        let v = versus(ea, eb);
        assert!((v.ratio.unwrap() - 2006.0 / 1002.0).abs() < 1e-9);
        assert!(v.welch.unwrap().p < 1e-6);
        let same = versus(
            &aa.marks[0].counters["minor_faults"],
            &ab.marks[0].counters["minor_faults"],
        );
        assert_eq!(same.ratio, Some(1.0));
    }

    #[test]
    fn a_run_without_the_kernels_time_gets_no_derived_time() {
        // A model run: its own speed under its own name, and faults.
        let mut c = Counters::default();
        c.set(counters::MODEL_WALL_NS.name, 8_424_000);
        c.set(counters::MINOR_FAULTS.name, 1000);
        c.set(counters::ACCESSES.name, 1000);
        let mut r = Run {
            marks: vec![Mark {
                name: "end".into(),
                counters: c,
                latency: None,
            }],
        };
        derive(&mut r);
        let m = &r.marks[0].counters;
        assert_eq!(m.get(counters::NS_PER_FAULT.name), None);
        assert_eq!(m.get(counters::NS_PER_ACCESS.name), None);
    }

    #[test]
    fn references_per_walk_are_per_segment() {
        let mark = |name: &str, walks: i64, refs: i64| {
            let mut c = Counters::default();
            c.set(counters::WALKS.name, walks);
            c.set(counters::WALK_REFS.name, refs);
            Mark {
                name: name.into(),
                counters: c,
                latency: None,
            }
        };
        let mut r = Run {
            marks: vec![
                mark("cold", 10, 240),
                mark("idle", 10, 240),
                mark("cached", 110, 503),
            ],
        };
        derive(&mut r);
        let per = |i: usize| r.marks[i].counters.get(counters::REFS_PER_1000_WALKS.name);
        assert_eq!(per(0), Some(24_000));
        assert_eq!(per(1), None, "no walk, no figure");
        assert_eq!(per(2), Some(2_630), "263 references over 100 walks");
    }

    #[test]
    fn counts_are_summarised_as_counts() {
        let runs: Vec<Run> = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
            .into_iter()
            .map(|f| run(1000, f))
            .collect();
        let s = aggregate(&runs).marks[0].counters["minor_faults"]
            .stats
            .clone()
            .unwrap();
        // Student's t would give an interval reaching below 0.
        let ci = s.ci95.unwrap();
        assert!(ci.low >= 0.0 && ci.low.fract() == 0.0 && ci.high.fract() == 0.0);
        assert_eq!(s.quantity, stats::Quantity::Count);
    }

    #[test]
    fn an_outlier_warning_names_counter_mark_and_run() {
        let mut runs: Vec<Run> = (0..10).map(|i| run(1_000_000_000 + i, 100)).collect();
        runs[6] = run(1_000_000_000, 900);
        let w = aggregate(&runs).warnings;
        assert!(
            w.iter()
                .any(|w| w.starts_with("at mark \"end\": run 7 of 10 of minor_faults")),
            "{w:?}"
        );
    }

    #[test]
    fn zero_over_zero_is_undefined_not_one() {
        let a = aggregate(&[run(10, 0), run(10, 0)]);
        let c = &a.marks[0].counters["minor_faults"];
        let v = versus(c, c);
        assert_eq!(v.ratio, None);
        assert_eq!(v.ratio_of_means, Some(Ratio::Undefined));
        assert!(matches!(
            v.significance,
            Some(Significance::NotApplicable { .. })
        ));
    }
}
