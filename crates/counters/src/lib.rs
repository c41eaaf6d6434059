//! `counters`: the one registry of ptlab's counters.
//!
//! Every counter a run can carry is declared once, in [`ALL`], with its name,
//! unit, meaning, whether `ptlab validate` compares it, where the kernel
//! backend reads it, and whether the terminal tables show it by default.
//! Every other list is derived from this table, at compile time where a
//! constant is needed: the report's row order ([`MAIN`]), the kernel wire
//! format's sample words ([`KERNEL_SAMPLED`]), validate's compared set
//! ([`COMPARED`]), the default columns ([`is_default_column`]). Producers name
//! counters through the identifiers below (`counters::MINOR_FAULTS.name`),
//! never through a string of their own.
//!
//! Invariants (checked by this crate's tests):
//! - names are unique across single counters and family members;
//! - a counter's unit agrees with its name's suffix (`_kb` is kB, `_ns` is ns),
//!   the workload format's convention that people read names by;
//! - every compared counter is read by the kernel (a model-only counter
//!   cannot be held to the kernel).
//!
//! This crate has no dependencies, so that the model's crates (`mm`, `mmu`),
//! the format (`workload`), the backends and the report can all name counters
//! through it.

mod family;
mod registry;

pub use family::*;
pub use registry::*;

/// What a counter's value counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Events or pages: no unit.
    Count,
    /// Kibibytes (printed as the kernel prints them: "kB").
    KiB,
    /// Nanoseconds.
    Ns,
}

impl Unit {
    /// The unit as tables print it (`""` for a count).
    pub const fn symbol(self) -> &'static str {
        match self {
            Unit::Count => "",
            Unit::KiB => "kB",
            Unit::Ns => "ns",
        }
    }
}

/// Where a counter's value comes from on the kernel backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `getrusage(RUSAGE_SELF)`: the whole process, all threads.
    Getrusage,
    /// A line of `/proc/self/status`, by its field name.
    ProcStatus(&'static str),
    /// A line of `/proc/self/smaps_rollup`, by its field name.
    SmapsRollup(&'static str),
    /// A line of `/proc/interrupts` summed over CPUs (system-wide).
    Interrupts(&'static str),
    /// A line of `/proc/vmstat`, by its name (system-wide).
    Vmstat(&'static str),
    /// `CLOCK_MONOTONIC` around the workload.
    MonotonicClock,
    /// `CLOCK_PROCESS_CPUTIME_ID`: the CPU time of every thread of the
    /// workload's process (preemption by other processes left out).
    ProcessCpuClock,
    /// Computed from other counters after the run (either backend).
    Derived,
    /// Only the model has it.
    ModelOnly,
}

impl Source {
    /// Whether the kernel backend's child samples it at every mark (as one
    /// word of the wire format's sample).
    pub const fn kernel_sampled(self) -> bool {
        matches!(
            self,
            Source::Getrusage
                | Source::ProcStatus(_)
                | Source::SmapsRollup(_)
                | Source::Interrupts(_)
                | Source::Vmstat(_)
        )
    }
}

/// Where the terminal tables show a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Shown by default, in registry order (the report's row order).
    Main,
    /// Shown by default, after the main counters, by name.
    Derived,
    /// Only with `--all` (and in CSV and JSON, which hold everything).
    All,
}

/// How many names a registry entry stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Members {
    /// One counter: the entry's name.
    One,
    /// A family of counters with these names (a breakdown of a total).
    Listed(&'static [&'static str]),
    /// One counter per page-table level: `<name>.<LEVEL>` (e.g. `pt_pages.PTE`),
    /// the level names of the geometry that ran.
    PerLevel,
    /// One counter per modeled CPU: the entry's name with `<n>` replaced by
    /// the CPU's number (`predicted_cpu<n>_ns` stands for
    /// `predicted_cpu0_ns`, `predicted_cpu1_ns`, ...).
    PerCpu,
}

/// One registry entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// The counter's name (a family's: the name of what it breaks down).
    pub name: &'static str,
    pub unit: Unit,
    /// One sentence for people.
    pub meaning: &'static str,
    /// Whether `ptlab validate` holds the model to the kernel on it.
    pub compared: bool,
    pub source: Source,
    pub view: View,
    pub members: Members,
}

impl Counter {
    /// Whether `name` is this entry's counter or one of its family.
    pub fn covers(&self, name: &str) -> bool {
        match self.members {
            Members::One => name == self.name,
            Members::Listed(names) => names.contains(&name),
            Members::PerLevel => name
                .strip_prefix(self.name)
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|level| !level.is_empty()),
            Members::PerCpu => {
                let (pre, post) = self.name.split_once("<n>").unwrap_or((self.name, ""));
                name.strip_prefix(pre)
                    .and_then(|rest| rest.strip_suffix(post))
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            }
        }
    }
}

/// The entry that registers `name` (a single counter or a family member).
pub fn lookup(name: &str) -> Option<&'static Counter> {
    ALL.iter().find(|c| c.covers(name))
}

/// The unit of `name` as tables print it; unregistered names fall back to the
/// suffix convention (`_kb`, `_ns`, `_bytes`).
pub fn unit_of(name: &str) -> &'static str {
    match lookup(name) {
        Some(c) => c.unit.symbol(),
        None if name.ends_with("_kb") => Unit::KiB.symbol(),
        None if name.ends_with("_ns") => Unit::Ns.symbol(),
        None if name.ends_with("_bytes") => "B",
        None => Unit::Count.symbol(),
    }
}

/// Whether the terminal tables show `name` unless `--all`.
pub fn is_default_column(name: &str) -> bool {
    ALL.iter()
        .any(|c| matches!(c.members, Members::One) && c.name == name && c.view != View::All)
}

/// The names of the entries of [`ALL`] that satisfy `$pick` (an expression
/// over `$c: &Counter`), in registry order, as a constant slice.
macro_rules! select {
    ($c:ident => $pick:expr) => {{
        const N: usize = {
            let (mut i, mut n) = (0, 0);
            while i < ALL.len() {
                let $c = &ALL[i];
                if $pick {
                    n += 1;
                }
                i += 1;
            }
            n
        };
        const OUT: [&str; N] = {
            let mut out = [""; N];
            let (mut i, mut n) = (0, 0);
            while i < ALL.len() {
                let $c = &ALL[i];
                if $pick {
                    out[n] = $c.name;
                    n += 1;
                }
                i += 1;
            }
            out
        };
        &OUT
    }};
}

/// Counters `ptlab validate` compares, in registry order.
pub const COMPARED: &[&str] = select!(c => c.compared);

/// Counters the kernel backend samples at every mark, in registry order: the
/// order of the words of a sample on the wire.
pub const KERNEL_SAMPLED: &[&str] = select!(c => c.source.kernel_sampled());

/// The main counters in registry order: the order of every table's rows, and
/// (with the derived ones) what `run` shows unless `--all`.
pub const MAIN: &[&str] = select!(c => matches!(c.view, View::Main));

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every name the registry stands for (families expanded; per-level ones
    /// by their prefix).
    fn all_names() -> Vec<String> {
        ALL.iter()
            .flat_map(|c| match c.members {
                Members::One => vec![c.name.to_string()],
                Members::PerLevel => vec![format!("{}.PTE", c.name)],
                Members::PerCpu => vec![c.name.replace("<n>", "0"), c.name.replace("<n>", "79")],
                Members::Listed(names) => names.iter().map(|n| n.to_string()).collect(),
            })
            .collect()
    }

    #[test]
    fn per_cpu_members_are_numbered_names() {
        assert!(PREDICTED_CPU_NS.covers("predicted_cpu0_ns"));
        assert!(PREDICTED_CPU_NS.covers("predicted_cpu79_ns"));
        assert!(!PREDICTED_CPU_NS.covers("predicted_cpu_ns"));
        assert!(!PREDICTED_CPU_NS.covers("predicted_cpux_ns"));
        assert!(!PREDICTED_CPU_NS.covers("predicted_cpu1_kb"));
        assert_eq!(unit_of("predicted_cpu12_ns"), "ns");
    }

    #[test]
    fn names_are_unique() {
        let names = all_names();
        let set: BTreeSet<_> = names.iter().collect();
        assert_eq!(set.len(), names.len(), "a name is registered twice");
        let entries: BTreeSet<_> = ALL.iter().map(|c| c.name).collect();
        assert_eq!(
            entries.len(),
            ALL.len(),
            "an entry name is registered twice"
        );
        for n in &names {
            assert_eq!(lookup(n).map(|c| c.covers(n)), Some(true), "{n}");
        }
    }

    #[test]
    fn units_agree_with_name_suffixes() {
        // Times per event (`ns_per_fault`) say their unit with a prefix.
        for n in all_names() {
            let unit = lookup(&n).unwrap().unit;
            let by_name = if n.ends_with("_kb") {
                Unit::KiB
            } else if n.ends_with("_ns") || n.starts_with("ns_per_") {
                Unit::Ns
            } else {
                Unit::Count
            };
            assert_eq!(unit, by_name, "{n}");
        }
    }

    #[test]
    fn compared_counters_are_read_by_the_kernel() {
        assert!(!COMPARED.is_empty());
        for n in COMPARED {
            let c = lookup(n).unwrap();
            assert!(c.source.kernel_sampled(), "{n} is compared but not read");
            assert_eq!(c.members, Members::One, "{n}");
        }
    }

    #[test]
    fn derived_lists_follow_the_table() {
        // Not a copy of the table: the selection is checked against the
        // entries' own flags, and families never leak in.
        let compared: Vec<_> = ALL.iter().filter(|c| c.compared).map(|c| c.name).collect();
        assert_eq!(COMPARED.to_vec(), compared);
        for n in KERNEL_SAMPLED {
            assert!(lookup(n).unwrap().source.kernel_sampled());
        }
        assert!(KERNEL_SAMPLED.iter().all(|n| !n.is_empty()));
        assert!(MAIN.iter().all(|n| !n.is_empty()));
        assert!(MAIN.contains(&WALK_REFS.name));
        assert!(!MAIN.contains(&AD_WRITES.name));
        assert!(is_default_column(NS_PER_FAULT.name));
        assert!(!is_default_column(AD_WRITES.name));
        assert!(!is_default_column(LOCK_ACQUISITIONS_BY_LOCK[0]));
        // The model's own speed is no figure of the modeled system: only
        // with --all.
        assert!(!is_default_column(MODEL_WALL_NS.name));
        assert_eq!(lookup(MODEL_WALL_NS.name).map(|c| c.unit), Some(Unit::Ns));
    }

    #[test]
    fn families_and_levels_are_found() {
        assert_eq!(lookup("pt_pages.PTE").map(|c| c.name), Some(PT_PAGES.name));
        assert!(lookup("pt_pages.").is_none());
        assert!(lookup("pt_pagesX").is_none());
        assert_eq!(
            lookup(TLB_MISSES_BY_SIZE[3]).map(|c| c.name),
            Some("tlb_misses_<size>")
        );
        assert_eq!(lookup("no_such_counter"), None);
        assert_eq!(unit_of(VMPTE_KB.name), "kB");
        assert_eq!(unit_of("something_ns"), "ns");
        assert_eq!(unit_of(MINOR_FAULTS.name), "");
    }
}
