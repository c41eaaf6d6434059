//! The part of interpreting a plan that every executor shares: a system
//! call operation of the workload format as the machine's call, and the
//! naming of errors for a thread.

use super::ModelError;
use machine::{AccessError, CpuHandle, SyscallError};
use machine::{MapKind as MmKind, MmapArgs, MremapArgs, Prot as MmProt, ShmemHuge};
use timing::SyscallKind;
use workload::plan::{self, Op, Workload};

/// Runs `op` on `cpu` if it is a system call of the format: its result,
/// the call's name and how it is priced. `None` for an operation that is
/// not a system call (touch, sleep, barrier, mark, repeat, fork).
pub(super) fn syscall(
    cpu: &mut CpuHandle<'_>,
    w: &Workload,
    op: &Op,
) -> Option<(Result<(), SyscallError>, &'static str, SyscallKind)> {
    let at = |region: plan::RegionId, range: &plan::Range| w.regions[region].addr + range.offset;
    Some(match op {
        Op::Mmap(m) => {
            let r = &w.regions[m.region];
            let args = MmapArgs {
                addr: r.addr,
                len: m.size,
                kind: match m.kind {
                    plan::MapKind::Anon => MmKind::Anon,
                    plan::MapKind::File => MmKind::File {
                        cached: m.file == plan::FileState::Cached,
                        offset: m.file_offset,
                    },
                    plan::MapKind::Shmem => match m.shmem_huge {
                        None => MmKind::Shmem,
                        Some(h) => MmKind::Tmpfs(match h {
                            plan::ShmemHuge::Never => ShmemHuge::Never,
                            plan::ShmemHuge::Always => ShmemHuge::Always,
                            plan::ShmemHuge::WithinSize => ShmemHuge::WithinSize,
                            plan::ShmemHuge::Advise => ShmemHuge::Advise,
                        }),
                    },
                },
                shared: m.shared || m.kind == plan::MapKind::Shmem,
                prot: prot(m.prot),
                populate: m.populate,
                locked: m.locked,
                noreserve: m.noreserve,
                replace: false,
            };
            (cpu.mmap(args), "mmap", SyscallKind::Mmap)
        }
        Op::Munmap { region, range } => (
            cpu.munmap(at(*region, range), range.len),
            "munmap",
            SyscallKind::Munmap,
        ),
        Op::Mprotect {
            region,
            range,
            prot: p,
        } => (
            cpu.mprotect(at(*region, range), range.len, prot(*p)),
            "mprotect",
            SyscallKind::Mprotect,
        ),
        Op::Madvise {
            region,
            range,
            advice,
        } => (
            cpu.madvise(at(*region, range), range.len, *advice),
            "madvise",
            SyscallKind::Madvise,
        ),
        Op::Mlock {
            region,
            range,
            onfault: true,
        } => (
            cpu.mlock_onfault(at(*region, range), range.len),
            "mlock2",
            SyscallKind::Other,
        ),
        Op::Mlock { region, range, .. } => (
            cpu.mlock(at(*region, range), range.len),
            "mlock",
            SyscallKind::Other,
        ),
        Op::Munlock { region, range } => (
            cpu.munlock(at(*region, range), range.len),
            "munlock",
            SyscallKind::Other,
        ),
        Op::Sync { region, range } => (
            cpu.msync(at(*region, range), range.len),
            "msync",
            SyscallKind::Msync,
        ),
        Op::Mremap(m) => {
            let args = MremapArgs {
                addr: w.regions[m.region].addr,
                old_len: m.old_size,
                new_len: m.new_size,
                maymove: m.maymove,
                fixed: m.to.map(|to| w.regions[to].addr),
                dontunmap: m.dontunmap,
            };
            (cpu.mremap(args).map(|_| ()), "mremap", SyscallKind::Other)
        }
        // Kernel work outside the thread's own system calls (reclaim's
        // shrinker, the khugepaged thread), priced as one call.
        Op::DeferredSplit => (
            cpu.deferred_split().map(|_| ()),
            "deferred_split",
            SyscallKind::Other,
        ),
        Op::Khugepaged { region, range } => (
            cpu.khugepaged(at(*region, range), range.len).map(|_| ()),
            "khugepaged",
            SyscallKind::Other,
        ),
        Op::Touch(_)
        | Op::NodeOf(_)
        | Op::Sleep(_)
        | Op::Barrier
        | Op::Mark(_)
        | Op::Repeat { .. }
        | Op::Fork { .. }
        | Op::Waitpid(_) => return None,
    })
}

/// The length of a system call operation's range (0 for mmap and the
/// others), for pricing per page.
pub(super) fn range_len(op: &Op) -> u64 {
    match op {
        Op::Munmap { range, .. }
        | Op::Mprotect { range, .. }
        | Op::Madvise { range, .. }
        | Op::Mlock { range, .. }
        | Op::Munlock { range, .. }
        | Op::Sync { range, .. } => range.len,
        _ => 0,
    }
}

/// A system call's error as thread `tid` reports it, in operation `label`.
pub(super) fn syscall_error(tid: usize, label: &str, what: &str, e: SyscallError) -> ModelError {
    match e {
        SyscallError::Errno(e) => ModelError::Op {
            tid,
            op: format!("{label} ({what})"),
            errno: e.to_string(),
        },
        SyscallError::Internal(s) => ModelError::Internal(s),
    }
}

/// An access's error as thread `tid` reports it, in operation `label`.
#[cold]
pub(super) fn access_error(tid: usize, label: &str, e: AccessError) -> ModelError {
    match e {
        AccessError::Segv { va, code } => ModelError::Segv {
            tid,
            va,
            place: format!("{code:?} in {label}"),
        },
        AccessError::Oom { va } => ModelError::Oom { tid, va },
        AccessError::Internal(s) => ModelError::Internal(s),
    }
}

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
