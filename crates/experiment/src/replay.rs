//! Traces wherever a workload is accepted: `run` and `compare` given a trace
//! file (crate `trace`) replay it on the model under each configuration,
//! with the same warm-up and interleaving as workloads ([`crate::exec`]).
//! The kernel backend cannot replay a trace: it is refused as bad input.

use crate::aggregate;
use crate::config::{BackendKind, RunConfig};
use crate::exec::{self, AccessProgress, ConfigResult, ExecError, ExecOptions, Progress};
use backend::replay::{self, ReplayError, ReplayOptions, Stopped, Window};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// What only a trace's replay takes (`ptlab replay`'s own options).
#[derive(Debug, Clone, Default)]
pub struct TraceOptions {
    /// The part of the trace measured (`--skip`, `--warmup`, `--limit`).
    pub window: Window,
    /// `--prefault`: every mapping populated, the window from the first access.
    pub prefault: bool,
    /// Raised by a SIGINT handler: the replay under way stops, partial.
    pub interrupt: Option<Arc<AtomicBool>>,
}

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
    let (run, _, warning) = replay_watched(path, cfg, opts, &TraceOptions::default(), None)?;
    Ok((run, warning))
}

/// As [`replay_once`] with the trace's own options, reporting its
/// accesses to `accesses`; also returns why it stopped early, if it did,
/// and the warning about recorded faults the model refused, if any.
///
/// # Errors
/// As [`replay_once`].
pub fn replay_watched(
    path: &Path,
    cfg: &RunConfig,
    opts: &ExecOptions,
    trace: &TraceOptions,
    accesses: Option<AccessProgress>,
) -> Result<(workload::result::Run, Option<Stopped>, Option<String>), ExecError> {
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
        // A limit too far to represent is no limit.
        deadline: Instant::now().checked_add(opts.timeout),
        interrupt: trace.interrupt.clone(),
        progress: accesses,
        window: trace.window,
        prefault: trace.prefault,
        ..ReplayOptions::default()
    };
    let r = replay::replay(path, &mc, &ro)?;
    let warning = r.refused.describe();
    let mut run = r.run;
    aggregate::derive(&mut run);
    Ok((run, r.partial, warning))
}

/// As [`exec::run_all`] for a trace file, with the trace's own options;
/// model runs report their accesses to `accesses`. A replay that stops
/// early (time limit, interrupt) ends the series: its configuration's
/// result holds the runs so far and that one, marked partial, and the
/// configurations not reached yet are left out.
///
/// # Errors
/// The first failing replay's error.
pub fn run_trace_all(
    path: &Path,
    configs: &[RunConfig],
    opts: &ExecOptions,
    trace: &TraceOptions,
    progress: &mut dyn FnMut(Progress),
    accesses: Option<AccessProgress>,
) -> Result<Vec<ConfigResult>, ExecError> {
    let warmup = exec::warmup_runs(opts);
    let total = (warmup + opts.repeat) * configs.len();
    let mut runs = vec![Vec::new(); configs.len()];
    // A replay is deterministic: every round of a configuration warns alike.
    let mut warnings = vec![None; configs.len()];
    let mut partial: Vec<Option<Stopped>> = vec![None; configs.len()];
    let mut done = 0;
    'rounds: for round in 0..warmup + opts.repeat {
        for (i, cfg) in configs.iter().enumerate() {
            let (run, stopped, warning) = replay_watched(path, cfg, opts, trace, accesses.clone())?;
            warnings[i] = warning;
            if round >= warmup || stopped.is_some() {
                runs[i].push(run);
            }
            done += 1;
            progress(Progress { done, total });
            if stopped.is_some() {
                partial[i] = stopped;
                break 'rounds;
            }
        }
    }
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(configs
        .iter()
        .zip(runs)
        .zip(partial)
        .zip(warnings)
        .filter(|(((_, runs), _), _)| !runs.is_empty())
        .map(|(((c, runs), stopped), warning)| {
            let mut aggregate = aggregate::aggregate(&runs);
            aggregate.warnings.extend(warning);
            ConfigResult {
                config: c.clone(),
                workload: name.clone(),
                aggregate,
                runs,
                partial: stopped.map(|s| s.to_string()),
            }
        })
        .collect())
}
