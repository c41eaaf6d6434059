//! The machine's errors, one enum per boundary: building the machine and
//! attaching CPUs ([`MachineError`]), an access ([`AccessError`]), a system
//! call ([`SyscallError`]).

use mm::{Errno, SegvCode};
use thiserror::Error;

/// A machine that cannot be built, or a CPU or address space that cannot be
/// used as asked.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MachineError {
    /// The configuration is unusable (geometry, MMU, CPU count).
    #[error("{0}")]
    Config(String),
    /// No such CPU.
    #[error("CPU {cpu} does not exist (the machine has {cpus})")]
    NoSuchCpu { cpu: usize, cpus: usize },
    /// The CPU is already run by another handle.
    #[error("CPU {0} is already attached")]
    CpuBusy(usize),
    /// No such address space.
    #[error("address space {0} does not exist")]
    NoSuchSpace(usize),
    /// Every ASID is in use.
    #[error("no ASID left for another address space")]
    NoAsid,
    /// An inconsistency in the model (a bug).
    #[error("{0}")]
    Internal(String),
}

/// Why an access could not complete.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AccessError {
    /// The access raises SIGSEGV.
    #[error("SIGSEGV at {va:#x} ({code:?})")]
    Segv { va: u64, code: SegvCode },
    /// The fault handler found no memory (VM_FAULT_OOM).
    #[error("out of memory faulting {va:#x} (VM_FAULT_OOM)")]
    Oom { va: u64 },
    /// An inconsistency in the model (a bug), among them a fault that keeps
    /// failing to make progress.
    #[error("{0}")]
    Internal(String),
}

/// Why a system call failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SyscallError {
    /// The OS model refuses it, with Linux's errno (what it changed before
    /// failing has been completed, as Linux keeps it).
    #[error("{0}")]
    Errno(Errno),
    /// Completing its deferred work found an inconsistency (a bug).
    #[error("{0}")]
    Internal(String),
}
