//! The registry's main counters, first in the report's rows: what both
//! backends report (faults, memory, the kernel's times), the model's
//! predicted times and main figures (accesses, walks, TLB hits and misses,
//! locks, IPIs), the derived per-fault and per-access times, and the
//! families by lock class and fault kind. The model's breakdowns follow in
//! [`super`], with [`super::ALL`].

use crate::family::*;
use crate::{Counter, Members, Source, Unit, View};

/// Page faults handled without I/O (Linux min_flt).
pub const MINOR_FAULTS: Counter = Counter {
    name: "minor_faults",
    unit: Unit::Count,
    meaning: "Page faults handled without I/O (Linux min_flt).",
    compared: true,
    source: Source::Getrusage,
    view: View::Main,
    members: Members::One,
};

/// Page faults that read the page in (Linux maj_flt).
pub const MAJOR_FAULTS: Counter = Counter {
    name: "major_faults",
    unit: Unit::Count,
    meaning: "Page faults that read the page in (Linux maj_flt).",
    compared: true,
    source: Source::Getrusage,
    view: View::Main,
    members: Members::One,
};

/// Page-table pages of the address space (PTE, PMD and PUD tables).
pub const VMPTE_KB: Counter = Counter {
    name: "vmpte_kb",
    unit: Unit::KiB,
    meaning: "Page-table pages of the address space (PTE, PMD and PUD tables).",
    compared: true,
    source: Source::ProcStatus("VmPTE"),
    view: View::Main,
    members: Members::One,
};

/// Resident anonymous memory.
pub const RSS_ANON_KB: Counter = Counter {
    name: "rss_anon_kb",
    unit: Unit::KiB,
    meaning: "Resident anonymous memory.",
    compared: true,
    source: Source::ProcStatus("RssAnon"),
    view: View::Main,
    members: Members::One,
};

/// Resident file-backed memory.
pub const RSS_FILE_KB: Counter = Counter {
    name: "rss_file_kb",
    unit: Unit::KiB,
    meaning: "Resident file-backed memory.",
    compared: true,
    source: Source::ProcStatus("RssFile"),
    view: View::Main,
    members: Members::One,
};

/// Resident shared memory (shmem, tmpfs).
pub const RSS_SHMEM_KB: Counter = Counter {
    name: "rss_shmem_kb",
    unit: Unit::KiB,
    meaning: "Resident shared memory (shmem, tmpfs).",
    compared: true,
    source: Source::ProcStatus("RssShmem"),
    view: View::Main,
    members: Members::One,
};

/// Anonymous memory mapped by PMD-sized huge pages.
pub const ANON_HUGE_KB: Counter = Counter {
    name: "anon_huge_kb",
    unit: Unit::KiB,
    meaning: "Anonymous memory mapped by PMD-sized huge pages.",
    compared: true,
    source: Source::SmapsRollup("AnonHugePages"),
    view: View::Main,
    members: Members::One,
};

/// Shared memory (shmem, tmpfs) mapped by PMD-sized huge pages.
pub const SHMEM_PMD_KB: Counter = Counter {
    name: "shmem_pmd_kb",
    unit: Unit::KiB,
    meaning: "Shared memory (shmem, tmpfs) mapped by PMD-sized huge pages (ShmemPmdMapped).",
    compared: true,
    source: Source::SmapsRollup("ShmemPmdMapped"),
    view: View::All,
    members: Members::One,
};

/// File pages (not shmem) mapped by PMD-sized huge pages.
pub const FILE_PMD_KB: Counter = Counter {
    name: "file_pmd_kb",
    unit: Unit::KiB,
    meaning: "File pages (not shmem) mapped by PMD-sized huge pages (FilePmdMapped).",
    compared: true,
    source: Source::SmapsRollup("FilePmdMapped"),
    view: View::All,
    members: Members::One,
};

/// Anonymous memory swapped out: swap entries in the page tables.
pub const VMSWAP_KB: Counter = Counter {
    name: "vmswap_kb",
    unit: Unit::KiB,
    meaning: "Anonymous memory swapped out: swap entries in the page tables (VmSwap).",
    compared: true,
    source: Source::ProcStatus("VmSwap"),
    view: View::Main,
    members: Members::One,
};

/// TLB-shootdown interrupts received (the kernel's: system-wide; the model's: one per IPI).
pub const TLB_SHOOTDOWNS: Counter = Counter {
    name: "tlb_shootdowns",
    unit: Unit::Count,
    meaning:
        "TLB-shootdown interrupts received (the kernel's: system-wide; the model's: one per IPI).",
    compared: false,
    source: Source::Interrupts("TLB"),
    view: View::Main,
    members: Members::One,
};

/// THPs allocated to collapse a range (MADV_COLLAPSE, khugepaged).
pub const THP_COLLAPSE_ALLOC: Counter = Counter {
    name: "thp_collapse_alloc",
    unit: Unit::Count,
    meaning: "THPs allocated to collapse a range into (MADV_COLLAPSE, khugepaged; the kernel's: system-wide, /proc/vmstat).",
    compared: false,
    source: Source::Vmstat("thp_collapse_alloc"),
    view: View::All,
    members: Members::One,
};

/// The kernel's wall time since the run's first operation (`CLOCK_MONOTONIC`).
/// Only the kernel backend has it: the model's own speed is [`MODEL_WALL_NS`].
pub const ELAPSED_NS: Counter = Counter {
    name: "elapsed_ns",
    unit: Unit::Ns,
    meaning: "Wall time of the kernel backend since the run's first operation.",
    compared: false,
    source: Source::MonotonicClock,
    view: View::Main,
    members: Members::One,
};

/// What the kernel backend's marks so far spent reading the counters: part
/// of `elapsed_ns` (a mark reads before its clock) that is not the
/// workload's. `validate --time` measures `elapsed_ns - mark_read_ns`.
pub const MARK_READ_NS: Counter = Counter {
    name: "mark_read_ns",
    unit: Unit::Ns,
    meaning: "Wall time the kernel backend's marks so far spent reading the counters (included in elapsed_ns).",
    compared: false,
    source: Source::MonotonicClock,
    view: View::All,
    members: Members::One,
};

/// The kernel backend's process CPU time since the run's first operation:
/// what the workload's threads ran, without the time other processes took
/// the CPUs from them (so it can be read on a busy host), less the marks'
/// counter reads.
pub const CPU_NS: Counter = Counter {
    name: "cpu_ns",
    unit: Unit::Ns,
    meaning: "CPU time of the kernel backend's workload process (all threads) since the run's first operation, less what its marks spent reading the counters.",
    compared: false,
    source: Source::ProcessCpuClock,
    view: View::All,
    members: Members::One,
};

/// How long ptlab itself took to model the run so far: the model's own speed
/// (for BENCHMARKS.md), never a duration of the modeled system, so it is
/// neither shown by default nor turned into times per fault or access.
pub const MODEL_WALL_NS: Counter = Counter {
    name: "model_wall_ns",
    unit: Unit::Ns,
    meaning:
        "ptlab's own time to model the run so far: its speed, not a duration of the modeled system.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// The modeled system's time at a mark, predicted from the cost file.
pub const PREDICTED_NS: Counter = Counter {
    name: "predicted_ns",
    unit: Unit::Ns,
    meaning: "Predicted time of the modeled system at the mark (virtual clocks driven by the cost file), not a measurement.",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::One,
};

/// The prediction with every cost at the low end of its interval.
pub const PREDICTED_LO_NS: Counter = Counter {
    name: "predicted_lo_ns",
    unit: Unit::Ns,
    meaning: "predicted_ns with every cost at the low end of its interval (the same schedule).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// The prediction with every cost at the high end of its interval.
pub const PREDICTED_HI_NS: Counter = Counter {
    name: "predicted_hi_ns",
    unit: Unit::Ns,
    meaning: "predicted_ns with every cost at the high end of its interval (the same schedule).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Each modeled CPU's virtual clock at the mark.
pub const PREDICTED_CPU_NS: Counter = Counter {
    name: "predicted_cpu<n>_ns",
    unit: Unit::Ns,
    meaning: "One modeled CPU's virtual clock at the mark (predicted, from the cost file).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::PerCpu,
};

/// Virtual time spent on TLB shootdowns.
pub const FLUSH_NS: Counter = Counter {
    name: "flush_ns",
    unit: Unit::Ns,
    meaning: "Predicted time modeled CPUs spent on TLB shootdowns (the senders' IPI rounds or broadcast instructions and waits, the receivers' interrupts or RAR handling), summed over CPUs.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Virtual time spent waiting for the LRU lock.
pub const LRU_WAIT_NS: Counter = Counter {
    name: "lru_wait_ns",
    unit: Unit::Ns,
    meaning: "Predicted time modeled CPUs waited for the LRU lock (adding folios to and removing them from the LRU lists, and draining a CPU's batch), summed over CPUs.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Virtual time spent waiting for locks.
pub const LOCK_WAIT_NS: Counter = Counter {
    name: "lock_wait_ns",
    unit: Unit::Ns,
    meaning: "Predicted time modeled CPUs waited for page-table and mmap locks, summed over CPUs.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Lock acquisitions that waited in virtual time.
pub const VIRTUAL_CONTENDED: Counter = Counter {
    name: "virtual_contended",
    unit: Unit::Count,
    meaning: "Lock acquisitions that found the lock held in virtual time (the deterministic executor's contention).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Translations the MMU model was asked for.
pub const ACCESSES: Counter = Counter {
    name: "accesses",
    unit: Unit::Count,
    meaning: "Translations the MMU model was asked for.",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::One,
};

/// Hardware page-table walks (TLB misses and dirty-bit assists).
pub const WALKS: Counter = Counter {
    name: "walks",
    unit: Unit::Count,
    meaning: "Hardware page-table walks (TLB misses and dirty-bit assists).",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::One,
};

/// Memory references made by hardware walks.
pub const WALK_REFS: Counter = Counter {
    name: "walk_refs",
    unit: Unit::Count,
    meaning: "Memory references made by hardware walks.",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::One,
};

/// Accesses that hit some TLB level.
pub const TLB_HITS: Counter = Counter {
    name: "tlb_hits",
    unit: Unit::Count,
    meaning: "Accesses that hit some TLB level.",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::One,
};

/// Accesses that missed every TLB level.
pub const TLB_MISSES: Counter = Counter {
    name: "tlb_misses",
    unit: Unit::Count,
    meaning: "Accesses that missed every TLB level.",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::One,
};

/// Walk-cache hits, all levels.
pub const PWC_HITS: Counter = Counter {
    name: "pwc_hits",
    unit: Unit::Count,
    meaning: "Walk-cache hits, all levels.",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::One,
};

/// Table pages present, per level (an absolute count, not a difference).
pub const PT_PAGES: Counter = Counter {
    name: "pt_pages",
    unit: Unit::Count,
    meaning: "Table pages present, per level (an absolute count, not a difference).",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::PerLevel,
};

/// Lock acquisitions, all lock classes.
pub const LOCK_ACQUISITIONS: Counter = Counter {
    name: "lock_acquisitions",
    unit: Unit::Count,
    meaning: "Lock acquisitions, all lock classes.",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::One,
};

/// Lock acquisitions that found the lock held.
pub const LOCK_CONTENDED: Counter = Counter {
    name: "lock_contended",
    unit: Unit::Count,
    meaning: "Lock acquisitions that found the lock held.",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::One,
};

/// Inter-processor interrupts sent for shootdowns.
pub const IPIS: Counter = Counter {
    name: "ipis",
    unit: Unit::Count,
    meaning: "Inter-processor interrupts sent for shootdowns.",
    compared: false,
    source: Source::ModelOnly,
    view: View::Main,
    members: Members::One,
};

/// The kernel's elapsed time per page fault since the previous mark (never
/// derived from the model's own speed).
pub const NS_PER_FAULT: Counter = Counter {
    name: "ns_per_fault",
    unit: Unit::Ns,
    meaning: "Kernel backend: elapsed time per page fault since the previous mark.",
    compared: false,
    source: Source::Derived,
    view: View::Derived,
    members: Members::One,
};

/// The kernel's elapsed time per access since the previous mark (never
/// derived from the model's own speed).
pub const NS_PER_ACCESS: Counter = Counter {
    name: "ns_per_access",
    unit: Unit::Ns,
    meaning: "Kernel backend: elapsed time per access since the previous mark.",
    compared: false,
    source: Source::Derived,
    view: View::Derived,
    members: Members::One,
};

/// PMD-sized THP allocated on fault.
pub const THP_FAULT_ALLOC: Counter = Counter {
    name: "thp_fault_alloc",
    unit: Unit::Count,
    meaning: "PMD-sized THP allocated on fault.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// THP allocations on fault that failed and fell back to small pages.
pub const THP_FAULT_FALLBACK: Counter = Counter {
    name: "thp_fault_fallback",
    unit: Unit::Count,
    meaning: "THP allocations on fault that failed and fell back to small pages.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Multi-size THP folios allocated on fault.
pub const MTHP_FAULT_ALLOC: Counter = Counter {
    name: "mthp_fault_alloc",
    unit: Unit::Count,
    meaning: "Multi-size THP folios allocated on fault.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Faults that ended out of memory (not counted as faults, as in Linux).
pub const OOM_FAULTS: Counter = Counter {
    name: "oom_faults",
    unit: Unit::Count,
    meaning: "Faults that ended out of memory (not counted as faults, as in Linux).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Faults that ended in SIGSEGV.
pub const SEGV_FAULTS: Counter = Counter {
    name: "segv_faults",
    unit: Unit::Count,
    meaning: "Faults that ended in SIGSEGV.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Lock acquisitions by lock class.
pub const LOCK_ACQUISITIONS_FAMILY: Counter = Counter {
    name: "lock_acquisitions.<lock>",
    unit: Unit::Count,
    meaning: "Lock acquisitions by lock class.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::Listed(&LOCK_ACQUISITIONS_BY_LOCK),
};

/// Contended lock acquisitions by lock class.
pub const LOCK_CONTENDED_FAMILY: Counter = Counter {
    name: "lock_contended.<lock>",
    unit: Unit::Count,
    meaning: "Contended lock acquisitions by lock class.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::Listed(&LOCK_CONTENDED_BY_LOCK),
};

/// Handled faults by the kind the cost model charges.
pub const FAULTS_BY_KIND_FAMILY: Counter = Counter {
    name: "faults.<kind>",
    unit: Unit::Count,
    meaning: "Handled faults by kind (anonymous write, zero-page read, COW, file read, shared write, THP, mTHP, major, spurious, write to the zero page, a shared file page made writable).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::Listed(&FAULTS_BY_KIND),
};
