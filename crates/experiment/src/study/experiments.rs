//! The experiments a question declares, and their results.
//!
//! A question lists its experiments before anything runs (a workload as TOML
//! text, the configurations, the repeats), so that the study knows how many
//! runs it will make from the declarations alone: the progress bar's total is
//! [`Experiment::runs`] summed, and the runner counts the runs it makes with
//! the same rule ([`crate::exec::warmup_runs`]).

use crate::config::{BackendKind, RunConfig};
use crate::exec::{self, ConfigResult, ExecOptions};
use std::time::Duration;

/// How long a run may take unless its experiment says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// One workload under one or more configurations.
#[derive(Debug, Clone)]
pub(crate) struct Experiment {
    /// What the progress bar and notes call it.
    pub what: String,
    /// The generated workload (the format users write).
    pub toml: String,
    pub configs: Vec<RunConfig>,
    /// Measured runs per configuration.
    pub repeat: usize,
    /// A run stops past this (120 s unless [`Experiment::timeout`] says).
    pub timeout: Duration,
}

impl Experiment {
    /// `toml` on the model under each configuration.
    pub(crate) fn model(what: &str, toml: String, configs: &[RunConfig], repeat: usize) -> Self {
        Experiment {
            what: what.into(),
            toml,
            configs: configs.to_vec(),
            repeat,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// `toml` on this machine's kernel. Should the machine refuse it, the
    /// section gets a note instead of a result.
    pub(crate) fn kernel(what: &str, toml: String, repeat: usize) -> Self {
        Experiment {
            what: what.into(),
            toml,
            configs: vec![RunConfig::kernel()],
            repeat,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same, each run stopped past `t` instead (the production case
    /// runs for minutes).
    pub(crate) fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Whether this runs on the kernel (and may be refused by this machine).
    pub(crate) fn on_kernel(&self) -> bool {
        self.configs
            .iter()
            .any(|c| c.backend == BackendKind::Kernel)
    }

    /// How it is run.
    pub(crate) fn options(&self) -> ExecOptions {
        ExecOptions {
            timeout: self.timeout,
            repeat: self.repeat,
            warmup: None,
        }
    }

    /// Runs it makes, warm-up runs included.
    pub(crate) fn runs(&self) -> usize {
        (exec::warmup_runs(&self.options()) + self.repeat) * self.configs.len()
    }
}

/// The results of a question's experiments, in the order it declared them.
pub(crate) struct Results {
    /// Per experiment: its configurations' results, or why the kernel
    /// refused it.
    pub(crate) outcomes: Vec<Result<Vec<ConfigResult>, String>>,
}

impl Results {
    /// The results of model experiment `i`, one per configuration.
    ///
    /// # Panics
    /// If experiment `i` was not run (only a kernel experiment can be
    /// refused; a model failure stops the study before its section).
    pub(crate) fn model(&self, i: usize) -> &[ConfigResult] {
        match &self.outcomes[i] {
            Ok(r) => r,
            Err(why) => panic!("model experiment {i} has no result: {why}"),
        }
    }

    /// The result of kernel experiment `i`, if this machine ran it.
    pub(crate) fn kernel(&self, i: usize) -> Option<&ConfigResult> {
        self.outcomes[i].as_ref().ok().and_then(|r| r.first())
    }
}
