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
    /// A recorded trace replayed instead of `toml` (`study --trace`).
    pub trace: Option<std::path::PathBuf>,
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
            trace: None,
        }
    }

    /// The recorded trace at `path` replayed on the model under each
    /// configuration, once (replay is deterministic).
    pub(crate) fn trace(what: &str, path: &std::path::Path, configs: &[RunConfig]) -> Self {
        Experiment {
            trace: Some(path.to_path_buf()),
            ..Experiment::model(what, String::new(), configs, 1)
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
            trace: None,
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
            pin_threads: false,
        }
    }

    /// Runs it makes, warm-up runs included.
    pub(crate) fn runs(&self) -> usize {
        (exec::warmup_runs(&self.options()) + self.repeat) * self.configs.len()
    }
}

/// A model experiment's results, as its declaration returned it: a section
/// reads `r.model(runs.gups)`, never an index it counts itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelRun(usize);

impl ModelRun {
    /// The handle of the `i`-th declared experiment (tests of a plan).
    #[cfg(test)]
    pub(crate) fn at(i: usize) -> ModelRun {
        ModelRun(i)
    }
}

/// A kernel experiment's result (absent when this machine refused it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KernelRun(usize);

/// This host's fingerprint, declared as an input of a section: the runner
/// reads it once the question's experiments have run, before the section is
/// made, so that making the section reads nothing of the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint(usize);

/// This host's audit, declared as an input (see [`Fingerprint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Audit(usize);

/// The study's cost file (`--costs`, else the default), declared as an
/// input (a section that prices a part of its own with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Costs(usize);

/// A fact of the host a section reads, as declared.
#[derive(Debug, Clone)]
pub(crate) enum HostInput {
    Fingerprint,
    Audit(host::AuditOptions),
    Costs,
}

/// A fact of the host as the runner read it.
#[derive(Debug, Clone)]
pub(crate) enum HostFact {
    Fingerprint(host::Fingerprint),
    Audit(host::Audit),
    Costs(Box<timing::CostModel>),
}

impl HostInput {
    /// Reads it on this host; `costs` is the study's cost file (`None`:
    /// the process's default, as the model runs use).
    pub(crate) fn read(&self, costs: Option<&str>) -> Result<HostFact, String> {
        Ok(match self {
            HostInput::Fingerprint => HostFact::Fingerprint(host::Fingerprint::read()),
            HostInput::Audit(o) => HostFact::Audit(host::audit_with(o)),
            HostInput::Costs => {
                HostFact::Costs(Box::new(match costs.or(backend::model::default_costs()) {
                    Some(c) => backend::model::load_costs(c)?,
                    None => timing::CostModel::shipped(),
                }))
            }
        })
    }
}

/// What a question declares before anything runs: its experiments, in
/// order, and the host facts its section reads. Each declaration returns
/// the handle the section reads its result with.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub(crate) experiments: Vec<Experiment>,
    pub(crate) inputs: Vec<HostInput>,
}

impl Plan {
    /// Declares a model experiment.
    pub(crate) fn model(&mut self, e: Experiment) -> ModelRun {
        debug_assert!(!e.on_kernel(), "{}: a kernel experiment", e.what);
        self.experiments.push(e);
        ModelRun(self.experiments.len() - 1)
    }

    /// Declares a kernel experiment.
    pub(crate) fn kernel(&mut self, e: Experiment) -> KernelRun {
        debug_assert!(e.on_kernel(), "{}: not a kernel experiment", e.what);
        self.experiments.push(e);
        KernelRun(self.experiments.len() - 1)
    }

    /// Declares that the section reads this host's fingerprint.
    pub(crate) fn fingerprint(&mut self) -> Fingerprint {
        self.inputs.push(HostInput::Fingerprint);
        Fingerprint(self.inputs.len() - 1)
    }

    /// Declares that the section reads the study's cost file.
    pub(crate) fn costs(&mut self) -> Costs {
        self.inputs.push(HostInput::Costs);
        Costs(self.inputs.len() - 1)
    }

    /// Declares that the section reads this host's audit, made with `o`.
    pub(crate) fn audit(&mut self, o: host::AuditOptions) -> Audit {
        self.inputs.push(HostInput::Audit(o));
        Audit(self.inputs.len() - 1)
    }
}

/// A question's declaration: its plan, filled, and the handles it returned.
/// Declaring is pure (the same options give the same plan), so the runner
/// and the section each make it and agree on every handle.
pub(crate) fn declared<H>(
    o: super::StudyOptions,
    f: fn(super::StudyOptions, &mut Plan) -> H,
) -> (Plan, H) {
    let mut plan = Plan::default();
    let handles = f(o, &mut plan);
    (plan, handles)
}

/// The results of a question's experiments, in the order it declared them,
/// and the host facts it declared.
pub(crate) struct Results {
    /// Per experiment: its configurations' results, or why the kernel
    /// refused it.
    pub(crate) outcomes: Vec<Result<Vec<ConfigResult>, String>>,
    /// Per declared input: the fact as read.
    pub(crate) facts: Vec<HostFact>,
}

impl Results {
    /// The results of a model experiment, one per configuration.
    ///
    /// # Panics
    /// If it was not run (only a kernel experiment can be refused; a model
    /// failure stops the study before its section).
    pub(crate) fn model(&self, h: ModelRun) -> &[ConfigResult] {
        match &self.outcomes[h.0] {
            Ok(r) => r,
            Err(why) => panic!("model experiment {} has no result: {why}", h.0),
        }
    }

    /// The result of a kernel experiment, if this machine ran it.
    pub(crate) fn kernel(&self, h: KernelRun) -> Option<&ConfigResult> {
        self.outcomes[h.0].as_ref().ok().and_then(|r| r.first())
    }

    /// The host's fingerprint, as read for the section.
    pub(crate) fn fingerprint(&self, h: Fingerprint) -> &host::Fingerprint {
        match &self.facts[h.0] {
            HostFact::Fingerprint(f) => f,
            _ => unreachable!("input {} is not a fingerprint", h.0),
        }
    }

    /// The study's cost file, as read for the section.
    pub(crate) fn costs(&self, h: Costs) -> &timing::CostModel {
        match &self.facts[h.0] {
            HostFact::Costs(c) => c,
            _ => unreachable!("input {} is not the cost file", h.0),
        }
    }

    /// The host's audit, as read for the section.
    pub(crate) fn audit(&self, h: Audit) -> &host::Audit {
        match &self.facts[h.0] {
            HostFact::Audit(a) => a,
            _ => unreachable!("input {} is not an audit", h.0),
        }
    }
}
