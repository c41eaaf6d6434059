//! Numbers for people: thousands separators, sensible decimals, units of counters.

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

/// The unit of a counter, from the suffix of its name (the workload format's
/// convention): `vmpte_kb` → `"kB"`, `elapsed_ns` → `"ns"`, anything else counts
/// events or pages and has no unit (`""`).
pub fn unit_of(counter: &str) -> &'static str {
    if counter.ends_with("_kb") {
        "kB"
    } else if counter.ends_with("_ns") {
        "ns"
    } else if counter.ends_with("_bytes") {
        "B"
    } else {
        ""
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
