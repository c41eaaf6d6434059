//! `validate`: each workload on this machine's kernel and on the model
//! configured like this host. Two kinds of counters, both from the
//! `counters` registry:
//!
//! - **compared** ([`COMPARED`]): deterministic on both sides, held equal at
//!   every mark; a difference fails the workload (and `ptlab validate` exits 1);
//! - **observed** ([`observed::observed_counters`]): read by the kernel but
//!   not a function of the workload alone (`tlb_shootdowns`); shown side by
//!   side at the end mark, the kernel's over [`observed::KERNEL_RUNS`] runs
//!   when either side has them nonzero, with a warning and its reason when
//!   the model lies outside the kernel's spread. Warnings never fail.
//!
//! [`time`] (`validate --time`) compares time instead of counters: the
//! model's predicted time against the kernel's measured one.

mod observed;
pub mod time;

pub use observed::{
    any_nonzero, observe, observed_counters, warning, KernelSpread, Machine, Observed, KERNEL_RUNS,
};

use crate::config::{BackendKind, RunConfig};
use crate::exec::{self, ExecError, ExecOptions};
pub use counters::COMPARED;
use serde::Serialize;
use workload::result::Run;

/// A workload `validate` did not run, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Skipped {
    pub workload: String,
    pub reason: String,
}

/// One counter that differs at one mark.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Diff {
    pub mark: String,
    pub counter: String,
    pub kernel: i64,
    pub model: i64,
}

/// The verdict on one workload.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadVerdict {
    pub workload: String,
    pub ok: bool,
    pub diffs: Vec<Diff>,
    /// Marks compared and counters per mark (to show what "ok" covered).
    pub marks: usize,
    pub counters: usize,
    /// The names of the marks compared, in order (matched by position).
    pub compared_marks: Vec<String>,
    /// The observed counters at the end mark, kernel beside model.
    pub observed: Vec<Observed>,
}

impl WorkloadVerdict {
    /// The verdict on `workload` from its kernel runs (the first is the one
    /// compared; all of them give the observed counters' spread) and its
    /// model run. `ok` depends on the compared counters only.
    ///
    /// # Panics
    /// If `kernel` is empty.
    pub fn of(workload: &str, kernel: &[Run], model: &Run, machine: &Machine) -> WorkloadVerdict {
        let first = &kernel[0];
        let diffs = compare_runs(first, model);
        WorkloadVerdict {
            workload: workload.to_string(),
            ok: diffs.is_empty(),
            diffs,
            marks: first.marks.len(),
            counters: COMPARED.len(),
            compared_marks: first
                .marks
                .iter()
                .zip(&model.marks)
                .map(|(k, _)| k.name.clone())
                .collect(),
            observed: observe(kernel, model, machine),
        }
    }

    /// The observed counters outside the kernel's spread.
    pub fn warnings(&self) -> impl Iterator<Item = &Observed> {
        self.observed.iter().filter(|o| o.warning.is_some())
    }
}

/// The verdict on every workload.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Every workload agrees on every compared counter (warnings aside).
    pub ok: bool,
    /// The counters compared at every mark, in registry order.
    pub compared: Vec<&'static str>,
    /// The counters shown side by side at the end mark, not compared.
    pub observed: Vec<&'static str>,
    /// Observed counters, over all workloads, outside the kernel's spread.
    pub warnings: usize,
    /// The model configuration compared against the kernel.
    pub model: RunConfig,
    pub workloads: Vec<WorkloadVerdict>,
    /// Workloads not run, each with the one line saying why (a need the
    /// host or the model does not meet): neither agreement nor failure.
    pub skipped: Vec<Skipped>,
    /// The machine whose kernel was the referee.
    pub host: host::Fingerprint,
}

/// Compares two runs of one workload mark by mark. Marks are matched by
/// position; a different number of marks is itself a difference.
pub fn compare_runs(kernel: &Run, model: &Run) -> Vec<Diff> {
    let mut diffs = Vec::new();
    if kernel.marks.len() != model.marks.len() {
        diffs.push(Diff {
            mark: "(marks)".into(),
            counter: "count".into(),
            kernel: kernel.marks.len() as i64,
            model: model.marks.len() as i64,
        });
    }
    for (k, m) in kernel.marks.iter().zip(&model.marks) {
        for c in COMPARED {
            let (kv, mv) = (k.counters.get(c), m.counters.get(c));
            if let (Some(kv), Some(mv)) = (kv, mv) {
                if kv != mv {
                    diffs.push(Diff {
                        mark: k.name.clone(),
                        counter: c.to_string(),
                        kernel: kv,
                        model: mv,
                    });
                }
            }
        }
    }
    diffs
}

/// Runs every workload on the kernel (its threads pinned to CPUs of their
/// own when `pin_threads`: `ExecOptions::pin_threads`) and on `model`,
/// reporting progress after each workload.
///
/// # Errors
/// The first run that fails (a refused workload, a kernel or model error).
pub fn validate(
    names: &[String],
    model: &RunConfig,
    pin_threads: bool,
    progress: &mut dyn FnMut(usize),
) -> Result<Outcome, ExecError> {
    let kernel = RunConfig::kernel();
    let opts = ExecOptions {
        pin_threads,
        ..ExecOptions::default()
    };
    let host = host::Fingerprint::read();
    let machine = Machine::of(&host);
    let mut workloads = Vec::new();
    let mut skipped = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let wk = exec::load(name, &kernel)?;
        let wm = exec::load(name, model)?;
        let unmet = match exec::unmet_need(&wk, &kernel)? {
            Some(why) => Some(why),
            None => exec::unmet_need(&wm, model)?,
        };
        if let Some(reason) = unmet {
            skipped.push(Skipped {
                workload: wk.name.clone(),
                reason,
            });
            progress(i + 1);
            continue;
        }
        let mut rk = vec![exec::run_once(&wk, &kernel, &opts)?];
        let rm = exec::run_once(&wm, model, &opts)?;
        // Only a nonzero observed counter needs a spread: a workload whose
        // kernel and model both say 0 costs one kernel run, as before.
        if any_nonzero(&rk[0]) || any_nonzero(&rm) {
            for _ in 1..KERNEL_RUNS {
                rk.push(exec::run_once(&wk, &kernel, &opts)?);
            }
        }
        workloads.push(WorkloadVerdict::of(&wk.name, &rk, &rm, &machine));
        progress(i + 1);
    }
    debug_assert!(model.backend == BackendKind::Model);
    Ok(Outcome {
        ok: workloads.iter().all(|w| w.ok),
        compared: COMPARED.to_vec(),
        observed: observed_counters(),
        warnings: workloads.iter().map(|w| w.warnings().count()).sum(),
        model: model.clone(),
        workloads,
        skipped,
        host,
    })
}
