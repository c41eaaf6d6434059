//! Running tasks: one ([`run_task`], also what each Ray task calls through
//! the Python bindings) or all of them on local threads ([`run_local`]).
//!
//! Invariants: a failed task is run once more, then reported with its
//! message and attempts, never dropped; outcomes come back ordered by task
//! index whatever order the workers finished in.

use super::expand::Task;
use crate::config;
use crate::exec::{self, ExecError, ExecOptions};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// Attempts per task before it is reported as failed.
pub const ATTEMPTS: u32 = 2;

/// One mark of one run: the modeled system's counters at that mark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkRow {
    pub run: usize,
    pub mark: String,
    pub counters: BTreeMap<String, i64>,
}

/// What came of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub task: Task,
    /// The configuration's label (`cpus=2,geometry=x86-64-5l`), or the
    /// pairs joined when the combination itself was refused.
    pub config: String,
    /// The TLB the model ran with (`--tlb`'s or the one the geometry
    /// implies, on the worker that ran it); `None` for the kernel or a
    /// refused combination.
    #[serde(default)]
    pub tlb: Option<String>,
    pub attempts: u32,
    /// The marks of every run, or the last attempt's message.
    pub result: Result<Vec<MarkRow>, String>,
}

/// Counters left out of sweep tables: ptlab's own clock (its speed, which
/// differs from run to run and machine to machine), never the modeled
/// system's.
fn is_own_clock(name: &str) -> bool {
    name == counters::MODEL_WALL_NS.name
}

fn attempt(t: &Task) -> Result<(String, Option<String>, Vec<MarkRow>), String> {
    let pairs: Vec<(&str, &str)> = t
        .pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let cfg = config::from_pairs(&pairs).map_err(|e| format!("workload {:?}: {e}", t.workload))?;
    let opts = ExecOptions {
        timeout: Duration::from_secs(t.timeout_s),
        repeat: t.repeat,
        warmup: Some(0),
        ..ExecOptions::default()
    };
    let results = exec::run_all(&t.workload, std::slice::from_ref(&cfg), &opts, &mut |_| {})
        .map_err(|e: ExecError| crate::document::error_message(&t.workload, &e))?;
    let mut rows = Vec::new();
    for r in &results {
        for (run_no, run) in r.runs.iter().enumerate() {
            for m in &run.marks {
                let counters = report::views::flatten(&m.counters)
                    .into_iter()
                    .filter(|(k, _)| !is_own_clock(k))
                    .collect();
                rows.push(MarkRow {
                    run: run_no,
                    mark: m.name.clone(),
                    counters,
                });
            }
        }
    }
    let tlb = exec::tlb_used(&cfg);
    Ok((cfg.label, tlb, rows))
}

/// Runs `t`, once more if it fails.
pub fn run_task(t: &Task) -> Outcome {
    let mut attempts = 0;
    loop {
        attempts += 1;
        // A panic in the model is a failed attempt with its message, not
        // the end of the sweep.
        let res = std::panic::catch_unwind(|| attempt(t)).unwrap_or_else(|p| {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(format!(
                "workload {:?}: the model panicked: {what}",
                t.workload
            ))
        });
        match res {
            Ok((config, tlb, rows)) => {
                return Outcome {
                    task: t.clone(),
                    config,
                    tlb,
                    attempts,
                    result: Ok(rows),
                }
            }
            Err(m) if attempts >= ATTEMPTS => {
                let config = t
                    .pairs
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",");
                return Outcome {
                    task: t.clone(),
                    config,
                    tlb: None,
                    attempts,
                    result: Err(m),
                };
            }
            Err(_) => {}
        }
    }
}

/// Runs every task on `jobs` threads; `done(finished, total, outcome)` is
/// called on this thread as each finishes. Outcomes are ordered by index.
pub fn run_local(
    tasks: &[Task],
    jobs: usize,
    done: &mut dyn FnMut(usize, usize, &Outcome),
) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<Outcome>();
    let mut outcomes: Vec<Option<Outcome>> = vec![None; tasks.len()];
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, tasks.len().max(1)) {
            let tx = tx.clone();
            let next = &next;
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(t) = tasks.get(i) else { break };
                if tx.send(run_task(t)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (n, o) in rx.iter().enumerate() {
            done(n + 1, tasks.len(), &o);
            let i = o.task.index;
            outcomes[i] = Some(o);
        }
    });
    outcomes
        .into_iter()
        .map(|o| o.expect("every task sends exactly one outcome"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{expand, file::parse};
    use super::*;

    #[test]
    fn a_refused_configuration_is_tried_twice_and_kept_with_its_message() {
        let f = parse(
            "s.toml",
            "workloads = [\"anon-write\"]\n[axes]\ntlb = [\"zen4\", \"no-such-tlb\"]\n",
        )
        .unwrap();
        let tasks = expand(&f);
        let mut seen = Vec::new();
        let out = run_local(&tasks, 2, &mut |n, total, o| {
            seen.push((n, total, o.task.index))
        });
        assert_eq!(seen.len(), 2);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].attempts, 1);
        let rows = out[0].result.as_ref().unwrap();
        assert!(!rows.is_empty());
        assert!(rows
            .iter()
            .all(|r| !r.counters.contains_key("model_wall_ns")));
        assert_eq!(out[1].attempts, ATTEMPTS);
        let m = out[1].result.as_ref().unwrap_err();
        assert!(m.starts_with("workload \"anon-write\": "), "{m}");
        assert!(m.contains("no-such-tlb"), "{m}");
    }

    #[test]
    fn local_threads_give_the_outcomes_of_one_thread() {
        let f = parse(
            "s.toml",
            "workloads = [\"anon-write\", \"anon-random\"]\n[axes]\ngeometry = [\"x86-64-4l\", \"x86-64-5l\", \"riscv-sv39-64k\"]\n",
        )
        .unwrap();
        let tasks = expand(&f);
        let one = run_local(&tasks, 1, &mut |_, _, _| {});
        let two = run_local(&tasks, 3, &mut |_, _, _| {});
        assert_eq!(one, two);
    }
}
