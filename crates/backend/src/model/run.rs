//! Executing a plan on the model.

use super::ModelConfig;
use crate::latency::FineHist;
use mm::{
    AddressSpace, Advice as MmAdvice, Deferred, FaultAccess, FaultResult, MapKind as MmKind,
    MmapArgs, Prot as MmProt, ThreadCounters, ThreadCtx,
};
use mmu::{Asid, Cpu, FlushKind, Mmu, MmuStats};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;
use thiserror::Error;
use workload::plan::{self, Op, Workload};
use workload::result::{Counters, Mark, Run};

/// The one address space a workload runs in.
const ASID: Asid = 1;

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
    #[error("internal error: {0}")]
    Internal(String),
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

/// What a thread has published for marks.
#[derive(Default, Clone)]
struct Published {
    mm: ThreadCounters,
    mmu: MmuStats,
}

struct Shared<'a> {
    w: &'a Workload,
    space: AddressSpace,
    mmu: Arc<Mmu>,
    barrier: Gate,
    published: Vec<Mutex<Published>>,
    marks: Mutex<Vec<Mark>>,
    baseline: Counters,
    start: Instant,
}

/// Runs `w` on the model configured by `cfg`.
///
/// # Errors
/// [`ModelError`]: an operation the OS model refuses (with Linux's errno),
/// an access that would raise SIGSEGV, or out of memory.
pub fn run(w: &Workload, cfg: &ModelConfig) -> Result<Run, ModelError> {
    let space = AddressSpace::new(cfg.geometry.clone(), cfg.mm.clone())
        .map_err(|e| ModelError::Config(e.to_string()))?;
    let cpus = cfg.cpus.max(w.threads.len()).max(1);
    let mmu = Mmu::new(cfg.mmu.clone(), &cfg.geometry, cpus)
        .map_err(|e| ModelError::Config(e.to_string()))?;
    // Tables an operation unlinks are shot down before it releases the mmap
    // lock, as Linux does; otherwise another thread could refill the span
    // while its CPU's walk cache still points at the unlinked table.
    let flusher_mmu = mmu.clone();
    space.set_table_flusher(Box::new(move |cpu, flush| {
        let _ = flusher_mmu.shootdown_from(cpu, ASID, flush, FlushKind::LeavesAndTables);
    }));
    let mut shared = Shared {
        w,
        space,
        mmu,
        barrier: Gate::new(w.threads.len().max(1)),
        published: (0..w.threads.len())
            .map(|_| Mutex::new(Published::default()))
            .collect(),
        marks: Mutex::new(Vec::new()),
        baseline: Counters::default(),
        start: Instant::now(),
    };
    shared.baseline = shared.snapshot();
    shared.start = Instant::now();
    let sh = &shared;
    let results: Vec<Result<(), ModelError>> = std::thread::scope(|s| {
        let handles: Vec<_> = w
            .threads
            .iter()
            .map(|t| s.spawn(move || Worker::new(sh, t.tid).run_ops(&t.ops)))
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
    shared.mark("end", None);
    let marks = std::mem::take(&mut *lock(&shared.marks));
    let mut ctx = ThreadCtx::new();
    shared
        .space
        .exit(&mut ctx)
        .map_err(|e| ModelError::Internal(e.to_string()))?;
    Ok(Run { marks })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared<'_> {
    /// The process-wide counters now (not yet relative to the baseline).
    fn snapshot(&self) -> Counters {
        let mut mm = ThreadCounters::default();
        // Every thread publishes its CPU's statistics, so of the MMU's own
        // totals only the shootdowns made without a CPU (the table flusher,
        // see `run`) are added.
        let mut mmu = self.mmu.unowned_stats();
        for p in &self.published {
            let p = lock(p);
            mm.merge(&p.mm);
            mmu += p.mmu.clone();
        }
        let ctx = ThreadCtx {
            counters: mm,
            cpu: None,
        };
        let c = self.space.counters(&[&ctx]);
        let mut out = Counters::default();
        for (k, v) in c.to_pairs() {
            out.set(k, v);
        }
        for (k, v) in mmu.to_counters() {
            out.set(k, v);
        }
        // The model's tlb_shootdowns is what /proc/interrupts would count:
        // one per IPI received.
        out.set("tlb_shootdowns", out.get("ipis").unwrap_or(0));
        out.pt_pages = c.pt_pages().into_iter().collect();
        out
    }

    fn mark(&self, name: &str, latency: Option<&FineHist>) {
        let mut c = self.snapshot().since(&self.baseline);
        // The root table existed before the first op: keep the table pages
        // as absolute counts (they say what the tree holds).
        c.pt_pages = self.snapshot().pt_pages;
        c.set("elapsed_ns", self.start.elapsed().as_nanos() as i64);
        lock(&self.marks).push(Mark {
            name: name.to_string(),
            counters: c,
            latency: latency.filter(|h| h.count > 0).map(|h| h.to_result()),
        });
    }
}

struct Worker<'a, 'w> {
    sh: &'a Shared<'w>,
    tid: usize,
    cpu: Cpu,
    ctx: ThreadCtx,
    latency: Option<Box<FineHist>>,
    op_label: String,
}

impl<'a, 'w> Worker<'a, 'w> {
    fn new(sh: &'a Shared<'w>, tid: usize) -> Self {
        let cpu = tid % sh.mmu.cpus();
        let mut ctx = ThreadCtx::new();
        ctx.cpu = Some(cpu);
        Worker {
            sh,
            tid,
            cpu: sh.mmu.attach(cpu, ASID),
            ctx,
            latency: None,
            op_label: String::new(),
        }
    }

    fn publish(&mut self) {
        let mut p = lock(&self.sh.published[self.tid]);
        p.mm = self.ctx.counters.clone();
        p.mmu = self.cpu.stats().clone();
    }

    fn run_ops(mut self, ops: &[Op]) -> Result<(), ModelError> {
        let r = self.run_list(ops, "");
        self.publish();
        let _ = self.sh.mmu.reclaim_retired(self.sh.space.page_table());
        if r.is_err() {
            // The others may wait at a barrier this thread will never reach.
            self.sh.barrier.abort();
        }
        r
    }

    fn run_list(&mut self, ops: &[Op], prefix: &str) -> Result<(), ModelError> {
        for (i, op) in ops.iter().enumerate() {
            self.op_label = format!("op {prefix}{}", i + 1);
            self.run_op(op, &format!("{prefix}{}.", i + 1))?;
            self.publish();
        }
        Ok(())
    }

    fn region(&self, id: plan::RegionId) -> &plan::Region {
        &self.sh.w.regions[id]
    }

    fn syscall(&mut self, r: Result<Deferred, mm::Errno>, what: &str) -> Result<(), ModelError> {
        match r {
            Ok(d) => self.complete(d),
            Err(e) => {
                let d = self.sh.space.take_pending();
                self.complete(d)?;
                Err(ModelError::Op {
                    tid: self.tid,
                    op: format!("{} ({what})", self.op_label),
                    errno: e.to_string(),
                })
            }
        }
    }

    /// Shoots down what `d` changed, retires its tables to the MMU (freed
    /// once every CPU has caught up) and frees its frames.
    fn complete(&mut self, mut d: Deferred) -> Result<(), ModelError> {
        if d.is_empty() {
            return Ok(());
        }
        let pt = self.sh.space.page_table();
        let (flush, tables_too) = d.take_flush();
        if !flush.is_empty() {
            let kind = if tables_too {
                FlushKind::LeavesAndTables
            } else {
                FlushKind::Leaves
            };
            let _ = self.sh.mmu.shootdown(&mut self.cpu, ASID, &flush, kind);
        }
        flush.done();
        // The table flusher posted this CPU's own invalidation to its
        // mailbox: apply it now, as the initiating CPU of a Linux flush
        // invalidates its own TLB before returning.
        self.cpu.poll();
        let tables = std::mem::take(&mut d.tables);
        self.sh.mmu.retire_tables(pt, tables);
        d.complete(&self.sh.space)
            .map_err(|e| ModelError::Internal(e.to_string()))?;
        self.sh
            .mmu
            .reclaim_retired(pt)
            .map_err(|e| ModelError::Internal(e.to_string()))?;
        Ok(())
    }

    fn run_op(&mut self, op: &Op, prefix: &str) -> Result<(), ModelError> {
        let space = &self.sh.space;
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
                let res = space.mmap(&mut self.ctx, args);
                self.syscall(res, "mmap")
            }
            Op::Munmap { region, range } => {
                let a = self.region(*region).addr + range.offset;
                let res = space.munmap(&mut self.ctx, a, range.len);
                self.syscall(res, "munmap")
            }
            Op::Mprotect {
                region,
                range,
                prot: p,
            } => {
                let a = self.region(*region).addr + range.offset;
                let res = space.mprotect(&mut self.ctx, a, range.len, prot(*p));
                self.syscall(res, "mprotect")
            }
            Op::Madvise {
                region,
                range,
                advice,
            } => {
                let a = self.region(*region).addr + range.offset;
                let res = space.madvise(&mut self.ctx, a, range.len, advice_of(*advice));
                self.syscall(res, "madvise")
            }
            Op::Mlock { region, range } => {
                let a = self.region(*region).addr + range.offset;
                let res = space.mlock(&mut self.ctx, a, range.len);
                self.syscall(res, "mlock")
            }
            Op::Munlock { region, range } => {
                let a = self.region(*region).addr + range.offset;
                let res = space.munlock(&mut self.ctx, a, range.len);
                self.syscall(res, "munlock")
            }
            Op::Sync { region, range } => {
                let a = self.region(*region).addr + range.offset;
                let res = space.msync(&mut self.ctx, a, range.len);
                self.syscall(res, "msync")
            }
            Op::Touch(t) => self.touch(t),
            Op::Sleep(d) => {
                std::thread::sleep(*d);
                Ok(())
            }
            Op::Barrier => {
                self.publish();
                // A CPU waiting at a barrier runs nothing of this address
                // space, but stays attached (the thread is alive), so it
                // keeps receiving shootdowns, as an idle Linux thread would.
                if !self.sh.barrier.wait() {
                    return Err(ModelError::Aborted { tid: self.tid });
                }
                self.cpu.poll();
                Ok(())
            }
            Op::Mark(name) => {
                // Tables every CPU has let go of are freed before counting.
                self.cpu.poll();
                let _ = self.sh.mmu.reclaim_retired(self.sh.space.page_table());
                self.publish();
                let lat = self.latency.take();
                self.sh.mark(name, lat.as_deref());
                Ok(())
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
        let write = t.access == plan::Access::Write;
        let access = if write {
            FaultAccess::WRITE
        } else {
            FaultAccess::READ
        };
        if t.latency && self.latency.is_none() {
            self.latency = Some(FineHist::new());
        }
        // A random touch replays addresses known in advance: the walk of
        // the access `PREFETCH_AHEAD` later is prefetched, so that its
        // misses in the host's caches overlap with this access's work
        // (a hint to the host only: no model state changes).
        let mut ahead = (t.pattern == plan::Pattern::Random)
            .then(|| crate::touch::touch_offsets(t).skip(PREFETCH_AHEAD));
        for off in crate::touch::touch_offsets(t) {
            let va = base + off;
            if let Some(next) = ahead.as_mut().and_then(Iterator::next) {
                self.cpu.prefetch(self.sh.space.page_table(), base + next);
            }
            let started = t.latency.then(Instant::now);
            self.access(va, write, access)?;
            if let (Some(s), Some(h)) = (started, self.latency.as_mut()) {
                h.record(s.elapsed().as_nanos() as u64);
            }
        }
        Ok(())
    }

    /// One access: through the MMU, into the fault handler on a fault, and
    /// again, as the hardware retries the instruction.
    #[inline]
    fn access(&mut self, va: u64, write: bool, access: FaultAccess) -> Result<(), ModelError> {
        let pt = self.sh.space.page_table();
        // A fault is retried; a handler that keeps failing to make progress
        // is a bug in the model, not an endless loop.
        for _ in 0..64 {
            match self.cpu.access(pt, va, write, true) {
                Ok(_) => return Ok(()),
                Err(_) => match self.sh.space.fault(&mut self.ctx, va, access) {
                    FaultResult::Handled { deferred, .. } => self.complete(deferred)?,
                    FaultResult::Segv(code) => {
                        return Err(ModelError::Segv {
                            tid: self.tid,
                            va,
                            place: format!("{:?} in {}", code, self.op_label),
                        })
                    }
                    FaultResult::Oom => return Err(ModelError::Oom { tid: self.tid, va }),
                    FaultResult::Internal(e) => return Err(ModelError::Internal(e.to_string())),
                },
            }
        }
        Err(ModelError::Internal(format!(
            "the access to {va:#x} keeps faulting after the fault was handled"
        )))
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
