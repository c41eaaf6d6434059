//! Sizes and durations as the format writes them.
//!
//! Sizes: an integer number of bytes (a TOML integer, handled by the caller),
//! or a string of decimal digits followed by one binary unit: `KiB`, `MiB`,
//! `GiB`, `TiB`, `PiB`, `EiB` (`"4KiB"`, `"50GiB"`, `"1PiB"`). The bytes
//! must fit in 64 bits: `"15EiB"` is the largest whole number of EiB,
//! `"16EiB"` (2^64) is an overflow. Nothing else: no decimal units (`KB`),
//! no single letters (`4k`), no fractions, no spaces, no bare digits in a
//! string. Durations: decimal digits followed by `ns`, `us`, `ms` or `s`.
//!
//! Invariant: `parse_size(&format_size(n)) == Ok(n)` for every `n` that is a
//! non-zero multiple of 1 KiB, and `parse_duration(&format_duration(d)) ==
//! Ok(d)` for every whole number of nanoseconds up to `u64::MAX`.

use std::time::Duration;

/// What a size string may look like, for error messages.
pub const SIZE_EXPECTED: &str =
    "a size: an integer number of bytes, or a string with a binary unit \
     (KiB, MiB, GiB, TiB, PiB, EiB) such as \"4KiB\", \"2MiB\", \"1GiB\"";

/// What a duration string may look like, for error messages.
pub const DURATION_EXPECTED: &str =
    "a duration: a string of whole digits with a unit (ns, us, ms, s) such as \"10ms\", \"2s\", \"500us\"";

/// Binary units, largest first (so formatting picks the largest that fits).
const SIZE_UNITS: &[(&str, u64)] = &[
    ("EiB", 1 << 60),
    ("PiB", 1 << 50),
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
];

/// Duration units in nanoseconds, largest first.
const DURATION_UNITS: &[(&str, u64)] = &[
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// Why a size or duration string was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitError {
    /// The text is not digits followed by an accepted unit.
    Syntax,
    /// The value does not fit in 64 bits.
    Overflow,
}

/// Splits `"123KiB"` into `(123, "KiB")`; the number must be plain decimal digits.
fn split_number(s: &str) -> Result<(u64, &str), UnitError> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(UnitError::Syntax);
    }
    let (number, unit) = s.split_at(digits);
    // Digits only, so the one possible failure is overflow.
    let n = number.parse::<u64>().map_err(|_| UnitError::Overflow)?;
    Ok((n, unit))
}

fn parse_with_units(s: &str, units: &[(&str, u64)]) -> Result<u64, UnitError> {
    let (n, unit) = split_number(s)?;
    let (_, factor) = units
        .iter()
        .find(|(name, _)| *name == unit)
        .ok_or(UnitError::Syntax)?;
    n.checked_mul(*factor).ok_or(UnitError::Overflow)
}

/// Parses a size string with a binary unit (`"4KiB"`) into bytes.
///
/// # Errors
///
/// [`UnitError::Syntax`] unless the text is digits followed by `KiB`, `MiB`,
/// `GiB`, `TiB`, `PiB` or `EiB`; [`UnitError::Overflow`] if the bytes do not fit in `u64`.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    parse_with_units(s, SIZE_UNITS)
}

/// Parses a duration string (`"10ms"`).
///
/// # Errors
///
/// [`UnitError::Syntax`] unless the text is digits followed by `ns`, `us`,
/// `ms` or `s`; [`UnitError::Overflow`] if the nanoseconds do not fit in `u64`.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    parse_with_units(s, DURATION_UNITS).map(Duration::from_nanos)
}

fn format_with_units(n: u64, units: &[(&str, u64)]) -> Option<String> {
    units
        .iter()
        .find(|(_, factor)| n != 0 && n.is_multiple_of(*factor))
        .map(|(unit, factor)| format!("{}{unit}", n / factor))
}

/// A size the way the format writes it: with the largest binary unit that
/// divides it (`"2MiB"`), or as plain bytes (`"4097"`) when no unit does.
pub fn format_size(bytes: u64) -> String {
    format_with_units(bytes, SIZE_UNITS).unwrap_or_else(|| bytes.to_string())
}

/// A duration the way the format writes it, with the largest unit that
/// divides it exactly (`"10ms"`); durations beyond `u64` nanoseconds saturate.
pub fn format_duration(d: Duration) -> String {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    format_with_units(ns, DURATION_UNITS).unwrap_or_else(|| "0ns".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_the_spec_examples() {
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("50GiB"), Ok(50 << 30));
        assert_eq!(parse_size("1TiB"), Ok(1 << 40));
        assert_eq!(parse_size("1PiB"), Ok(1 << 50));
        assert_eq!(parse_size("64PiB"), Ok(64 << 50));
        assert_eq!(parse_size("1EiB"), Ok(1 << 60));
        assert_eq!(parse_size("15EiB"), Ok(15 << 60));
        assert_eq!(parse_size("16383PiB"), Ok(16383 << 50));
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
    }

    #[test]
    fn refuses_everything_else() {
        for bad in [
            "4KB", "4k", "4K", "4kib", "4 KiB", " 4KiB", "4KiB ", "1.5GiB", "KiB", "", "4096",
            "-4KiB", "+4KiB", "4KiBKiB", "0x10KiB", "4ms",
        ] {
            assert_eq!(parse_size(bad), Err(UnitError::Syntax), "{bad:?}");
        }
        for bad in ["10", "10 ms", "1.5s", "10m", "10sec", "ms", "-1s", "4KiB"] {
            assert_eq!(parse_duration(bad), Err(UnitError::Syntax), "{bad:?}");
        }
        assert_eq!(parse_size("16777216TiB"), Err(UnitError::Overflow));
        // 2^64 bytes, the first size past u64, in each large unit.
        assert_eq!(parse_size("16EiB"), Err(UnitError::Overflow));
        assert_eq!(parse_size("16384PiB"), Err(UnitError::Overflow));
        assert_eq!(
            parse_size("18446744073709551615EiB"),
            Err(UnitError::Overflow)
        );
        for bad in ["1pib", "1PB", "1EB", "1eib", "1 PiB", "1ZiB"] {
            assert_eq!(parse_size(bad), Err(UnitError::Syntax), "{bad:?}");
        }
        assert_eq!(
            parse_size("99999999999999999999999KiB"),
            Err(UnitError::Overflow)
        );
    }

    #[test]
    fn formats_with_the_largest_exact_unit() {
        assert_eq!(format_size(4096), "4KiB");
        assert_eq!(format_size(3 << 20), "3MiB");
        assert_eq!(format_size(1536 << 20), "1536MiB");
        assert_eq!(format_size(4097), "4097");
        assert_eq!(format_size(1 << 50), "1PiB");
        assert_eq!(format_size(3 << 60), "3EiB");
        assert_eq!(format_size(1025 << 40), "1025TiB");
        assert_eq!(format_size(0), "0");
        assert_eq!(format_duration(Duration::from_micros(1500)), "1500us");
    }

    const UNIT_FACTORS: &[(&str, u64)] = &[
        ("KiB", 1024),
        ("MiB", 1024 * 1024),
        ("GiB", 1024 * 1024 * 1024),
        ("TiB", 1024 * 1024 * 1024 * 1024),
        ("PiB", 1024 * 1024 * 1024 * 1024 * 1024),
        ("EiB", 1024 * 1024 * 1024 * 1024 * 1024 * 1024),
    ];

    proptest! {
        // Reference: the number times the unit's factor, computed in u128.
        #[test]
        fn size_matches_reference(n in 0u64..(1 << 44), u in 0usize..6) {
            let (unit, factor) = UNIT_FACTORS[u];
            let wide = u128::from(n) * u128::from(factor);
            let parsed = parse_size(&format!("{n}{unit}"));
            if wide > u128::from(u64::MAX) {
                prop_assert_eq!(parsed, Err(UnitError::Overflow));
            } else {
                prop_assert_eq!(parsed, Ok(wide as u64));
            }
        }

        #[test]
        fn size_round_trips(k in 1u64..(u64::MAX >> 10)) {
            let bytes = k << 10;
            prop_assert_eq!(parse_size(&format_size(bytes)), Ok(bytes));
        }

        #[test]
        fn duration_round_trips(ns in 1u64..u64::MAX) {
            let d = Duration::from_nanos(ns);
            prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,24}") {
            let _ = parse_size(&s);
            let _ = parse_duration(&s);
        }
    }
}
