//! Running workloads under configurations: once, or repeated with warm-up
//! runs and the configurations interleaved (A B A B ...) so that a drift of
//! the machine's state touches every configuration alike.

use crate::aggregate::{self, Aggregate};
use crate::config::{BackendKind, RunConfig};
use serde::Serialize;
use std::time::Duration;
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
    #[error("the kernel backend needs Linux")]
    NoKernel,
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
            _ => false,
        }
    }
}

/// How runs are made.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Kernel runs are killed past this.
    pub timeout: Duration,
    /// Measured runs per configuration.
    pub repeat: usize,
    /// Runs per configuration made first and thrown away (caches, page
    /// cache, THP pools settle). `None`: 1 when repeating on the kernel.
    pub warmup: Option<usize>,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            timeout: Duration::from_secs(120),
            repeat: 1,
            warmup: None,
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

/// Runs `w` once under `cfg`.
///
/// # Errors
/// Whatever the backend reports.
pub fn run_once(w: &Workload, cfg: &RunConfig, opts: &ExecOptions) -> Result<Run, ExecError> {
    let mut run = match cfg.backend {
        BackendKind::Model => run_model(w, cfg)?,
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

fn run_model(w: &Workload, cfg: &RunConfig) -> Result<Run, ExecError> {
    let mc = model_config(cfg)?;
    backend::model::run(w, &mc).map_err(|e| ExecError::Model(e.to_string()))
}

#[cfg(target_os = "linux")]
fn run_kernel(w: &Workload, opts: &ExecOptions) -> Result<Run, ExecError> {
    let ko = backend::kernel::KernelOptions {
        timeout: opts.timeout,
        ..Default::default()
    };
    Ok(backend::kernel::run(w, &ko)?)
}

#[cfg(not(target_os = "linux"))]
fn run_kernel(_w: &Workload, _opts: &ExecOptions) -> Result<Run, ExecError> {
    Err(ExecError::NoKernel)
}

/// Warm-up runs per configuration [`run_plans`] makes: `opts.warmup`, or by
/// default 1 when repeating with the kernel among the configurations (the
/// model has no caches to settle).
pub fn warmup_runs(any_kernel: bool, opts: &ExecOptions) -> usize {
    opts.warmup
        .unwrap_or(usize::from(any_kernel && opts.repeat > 1))
}

/// All runs of one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigResult {
    pub config: RunConfig,
    pub workload: String,
    #[serde(skip)]
    pub runs: Vec<Run>,
    pub aggregate: Aggregate,
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
    let plans = configs
        .iter()
        .map(|c| Ok((c.clone(), load(name_or_path, c)?)))
        .collect::<Result<Vec<_>, ExecError>>()?;
    run_plans(&plans, opts, progress)
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
    let any_kernel = plans.iter().any(|(c, _)| c.backend == BackendKind::Kernel);
    let warmup = warmup_runs(any_kernel, opts);
    let total = (warmup + opts.repeat) * plans.len();
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); plans.len()];
    let mut done = 0;
    for round in 0..warmup + opts.repeat {
        for (i, (cfg, w)) in plans.iter().enumerate() {
            let run = run_once(w, cfg, opts)?;
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
        })
        .collect())
}
