//! Counters: per thread (merged at marks, DESIGN "Counters per thread") and
//! address-space wide (computed from state).

/// The lock classes whose acquisitions are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockClass {
    /// The mmap lock (reader-writer; both modes counted here).
    Mmap = 0,
    /// `mm->page_table_lock`.
    PageTableLock = 1,
    /// A split PMD-table lock.
    Pmd = 2,
    /// A split PTE-table lock.
    Pte = 3,
}

impl LockClass {
    pub const ALL: [LockClass; 4] = [
        LockClass::Mmap,
        LockClass::PageTableLock,
        LockClass::Pmd,
        LockClass::Pte,
    ];
    pub fn name(self) -> &'static str {
        match self {
            LockClass::Mmap => "mmap_lock",
            LockClass::PageTableLock => "page_table_lock",
            LockClass::Pmd => "pmd_lock",
            LockClass::Pte => "pte_lock",
        }
    }
}

/// The kind of a handled fault, as the cost model charges it: decided where
/// the fault handler (`fault`) picks a path (one store into
/// [`ThreadCtx::fault_kind`])
/// and counted once per handled fault (a major fault counts as
/// [`FaultKind::Major`], whatever its handler).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FaultKind {
    /// A write to anonymous memory: a zeroed base page mapped.
    AnonWrite = 0,
    /// A read of anonymous memory: the shared zero page mapped.
    ZeroRead = 1,
    /// A write to a private page mapped read-only, or to a private file
    /// page: the page copied.
    Cow = 2,
    /// A read of a cached file (or shmem) page, fault-around included.
    FileRead = 3,
    /// A write to a shared mapping (shmem or a shared file page).
    Shmem = 4,
    /// A PMD-sized THP mapped.
    Thp = 5,
    /// A multi-size THP folio mapped by PTEs.
    Mthp = 6,
    /// The page was read in (Linux counts it in `maj_flt`).
    Major = 7,
    /// Nothing new mapped: spurious, write-protect reuse, access flag.
    #[default]
    Spurious = 8,
    /// A write to an anonymous page that maps the zero page: a zeroed
    /// page replaces it (Linux: mm/memory.c, wp_page_copy takes
    /// `vma_alloc_zeroed_movable_folio` for the zero pfn; nothing copied).
    ZeroCow = 9,
    /// A write to a present, write-protected page of a shared file mapping
    /// (mapped by a read fault, or cleaned by writeback since): nothing
    /// new mapped, but the file system is told (Linux: mm/memory.c,
    /// wp_page_shared -> do_page_mkwrite, then fault_dirty_shared_page:
    /// the folio dirtied, file_update_time, balance_dirty_pages_ratelimited).
    FileMkwrite = 10,
}

impl FaultKind {
    pub const ALL: [FaultKind; 11] = [
        FaultKind::AnonWrite,
        FaultKind::ZeroRead,
        FaultKind::Cow,
        FaultKind::FileRead,
        FaultKind::Shmem,
        FaultKind::Thp,
        FaultKind::Mthp,
        FaultKind::Major,
        FaultKind::Spurious,
        FaultKind::ZeroCow,
        FaultKind::FileMkwrite,
    ];
}

/// Kinds of [`FaultKind`].
pub const FAULT_KINDS: usize = FaultKind::ALL.len();

/// One lock acquisition, as the lock log records it (see
/// [`ThreadCtx::lock_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockEvent {
    /// Which lock: the address of its lock word, stable for the life of the
    /// address space (table locks live beside their table page in the
    /// arena, which never moves); 0 for the mmap lock.
    pub lock: usize,
    pub class: LockClass,
    /// Taken exclusively (always, but for the mmap lock taken to read).
    pub exclusive: bool,
}

/// Counters one thread accumulates without sharing a cache line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadCounters {
    /// Handled faults that needed no I/O (Linux `min_flt`).
    pub minor_faults: u64,
    /// Handled faults that read the page in (Linux `maj_flt`).
    pub major_faults: u64,
    /// Faults that ended in `VM_FAULT_OOM` (not counted as faults, as Linux).
    pub oom_faults: u64,
    /// Faults that ended in SIGSEGV.
    pub segv_faults: u64,
    /// PMD-sized THP allocated on fault (`thp_fault_alloc`).
    pub thp_fault_alloc: u64,
    /// THP allocations that failed and fell back (`thp_fault_fallback`).
    pub thp_fault_fallback: u64,
    /// THPs allocated to collapse a range into (Linux's `thp_collapse_alloc`
    /// event: MADV_COLLAPSE and khugepaged, anonymous and shmem).
    pub thp_collapse_alloc: u64,
    /// Multi-size THP folios allocated on fault.
    pub mthp_fault_alloc: u64,
    /// Lock acquisitions per [`LockClass`].
    pub lock_acquisitions: [u64; 4],
    /// Acquisitions that found the lock held (try-lock failed first).
    pub lock_contended: [u64; 4],
    /// Handled faults per [`FaultKind`] (model-only breakdown).
    pub fault_kinds: [u64; FAULT_KINDS],
    /// Pages of files the read-ahead of this thread's faults read in from
    /// the backing store (model-only; the time model prices a major fault
    /// per call plus per page read, `fault.major_page`).
    pub pages_read: u64,
    /// Of `pages_read`, the pages read in PMD-sized folios (model-only;
    /// priced `fault.major_pmd_page` instead of `fault.major_page`: the
    /// fault waits for the whole folio's read, Linux `folio_end_read`).
    pub pmd_pages_read: u64,
    /// Major faults whose read-ahead read PMD-sized folios (model-only;
    /// priced `fault.major_pmd` instead of `fault.major`).
    pub pmd_major_faults: u64,
    /// Dirty page-cache pages msync wrote back (model-only; Linux:
    /// mm/msync.c -> vfs_fsync_range, each folio cleaned by
    /// folio_clear_dirty_for_io and written).
    pub writeback_pages: u64,
    /// Zero-page mappings a system call's populate-for-write replaced with
    /// zeroed pages (model-only; Linux: mm/gup.c, __get_user_pages with
    /// FOLL_WRITE -> faultin_page -> handle_mm_fault -> do_wp_page ->
    /// wp_page_copy of the zero pfn, then ptep_clear_flush of the old
    /// entry). Counted in `minor_faults` too, not in `fault_kinds`: the
    /// time model prices them `populate.zero_cow`, apart from the fresh
    /// pages a populate maps (`populate.page`).
    pub populate_zero_cow: u64,
    /// Folios a system call's populate mapped into a locked VMA
    /// (model-only; Linux: folio_add_lru_vma -> mlock_new_folio for a new
    /// folio in a VM_LOCKED VMA, and munlock_folio when it is unlocked or
    /// unmapped later): the time model prices each `mlock.folio`.
    pub populate_locked: u64,
}

impl ThreadCounters {
    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &ThreadCounters) {
        self.minor_faults += other.minor_faults;
        self.major_faults += other.major_faults;
        self.oom_faults += other.oom_faults;
        self.segv_faults += other.segv_faults;
        self.thp_fault_alloc += other.thp_fault_alloc;
        self.thp_fault_fallback += other.thp_fault_fallback;
        self.mthp_fault_alloc += other.mthp_fault_alloc;
        self.writeback_pages += other.writeback_pages;
        self.populate_zero_cow += other.populate_zero_cow;
        self.populate_locked += other.populate_locked;
        for i in 0..4 {
            self.lock_acquisitions[i] += other.lock_acquisitions[i];
            self.lock_contended[i] += other.lock_contended[i];
        }
        for (a, b) in self.fault_kinds.iter_mut().zip(other.fault_kinds) {
            *a += b;
        }
        self.pages_read += other.pages_read;
        self.pmd_pages_read += other.pmd_pages_read;
        self.pmd_major_faults += other.pmd_major_faults;
        self.thp_collapse_alloc += other.thp_collapse_alloc;
    }
}

/// The per-thread context every operation takes.
#[derive(Debug, Default)]
pub struct ThreadCtx {
    pub counters: ThreadCounters,
    /// The modeled CPU this thread runs on, if the caller models CPUs (it
    /// is handed to the table flusher, see `AddressSpace::set_table_flusher`).
    pub cpu: Option<usize>,
    /// The kind of the fault being handled, set where the handler is chosen.
    pub fault_kind: FaultKind,
    /// The fault just handled met a read-ahead mark and, in Linux, dropped
    /// the mmap lock and retried ([`crate::cache::Lookup::retry`]); set by
    /// the page-cache lookups, read and cleared by `populate`.
    pub fault_retry: bool,
    /// When `Some`, every lock acquisition of this thread is appended, in
    /// order (a virtual-time executor replays them to model waiting); `None`
    /// (the default) costs one branch per acquisition.
    pub lock_log: Option<Vec<LockEvent>>,
}

impl ThreadCtx {
    pub fn new() -> ThreadCtx {
        ThreadCtx::default()
    }

    /// Appends to the lock log, if there is one.
    #[inline(always)]
    pub(crate) fn log_lock(&mut self, lock: usize, class: LockClass, exclusive: bool) {
        if let Some(log) = &mut self.lock_log {
            log.push(LockEvent {
                lock,
                class,
                exclusive,
            });
        }
    }
}

/// A snapshot of every counter, with the names of
/// docs/format.md where the kernel has the same counter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MmCounters {
    pub minor_faults: i64,
    pub major_faults: i64,
    /// VmPTE: PTE, PMD and PUD tables (Linux `mm_pgtables_bytes`), deposited
    /// THP tables included.
    pub vmpte_kb: i64,
    pub rss_anon_kb: i64,
    pub rss_file_kb: i64,
    pub rss_shmem_kb: i64,
    /// PMD-mapped anonymous THP (smaps `AnonHugePages`).
    pub anon_huge_kb: i64,
    /// Shmem mapped by PMD leaves (smaps `ShmemPmdMapped`).
    pub shmem_pmd_kb: i64,
    /// Regular-file pages mapped by PMD leaves (smaps `FilePmdMapped`).
    pub file_pmd_kb: i64,
    /// Swap entries in the tables (VmSwap, Linux `MM_SWAPENTS`).
    pub vmswap_kb: i64,
    /// Table pages per level name, root first (deposited tables counted at
    /// the PTE level).
    pub pt_pages: Vec<(String, i64)>,
    pub threads: ThreadCounters,
}

impl MmCounters {
    /// Flat (name, value) pairs: the spec's counters, then the model's own.
    pub fn to_pairs(&self) -> Vec<(&'static str, i64)> {
        let t = &self.threads;
        let mut v = vec![
            (counters::MINOR_FAULTS.name, self.minor_faults),
            (counters::MAJOR_FAULTS.name, self.major_faults),
            (counters::VMPTE_KB.name, self.vmpte_kb),
            (counters::RSS_ANON_KB.name, self.rss_anon_kb),
            (counters::RSS_FILE_KB.name, self.rss_file_kb),
            (counters::RSS_SHMEM_KB.name, self.rss_shmem_kb),
            (counters::ANON_HUGE_KB.name, self.anon_huge_kb),
            (counters::SHMEM_PMD_KB.name, self.shmem_pmd_kb),
            (counters::FILE_PMD_KB.name, self.file_pmd_kb),
            (counters::VMSWAP_KB.name, self.vmswap_kb),
            (
                counters::LOCK_ACQUISITIONS.name,
                t.lock_acquisitions.iter().sum::<u64>() as i64,
            ),
            (
                counters::LOCK_CONTENDED.name,
                t.lock_contended.iter().sum::<u64>() as i64,
            ),
            (counters::THP_FAULT_ALLOC.name, t.thp_fault_alloc as i64),
            (
                counters::THP_FAULT_FALLBACK.name,
                t.thp_fault_fallback as i64,
            ),
            (counters::MTHP_FAULT_ALLOC.name, t.mthp_fault_alloc as i64),
            (
                counters::THP_COLLAPSE_ALLOC.name,
                t.thp_collapse_alloc as i64,
            ),
            (counters::OOM_FAULTS.name, t.oom_faults as i64),
            (counters::SEGV_FAULTS.name, t.segv_faults as i64),
        ];
        const ACQ: [&str; 4] = counters::LOCK_ACQUISITIONS_BY_LOCK;
        const CON: [&str; 4] = counters::LOCK_CONTENDED_BY_LOCK;
        for c in LockClass::ALL {
            v.push((ACQ[c as usize], t.lock_acquisitions[c as usize] as i64));
            v.push((CON[c as usize], t.lock_contended[c as usize] as i64));
        }
        for k in FaultKind::ALL {
            v.push((
                counters::FAULTS_BY_KIND[k as usize],
                t.fault_kinds[k as usize] as i64,
            ));
        }
        v
    }

    /// Table pages per level name, root first.
    pub fn pt_pages(&self) -> Vec<(String, i64)> {
        self.pt_pages.clone()
    }
}
