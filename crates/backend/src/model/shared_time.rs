//! [`SharedResources`]: what every modeled CPU's faults and system calls
//! share besides the address space's own locks, in virtual time: the page
//! allocator's zone lock, the LRU lock and the mmap_lock's count line.
//! [`super::pricing::Pricer`] asks it, around each event's placement, what
//! waiting for them added.
//!
//! What each mirrors in Linux (the slides' kernel, 5.14, and the era of
//! the split-PMD seed, 3.12, alike):
//! - Zone lock: a CPU allocates order-0 pages from its own free-page list
//!   and refills it from the zone's buddy lists one batch at a time under
//!   `zone->lock` (mm/page_alloc.c, `rmqueue_pcplist` -> `rmqueue_bulk`);
//!   freed pages go back to the CPU's list, which gives a batch back under
//!   the same lock once it is full (`free_unref_page_commit` ->
//!   `free_pcppages_bulk`). A CPU takes the lock once per [`PCP_BATCH`]
//!   pages allocated and once per [`PCP_BATCH`] pages freed, holding it
//!   `zone.lock_batch`.
//! - LRU lock: a new anonymous or shmem folio goes onto the LRU lists in a
//!   per-CPU batch of [`LRU_BATCH`] folios, moved under the LRU lock when
//!   full (mm/swap.c, `folio_add_lru` -> `folio_batch_move_lru`); freed
//!   pages come off the lists under it too (`release_pages`), batched
//!   alike here. Held `lru.lock_batch` per batch.
//! - mmap_lock's count line: a fault takes the mmap_lock to read
//!   (`down_read_trylock` in `do_user_addr_fault`, `up_read` at the end),
//!   each an atomic on the rwsem's count, one cache line every CPU
//!   writes: taken by another CPU than its last writer, the line moves
//!   (`lock.handoff`), one CPU at a time. (Linux 6.4 and later take a
//!   per-VMA lock instead in most faults; the model logs the mmap_lock.)
//!
//! The holds are inside the fault and call figures (measured by one CPU
//! alone), so only the waits and hand-offs are added (`timing::shared`).
//!
//! ## Invariants
//! 1. A CPU's batch counters only grow; a batch's lock is taken when a
//!    counter crosses a multiple of its batch size, so the takes do not
//!    depend on how the pages were split into events.
//! 2. Nothing here reads a host clock.

use mm::{FaultKind, FAULT_KINDS};
use timing::{CostModel, Ns3, SharedLock};

/// Pages per refill or drain of a CPU's free-page list (Linux:
/// mm/page_alloc.c, `zone_batchsize`: 63 on zones over 1 GiB since 4.x).
pub(crate) const PCP_BATCH: u64 = 63;

/// Folios per LRU batch (Linux: include/linux/pagevec.h, `PAGEVEC_SIZE`,
/// 15 since 4.x).
pub(crate) const LRU_BATCH: u64 = 15;

/// One CPU's running counts.
#[derive(Debug, Default, Clone, Copy)]
struct Batches {
    allocated: u64,
    freed: u64,
    lru_added: u64,
    lru_removed: u64,
}

/// The machine-wide locks and lines (module documentation).
#[derive(Debug)]
pub(crate) struct SharedResources {
    /// Order-0 pages a fault of each [`FaultKind`] allocates from its
    /// CPU's free list.
    pub(crate) pages_per_fault: [u64; FAULT_KINDS],
    /// Folios a fault of each kind puts on the LRU.
    pub(crate) folios_per_fault: [u64; FAULT_KINDS],
    zone: SharedLock,
    lru: SharedLock,
    mmap_line: SharedLock,
    cpus: Vec<Batches>,
    /// Whether a munmap or DONTNEED drains the CPU's LRU batch first
    /// (`mm::MmConfig::lru_drain`).
    pub(crate) lru_drain: bool,
    /// The next event is a munmap or DONTNEED (set by
    /// [`super::pricing::Pricer::syscall_cost`]).
    pub(crate) unmapping: bool,
    /// Waits for the LRU lock so far, over every CPU.
    pub(crate) lru_wait: Ns3,
    /// Pages the next event freed (a system call's zapped pages, set by
    /// [`super::pricing::Pricer::syscall_cost`]).
    pub(crate) freed: u64,
}

impl Default for SharedResources {
    fn default() -> SharedResources {
        let mut pages_per_fault = [0; FAULT_KINDS];
        let mut folios_per_fault = [0; FAULT_KINDS];
        for k in FaultKind::ALL {
            let (p, f) = match k {
                // Linux: do_anonymous_page, wp_page_copy, shmem's new
                // page: one order-0 page from the CPU's list, one folio
                // for the LRU.
                FaultKind::AnonWrite | FaultKind::Cow | FaultKind::ZeroCow | FaultKind::Shmem => {
                    (1, 1)
                }
                // A large folio comes from the buddy lists (a 2 MiB one
                // never sat on a CPU's list before 5.13; not counted as
                // order-0 pages here), one folio for the LRU.
                FaultKind::Thp | FaultKind::Mthp => (0, 1),
                // The zero page, a cached file page, a major fault's page
                // (read-ahead's pages are not modeled), nothing new.
                FaultKind::ZeroRead
                | FaultKind::FileRead
                | FaultKind::Major
                | FaultKind::Spurious
                | FaultKind::FileMkwrite => (0, 0),
            };
            pages_per_fault[k as usize] = p;
            folios_per_fault[k as usize] = f;
        }
        SharedResources {
            pages_per_fault,
            folios_per_fault,
            zone: SharedLock::new(),
            lru: SharedLock::new(),
            mmap_line: SharedLock::new(),
            cpus: Vec::new(),
            lru_drain: true,
            unmapping: false,
            lru_wait: Ns3::ZERO,
            freed: 0,
        }
    }
}

/// A per-CPU count going from `from` to `to`, taking a shared lock once
/// each time it crosses a multiple of `batch` (a batch of pages moved).
#[derive(Debug, Clone, Copy)]
struct Crossing {
    from: u64,
    to: u64,
    batch: u64,
}

impl Crossing {
    /// The multiples of `batch` crossed: the lock's takes.
    #[inline(always)]
    fn takes(self) -> u64 {
        self.to / self.batch - self.from / self.batch
    }
}

/// Takes of `lock` for each multiple of the batch that `crossing` crosses,
/// one after the other from `at`: the time they added. Always inlined: the
/// batch is a constant at every call, so the two divisions become
/// multiplications (they ran on every fault).
#[inline(always)]
fn batches(
    lock: &mut SharedLock,
    costs: &CostModel,
    cpu: usize,
    at: Ns3,
    crossing: Crossing,
    hold: Ns3,
) -> Ns3 {
    let takes = crossing.takes();
    let mut t = at;
    let mut extra = Ns3::ZERO;
    for _ in 0..takes {
        let k = lock.take(cpu, t, hold, costs.handoff());
        extra += k.extra;
        t = k.end;
    }
    extra
}

impl SharedResources {
    fn cpu(&mut self, cpu: usize) -> Batches {
        if self.cpus.len() <= cpu {
            self.cpus.resize(cpu + 1, Batches::default());
        }
        self.cpus[cpu]
    }

    /// An event of `cpu` that starts at `at`, allocated `pages` order-0
    /// pages, put `folios` folios on the LRU, freed [`Self::freed`] pages
    /// and took the mmap_lock if `mmap`: the time its waits for the shared
    /// locks added. Every take is placed at the event's start, when the
    /// CPU's clock is the smallest of the runnable CPUs (the executor's
    /// order): a take placed at an event's end would reserve the lock in
    /// the future and make CPUs whose events start earlier wait for it.
    pub(crate) fn take(
        &mut self,
        costs: &CostModel,
        cpu: usize,
        at: Ns3,
        pages: u64,
        folios: u64,
        mmap: bool,
    ) -> Ns3 {
        let mut b = self.cpu(cpu);
        let freed = std::mem::take(&mut self.freed);
        // Linux: lru_add_drain at the start of unmap_region and
        // zap_page_range_single: a partial batch goes onto the LRU now,
        // one take of the lock (the drain is a full batch's move, held as
        // long as one).
        let drain = std::mem::take(&mut self.unmapping)
            && self.lru_drain
            && !b.lru_added.is_multiple_of(LRU_BATCH);
        let drained = if drain {
            LRU_BATCH - b.lru_added % LRU_BATCH
        } else {
            0
        };
        let mut extra = Ns3::ZERO;
        if mmap {
            // down_read moves the count's line here; up_read later moves
            // it again if another CPU took it meanwhile: the line is busy
            // one more transfer.
            // An atomic read-modify-write of the count (Linux 3.12:
            // __down_read's `lock xadd`; today's rwsem fast path alike): the
            // line moves to each taker in turn, but the CPUs queued for it
            // do not spin re-reading it as a ticket spinlock's waiters do,
            // so the hand-off does not grow with them (no
            // lock.handoff_waiter).
            let h = timing::Handoff {
                per_waiter: Ns3::ZERO,
                ..costs.handoff()
            };
            extra += self.mmap_line.take(cpu, at, h.base, h).extra;
        }
        // Each run returns what it added, so the LRU lock's share is known.
        let mut run = |lock: &mut SharedLock, from: &mut u64, n: u64, batch: u64, hold: Ns3| {
            if n == 0 {
                return Ns3::ZERO;
            }
            let crossing = Crossing {
                from: *from,
                to: *from + n,
                batch,
            };
            let e = batches(lock, costs, cpu, at + extra, crossing, hold);
            extra += e;
            *from += n;
            e
        };
        run(
            &mut self.zone,
            &mut b.allocated,
            pages,
            PCP_BATCH,
            costs.zone_batch,
        );
        let mut lru = run(
            &mut self.lru,
            &mut b.lru_added,
            drained,
            LRU_BATCH,
            costs.lru_batch,
        );
        lru += run(
            &mut self.lru,
            &mut b.lru_added,
            folios,
            LRU_BATCH,
            costs.lru_batch,
        );
        lru += run(
            &mut self.lru,
            &mut b.lru_removed,
            freed,
            LRU_BATCH,
            costs.lru_batch,
        );
        run(
            &mut self.zone,
            &mut b.freed,
            freed,
            PCP_BATCH,
            costs.zone_batch,
        );
        self.cpus[cpu] = b;
        self.lru_wait += lru;
        extra
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mmap_line_hands_off_without_a_ticket_locks_per_waiter_cost() {
        // Ten CPUs take the mmap_lock's count line at the same instant
        // under the 2013 figures (ticket-lock hand-offs growing 50 ns per
        // waiter): the k-th waits for the hand-off and hold of each take
        // before it, two line transfers (lock.handoff) each, and never a
        // per-waiter term (an atomic on the count, not a spin on the
        // line).
        let costs = CostModel::named("bare-metal-2013").unwrap();
        assert!(costs.handoff_waiter.ns > 0.0);
        let base = costs.handoff.ns;
        let mut s = SharedResources::default();
        let at = Ns3::same(1000.0);
        for cpu in 0..10 {
            let extra = s.take(&costs, cpu, at, 0, 0, true);
            // CPU 0 finds the line free and never held.
            let want = 2.0 * cpu as f64 * base;
            assert!((extra.ns - want).abs() < 1e-9, "cpu {cpu}: {}", extra.ns);
        }
        // An event that takes no mmap_lock waits for nothing.
        assert_eq!(s.take(&costs, 11, at, 0, 0, false), Ns3::ZERO);
    }
}
