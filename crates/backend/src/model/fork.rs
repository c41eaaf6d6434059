//! A workload's `fork` on the model: the child address space is made
//! through the machine ([`machine::CpuHandle::fork`]), runs its ops on the
//! parent thread's CPU (the parent waits, as the format says, so the CPU
//! is free), and is ended with [`machine::Machine::exit_space`] (Linux
//! `exit_mmap`), after which the parent's CPU switches back.
//!
//! The child's marks are `NAME.LABEL`, with the child's counters since
//! just after the fork (faults, RSS, VmPTE of the child alone: the OS
//! model's counters are kept per address space). In virtual time the fork
//! is one event of the parent's CPU (`pricing::fork_cost`): the call, the
//! pages and tables it copies, and the faults the child handled (counted
//! in the child's space, returned by [`run_child`]); the child's system
//! calls and accesses that do not fault are not priced.
//!
//! A fork with `wait = false` ([`start`]) leaves the child [`Running`]:
//! the parent's thread goes on, and the two processes' ops alternate on
//! the parent thread's CPU, which switches address space for each child
//! op (Linux `switch_mm`): before each op the parent's thread starts
//! (every op, inside a `repeat` too, `waitpid` excepted), the child runs
//! its next top-level op ([`Running::step`]) if it is due; a child with
//! no op left exits there. A `sleep` of the child holds its next op (or
//! its exit) back until the parent's clock (virtual time, or the wall
//! clock in the threads executor) has passed that much more: a child that
//! sleeps stays alive, and keeps sharing its pages, over the parent's ops
//! meanwhile. `waitpid` (and the end of the parent's ops) runs the
//! child's remaining ops and exits it ([`Running::finish`]), the parent
//! waiting for the rest of the child's sleeps. The child's
//! marks are counted when its ops reach them but reported at the
//! `waitpid`, after the parent's marks before it, as on the kernel (whose
//! child hands its records back when it is reaped). The order is
//! the model's; on the kernel it is the scheduler's. In virtual time only
//! the fork call and its copy, and the wait for a sleeping child, are
//! priced on the parent's clock: the child's other ops are not priced (on
//! Linux it runs on another CPU or in the parent's waits).

use super::interp;
use super::run::Shared;
use super::ModelError;
use machine::{AccessKind, CpuHandle, SpaceId};
use workload::plan::{self, Op};

/// Runs the child `name` with `ops` (see the module documentation); the
/// faults the child handled, by kind (the OS model counts them in the
/// child's space, not the parent's).
///
/// # Errors
/// The child's first failing operation, as thread `tid` reports it.
pub(super) fn run_child(
    sh: &Shared<'_>,
    cpu: &mut CpuHandle<'_>,
    tid: usize,
    label: &str,
    name: &str,
    ops: &[Op],
) -> Result<[u64; mm::FAULT_KINDS], ModelError> {
    let parent = cpu.space_id();
    let child = cpu
        .fork()
        .map_err(|e| interp::syscall_error(tid, label, "fork", e))?;
    cpu.switch_to(child)?;
    // The child's locks are not charged to the parent's virtual clock.
    let logged = cpu.lock_log_kept();
    cpu.keep_lock_log(false);
    let base = sh.snapshot_of(child)?;
    let mut c = Child {
        sh,
        cpu,
        tid,
        name,
        base,
        held: None,
    };
    let r = c.run_list(ops, &format!("{label}."));
    let cpu = c.cpu;
    cpu.checkpoint()?;
    let kinds = cpu.thread_counters().fault_kinds;
    cpu.switch_to(parent)?;
    cpu.keep_lock_log(logged);
    sh.machine.exit_space(child)?;
    cpu.checkpoint()?;
    r.map(|()| kinds)
}

struct Child<'a, 'b, 'm> {
    sh: &'a Shared<'b>,
    cpu: &'a mut CpuHandle<'m>,
    tid: usize,
    name: &'a str,
    base: workload::result::Counters,
    /// Where a running child's marks wait for its `waitpid` (`None`: a
    /// waiting fork's child records them at once).
    held: Option<Vec<workload::result::Mark>>,
}

impl Child<'_, '_, '_> {
    fn run_list(&mut self, ops: &[Op], prefix: &str) -> Result<(), ModelError> {
        for (i, op) in ops.iter().enumerate() {
            self.run_one(i, op, prefix)?;
        }
        Ok(())
    }

    /// Runs `op`, the `i`-th (from 0) of its list.
    fn run_one(&mut self, i: usize, op: &Op, prefix: &str) -> Result<(), ModelError> {
        {
            self.sh.hooks.check_deadline()?;
            let label = format!("op {prefix}{} (fork {:?})", i + 1, self.name);
            if let Some((r, what, _)) = interp::syscall(self.cpu, self.sh.w, op) {
                r.map_err(|e| interp::syscall_error(self.tid, &label, what, e))?;
                return Ok(());
            }
            match op {
                Op::Touch(t) => self.touch(t, &label)?,
                Op::Mark(m) => {
                    self.cpu.checkpoint()?;
                    let space = self.cpu.space_id();
                    let name = format!("{}.{m}", self.name);
                    match self.held.as_mut() {
                        Some(held) => held.push(self.sh.space_mark(&name, space, &self.base)?),
                        None => self.sh.mark_space(&name, space, &self.base)?,
                    }
                }
                Op::Repeat { times, ops } => {
                    for _ in 0..*times {
                        self.run_list(ops, &format!("{prefix}{}.", i + 1))?;
                    }
                }
                // The child's sleep advances no modeled clock (its time is
                // not priced); barriers, forks and waitpid are refused by
                // the checker.
                Op::Sleep(_) | Op::Barrier | Op::Fork { .. } | Op::Waitpid(_) => {}
                _ => unreachable!("system calls are run above"),
            }
            self.cpu.publish();
        }
        Ok(())
    }

    fn touch(&mut self, t: &plan::Touch, label: &str) -> Result<(), ModelError> {
        let base = self.sh.w.regions[t.region].addr;
        let kind = if t.access == plan::Access::Write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        for off in crate::touch::touch_offsets(t) {
            self.cpu
                .access(base + off, kind)
                .map_err(|e| interp::access_error(self.tid, label, e))?;
        }
        Ok(())
    }
}

/// A child forked with `wait = false` (see the module documentation).
pub(super) struct Running<'w> {
    name: &'w str,
    ops: &'w [Op],
    /// Its next op.
    next: usize,
    space: SpaceId,
    base: workload::result::Counters,
    /// The fork's label, the prefix of the child's ops' labels.
    label: String,
    /// Its marks so far, reported at its `waitpid`.
    held: Vec<workload::result::Mark>,
    /// When its next op (or its exit) may run, on the parent's clock in ns:
    /// a `sleep` of the child holds back what follows it by its duration.
    due_ns: f64,
}

/// Forks the child `name` that will run `ops` while the parent goes on;
/// nothing of the child runs yet.
///
/// # Errors
/// The fork's failure, as thread `tid` reports it.
pub(super) fn start<'w>(
    sh: &Shared<'_>,
    cpu: &mut CpuHandle<'_>,
    tid: usize,
    label: &str,
    name: &'w str,
    ops: &'w [Op],
) -> Result<Running<'w>, ModelError> {
    let space = cpu
        .fork()
        .map_err(|e| interp::syscall_error(tid, label, "fork", e))?;
    let base = sh.snapshot_of(space)?;
    Ok(Running {
        name,
        ops,
        next: 0,
        space,
        base,
        label: label.to_string(),
        held: Vec::new(),
        due_ns: 0.0,
    })
}

impl Running<'_> {
    /// Runs the child's next op on `cpu` (switched to the child's space
    /// and back) if it is due at `now_ns` (the parent's clock); a child
    /// with no op left exits. A `sleep` makes what follows it due that
    /// much later. `true` once it has exited.
    ///
    /// # Errors
    /// The child's op's failure, as thread `tid` reports it.
    pub(super) fn step(
        &mut self,
        sh: &Shared<'_>,
        cpu: &mut CpuHandle<'_>,
        tid: usize,
        now_ns: f64,
    ) -> Result<bool, ModelError> {
        if self.next > self.ops.len() {
            return Ok(true);
        }
        if now_ns < self.due_ns {
            return Ok(false);
        }
        if let Some(Op::Sleep(d)) = self.ops.get(self.next) {
            self.next += 1;
            self.due_ns = now_ns + d.as_nanos() as f64;
            return Ok(false);
        }
        self.run(sh, cpu, tid, 1)
    }

    /// Runs the child's remaining ops and exits it (the parent's
    /// `waitpid`, or the end of its ops, at `now_ns` on the parent's
    /// clock). Returns when the child exits on that clock: the parent
    /// waits for what is left of its sleeps.
    ///
    /// # Errors
    /// The first failing op of the child, as thread `tid` reports it.
    pub(super) fn finish(
        mut self,
        sh: &Shared<'_>,
        cpu: &mut CpuHandle<'_>,
        tid: usize,
        now_ns: f64,
    ) -> Result<f64, ModelError> {
        let left: f64 = self
            .ops
            .get(self.next..)
            .unwrap_or_default()
            .iter()
            .map(|op| match op {
                Op::Sleep(d) => d.as_nanos() as f64,
                _ => 0.0,
            })
            .sum();
        let exit_ns = now_ns.max(self.due_ns) + left;
        self.run(sh, cpu, tid, usize::MAX)?;
        sh.push_marks(std::mem::take(&mut self.held));
        Ok(exit_ns)
    }

    fn run(
        &mut self,
        sh: &Shared<'_>,
        cpu: &mut CpuHandle<'_>,
        tid: usize,
        most: usize,
    ) -> Result<bool, ModelError> {
        let end = self.ops.len().min(self.next.saturating_add(most));
        if self.next < end {
            let parent = cpu.space_id();
            cpu.switch_to(self.space)?;
            // The child's locks are not charged to the parent's clock.
            let logged = cpu.lock_log_kept();
            cpu.keep_lock_log(false);
            let mut c = Child {
                sh,
                cpu,
                tid,
                name: self.name,
                base: self.base.clone(),
                held: Some(std::mem::take(&mut self.held)),
            };
            let prefix = format!("{}.", self.label);
            let mut r = Ok(());
            while self.next < end && r.is_ok() {
                r = c.run_one(self.next, &self.ops[self.next], &prefix);
                self.next += 1;
            }
            self.held = c.held.take().unwrap_or_default();
            let cpu = c.cpu;
            cpu.checkpoint()?;
            cpu.switch_to(parent)?;
            cpu.keep_lock_log(logged);
            r?;
        }
        if self.next < self.ops.len() {
            return Ok(false);
        }
        if self.next == self.ops.len() {
            // Linux: kernel/exit.c, do_exit -> exit_mm -> exit_mmap.
            sh.machine.exit_space(self.space)?;
            cpu.checkpoint()?;
            self.next += 1;
        }
        Ok(true)
    }
}
