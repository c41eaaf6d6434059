//! `machine`: the model's one core. Every driver of the model (the workload
//! interpreter, a trace replay, bindings) runs it through this API, access
//! by access, and none of them knows the order in which shootdowns, table
//! frees and reclaim must happen: that order lives in [`order`].
//!
//! - [`config`]: what a machine is made of ([`MachineConfig`]).
//! - [`error`]: one error enum per boundary ([`MachineError`],
//!   [`AccessError`], [`SyscallError`]).
//! - [`machine`]: [`Machine`]: the MMUs of N modeled CPUs, the physical
//!   memory, the address spaces (each with its ASID) and the counters each
//!   CPU publishes.
//! - [`cpu`]: [`CpuHandle`]: one driver thread running one modeled CPU in
//!   one address space: accesses, the system calls of the workload format,
//!   polling, counters.
//! - [`order`]: the deferred-work order and its invariants.
//!
//! The machine touches no operating system (no clock, no sleep, no thread
//! of its own): it is deterministic for one driver thread, and several
//! driver threads may run their CPUs at once.

pub mod config;
pub mod cpu;
pub mod error;
pub mod machine;
pub mod order;

pub use config::MachineConfig;
pub use cpu::{AccessKind, AccessOutcome, CpuHandle};
pub use error::{AccessError, MachineError, SyscallError};
pub use machine::{Machine, Snapshot, SpaceId};

// The types that cross the machine's boundary, so that a driver needs no
// other crate of the model to call it.
pub use mm::{
    Advice, Errno, MapKind, MmConfig, MmapArgs, MremapArgs, Prot, Remapped, SegvCode, ShmemHuge,
};
pub use mmu::{HitLevel, MmuConfig, MmuStats};
pub use pt::Geometry;
