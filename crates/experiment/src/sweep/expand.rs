//! A sweep file's tasks: one per workload and combination of axis values.
//!
//! Invariant: the order is fixed (workloads as written, then the axes'
//! values as an odometer whose last axis, by key, turns fastest), and a
//! task's `index` is its place in it; tables are ordered by it, whoever ran
//! the tasks.

use super::file::SweepFile;
use serde::{Deserialize, Serialize};

/// One workload under one configuration, repeated `repeat` times: the unit
/// of work, as a Ray task carries it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub index: usize,
    pub workload: String,
    /// The configuration's keys: `[config]`, then this task's axis values.
    pub pairs: Vec<(String, String)>,
    /// The axis values alone, by key (the table's axis columns).
    pub axes: Vec<(String, String)>,
    pub repeat: usize,
    pub timeout_s: u64,
}

/// Every task of `f`, in order.
pub fn expand(f: &SweepFile) -> Vec<Task> {
    let combos: usize = f.axes.iter().map(|a| a.values.len()).product();
    let mut tasks = Vec::with_capacity(f.workloads.len() * combos);
    for w in &f.workloads {
        for c in 0..combos {
            // Mixed-radix digits of `c`, the last axis least significant.
            let mut rest = c;
            let mut axes = vec![(String::new(), String::new()); f.axes.len()];
            for (i, a) in f.axes.iter().enumerate().rev() {
                axes[i] = (a.key.clone(), a.values[rest % a.values.len()].clone());
                rest /= a.values.len();
            }
            let mut pairs = f.config.clone();
            pairs.extend(axes.iter().cloned());
            tasks.push(Task {
                index: tasks.len(),
                workload: w.clone(),
                pairs,
                axes,
                repeat: f.repeat,
                timeout_s: f.timeout_s,
            });
        }
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::super::file::parse;
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_combination_once_in_odometer_order() {
        let f = parse(
            "s.toml",
            "workloads = [\"anon-write\", \"anon-random\"]\n[config]\nreclaim = \"on\"\n[axes]\ngeometry = [\"x86-64-4l\", \"x86-64-5l\"]\ncpus = [1, 2, 4]\nthp = [\"never\"]\n",
        )
        .unwrap();
        let tasks = expand(&f);
        assert_eq!(tasks.len(), 2 * 3 * 2);
        assert!(tasks.iter().enumerate().all(|(i, t)| t.index == i));
        let distinct: BTreeSet<(String, Vec<(String, String)>)> = tasks
            .iter()
            .map(|t| (t.workload.clone(), t.pairs.clone()))
            .collect();
        assert_eq!(distinct.len(), tasks.len(), "no combination twice");
        let second: Vec<&str> = tasks[1].axes.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(
            second,
            ["1", "x86-64-5l", "never"],
            "the last axis by key turns fastest"
        );
        assert_eq!(tasks[0].pairs[0], ("reclaim".into(), "on".into()));
        assert_eq!(tasks[6].workload, "anon-random");
    }

    #[test]
    fn no_axes_is_one_task_per_workload() {
        let f = parse("s.toml", "workloads = [\"anon-write\"]\n").unwrap();
        let tasks = expand(&f);
        assert_eq!(tasks.len(), 1);
        assert!(tasks[0].pairs.is_empty());
    }
}
