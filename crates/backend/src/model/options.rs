//! Options of one model run that are not the model's configuration: a time
//! limit and a progress report, both checked from inside long touches.

use super::ModelError;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use workload::plan::{Op, Workload};

/// Receives `(accesses done, accesses planned)` while a run goes on. It is
/// called from the run's worker threads, possibly from several at once,
/// with `done` counting every thread's accesses.
pub type ProgressFn = dyn Fn(u64, u64) + Send + Sync;

/// How many accesses of a touch run between two checks of the deadline and
/// two progress reports (a check reads the host clock).
pub const CHECK_EVERY: u64 = 4096;

/// How a model run may be stopped and watched.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// The run stops with [`ModelError::Timeout`] once this instant has
    /// passed: checked before each operation and every [`CHECK_EVERY`]
    /// accesses inside a touch.
    pub deadline: Option<Instant>,
    /// Called every [`CHECK_EVERY`] accesses of a touch and at its end.
    pub progress: Option<Arc<ProgressFn>>,
}

impl fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("deadline", &self.deadline)
            .field("progress", &self.progress.as_ref().map(|_| "Fn"))
            .finish()
    }
}

/// Accesses the plan makes: every touch's count, times its repeats.
pub fn planned_accesses(w: &Workload) -> u64 {
    fn of(ops: &[Op]) -> u64 {
        ops.iter().fold(0u64, |n, op| {
            n.saturating_add(match op {
                Op::Touch(t) => t.count,
                Op::Repeat { times, ops } => of(ops).saturating_mul(*times),
                _ => 0,
            })
        })
    }
    w.threads
        .iter()
        .fold(0u64, |n, t| n.saturating_add(of(&t.ops)))
}

/// The run's shared view of its options.
pub(super) struct Hooks<'a> {
    opts: &'a RunOptions,
    planned: u64,
    done: AtomicU64,
}

impl<'a> Hooks<'a> {
    pub(super) fn new(opts: &'a RunOptions, w: &Workload) -> Hooks<'a> {
        Hooks {
            opts,
            planned: planned_accesses(w),
            done: AtomicU64::new(0),
        }
    }

    /// Whether touches must count their accesses.
    #[inline]
    pub(super) fn active(&self) -> bool {
        self.opts.deadline.is_some() || self.opts.progress.is_some()
    }

    /// Stops the run if the deadline has passed.
    pub(super) fn check_deadline(&self) -> Result<(), ModelError> {
        match self.opts.deadline {
            Some(d) if Instant::now() >= d => Err(ModelError::Timeout {
                done: self.done.load(Ordering::Relaxed),
                planned: self.planned,
            }),
            _ => Ok(()),
        }
    }

    /// Counts `n` more accesses, reports progress and checks the deadline.
    #[cold]
    pub(super) fn advance(&self, n: u64) -> Result<(), ModelError> {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        if let Some(p) = &self.opts.progress {
            p(done, self.planned);
        }
        self.check_deadline()
    }
}
