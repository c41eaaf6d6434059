//! Small readers and parsers for the text files of /proc and /sys.
//!
//! Invariants: nothing here panics on odd input, and an unreadable file is
//! `None`, never an error, so callers can report "unavailable". The byte-slice
//! parsers ([`field_kb`], [`tlb_total`]) allocate nothing: the counter reader
//! calls them inside measured code.

use std::path::Path;

/// The whole text of a file, or `None` if it cannot be read.
pub fn read_string(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The first line of a file, trimmed, or `None` if unreadable or empty.
pub fn read_line(path: impl AsRef<Path>) -> Option<String> {
    let text = read_string(path)?;
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_string())
}

/// A file holding one integer (e.g. `/proc/sys/kernel/numa_balancing`).
pub fn read_u64(path: impl AsRef<Path>) -> Option<u64> {
    read_line(path)?.parse().ok()
}

/// The choice in brackets of a sysfs selector: `"always [madvise] never"` gives
/// `"madvise"`.
pub fn selected_choice(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = start + text[start..].find(']')?;
    Some(&text[start + 1..end])
}

/// The number after `key:` on the line that starts with `key` (the layout of
/// /proc/meminfo, /proc/self/status and smaps_rollup: `VmPTE:      128 kB`).
/// Allocation-free.
pub fn field_kb(text: &[u8], key: &[u8]) -> Option<u64> {
    for line in text.split(|&b| b == b'\n') {
        if line.len() > key.len() && line.starts_with(key) && line[key.len()] == b':' {
            return parse_first_u64(&line[key.len() + 1..]);
        }
    }
    None
}

/// The first run of decimal digits after leading blanks.
fn parse_first_u64(bytes: &[u8]) -> Option<u64> {
    let rest = trim_start(bytes);
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut value: u64 = 0;
    for &b in &rest[..digits] {
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(value)
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let n = bytes
        .iter()
        .take_while(|b| **b == b' ' || **b == b'\t')
        .count();
    &bytes[n..]
}

/// The sum over all CPUs of the `TLB:` line of /proc/interrupts (x86 "TLB
/// shootdowns"). `None` if there is no such line (other architectures).
/// Allocation-free.
pub fn tlb_total(interrupts: &[u8]) -> Option<u64> {
    for line in interrupts.split(|&b| b == b'\n') {
        let line = trim_start(line);
        if let Some(rest) = line.strip_prefix(b"TLB:") {
            let mut total: u64 = 0;
            // Per-CPU counts come first; the description ("TLB shootdowns")
            // ends them.
            for token in rest.split(|b| *b == b' ' || *b == b'\t') {
                if token.is_empty() {
                    continue;
                }
                if !token.iter().all(u8::is_ascii_digit) {
                    break;
                }
                total = total.saturating_add(parse_first_u64(token)?);
            }
            return Some(total);
        }
    }
    None
}

/// The value of the line `name value` of /proc/vmstat. Allocation-free.
pub fn vmstat_value(vmstat: &[u8], name: &[u8]) -> Option<u64> {
    vmstat.split(|&b| b == b'\n').find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(b" ")?;
        parse_first_u64(rest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmstat_value_finds_the_whole_name() {
        let text = b"thp_collapse_alloc_failed 3\nthp_collapse_alloc 106\nthp_split_page 9\n";
        assert_eq!(vmstat_value(text, b"thp_collapse_alloc"), Some(106));
        assert_eq!(vmstat_value(text, b"thp_split_page"), Some(9));
        assert_eq!(vmstat_value(text, b"thp_split"), None);
    }

    const STATUS: &[u8] =
        b"Name:\tcat\nVmPTEx:\t9 kB\nVmPTE:\t      48 kB\nRssAnon:\t     512 kB\nThreads:\t1\n";

    #[test]
    fn field_kb_finds_exact_key() {
        assert_eq!(field_kb(STATUS, b"VmPTE"), Some(48));
        assert_eq!(field_kb(STATUS, b"RssAnon"), Some(512));
        assert_eq!(field_kb(STATUS, b"Threads"), Some(1));
        assert_eq!(field_kb(STATUS, b"VmPT"), None);
        assert_eq!(field_kb(STATUS, b"RssFile"), None);
        assert_eq!(field_kb(STATUS, b"Name"), None);
    }

    #[test]
    fn selected_choice_reads_brackets() {
        assert_eq!(selected_choice("always [madvise] never\n"), Some("madvise"));
        assert_eq!(
            selected_choice("always defer defer+madvise [madvise] never"),
            Some("madvise")
        );
        assert_eq!(selected_choice("always madvise never"), None);
    }

    #[test]
    fn tlb_total_sums_cpus() {
        let text = b"           CPU0       CPU1\n  0:         33          0  IO-APIC    2-edge      timer\n TLB:       3792       4033   TLB shootdowns\n";
        assert_eq!(tlb_total(text), Some(7825));
        assert_eq!(tlb_total(b"  0: 1 2 timer\n"), None);
    }

    proptest::proptest! {
        #[test]
        fn field_kb_round_trips(key in "[A-Za-z_]{1,12}", value in 0u64..1u64 << 50, pad in 0usize..10) {
            let text = format!("Other:\t1 kB\n{key}:{}{value} kB\nLast:\t2\n", " ".repeat(pad));
            let expected = if key == "Other" { Some(1) } else if key == "Last" { Some(2) } else { Some(value) };
            proptest::prop_assert_eq!(field_kb(text.as_bytes(), key.as_bytes()), expected);
        }

        #[test]
        fn tlb_total_matches_sum(counts in proptest::collection::vec(0u64..1u64 << 40, 1..64)) {
            let cols: Vec<String> = counts.iter().map(|c| format!("{c:>10}")).collect();
            let text = format!(" NMI: 0 0 Non-maskable\n TLB:{}   TLB shootdowns\n", cols.join(" "));
            proptest::prop_assert_eq!(tlb_total(text.as_bytes()), Some(counts.iter().sum()));
        }
    }
}
