//! `mm`: a Linux-faithful model of a process address space over the `pt`
//! page-table engine.
//!
//! - [`space`]: the address space, its VMAs and system calls (mmap, munmap,
//!   mprotect, madvise, mlock, msync).
//! - [`fault`]: the fault handler (zero page, copy-on-write, file pages with
//!   fault-around, shmem, THP and multi-size THP).
//! - [`walk`]: range operations (zap, protect, PT reclaim, free_pgtables).
//! - [`locking`]: the lock protocol, written as invariants.
//! - [`check`]: the invariant checker used by tests.
//! - [`deferred`]: the work left for after the TLB shootdown.
//!
//! Every operation returns a [`Deferred`] the caller completes after the
//! shootdown (or with [`Deferred::complete_without_tlb`]). Counters are read
//! after completing: table pages leave the per-level counts when released.

pub mod cache;
pub mod check;
pub mod config;
pub mod counters;
pub mod deferred;
pub mod error;
pub mod fault;
pub mod locking;
pub mod space;
pub mod vma;
pub mod walk;

pub use config::{Locking, MmConfig, MthpPolicy, Reclaim, ThpMode};
pub use counters::{LockClass, MmCounters, ThreadCounters, ThreadCtx};
pub use deferred::Deferred;
pub use error::Errno;
pub use fault::{FaultAccess, FaultResult, SegvCode};
pub use space::{AddressSpace, Advice, MapKind, MmapArgs};
pub use vma::{Prot, Vma};
