//! The replay's state and its access path: one modeled CPU per trace
//! thread, the threads' virtual clocks, and the shortcut for accesses that
//! can only hit the first-level TLB ([`Last`]).

use super::refused::{Refused, RefusedFault};
use super::{internal, layout, ReplayError, ReplayOptions};
use crate::model::pricing::{self, Charge, Pricer};
use crate::model::ModelConfig;
use machine::{AccessError, AccessKind, AccessOutcome, CpuHandle, Machine, SpaceId, SyscallError};
use mmu::HitLevel;
use std::time::Instant;
use timing::{Ns3, SyscallKind, TableLines};
use workload::result::{Counters, Mark};

pub(super) struct Driver<'m> {
    pub(super) machine: &'m Machine,
    pub(super) space: SpaceId,
    /// One modeled CPU per trace thread, attached when the thread first
    /// appears.
    pub(super) cpus: Vec<CpuHandle<'m>>,
    pub(super) tid: usize,
    pub(super) addr: &'m [u64],
    /// Each live region's current size (0: not mapped).
    pub(super) size: Vec<u64>,
    /// Accesses the trace counted as hits without their addresses.
    pub(super) hits: u64,
    pub(super) baseline: Counters,
    pub(super) marks: Vec<Mark>,
    pub(super) start: Instant,
    pub(super) index: u64,
    pub(super) skipped: std::collections::BTreeMap<u8, u64>,
    /// The geometry's base page.
    pub(super) page: u64,
    /// Per thread, the page its last access went to (see [`Last`]).
    pub(super) last: Vec<Last>,
    /// Accesses counted as first-level hits without translating, by log2
    /// of the page size that holds them (see [`Last`]).
    pub(super) repeats: [u64; 64],
    /// Whether such accesses are counted without translating them (not
    /// [`ReplayOptions::translate_all`]).
    pub(super) shortcut: bool,
    /// The price of one first-level hit.
    pub(super) hit: Ns3,
    /// Prices every thread's events (see the module documentation).
    pub(super) pricer: Pricer<'m>,
    /// Per trace thread: its virtual clock, and its faults by kind as of
    /// its last priced event.
    pub(super) clocks: Vec<Ns3>,
    /// Per trace thread: first-level hits not yet added to its clock
    /// (added as `hit * n` by [`Driver::flush`]).
    pub(super) pending: Vec<u64>,
    pub(super) kinds: Vec<crate::model::pricing::Priced>,
    /// The geometry's page size, for pricing system calls per page.
    pub(super) page_bytes: u64,
    /// Per trace thread (its modeled CPU): the last-level table lines its
    /// caches hold (timing::TableLines).
    pub(super) lines: Vec<TableLines>,
    /// The code of the SIGSEGV the last refused access raised (set where
    /// the refusal is made, taken by [`Driver::fault`]).
    pub(super) segv: Option<String>,
    /// Recorded faults refused and gone past ([`refused`]).
    pub(super) refused: Refused,
    /// The recorder inferred some faults' kinds (a refused write is then
    /// retried as a read).
    pub(super) kinds_inferred: bool,
    /// Every mapping populated ([`ReplayOptions::prefault`]).
    pub(super) prefault: bool,
    /// The latest clock when the window started: marks in the window
    /// report their time from there.
    pub(super) origin: Ns3,
    /// The lock waits and contended acquisitions when the window started.
    pub(super) waited: (Ns3, u64),
    /// The shootdowns' time and the LRU lock's waits at the window's start.
    pub(super) waited_flush: (Ns3, Ns3),
}

/// The page of a thread's last access and its kind. When that access was
/// a clean first-level hit (no walk, no fault: `l1`), the next access of
/// the thread to the same page, of the same kind, with nothing in between
/// that could change a translation (a system call, or a fault of any
/// thread, resets every thread's), is the same access again: it hits the
/// same first-level entry, which is already the most recently used (so
/// skipping its touch leaves LRU order and the pseudo-LRU bits as they
/// are; random replacement keeps nothing), with its accessed and dirty
/// bits already set. The replay counts such an access as a first-level hit
/// of that page size without translating it: the counters are exactly
/// those of translating it. The rule asks for a hit, not only a fill, so
/// it holds for a TLB whose first level does not hold every page size (or
/// has no first level at all): the first access after a miss is
/// translated, and those after the second are not.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Last {
    /// `!(page size - 1)`; 0: nothing known.
    pub(super) mask: u64,
    pub(super) base: u64,
    pub(super) write: bool,
    /// The access was a clean first-level hit: the shortcut applies.
    l1: bool,
    pub(super) shift: u8,
}

impl<'m> Driver<'m> {
    /// A driver of `machine`'s `space`, the regions at `addr` (the layout's).
    pub(super) fn new(
        machine: &'m Machine,
        space: SpaceId,
        addr: &'m [u64],
        cfg: &'m ModelConfig,
        opts: &ReplayOptions,
        kinds_inferred: bool,
    ) -> Self {
        Driver {
            machine,
            space,
            cpus: Vec::new(),
            tid: 0,
            addr,
            size: vec![0; addr.len()],
            hits: 0,
            baseline: Counters::default(),
            marks: Vec::new(),
            start: Instant::now(),
            index: 0,
            skipped: Default::default(),
            page: layout::base_page(&cfg.geometry),
            last: Vec::new(),
            repeats: [0; 64],
            shortcut: !opts.translate_all,
            hit: cfg.costs.access(HitLevel::L1, 0, false),
            pricer: Pricer::new(
                &cfg.costs,
                machine,
                cfg.geometry.page_size(),
                pricing::huge_size(&cfg.geometry),
            )
            .with_handler_walk(&cfg.geometry)
            .with_space(machine, space)
            .with_lru_drain(cfg.mm.lru_drain),
            clocks: Vec::new(),
            pending: Vec::new(),
            kinds: Vec::new(),
            page_bytes: cfg.geometry.page_size(),
            lines: Vec::new(),
            segv: None,
            refused: Refused::default(),
            kinds_inferred,
            prefault: opts.prefault,
            origin: Ns3::ZERO,
            waited: (Ns3::ZERO, 0),
            waited_flush: (Ns3::ZERO, Ns3::ZERO),
        }
    }

    #[inline]
    pub(super) fn cpu(&mut self) -> Result<&mut CpuHandle<'m>, ReplayError> {
        if self.tid >= self.cpus.len() {
            self.attach_cpus()?;
        }
        Ok(&mut self.cpus[self.tid])
    }

    /// Attaches CPUs up to the current thread's (the first time it appears).
    #[cold]
    #[inline(never)]
    pub(super) fn attach_cpus(&mut self) -> Result<(), ReplayError> {
        while self.cpus.len() <= self.tid {
            let c = self
                .machine
                .cpu(self.cpus.len(), self.space)
                .map_err(internal)?;
            self.kinds
                .push(crate::model::pricing::Priced::of(c.thread_counters()));
            self.cpus.push(c);
        }
        Ok(())
    }

    /// The current thread's clock, its pending hits added: a thread seen
    /// for the first time starts at the clock of the last event before it
    /// (the latest clock so far).
    #[inline]
    pub(super) fn clock(&mut self) -> &mut Ns3 {
        self.open_clock();
        self.flush(self.tid);
        &mut self.clocks[self.tid]
    }

    /// Makes the current thread's clock if it has none yet.
    #[inline(always)]
    pub(super) fn open_clock(&mut self) {
        if self.clocks.len() <= self.tid {
            self.open_clock_slow();
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn open_clock_slow(&mut self) {
        self.flush_all();
        let start = self.clocks.iter().fold(Ns3::ZERO, |m, c| m.max(*c));
        self.clocks.resize(self.tid + 1, start);
        self.pending.resize(self.tid + 1, 0);
    }

    /// `n` first-level hits of the current thread, priced when its clock
    /// is next read or moved.
    #[inline]
    pub(super) fn hits_pending(&mut self, n: u64) {
        self.open_clock();
        self.pending[self.tid] += n;
    }

    /// Adds thread `t`'s pending hits to its clock, as one product.
    #[inline]
    pub(super) fn flush(&mut self, t: usize) {
        let n = std::mem::take(&mut self.pending[t]);
        if n != 0 {
            self.clocks[t] += self.hit * n as f64;
        }
    }

    pub(super) fn flush_all(&mut self) {
        for t in 0..self.clocks.len() {
            self.flush(t);
        }
    }

    /// Consumes the run of accesses at the decoder's front that can only
    /// hit the first-level TLB (see [`Last`]): relative accesses of the
    /// current thread's last kind that stay in the page of its last
    /// access. Returns how many.
    #[inline]
    pub(super) fn run(&mut self, records: &mut trace::codec::Decoder<'_>) -> u64 {
        let Some(l) = self.last.get(self.tid).copied().filter(|l| l.l1) else {
            return 0;
        };
        let Some((id, _)) = records.last_access() else {
            return 0;
        };
        let i = id as usize;
        let (Some(&a), Some(&size)) = (self.addr.get(i), self.size.get(i)) else {
            return 0;
        };
        // The page's part of the region, in the region's offsets.
        let page_end = l.base.saturating_add(!l.mask + 1);
        let (lo, hi) = (l.base.max(a), page_end.min(a.saturating_add(size)));
        if lo >= hi {
            return 0;
        }
        let n = records.run_within(l.write, lo - a, hi - a);
        if n != 0 {
            self.repeats[usize::from(l.shift)] += n;
            self.hits_pending(n);
        }
        n
    }

    /// Prices an event of the current thread that cost `cost` before its
    /// faults, shootdowns and lock waits, and charges the CPUs that
    /// received IPIs in it.
    pub(super) fn event(&mut self, cost: Ns3, hold: Ns3) -> Result<(), ReplayError> {
        self.cpu()?;
        let mut clock = *self.clock();
        let tid = self.tid;
        self.pricer.event(
            self.machine,
            tid,
            &mut self.cpus[tid],
            &mut self.kinds[tid],
            &mut clock,
            Charge { cost, hold },
        );
        self.clocks[tid] = clock;
        let received = std::mem::take(&mut self.pricer.received);
        for &(cpu, cost) in &received {
            // A CPU of no trace thread yet runs nothing: it pays nothing.
            if cpu < self.clocks.len() {
                self.flush(cpu);
                self.clocks[cpu] += cost;
            }
        }
        self.pricer.received = received;
        self.pricer.received.clear();
        Ok(())
    }

    /// Runs a system call of `kind` (its range `range_len` bytes) as one
    /// priced event.
    pub(super) fn priced_call(
        &mut self,
        kind: SyscallKind,
        range_len: u64,
        what: &str,
        call: impl FnOnce(&mut CpuHandle<'m>) -> Result<(), SyscallError>,
    ) -> Result<(), ReplayError> {
        let before = self.usage()?;
        let populated_before = pricing::Populated::of(self.cpu()?.thread_counters());
        let r = call(self.cpu()?);
        self.syscall(r, what)?;
        let after = self.usage()?;
        let populated =
            pricing::Populated::of(self.cpu()?.thread_counters()).since(populated_before);
        let range_pages = range_len.div_ceil(self.page_bytes);
        let cost = self
            .pricer
            .syscall_cost(kind, &before, &after, range_pages, populated);
        let hold = self.pricer.costs.hold_syscall;
        self.event(cost, hold)
    }

    pub(super) fn usage(&self) -> Result<pricing::Usage, ReplayError> {
        pricing::usage(self.machine, self.space, self.page_bytes).map_err(internal)
    }

    pub(super) fn refused(&self, what: String) -> ReplayError {
        ReplayError::Record {
            index: self.index,
            what,
        }
    }

    pub(super) fn syscall(
        &self,
        r: Result<(), SyscallError>,
        what: &str,
    ) -> Result<(), ReplayError> {
        r.map_err(|e| match e {
            SyscallError::Errno(e) => self.refused(format!("{what}: {e}")),
            SyscallError::Internal(s) => ReplayError::Internal(s),
        })
    }

    #[inline]
    pub(super) fn access(&mut self, id: u32, offset: u64, write: bool) -> Result<(), ReplayError> {
        let va = self.va(id, offset, "an access")?;
        if let Some(l) = self.last.get(self.tid).filter(|_| self.shortcut) {
            if l.l1 && va & l.mask == l.base && l.write == write {
                self.repeats[usize::from(l.shift)] += 1;
                self.hits_pending(1);
                return Ok(());
            }
        }
        let kind = if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        // The translated-access fast path: a clean first-level hit
        // answered by the MMU's probe (`CpuHandle::hit`), priced and
        // remembered as the `Ok` arm below does for one, with nothing
        // copied through memory. `translate_all` (the tests' reference)
        // takes every access the plain way.
        let probed = if self.shortcut {
            self.cpu()?.hit(va, kind)
        } else {
            None
        };
        if let Some(shift) = probed {
            self.hits_pending(1);
            self.remember(va, write, 1u64 << shift, true);
            return Ok(());
        }
        match self.cpu()?.access(va, kind) {
            Ok(o) => {
                let clean_l1 = self.translated(va, &o)?;
                self.remember(va, write, o.translation.page_size, clean_l1);
                Ok(())
            }
            Err(e) => Err(self.access_error(e)),
        }
    }

    /// The address of `offset` in region `id`, checked against the
    /// region's size (the first pass did not decode accesses and fetches,
    /// `Decoder::next_non_access`: each is checked here); `what` names the
    /// record in the error.
    #[inline]
    fn va(&self, id: u32, offset: u64, what: &str) -> Result<u64, ReplayError> {
        let Some(&size) = self.size.get(id as usize) else {
            return Err(self.refused(format!("{what} to region {id}, which the trace never maps")));
        };
        if offset >= size {
            return Err(self.refused(format!(
                "{what} at offset {offset:#x} of region {id}, which is {}",
                if size == 0 {
                    "not mapped".to_string()
                } else {
                    format!("{size:#x} bytes")
                }
            )));
        }
        Ok(self.addr[id as usize] + offset)
    }

    /// Prices a translated access `o` of `va`; returns whether it was a
    /// clean first-level hit (no walk, no fault).
    #[inline]
    fn translated(&mut self, va: u64, o: &AccessOutcome) -> Result<bool, ReplayError> {
        // A walk records its table line pair, as the executor's.
        let cached = o.translation.hit == HitLevel::Walk && {
            while self.lines.len() <= self.tid {
                self.lines.push(TableLines::new(self.page_bytes));
            }
            self.lines[self.tid].walk(va)
        };
        let cost = self
            .pricer
            .costs
            .access(o.translation.hit, o.translation.walk_refs, cached);
        let clean_l1 =
            o.faults == 0 && o.translation.hit == HitLevel::L1 && o.translation.walk_refs == 0;
        if o.faults > 0 {
            // A fault may have changed other CPUs' translations.
            self.forget();
            let hold = self.pricer.costs.hold_fault;
            self.event(cost, hold)?;
        } else if clean_l1 {
            // Priced as the hits counted without translating.
            self.hits_pending(1);
        } else {
            *self.clock() += cost;
        }
        Ok(clean_l1)
    }

    /// An access the model refused, as the replay's error.
    #[cold]
    fn access_error(&mut self, e: AccessError) -> ReplayError {
        match e {
            AccessError::Segv { va, code } => {
                self.segv = Some(format!("{code:?}"));
                self.refused(format!("SIGSEGV at {va:#x} ({code:?})"))
            }
            AccessError::Oom { va } => self.refused(format!("out of memory at {va:#x}")),
            AccessError::Internal(s) => ReplayError::Internal(s),
        }
    }

    /// An instruction fetch: translated through the instruction TLB (the
    /// second level shared with data), priced as a data access found at
    /// the same level. The data accesses' shortcut ([`Last`]) is left as
    /// it is: a fetch fills the instruction TLB and the shared second
    /// level, never a first-level data entry, unless it faults (a fault
    /// forgets every thread's last page).
    pub(super) fn fetch(&mut self, id: u32, offset: u64) -> Result<(), ReplayError> {
        let va = self.va(id, offset, "a fetch")?;
        match self.cpu()?.access(va, AccessKind::Fetch) {
            Ok(o) => self.translated(va, &o).map(|_| ()),
            Err(e) => Err(self.access_error(e)),
        }
    }

    /// A recorded fault: an access of its kind, which the replay goes past
    /// when the model refuses it (see [`refused`]).
    pub(super) fn fault(&mut self, id: u32, offset: u64, write: bool) -> Result<(), ReplayError> {
        self.segv = None;
        let e = match self.access(id, offset, write) {
            Err(e) => e,
            ok => return ok,
        };
        let Some(why) = self.segv.take() else {
            return Err(e);
        };
        // A write the recording guessed, refused: the read it most likely
        // was, if the model allows that.
        let as_read = write && self.kinds_inferred && {
            match self.access(id, offset, false) {
                Ok(()) => true,
                Err(e) if self.segv.take().is_none() => return Err(e),
                Err(_) => false,
            }
        };
        // The refusal may have walked and filled nothing the next access
        // can rely on: translate it afresh.
        self.forget();
        self.refused.add(RefusedFault {
            index: self.index,
            region: id,
            offset,
            write,
            why,
            as_read,
        });
        Ok(())
    }

    /// A `Hits` record: hits in the page of the thread's last access,
    /// counted at its size when the replay knows it.
    #[inline]
    pub(super) fn hits(&mut self, count: u64) {
        match self.last.get(self.tid).filter(|l| l.mask != 0) {
            Some(l) => self.repeats[usize::from(l.shift)] += count,
            None => self.hits += count,
        }
        self.hits_pending(count);
    }

    /// The current thread's last access (see [`Last`]): `va`, of kind
    /// `write`, in a TLB entry of `size` bytes; `l1`: a clean first-level hit.
    #[inline(always)]
    pub(super) fn remember(&mut self, va: u64, write: bool, size: u64, l1: bool) {
        if self.last.len() <= self.tid {
            self.last.resize(self.tid + 1, Last::default());
        }
        self.last[self.tid] = Last {
            mask: !(size - 1),
            base: va & !(size - 1),
            write,
            l1,
            shift: size.trailing_zeros() as u8,
        };
    }

    /// Every thread's last page is forgotten: something may have changed
    /// a translation.
    pub(super) fn forget(&mut self) {
        for l in &mut self.last {
            l.mask = 0;
            l.l1 = false;
        }
    }
}
