//! Presentation of runs, and nothing else: every figure here was computed by `stats`
//! or measured by a backend; this crate only lays it out.
//!
//! - [`Table`]: terminal tables (aligned, units in headers, thousands separators) and
//!   their CSV and Markdown exports ([`runs_to_csv`]: every raw value of every
//!   run); [`views`] builds the tables of `run`, `compare`, `validate` and
//!   `audit` from runs.
//! - [`latency::render_log2`]: a latency histogram drawn like bcc's funclatency.
//! - [`chart`]: SVG charts (grouped bars with error bars, lines with CI bands, stacked
//!   bars, log2 histograms, latency percentiles), returned as text; log axes where
//!   values span orders of magnitude, every bar labelled.
//! - [`human`], [`Unit`], [`format_summary`]: numbers for people in their unit
//!   (`419 ms`, `2.00 MiB`, whole counts), the interval's method named; JSON and
//!   CSV keep exact values.
//! - [`html::Page`]: one self-contained HTML page (inline SVG, tables, no scripts,
//!   fonts or other external resources).
//!
//! Invariant: every output is a pure function of its input (no clocks, no random
//! colours, no hash-map order), so reports are byte-for-byte reproducible.

pub mod chart;
mod csv_out;
mod error;
pub mod html;
pub mod latency;
mod markdown;
mod number;
pub mod table;
pub mod views;

pub use csv_out::{runs_to_csv, ConfigRuns, RUNS_CSV_HEADER};
pub use error::ReportError;
pub use number::{
    format_float, format_summary, group_thousands, human, quantity_of, unit_of, Unit,
};
pub use table::{Align, Cell, Column, Table};
