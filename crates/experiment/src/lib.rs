//! `experiment`: the layer between the backends and the report.
//!
//! - [`config`]: run configurations (backend and model options), checked.
//! - [`aggregate`]: repeats summarized per mark and counter, derived figures,
//!   comparisons against the first configuration.
//! - [`exec`]: running workloads under configurations, repeated and interleaved.
//! - [`inspect`]: a live process's page tables, its VmPTE explained, and
//!   the same memory under other geometries (`ptlab inspect`).
//! - [`calibrate`]: this host's costs, measured with the kernel backend and
//!   small probes, into a cost file.

pub mod aggregate;
#[cfg(target_os = "linux")]
pub mod calibrate;
pub mod config;
pub mod exec;
pub mod inspect;
pub mod replay;
pub mod study;
pub mod validate;
