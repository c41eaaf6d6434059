//! The tables of the CLI's commands, built from runs: `run`, `compare`, `validate`
//! and `audit`. Figures come from `stats`; here they are only arranged.
//!
//! Counters are keyed by name; the model's table pages per level appear as
//! `pt_pages.<LEVEL>` (e.g. `pt_pages.PTE`). Rows follow the order of the main
//! counters of the `counters` registry, then other counters alphabetically, then
//! `pt_pages.*`; units come from the registry.
//!
//! Every summary is taken with the counter's kind of quantity ([`summary_of`]):
//! counts print as whole numbers and no interval reaches below zero; a ratio
//! comes from [`stats::ratio_of_means`] with its own interval (0 / 0 is
//! "undefined", never 1) and a p-value from [`stats::compare_means`], which gives
//! none where a test means nothing (exact or identical runs, too few runs).

use crate::number::Unit;
use crate::table::{Cell, Column, Table};
use counters::unit_of;
use stats::{compare_means, ratio_of_means, Quantity, Summary};
use std::collections::{BTreeMap, BTreeSet};
use workload::result::{Counters, Run};

/// The main counters in the registry's order: the order of every table, and
/// (with the derived ones) the counters `run` shows unless `--all`.
pub const ORDER: &[&str] = counters::MAIN;

/// Every counter of `c` as `(key, value)`, `pt_pages` entries as `pt_pages.<LEVEL>`.
pub fn flatten(c: &Counters) -> Vec<(String, i64)> {
    c.values
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .chain(
            c.pt_pages
                .iter()
                .map(|(k, v)| (format!("{}.{k}", counters::PT_PAGES.name), *v)),
        )
        .collect()
}

/// Sorts counter keys for display (see the module documentation).
pub fn sort_counters(keys: impl IntoIterator<Item = String>) -> Vec<String> {
    let rank = |k: &str| -> (usize, String) {
        let base = k.split('.').next().unwrap_or(k);
        let pos = ORDER.iter().position(|o| *o == base).unwrap_or(ORDER.len());
        let group = if counters::PT_PAGES.covers(k) {
            ORDER.len() + 1
        } else {
            pos
        };
        (group, k.to_string())
    };
    let mut v: Vec<String> = keys
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    v.sort_by_key(|k| rank(k));
    v
}

/// The values of every counter at the first mark named `mark` of each run, in run
/// order. A run without that mark or counter contributes no value to it.
pub fn samples_at(runs: &[Run], mark: &str) -> BTreeMap<String, Vec<i64>> {
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for run in runs {
        if let Some(m) = run.marks.iter().find(|m| m.name == mark) {
            for (k, v) in flatten(&m.counters) {
                out.entry(k).or_default().push(v);
            }
        }
    }
    out
}

/// Mark names in the order runs reach them, each once (a name reached several times
/// in one run is reported at its first occurrence, as [`samples_at`] reads it).
pub fn mark_names(runs: &[Run]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for m in runs.iter().flat_map(|r| r.marks.iter()) {
        if seen.insert(m.name.clone()) {
            out.push(m.name.clone());
        }
    }
    out
}

fn to_f64(v: &[i64]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// The summary of counter `name`'s `samples` with its kind of quantity. A
/// counter that went down since the run's start (a negative difference, such
/// as `vmpte_kb` after an munmap) is a signed quantity and is summarised as one.
/// `None` for no samples.
pub fn summary_of(name: &str, samples: &[f64]) -> Option<Summary> {
    Summary::of_quantity(samples, crate::quantity_of(name))
        .or_else(|_| Summary::of_quantity(samples, Quantity::Signed))
        .ok()
}

/// A summary as a cell in the counter's unit: runs that all agree show their
/// value alone (an interval from it to itself says nothing); a signed summary (a
/// counter that went down) keeps the unit's scaling only when it is not a count.
fn summary_cell(name: &str, s: &Summary) -> Cell {
    if let stats::MeanInterval::NoSpread { value, .. } = s.interval {
        return Cell::quantity(value, Unit::of_counter(name));
    }
    match (s.quantity, Unit::of_counter(name)) {
        (Quantity::Signed, Unit::Count) => Cell::estimate(s.mean, s.ci95.map(|c| c.half_width())),
        (_, unit) => Cell::from_summary_in(s, unit),
    }
}

/// The table of `ptlab run`: one row per mark and counter. One run gives its value;
/// several give the mean with its 95% interval (in the counter's unit, whole
/// numbers for counts, no interval below zero), median, min and max.
pub fn run_table(runs: &[Run]) -> Table {
    let repeated = runs.len() > 1;
    let mut cols = vec![Column::new("mark"), Column::new("counter")];
    if repeated {
        cols.extend(["mean (95% CI)", "median", "min", "max"].map(Column::new));
    } else {
        cols.push(Column::new("value"));
    }
    cols.push(Column::new("unit"));
    let mut t = Table::with_columns(cols);
    for mark in mark_names(runs) {
        let samples = samples_at(runs, &mark);
        for key in sort_counters(samples.keys().cloned()) {
            let vals = &samples[&key];
            let mut row = vec![Cell::text(&mark), Cell::text(&key)];
            let unit = Unit::of_counter(&key);
            match summary_of(&key, &to_f64(vals)) {
                Some(s) if repeated => row.extend([
                    summary_cell(&key, &s),
                    Cell::quantity(s.median, unit),
                    Cell::int(s.min as i64),
                    Cell::int(s.max as i64),
                ]),
                Some(_) => row.push(Cell::int(vals[0])),
                None => continue,
            }
            row.push(Cell::text(unit_of(&key)));
            t.push_row(row);
        }
    }
    if repeated {
        t.push_note(format!(
            "{} runs; in parentheses the 95% confidence interval of the mean \
             (bootstrap for counts and times, none from fewer than {} differing runs)",
            runs.len(),
            stats::MIN_RUNS_FOR_INTERVAL
        ));
    }
    t
}

/// The table of `ptlab compare`: at `mark`, one row per counter, one column per
/// configuration (the mean with its 95% interval with repeats), then each
/// configuration's ratio to the first ([`stats::ratio_of_means`]: with its interval,
/// `undefined (0 / 0)` when both are 0) and, when every configuration has 2 runs or
/// more, Welch's p-value against the first where the test means something
/// ([`stats::compare_means`]; otherwise why not, as `n/a: identical`).
pub fn compare_table(mark: &str, configs: &[(&str, &[Run])]) -> Table {
    let samples: Vec<BTreeMap<String, Vec<i64>>> =
        configs.iter().map(|(_, r)| samples_at(r, mark)).collect();
    let with_p = configs.len() > 1 && configs.iter().all(|(_, r)| r.len() >= 2);
    let first = configs.first().map_or("", |c| c.0);
    let mut cols = vec![Column::new("counter"), Column::new("unit")];
    cols.extend(configs.iter().map(|(n, _)| Column::new(*n)));
    for (name, _) in configs.iter().skip(1) {
        cols.push(Column::new(if configs.len() == 2 {
            "ratio to first".to_string()
        } else {
            format!("{name} / {first}")
        }));
    }
    if with_p {
        for (name, _) in configs.iter().skip(1) {
            cols.push(Column::new(if configs.len() == 2 {
                "p (Welch)".to_string()
            } else {
                format!("p {name}")
            }));
        }
    }
    let mut t = Table::with_columns(cols).with_title(format!("at mark \"{mark}\""));
    let keys = sort_counters(samples.iter().flat_map(|s| s.keys().cloned()));
    for key in keys {
        let values: Vec<Option<Vec<f64>>> = samples
            .iter()
            .map(|s| s.get(&key).map(|v| to_f64(v)))
            .collect();
        let mut row = vec![Cell::text(&key), Cell::text(unit_of(&key))];
        row.extend(values.iter().map(|v| {
            v.as_deref()
                .and_then(|v| summary_of(&key, v))
                .map_or(Cell::Empty, |s| summary_cell(&key, &s))
        }));
        for v in values.iter().skip(1) {
            row.push(match (&values[0], v) {
                (Some(a), Some(b)) => ratio_of_means(b, a)
                    .ok()
                    .map_or(Cell::Empty, |r| Cell::from_ratio(&r)),
                _ => Cell::Empty,
            });
        }
        if with_p {
            for v in values.iter().skip(1) {
                row.push(match (&values[0], v) {
                    (Some(a), Some(b)) => compare_means(a, b)
                        .ok()
                        .map_or(Cell::Empty, |s| Cell::from_significance(&s)),
                    _ => Cell::Empty,
                });
            }
        }
        t.push_row(row);
    }
    let runs: Vec<String> = configs
        .iter()
        .map(|(n, r)| format!("{n}: {}", r.len()))
        .collect();
    t.push_note(format!(
        "runs per configuration: {}; in parentheses the 95% confidence interval of the mean, \
         ± that of a ratio",
        runs.join(", ")
    ));
    t
}

/// One difference `ptlab validate` found between the kernel and the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffRow<'a> {
    pub workload: &'a str,
    pub mark: &'a str,
    pub counter: &'a str,
    pub kernel: i64,
    pub model: i64,
}

/// The table of `ptlab validate`: each difference with `model - kernel`.
pub fn validate_table(diffs: &[DiffRow<'_>]) -> Table {
    let mut t = Table::new([
        "workload",
        "mark",
        "counter",
        "kernel",
        "model",
        "model - kernel",
        "unit",
    ]);
    for d in diffs {
        t.push_row([
            Cell::text(d.workload),
            Cell::text(d.mark),
            Cell::text(d.counter),
            Cell::int(d.kernel),
            Cell::int(d.model),
            Cell::int(d.model.saturating_sub(d.kernel)),
            Cell::text(unit_of(d.counter)),
        ]);
    }
    t
}

/// One item of `ptlab audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditRow<'a> {
    pub id: &'a str,
    pub status: &'a str,
    pub value: &'a str,
    pub why: &'a str,
    pub fix: &'a str,
}

/// The table of `ptlab audit`, its explanations wrapped to fit a terminal.
pub fn audit_table(items: &[AuditRow<'_>]) -> Table {
    let mut t = Table::with_columns(vec![
        Column::new("id"),
        Column::new("status"),
        Column::new("value").wrap(24),
        Column::new("why it matters").wrap(44),
        Column::new("how to change it").wrap(44),
    ]);
    for i in items {
        t.push_row([i.id, i.status, i.value, i.why, i.fix].map(Cell::text));
    }
    t
}
