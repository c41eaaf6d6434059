//! The registry's table: one entry per counter or family, in the report's
//! row order (main counters first, then derived, then the model's
//! breakdowns). The main counters are in [`primary`]; the model's
//! breakdowns are here, with [`ALL`], the list every output iterates. Add a
//! counter (its constant and its place in [`ALL`]) and every list follows.

mod primary;

pub use primary::*;

use crate::family::*;
use crate::{Counter, Members, Source, Unit, View};

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
    SHMEM_PMD_KB,
    FILE_PMD_KB,
    VMSWAP_KB,
    TLB_SHOOTDOWNS,
    THP_COLLAPSE_ALLOC,
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
