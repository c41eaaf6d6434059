//! `costs`: cost files. A cost file says what each event the model counts
//! (a fault of a kind, a table allocated, a shootdown sent, a walk reference
//! served from memory, ...) costs on one host, in nanoseconds, with the
//! interval the measurement gives and where the figure came from (measured
//! by `ptlab calibrate`, derived from other figures, or assumed with a named
//! source).
//!
//! - [`catalog`]: the one list of cost names, their units and meanings. A
//!   cost file may name only these; add a cost here and every reader
//!   follows.
//! - [`cache`]: the per-user folder of each host's calibrated file.
//! - [`file`]: [`CostFile`], its TOML form, loading with errors that say
//!   where, and saving.
//!
//! ## Invariants
//! 1. Every cost in a loaded file has `0 <= lo <= ns <= hi` and a name from
//!    the catalog (checked by [`CostFile::validate`], which loading runs).
//! 2. A cost file never mixes hosts: its `[host]` table describes the one
//!    machine every measured figure came from.

pub mod cache;
pub mod catalog;
pub mod file;

pub use catalog::{CostName, Per, CATALOG};
pub use file::{Cost, CostFile, CostsError, HostInfo, Provenance, Stability, FORMAT_VERSION};
