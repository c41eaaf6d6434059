//! Running workloads under configurations: once, or repeated with warm-up
//! runs and the configurations interleaved (A B A B ...) so that a drift of
//! the machine's state touches every configuration alike.
//!
//! Invariants:
//! - With warm-up runs, every configuration first makes them and throws them
//!   away, then the measured rounds run one configuration after the other,
//!   round by round. `run` and `compare` warm up both backends alike
//!   ([`warmup_on_both`]): the kernel's caches and THP pools settle, the
//!   model's host process pays its cold start.
//! - `timeout` bounds every single run on both backends: the kernel's child
//!   is killed, the model stops at its next check ([`backend::model::RunOptions`]).

use crate::aggregate::{self, Aggregate};
use crate::config::{BackendKind, RunConfig};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;
use workload::plan::Workload;
use workload::result::Run;

/// Why a run could not be made.
#[derive(Debug, Error)]
pub enum ExecError {
    // Boxed: the variants are large and every run returns this type.
    #[error(transparent)]
    Workload(Box<workload::WorkloadError>),
    #[error(transparent)]
    Config(Box<crate::config::ConfigError>),
    #[cfg(target_os = "linux")]
    #[error("kernel backend: {0}")]
    Kernel(Box<backend::kernel::KernelError>),
    #[error("model backend: {0}")]
    Model(String),
    /// A model run passed `--timeout`.
    #[error(
        "model backend: the run reached the time limit of {} s after {done} of {planned} \
         planned accesses; raise --timeout or make the workload smaller",
        limit.as_secs_f64()
    )]
    ModelTimeout {
        limit: Duration,
        done: u64,
        planned: u64,
    },
    #[error("the kernel backend needs Linux")]
    NoKernel,
    /// A trace that does not read, does not fit, or that the model refuses.
    #[error("{message}")]
    Trace { message: String, bad_input: bool },
}

impl From<workload::WorkloadError> for ExecError {
    fn from(e: workload::WorkloadError) -> Self {
        ExecError::Workload(Box::new(e))
    }
}

impl From<crate::config::ConfigError> for ExecError {
    fn from(e: crate::config::ConfigError) -> Self {
        ExecError::Config(Box::new(e))
    }
}

#[cfg(target_os = "linux")]
impl From<backend::kernel::KernelError> for ExecError {
    fn from(e: backend::kernel::KernelError) -> Self {
        ExecError::Kernel(Box::new(e))
    }
}

impl ExecError {
    /// Whether the user's input is at fault (exit status 2) rather than the run.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ExecError::Workload(_) | ExecError::Config(_) => true,
            #[cfg(target_os = "linux")]
            ExecError::Kernel(k) => k.is_bad_input(),
            ExecError::Trace { bad_input, .. } => *bad_input,
            _ => false,
        }
    }
}

/// How runs are made.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// A run (kernel or model) is stopped past this.
    pub timeout: Duration,
    /// Measured runs per configuration.
    pub repeat: usize,
    /// Runs per configuration made first and thrown away (caches, page
    /// cache, THP pools settle). `None`: 1 when repeating on the kernel.
    pub warmup: Option<usize>,
    /// On the kernel backend, each workload thread pinned to a CPU of its
    /// own (`backend::kernel::KernelOptions::pin_threads`); the model has
    /// no host threads to pin.
    pub pin_threads: bool,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            timeout: Duration::from_secs(120),
            repeat: 1,
            warmup: None,
            pin_threads: false,
        }
    }
}

/// Virtual-address bits the workload's placement is computed for.
pub fn va_bits_of(cfg: &RunConfig) -> u32 {
    match cfg.backend {
        BackendKind::Kernel => u32::from(host::Fingerprint::read().va_bits.unwrap_or(48)),
        BackendKind::Model => cfg
            .model
            .geometry
            .as_deref()
            .and_then(|g| pt::geometry::load(g).ok())
            .map_or(48, |g| g.va_bits()),
    }
}

/// Loads a workload (built-in name, validation-suite name or file) placed
/// for `cfg`'s address space.
///
/// # Errors
/// [`ExecError::Workload`].
pub fn load(name_or_path: &str, cfg: &RunConfig) -> Result<Workload, ExecError> {
    Ok(workload::load(name_or_path, va_bits_of(cfg))?)
}

/// Why `w` is not run under `cfg` (one line naming the workload, the need
/// and the system), if the system does not meet what the workload
/// `requires`: the kernel is this host's (its active swap, /proc/swaps),
/// the model is as configured (its `swap` option, which defaults to this
/// host's). `None`: it runs.
///
/// # Errors
/// [`ExecError::Config`] for a model option the model cannot use.
pub fn unmet_need(w: &Workload, cfg: &RunConfig) -> Result<Option<String>, ExecError> {
    if w.requires.is_empty() {
        return Ok(None);
    }
    let (system, sys) = match cfg.backend {
        BackendKind::Kernel => (
            "this host's kernel",
            workload::plan::NeedSystem {
                swap: host::meminfo::active_swap_bytes().is_some(),
                // Linux: swap_use_vma_readahead.
                vma_readahead: host::swap::vma_ra_enabled().unwrap_or(true)
                    && host::swap::any_rotational() == Some(false),
                rotational: host::swap::any_rotational() == Some(true),
                area: match host::swap::swap_area_kind() {
                    None | Some(host::swap::SwapAreaKind::File) => workload::plan::SwapArea::File,
                    Some(host::swap::SwapAreaKind::Block) => workload::plan::SwapArea::Block,
                    Some(host::swap::SwapAreaKind::Sync) => workload::plan::SwapArea::Sync,
                },
            },
        ),
        BackendKind::Model => {
            let mm = model_config(cfg)?.mm;
            (
                "the model",
                workload::plan::NeedSystem {
                    swap: mm.swap.is_some(),
                    vma_readahead: mm.swap_readahead.kind == mm::SwapRaKind::Vma,
                    // The model has no rotational flag: it meets the need
                    // where it reads ahead by slot, as a rotational device
                    // makes Linux do.
                    rotational: mm.swap_readahead.kind == mm::SwapRaKind::Cluster,
                    area: match mm.swap_device {
                        mm::SwapDeviceKind::File => workload::plan::SwapArea::File,
                        mm::SwapDeviceKind::Block => workload::plan::SwapArea::Block,
                        mm::SwapDeviceKind::Sync => workload::plan::SwapArea::Sync,
                    },
                },
            )
        }
    };
    Ok(workload::plan::Need::unmet(w, system, sys))
}

/// Receives `(accesses done, accesses planned)` from inside a model run
/// (see [`backend::model::ProgressFn`]).
pub type AccessProgress = Arc<backend::model::ProgressFn>;

/// Runs `w` once under `cfg`.
///
/// # Errors
/// Whatever the backend reports; [`ExecError::ModelTimeout`] for a model run
/// longer than `opts.timeout`.
pub fn run_once(w: &Workload, cfg: &RunConfig, opts: &ExecOptions) -> Result<Run, ExecError> {
    run_once_watched(w, cfg, opts, None)
}

/// As [`run_once`], a model run reporting its accesses to `accesses`.
///
/// # Errors
/// As [`run_once`].
pub fn run_once_watched(
    w: &Workload,
    cfg: &RunConfig,
    opts: &ExecOptions,
    accesses: Option<AccessProgress>,
) -> Result<Run, ExecError> {
    let mut run = match cfg.backend {
        BackendKind::Model => run_model(w, cfg, opts, accesses)?,
        BackendKind::Kernel => run_kernel(w, opts)?,
    };
    aggregate::derive(&mut run);
    Ok(run)
}

/// The model configured by `cfg`'s options (defaults mirror this host).
///
/// # Errors
/// [`ExecError::Config`] for an option the model cannot use.
pub fn model_config(cfg: &RunConfig) -> Result<backend::model::ModelConfig, ExecError> {
    backend::model::ModelConfig::new(&cfg.model).map_err(|e| {
        ExecError::from(crate::config::ConfigError::BadValue {
            origin: String::new(),
            key: e.key,
            message: e.message,
        })
    })
}

/// The TLB a model configuration runs with: the preset or file `tlb` names,
/// else the preset its geometry's architecture implies
/// ([`backend::model::default_tlb_preset`]); `None` for the kernel, whose
/// TLB is the machine's, or a geometry that does not load (its run fails and
/// says why).
pub fn tlb_used(cfg: &RunConfig) -> Option<String> {
    if cfg.backend != BackendKind::Model {
        return None;
    }
    if let Some(t) = &cfg.model.tlb {
        return Some(t.clone());
    }
    let g = pt::geometry::load(cfg.model.geometry.as_deref().unwrap_or("x86-64-4l")).ok()?;
    Some(backend::model::default_tlb_preset(g.arch()).to_string())
}

fn run_model(
    w: &Workload,
    cfg: &RunConfig,
    opts: &ExecOptions,
    progress: Option<AccessProgress>,
) -> Result<Run, ExecError> {
    let mc = model_config(cfg)?;
    let ro = backend::model::RunOptions {
        // A limit too far to represent is no limit.
        deadline: Instant::now().checked_add(opts.timeout),
        progress,
    };
    backend::model::run_with(w, &mc, &ro).map_err(|e| match e {
        backend::model::ModelError::Timeout { done, planned } => ExecError::ModelTimeout {
            limit: opts.timeout,
            done,
            planned,
        },
        e => ExecError::Model(e.to_string()),
    })
}

#[cfg(target_os = "linux")]
fn run_kernel(w: &Workload, opts: &ExecOptions) -> Result<Run, ExecError> {
    let ko = backend::kernel::KernelOptions {
        timeout: opts.timeout,
        pin_threads: opts.pin_threads,
        ..Default::default()
    };
    Ok(backend::kernel::run(w, &ko)?)
}

#[cfg(not(target_os = "linux"))]
fn run_kernel(_w: &Workload, _opts: &ExecOptions) -> Result<Run, ExecError> {
    Err(ExecError::NoKernel)
}

/// Warm-up runs per configuration [`run_plans`] makes: the rule of
/// [`warmup_on_both`] over `opts`, the same for `run`, `compare` and the
/// study, on either backend.
pub fn warmup_runs(opts: &ExecOptions) -> usize {
    warmup_on_both(opts.repeat, opts.warmup)
}

/// Warm-up runs per configuration when `repeat` runs are measured: `asked`,
/// or 1 when repeating, on either backend. The model's first run pays the
/// host process's cold start (its own heap's page faults, caches), which
/// once made the first configuration of a `compare` look 6 to 13 times
/// slower than the second.
pub fn warmup_on_both(repeat: usize, asked: Option<usize>) -> usize {
    asked.unwrap_or(usize::from(repeat > 1))
}

/// All runs of one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigResult {
    pub config: RunConfig,
    pub workload: String,
    #[serde(skip)]
    pub runs: Vec<Run>,
    pub aggregate: Aggregate,
    /// Why the last run stopped before its end (a trace's replay past its
    /// time limit or interrupted): its counters are those so far.
    pub partial: Option<String>,
}

/// Where a long run is (for progress bars).
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
}

/// Runs the workload under every configuration, `warmup + repeat` times
/// each, interleaved, and summarizes the measured runs.
///
/// # Errors
/// The first failing run's error (nothing else is run after it).
pub fn run_all(
    name_or_path: &str,
    configs: &[RunConfig],
    opts: &ExecOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<ConfigResult>, ExecError> {
    run_all_watched(name_or_path, configs, opts, progress, None)
}

/// As [`run_all`] for workloads already loaded, one per configuration
/// (placed for that configuration's address space).
///
/// # Errors
/// The first failing run's error (nothing else is run after it).
pub fn run_plans(
    plans: &[(RunConfig, Workload)],
    opts: &ExecOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<ConfigResult>, ExecError> {
    run_plans_watched(plans, opts, progress, None)
}

/// As [`run_all`], model runs also reporting their accesses to `accesses`
/// (progress within one long run).
///
/// # Errors
/// As [`run_all`].
pub fn run_all_watched(
    name_or_path: &str,
    configs: &[RunConfig],
    opts: &ExecOptions,
    progress: &mut dyn FnMut(Progress),
    accesses: Option<AccessProgress>,
) -> Result<Vec<ConfigResult>, ExecError> {
    if crate::replay::is_trace(name_or_path) {
        return crate::replay::run_trace_all(
            std::path::Path::new(name_or_path),
            configs,
            opts,
            &crate::replay::TraceOptions::default(),
            progress,
            accesses,
        );
    }
    let plans = configs
        .iter()
        .map(|c| Ok((c.clone(), load(name_or_path, c)?)))
        .collect::<Result<Vec<_>, ExecError>>()?;
    run_plans_watched(&plans, opts, progress, accesses)
}

/// As [`run_plans`], model runs also reporting their accesses to `accesses`.
///
/// # Errors
/// As [`run_plans`].
pub fn run_plans_watched(
    plans: &[(RunConfig, Workload)],
    opts: &ExecOptions,
    progress: &mut dyn FnMut(Progress),
    accesses: Option<AccessProgress>,
) -> Result<Vec<ConfigResult>, ExecError> {
    let warmup = warmup_runs(opts);
    let total = (warmup + opts.repeat) * plans.len();
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); plans.len()];
    let mut done = 0;
    for round in 0..warmup + opts.repeat {
        for (i, (cfg, w)) in plans.iter().enumerate() {
            let run = run_once_watched(w, cfg, opts, accesses.clone())?;
            if round >= warmup {
                runs[i].push(run);
            }
            done += 1;
            progress(Progress { done, total });
        }
    }
    Ok(plans
        .iter()
        .zip(runs)
        .map(|((c, w), runs)| ConfigResult {
            config: c.clone(),
            workload: w.name.clone(),
            aggregate: aggregate::aggregate(&runs),
            runs,
            partial: None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HUGE: &str = r#"
name = "huge"
description = "a random touch far longer than any time limit"

[[thread]]
op = [
  { mmap = "a", size = "4MiB" },
  { touch = "a", access = "read", pattern = "random", count = 2000000000, seed = 1 },
]
"#;

    const SMALL: &str = r#"
name = "small"
description = "a few faults"

[[thread]]
op = [
  { mmap = "a", size = "64KiB" },
  { touch = "a", access = "write" },
  { mark = "touched" },
]
"#;

    #[test]
    fn the_model_warms_up_when_repeated_as_the_kernel_does() {
        assert_eq!(warmup_on_both(3, None), 1);
        assert_eq!(warmup_on_both(1, None), 0);
        assert_eq!(warmup_on_both(3, Some(2)), 2);
        assert_eq!(warmup_on_both(3, Some(0)), 0);
    }

    #[test]
    fn a_repeated_model_run_makes_its_warm_up_first() {
        let w = workload::parse(SMALL, "small.toml", 48).unwrap();
        let plans = [(RunConfig::model_default(), w)];
        let opts = ExecOptions {
            repeat: 2,
            warmup: Some(warmup_on_both(2, None)),
            ..Default::default()
        };
        let mut last = None;
        let res = run_plans(&plans, &opts, &mut |p| last = Some((p.done, p.total))).unwrap();
        assert_eq!(last, Some((3, 3)), "one warm-up and two measured runs");
        assert_eq!(res[0].runs.len(), 2);
    }

    #[test]
    fn a_model_run_carries_its_own_speed_and_no_machine_time() {
        let w = workload::parse(SMALL, "small.toml", 48).unwrap();
        let run = run_once(&w, &RunConfig::model_default(), &ExecOptions::default()).unwrap();
        let c = &run.marks[0].counters;
        assert!(c.get(counters::MODEL_WALL_NS.name).is_some());
        for absent in [
            counters::ELAPSED_NS.name,
            counters::NS_PER_FAULT.name,
            counters::NS_PER_ACCESS.name,
        ] {
            assert_eq!(c.get(absent), None, "{absent}");
        }
    }

    #[test]
    fn the_timeout_stops_a_model_run_and_says_so() {
        let w = workload::parse(HUGE, "huge.toml", 48).unwrap();
        let opts = ExecOptions {
            timeout: Duration::from_millis(200),
            ..Default::default()
        };
        let seen = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let s = Arc::clone(&seen);
        let progress: AccessProgress = Arc::new(move |done, planned| {
            assert_eq!(planned, 2_000_000_000);
            s.store(done, std::sync::atomic::Ordering::Relaxed);
        });
        let t = Instant::now();
        let e =
            run_once_watched(&w, &RunConfig::model_default(), &opts, Some(progress)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(matches!(
            e,
            ExecError::ModelTimeout {
                planned: 2_000_000_000,
                ..
            }
        ));
        assert!(!e.is_bad_input());
        let text = e.to_string();
        assert!(text.contains("time limit of 0.2 s"), "{text}");
        assert!(seen.load(std::sync::atomic::Ordering::Relaxed) > 0);
    }
}
