//! The virtual-time executor (the default): every workload thread's
//! modeled CPU runs on this one host thread, each with a virtual clock
//! advanced by the cost model ([`timing::CostModel`]), and a deterministic
//! discrete-event loop decides who runs next. 1, 8, 64 or 80 modeled CPUs
//! give the same counters and the same `predicted_ns` on any host, every
//! time, whatever the host's load.
//!
//! ## The schedule
//! - The loop steps the ready CPU with the smallest clock (ties: the first
//!   thread of the plan). A thread's operations are a resumable cursor: a
//!   stack of (operations, next index, repeats left) plus the iterator of
//!   the touch in progress.
//! - Accesses that complete without a fault touch only the CPU's own TLBs:
//!   a CPU runs through them until its clock passes the next CPU's clock by
//!   [`QUANTUM_NS`] (so events of different CPUs may be placed up to one
//!   quantum out of order: the price of running hits in batches).
//! - A fault or a system call touches shared state: it is one event, after
//!   which the loop picks again. Its cost is placed by
//!   [`timing::VirtualLocks`] with the locks the OS model logged for it, so
//!   waiting for a lock held by another CPU happens in virtual time.
//! - A shootdown costs its sender `shootdown.sender` (or `tlb.flush_local`
//!   when no other CPU runs the space) inside the event, and each CPU that
//!   received an IPI `shootdown.receiver`, added to its clock at the
//!   sender's event (it is interrupted, whatever it was doing; a CPU whose
//!   thread has finished is idle and pays nothing).
//! - A barrier holds a CPU until every thread that has not finished has
//!   arrived; then every clock jumps to the latest arrival. `sleep` advances
//!   the clock (no host sleep).
//! - A mark's `predicted_ns` is the marking CPU's clock (after a barrier,
//!   the makespan so far); the end mark's is the makespan (the latest
//!   clock). Latency histograms hold each access's modeled cost.
//!
//! Counters of a multi-thread run (faults, RSS, VmPTE, tables) are those of
//! the real-thread executor; the host-level `lock_contended` is 0 here (one
//! host thread never finds a lock held) and the virtual contention is
//! `virtual_contended`.

use super::ahead::{Ahead, STAGES};
use super::interp;
use super::pricing::{self, Charge, Populated, Pricer, Usage};
use super::run::{Prediction, Shared, PREFETCH_AHEAD};
use super::ModelError;
use crate::latency::FineHist;
use machine::{AccessKind, CpuHandle};
use mmu::HitLevel;
use pt::table::PrefetchStage;
use timing::{CostModel, Ns3, SyscallKind, TableLines};
use workload::plan::{self, Op};

/// How far (ns of virtual time) a CPU may run ahead of the next one through
/// accesses that do not fault.
pub const QUANTUM_NS: f64 = 1000.0;

/// What the run predicted at its end.
pub(super) struct End {
    makespan: Ns3,
    cpus: Vec<(usize, Ns3)>,
    wait: Ns3,
    contended: u64,
    flush: Ns3,
    lru_wait: Ns3,
}

impl End {
    pub(super) fn prediction(&self) -> Prediction<'_> {
        Prediction {
            at: self.makespan,
            cpus: &self.cpus,
            lock_wait: self.wait,
            contended: self.contended,
            flush: self.flush,
            lru_wait: self.lru_wait,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ready,
    Barrier,
    Done,
}

/// One level of a thread's cursor: a list of operations being run.
struct Frame<'w> {
    ops: &'w [Op],
    next: usize,
    /// Runs of the list left, this one included.
    left: u64,
    /// The label prefix of its operations ("3." inside op 3's repeat).
    prefix: String,
}

/// A touch in progress.
struct Touching<'w> {
    /// The offsets, each with those read ahead for a random touch (whose
    /// walks the host is asked to prefetch, in stages).
    offsets: Offsets<'w>,
    base: u64,
    kind: AccessKind,
    /// A `node_of`: each point is a get_mempolicy call (one event), not
    /// an access.
    lookup: bool,
}

/// A touch's offsets: in order, or read ahead for prefetching ([`Ahead`]).
enum Offsets<'w> {
    Plain(Box<dyn Iterator<Item = u64> + 'w>),
    Ahead(Box<Ahead<Box<dyn Iterator<Item = u64> + 'w>>>),
}

impl Offsets<'_> {
    /// The next offset.
    #[inline]
    fn next(&mut self) -> Option<u64> {
        match self {
            Offsets::Plain(i) => i.next(),
            Offsets::Ahead(a) => a.next(),
        }
    }
}

/// The prefetch stage of the offset `(k + 1) x PREFETCH_AHEAD` accesses
/// ahead ([`Ahead`]): the nearest gets its leaf word, the farther its leaf
/// table's bias word.
const STAGE_OF: [PrefetchStage; STAGES] = [PrefetchStage::Word, PrefetchStage::Bias];

/// One workload thread on its modeled CPU.
struct Vcpu<'m, 'w> {
    tid: usize,
    cpu: CpuHandle<'m>,
    clock: Ns3,
    state: State,
    stack: Vec<Frame<'w>>,
    touch: Option<Touching<'w>>,
    latency: Option<Box<FineHist>>,
    op_label: String,
    /// Faults by kind and pages read as of the last event, to price the
    /// next by difference.
    seen: pricing::Priced,
    unreported: u64,
    /// The last-level table lines this CPU's caches hold.
    lines: TableLines,
    /// Whether its last access hit the first-level TLB: the next one's
    /// prefetch (a host hint only) is skipped then, as an access that
    /// hits reads no table and one that follows hits most likely does too.
    last_hit_l1: bool,
    /// A child forked with `wait = false` and not yet waited for.
    child: Option<super::fork::Running<'w>>,
}

/// How a step ended.
enum Stepped {
    /// The CPU's clock passed the limit, or it ran an event: pick again.
    Yield,
    /// The touch in progress has no accesses left.
    TouchDone,
}

/// The run's shared virtual-time state.
struct Exec<'s, 'w> {
    sh: &'s Shared<'w>,
    costs: &'s CostModel,
    pricer: Pricer<'s>,
    /// The vcpu running each CPU.
    by_cpu: Vec<Option<usize>>,
    hooks: bool,
}

/// Runs the plan in virtual time (see the module documentation).
pub(super) fn run(sh: &Shared<'_>) -> Result<End, ModelError> {
    let w = sh.w;
    let mut vcpus = Vec::with_capacity(w.threads.len());
    let mut by_cpu = vec![None; sh.machine.cpus()];
    for (i, t) in w.threads.iter().enumerate() {
        let mut cpu = sh.machine.cpu(t.tid, sh.space)?;
        cpu.keep_lock_log(true);
        by_cpu[t.tid] = Some(i);
        vcpus.push(Vcpu {
            tid: t.tid,
            seen: pricing::Priced::of(cpu.thread_counters()),
            cpu,
            clock: Ns3::ZERO,
            state: State::Ready,
            stack: vec![Frame {
                ops: &t.ops,
                next: 0,
                left: 1,
                prefix: String::new(),
            }],
            touch: None,
            latency: None,
            op_label: String::new(),
            unreported: 0,
            lines: TableLines::new(sh.cfg.geometry.page_size()),
            last_hit_l1: false,
            child: None,
        });
    }
    let pricer = Pricer::new(
        &sh.cfg.costs,
        &sh.machine,
        sh.cfg.geometry.page_size(),
        pricing::huge_size(&sh.cfg.geometry),
    )
    .with_handler_walk(&sh.cfg.geometry)
    .with_space(&sh.machine, sh.space)
    .with_lru_drain(sh.cfg.mm.lru_drain);
    let mut ex = Exec {
        sh,
        costs: &sh.cfg.costs,
        // One thread: one CPU places every event, in order.
        pricer: if vcpus.len() == 1 {
            pricer.one_cpu()
        } else {
            pricer
        },
        by_cpu,
        hooks: sh.hooks.active(),
    };
    loop {
        match pick(&vcpus) {
            Some((i, next)) => ex.step(&mut vcpus, i, next + QUANTUM_NS)?,
            None if vcpus.iter().all(|v| v.state == State::Done) => break,
            None => release_barrier(&mut vcpus),
        }
    }
    for v in &mut vcpus {
        v.cpu.publish();
        if ex.hooks && v.unreported > 0 {
            sh.hooks.advance(std::mem::take(&mut v.unreported))?;
        }
    }
    let makespan = vcpus.iter().fold(Ns3::ZERO, |m, v| m.max(v.clock));
    Ok(End {
        makespan,
        cpus: vcpus.iter().map(|v| (v.tid, v.clock)).collect(),
        wait: ex.pricer.wait,
        contended: ex.pricer.contended,
        flush: ex.pricer.flush,
        lru_wait: ex.pricer.lru_wait(),
    })
}

/// The ready CPU to step (smallest clock, then first in the plan) and the
/// clock of the next one (infinite if it is alone).
fn pick(vcpus: &[Vcpu<'_, '_>]) -> Option<(usize, f64)> {
    let mut best: Option<usize> = None;
    let mut next = f64::INFINITY;
    for (i, v) in vcpus.iter().enumerate() {
        if v.state != State::Ready {
            continue;
        }
        match best {
            Some(b) if v.clock.ns < vcpus[b].clock.ns => {
                next = next.min(vcpus[b].clock.ns);
                best = Some(i);
            }
            Some(_) => next = next.min(v.clock.ns),
            None => best = Some(i),
        }
    }
    best.map(|b| (b, next))
}

/// Every thread that has not finished waits at a barrier: all go on from
/// the latest arrival, having taken their IPIs.
fn release_barrier(vcpus: &mut [Vcpu<'_, '_>]) {
    let waiting = || vcpus.iter().filter(|v| v.state == State::Barrier);
    let t = waiting().fold(Ns3::ZERO, |m, v| m.max(v.clock));
    for v in vcpus.iter_mut().filter(|v| v.state == State::Barrier) {
        v.clock = t;
        v.cpu.set_running(true);
        v.cpu.poll();
        v.state = State::Ready;
    }
}

impl<'m, 'w> Vcpu<'m, 'w> {
    /// The next operation of the cursor, with its label and the prefix of
    /// its children; `None` when the thread has run every one.
    fn next_op(&mut self) -> Option<(&'w Op, String)> {
        loop {
            let f = self.stack.last_mut()?;
            if f.next < f.ops.len() {
                let ops: &'w [Op] = f.ops;
                let i = f.next;
                f.next += 1;
                return Some((&ops[i], format!("{}{}", f.prefix, i + 1)));
            }
            f.left -= 1;
            if f.left > 0 {
                f.next = 0;
            } else {
                self.stack.pop();
            }
        }
    }
}

impl<'w> Touching<'w> {
    /// The accesses of touch `t` of the region at `base`; a random pattern's
    /// offsets are computed ahead of the accesses.
    fn of(t: &'w plan::Touch, base: u64) -> Touching<'w> {
        let plain = Box::new(crate::touch::touch_offsets(t)) as Box<dyn Iterator<Item = u64> + 'w>;
        let offsets = if t.pattern == plan::Pattern::Random {
            Offsets::Ahead(Box::new(Ahead::new(plain)))
        } else {
            Offsets::Plain(plain)
        };
        Touching {
            offsets,
            base,
            kind: if t.access == plan::Access::Write {
                AccessKind::Write
            } else {
                AccessKind::Read
            },
            lookup: false,
        }
    }
}

impl<'s, 'w> Exec<'s, 'w> {
    /// Runs CPU `i` until its clock passes `limit`, it runs an event, waits
    /// at a barrier or finishes.
    fn step(&mut self, vcpus: &mut [Vcpu<'s, 'w>], i: usize, limit: f64) -> Result<(), ModelError> {
        loop {
            if vcpus[i].touch.is_some() {
                match self.touch(&mut vcpus[i], limit)? {
                    Stepped::Yield => {
                        self.charge_receivers(vcpus);
                        return Ok(());
                    }
                    Stepped::TouchDone => {
                        let v = &mut vcpus[i];
                        v.touch = None;
                        v.cpu.publish();
                        // Progress is reported at the end of every touch too.
                        if self.hooks {
                            self.sh.hooks.advance(std::mem::take(&mut v.unreported))?;
                        }
                        if v.clock.ns > limit {
                            return Ok(());
                        }
                    }
                }
            }
            let v = &mut vcpus[i];
            let Some((op, label)) = v.next_op() else {
                // A child still running is waited for at the end.
                if let Some(c) = v.child.take() {
                    let exit = c.finish(self.sh, &mut v.cpu, v.tid, v.clock.ns)?;
                    wait_for_child(v, exit);
                }
                v.state = State::Done;
                v.cpu.publish();
                return Ok(());
            };
            self.sh.hooks.check_deadline()?;
            v.op_label = format!("op {label}");
            // A running child's next op comes before each of the parent's
            // (see `super::fork`).
            if let (Some(c), false) = (v.child.as_mut(), matches!(op, Op::Waitpid(_))) {
                c.step(self.sh, &mut v.cpu, v.tid, v.clock.ns)?;
            }
            if let Some(r) = self.syscall(v, op) {
                r?;
                v.cpu.publish();
                self.charge_receivers(vcpus);
                return Ok(());
            }
            match op {
                Op::Touch(t) => {
                    if t.latency && v.latency.is_none() {
                        v.latency = Some(FineHist::new());
                    }
                    v.touch = Some(Touching::of(t, self.sh.w.regions[t.region].addr));
                }
                Op::NodeOf(t) => {
                    v.touch = Some(Touching {
                        offsets: Offsets::Plain(Box::new(crate::touch::touch_offsets(t))),
                        base: self.sh.w.regions[t.region].addr,
                        kind: AccessKind::Read,
                        lookup: true,
                    });
                }
                Op::Sleep(d) => {
                    v.clock += Ns3::same(d.as_nanos() as f64);
                    v.cpu.publish();
                    if v.clock.ns > limit {
                        return Ok(());
                    }
                }
                Op::Barrier => {
                    v.cpu.publish();
                    // Not running while it waits: under the paravirtual
                    // flush its invalidations are deferred to its release.
                    v.cpu.set_running(false);
                    v.state = State::Barrier;
                    return Ok(());
                }
                Op::Mark(name) => {
                    // Tables every CPU has let go of are freed before counting.
                    v.cpu.checkpoint()?;
                    let lat = v.latency.take();
                    let at = v.clock;
                    // The mark sees every CPU's clock as of now.
                    let cpus: Vec<(usize, Ns3)> = vcpus.iter().map(|v| (v.tid, v.clock)).collect();
                    let p = Prediction {
                        at,
                        cpus: &cpus,
                        lock_wait: self.pricer.wait,
                        contended: self.pricer.contended,
                        flush: self.pricer.flush,
                        lru_wait: self.pricer.lru_wait(),
                    };
                    self.sh.mark(name, lat.as_deref(), Some(&p))?;
                }
                Op::Repeat { times, ops } => {
                    if *times > 0 {
                        v.stack.push(Frame {
                            ops,
                            next: 0,
                            left: *times,
                            prefix: format!("{label}."),
                        });
                    }
                }
                Op::Fork {
                    name,
                    ops,
                    wait: false,
                } => {
                    // One event, the call and its copy; the child's ops
                    // run between the parent's, unpriced.
                    let before = self.usage()?;
                    let op_label = v.op_label.clone();
                    let c = super::fork::start(self.sh, &mut v.cpu, v.tid, &op_label, name, ops)?;
                    v.child = Some(c);
                    let cost = pricing::fork_cost(self.costs, &before, &[0; mm::FAULT_KINDS]);
                    self.event(v, cost, self.costs.hold_syscall);
                    v.cpu.publish();
                    return Ok(());
                }
                Op::Waitpid(_) => {
                    if let Some(c) = v.child.take() {
                        let exit = c.finish(self.sh, &mut v.cpu, v.tid, v.clock.ns)?;
                        wait_for_child(v, exit);
                    }
                    v.cpu.publish();
                }
                Op::Fork { name, ops, .. } => {
                    // One event: the parent waits while the child runs
                    // (only in one-thread workloads, so no other CPU runs):
                    // the fork's price, and the child's faults.
                    let before = self.usage()?;
                    let op_label = v.op_label.clone();
                    let child =
                        super::fork::run_child(self.sh, &mut v.cpu, v.tid, &op_label, name, ops)?;
                    let cost = pricing::fork_cost(self.costs, &before, &child);
                    self.event(v, cost, self.costs.hold_syscall);
                    v.cpu.publish();
                    return Ok(());
                }
                _ => unreachable!("system calls are run above"),
            }
        }
    }

    /// Accesses of the touch in progress, until the clock passes `limit`,
    /// an access faults (one event), or the touch ends.
    fn touch(&mut self, v: &mut Vcpu<'s, 'w>, limit: f64) -> Result<Stepped, ModelError> {
        let costs = self.costs;
        loop {
            let t = v.touch.as_mut().expect("a touch is in progress");
            let Some(off) = t.offsets.next() else {
                return Ok(Stepped::TouchDone);
            };
            if let (Offsets::Ahead(a), false) = (&t.offsets, v.last_hit_l1) {
                for (k, stage) in STAGE_OF.into_iter().enumerate() {
                    if let Some(later) = a.later((k + 1) * PREFETCH_AHEAD) {
                        v.cpu.prefetch_stage(t.base + later, stage);
                    }
                }
            }
            let (va, kind) = (t.base + off, t.kind);
            if t.lookup {
                self.lookup_node(v, va)?;
                return Ok(Stepped::Yield);
            }
            // A clean first-level hit through the MMU's probe, which
            // counts and orders it as the access would and copies no
            // translation through memory; any other access the whole way.
            let (cost, faults) = if v.cpu.hit(va, kind).is_some() {
                v.last_hit_l1 = true;
                (costs.access(HitLevel::L1, 0, false), 0)
            } else {
                let o = match v.cpu.access(va, kind) {
                    Ok(o) => o,
                    Err(e) => return Err(interp::access_error(v.tid, &v.op_label, e)),
                };
                v.last_hit_l1 = o.translation.hit == HitLevel::L1;
                // A walk records its table line pair (timing::TableLines).
                let cached = o.translation.hit == HitLevel::Walk && v.lines.walk(va);
                let hit = o.translation.hit;
                (costs.access(hit, o.translation.walk_refs, cached), o.faults)
            };
            let took = if faults == 0 {
                v.clock += cost;
                cost.ns
            } else {
                let start = v.clock;
                self.event(v, cost, costs.hold_fault);
                (v.clock - start).ns
            };
            if let Some(h) = v.latency.as_mut() {
                h.record(took.round() as u64);
            }
            if self.hooks {
                v.unreported += 1;
                if v.unreported == super::options::CHECK_EVERY {
                    self.sh.hooks.advance(std::mem::take(&mut v.unreported))?;
                }
            }
            if faults != 0 || v.clock.ns > limit {
                return Ok(Stepped::Yield);
            }
        }
    }

    /// Runs `op` on `v` if it is a system call, as one event; `None` if it
    /// is not one.
    fn syscall(&mut self, v: &mut Vcpu<'s, 'w>, op: &Op) -> Option<Result<(), ModelError>> {
        let before = self.usage();
        let populated_before = Populated::of(v.cpu.thread_counters());
        let written_before = v.cpu.thread_counters().writeback_pages;
        let (r, what, kind) = interp::syscall(&mut v.cpu, self.sh.w, op)?;
        if let Err(e) = r {
            return Some(Err(interp::syscall_error(v.tid, &v.op_label, what, e)));
        }
        let after = self.usage();
        let (before, after) = match (before, after) {
            (Ok(b), Ok(a)) => (b, a),
            (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
        };
        let page = self.sh.cfg.geometry.page_size();
        let populated = Populated::of(v.cpu.thread_counters()).since(populated_before);
        let range_pages = match kind {
            SyscallKind::Msync => v.cpu.thread_counters().writeback_pages - written_before,
            _ => interp::range_len(op).div_ceil(page),
        };
        let cost = self
            .pricer
            .syscall_cost(kind, &before, &after, range_pages, populated);
        self.event(v, cost, self.costs.hold_syscall);
        Some(Ok(()))
    }

    /// One get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) of `va` on `v`, as one
    /// event: `node_of.call`, the page it faulted in (if absent) priced as
    /// a populated page, its table lock (the slow lookup's) held
    /// `lock.hold_lookup`.
    fn lookup_node(&mut self, v: &mut Vcpu<'s, 'w>, va: u64) -> Result<(), ModelError> {
        let before = self.usage()?;
        let populated_before = Populated::of(v.cpu.thread_counters());
        if let Err(e) = v.cpu.node_of(va) {
            return Err(interp::syscall_error(
                v.tid,
                &v.op_label,
                "get_mempolicy",
                e,
            ));
        }
        let after = self.usage()?;
        let populated = Populated::of(v.cpu.thread_counters()).since(populated_before);
        let cost = self
            .pricer
            .syscall_cost(SyscallKind::NodeOf, &before, &after, 0, populated);
        self.event(v, cost, self.costs.hold_lookup);
        Ok(())
    }

    /// Resident pages and table pages of the address space now.
    fn usage(&self) -> Result<Usage, ModelError> {
        let page = self.sh.cfg.geometry.page_size();
        Ok(pricing::usage(&self.sh.machine, self.sh.space, page)?)
    }

    /// Places an event of `v` that cost `cost` before its faults, its
    /// shootdowns and its lock waits ([`Pricer::event`]).
    fn event(&mut self, v: &mut Vcpu<'s, 'w>, cost: Ns3, hold: Ns3) {
        self.pricer.event(
            &self.sh.machine,
            v.tid,
            &mut v.cpu,
            &mut v.seen,
            &mut v.clock,
            Charge { cost, hold },
        );
    }

    /// Charges the CPUs that received IPIs in the last event.
    fn charge_receivers(&mut self, vcpus: &mut [Vcpu<'s, 'w>]) {
        if self.pricer.received.is_empty() {
            return;
        }
        for (cpu, cost) in self.pricer.received.drain(..) {
            if let Some(v) = self
                .by_cpu
                .get(cpu)
                .copied()
                .flatten()
                .map(|i| &mut vcpus[i])
            {
                if v.state != State::Done {
                    v.clock += cost;
                }
            }
        }
    }
}

/// The parent's `waitpid` returns when its child exits (`exit_ns` on the
/// parent's clock, [`super::fork::Running::finish`]): a child still
/// sleeping is waited for.
fn wait_for_child(v: &mut Vcpu<'_, '_>, exit_ns: f64) {
    if exit_ns > v.clock.ns {
        v.clock += Ns3::same(exit_ns - v.clock.ns);
    }
}
