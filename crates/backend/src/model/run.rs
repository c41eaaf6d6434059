//! Executing a plan on the model: a thin interpreter over the machine.
//!
//! [`run_with`] builds the machine and hands the plan to an executor:
//! `exec_virtual` (the default: every thread's modeled CPU on one host
//! thread, scheduled in virtual time, deterministic, with `predicted_ns`)
//! or `exec_threads` (one host thread per workload thread, for stress
//! tests of the concurrent model). Both map operations to the machine's
//! calls through `interp`, and take marks here. The order of shootdowns,
//! table retirement and reclaim is the machine's (`machine::order`), not
//! this module's.

use super::options::{Hooks, RunOptions};
use super::{Executor, ModelConfig};
use crate::latency::FineHist;
use machine::{Machine, MachineConfig, MachineError, SpaceId};
use std::sync::Mutex;
use std::time::Instant;
use thiserror::Error;
use timing::Ns3;
use workload::plan::Workload;
use workload::result::{Counters, Mark, Run};

/// Why a model run stopped.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ModelError {
    #[error("{0}")]
    Config(String),
    #[error("thread {tid}: {op}: {errno}")]
    Op {
        tid: usize,
        op: String,
        errno: String,
    },
    #[error("thread {tid}: SIGSEGV at {va:#x} ({place})")]
    Segv { tid: usize, va: u64, place: String },
    #[error("thread {tid}: out of memory faulting {va:#x} (VM_FAULT_OOM)")]
    Oom { tid: usize, va: u64 },
    #[error("thread {tid}: stopped because another thread failed")]
    Aborted { tid: usize },
    /// The run's deadline ([`RunOptions::deadline`]) passed.
    #[error("time limit reached after {done} of {planned} planned accesses")]
    Timeout { done: u64, planned: u64 },
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<MachineError> for ModelError {
    fn from(e: MachineError) -> ModelError {
        match e {
            MachineError::Config(s) => ModelError::Config(s),
            e => ModelError::Internal(e.to_string()),
        }
    }
}

/// How many accesses ahead a random touch prefetches its walk.
pub(super) const PREFETCH_AHEAD: usize = 8;

/// What the virtual-time executor predicts at a mark.
pub(crate) struct Prediction<'a> {
    /// The modeled time of the mark since the run's start.
    pub at: Ns3,
    /// Each workload thread's CPU and its clock.
    pub cpus: &'a [(usize, Ns3)],
    /// Lock waits so far, summed over CPUs.
    pub lock_wait: Ns3,
    /// Acquisitions that waited in virtual time so far.
    pub contended: u64,
    /// TLB shootdowns' time so far, senders' and receivers' parts summed
    /// over CPUs ([`super::pricing::Pricer::flush`]).
    pub flush: Ns3,
    /// Waits for the LRU lock so far, summed over CPUs.
    pub lru_wait: Ns3,
}

impl Prediction<'_> {
    /// Writes the prediction into a mark's counters: `predicted_ns` with
    /// its low and high ends, each CPU's clock, the lock waits.
    pub(crate) fn write(&self, c: &mut Counters) {
        let ns = |v: f64| v.round() as i64;
        c.set(counters::PREDICTED_NS.name, ns(self.at.ns));
        c.set(counters::PREDICTED_LO_NS.name, ns(self.at.lo));
        c.set(counters::PREDICTED_HI_NS.name, ns(self.at.hi));
        for (cpu, clock) in self.cpus {
            c.set(&format!("predicted_cpu{cpu}_ns"), ns(clock.ns));
        }
        c.set(counters::LOCK_WAIT_NS.name, ns(self.lock_wait.ns));
        c.set(counters::VIRTUAL_CONTENDED.name, self.contended as i64);
        // Only where there is something: the counters of a run without
        // shootdowns or LRU contention stay as they were.
        if self.flush.ns > 0.0 {
            c.set(counters::FLUSH_NS.name, ns(self.flush.ns));
        }
        if self.lru_wait.ns > 0.0 {
            c.set(counters::LRU_WAIT_NS.name, ns(self.lru_wait.ns));
        }
    }
}

/// What every executor shares: the plan, the machine, the run's hooks and
/// the marks taken so far.
pub(super) struct Shared<'a> {
    pub w: &'a Workload,
    pub cfg: &'a ModelConfig,
    pub machine: Machine,
    pub space: SpaceId,
    pub hooks: Hooks<'a>,
    marks: Mutex<Vec<Mark>>,
    baseline: Counters,
    start: Instant,
}

/// Runs `w` on the model configured by `cfg`, with no time limit.
///
/// # Errors
/// [`ModelError`]: an operation the OS model refuses (with Linux's errno),
/// an access that would raise SIGSEGV, or out of memory.
pub fn run(w: &Workload, cfg: &ModelConfig) -> Result<Run, ModelError> {
    run_with(w, cfg, &RunOptions::default())
}

/// Runs `w` on the model configured by `cfg`, stopped by `opts.deadline`
/// and reporting progress to `opts.progress`.
///
/// # Errors
/// As [`run`], and [`ModelError::Timeout`] once the deadline has passed.
pub fn run_with(w: &Workload, cfg: &ModelConfig, opts: &RunOptions) -> Result<Run, ModelError> {
    let machine = Machine::new(MachineConfig {
        geometry: cfg.geometry.clone(),
        mm: cfg.mm.clone(),
        mmu: cfg.mmu.clone(),
        cpus: cfg.cpus.max(w.threads.len()).max(1),
    })?;
    let space = machine.first_space();
    let mut shared = Shared {
        w,
        cfg,
        space,
        machine,
        hooks: Hooks::new(opts, w),
        marks: Mutex::new(Vec::new()),
        baseline: Counters::default(),
        start: Instant::now(),
    };
    shared.baseline = shared.snapshot()?;
    shared.start = Instant::now();
    let end = match cfg.executor {
        Executor::Virtual => Some(super::exec_virtual::run(&shared)?),
        Executor::Threads => {
            super::exec_threads::run(&shared)?;
            None
        }
    };
    match &end {
        Some(end) => shared.mark("end", None, Some(&end.prediction()))?,
        None => shared.mark("end", None, None)?,
    }
    let marks = std::mem::take(&mut *lock(&shared.marks));
    shared.machine.exit_space(shared.space)?;
    Ok(Run { marks })
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared<'_> {
    /// The process-wide counters now (not yet relative to the baseline).
    fn snapshot(&self) -> Result<Counters, ModelError> {
        self.snapshot_of(self.space)
    }

    /// The counters of address space `space` now (a fork's child).
    pub(super) fn snapshot_of(&self, space: SpaceId) -> Result<Counters, ModelError> {
        Ok(super::snapshot::counters(&self.machine, space)?)
    }

    /// A mark of a fork's child `space`: its counters since `base` (taken
    /// just after the fork), the table pages absolute.
    pub(super) fn mark_space(
        &self,
        name: &str,
        space: SpaceId,
        base: &Counters,
    ) -> Result<(), ModelError> {
        let m = self.space_mark(name, space, base)?;
        lock(&self.marks).push(m);
        Ok(())
    }

    /// The mark [`Shared::mark_space`] records, without recording it (a
    /// running child's marks are recorded when it is waited for).
    pub(super) fn space_mark(
        &self,
        name: &str,
        space: SpaceId,
        base: &Counters,
    ) -> Result<Mark, ModelError> {
        let now = self.snapshot_of(space)?;
        let mut c = now.since(base);
        c.pt_pages = now.pt_pages;
        c.set(
            counters::MODEL_WALL_NS.name,
            self.start.elapsed().as_nanos() as i64,
        );
        Ok(Mark {
            name: name.to_string(),
            counters: c,
            latency: None,
        })
    }

    /// Records marks taken earlier ([`Shared::space_mark`]), in order.
    pub(super) fn push_marks(&self, marks: Vec<Mark>) {
        lock(&self.marks).extend(marks);
    }

    pub(super) fn mark(
        &self,
        name: &str,
        latency: Option<&FineHist>,
        predicted: Option<&Prediction<'_>>,
    ) -> Result<(), ModelError> {
        let mut c = self.snapshot()?.since(&self.baseline);
        // The root table existed before the first op: keep the table pages
        // as absolute counts (they say what the tree holds).
        c.pt_pages = self.snapshot()?.pt_pages;
        // ptlab's own speed, under its own name: not a duration of the
        // modeled system, so nothing derives a time per fault from it.
        c.set(
            counters::MODEL_WALL_NS.name,
            self.start.elapsed().as_nanos() as i64,
        );
        if let Some(p) = predicted {
            p.write(&mut c);
        }
        lock(&self.marks).push(Mark {
            name: name.to_string(),
            counters: c,
            latency: latency.filter(|h| h.count > 0).map(|h| h.to_result()),
        });
        Ok(())
    }
}
