//! Sweeps: one TOML file naming workloads (built-in names, workload files
//! or traces) and configuration axes, expanded into one task per workload
//! and combination of axis values, each task run (retried once when it
//! fails), and every outcome gathered into one table (docs/sweep.md).
//!
//! - [`file`]: the sweep file, checked before anything runs (bad input:
//!   `file:line:col: key "...": ...`, exit 2).
//! - [`expand`]: the tasks, in a fixed order (workloads, then axes by key).
//! - [`runner`]: one task ([`runner::run_task`], the unit a Ray task calls
//!   too) and all of them on local cores ([`runner::run_local`]).
//! - [`table`]: outcomes to rows, CSV and JSON.
//!
//! Invariants: a task's outcome is a function of the task alone (the model
//! is deterministic and the table leaves out ptlab's own clock), so the same
//! file gives the same table on local cores and on Ray; a failed task keeps
//! its row (status, attempts, message) and is never dropped.

pub mod expand;
pub mod file;
pub mod runner;
pub mod table;

pub use expand::{expand, Task};
pub use file::{parse, read, SweepError, SweepFile};
pub use runner::{run_local, run_task, MarkRow, Outcome};
pub use table::Table;
