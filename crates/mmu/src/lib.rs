//! `mmu`: the memory-management unit of the model: per-CPU TLBs,
//! paging-structure (walk) caches, the hardware walk with its memory
//! references and accessed/dirty updates, nested (two-dimensional) walks,
//! and TLB shootdowns across CPUs.
//!
//! - [`config`]: TLB and walk-cache configurations, presets (`zen4`,
//!   `icelake`, `none`) and their checks.
//! - [`mmu`]: [`Mmu`] (shared by all CPUs: mailboxes, active masks, IPIs,
//!   deferred table freeing) and [`Cpu`] (one thread's TLBs and statistics).
//! - [`walk`]: the hardware walk and the [`Fault`]s it raises.
//! - [`nested`]: a guest walk over a host walk.
//! - [`stats`]: [`MmuStats`], merged per mark.
//!
//! The MMU decides nothing about what is mapped (DESIGN.md): it reads the
//! tables `pt` holds, writes only accessed and dirty bits, and tells the
//! caller which faults the hardware would raise.

mod cache;
pub mod config;
mod hits;
mod lru;
pub mod mmu;
pub mod nested;
mod presence;
mod pwc;
pub mod stats;
mod tlb;
pub mod walk;

pub use config::{
    ConfigError, MmuConfig, PageSize, PwcConfig, Replacement, TlbArrayConfig, TlbConfig,
};
pub use mmu::{Access, Asid, Cpu, FlushKind, HitLevel, Mmu, ShootdownStats, MAX_ASIDS};
pub use nested::{NestedFault, NestedWalk, NestedWalker};
pub use stats::MmuStats;
pub use walk::Fault;
