//! The model backend: runs a workload on the page-table engine, the MMU
//! model and the OS model, in this process, with one real thread per
//! workload thread sharing one address space.
//!
//! Each workload thread runs on its own modeled CPU (the configured CPU
//! count, raised to the thread count if smaller) and drives every memory
//! access through that CPU: TLB, walk caches, hardware walk; a fault goes to
//! the OS model, whose deferred work (shootdown, then freeing tables and
//! frames) is completed through the MMU before the access is retried.
//!
//! Counters: each thread keeps its own (DESIGN.md: per thread, merged at
//! marks) and publishes a snapshot after every operation; a mark merges the
//! published snapshots with the address space's own state. A mark taken
//! while other threads are inside a long `touch` sees their counters as of
//! their last finished operation: put a barrier before a mark when others
//! must be quiet, as the workload format says.

mod config;
mod run;

pub use config::{host_tlb_preset, ModelConfig, OptionError};
pub use run::{run, ModelError};
