//! /proc/meminfo: the system's memory figures, in kB as the kernel prints them.

use std::collections::BTreeMap;

use serde::Serialize;

/// The total size in bytes of the active swap areas (/proc/swaps), `None`
/// when there are none or the file cannot be read.
pub fn active_swap_bytes() -> Option<u64> {
    crate::procfs::read_string("/proc/swaps").and_then(|t| parse_swaps(&t))
}

/// The total of /proc/swaps' `Size` column (KiB) in bytes, `None` for no
/// area.
pub fn parse_swaps(text: &str) -> Option<u64> {
    let kib: u64 = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .sum();
    (kib > 0).then_some(kib << 10)
}

/// Every line of /proc/meminfo, with getters for the ones ptlab uses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MemInfo {
    /// Field name (as printed, e.g. `"MemAvailable"`) to value. Values in kB
    /// except the few counts the kernel prints without a unit (HugePages_*).
    pub fields: BTreeMap<String, u64>,
}

impl MemInfo {
    /// Reads /proc/meminfo; `None` if it is unreadable (not Linux, no /proc).
    pub fn read() -> Option<MemInfo> {
        crate::procfs::read_string("/proc/meminfo").map(|text| MemInfo::parse(&text))
    }

    /// Parses the text of /proc/meminfo; lines that do not parse are skipped.
    pub fn parse(text: &str) -> MemInfo {
        let fields = text
            .lines()
            .filter_map(|line| {
                let (key, rest) = line.split_once(':')?;
                let value = rest.split_whitespace().next()?.parse().ok()?;
                Some((key.trim().to_string(), value))
            })
            .collect();
        MemInfo { fields }
    }

    /// A field by name.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.fields.get(name).copied()
    }

    pub fn mem_total_kb(&self) -> Option<u64> {
        self.get("MemTotal")
    }

    pub fn mem_available_kb(&self) -> Option<u64> {
        self.get("MemAvailable")
    }

    pub fn swap_total_kb(&self) -> Option<u64> {
        self.get("SwapTotal")
    }

    pub fn swap_free_kb(&self) -> Option<u64> {
        self.get("SwapFree")
    }

    /// Page-table memory of the whole system (all processes and the kernel).
    pub fn page_tables_kb(&self) -> Option<u64> {
        self.get("PageTables")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_and_skips_junk() {
        let m = MemInfo::parse(
            "MemTotal:       24551316 kB\nMemAvailable:   24258260 kB\nnonsense\nHugePages_Total:       0\nSwapTotal:             0 kB\n",
        );
        assert_eq!(m.mem_total_kb(), Some(24_551_316));
        assert_eq!(m.mem_available_kb(), Some(24_258_260));
        assert_eq!(m.swap_total_kb(), Some(0));
        assert_eq!(m.get("HugePages_Total"), Some(0));
        assert_eq!(m.page_tables_kb(), None);
        assert_eq!(m.fields.len(), 4);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_host_has_memory() {
        let m = MemInfo::read().expect("/proc/meminfo on Linux");
        let total = m.mem_total_kb().unwrap();
        let available = m.mem_available_kb().unwrap();
        assert!(total > 0 && available <= total);
    }
}
