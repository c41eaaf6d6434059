//! The model backend: runs a workload on the model's machine (the
//! page-table engine, the MMU model and the OS model, see the `machine`
//! crate), in this process. By default every workload thread's modeled CPU
//! runs on one host thread in virtual time (`exec_virtual`: deterministic,
//! with `predicted_ns` from the cost model at every mark); the option
//! `executor = "threads"` runs one real thread per workload thread instead
//! (`exec_threads`, for stress tests of the concurrent model).
//!
//! Each workload thread runs on its own modeled CPU (the configured CPU
//! count, raised to the thread count if smaller) and drives every memory
//! access through that CPU's handle: TLB, walk caches, hardware walk; a
//! fault goes to the OS model, and the machine completes its deferred work
//! (shootdown, then freeing tables and frames) before the access is retried.
//!
//! Counters: each CPU keeps its own (docs/design.md: per thread, merged at
//! marks) and publishes a snapshot after every operation; a mark merges the
//! published snapshots with the address space's own state. A mark taken
//! while other threads are inside a long `touch` sees their counters as of
//! their last finished operation: put a barrier before a mark when others
//! must be quiet, as the workload format says.
//!
//! A run can be given a deadline and a progress callback ([`RunOptions`],
//! [`run_with`]).
//!
//! ## Host-side speed tricks of the executor and its pricing
//!
//! Each changes no counter and no predicted nanosecond; each is held to the
//! plain path by the test named (and `scripts/check-predicted.sh` compares
//! every built-in workload's marks between two builds):
//!
//! | trick | shortcuts | exact because | held by |
//! | --- | --- | --- | --- |
//! | read-ahead ring (`ahead`): a random touch's offsets drawn once into a ring, the offsets a prefetch stage ahead read from it | one more generator per prefetch stage, skipped ahead | the ring holds the generator's own offsets in order | `ahead::tests::the_ring_gives_what_skipped_generators_give` |
//! | no prefetch after a first-level hit (`exec_virtual`) | nothing: the prefetches are host hints | a prefetch changes no model state | none needed (the `pt` memo test covers the prefetch itself) |
//! | the space's table count read through the CPU's handle (`pricing`, `machine::CpuHandle::table_pages`) | the machine's space lookup and the per-level loop (`mm::AddressSpace::table_pages`) after every event | the same tree's per-level counts, summed | `pt/tests/pgtable.rs`: `tables_total_is_the_sum_over_the_levels` |

mod ahead;
mod config;
mod exec_threads;
mod exec_virtual;
mod fork;
mod interp;
mod options;
pub(crate) mod pricing;
mod run;
mod settings;
mod shared_time;
pub mod snapshot;

pub use config::{
    default_costs, default_tlb_preset, host_tlb_preset, load_costs, set_default_costs,
    this_host_costs_path, ModelConfig, OptionError, THIS_HOST,
};
pub use exec_virtual::QUANTUM_NS;
pub use options::{planned_accesses, ProgressFn, RunOptions, CHECK_EVERY};
pub(crate) use run::Prediction;
pub use run::{run, run_with, ModelError};
pub use settings::{
    Executor, Gup, HostPage, Locking, LruDrain, ModelOptions, MthpPolicy, MthpSize, Named, PvFlush,
    Reclaim, SwapDevice, SwapReadahead, SwapSetting, Thp, TlbFlushKind, MTHP_SIZES,
};
