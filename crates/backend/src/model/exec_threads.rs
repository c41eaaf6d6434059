//! The real-thread executor (`executor = "threads"`): each workload thread
//! runs on a host thread driving its own modeled CPU, with a breakable
//! barrier. The interleaving is the host's, so it is not deterministic and
//! it predicts no time; it is kept for the stress tests of the concurrent
//! model (real threads racing on the page tables).

use super::interp;
use super::run::{lock, Shared};
use super::ModelError;
use crate::latency::FineHist;
use machine::{AccessKind, CpuHandle};
use std::sync::{Condvar, Mutex};
use std::time::Instant;
use workload::plan::{self, Op};

/// A barrier that a failing thread can break, so that the others stop
/// waiting for it (std's Barrier cannot be broken).
struct Gate {
    state: Mutex<(usize, u64, bool)>,
    cv: Condvar,
    n: usize,
}

impl Gate {
    fn new(n: usize) -> Gate {
        Gate {
            state: Mutex::new((0, 0, false)),
            cv: Condvar::new(),
            n,
        }
    }

    /// Waits for every thread; `false` if the run was aborted.
    fn wait(&self) -> bool {
        let mut st = lock(&self.state);
        if st.2 {
            return false;
        }
        st.0 += 1;
        if st.0 == self.n {
            st.0 = 0;
            st.1 += 1;
            self.cv.notify_all();
            return true;
        }
        let generation = st.1;
        while st.1 == generation && !st.2 {
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        !st.2
    }

    fn abort(&self) {
        lock(&self.state).2 = true;
        self.cv.notify_all();
    }
}

/// Runs every thread of the plan on its own host thread.
pub(super) fn run(sh: &Shared<'_>) -> Result<(), ModelError> {
    let w = sh.w;
    let barrier = Gate::new(w.threads.len().max(1));
    let barrier = &barrier;
    let results: Vec<Result<(), ModelError>> = std::thread::scope(|s| {
        let handles: Vec<_> = w
            .threads
            .iter()
            .map(|t| {
                s.spawn(move || {
                    // One CPU per thread: the machine has at least as many.
                    let r = match sh.machine.cpu(t.tid, sh.space) {
                        Ok(cpu) => {
                            let mut worker = Worker::new(sh, barrier, t.tid, cpu);
                            worker.run_list(&t.ops, "").and_then(|()| worker.reap())
                        }
                        Err(e) => Err(e.into()),
                    };
                    if r.is_err() {
                        // The others may wait at a barrier this thread will
                        // never reach.
                        barrier.abort();
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(ModelError::Internal("a model thread panicked".into())))
            })
            .collect()
    });
    // Report the thread that failed first, not one it stopped.
    if let Some(e) = results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .find(|e| !matches!(e, ModelError::Aborted { .. }))
    {
        return Err(e.clone());
    }
    results.into_iter().collect()
}

struct Worker<'a, 'w> {
    sh: &'a Shared<'w>,
    barrier: &'a Gate,
    tid: usize,
    cpu: CpuHandle<'a>,
    latency: Option<Box<FineHist>>,
    op_label: String,
    /// A child forked with `wait = false` and not yet waited for.
    child: Option<super::fork::Running<'w>>,
    /// The clock a running child's sleeps are timed by (this executor
    /// predicts no time: the wall clock).
    started: std::time::Instant,
}

impl<'a, 'w> Worker<'a, 'w> {
    fn new(sh: &'a Shared<'w>, barrier: &'a Gate, tid: usize, cpu: CpuHandle<'a>) -> Self {
        Worker {
            sh,
            barrier,
            tid,
            cpu,
            latency: None,
            op_label: String::new(),
            child: None,
            started: std::time::Instant::now(),
        }
    }

    fn now_ns(&self) -> f64 {
        self.started.elapsed().as_nanos() as f64
    }

    /// Waits for a child still running (the end of the thread's ops).
    fn reap(&mut self) -> Result<(), ModelError> {
        let Some(c) = self.child.take() else {
            return Ok(());
        };
        let now = self.now_ns();
        let exit = c.finish(self.sh, &mut self.cpu, self.tid, now)?;
        // Waits for what is left of the child's sleeps.
        let left = exit - self.now_ns();
        if left > 0.0 {
            self.cpu.set_running(false);
            std::thread::sleep(std::time::Duration::from_nanos(left as u64));
            self.cpu.set_running(true);
        }
        Ok(())
    }

    fn run_list(&mut self, ops: &'w [Op], prefix: &str) -> Result<(), ModelError> {
        for (i, op) in ops.iter().enumerate() {
            self.sh.hooks.check_deadline()?;
            self.op_label = format!("op {prefix}{}", i + 1);
            // A running child's next op comes before each of the parent's
            // (see `super::fork`).
            let now = self.now_ns();
            if let (Some(c), false) = (self.child.as_mut(), matches!(op, Op::Waitpid(_))) {
                c.step(self.sh, &mut self.cpu, self.tid, now)?;
            }
            self.run_op(op, &format!("{prefix}{}.", i + 1))?;
            self.cpu.publish();
        }
        Ok(())
    }

    fn run_op(&mut self, op: &'w Op, prefix: &str) -> Result<(), ModelError> {
        if let Some((r, what, _)) = interp::syscall(&mut self.cpu, self.sh.w, op) {
            return r.map_err(|e| interp::syscall_error(self.tid, &self.op_label, what, e));
        }
        match op {
            Op::Touch(t) => self.touch(t),
            Op::NodeOf(t) => {
                let base = self.sh.w.regions[t.region].addr;
                for off in crate::touch::touch_offsets(t) {
                    self.cpu.node_of(base + off).map_err(|e| {
                        interp::syscall_error(self.tid, &self.op_label, "get_mempolicy", e)
                    })?;
                }
                Ok(())
            }
            Op::Sleep(d) => {
                // Not running while it sleeps: a preempted vCPU's flushes
                // are deferred under the paravirtual flush.
                self.cpu.set_running(false);
                std::thread::sleep(*d);
                self.cpu.set_running(true);
                Ok(())
            }
            Op::Barrier => {
                self.cpu.publish();
                // A CPU waiting at a barrier runs nothing of this address
                // space, but stays attached (the thread is alive), so it
                // keeps receiving shootdowns, as an idle Linux thread would
                // (deferred instead under the paravirtual flush).
                self.cpu.set_running(false);
                let passed = self.barrier.wait();
                self.cpu.set_running(true);
                if !passed {
                    return Err(ModelError::Aborted { tid: self.tid });
                }
                self.cpu.poll();
                Ok(())
            }
            Op::Mark(name) => {
                // Tables every CPU has let go of are freed before counting.
                self.cpu.checkpoint()?;
                let lat = self.latency.take();
                self.sh.mark(name, lat.as_deref(), None)
            }
            Op::Repeat { times, ops } => {
                for _ in 0..*times {
                    self.run_list(ops, prefix)?;
                }
                Ok(())
            }
            Op::Fork {
                name,
                ops,
                wait: false,
            } => {
                let label = self.op_label.clone();
                let c = super::fork::start(self.sh, &mut self.cpu, self.tid, &label, name, ops)?;
                self.child = Some(c);
                Ok(())
            }
            Op::Waitpid(_) => self.reap(),
            Op::Fork { name, ops, .. } => {
                let label = self.op_label.clone();
                // The threads executor predicts no time: the child's faults
                // are not needed.
                super::fork::run_child(self.sh, &mut self.cpu, self.tid, &label, name, ops)
                    .map(|_| ())
            }
            _ => unreachable!("system calls are run above"),
        }
    }

    fn touch(&mut self, t: &plan::Touch) -> Result<(), ModelError> {
        let base = self.sh.w.regions[t.region].addr;
        let kind = if t.access == plan::Access::Write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        if t.latency && self.latency.is_none() {
            self.latency = Some(FineHist::new());
        }
        let hooks = self.sh.hooks.active();
        let mut unreported = 0;
        // A random touch replays addresses known in advance: the walk of
        // the access `PREFETCH_AHEAD` later is prefetched, so that its
        // misses in the host's caches overlap with this access's work
        // (a hint to the host only: no model state changes).
        let mut ahead = (t.pattern == plan::Pattern::Random)
            .then(|| crate::touch::touch_offsets(t).skip(super::run::PREFETCH_AHEAD));
        for off in crate::touch::touch_offsets(t) {
            let va = base + off;
            if let Some(next) = ahead.as_mut().and_then(Iterator::next) {
                self.cpu.prefetch(base + next);
            }
            let started = t.latency.then(Instant::now);
            if let Err(e) = self.cpu.access(va, kind) {
                return Err(interp::access_error(self.tid, &self.op_label, e));
            }
            if let (Some(s), Some(h)) = (started, self.latency.as_mut()) {
                h.record(s.elapsed().as_nanos() as u64);
            }
            if hooks {
                unreported += 1;
                if unreported == super::options::CHECK_EVERY {
                    self.sh.hooks.advance(unreported)?;
                    unreported = 0;
                }
            }
        }
        if hooks {
            self.sh.hooks.advance(unreported)?;
        }
        Ok(())
    }
}
