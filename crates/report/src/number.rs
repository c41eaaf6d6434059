//! Numbers for people: thousands separators, sensible decimals, units of counters,
//! and human-scaled quantities ([`human`]: `419 ms`, not `419,147,292 ns`).
//!
//! Only text for people is scaled: JSON and CSV keep the exact values (a [`Cell`]
//! exports its raw number whatever its [`Unit`]).
//!
//! [`Cell`]: crate::Cell

use stats::{MeanInterval, Quantity, Summary};

/// `16384` → `"16,384"`, `-1234567` → `"-1,234,567"`.
pub fn group_thousands(v: i64) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if v < 0 {
        out.push('-');
    }
    out.push_str(&group_digits(&digits));
    out
}

/// Inserts a comma every three digits of a string of ASCII digits.
fn group_digits(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `v` with `decimals` decimals and a grouped integer part: `1234.5678, 2` →
/// `"1,234.57"`. NaN prints as `"n/a"`, infinities as `"inf"` and `"-inf"`.
pub fn format_float(v: f64, decimals: usize) -> String {
    if v.is_nan() {
        return "n/a".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (s.as_str(), None),
    };
    // "-0.00" would claim a sign the rounded value does not have.
    let negative = v < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0');
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    out.push_str(&group_digits(int));
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// Decimals that show two significant digits of a CI half-width (`0.0608` → 3,
/// `4.7` → 1, `1234` → 0); for no or a zero half-width, 0 decimals for an integer
/// mean and three significant digits otherwise.
pub(crate) fn decimals_for(mean: f64, half_width: Option<f64>) -> usize {
    match half_width {
        Some(hw) if hw > 0.0 && hw.is_finite() => {
            (1 - hw.log10().floor() as i64).clamp(0, 9) as usize
        }
        _ if mean.fract() == 0.0 || !mean.is_finite() => 0,
        _ => (2 - mean.abs().log10().floor() as i64).clamp(0, 6) as usize,
    }
}

pub use counters::unit_of;

/// What a number measures, which decides how it is written for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Unit {
    /// A plain number, written with the decimals it is given.
    #[default]
    Plain,
    /// Events, pages: written as a whole number with thousands separators.
    Count,
    /// A duration in nanoseconds: `830 ns`, `4.20 us`, `419 ms`, `2.50 s`.
    Nanoseconds,
    /// A size in kilobytes of 1,024 bytes (the `kB` of /proc): `2.00 MiB`.
    Kilobytes,
    /// A size in bytes: `512 B`, `4.00 KiB`.
    Bytes,
    /// A share in percent, at most 100: `12.5%`.
    Percent,
}

impl Unit {
    /// The unit of a counter, from the registry ([`unit_of`]: a registered
    /// counter's own unit, so `ns_per_fault` is a duration; an unregistered
    /// name by its suffix): `ns` a duration, `kB` and `B` a size, anything
    /// else a count.
    pub fn of_counter(counter: &str) -> Unit {
        match unit_of(counter) {
            "ns" => Unit::Nanoseconds,
            "kB" => Unit::Kilobytes,
            "B" => Unit::Bytes,
            _ => Unit::Count,
        }
    }

    /// The kind of quantity, for [`stats::Summary::of_quantity`]: sizes and counts
    /// are whole non-negative numbers, durations are times.
    pub fn quantity(self) -> Quantity {
        match self {
            Unit::Count | Unit::Kilobytes | Unit::Bytes => Quantity::Count,
            Unit::Nanoseconds => Quantity::Time,
            Unit::Percent => Quantity::NonNegative,
            Unit::Plain => Quantity::Signed,
        }
    }
}

/// The kind of quantity of a counter, from its name: what to hand
/// [`stats::Summary::of_quantity`] for it.
pub fn quantity_of(counter: &str) -> Quantity {
    Unit::of_counter(counter).quantity()
}

/// `v` written for people in its `unit`, scaled to three significant digits
/// (`419147292.0, Nanoseconds` → `"419 ms"`; `2048.0, Kilobytes` → `"2.00 MiB"`;
/// `4.33, Count` → `"4"`). [`Unit::Plain`] gives three significant digits too.
/// NaN is `"n/a"`, infinities `"inf"` and `"-inf"`.
pub fn human(v: f64, unit: Unit) -> String {
    if !v.is_finite() {
        return format_float(v, 0);
    }
    match unit {
        Unit::Count => format_float(v.round(), 0),
        Unit::Plain => significant(v, ""),
        // A share too small for three decimals is said to be small, not 0.000001%.
        Unit::Percent if v != 0.0 && v.abs() < 0.001 => "<0.001%".to_string(),
        Unit::Percent => format!("{}%", significant(v, "")),
        Unit::Nanoseconds => scaled(v, &[(1.0, "ns"), (1e3, "us"), (1e6, "ms"), (1e9, "s")]),
        Unit::Kilobytes => human(v * 1024.0, Unit::Bytes),
        Unit::Bytes => scaled(
            v,
            &[
                (1.0, "B"),
                (1024.0, "KiB"),
                (1048576.0, "MiB"),
                (1073741824.0, "GiB"),
                (1099511627776.0, "TiB"),
                (1125899906842624.0, "PiB"),
            ],
        ),
    }
}

/// `v` in the largest of `units` (ascending factors) that keeps it at 1 or more,
/// three significant digits, then the unit's name; bytes are whole.
fn scaled(v: f64, units: &[(f64, &str)]) -> String {
    let a = v.abs();
    let mut i = units.iter().rposition(|(f, _)| a >= *f).unwrap_or(0);
    // 999.7 ns rounds to "1000 ns": one unit up reads "1.00 us".
    if i + 1 < units.len() && round_sig(a / units[i].0) >= units[i + 1].0 / units[i].0 {
        i += 1;
    }
    let (f, name) = units[i];
    if i == 0 && name == "B" {
        return format!("{} B", format_float(v.round(), 0));
    }
    significant(v / f, name)
}

/// Rounds to three significant digits.
fn round_sig(a: f64) -> f64 {
    if a == 0.0 {
        return 0.0;
    }
    let d = sig_decimals(a) as i32;
    let p = 10f64.powi(d);
    (a * p).round() / p
}

/// Decimals that show three significant digits of `a` (none from 100 up).
fn sig_decimals(a: f64) -> usize {
    if a == 0.0 {
        return 0;
    }
    (2 - a.abs().log10().floor() as i64).clamp(0, 6) as usize
}

fn significant(v: f64, unit: &str) -> String {
    let mut d = sig_decimals(v);
    // Rounding can add a digit (99.96 → "100.0"): one decimal fewer then.
    if d > 0 && round_sig(v.abs()) >= 10f64.powi(3 - d as i32) {
        d -= 1;
    }
    let text = format_float(v, d);
    if unit.is_empty() {
        text
    } else {
        format!("{text} {unit}")
    }
}

/// A summary for people, in its unit and with its interval's method:
/// `"322 (95% CI 0 to 966, n = 5, bootstrap percentile, 10,000 resamples)"`,
/// `"524,802 (exact: all 5 runs equal)"`, `"4 (n = 3, too few runs for an interval)"`,
/// `"419 ms (95% CI 401 ms to 436 ms, n = 10, ...)"`. The replacement for
/// formatting `mean` and `ci95` by hand.
pub fn format_summary(s: &Summary, unit: Unit) -> String {
    let mean = human(s.mean, unit);
    match s.interval {
        MeanInterval::Estimated { interval, method } => format!(
            "{mean} (95% CI {} to {}, n = {}, {method})",
            human(interval.low, unit),
            human(interval.high, unit),
            s.n
        ),
        MeanInterval::NoSpread { n, .. } => format!("{mean} (exact: all {n} runs equal)"),
        MeanInterval::TooFewRuns { n, .. } => {
            format!("{mean} (n = {n}, too few runs for an interval)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_of_three() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1000), "1,000");
        assert_eq!(group_thousands(16384), "16,384");
        assert_eq!(group_thousands(-1234567), "-1,234,567");
        assert_eq!(group_thousands(i64::MIN), "-9,223,372,036,854,775,808");
    }

    #[test]
    fn floats() {
        assert_eq!(format_float(1234.5678, 2), "1,234.57");
        assert_eq!(format_float(-0.001, 2), "0.00");
        assert_eq!(format_float(-1234.0, 0), "-1,234");
        assert_eq!(format_float(f64::NAN, 2), "n/a");
        assert_eq!(format_float(f64::NEG_INFINITY, 2), "-inf");
    }

    #[test]
    fn decimals_show_the_precision_there_is() {
        assert_eq!(decimals_for(105.637, Some(0.0608)), 3);
        assert_eq!(decimals_for(10.0, Some(4.7)), 1);
        assert_eq!(decimals_for(1e6, Some(1234.0)), 0);
        assert_eq!(decimals_for(16384.0, Some(0.0)), 0);
        assert_eq!(decimals_for(16384.0, None), 0);
        assert_eq!(decimals_for(1.5, None), 2);
    }

    #[test]
    fn units() {
        assert_eq!(unit_of("vmpte_kb"), "kB");
        assert_eq!(unit_of("elapsed_ns"), "ns");
        assert_eq!(unit_of("minor_faults"), "");
    }
}
