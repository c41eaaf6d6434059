//! The knobs of the model, with Linux's x86-64 defaults of this host.

use std::collections::BTreeMap;

/// Which locks protect the page-table levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Locking {
    /// One `page_table_lock` for every level (Linux before split PTE locks).
    Global,
    /// Split PTE locks: each PTE table has its own lock; the PMD level and
    /// above use `page_table_lock` (Linux with `USE_SPLIT_PTE_PTLOCKS` only).
    SplitPte,
    /// Split PTE and PMD locks (Linux's default on x86-64).
    SplitPmd,
}

/// How `get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR)` gets the page it asks
/// about (Linux: mm/mempolicy.c, lookup_node; see `space::lookup_node`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gup {
    /// get_user_pages_fast: a lockless walk; a present page takes no lock
    /// (Linux since 2022, this host's kernel).
    Fast,
    /// get_user_pages under the mmap lock, the page read under its table's
    /// lock (Linux 3.12, the split-PMD seed's kernel).
    Slow,
}

/// What happens to PTE tables that become empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reclaim {
    /// Tables stay until munmap frees what no VMA covers.
    Off,
    /// Linux `CONFIG_PT_RECLAIM`: `MADV_DONTNEED` over a whole PMD range
    /// frees its empty PTE table.
    On,
    /// The reclaim slides' full design: a PTE table is freed as soon as its
    /// count of present entries drops to zero, on every path (past Linux).
    Eager,
}

/// `/sys/kernel/mm/transparent_hugepage/enabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThpMode {
    Always,
    Madvise,
    Never,
}

/// `/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/enabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MthpPolicy {
    Always,
    Madvise,
    Never,
    /// Follow the top-level [`ThpMode`].
    Inherit,
}

/// `/sys/kernel/mm/transparent_hugepage/shmem_enabled` (Linux
/// `shmem_huge`): the `huge=` policy of the kernel's internal shmem mount
/// (memfds, MAP_SHARED|MAP_ANONYMOUS), or, as `Deny` and `Force`, an
/// override of every shmem mount's, the explicit tmpfs mounts' included
/// (mm/shmem.c `shmem_huge_global_enabled`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ShmemEnabled {
    Always,
    WithinSize,
    Advise,
    #[default]
    Never,
    /// No shmem THP anywhere, not even by MADV_COLLAPSE.
    Deny,
    /// A PMD-sized folio wherever the VMA can hold one, on every mount.
    Force,
}

/// `/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/shmem_enabled`
/// of the PMD size: which anonymous shmem (MAP_SHARED|MAP_ANONYMOUS) may
/// take PMD-sized folios (mm/shmem.c `shmem_allowable_huge_orders`);
/// memfds and tmpfs files follow their mount only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ShmemOrderPolicy {
    Always,
    WithinSize,
    Advise,
    Never,
    /// Follow the internal mount's policy ([`ShmemEnabled`]); Linux's
    /// default for the PMD size.
    #[default]
    Inherit,
}

/// Which read-ahead a major fault on a swap entry does (Linux:
/// mm/swap_state.c, `swapin_readahead`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SwapRaKind {
    /// Around the faulting address, in the same VMA and PMD, with the
    /// window and hits kept per VMA (`swap_vma_readahead`): Linux's choice
    /// when `/sys/kernel/mm/swap/vma_ra_enabled` is true and no active swap
    /// area is on a rotational device.
    Vma,
    /// An aligned block of swap slots around the faulting one, with the
    /// window and hits kept system-wide (`swap_cluster_readahead`): Linux's
    /// choice otherwise.
    Cluster,
}

/// Swap read-ahead: the kind and `/proc/sys/vm/page-cluster` (the window
/// is at most `1 << page_cluster` pages; 0 turns read-ahead off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SwapReadahead {
    pub kind: SwapRaKind,
    pub page_cluster: u32,
}

impl Default for SwapReadahead {
    /// Linux's defaults on a solid-state swap device: VMA read-ahead,
    /// page-cluster 3 (eight pages).
    fn default() -> SwapReadahead {
        SwapReadahead {
            kind: SwapRaKind::Vma,
            page_cluster: 3,
        }
    }
}

/// What kind of swap area the device is, which decides how Linux 6.18
/// swaps a large folio and when a written page leaves memory (mm/swapfile.c
/// `cluster_alloc_swap_entry`, mm/page_io.c `swap_writeout`, mm/memory.c
/// `do_swap_page`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SwapDeviceKind {
    /// A swap file on a filesystem (no `SWP_BLKDEV`): a large folio gets no
    /// contiguous slots and is split before it is written; writes are
    /// asynchronous, so a written page waits in the swap cache.
    #[default]
    File,
    /// A block device (a partition, a loop device) with asynchronous I/O,
    /// rotational or not: a large folio is written whole into an aligned
    /// cluster of slots and waits in the swap cache, whole.
    Block,
    /// A block device with synchronous I/O (`SWP_SYNCHRONOUS_IO`: zram,
    /// brd, pmem): a large folio is written whole, and every written page
    /// leaves memory at once; a fault on an entry no other names reads the
    /// page itself, past the swap cache and with no read-ahead, and frees
    /// its slot.
    Sync,
}

/// khugepaged's limits (`/sys/kernel/mm/transparent_hugepage/khugepaged/`):
/// how many PTEs of a PMD range may be empty or map the zero page
/// (`max_ptes_none`), be swapped out (`max_ptes_swap`) or map a page another
/// process shares (`max_ptes_shared`) for khugepaged to collapse the range,
/// and how many pages one scan pass covers (`pages_to_scan`). The deferred
/// split shrinker reads `max_ptes_none` too (`thp_underused`). MADV_COLLAPSE
/// ignores all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Khugepaged {
    pub max_ptes_none: u32,
    pub max_ptes_swap: u32,
    pub max_ptes_shared: u32,
    pub pages_to_scan: u32,
}

impl Default for Khugepaged {
    /// Linux's defaults for 4 KiB pages: `HPAGE_PMD_NR - 1`,
    /// `HPAGE_PMD_NR / 8`, `HPAGE_PMD_NR / 2`, `HPAGE_PMD_NR * 8`.
    fn default() -> Khugepaged {
        Khugepaged {
            max_ptes_none: 511,
            max_ptes_swap: 64,
            max_ptes_shared: 256,
            pages_to_scan: 4096,
        }
    }
}

/// Knobs that break the model on purpose, so tests can show that the
/// checkers catch the bug. Never set them outside tests.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DebugKnobs {
    /// Drop and re-take the PTE lock every this many entries while zapping
    /// (Linux: `need_resched()` in `zap_pte_range`). 0 = never.
    pub zap_batch: u32,
    /// Reintroduce the 2025 PT_RECLAIM bug: take the direct (no re-check)
    /// reclaim path even after the PTE lock was dropped midway.
    pub reclaim_without_recheck: bool,
    /// Overrides the gather's bounds (`mm::gather`): page entries and
    /// tables before a flush. 0 = Linux's for the page size; `u32::MAX`
    /// gathers a whole call (the unbatched reference of the tests).
    pub gather_pages: u32,
    pub gather_tables: u32,
}

/// The configuration of one address space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmConfig {
    pub locking: Locking,
    pub reclaim: Reclaim,
    /// Policy for PMD-sized THP.
    pub thp: ThpMode,
    /// Policy per multi-size THP size in bytes (sizes between the base page
    /// and the PMD size; absent = never).
    pub mthp: BTreeMap<u64, MthpPolicy>,
    /// `transparent_hugepage/use_zero_page`.
    pub thp_use_zero_page: bool,
    /// `transparent_hugepage/shmem_enabled`.
    pub shmem_enabled: ShmemEnabled,
    /// `transparent_hugepage/hugepages-<PMD size>kB/shmem_enabled`.
    pub shmem_pmd_policy: ShmemOrderPolicy,
    /// `transparent_hugepage/khugepaged/*`.
    pub khugepaged: Khugepaged,
    /// `/sys/kernel/mm/fault_around_bytes` (debugfs).
    pub fault_around_bytes: u64,
    /// Read-ahead window of the device backing files (its `read_ahead_kb`;
    /// Linux `ra_pages`): a page-cache miss reads this much around it.
    pub readaround_bytes: u64,
    /// Whether the filesystem of files gives large page-cache folios (ext4
    /// and XFS on 6.18 do): read-ahead then grows folios up to the PMD size,
    /// and PMD-sized ones are mapped by one PMD entry.
    pub large_folios: bool,
    /// How get_mempolicy's node lookup gets the page.
    pub gup: Gup,
    /// Whether munmap and MADV_DONTNEED first drain the calling CPU's
    /// batch of folios waiting to go onto the LRU (Linux: mm/swap.c,
    /// `lru_add_drain`, called by `unmap_region` and
    /// `zap_page_range_single`), taking the LRU lock for a partial batch.
    /// Rik van Riel's "mm: remove unnecessary calls to lru_add_drain"
    /// (December 2024) drops these calls. Only priced (the LRU lock's
    /// waits in virtual time): the tables and counters are the same.
    pub lru_drain: bool,
    /// The swap device's size in bytes (Linux: the active swap areas of
    /// /proc/swaps); `None` for no swap. With one, reclaim writes private
    /// anonymous pages out to it (see `space::swap`).
    pub swap: Option<u64>,
    /// The read-ahead of a major fault on a swap entry.
    pub swap_readahead: SwapReadahead,
    /// The kind of swap area the device is.
    pub swap_device: SwapDeviceKind,
    #[doc(hidden)]
    pub debug: DebugKnobs,
}

impl Default for MmConfig {
    /// Linux 6.18 on x86-64 as this host runs it: split PMD locks,
    /// PT_RECLAIM on, THP "madvise", every mTHP size "never", shmem THP
    /// "never" (the PMD size inheriting it), the huge zero page on, fault-around 64 KiB, read-ahead 128 KiB (Linux's
    /// `VM_READAHEAD_PAGES`; the host's device may differ: the backend
    /// reads it), large page-cache folios, the node lookup through
    /// get_user_pages_fast.
    fn default() -> MmConfig {
        let mthp = (14..20).map(|s| (1u64 << s, MthpPolicy::Never)).collect();
        MmConfig {
            locking: Locking::SplitPmd,
            reclaim: Reclaim::On,
            thp: ThpMode::Madvise,
            mthp,
            thp_use_zero_page: true,
            shmem_enabled: ShmemEnabled::Never,
            shmem_pmd_policy: ShmemOrderPolicy::Inherit,
            khugepaged: Khugepaged::default(),
            fault_around_bytes: 64 << 10,
            readaround_bytes: 128 << 10,
            large_folios: true,
            gup: Gup::Fast,
            lru_drain: true,
            swap: None,
            swap_readahead: SwapReadahead::default(),
            swap_device: SwapDeviceKind::File,
            debug: DebugKnobs::default(),
        }
    }
}
