//! `experiment`: the layer between the backends and the report.
//!
//! - [`config`]: run configurations (backend and model options), checked.
//! - [`aggregate`]: repeats summarized per mark and counter, derived figures,
//!   comparisons against the first configuration.
//! - [`document`]: the JSON documents of `run` and `compare`, one code path
//!   for the command line and the Python bindings.
//! - [`sweep`]: sweep files, their expansion into runs, a runner on local
//!   cores and the result table (`ptlab sweep`, `ptlab.sweep` on Ray).
//! - [`exec`]: running workloads under configurations, repeated and interleaved.
//! - [`inspect`]: a live process's page tables, its VmPTE explained, and
//!   the same memory under other geometries (`ptlab inspect`).
//! - [`host_costs`]: this host's cost file in the per-user cache, and the
//!   label saying which machine any cost file describes.
//! - [`calibrate`]: this host's costs, measured with the kernel backend and
//!   small probes, into a cost file.

pub mod aggregate;
#[cfg(target_os = "linux")]
pub mod calibrate;
pub mod config;
pub mod document;
pub mod exec;
pub mod host_costs;
pub mod inspect;
pub mod replay;
pub mod study;
pub mod sweep;
pub mod validate;
