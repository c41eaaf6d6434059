//! `ptlab calibrate`: this host's costs, measured, into a [`CostFile`].
//!
//! Each probe family is a module; each returns figures in the units of the
//! catalog (`costs::catalog`), with intervals from repeated runs:
//!
//! - [`faults`]: minor faults by kind, on the kernel backend (a workload
//!   with marks around each touch).
//! - [`major`]: the major fault, per call and per page its read-ahead
//!   reads (cold files of several sizes, kernel backend).
//! - [`major_pmd`]: the same per page read in PMD-sized folios (cold files
//!   advised hugepage, one and two 2 MiB folios, kernel backend).
//! - [`tables`]: page-table allocation and freeing (sparse against dense
//!   faults and unmaps, on the kernel backend).
//! - [`syscalls`]: mmap, munmap, mprotect, madvise per call and per page,
//!   by least squares over sizes (kernel backend).
//! - [`node_of`]: get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) of a present
//!   page, per call (kernel backend).
//! - [`shootdown`]: a TLB shootdown's cost to its sender and its receiver
//!   (kernel backend, two threads against one).
//! - [`locks`]: an uncontended lock, and a lock hand-off between two CPUs
//!   (threads in this process, pinned).
//! - [`memory`]: clearing and copying memory per KiB (in this process).
//! - [`bandwidth`]: the machine's memory bandwidth shared by two CPUs
//!   clearing at once (in this process).
//! - [`busy`]: whether the host is too busy to calibrate on (the command
//!   refuses a busy host unless `--allow-busy`).
//! - [`latency`]: dependent-load latency by working-set size, the TLB's L2
//!   hit and the miss with its walk, 4 KiB pages against THP (in this
//!   process).
//!
//! Invariants:
//! 1. Every figure written has `0 <= lo <= ns <= hi` and a method; a figure
//!    that could not be measured is left out and named in
//!    [`Calibration::problems`], never replaced by a guess.
//! 2. Bounded: every kernel run has a timeout, every in-process probe a
//!    deadline, and no probe holds more than [`MAX_PROBE_BYTES`] at once;
//!    every probe unmaps what it mapped, on every path.
//! 3. [`MEASURED`] lists every name this module writes (measured or
//!    derived from measured figures); the file holds all of them when
//!    `problems` is empty.

mod bandwidth;
pub mod busy;
mod clock;
pub mod drift;
pub mod estimate;
mod faults;
mod fork;
mod host_info;
mod latency;
mod locks;
mod major;
mod major_pmd;
mod memory;
mod node_of;
use host::affinity as pin;
pub mod robust;
mod runner;
mod shootdown;
mod syscalls;
mod tables;
mod writeback;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub use costs;
use costs::{Cost, CostFile};
use thiserror::Error;

/// The most memory one probe holds at once (the two 1 GiB chases the
/// latency probe interleaves, and their tables).
pub const MAX_PROBE_BYTES: u64 = 2560 << 20;

/// Every cost name calibrate writes, in the order it writes them.
pub const MEASURED: &[&str] = &[
    "fault.anon_write",
    "fault.anon_recycled",
    "fault.zero_read",
    "fault.zero_cow",
    "fault.cow",
    "fault.file_read",
    "fault.shmem",
    "fault.thp",
    "fault.major",
    "fault.major_page",
    "fault.major_pmd",
    "fault.major_pmd_page",
    "fault.mthp_64k",
    "populate.page",
    "populate.zero_page",
    "populate.zero_cow",
    "mlock.folio",
    "pt.alloc",
    "pt.free",
    "fork.call",
    "fork.page",
    "fork.table",
    "mmap.call",
    "syscall.call",
    "node_of.call",
    "fault.file_mkwrite",
    "msync.call",
    "msync.page",
    "munmap.call",
    "munmap.page",
    "mprotect.call",
    "mprotect.page",
    "madvise.call",
    "madvise.page",
    "shootdown.sender",
    "shootdown.receiver",
    "lock.uncontended",
    "lock.handoff",
    "clear.kib",
    "copy.kib",
    "mem.bandwidth_kib",
    "mem.latency_32k",
    "mem.latency_1m",
    "mem.latency_32m",
    "mem.latency_1g",
    "access.tlb_hit",
    "tlb.l2_hit",
    "tlb.miss_walk",
    "tlb.miss_walk_cached",
    "walk.ref_cached",
    "walk.ref_memory",
];

/// How long and how large the probes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Small sizes and five repetitions: for tests (a few seconds).
    Test,
    /// The default: under a minute for the whole command.
    Quick,
    /// `--long`: larger sizes and more repetitions.
    Long,
}

impl Scale {
    /// Repetitions behind every figure.
    pub fn reps(self) -> usize {
        match self {
            Scale::Test => 5,
            Scale::Quick => 10,
            Scale::Long => 30,
        }
    }

    /// The mode written in the file's host table.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Test => "test",
            Scale::Quick => "quick",
            Scale::Long => "long",
        }
    }

    /// Timeout of one kernel run.
    pub(crate) fn kernel_timeout(self) -> Duration {
        match self {
            Scale::Long => Duration::from_secs(300),
            _ => Duration::from_secs(60),
        }
    }

    /// Deadline of one in-process probe.
    pub(crate) fn probe_deadline(self) -> Duration {
        match self {
            Scale::Long => Duration::from_secs(30),
            _ => Duration::from_secs(10),
        }
    }
}

/// Why a probe family failed.
#[derive(Debug, Error)]
pub enum CalibrateError {
    /// A calibration workload did not pass the workload checks (a bug here).
    #[error("{what}: the calibration workload is invalid: {message}")]
    Workload { what: String, message: String },
    /// The kernel backend refused or failed the run.
    #[error("{what}: the kernel run failed: {message}")]
    Kernel { what: String, message: String },
    /// An in-process probe could not run (mmap refused, no second CPU...).
    #[error("{what}: {message}")]
    Probe { what: String, message: String },
}

/// What happens while calibrating, for a progress display.
pub enum Event<'a> {
    /// Family `index` of `total` starts.
    Family {
        name: &'a str,
        index: usize,
        total: usize,
    },
    /// A figure is ready.
    Figure { name: &'a str, cost: &'a Cost },
    /// A family failed; its figures are missing.
    Problem { message: &'a str },
    /// The host moved while a family ran ([`drift`]): `retake` says
    /// whether it is measured again (otherwise its figures are marked).
    Drift {
        family: &'a str,
        message: &'a str,
        retake: bool,
    },
}

/// The result: the file, and what could not be measured.
pub struct Calibration {
    pub file: CostFile,
    /// One line per failed probe family or missing figure.
    pub problems: Vec<String>,
    pub elapsed: Duration,
}

/// Figures collected so far, reported as they come.
pub(crate) struct Figures<'a> {
    costs: BTreeMap<String, Cost>,
    on_event: &'a mut dyn FnMut(Event),
    problems: Vec<String>,
    /// Names written since the family started (to mark them for drift).
    written: Vec<String>,
    /// What is left of the time families may spend measured again.
    retake_left: Duration,
}

impl Figures<'_> {
    /// Records `cost` under `name`; `None` (too few usable samples) is a
    /// problem named by `name`.
    pub fn put(&mut self, name: &str, cost: Option<Cost>) {
        debug_assert!(MEASURED.contains(&name), "{name} is not in MEASURED");
        match cost {
            Some(c) => {
                (self.on_event)(Event::Figure { name, cost: &c });
                self.written.push(name.to_string());
                self.costs.insert(name.to_string(), c);
            }
            None => self.problem(format!("{name}: no usable sample")),
        }
    }

    /// A figure already recorded (for derived ones).
    pub fn get(&self, name: &str) -> Option<&Cost> {
        self.costs.get(name)
    }

    fn problem(&mut self, message: String) {
        (self.on_event)(Event::Problem { message: &message });
        self.problems.push(message);
    }
}

type Family = fn(Scale, &mut Figures) -> Result<(), CalibrateError>;

/// The families in the order they run: memory first, because
/// `fault.mthp_64k` is derived from `clear.kib`; fork after page tables,
/// because `fork.table` is derived from `pt.*`; the 1 GiB latency probes
/// last.
const FAMILIES: &[(&str, Family)] = &[
    ("memory", memory::probe),
    ("memory bandwidth", bandwidth::probe),
    ("faults", faults::probe),
    ("major faults", major::probe),
    ("major pmd faults", major_pmd::probe),
    ("page tables", tables::probe),
    ("fork", fork::probe),
    ("system calls", syscalls::probe),
    ("node lookup", node_of::probe),
    ("file writeback", writeback::probe),
    ("shootdown", shootdown::probe),
    ("locks", locks::probe),
    ("latency", latency::probe),
];

/// The probe families' names, in the order they run (what `--only` takes).
pub fn family_names() -> Vec<&'static str> {
    FAMILIES.iter().map(|(n, _)| *n).collect()
}

/// The family `name` names: its name, with `-` for a space allowed
/// (`major-faults`); `None` for no family.
pub fn family_named(name: &str) -> Option<&'static str> {
    let name = name.replace('-', " ");
    FAMILIES.iter().map(|(n, _)| *n).find(|n| *n == name)
}

/// Measures every family at `scale`, reporting progress to `on_event`.
pub fn calibrate(scale: Scale, on_event: &mut dyn FnMut(Event)) -> Calibration {
    calibrate_families(scale, None, on_event)
}

/// Measures the families `only` names ([`family_named`]; all of them if
/// `None`) at `scale`. With `only`, a name the families run did not write
/// is not a problem unless the probe said so (the file holds their figures
/// alone: the caller merges them into a whole file).
pub fn calibrate_families(
    scale: Scale,
    only: Option<&[&str]>,
    on_event: &mut dyn FnMut(Event),
) -> Calibration {
    let start = Instant::now();
    let mut figs = Figures {
        costs: BTreeMap::new(),
        on_event,
        problems: Vec::new(),
        written: Vec::new(),
        retake_left: retake_budget(scale),
    };
    let run: Vec<&(&str, Family)> = FAMILIES
        .iter()
        .filter(|(name, _)| only.is_none_or(|o| o.contains(name)))
        .collect();
    for (index, (name, probe)) in run.iter().enumerate() {
        (figs.on_event)(Event::Family {
            name,
            index,
            total: run.len(),
        });
        run_family(scale, name, *probe, &mut figs);
    }
    if only.is_none() {
        for name in MEASURED {
            if !figs.costs.contains_key(*name) && !figs.problems.iter().any(|p| p.contains(name)) {
                figs.problems.push(format!("{name}: not measured"));
            }
        }
    }
    let mut file = CostFile::new(host_info::read(scale));
    file.costs = figs.costs;
    Calibration {
        file,
        problems: figs.problems,
        elapsed: start.elapsed(),
    }
}

/// The time a whole calibration may spend measuring families again after
/// the host moved under them: a few seconds in quick mode (it must stay
/// about 20 s on a quiet 2-CPU host), minutes with `--long`.
fn retake_budget(scale: Scale) -> Duration {
    match scale {
        Scale::Test => Duration::ZERO,
        Scale::Quick => Duration::from_secs(6),
        Scale::Long => Duration::from_secs(600),
    }
}

/// Runs one family, reading the host's clocks before and after
/// ([`drift`]). When they moved, the family is measured again if its time
/// fits in what is left of [`retake_budget`] (the second take's figures
/// replace the first's); figures taken while the host moved in every take
/// are marked unstable, with what moved.
fn run_family(scale: Scale, name: &str, probe: Family, figs: &mut Figures) {
    let mut notes = Vec::new();
    for take in 0..2 {
        figs.written.clear();
        let start = Instant::now();
        let before = drift::read();
        let result = probe(scale, figs);
        let took = start.elapsed();
        let moved = drift::between(&before, &drift::read());
        if let Err(e) = result {
            figs.problem(e.to_string());
        }
        let Some(moved) = moved else {
            if !notes.is_empty() {
                notes.push("measured again: held still".to_string());
                mark(figs, &notes.join("; "), false);
            }
            return;
        };
        let retake = take == 0 && took <= figs.retake_left;
        (figs.on_event)(Event::Drift {
            family: name,
            message: &moved,
            retake,
        });
        notes.push(format!("take {}: {moved}", take + 1));
        if !retake {
            if take == 0 {
                notes.push(format!(
                    "not measured again (the {:.0} s it takes is past what is left of the {} mode's budget for re-measuring)",
                    took.as_secs_f64(),
                    scale.name()
                ));
            }
            mark(figs, &notes.join("; "), true);
            return;
        }
        figs.retake_left = figs.retake_left.saturating_sub(took);
    }
}

/// Notes `drift` in the stability of every figure the family just wrote,
/// and marks them unstable when `unstable`.
fn mark(figs: &mut Figures, drift: &str, unstable: bool) {
    for name in &figs.written {
        if let Some(c) = figs.costs.get_mut(name) {
            let rel_halfwidth = if c.ns > 0.0 {
                (c.hi - c.lo) / 2.0 / c.ns
            } else {
                0.0
            };
            let st = c.stability.get_or_insert(costs::Stability {
                rounds: c.n,
                rel_halfwidth,
                rel_spread: 0.0,
                unstable: false,
                drift: String::new(),
            });
            st.drift = drift.to_string();
            st.unstable |= unstable;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_named_with_spaces_or_hyphens() {
        assert_eq!(family_named("major-faults"), Some("major faults"));
        assert_eq!(family_named("major faults"), Some("major faults"));
        assert_eq!(family_named("faults"), Some("faults"));
        assert_eq!(family_named("elsewhere"), None);
        assert_eq!(family_names().len(), FAMILIES.len());
    }

    #[test]
    fn every_measured_name_is_in_the_catalog() {
        for name in MEASURED {
            assert!(costs::catalog::lookup(name).is_some(), "{name}");
        }
    }
}
