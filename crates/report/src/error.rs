//! The errors of the presentation layer.

use thiserror::Error;

/// Why a report could not be produced.
#[derive(Debug, Error)]
pub enum ReportError {
    /// Writing CSV failed.
    #[error("CSV export failed: {0}")]
    Csv(#[from] csv::Error),
    /// plotters could not draw a chart.
    #[error("chart drawing failed: {0}")]
    Chart(String),
    /// The data handed in cannot be drawn as asked (e.g. a series with a value
    /// missing, a NaN).
    #[error("cannot draw {what}: {why}")]
    Input { what: String, why: String },
}

impl ReportError {
    pub(crate) fn input(what: &str, why: impl Into<String>) -> ReportError {
        ReportError::Input {
            what: what.to_string(),
            why: why.into(),
        }
    }
}
