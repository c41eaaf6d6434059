//! Workloads: the format of `shared/spec/workload-format.md`, its checks, the
//! placement rule shared by every backend, the built-in workloads, and the
//! result types (counters at marks) that every backend produces.
//!
//! Data flow: TOML text -> `parse` (syntax, keys, units, with file/line/column
//! in every error) -> `check` (regions mapped before use, ranges inside
//! regions, ...) -> [`plan::Workload`], a validated plan that backends run
//! without further checks.

pub mod plan;
pub mod result;
