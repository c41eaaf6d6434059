//! `mm`: a Linux-faithful model of a process address space over the `pt`
//! page-table engine.
//!
//! - [`space`]: the address space, its VMAs and system calls (mmap, munmap,
//!   mprotect, madvise, mlock, msync).
//! - [`fault`]: the fault handler (zero page, copy-on-write, file pages with
//!   fault-around, shmem, THP and multi-size THP); `filemap`: mapping
//!   page-cache folios (fault-around, PMD-mapped file folios); [`readahead`]:
//!   which pages and folio sizes a file fault reads.
//! - [`walk`]: range operations (zap, protect, PT reclaim, free_pgtables).
//! - [`locking`]: the lock protocol, written as invariants (the mmap lock's
//!   per-thread reader slots are in the private `mmap_lock` module, the
//!   per-thread RSS counter slots in `percpu`).
//! - [`check`]: the invariant checker used by tests.
//! - [`deferred`]: the work left for after the TLB shootdown; [`gather`]:
//!   its bounds (Linux's `mmu_gather` batches) and the flush when one fills.
//! - `accel`: the host-side accelerations (thread-local caches, the PTE
//!   template), listed with why each is safe and tested against the plain path.
//!
//! ## Faithfulness
//!
//! Read in Linux source while writing this model: mm/pt_reclaim.c and the
//! `zap_pte_range` fast/slow reclaim paths (including the 2025 fix that
//! clears `direct_reclaim` when the PTE lock is dropped midway);
//! `set_huge_zero_folio` (the huge zero page deposits a table and counts it
//! with `mm_inc_nr_ptes`); `do_huge_pmd_wp_page` with `do_huge_zero_wp_pmd`
//! (6.12+: a write to the huge zero page maps a new THP in its place, the
//! deposited table staying; split and per-page copy only when no huge page
//! can be allocated; read in the 2024 patch and the mainline context of
//! later patches, as the stored torvalds/linux snapshot predates it). Taken from memory of
//! the source, not re-read here: `do_fault_around`'s window arithmetic,
//! `free_pgd_range`'s floor/ceiling rule, `mm_account_fault`, the
//! `can_change_pte_writable` rules, MADV_FREE/PAGEOUT details, populate's
//! write-vs-read rule, errno choices; the VMA merge rules of mm/vma.c
//! (`vma_merge_new_range`, `vma_merge_existing_range`, `is_mergeable_vma`,
//! `is_mergeable_anon_vma`), `find_mergeable_anon_vma`,
//! `vma_adjust_trans_huge`, `mprotect_fixup`'s VM_ACCOUNT and locked
//! populate (all but VM_ACCOUNT are also held to the kernel by validation
//! workloads). The read-ahead of a file read through a mapping
//! ([`readahead`]) and the mapping of large page-cache folios (`filemap`)
//! follow Linux 6.18 as recalled and as measured on a 6.18 host
//! (`ptlab validate`'s file-readaround-*, file-thp-* workloads), not re-read
//! line by line. fork ([`space`]'s `fork` and `share`) follows `dup_mmap`,
//! `copy_page_range` .. `copy_present_pte`, `copy_huge_pmd`,
//! `vma_needs_copy`, `wp_can_reuse_anon_folio` and `do_huge_pmd_wp_page` as
//! recalled from 6.x and held to the kernel by the fork-* validation
//! workloads. mremap (`space::mremap`) follows mm/mremap.c as recalled
//! (shrink, `vma_expand` in place, `move_vma` with `move_page_tables`), held
//! to the kernel by the mremap-* validation workloads. Swap (`swap`,
//! `space`'s `swap`) follows `shrink_folio_list`, `do_swap_page`,
//! `copy_nonpresent_pte` and `free_swap_and_cache` as recalled from 6.x and
//! as measured on a 6.18 host with a swap file (the swap-* validation
//! workloads); swap read-ahead (`swap_ra`, `space`'s `swap_ra`) follows
//! mm/swap_state.c of 6.18 as read (`__swapin_nr_pages`,
//! `swap_vma_ra_win`, `swap_cluster_readahead`), held to the kernel by the
//! swap-readahead-* workloads; shmem swap follows `shmem_writeout` as
//! measured (swap-shmem-*). Large folios go to swap by the device's kind
//! (`MmConfig::swap_device`): split on a swap file, whole on a block
//! device (`folio_alloc_swap`, `do_swap_page`'s whole-folio map,
//! `shmem_writeout`), as measured on 6.18 with zram, a loop device and a
//! swap file (swap-thp-*, swap-shmem-thp-*). Not modelled:
//! MADV_SEQUENTIAL/MADV_RANDOM read-ahead, VM_EXEC folio sizes.
//!
//! Every operation returns a [`Deferred`] the caller completes after the
//! shootdown (or with [`Deferred::complete_without_tlb`]). Counters are read
//! after completing: table pages leave the per-level counts when released.

mod accel;
pub mod cache;
pub mod check;
pub mod config;
pub mod counters;
pub mod deferred;
pub mod error;
pub mod fault;
mod filemap;
pub mod gather;
pub mod locking;
mod mmap_lock;
mod percpu;
pub mod readahead;
pub mod space;
pub mod swap;
pub(crate) mod swap_ra;
pub mod vma;
pub mod walk;

pub use cache::ShmemHuge;
pub use config::{
    Gup, Khugepaged, Locking, MmConfig, MthpPolicy, Reclaim, ShmemEnabled, ShmemOrderPolicy,
    SwapDeviceKind, SwapRaKind, SwapReadahead, ThpMode,
};
pub use counters::{
    FaultKind, LockClass, LockEvent, MmCounters, ThreadCounters, ThreadCtx, FAULT_KINDS,
};
pub use deferred::{Deferred, Work};
pub use error::Errno;
pub use fault::{FaultAccess, FaultResult, SegvCode};
pub use gather::{GatherFlush, GatherLimits};
pub use space::{AddressSpace, Advice, FamilyMember, MapKind, MmapArgs, MremapArgs, Remapped};
pub use vma::{Prot, Vma};
