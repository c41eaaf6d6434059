//! [`Pricer`]: what one modeled CPU did, priced on its virtual clock. The
//! virtual-time executor and the trace replay both price through it, so a
//! one-thread trace made from a workload predicts the same nanoseconds as
//! running that workload (the same additions in the same order).
//!
//! An access that does not fault is priced by the caller
//! ([`timing::CostModel::access`], added to the CPU's clock). A fault or a
//! system call is an *event*: [`Pricer::event`] adds the faults the CPU
//! handled since its last event (by kind), the shootdowns the machine sent
//! (sender's part) and places the whole with the locks the OS model logged
//! ([`timing::VirtualLocks`]); the CPUs that received IPIs are left in
//! [`Pricer::received`] for the caller to charge. The pages its faults
//! cleared or copied share the machine's memory bandwidth with the other
//! CPUs' clears in flight ([`timing::SharedBandwidth`]): with many CPUs
//! faulting at once each gets its share of the machine's bandwidth, and a
//! fault pays what that share takes beyond its own clear (a run of one CPU
//! skips the resource: it is never slowed alone).
//!
//! ## Invariants
//! 1. Nothing here reads a host clock (as `timing`'s invariant 1).
//! 2. Every CPU's fault kinds and pages read are priced once:
//!    [`Pricer::event`] moves the CPU's [`Priced`] snapshot forward to what
//!    it priced.

use super::shared_time::SharedResources;
use machine::{CpuHandle, Machine, SpaceId};
use mm::{FaultKind, LockClass, LockEvent, FAULT_KINDS};
use timing::{CostModel, Ns3, SharedBandwidth, SyscallKind, VirtualLocks};

/// The shared part of pricing one address space's CPUs in virtual time.
pub(crate) struct Pricer<'c> {
    pub costs: &'c CostModel,
    locks: VirtualLocks,
    bandwidth: SharedBandwidth,
    /// One CPU places every event: no other CPU's transfer can be in
    /// flight, so [`Self::bandwidth`] is skipped.
    alone: bool,
    /// KiB of memory traffic per fault, by [`FaultKind`].
    traffic_kib: [f64; FAULT_KINDS],
    /// Transfers that shared the bandwidth, and what sharing added, over
    /// every CPU.
    pub bandwidth_extra: Ns3,
    log: Vec<LockEvent>,
    /// The MMU's flush generation and every CPU's IPIs received, as of the
    /// last event.
    generation: u64,
    ipis: Vec<u64>,
    /// The MMU's broadcast flushes and their instructions, and every CPU's
    /// RAR requests handled, as of the last event.
    broadcasts: (u64, u64),
    rar: Vec<u64>,
    /// Whether broadcasts are RAR requests (else INVLPGB).
    rar_mode: bool,
    /// What each CPU that received a flush in the last event pays, for the
    /// caller to charge (`shootdown.receiver` per IPI, `rar.receiver` per
    /// RAR request).
    pub received: Vec<(usize, Ns3)>,
    /// Shootdowns' time so far, senders' and receivers' parts, over every
    /// CPU (a receiver whose thread has ended is counted too).
    pub flush: Ns3,
    /// Lock waits and contended acquisitions so far, over every CPU.
    pub wait: Ns3,
    pub contended: u64,
    /// The base page, bytes.
    page: u64,
    /// Added to every handled fault: the fault handler's own descent of
    /// the tables beyond what the fault figures include
    /// ([`handler_walk_extra`]).
    handler_extra: Ns3,
    /// The zone lock, the LRU lock and the mmap_lock's line
    /// ([`SharedResources`]).
    shared: SharedResources,
    /// Per CPU: pages it freed (munmap, DONTNEED) that no fault of it has
    /// taken again yet. An anonymous write fault that takes one is priced
    /// `fault.anon_recycled`: Linux frees a zapped page to the CPU's own
    /// free list (mm/page_alloc.c, free_unref_folios) and the next
    /// allocation takes it back from there (rmqueue_pcplist), its struct
    /// page and often its lines still in the caches.
    recycle: Vec<u64>,
    /// The space whose table pages a fault allocates are priced, and its
    /// table pages as of the last event ([`Pricer::with_space`]).
    tables: Option<(SpaceId, u64)>,
}

/// What the address space holds, before and after a system call.
pub(crate) struct Usage {
    /// Resident pages.
    pub pages: u64,
    /// Page-table pages.
    pub tables: u64,
    pub anon_kb: i64,
    pub file_kb: i64,
    pub shmem_kb: i64,
    pub anon_huge_kb: i64,
}

/// What an event cost before its faults, shootdowns and lock waits, and
/// how long each lock it took is held.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Charge {
    pub cost: Ns3,
    pub hold: Ns3,
}

/// The faults of one event, priced ([`Pricer::event`]).
struct Faults {
    /// The event's own cost plus their figures, the read-ahead's pages and
    /// the handler's own walk.
    cost: Ns3,
    /// The part of `cost` that moves memory (clears and copies).
    own: Ns3,
    /// KiB of memory traffic.
    kib: f64,
    /// Pages allocated and folios added to the LRU.
    pages: u64,
    folios: u64,
    /// Freed pages the CPU has left to reuse.
    recycle: u64,
}

/// What of a thread's counters has been priced: its faults by kind and
/// the pages its faults' read-ahead read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Priced {
    pub kinds: [u64; FAULT_KINDS],
    pub pages_read: u64,
    pub pmd_pages_read: u64,
    pub pmd_major_faults: u64,
}

impl Priced {
    /// Everything `t` counts, as priced.
    pub(crate) fn of(t: &mm::ThreadCounters) -> Priced {
        Priced {
            kinds: t.fault_kinds,
            pages_read: t.pages_read,
            pmd_pages_read: t.pmd_pages_read,
            pmd_major_faults: t.pmd_major_faults,
        }
    }
}

/// Faults a thread handled that no fault kind counts: those a system call
/// made populating pages (Linux counts them in `min_flt`/`maj_flt` like a
/// touch's; the model's kinds count only faults of accesses).
pub(crate) fn untyped_faults(t: &mm::ThreadCounters) -> u64 {
    let typed: u64 = t.fault_kinds.iter().sum();
    (t.minor_faults + t.major_faults).saturating_sub(typed)
}

/// What a thread's system calls populated, as of a moment: the faults no
/// kind counts ([`untyped_faults`]) and, among them, the zero pages a
/// populate-for-write replaced (`ThreadCounters::populate_zero_cow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Populated {
    pub faults: u64,
    pub zero_cow: u64,
    /// Folios mapped into a locked VMA (`ThreadCounters::populate_locked`).
    pub locked: u64,
}

impl Populated {
    /// What `t` counts.
    pub(crate) fn of(t: &mm::ThreadCounters) -> Populated {
        Populated {
            faults: untyped_faults(t),
            zero_cow: t.populate_zero_cow,
            locked: t.populate_locked,
        }
    }

    /// What was populated between `before` and `self`.
    pub(crate) fn since(self, before: Populated) -> Populated {
        Populated {
            faults: self.faults - before.faults,
            zero_cow: self.zero_cow - before.zero_cow,
            locked: self.locked - before.locked,
        }
    }
}

impl<'c> Pricer<'c> {
    /// Pricing for `machine`, whose base page is `page` bytes and whose
    /// PMD-sized THP is `huge` bytes.
    pub(crate) fn new(costs: &'c CostModel, machine: &Machine, page: u64, huge: u64) -> Pricer<'c> {
        let mmu = machine.mmu();
        let page_bytes = page;
        let (page, huge) = (page as f64 / 1024.0, huge as f64 / 1024.0);
        let mut traffic_kib = [0.0; FAULT_KINDS];
        for k in FaultKind::ALL {
            traffic_kib[k as usize] = match k {
                // Linux: mm/memory.c, do_anonymous_page (a zeroed folio),
                // shmem's new page, a multi-size folio (priced as 64 KiB,
                // as its fault is) and a THP
                // (mm/huge_memory.c, __do_huge_pmd_anonymous_page:
                // folio_zero_user of the whole folio).
                FaultKind::AnonWrite | FaultKind::Shmem => page,
                // wp_page_copy of the zero pfn: a zeroed folio, no copy.
                FaultKind::ZeroCow => page,
                FaultKind::Mthp => 64.0,
                FaultKind::Thp => huge,
                // wp_page_copy: the old page read, the new one written.
                FaultKind::Cow => 2.0 * page,
                // The zero page, a cached page, nothing new (a shared file
                // page made writable: page_mkwrite copies nothing); a major
                // fault's read is the device's (not modeled).
                FaultKind::ZeroRead
                | FaultKind::FileRead
                | FaultKind::Major
                | FaultKind::Spurious
                | FaultKind::FileMkwrite => 0.0,
            };
        }
        Pricer {
            costs,
            locks: VirtualLocks::new(),
            bandwidth: SharedBandwidth::new(),
            alone: false,
            traffic_kib,
            bandwidth_extra: Ns3::ZERO,
            log: Vec::new(),
            generation: mmu.flush_generation(),
            ipis: mmu.ipis_received(),
            broadcasts: mmu.broadcast_counts(),
            rar: mmu.rar_received(),
            rar_mode: mmu.config().broadcast.kind == mmu::TlbFlush::Rar,
            received: Vec::new(),
            flush: Ns3::ZERO,
            wait: Ns3::ZERO,
            contended: 0,
            page: page_bytes,
            handler_extra: Ns3::ZERO,
            shared: SharedResources::default(),
            recycle: Vec::new(),
            tables: None,
        }
    }

    /// Prices the table pages the faults of `space`'s CPUs allocate, one
    /// `pt.alloc` each: Linux allocates and links them inside the fault
    /// (mm/memory.c, __handle_mm_fault -> p4d_alloc / pud_alloc /
    /// pmd_alloc, and do_anonymous_page / do_fault -> __pte_alloc ->
    /// pte_alloc_one + pmd_install). The fault figures are taken densely
    /// (a table per 512 faults: 1.4 ns of `pt.alloc` each, left in them);
    /// `pt.alloc` is measured as the extra of a fault that allocates one.
    /// A system call's tables are its own ([`Pricer::syscall_cost`]).
    pub(crate) fn with_space(mut self, machine: &Machine, space: SpaceId) -> Pricer<'c> {
        self.tables = machine.space(space).ok().map(|s| (space, s.table_pages()));
        self
    }

    /// The same pricing for a run in which one CPU places every event (a
    /// workload of one thread): its table locks need no bookkeeping
    /// ([`VirtualLocks::single_cpu`]).
    pub(crate) fn one_cpu(mut self) -> Self {
        self.locks = VirtualLocks::single_cpu();
        self.alone = true;
        self
    }

    /// Prices the fault handler's own walk of `g`'s tables on every
    /// handled fault ([`handler_walk_extra`]).
    /// Whether munmap and DONTNEED drain the CPU's LRU batch first
    /// (`mm::MmConfig::lru_drain`).
    pub(crate) fn with_lru_drain(mut self, on: bool) -> Pricer<'c> {
        self.shared.lru_drain = on;
        self
    }

    /// Waits for the LRU lock so far, over every CPU.
    pub(crate) fn lru_wait(&self) -> Ns3 {
        self.shared.lru_wait
    }

    pub(crate) fn with_handler_walk(mut self, g: &pt::geometry::Geometry) -> Pricer<'c> {
        self.handler_extra = handler_walk_extra(self.costs, g);
        self
    }

    /// Places an event of `cpu` (modeled CPU `cpu_id`), whose clock is
    /// `clock` and whose faults were last priced at `seen`, that cost
    /// `charge.cost` before its faults, shootdowns and lock waits; each
    /// lock it took is held `charge.hold`.
    pub(crate) fn event(
        &mut self,
        machine: &Machine,
        cpu_id: usize,
        cpu: &mut CpuHandle<'_>,
        seen: &mut Priced,
        clock: &mut Ns3,
        charge: Charge,
    ) {
        // One sum in one order (the figures are floating point): the
        // event's own cost, then its faults, its tables, its shootdowns.
        let f = self.faults_since(cpu_id, cpu, seen, charge.cost);
        let cost = self.tables_and_shootdowns(machine, cpu, f.cost);
        // What this event's system call zapped goes back to the CPU's list
        // (SharedResources::take consumes the count below).
        self.recycle[cpu_id] = f.recycle + self.shared.freed;
        cpu.drain_lock_log(&mut self.log);
        let mmap = self.log.iter().any(|e| e.class == LockClass::Mmap);
        let mut pre = self
            .shared
            .take(self.costs, cpu_id, *clock, f.pages, f.folios, mmap);
        if f.kib > 0.0 && !self.alone {
            // The clear starts once the page is allocated (after the zone
            // lock); its share of the machine's bandwidth is decided then.
            let t = self.bandwidth.transfer(
                cpu_id,
                *clock + pre,
                f.kib,
                f.own,
                self.costs.bandwidth_kib,
            );
            self.bandwidth_extra += t.extra;
            pre += t.extra;
        }
        let placed = self.locks.place(
            cpu_id,
            *clock + pre,
            cost,
            charge.hold,
            self.costs.handoff(),
            &self.log,
        );
        *clock = placed.end;
        // lock_wait_ns stays the address space's locks' (the shared
        // locks' waits are in the predicted time only).
        self.wait += placed.wait;
        self.contended += u64::from(placed.contended);
    }

    /// The faults `cpu` handled since `seen` (which moves forward to now),
    /// priced by kind with the pages their read-ahead read in, added to
    /// `cost`.
    #[inline]
    fn faults_since(
        &mut self,
        cpu_id: usize,
        cpu: &CpuHandle<'_>,
        seen: &mut Priced,
        mut cost: Ns3,
    ) -> Faults {
        // Pages read in by the faults' read-ahead since the last event: a
        // major fault is its figure plus fault.major_page per page it read
        // (Linux: mm/filemap.c, filemap_fault -> do_sync_mmap_readahead ->
        // mm/readahead.c, page_cache_ra_order).
        // Pages read in PMD-sized folios cost fault.major_pmd_page: the
        // fault waits for the whole folio (filemap_fault ->
        // lock_folio_maybe_drop_mmap, released by folio_end_read).
        let t = cpu.thread_counters();
        let (read, pmd) = (t.pages_read, t.pmd_pages_read);
        // Major faults that read PMD folios cost fault.major_pmd instead of
        // fault.major (priced with the kinds below).
        let mut pmd_majors = t.pmd_major_faults - seen.pmd_major_faults;
        seen.pmd_major_faults = t.pmd_major_faults;
        if read != seen.pages_read {
            cost += self
                .costs
                .pages_read_split(read - seen.pages_read, pmd - seen.pmd_pages_read);
            seen.pages_read = read;
            seen.pmd_pages_read = pmd;
        }
        let kinds = &mut seen.kinds;
        let mut kib = 0.0;
        let mut own = Ns3::ZERO;
        let mut handled = 0.0;
        let (mut pages, mut folios) = (0, 0);
        if self.recycle.len() <= cpu_id {
            self.recycle.resize(cpu_id + 1, 0);
        }
        let mut recycle = self.recycle[cpu_id];
        let now_kinds = &t.fault_kinds;
        let (alloc_per, lru_per) = (&self.shared.pages_per_fault, &self.shared.folios_per_fault);
        for (k, (((((now, then), price), traffic), alloc), lru)) in now_kinds
            .iter()
            .zip(kinds.iter_mut())
            .zip(&self.costs.faults)
            .zip(&self.traffic_kib)
            .zip(alloc_per)
            .zip(lru_per)
            .enumerate()
        {
            if *now != *then {
                let d = *now - *then;
                let n = d as f64;
                // Anonymous write faults first take pages the CPU freed;
                // major faults that read PMD folios have their own figure.
                let (again, other) = if k == FaultKind::AnonWrite as usize {
                    (d.min(recycle), self.costs.anon_recycled)
                } else if k == FaultKind::Major as usize {
                    let pmd = d.min(pmd_majors);
                    pmd_majors -= pmd;
                    (pmd, self.costs.major_pmd)
                } else {
                    (0, Ns3::ZERO)
                };
                let priced = other * again as f64 + *price * (d - again) as f64;
                cost += priced;
                // The clear or copy is inside the fault's figure, at the
                // speed one CPU alone moves fresh memory (in its caches for
                // a 4 KiB page, to memory for a THP's 2 MiB): that figure is
                // the time the transfer may take before sharing slows it.
                if *traffic > 0.0 {
                    own += priced;
                }
                recycle = recycle.saturating_sub(alloc * d);
                handled += n;
                pages += alloc * d;
                folios += lru * d;
                kib += traffic * n;
                *then = *now;
            }
        }
        if handled > 0.0 {
            cost += self.handler_extra * handled;
        }
        Faults {
            cost,
            own,
            kib,
            pages,
            folios,
            recycle,
        }
    }

    /// The table pages added since the last event (this event's faults':
    /// a system call's own were taken out by syscall_cost) and the
    /// shootdowns the machine sent since, whose receivers go to
    /// [`Self::received`]; added to `cost`.
    #[inline]
    fn tables_and_shootdowns(
        &mut self,
        machine: &Machine,
        cpu: &CpuHandle<'_>,
        mut cost: Ns3,
    ) -> Ns3 {
        // The CPU's own space is read through its handle (one sum of the
        // tree's per-level counts); the machine's lookup of the space by
        // id (a lock, a reference count) only for another space's CPU.
        if let Some((space, seen)) = self.tables {
            let now = if cpu.space_id() == space {
                Some(cpu.table_pages())
            } else {
                machine.space(space).ok().map(|s| s.table_pages())
            };
            if let Some(now) = now {
                if now > seen {
                    cost += self.costs.pt_alloc * (now - seen) as f64;
                }
                self.tables = Some((space, now));
            }
        }
        let generation = machine.mmu().flush_generation();
        if generation != self.generation {
            cost += self.shootdowns(machine, generation);
        }
        cost
    }

    /// The sender's part of the shootdowns since the last event (up to
    /// flush generation `generation`), and the receivers' parts left in
    /// [`Self::received`]; both added to [`Self::flush`].
    fn shootdowns(&mut self, machine: &Machine, generation: u64) -> Ns3 {
        let mmu = machine.mmu();
        let now = mmu.ipis_received();
        let mut sent = 0;
        let mut flush = Ns3::ZERO;
        for (c, (n, then)) in now.iter().zip(&self.ipis).enumerate() {
            if n > then {
                let each = self.costs.shootdown_receiver * (n - then) as f64;
                self.received.push((c, each));
                flush += each;
                sent += n - then;
            }
        }
        let (b, bi) = mmu.broadcast_counts();
        let (broadcasts, insns) = (b - self.broadcasts.0, bi - self.broadcasts.1);
        let ipi_rounds = (generation - self.generation).saturating_sub(broadcasts);
        let mut cost = self.costs.shootdowns_sent(ipi_rounds, sent > 0);
        if broadcasts > 0 {
            cost += self.costs.broadcasts_sent(self.rar_mode, broadcasts, insns);
            if self.rar_mode {
                let rar = mmu.rar_received();
                for (c, (n, then)) in rar.iter().zip(&self.rar).enumerate() {
                    if n > then {
                        let each = self.costs.rar_receiver * (n - then) as f64;
                        self.received.push((c, each));
                        flush += each;
                    }
                }
                self.rar = rar;
            }
        }
        self.flush += flush + cost;
        self.generation = generation;
        self.ipis = now;
        self.broadcasts = (b, bi);
        cost
    }

    /// The cost of a system call of `kind` before its faults and
    /// shootdowns, from the space's usage before and after it
    /// ([`usage`]); `range_pages` is the pages of its range (priced for
    /// mprotect, which changes entries rather than zapping pages), and for
    /// msync the pages it wrote back (`ThreadCounters::writeback_pages`
    /// after less before);
    /// `populated` the faults the call made on the caller's behalf
    /// ([`Populated`] after, since before).
    pub(crate) fn syscall_cost(
        &mut self,
        kind: SyscallKind,
        before: &Usage,
        after: &Usage,
        range_pages: u64,
        populated: Populated,
    ) -> Ns3 {
        let pages = match kind {
            SyscallKind::Munmap | SyscallKind::Madvise => before.pages.saturating_sub(after.pages),
            SyscallKind::Mprotect | SyscallKind::Msync => range_pages,
            SyscallKind::Mmap | SyscallKind::Other | SyscallKind::NodeOf => 0,
        };
        // The pages a munmap or DONTNEED zapped go back to the CPU's free
        // list and off the LRU in the event that follows.
        if matches!(kind, SyscallKind::Munmap | SyscallKind::Madvise) {
            self.shared.freed = pages;
            self.shared.unmapping = true;
        }
        // The call's tables are priced here, not as its event's faults'.
        if let Some((space, _)) = self.tables {
            self.tables = Some((space, after.tables));
        }
        let added = after.tables.saturating_sub(before.tables);
        let freed = before.tables.saturating_sub(after.tables);
        let mut cost = self.costs.syscall(kind, pages, added, freed);
        // Pages the call populated (MAP_POPULATE, MAP_LOCKED, mlock,
        // MADV_POPULATE_*, mprotect of a locked range) were faulted in by
        // the kernel on the caller's behalf (Linux: mm/gup.c,
        // populate_vma_page_range -> faultin_page -> handle_mm_fault), each
        // a fault like a touch's: priced as faults, by what they mapped.
        if populated.faults > 0 {
            cost += self.populated(populated, before, after);
        }
        cost
    }

    /// The price of `faults` faults a system call made in populating, from
    /// what the space gained: a PMD-mapped THP per `fault.thp`, an
    /// anonymous page that replaced a mapped file page per `fault.cow`
    /// (populating a private file mapping for write, as mprotect of a
    /// locked range does: Linux mm/gup.c, faultin_page with FOLL_WRITE ->
    /// handle_mm_fault -> do_wp_page -> wp_page_copy, the file page
    /// copied, not a zeroed page), any other anonymous page per
    /// `populate.page` (no exception: cheaper than a touch's fault,
    /// measured apart) but one that replaced a zero page per
    /// `populate.zero_cow` (Linux: mm/gup.c, faultin_page with FOLL_WRITE
    /// -> handle_mm_fault -> do_wp_page -> wp_page_copy of the zero pfn:
    /// a zeroed page, no copy, and ptep_clear_flush of the old entry, a
    /// TLB flush per page; mprotect of a locked read-only range to
    /// read-write, or MADV_POPULATE_WRITE over zero pages, comes this
    /// way), a shmem page per `fault.shmem`; the rest per
    /// `fault.file_read` if file pages were mapped (fault-around), else
    /// per `populate.zero_page`: zero pages mapped by the kernel's own
    /// fault calls, no exception taken (Linux: mm/gup.c, faultin_page ->
    /// handle_mm_fault -> do_anonymous_page's read path, which maps the
    /// zero pfn; MADV_POPULATE_READ and MAP_POPULATE of a mapping without
    /// write permission come this way). Each new folio mapped into a
    /// locked VMA adds `mlock.folio` (Linux: mm/swap.c, folio_add_lru_vma
    /// -> mm/mlock.c, mlock_new_folio; its munlock_folio when it is
    /// unlocked or unmapped is in the same figure, charged here).
    fn populated(&self, populated: Populated, before: &Usage, after: &Usage) -> Ns3 {
        let faults = populated.faults;
        let page = self.page;
        let pages = |kb: i64| kb.max(0) as u64 * 1024 / page;
        let gain = |f: fn(&Usage) -> i64| pages(f(after) - f(before));
        let per_huge = (2 << 20) / page;
        let huge = (gain(|u| u.anon_huge_kb) / per_huge.max(1)).min(faults);
        let mut left = faults - huge;
        let anon = gain(|u| u.anon_kb)
            .saturating_sub(huge * per_huge)
            .min(left);
        left -= anon;
        // File pages that left the space as anonymous pages came in: copies.
        let lost_file = pages(before.file_kb - after.file_kb);
        let copied = anon.min(lost_file);
        let anon = anon - copied;
        // The zero pages replaced are anonymous pages gained too (the zero
        // page is not in RSS).
        let zero_cow = populated.zero_cow.min(anon);
        let anon = anon - zero_cow;
        let shmem = gain(|u| u.shmem_kb).min(left);
        left -= shmem;
        let f = &self.costs.faults;
        let rest = if gain(|u| u.file_kb) > 0 {
            f[FaultKind::FileRead as usize]
        } else {
            self.costs.populate_zero
        };
        f[FaultKind::Thp as usize] * huge as f64
            + f[FaultKind::Cow as usize] * copied as f64
            + self.costs.populate_page * anon as f64
            + self.costs.populate_zero_cow * zero_cow as f64
            + self.costs.mlock_folio * populated.locked as f64
            + f[FaultKind::Shmem as usize] * shmem as f64
            + rest * left as f64
    }
}

/// The price of a fork of a parent whose space held `before`: the call,
/// and each present page and table copied into the child (and zapped or
/// freed at its exit). Linux: kernel/fork.c, dup_mmap -> copy_page_range;
/// mm/mmap.c, exit_mmap. `child_faults` are the faults the child handled,
/// by kind (counted in its own space), priced as faults.
pub(crate) fn fork_cost(
    costs: &CostModel,
    before: &Usage,
    child_faults: &[u64; FAULT_KINDS],
) -> Ns3 {
    costs.fork(before.pages, before.tables) + costs.faults(child_faults)
}

/// Levels of the tables the shipped fault figures were taken on: both
/// shipped cost files (this host: x86-64 without la57, so the kernel's
/// p4d level is folded at boot; the 2013 bare-metal server) walk 4.
pub(crate) const FIGURES_LEVELS: usize = 4;

/// What the fault handler's own descent of `g`'s tables adds to a fault
/// beyond the fault figures, which were taken on a host of
/// [`FIGURES_LEVELS`] levels and so already hold that many references.
///
/// Linux: mm/memory.c, `__handle_mm_fault` reads one entry per level on
/// its way down (`pgd_offset`, `p4d_alloc`, `pud_alloc`, `pmd_alloc`,
/// then `handle_pte_fault`'s `pte_offset_map`; a THP fault stops at the
/// PMD, one level fewer on either geometry); with five levels `p4d_alloc`
/// reads a real P4D entry where four levels fold it away. Each read is one
/// `walk.ref_cached`: the hardware walk that raised the fault has just
/// read the same table lines (the MMU model keeps no state of table lines
/// in the data caches, so every walk reference is priced as a cached one).
/// Negative for a geometry of fewer levels (RISC-V Sv39).
pub(crate) fn handler_walk_extra(costs: &CostModel, g: &pt::geometry::Geometry) -> Ns3 {
    let d = g.levels().len() as f64 - FIGURES_LEVELS as f64;
    let w = costs.walk_ref;
    // Fewer levels take references away: the low end of the saving is the
    // low figure's, so the interval's ends swap.
    if d >= 0.0 {
        w * d
    } else {
        Ns3 {
            ns: w.ns * d,
            lo: w.hi * d,
            hi: w.lo * d,
        }
    }
}

/// What `space` holds now, in pages of `page` bytes.
pub(crate) fn usage(
    machine: &Machine,
    space: SpaceId,
    page: u64,
) -> Result<Usage, machine::MachineError> {
    let c = machine.space(space)?.resident_counters(&[]);
    let kb = c.rss_anon_kb + c.rss_file_kb + c.rss_shmem_kb;
    let pages = kb.max(0) as u64 * 1024 / page;
    let tables = c.pt_pages.iter().map(|(_, n)| *n).sum::<i64>().max(0) as u64;
    Ok(Usage {
        pages,
        tables,
        anon_kb: c.rss_anon_kb,
        file_kb: c.rss_file_kb,
        shmem_kb: c.rss_shmem_kb,
        anon_huge_kb: c.anon_huge_kb,
    })
}

/// The size of a PMD-level leaf (a THP) of `g`: the span of one entry of
/// its second level.
pub(crate) fn huge_size(g: &pt::geometry::Geometry) -> u64 {
    g.levels().get(1).map_or(2 << 20, |l| l.entry_size())
}
