//! Executing a plan on the model: a thin interpreter over the machine.
//!
//! Each workload thread runs on a real thread driving its own modeled CPU
//! through a [`CpuHandle`]; this module maps the plan's operations to the
//! machine's calls, runs the breakable barrier, takes marks with the
//! latency histogram, checks the time limit and reports progress. The order
//! of shootdowns, table retirement and reclaim is the machine's
//! (`machine::order`), not this module's.

use super::options::{Hooks, RunOptions};
use super::ModelConfig;
use crate::latency::FineHist;
use machine::{
    AccessError, AccessKind, CpuHandle, Machine, MachineConfig, MachineError, SpaceId, SyscallError,
};
use machine::{Advice as MmAdvice, MapKind as MmKind, MmapArgs, Prot as MmProt};
use std::sync::{Condvar, Mutex};
use std::time::Instant;
use thiserror::Error;
use workload::plan::{self, Op, Workload};
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

struct Shared<'a> {
    w: &'a Workload,
    machine: Machine,
    space: SpaceId,
    barrier: Gate,
    hooks: Hooks<'a>,
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
        space,
        machine,
        barrier: Gate::new(w.threads.len().max(1)),
        hooks: Hooks::new(opts, w),
        marks: Mutex::new(Vec::new()),
        baseline: Counters::default(),
        start: Instant::now(),
    };
    shared.baseline = shared.snapshot()?;
    shared.start = Instant::now();
    let sh = &shared;
    let results: Vec<Result<(), ModelError>> = std::thread::scope(|s| {
        let handles: Vec<_> = w
            .threads
            .iter()
            .map(|t| {
                s.spawn(move || {
                    // One CPU per thread: the machine has at least as many.
                    let r = match sh.machine.cpu(t.tid, sh.space) {
                        Ok(cpu) => Worker::new(sh, t.tid, cpu).run_list(&t.ops, ""),
                        Err(e) => Err(e.into()),
                    };
                    if r.is_err() {
                        // The others may wait at a barrier this thread will
                        // never reach.
                        sh.barrier.abort();
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
    for r in results {
        r?;
    }
    shared.mark("end", None)?;
    let marks = std::mem::take(&mut *lock(&shared.marks));
    shared.machine.exit_space(shared.space)?;
    Ok(Run { marks })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared<'_> {
    /// The process-wide counters now (not yet relative to the baseline).
    fn snapshot(&self) -> Result<Counters, ModelError> {
        let snap = self.machine.snapshot(self.space)?;
        let mut out = Counters::default();
        for (k, v) in snap.mm.to_pairs() {
            out.set(k, v);
        }
        for (k, v) in snap.mmu.to_counters() {
            out.set(k, v);
        }
        // The model's tlb_shootdowns is what /proc/interrupts would count:
        // one per IPI received.
        out.set(
            counters::TLB_SHOOTDOWNS.name,
            out.get(counters::IPIS.name).unwrap_or(0),
        );
        out.pt_pages = snap.mm.pt_pages().into_iter().collect();
        Ok(out)
    }

    fn mark(&self, name: &str, latency: Option<&FineHist>) -> Result<(), ModelError> {
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
        lock(&self.marks).push(Mark {
            name: name.to_string(),
            counters: c,
            latency: latency.filter(|h| h.count > 0).map(|h| h.to_result()),
        });
        Ok(())
    }
}

struct Worker<'a, 'w> {
    sh: &'a Shared<'w>,
    tid: usize,
    cpu: CpuHandle<'a>,
    latency: Option<Box<FineHist>>,
    op_label: String,
}

impl<'a, 'w> Worker<'a, 'w> {
    fn new(sh: &'a Shared<'w>, tid: usize, cpu: CpuHandle<'a>) -> Self {
        Worker {
            sh,
            tid,
            cpu,
            latency: None,
            op_label: String::new(),
        }
    }

    fn run_list(&mut self, ops: &[Op], prefix: &str) -> Result<(), ModelError> {
        for (i, op) in ops.iter().enumerate() {
            self.sh.hooks.check_deadline()?;
            self.op_label = format!("op {prefix}{}", i + 1);
            self.run_op(op, &format!("{prefix}{}.", i + 1))?;
            self.cpu.publish();
        }
        Ok(())
    }

    fn region(&self, id: plan::RegionId) -> &plan::Region {
        &self.sh.w.regions[id]
    }

    fn syscall(&self, r: Result<(), SyscallError>, what: &str) -> Result<(), ModelError> {
        r.map_err(|e| match e {
            SyscallError::Errno(e) => ModelError::Op {
                tid: self.tid,
                op: format!("{} ({what})", self.op_label),
                errno: e.to_string(),
            },
            SyscallError::Internal(s) => ModelError::Internal(s),
        })
    }

    fn run_op(&mut self, op: &Op, prefix: &str) -> Result<(), ModelError> {
        match op {
            Op::Mmap(m) => {
                let r = self.region(m.region);
                let args = MmapArgs {
                    addr: r.addr,
                    len: m.size,
                    kind: match m.kind {
                        plan::MapKind::Anon => MmKind::Anon,
                        plan::MapKind::File => MmKind::File {
                            cached: m.file == plan::FileState::Cached,
                        },
                        plan::MapKind::Shmem => MmKind::Shmem,
                    },
                    shared: m.shared || m.kind == plan::MapKind::Shmem,
                    prot: prot(m.prot),
                    populate: m.populate,
                    locked: m.locked,
                    replace: false,
                };
                let res = self.cpu.mmap(args);
                self.syscall(res, "mmap")
            }
            Op::Munmap { region, range } => {
                let a = self.region(*region).addr + range.offset;
                let res = self.cpu.munmap(a, range.len);
                self.syscall(res, "munmap")
            }
            Op::Mprotect {
                region,
                range,
                prot: p,
            } => {
                let a = self.region(*region).addr + range.offset;
                let res = self.cpu.mprotect(a, range.len, prot(*p));
                self.syscall(res, "mprotect")
            }
            Op::Madvise {
                region,
                range,
                advice,
            } => {
                let a = self.region(*region).addr + range.offset;
                let res = self.cpu.madvise(a, range.len, advice_of(*advice));
                self.syscall(res, "madvise")
            }
            Op::Mlock { region, range } => {
                let a = self.region(*region).addr + range.offset;
                let res = self.cpu.mlock(a, range.len);
                self.syscall(res, "mlock")
            }
            Op::Munlock { region, range } => {
                let a = self.region(*region).addr + range.offset;
                let res = self.cpu.munlock(a, range.len);
                self.syscall(res, "munlock")
            }
            Op::Sync { region, range } => {
                let a = self.region(*region).addr + range.offset;
                let res = self.cpu.msync(a, range.len);
                self.syscall(res, "msync")
            }
            Op::Touch(t) => self.touch(t),
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
                // keeps receiving shootdowns, as an idle Linux thread would.
                self.cpu.set_running(false);
                let passed = self.sh.barrier.wait();
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
                self.sh.mark(name, lat.as_deref())
            }
            Op::Repeat { times, ops } => {
                for _ in 0..*times {
                    self.run_list(ops, prefix)?;
                }
                Ok(())
            }
        }
    }

    fn touch(&mut self, t: &plan::Touch) -> Result<(), ModelError> {
        let base = self.region(t.region).addr;
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
            .then(|| crate::touch::touch_offsets(t).skip(PREFETCH_AHEAD));
        for off in crate::touch::touch_offsets(t) {
            let va = base + off;
            if let Some(next) = ahead.as_mut().and_then(Iterator::next) {
                self.cpu.prefetch(base + next);
            }
            let started = t.latency.then(Instant::now);
            self.access(va, kind)?;
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

    /// One access through the machine, its errors named for this thread.
    #[inline]
    fn access(&mut self, va: u64, kind: AccessKind) -> Result<(), ModelError> {
        match self.cpu.access(va, kind) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.access_error(e)),
        }
    }

    #[cold]
    fn access_error(&self, e: AccessError) -> ModelError {
        match e {
            AccessError::Segv { va, code } => ModelError::Segv {
                tid: self.tid,
                va,
                place: format!("{:?} in {}", code, self.op_label),
            },
            AccessError::Oom { va } => ModelError::Oom { tid: self.tid, va },
            AccessError::Internal(s) => ModelError::Internal(s),
        }
    }
}

/// How many accesses ahead a random touch prefetches its walk.
const PREFETCH_AHEAD: usize = 8;

fn prot(p: plan::Prot) -> MmProt {
    match p {
        plan::Prot::None => MmProt::NONE,
        plan::Prot::R => MmProt::R,
        plan::Prot::Rw => MmProt::RW,
        plan::Prot::Rx => MmProt {
            read: true,
            write: false,
            exec: true,
        },
        plan::Prot::Rwx => MmProt {
            read: true,
            write: true,
            exec: true,
        },
    }
}

fn advice_of(a: plan::Advice) -> MmAdvice {
    match a {
        plan::Advice::DontNeed => MmAdvice::DontNeed,
        plan::Advice::Free => MmAdvice::Free,
        plan::Advice::HugePage => MmAdvice::HugePage,
        plan::Advice::NoHugePage => MmAdvice::NoHugePage,
        plan::Advice::PopulateRead => MmAdvice::PopulateRead,
        plan::Advice::PopulateWrite => MmAdvice::PopulateWrite,
        plan::Advice::WillNeed => MmAdvice::WillNeed,
        plan::Advice::PageOut => MmAdvice::PageOut,
    }
}
