//! How the study writes its numbers: in sentences, tables and charts.
//!
//! Rules every section follows through these helpers:
//! - a count (faults, IPIs, acquisitions, kB) is a whole number, grouped:
//!   "0 were contended", never "0.00" or "4.33";
//! - sizes and durations are written in human units ("16.0 MiB", "6.93 us");
//! - a mean of repeated runs carries its interval and n from a
//!   quantity-aware summary, so no bound is below zero, and with fewer than
//!   five runs that differ it says "no interval" instead of inventing one;
//!   the interval's method is named once, in the method paragraph
//!   ([`INTERVALS`]), not after every number;
//! - time is the kernel's (measured on this machine) or the model's
//!   prediction in virtual time (`super::time`, with the cost file's
//!   interval), always named as which; the model's wall clock is ptlab's
//!   own speed and appears nowhere in the text.

use super::{TableCell, TableData};
use report::Unit;
use stats::{MeanInterval, Summary};

/// The sentence for a method paragraph that names how intervals are made.
pub(crate) const INTERVALS: &str =
    "Means of repeated runs carry a 95% bootstrap percentile interval (10,000 \
     resamples), which stays within the runs' range and so never below zero; \
     runs that all agree are exact, and fewer than 5 runs that differ get no interval.";

/// A mean with its interval and n, in `unit`, the method left to
/// [`INTERVALS`]: "6.93 us (95% CI 5.72 us to 8.09 us, n = 5)",
/// "0 (exact: all 5 runs equal)", "4 (n = 3, no interval)".
pub(crate) fn estimate(s: &Summary, unit: Unit) -> String {
    let mean = report::human(s.mean, unit);
    match s.interval {
        MeanInterval::Estimated { interval, .. } => format!(
            "{mean} (95% CI {} to {}, n = {})",
            report::human(interval.low, unit),
            report::human(interval.high, unit),
            s.n
        ),
        MeanInterval::NoSpread { n, .. } if n > 1 => format!("{mean} (exact: all {n} runs equal)"),
        MeanInterval::NoSpread { .. } => format!("{mean} (one run)"),
        MeanInterval::TooFewRuns { n, .. } => format!("{mean} (n = {n}, no interval)"),
    }
}

/// A count for a sentence or a table: whole and grouped ("65,536"), "n/a"
/// when undefined.
pub(crate) fn count(v: f64) -> String {
    report::human(v, Unit::Count)
}

/// A size in kB (the kB of /proc) for people: "16.0 MiB", "36.0 KiB".
pub(crate) fn kb(v: f64) -> String {
    report::human(v, Unit::Kilobytes)
}

/// A count as a JSON figure: a whole number, `null` when undefined.
pub(crate) fn count_figure(v: f64) -> Option<i64> {
    v.is_finite().then(|| v.round() as i64)
}

/// A rate or ratio for a sentence (not a count): thousands grouped from 100
/// up, two decimals below, "n/a" when undefined.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v == 0.0 {
        // An exact zero is not a measurement to two decimals.
        "0".into()
    } else if v.abs() >= 100.0 {
        report::group_thousands(v.round() as i64)
    } else {
        format!("{v:.2}")
    }
}

/// A section's table from plain cells.
pub(crate) fn table(title: &str, headers: &[&str], rows: Vec<Vec<TableCell>>) -> TableData {
    TableData {
        title: title.into(),
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stats::Quantity;

    #[test]
    fn counts_are_whole_and_intervals_never_negative() {
        assert_eq!(count(4.33), "4");
        assert_eq!(count(65536.0), "65,536");
        assert_eq!(count(f64::NAN), "n/a");
        assert_eq!(count_figure(4.6), Some(5));
        assert_eq!(count_figure(f64::NAN), None);
        // The sample that gave "322.0 (95% CI -219.8 to 863.8, n = 5)".
        let s = Summary::of_quantity(&[0.0, 0.0, 0.0, 0.0, 1610.0], Quantity::Count).unwrap();
        let text = estimate(&s, Unit::Count);
        assert!(text.starts_with("322 (95% CI "), "{text}");
        assert!(!text.contains('-'), "{text}");
        assert!(text.ends_with(", n = 5)"), "{text}");
        let few = Summary::of_quantity(&[3.0, 4.0, 6.0], Quantity::Count).unwrap();
        assert_eq!(estimate(&few, Unit::Count), "4 (n = 3, no interval)");
        let same = Summary::of_quantity(&[0.0; 5], Quantity::Count).unwrap();
        assert_eq!(estimate(&same, Unit::Count), "0 (exact: all 5 runs equal)");
    }

    #[test]
    fn times_and_sizes_in_human_units() {
        let s = Summary::of_quantity(&[6000.0; 5], Quantity::Time).unwrap();
        assert_eq!(
            estimate(&s, Unit::Nanoseconds),
            "6.00 us (exact: all 5 runs equal)"
        );
        assert_eq!(kb(36.0), "36.0 KiB");
    }
}
