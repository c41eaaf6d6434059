//! Traces wherever a workload is accepted: `run` and `compare` given a trace
//! file (crate `trace`) replay it on the model under each configuration,
//! with the same warm-up and interleaving as workloads ([`crate::exec`]).
//! The kernel backend cannot replay a trace: it is refused as bad input.

use crate::aggregate;
use crate::config::{BackendKind, RunConfig};
use crate::exec::{self, ConfigResult, ExecError, ExecOptions, Progress};
use backend::replay::{self, ReplayError, ReplayOptions};
use std::io::Read;
use std::path::Path;
use std::time::Instant;

/// Whether `name_or_path` is a file that starts as a ptlab trace does.
pub fn is_trace(name_or_path: &str) -> bool {
    let mut magic = [0u8; 8];
    std::fs::File::open(name_or_path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| &magic == b"PTLTRACE")
}

impl From<ReplayError> for ExecError {
    fn from(e: ReplayError) -> Self {
        let bad_input = matches!(
            e,
            ReplayError::Trace(_) | ReplayError::Layout(_) | ReplayError::Config(_)
        );
        ExecError::Trace {
            message: e.to_string(),
            bad_input,
        }
    }
}

/// Replays the trace at `path` once under `cfg`: the run, and a warning
/// when the replay went past recorded faults the model refused
/// (`backend::replay::refused`).
///
/// # Errors
/// A kernel configuration; what the replay reports.
pub fn replay_once(
    path: &Path,
    cfg: &RunConfig,
    opts: &ExecOptions,
) -> Result<(workload::result::Run, Option<String>), ExecError> {
    if cfg.backend == BackendKind::Kernel {
        return Err(ExecError::Trace {
            message: format!(
                "{}: a trace replays on the model only (configuration \"{}\" asks for the kernel)",
                path.display(),
                cfg.label
            ),
            bad_input: true,
        });
    }
    let mc = exec::model_config(cfg)?;
    let ro = ReplayOptions {
        deadline: Instant::now().checked_add(opts.timeout),
        ..ReplayOptions::default()
    };
    let replayed = replay::replay(path, &mc, &ro)?;
    let warning = replayed.refused.describe();
    let mut run = replayed.run;
    aggregate::derive(&mut run);
    Ok((run, warning))
}

/// As [`exec::run_all`] for a trace file.
///
/// # Errors
/// The first failing replay's error.
pub fn run_trace_all(
    path: &Path,
    configs: &[RunConfig],
    opts: &ExecOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<ConfigResult>, ExecError> {
    let warmup = exec::warmup_runs(opts);
    let total = (warmup + opts.repeat) * configs.len();
    let mut runs = vec![Vec::new(); configs.len()];
    // A replay is deterministic: every round of a configuration warns alike.
    let mut warnings = vec![None; configs.len()];
    let mut done = 0;
    for round in 0..warmup + opts.repeat {
        for (i, cfg) in configs.iter().enumerate() {
            let (run, warning) = replay_once(path, cfg, opts)?;
            warnings[i] = warning;
            if round >= warmup {
                runs[i].push(run);
            }
            done += 1;
            progress(Progress { done, total });
        }
    }
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(configs
        .iter()
        .zip(runs)
        .zip(warnings)
        .map(|((c, runs), warning)| {
            let mut aggregate = aggregate::aggregate(&runs);
            aggregate.warnings.extend(warning);
            ConfigResult {
                config: c.clone(),
                workload: name.clone(),
                aggregate,
                runs,
            }
        })
        .collect())
}
