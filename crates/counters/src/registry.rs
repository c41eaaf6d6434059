//! The registry's table: one entry per counter or family, in the report's
//! row order (main counters first, then derived, then the model's
//! breakdowns). Add a counter here and every list follows.

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

/// Shootdowns the modeled CPUs initiated.
pub const SHOOTDOWNS: Counter = Counter {
    name: "shootdowns",
    unit: Unit::Count,
    meaning: "Shootdowns the modeled CPUs initiated.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// TLB entries removed by invalidations.
pub const FLUSHED_ENTRIES: Counter = Counter {
    name: "flushed_entries",
    unit: Unit::Count,
    meaning: "TLB entries removed by invalidations.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// L1 TLB hits.
pub const TLB_L1_HITS: Counter = Counter {
    name: "tlb_l1_hits",
    unit: Unit::Count,
    meaning: "L1 TLB hits.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// L1 TLB misses.
pub const TLB_L1_MISSES: Counter = Counter {
    name: "tlb_l1_misses",
    unit: Unit::Count,
    meaning: "L1 TLB misses.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Instruction fetches that hit the first-level instruction TLB (a trace with instructions; not in accesses or tlb_hits).
pub const ITLB_HITS: Counter = Counter {
    name: "itlb_hits",
    unit: Unit::Count,
    meaning: "Instruction fetches that hit the first-level instruction TLB (a trace with instructions; not in accesses or tlb_hits).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Instruction fetches that missed the first-level instruction TLB.
pub const ITLB_MISSES: Counter = Counter {
    name: "itlb_misses",
    unit: Unit::Count,
    meaning: "Instruction fetches that missed the first-level instruction TLB.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Instruction TLB misses found in the second level (the shared STLB, or an L2 ITLB).
pub const ITLB_L2_HITS: Counter = Counter {
    name: "itlb_l2_hits",
    unit: Unit::Count,
    meaning: "Instruction TLB misses found in the second level (the shared STLB, or an L2 ITLB).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Instruction TLB misses that missed the second level too and walked: STLB misses from code.
pub const ITLB_L2_MISSES: Counter = Counter {
    name: "itlb_l2_misses",
    unit: Unit::Count,
    meaning:
        "Instruction TLB misses that missed the second level too and walked: STLB misses from code.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// L2 TLB hits.
pub const TLB_L2_HITS: Counter = Counter {
    name: "tlb_l2_hits",
    unit: Unit::Count,
    meaning: "L2 TLB hits.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// L2 TLB misses.
pub const TLB_L2_MISSES: Counter = Counter {
    name: "tlb_l2_misses",
    unit: Unit::Count,
    meaning: "L2 TLB misses.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Walks that found nothing in the walk caches.
pub const PWC_MISSES: Counter = Counter {
    name: "pwc_misses",
    unit: Unit::Count,
    meaning: "Walks that found nothing in the walk caches.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Write hits on a clean page that walked again to set the dirty bit.
pub const DIRTY_ASSISTS: Counter = Counter {
    name: "dirty_assists",
    unit: Unit::Count,
    meaning: "Write hits on a clean page that walked again to set the dirty bit.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Accessed and dirty bits written into entries by walks.
pub const AD_WRITES: Counter = Counter {
    name: "ad_writes",
    unit: Unit::Count,
    meaning: "Accessed and dirty bits written into entries by walks.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Walks that ended at a non-present entry.
pub const FAULTS_NOT_PRESENT: Counter = Counter {
    name: "faults_not_present",
    unit: Unit::Count,
    meaning: "Walks that ended at a non-present entry.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Walks that ended in a permission fault.
pub const FAULTS_PERMISSION: Counter = Counter {
    name: "faults_permission",
    unit: Unit::Count,
    meaning: "Walks that ended in a permission fault.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Walks that met a reserved-bit fault.
pub const FAULTS_RESERVED: Counter = Counter {
    name: "faults_reserved",
    unit: Unit::Count,
    meaning: "Walks that met a reserved-bit fault.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Accesses to non-canonical addresses.
pub const FAULTS_NONCANONICAL: Counter = Counter {
    name: "faults_noncanonical",
    unit: Unit::Count,
    meaning: "Accesses to non-canonical addresses.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// IPIs the modeled CPUs received and handled.
pub const IPIS_RECEIVED: Counter = Counter {
    name: "ipis_received",
    unit: Unit::Count,
    meaning: "IPIs the modeled CPUs received and handled.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Remote flushes deferred to a CPU that was not running (KVM's
/// paravirtual remote TLB flush): no IPI, a full flush when it runs again.
pub const DEFERRED_FLUSHES: Counter = Counter {
    name: "deferred_flushes",
    unit: Unit::Count,
    meaning: "Remote TLB flushes deferred to a CPU that was not running (paravirtual flush): no IPI, a full flush when it runs again.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Shootdowns that reached the other CPUs by broadcast invalidation.
pub const BROADCAST_FLUSHES: Counter = Counter {
    name: "broadcast_flushes",
    unit: Unit::Count,
    meaning: "TLB shootdowns that reached the other CPUs by broadcast invalidation (AMD INVLPGB or Intel RAR) instead of IPIs; only with tlb_flush=invlpgb or rar.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// INVLPGB instructions or RAR requests the broadcast shootdowns issued.
pub const BROADCAST_INSTRUCTIONS: Counter = Counter {
    name: "broadcast_instructions",
    unit: Unit::Count,
    meaning: "INVLPGB instructions (each up to invlpgb_count_max pages, or one per address space past the flush ceiling) or RAR requests the broadcast shootdowns issued.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Invalidations that flushed a whole address space.
pub const FULL_FLUSHES: Counter = Counter {
    name: "full_flushes",
    unit: Unit::Count,
    meaning: "Invalidations that flushed a whole address space.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Single-page invalidations (INVLPG, TLBI VA, SFENCE.VMA va).
pub const PAGE_INVALIDATIONS: Counter = Counter {
    name: "page_invalidations",
    unit: Unit::Count,
    meaning: "Single-page invalidations (INVLPG, TLBI VA, SFENCE.VMA va).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Walk-cache entries removed by invalidations.
pub const PWC_FLUSHED: Counter = Counter {
    name: "pwc_flushed",
    unit: Unit::Count,
    meaning: "Walk-cache entries removed by invalidations.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Nested walks: guest page-table entries read.
pub const GUEST_WALK_REFS: Counter = Counter {
    name: "guest_walk_refs",
    unit: Unit::Count,
    meaning: "Nested walks (with a host geometry): guest page-table entries read; walk_refs is these plus host_walk_refs.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Nested walks: host page-table entries read, over every host walk.
pub const HOST_WALK_REFS: Counter = Counter {
    name: "host_walk_refs",
    unit: Unit::Count,
    meaning: "Nested walks: host (EPT/NPT) entries read to translate guest-physical addresses, over every host walk.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Guest-physical translations found in the nested TLB.
pub const NESTED_TLB_HITS: Counter = Counter {
    name: "nested_tlb_hits",
    unit: Unit::Count,
    meaning: "Nested walks: guest-physical addresses translated by the nested TLB (gPA to hPA) without a host walk.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Guest-physical translations that missed the nested TLB.
pub const NESTED_TLB_MISSES: Counter = Counter {
    name: "nested_tlb_misses",
    unit: Unit::Count,
    meaning: "Nested walks: guest-physical addresses that missed the nested TLB and walked the host's tables.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Host walks shortened by a host walk-cache hit.
pub const HOST_PWC_HITS: Counter = Counter {
    name: "host_pwc_hits",
    unit: Unit::Count,
    meaning: "Nested walks: host walks that started below a host walk-cache hit (caches keyed by guest-physical address).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// EPT violations (nested page faults) the modeled hypervisor handled.
pub const EPT_VIOLATIONS: Counter = Counter {
    name: "ept_violations",
    unit: Unit::Count,
    meaning: "Nested walks: guest-physical addresses the host had not mapped (EPT violation / nested page fault); the modeled hypervisor mapped them and the access restarted.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::One,
};

/// Memory references per 1000 hardware walks since the previous mark.
pub const REFS_PER_1000_WALKS: Counter = Counter {
    name: "refs_per_1000_walks",
    unit: Unit::Count,
    meaning: "Model: memory references per 1000 hardware walks since the previous mark (24000: 24 references per walk), rounded down.",
    compared: false,
    source: Source::Derived,
    view: View::All,
    members: Members::One,
};

/// L1 TLB hits by page size.
pub const TLB_L1_HITS_FAMILY: Counter = Counter {
    name: "tlb_l1_hits_<size>",
    unit: Unit::Count,
    meaning: "L1 TLB hits by page size.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::Listed(&TLB_L1_HITS_BY_SIZE),
};

/// L2 TLB hits by page size.
pub const TLB_L2_HITS_FAMILY: Counter = Counter {
    name: "tlb_l2_hits_<size>",
    unit: Unit::Count,
    meaning: "L2 TLB hits by page size.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::Listed(&TLB_L2_HITS_BY_SIZE),
};

/// TLB misses by the size of the translation found.
pub const TLB_MISSES_FAMILY: Counter = Counter {
    name: "tlb_misses_<size>",
    unit: Unit::Count,
    meaning: "TLB misses by the size of the translation found.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::Listed(&TLB_MISSES_BY_SIZE),
};

/// Walk-cache hits by level.
pub const PWC_HITS_FAMILY: Counter = Counter {
    name: "pwc_hits_level<n>",
    unit: Unit::Count,
    meaning: "Walk-cache hits by level.",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::Listed(&PWC_HITS_BY_LEVEL),
};

/// Walks by their number of memory references (non-empty buckets only).
pub const WALKS_WITH_REFS_FAMILY: Counter = Counter {
    name: "walks_with_<n>_refs",
    unit: Unit::Count,
    meaning: "Walks by their number of memory references (non-empty buckets only).",
    compared: false,
    source: Source::ModelOnly,
    view: View::All,
    members: Members::Listed(&WALKS_WITH_REFS),
};

/// Every counter and family, in the report's row order.
pub const ALL: &[Counter] = &[
    MINOR_FAULTS,
    MAJOR_FAULTS,
    VMPTE_KB,
    RSS_ANON_KB,
    RSS_FILE_KB,
    RSS_SHMEM_KB,
    ANON_HUGE_KB,
    TLB_SHOOTDOWNS,
    ELAPSED_NS,
    MARK_READ_NS,
    CPU_NS,
    MODEL_WALL_NS,
    PREDICTED_NS,
    PREDICTED_LO_NS,
    PREDICTED_HI_NS,
    PREDICTED_CPU_NS,
    LOCK_WAIT_NS,
    VIRTUAL_CONTENDED,
    ACCESSES,
    WALKS,
    WALK_REFS,
    TLB_HITS,
    TLB_MISSES,
    PWC_HITS,
    PT_PAGES,
    LOCK_ACQUISITIONS,
    LOCK_CONTENDED,
    IPIS,
    NS_PER_FAULT,
    NS_PER_ACCESS,
    THP_FAULT_ALLOC,
    THP_FAULT_FALLBACK,
    MTHP_FAULT_ALLOC,
    OOM_FAULTS,
    SEGV_FAULTS,
    LOCK_ACQUISITIONS_FAMILY,
    LOCK_CONTENDED_FAMILY,
    FAULTS_BY_KIND_FAMILY,
    SHOOTDOWNS,
    FLUSHED_ENTRIES,
    TLB_L1_HITS,
    TLB_L1_MISSES,
    TLB_L2_HITS,
    TLB_L2_MISSES,
    ITLB_HITS,
    ITLB_MISSES,
    ITLB_L2_HITS,
    ITLB_L2_MISSES,
    PWC_MISSES,
    DIRTY_ASSISTS,
    AD_WRITES,
    FAULTS_NOT_PRESENT,
    FAULTS_PERMISSION,
    FAULTS_RESERVED,
    FAULTS_NONCANONICAL,
    IPIS_RECEIVED,
    DEFERRED_FLUSHES,
    BROADCAST_FLUSHES,
    BROADCAST_INSTRUCTIONS,
    FLUSH_NS,
    LRU_WAIT_NS,
    FULL_FLUSHES,
    PAGE_INVALIDATIONS,
    PWC_FLUSHED,
    GUEST_WALK_REFS,
    HOST_WALK_REFS,
    NESTED_TLB_HITS,
    NESTED_TLB_MISSES,
    HOST_PWC_HITS,
    EPT_VIOLATIONS,
    REFS_PER_1000_WALKS,
    TLB_L1_HITS_FAMILY,
    TLB_L2_HITS_FAMILY,
    TLB_MISSES_FAMILY,
    PWC_HITS_FAMILY,
    WALKS_WITH_REFS_FAMILY,
];
