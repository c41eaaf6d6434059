//! The JSON documents of `ptlab run --json` and `ptlab compare --json`, made
//! here once so that the command line and the Python bindings give the same
//! bytes for the same runs (docs/python.md).
//!
//! Invariant: a document holds every measured run's raw values (`samples`:
//! counter -> one value per run, in run order), the first run's counters per
//! mark, and the spread of every counter when repeated; a model
//! configuration's document says which cost file priced it and which
//! machine that file describes (`costs`); `partial` says whether the last
//! run stopped before its end (`stopped`: why), its counters being those so
//! far.

use crate::exec::{ConfigResult, ExecError};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One configuration's result: the marks of its (first) run, with the
/// spread of every counter when repeated, and every run's raw values.
pub fn config_result(r: &ConfigResult) -> Value {
    let marks: Vec<Value> = r
        .aggregate
        .marks
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let first = r.runs.first().and_then(|run| run.marks.get(i));
            let mut mark = json!({
                "name": m.name,
                "counters": first.map(|f| serde_json::to_value(&f.counters).unwrap_or(Value::Null)),
            });
            let mut samples: BTreeMap<String, Vec<i64>> = BTreeMap::new();
            for run in &r.runs {
                if let Some(rm) = run.marks.get(i) {
                    for (k, v) in report::views::flatten(&rm.counters) {
                        samples.entry(k).or_default().push(v);
                    }
                }
            }
            mark["samples"] = serde_json::to_value(samples).unwrap_or(Value::Null);
            if r.runs.len() > 1 {
                let stats: serde_json::Map<String, Value> = m
                    .counters
                    .iter()
                    .map(|(k, c)| {
                        (
                            k.clone(),
                            serde_json::to_value(&c.stats).unwrap_or(Value::Null),
                        )
                    })
                    .collect();
                mark["stats"] = Value::Object(stats);
            }
            if let Some(l) = first.and_then(|f| f.latency.as_ref()) {
                mark["latency"] = serde_json::to_value(l).unwrap_or(Value::Null);
            }
            mark
        })
        .collect();
    let mut v = json!({
        "workload": r.workload,
        "backend": r.config.backend,
        "config": r.config,
        "tlb": crate::exec::tlb_used(&r.config),
        "marks": marks,
        "runs": r.runs.len(),
        "warnings": r.aggregate.warnings,
        "partial": r.partial.is_some(),
    });
    if let Some(why) = &r.partial {
        v["stopped"] = json!(why);
    }
    if r.config.backend == crate::config::BackendKind::Model {
        v["costs"] = costs_label(r.config.model.costs.as_deref());
    }
    v
}

/// The cost file a model configuration priced with and the machine it
/// describes ([`crate::host_costs::CostsLabel`]); `null` if it cannot be
/// read again.
pub fn costs_label(costs: Option<&str>) -> Value {
    crate::host_costs::CostsLabel::of(costs)
        .ok()
        .and_then(|l| serde_json::to_value(l).ok())
        .unwrap_or(Value::Null)
}

/// This host's fingerprint, as every document carries it.
pub fn host() -> Value {
    serde_json::to_value(host::Fingerprint::read()).unwrap_or(Value::Null)
}

/// The document of `ptlab run --json` for a workload not run because the
/// system lacks what it `requires` (`why`: the one line saying so).
pub fn skipped(workload: &str, why: &str) -> Value {
    json!({ "workload": workload, "skipped": true, "reason": why })
}

/// The document of `ptlab run --json`: one configuration's result and the host.
pub fn run(r: &ConfigResult) -> Value {
    let mut v = config_result(r);
    v["host"] = host();
    v
}

/// The document of `ptlab compare --json`: every configuration's result, in
/// the order given, and the host.
pub fn compare(results: &[ConfigResult]) -> Value {
    json!({
        "workload": results.first().map(|r| r.workload.clone()),
        "configs": results.iter().map(config_result).collect::<Vec<_>>(),
        "host": host(),
    })
}

/// The message an error about `workload` is reported with: the command
/// line's (after its `error: `), the Python bindings' exceptions and the
/// sweep table's `error` column alike. Errors of the workload itself (its
/// file, line and column, or "not found") name it already; every other one
/// (a refused option, the backend) gets the name in front.
pub fn error_message(workload: &str, e: &ExecError) -> String {
    if matches!(e, ExecError::Workload(_)) {
        e.to_string()
    } else {
        format!("workload {workload:?}: {e}")
    }
}
