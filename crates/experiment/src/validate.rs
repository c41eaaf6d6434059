//! `validate`: each workload on this machine's kernel and on the model
//! configured like this host, every counter the `counters` registry marks
//! compared at every mark, and the differences.

use crate::config::{BackendKind, RunConfig};
use crate::exec::{self, ExecError, ExecOptions};
use counters::COMPARED;
use serde::Serialize;
use workload::result::Run;

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
}

/// The verdict on every workload.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub ok: bool,
    /// The model configuration compared against the kernel.
    pub model: RunConfig,
    pub workloads: Vec<WorkloadVerdict>,
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

/// Runs every workload on the kernel and on `model`, reporting progress
/// after each workload.
///
/// # Errors
/// The first run that fails (a refused workload, a kernel or model error).
pub fn validate(
    names: &[String],
    model: &RunConfig,
    progress: &mut dyn FnMut(usize),
) -> Result<Outcome, ExecError> {
    let kernel = RunConfig::kernel();
    let opts = ExecOptions::default();
    let mut workloads = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let wk = exec::load(name, &kernel)?;
        let wm = exec::load(name, model)?;
        let rk = exec::run_once(&wk, &kernel, &opts)?;
        let rm = exec::run_once(&wm, model, &opts)?;
        let diffs = compare_runs(&rk, &rm);
        workloads.push(WorkloadVerdict {
            workload: wk.name.clone(),
            ok: diffs.is_empty(),
            diffs,
            marks: rk.marks.len(),
            counters: COMPARED.len(),
        });
        progress(i + 1);
    }
    debug_assert!(model.backend == BackendKind::Model);
    Ok(Outcome {
        ok: workloads.iter().all(|w| w.ok),
        model: model.clone(),
        workloads,
        host: host::Fingerprint::read(),
    })
}
