//! The catalog of cost names. Each entry is one event kind of the model
//! whose cost a cost file gives, with the unit of that cost.

/// What one unit of a cost is charged per.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    /// Nanoseconds per event (one fault, one call, one shootdown).
    Event,
    /// Nanoseconds per 4 KiB page the operation touches.
    Page,
    /// Nanoseconds per page-table page the operation touches.
    Table,
    /// Nanoseconds per KiB.
    KiB,
}

impl Per {
    /// The unit as printed ("ns per fault" is the entry's own wording).
    pub fn unit(self) -> &'static str {
        match self {
            Per::Event => "ns",
            Per::Page => "ns per page",
            Per::Table => "ns per table page",
            Per::KiB => "ns per KiB",
        }
    }
}

/// One name a cost file may give a cost for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostName {
    pub name: &'static str,
    pub per: Per,
    pub meaning: &'static str,
}

const fn c(name: &'static str, per: Per, meaning: &'static str) -> CostName {
    CostName { name, per, meaning }
}

/// Every cost name, grouped by what pays it. `ptlab calibrate` measures
/// them in this order.
pub const CATALOG: &[CostName] = &[
    // Minor faults, by kind: the whole fault as the faulting thread sees it
    // (exception entry and exit, the handler, the page's allocation and
    // clearing where the kind does it).
    c("fault.anon_write", Per::Event, "Write fault on anonymous memory: a zeroed 4 KiB page mapped."),
    c("fault.anon_recycled", Per::Event, "Write fault on anonymous memory whose page comes back from pages the same CPU freed just before (munmap, MADV_DONTNEED): warm in its free list and caches."),
    c("fault.zero_read", Per::Event, "Read fault on anonymous memory: the shared zero page mapped."),
    c("fault.cow", Per::Event, "Write fault on a private page mapped read-only: the page copied."),
    c("fault.file_read", Per::Event, "Read fault on a cached file page, fault-around included."),
    c("fault.shmem", Per::Event, "Write fault on shared anonymous (shmem) memory."),
    c("fault.thp", Per::Event, "Write fault that maps a 2 MiB THP, its zeroing included."),
    c("fault.mthp_64k", Per::Event, "Write fault that maps a 64 KiB multi-size THP, zeroing included."),
    c("fault.major", Per::Event, "Fault that reads a file page in from the page cache's backing store: the part per fault (the read-ahead's pages priced apart, fault.major_page)."),
    c("fault.major_page", Per::Page, "A page a fault's read-ahead reads in from the backing store (allocated, inserted in the page cache, read)."),
    c("fault.major_pmd", Per::Event, "Major fault whose read-ahead read PMD-sized folios: the part per fault, in place of fault.major (its pages priced fault.major_pmd_page)."),
    c("fault.major_pmd_page", Per::Page, "A page a fault's read-ahead reads in a PMD-sized folio (MADV_HUGEPAGE on a file system with large folios): the folio's share of the read the fault waits for whole, in place of fault.major_page."),
    c("fault.spurious", Per::Event, "Fault that maps nothing new: spurious, write-protect reuse, access-flag update."),
    c("fault.zero_cow", Per::Event, "Write fault on anonymous memory that maps the zero page: a zeroed page replaces it (nothing copied)."),
    c("fault.file_mkwrite", Per::Event, "Write fault on a present, write-protected page of a shared file mapping (mapped by a read, or cleaned by writeback): the file system's page_mkwrite, the page dirtied, the PTE made writable."),
    c("populate.page", Per::Page, "A page a system call populates (MAP_POPULATE, mlock, MADV_POPULATE_WRITE): a zeroed anonymous page mapped without an exception."),
    c("populate.zero_cow", Per::Page, "A zero page a system call's populate-for-write replaces (mprotect of a locked read-only range to read-write, MADV_POPULATE_WRITE over zero pages): a zeroed page mapped and the old entry flushed, without an exception."),
    c("mlock.folio", Per::Event, "A new folio a system call's populate maps into a locked VMA (mlock, MAP_LOCKED, mprotect of a locked range): mlocked as it is mapped (mlock_new_folio) and munlocked when unlocked or unmapped (munlock_folio), both charged at the populate."),
    c("populate.zero_page", Per::Page, "A zero page a system call populates (MADV_POPULATE_READ, MAP_POPULATE of a read-only anonymous mapping): the shared zero page mapped without an exception."),
    // Page tables.
    c("pt.alloc", Per::Table, "Allocating, clearing and linking one page-table page."),
    c("pt.free", Per::Table, "Unlinking and freeing one page-table page."),
    // fork: the call, and its part per present page and per table copied
    // (the child's exit zapping them included).
    c("fork.call", Per::Event, "A workload's fork whose child does nothing: fork, the child's start and exit, the parent's wait."),
    c("fork.page", Per::Page, "fork per present page of the parent: its entry copied, and zapped at the child's exit."),
    c("fork.table", Per::Table, "fork per page-table page of the parent: the child's copy allocated, and freed at its exit."),
    // System calls: a fixed part per call and a part per page or table.
    c("munmap.call", Per::Event, "munmap of nothing mapped: entry, VMA work, exit."),
    c("munmap.page", Per::Page, "munmap per present 4 KiB page it zaps."),
    c("mprotect.call", Per::Event, "mprotect per call."),
    c("mprotect.page", Per::Page, "mprotect per present page whose entry it changes."),
    c("madvise.call", Per::Event, "madvise(MADV_DONTNEED) per call."),
    c("madvise.page", Per::Page, "madvise(MADV_DONTNEED) per present page it zaps."),
    c("mmap.call", Per::Event, "mmap of an anonymous region (no population)."),
    c("syscall.call", Per::Event, "Any other system call of the workload format (mlock, munlock, mremap, an msync with nothing dirty), per call."),
    c("msync.call", Per::Event, "msync(MS_SYNC) that writes dirty pages back, per call: the file system's sync (journal commit, device cache flush), elapsed, its waits included."),
    c("msync.page", Per::Page, "msync(MS_SYNC) per dirty page it writes back and waits for, elapsed."),
    c("node_of.call", Per::Event, "get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) of a present page, per call: entry, the VMA's lookup under the mmap lock, the page got and put, exit."),
    // TLB shootdowns.
    c("shootdown.sender", Per::Event, "Sender's cost of a TLB flush request to other CPUs running the space (IPIs and their acknowledgements, or paravirtual deferral), per request."),
    c("shootdown.receiver", Per::Event, "Each other CPU's cost of a flush request sent to it (interrupt, flush, acknowledgement), per request."),
    c("tlb.flush_local", Per::Event, "A local TLB flush of a range (no IPI)."),
    // Broadcast TLB invalidation (tlb_flush = invlpgb | rar).
    c("invlpgb.instruction", Per::Event, "One INVLPGB a shootdown's initiator issues (up to invlpgb_count_max pages, or a whole ASID): the instruction's issue, the local invalidation included."),
    c("invlpgb.tlbsync", Per::Event, "The TLBSYNC that ends a broadcast shootdown: the initiator waits until every CPU has done its INVLPGBs."),
    c("rar.sender", Per::Event, "Sender's cost of one remote action request (Intel RAR) to the CPUs running the space: the request written, the targets signalled, their acknowledgements awaited."),
    c("rar.receiver", Per::Event, "Each target CPU's cost of a RAR request, handled by its microcode without an interrupt."),
    // Memory and locks.
    c("clear.kib", Per::KiB, "Clearing memory (clear_page), per KiB."),
    c("copy.kib", Per::KiB, "Copying memory (copy_page), per KiB."),
    c("lock.uncontended", Per::Event, "Taking and releasing a free spinlock."),
    c("lock.hold_fault", Per::Event, "Time a fault holds its page-table lock while it sets the entries."),
    c("lock.hold_lookup", Per::Event, "Time get_user_pages' follow_page holds the page-table lock of one present page (follow_trans_huge_pmd or follow_page_pte: the entry re-read, a page reference taken)."),
    c("lock.handoff", Per::Event, "Handing a contended spinlock from one CPU to another (cache line transfer)."),
    c("lock.handoff_waiter", Per::Event, "Extra hand-off cost per CPU already waiting on the lock (a ticket spinlock sends its line to every waiter; a queued spinlock about 0)."),
    c("mem.bandwidth_kib", Per::KiB, "The whole machine's memory bandwidth, shared by every CPU, for clearing and copying pages: ns per KiB moved."),
    c("zone.lock_batch", Per::Event, "The page allocator's zone lock held to refill or drain one CPU's free-page list by one batch (63 pages), shared by every CPU."),
    c("lru.lock_batch", Per::Event, "The LRU lock held to add or remove one batch of folios (15) to or from the LRU lists, shared by every CPU."),
    // Translation.
    c("access.tlb_hit", Per::Event, "A memory access whose translation hits the first-level TLB, cache hit."),
    c("tlb.l2_hit", Per::Event, "Extra cost of an access that misses the L1 TLB and hits the L2 TLB."),
    c("tlb.miss_walk", Per::Event, "Extra cost of an access that misses every TLB and walks (this host: two-dimensional under a hypervisor)."),
    c("tlb.miss_walk_cached", Per::Event, "Extra cost of an access that misses every TLB and walks tables whose lines are in the data caches (pages just faulted or mapped, a small working set of tables)."),
    c("walk.ref_cached", Per::Event, "One walk reference served by a cache of table lines."),
    c("walk.ref_memory", Per::Event, "One walk reference served by memory."),
    // Memory latency by working-set size (a dependent load, random order).
    c("mem.latency_32k", Per::Event, "Dependent random load, 32 KiB working set."),
    c("mem.latency_1m", Per::Event, "Dependent random load, 1 MiB working set."),
    c("mem.latency_32m", Per::Event, "Dependent random load, 32 MiB working set."),
    c("mem.latency_1g", Per::Event, "Dependent random load, 1 GiB working set (THP, so few TLB misses)."),
];

/// The catalog entry of `name`.
pub fn lookup(name: &str) -> Option<&'static CostName> {
    CATALOG.iter().find(|c| c.name == name)
}

/// The catalog name closest to `name`, for a "did you mean" hint.
pub fn suggest(name: &str) -> Option<&'static str> {
    CATALOG
        .iter()
        .map(|c| (strsim::jaro_winkler(name, c.name), c.name))
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_dotted() {
        let mut seen = std::collections::BTreeSet::new();
        for c in CATALOG {
            assert!(seen.insert(c.name), "{} listed twice", c.name);
            assert!(c.name.contains('.'), "{} has no group", c.name);
        }
    }

    #[test]
    fn a_misspelt_name_is_suggested() {
        assert_eq!(suggest("fault.anon_wrte"), Some("fault.anon_write"));
        assert_eq!(suggest("nothing like it"), None);
    }
}
