//! `mmu`: the memory-management unit of the model: per-CPU TLBs,
//! paging-structure (walk) caches, the hardware walk with its memory
//! references and accessed/dirty updates, nested (two-dimensional) walks,
//! and TLB shootdowns across CPUs.
//!
//! - [`config`]: TLB and walk-cache configurations, presets (`zen4`,
//!   `icelake`, `none`) and their checks.
//! - [`shootdown`]: [`Mmu`] (shared by all CPUs: mailboxes, active masks,
//!   IPIs, deferred table freeing) and the shootdowns.
//! - [`broadcast`]: broadcast TLB invalidation (AMD INVLPGB, Intel RAR)
//!   and Linux's rule for using it instead of IPIs.
//! - [`cpu`]: [`Cpu`] (one thread's TLBs, walk caches, lookup, walk and
//!   statistics).
//! - [`walk`]: the hardware walk and the [`Fault`]s it raises.
//! - [`nested`]: a guest walk over a host walk, cold (no caches), for
//!   tables built by hand.
//! - [`host_config`] and `host`: the second dimension of a nested machine
//!   in model runs: the host's tables filled on demand by a modeled
//!   hypervisor, a nested TLB and host walk caches per CPU; with a host
//!   ([`MmuConfig::host`]) every [`Cpu`] walk is two-dimensional and the
//!   TLBs cache combined gVA -> hPA translations.
//! - [`stats`]: [`MmuStats`], merged per mark.
//!
//! The MMU decides nothing about what is mapped (docs/design.md): it reads the
//! tables `pt` holds, writes only accessed and dirty bits, and tells the
//! caller which faults the hardware would raise. It never asks which
//! architecture it walks: the walk reads the geometry's per-level word
//! tests and the predicates of its [`pt::entry::Architecture`], resolved
//! once into the walk's constants (`walk::GeomInfo`).
//!
//! ## Accelerations
//!
//! The host-side shortcuts of the MMU model, each beside the plain path it
//! shortcuts, why it gives the same result, and the differential test that
//! holds it there (the engine's own are listed in `pt::accel`):
//!
//! | acceleration | shortcuts | exact because | held by |
//! | --- | --- | --- | --- |
//! | first-level hit cache (`hits`): 16 direct-mapped slots of recent first-level hits | the first-level lookup and its LRU touch | a slot mirrors its entry and is cleared before any change to the arrays; deferred touches are replayed in last-hit order, which leaves the same LRU order | `tests/against_reference.rs` (zen4, icelake: every access against a minimal model without it) |
//! | presence filters (`presence`): per-size counters of valid entries | a scan that would miss | a zero proves no entry of that kind matches; counters saturate, never undercount | `tests/against_reference.rs` (zen4 and icelake have filters, neoverse-n1 none); `presence` unit tests |
//! | way prediction and the level memo (`tlb`): the entry that last answered for an address | the scan of a set or a wide array | a prediction is checked by a tag compare; a stale one costs the scan; at most one entry of a level covers an address | `tests/against_reference.rs`; `tests/tlb.rs`: `lru_tlbs_agree_with_a_reference_model`, `wide_lru_tlbs_agree_with_a_reference_model` |
//! | constant-time LRU (`lru`, `cache`) | an ordered list per set | the same victim as an explicit recency order | `tests/tlb.rs` reference proptests; `cache` unit tests |
//! | codec-free walk steps (`walk`): a table entry through its `TableFields`, a common leaf needing no A/D update through its `LeafFields` | the codec's decode at each level | the fields are the codec's own tests (see `pt::accel`); every other word takes the decode | `walk::tests::the_leaf_shortcut_changes_nothing` (the walk without the leaf shortcut, same words, results, references, A/D writes); `pt`'s codec tests for the table fields |
//! | walk constants (`walk::GeomInfo::entry_pa`): the geometry's shifts and masks copied beside the walk | `PageTable::hw_entry_pa` | the same formula over the same numbers | `walk::tests::entry_addresses_match_the_engine_for_every_preset` |
//! | walk prefetch with a memo (`Cpu::prefetch`, `pt::table::WalkMemo`) | nothing: a host-cache hint | changes no TLB, walk cache, word or statistic | `pt::table::memo` test against `PageTable::last_walk_word` |
//! | staged walk prefetch (`Cpu::prefetch_stage`, `pt::table::PrefetchStage`): the leaf table's bias word, then the leaf word, fetched for two addresses at different distances ahead | nothing: host-cache hints | changes no TLB, walk cache, word or statistic | `pt::table::memo` test (the memo's words against the walk's; every stage run on every address changes nothing) |

pub mod broadcast;
mod cache;
pub mod config;
pub mod cpu;
mod fetch;
mod hits;
mod host;
pub mod host_config;
mod lru;
pub mod nested;
mod presence;
mod pwc;
pub mod shootdown;
pub mod stats;
mod tlb;
pub mod walk;

pub use broadcast::{Broadcast, TlbFlush};
pub use config::{
    ConfigError, MmuConfig, PageSize, PwcConfig, Replacement, TlbArrayConfig, TlbConfig,
};
pub use cpu::{Access, Cpu, HitLevel};
pub use host_config::{HostConfig, HostError};
pub use nested::{NestedFault, NestedWalk, NestedWalker};
pub use shootdown::{Asid, FlushKind, Mmu, ShootdownStats, MAX_ASIDS};
pub use stats::MmuStats;
pub use walk::Fault;
