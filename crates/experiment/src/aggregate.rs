//! Repeated runs of one configuration, summarized mark by mark and counter
//! by counter, and the derived figures people ask for (time per fault, per
//! access).

use serde::Serialize;
use stats::{Summary, TTest, Warning};
use std::collections::BTreeMap;
use workload::result::Run;

/// Derived per-segment figures: the segment of a mark is the time since the
/// previous mark (or the start).
pub const DERIVED: &[&str] = &[counters::NS_PER_FAULT.name, counters::NS_PER_ACCESS.name];

/// One counter at one mark over the repeats.
#[derive(Debug, Clone, Serialize)]
pub struct CounterStat {
    pub samples: Vec<f64>,
    /// Absent when a summary is undefined (no samples).
    pub stats: Option<Summary>,
}

impl CounterStat {
    fn of(samples: Vec<f64>) -> CounterStat {
        let stats = Summary::of(&samples).ok();
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
pub fn derive(run: &mut Run) {
    let mut prev_elapsed = 0;
    let mut prev_faults = 0;
    let mut prev_accesses = 0;
    for m in &mut run.marks {
        let elapsed = m.counters.get(counters::ELAPSED_NS.name).unwrap_or(0);
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
            counters.insert(name.clone(), CounterStat::of(samples));
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
    let mut warnings = Vec::new();
    if runs.len() >= 3 {
        if let Some(end) = marks.last() {
            if let Some(e) = end.counters.get(counters::ELAPSED_NS.name) {
                let mean = e.mean();
                for w in stats::diagnose(&e.samples, Some(mean)) {
                    warnings.push(describe(&w));
                }
            }
        }
    }
    Aggregate {
        runs: runs.len(),
        marks,
        warnings,
    }
}

fn describe(w: &Warning) -> String {
    w.to_string()
}

/// A comparison of one counter at one mark against the first configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Versus {
    /// This configuration's mean over the first one's.
    pub ratio: Option<f64>,
    /// Welch's t-test against the first configuration (with 2+ runs each).
    pub welch: Option<TTest>,
}

/// Compares `b` to `a` (the first configuration).
pub fn versus(a: &CounterStat, b: &CounterStat) -> Versus {
    let (ma, mb) = (a.mean(), b.mean());
    let ratio = (ma != 0.0 && ma.is_finite() && mb.is_finite()).then(|| mb / ma);
    let welch = (a.samples.len() >= 2 && b.samples.len() >= 2)
        .then(|| stats::welch(&a.samples, &b.samples).ok())
        .flatten();
    Versus { ratio, welch }
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
}
