//! How the study writes its numbers: in sentences, tables and charts.

use super::TableData;
use report::chart::Estimate;
use stats::Summary;

/// "105.6 ns (95% CI 105.5 to 105.7, n = 10)".
pub(crate) fn with_ci(s: &Summary, unit: &str) -> String {
    match &s.ci95 {
        Some(ci) => format!(
            "{:.1} {unit} (95% CI {:.1} to {:.1}, n = {})",
            s.mean, ci.low, ci.high, s.n
        ),
        None => format!("{:.1} {unit} (n = {})", s.mean, s.n),
    }
}

/// A figure for a sentence: thousands grouped from 100 up, two decimals
/// below, "n/a" when undefined.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v.abs() >= 100.0 {
        report::group_thousands(v.round() as i64)
    } else {
        format!("{v:.2}")
    }
}

/// A section's table from plain cells.
pub(crate) fn table(title: &str, headers: &[&str], rows: Vec<Vec<String>>) -> TableData {
    TableData {
        title: title.into(),
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// A chart value without an interval (0 when undefined).
pub(crate) fn exact(v: f64) -> Estimate {
    Estimate::exact(if v.is_finite() { v } else { 0.0 })
}
