//! The tables of the CLI's commands, built from runs: `run`, `compare`, `validate`
//! and `audit`. Figures come from `stats`; here they are only arranged.
//!
//! Counters are keyed by name; the model's table pages per level appear as
//! `pt_pages.<LEVEL>` (e.g. `pt_pages.PTE`). Rows follow the order of the main
//! counters of the `counters` registry, then other counters alphabetically, then
//! `pt_pages.*`; units come from the registry.

use crate::table::{Cell, Column, Table};
use counters::unit_of;
use stats::{welch, Summary};
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

/// The table of `ptlab run`: one row per mark and counter. One run gives its value;
/// several give mean ± 95% CI, median, min and max.
pub fn run_table(runs: &[Run]) -> Table {
    let repeated = runs.len() > 1;
    let mut cols = vec![Column::new("mark"), Column::new("counter")];
    if repeated {
        cols.extend(["mean ± 95% CI", "median", "min", "max"].map(Column::new));
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
            match Summary::of_counts(vals) {
                Ok(s) if repeated => row.extend([
                    Cell::from_summary(&s),
                    Cell::estimate(s.median, None),
                    Cell::int(s.min as i64),
                    Cell::int(s.max as i64),
                ]),
                Ok(_) => row.push(Cell::int(vals[0])),
                Err(_) => continue,
            }
            row.push(Cell::text(unit_of(&key)));
            t.push_row(row);
        }
    }
    if repeated {
        t.push_note(format!(
            "{} runs; ± is the half-width of the 95% confidence interval of the mean",
            runs.len()
        ));
    }
    t
}

/// The table of `ptlab compare`: at `mark`, one row per counter, one column per
/// configuration (mean ± 95% CI with repeats), then each configuration's ratio to the
/// first and, when every configuration has 2 runs or more, Welch's p-value against
/// the first.
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
        let sums: Vec<Option<Summary>> = samples
            .iter()
            .map(|s| s.get(&key).and_then(|v| Summary::of_counts(v).ok()))
            .collect();
        let mut row = vec![Cell::text(&key), Cell::text(unit_of(&key))];
        row.extend(
            sums.iter()
                .map(|s| s.as_ref().map_or(Cell::Empty, Cell::from_summary)),
        );
        for s in sums.iter().skip(1) {
            row.push(match (&sums[0], s) {
                (Some(a), Some(b)) if a.mean != 0.0 => Cell::ratio(b.mean / a.mean),
                (Some(a), Some(b)) if a.mean == 0.0 && b.mean == 0.0 => Cell::ratio(1.0),
                _ => Cell::Empty,
            });
        }
        if with_p {
            let base = samples[0].get(&key).map(|v| to_f64(v));
            for s in samples.iter().skip(1) {
                let p = match (&base, s.get(&key)) {
                    (Some(a), Some(b)) => welch(a, &to_f64(b)).ok().map(|r| r.p),
                    _ => None,
                };
                row.push(p.map_or(Cell::Empty, Cell::p_value));
            }
        }
        t.push_row(row);
    }
    let runs: Vec<String> = configs
        .iter()
        .map(|(n, r)| format!("{n}: {}", r.len()))
        .collect();
    t.push_note(format!(
        "runs per configuration: {}; ± is the half-width of the 95% confidence interval of the mean",
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
