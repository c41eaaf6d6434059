//! The names of the counter families: breakdowns of a total by lock class,
//! page size, walk-cache level or references per walk. Each array is one
//! family of the registry ([`crate::ALL`]); producers index them.

/// `lock_acquisitions` by lock class, in the order of `mm`'s `LockClass`.
pub const LOCK_ACQUISITIONS_BY_LOCK: [&str; 4] = [
    "lock_acquisitions.mmap_lock",
    "lock_acquisitions.page_table_lock",
    "lock_acquisitions.pmd_lock",
    "lock_acquisitions.pte_lock",
];

/// `lock_contended` by lock class, in the order of `mm`'s `LockClass`.
pub const LOCK_CONTENDED_BY_LOCK: [&str; 4] = [
    "lock_contended.mmap_lock",
    "lock_contended.page_table_lock",
    "lock_contended.pmd_lock",
    "lock_contended.pte_lock",
];

/// Handled faults by kind, in the order of `mm`'s `FaultKind` (what the
/// cost model charges them as).
pub const FAULTS_BY_KIND: [&str; 11] = [
    "faults.anon_write",
    "faults.zero_read",
    "faults.cow",
    "faults.file_read",
    "faults.shmem",
    "faults.thp",
    "faults.mthp",
    "faults.major",
    "faults.spurious",
    "faults.zero_cow",
    "faults.file_mkwrite",
];

/// The page sizes of the per-size TLB breakdowns (the last is every other size).
pub const SIZE_CLASSES: usize = 8;

/// L1 TLB hits by the hit entry's page size.
pub const TLB_L1_HITS_BY_SIZE: [&str; 8] = [
    "tlb_l1_hits_4k",
    "tlb_l1_hits_16k",
    "tlb_l1_hits_64k",
    "tlb_l1_hits_2m",
    "tlb_l1_hits_32m",
    "tlb_l1_hits_512m",
    "tlb_l1_hits_1g",
    "tlb_l1_hits_other",
];

/// L2 TLB hits by the hit entry's page size.
pub const TLB_L2_HITS_BY_SIZE: [&str; 8] = [
    "tlb_l2_hits_4k",
    "tlb_l2_hits_16k",
    "tlb_l2_hits_64k",
    "tlb_l2_hits_2m",
    "tlb_l2_hits_32m",
    "tlb_l2_hits_512m",
    "tlb_l2_hits_1g",
    "tlb_l2_hits_other",
];

/// TLB misses by the size of the translation the walk found.
pub const TLB_MISSES_BY_SIZE: [&str; 8] = [
    "tlb_misses_4k",
    "tlb_misses_16k",
    "tlb_misses_64k",
    "tlb_misses_2m",
    "tlb_misses_32m",
    "tlb_misses_512m",
    "tlb_misses_1g",
    "tlb_misses_other",
];

/// Walk-cache hits by the level of the cached entry (0 = leaf, never cached;
/// one name per level a geometry may have).
pub const PWC_HITS_BY_LEVEL: [&str; 6] = [
    "pwc_hits_level0",
    "pwc_hits_level1",
    "pwc_hits_level2",
    "pwc_hits_level3",
    "pwc_hits_level4",
    "pwc_hits_level5",
];

/// Walks by their number of memory references; the last holds the rest.
pub const WALKS_WITH_REFS: [&str; 40] = [
    "walks_with_0_refs",
    "walks_with_1_refs",
    "walks_with_2_refs",
    "walks_with_3_refs",
    "walks_with_4_refs",
    "walks_with_5_refs",
    "walks_with_6_refs",
    "walks_with_7_refs",
    "walks_with_8_refs",
    "walks_with_9_refs",
    "walks_with_10_refs",
    "walks_with_11_refs",
    "walks_with_12_refs",
    "walks_with_13_refs",
    "walks_with_14_refs",
    "walks_with_15_refs",
    "walks_with_16_refs",
    "walks_with_17_refs",
    "walks_with_18_refs",
    "walks_with_19_refs",
    "walks_with_20_refs",
    "walks_with_21_refs",
    "walks_with_22_refs",
    "walks_with_23_refs",
    "walks_with_24_refs",
    "walks_with_25_refs",
    "walks_with_26_refs",
    "walks_with_27_refs",
    "walks_with_28_refs",
    "walks_with_29_refs",
    "walks_with_30_refs",
    "walks_with_31_refs",
    "walks_with_32_refs",
    "walks_with_33_refs",
    "walks_with_34_refs",
    "walks_with_35_refs",
    "walks_with_36_refs",
    "walks_with_37_refs",
    "walks_with_38_refs",
    "walks_with_39plus_refs",
];
