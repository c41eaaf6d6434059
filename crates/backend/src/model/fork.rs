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

use super::interp;
use super::run::Shared;
use super::ModelError;
use machine::{AccessKind, CpuHandle};
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
}

impl Child<'_, '_, '_> {
    fn run_list(&mut self, ops: &[Op], prefix: &str) -> Result<(), ModelError> {
        for (i, op) in ops.iter().enumerate() {
            self.sh.hooks.check_deadline()?;
            let label = format!("op {prefix}{} (fork {:?})", i + 1, self.name);
            if let Some((r, what, _)) = interp::syscall(self.cpu, self.sh.w, op) {
                r.map_err(|e| interp::syscall_error(self.tid, &label, what, e))?;
                continue;
            }
            match op {
                Op::Touch(t) => self.touch(t, &label)?,
                Op::Mark(m) => {
                    self.cpu.checkpoint()?;
                    let space = self.cpu.space_id();
                    self.sh
                        .mark_space(&format!("{}.{m}", self.name), space, &self.base)?;
                }
                Op::Repeat { times, ops } => {
                    for _ in 0..*times {
                        self.run_list(ops, &format!("{prefix}{}.", i + 1))?;
                    }
                }
                // The child's sleep advances no modeled clock (its time is
                // not priced); barriers and forks are refused by the checker.
                Op::Sleep(_) | Op::Barrier | Op::Fork { .. } => {}
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
