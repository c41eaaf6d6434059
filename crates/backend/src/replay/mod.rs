//! Replaying a trace (crate `trace`) on the model: every address-space
//! event becomes the machine's system call, every access (or recorded
//! fault) an access through the thread's modeled CPU, in the trace's order.
//!
//! One host thread drives every modeled CPU (a trace is one sequence, so
//! the replay is deterministic; a second only reads and decompresses the
//! chunks ahead of it, in order: [`trace::file::Prefetch`]); the machine keeps the shootdown and
//! reclaim order. The layout ([`layout`]) needs every region first: a
//! trace of format version 2 carries them in its index (read from the end
//! of the file, and checked against the records as the replay meets them:
//! `IndexCheck`); a version-1 trace is read twice, streaming: a first pass
//! collects the regions, the second replays, holding one chunk at a time.
//!
//! What a replay counts exactly and what it approximates:
//! - `Hits` records (accesses a tracer left out because each fell in the
//!   page of the previous access of the same kind) are counted as first
//!   level TLB hits without being translated.
//! - A recorded `Fault` is replayed as an access of its kind: it faults on
//!   the model if the model has not mapped the page by then (fault-around
//!   or THP may have), which is the comparison a recording is for. One the
//!   model refuses (SIGSEGV) is counted and named, and the replay goes on
//!   ([`refused`]); a refused `Access` stops it.
//! - File regions are replayed with the file cached (no major faults).
//! - `Move` (mremap) is replayed as a new mapping and an unmap of the old
//!   one: the pages fault in again where Linux would move the tables.
//! - Accesses that can only hit the first-level TLB (a thread's access to
//!   the page of its last access, of the same kind, nothing in between that
//!   could change a translation: see [`Last`]) are counted as hits without
//!   translating them; in the hot loop a whole run of them is consumed from
//!   the chunk as a count ([`trace::codec::Decoder::run_within`]).
//!   [`ReplayOptions::translate_all`] turns this off (every access through
//!   the MMU), for the tests that check it changes no counter.
//! - Time: each trace thread has a virtual clock, priced as the
//!   virtual-time executor prices a run ([`crate::model::pricing`]): an
//!   access by where its translation was found, a fault or a system call
//!   as an event with its locks, a shootdown for its sender and each
//!   receiver. Every mark reports `predicted_ns` (the marking thread's
//!   clock; at the end, the latest clock) with its low and high ends and
//!   each thread's clock. The trace's order decides who takes a lock first;
//!   a thread that first appears starts at the clock of the thread that ran
//!   just before it (it was created then). A one-thread trace made from a
//!   workload ([`from_workload`]) predicts what running the workload does.
//!   First-level hits (translated or not, and `Hits` records) are added to
//!   a thread's clock as a count, n times one hit, when anything else
//!   reads or moves that clock: so the clock does not depend on which hits
//!   were translated, nor on whether a tracer folded them into `Hits`.
//! - Under a geometry whose base page is larger than 4 KiB, regions are
//!   sized up to whole pages and a range operation covers the whole pages
//!   inside its range (a 4 KiB guard page inside a 64 KiB page is not
//!   protected, so nothing faults that the program did not fault).

pub mod from_workload;
pub mod layout;
pub mod refused;
pub mod window;

use crate::model::pricing::{self, Charge, Pricer};
use crate::model::{snapshot, ModelConfig, Prediction};
pub use layout::{Layout, LayoutMode};
use machine::{
    AccessError, AccessKind, CpuHandle, Machine, MachineConfig, MapKind, MmapArgs, Prot, SpaceId,
    SyscallError,
};
use mmu::HitLevel;
pub use refused::{Refused, RefusedFault};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;
use thiserror::Error;
use timing::{Ns3, SyscallKind, TableLines};
use trace::file::Prefetch;
use trace::regions::{self, Builder, RegionInfo, Scan};
use trace::{MapEvent, Record, RegionKind, TraceError, TraceReader};
pub use window::{Stopped, Window};
use workload::result::{Counters, Mark, Run};

/// Options of a replay.
#[derive(Clone, Default)]
pub struct ReplayOptions {
    pub layout: LayoutMode,
    /// Stop once this passes (checked once a chunk): the counters so far
    /// are returned, [`Replayed::partial`] says why.
    pub deadline: Option<Instant>,
    /// Stop as at the deadline once this is raised (a SIGINT handler's flag).
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Called once a chunk with (accesses passed, accesses in the trace).
    pub progress: Option<Arc<crate::model::ProgressFn>>,
    /// The part of the trace measured ([`window`]).
    pub window: Window,
    /// Every mapping populated as MAP_POPULATE would (write-populated
    /// where writable), and the window starting at the first access: so
    /// an imported trace, whose regions are all mapped before its first
    /// access, replays with no fault in the window.
    pub prefault: bool,
    /// Translate every access through the modeled MMU's plain access
    /// (`CpuHandle::access`), even those that can only hit the first-level
    /// TLB and those the first-level hit probe (`CpuHandle::hit`) answers
    /// (slower; the counters and the predicted time are the same: the
    /// tests compare them).
    pub translate_all: bool,
}

impl std::fmt::Debug for ReplayOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayOptions")
            .field("layout", &self.layout)
            .field("deadline", &self.deadline)
            .field("interrupt", &self.interrupt)
            .field("progress", &self.progress.as_ref().map(|_| "Fn"))
            .field("window", &self.window)
            .field("prefault", &self.prefault)
            .field("translate_all", &self.translate_all)
            .finish()
    }
}

/// Why a replay stopped.
#[derive(Debug, Error)]
pub enum ReplayError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("layout: {0}")]
    Layout(String),
    #[error("{0}")]
    Config(String),
    /// The model refused a record (the index counts from the trace's first record).
    #[error("record {index}: {what}")]
    Record { index: u64, what: String },
    #[error("internal error: {0}")]
    Internal(String),
}

/// A finished replay.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub run: Run,
    pub scan: Scan,
    pub layout: Layout,
    /// Advice numbers the model does not have, with how often they were skipped.
    pub skipped_advice: Vec<(u8, u64)>,
    /// Recorded faults the model refused, which the replay went past.
    pub refused: Refused,
    /// Set when the replay stopped early (time limit, interrupt): the
    /// counters are those so far.
    pub partial: Option<Stopped>,
}

/// Replays the trace at `path` on the model configured by `cfg`.
///
/// # Errors
/// [`ReplayError`]: a trace that does not read (with its byte offset), a
/// layout that does not fit, a record the model refuses.
pub fn replay(
    path: &Path,
    cfg: &ModelConfig,
    opts: &ReplayOptions,
) -> Result<Replayed, ReplayError> {
    // The index when the trace has one (no first pass); then every record
    // but the accesses is checked as the first pass would, and against it.
    let (scan, mut check) = match trace::read_index(path)? {
        Some(ix) => (ix.scan.clone(), Some(IndexCheck::new(ix))),
        None => (regions::scan(&mut TraceReader::open(path)?)?, None),
    };
    let layout = layout::choose(&scan, &cfg.geometry, opts.layout).map_err(ReplayError::Layout)?;
    let kinds_inferred = refused::kinds_inferred(TraceReader::open(path)?.header());
    let w = opts.window;
    if !w.is_whole() && w.skip.saturating_add(w.warmup) >= scan.accesses {
        return Err(ReplayError::Config(format!(
            "{}: the window starts after access {} (skip {} + warm-up {}), but the trace has {} accesses",
            path.display(),
            w.skip.saturating_add(w.warmup),
            w.skip,
            w.warmup,
            scan.accesses
        )));
    }
    let machine = Machine::new(MachineConfig {
        geometry: cfg.geometry.clone(),
        mm: cfg.mm.clone(),
        mmu: cfg.mmu.clone(),
        cpus: cfg.cpus.max(scan.threads as usize).max(1),
    })
    .map_err(|e| ReplayError::Config(e.to_string()))?;
    let space = machine.first_space();
    let mut d = Driver {
        machine: &machine,
        space,
        cpus: Vec::new(),
        tid: 0,
        addr: &layout.addr,
        size: vec![0; layout.addr.len()],
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
            &machine,
            cfg.geometry.page_size(),
            pricing::huge_size(&cfg.geometry),
        )
        .with_handler_walk(&cfg.geometry)
        .with_space(&machine, space)
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
    };
    d.baseline = snapshot::counters(&machine, space).map_err(internal)?;
    // Chunks are read and decompressed on a second thread, two ahead.
    let mut chunks = Prefetch::new(TraceReader::open(path)?, 2);
    let mut cur = window::Cursor::new(opts.window, opts.prefault);
    let mut partial = None;
    // Whether every record was replayed (no window end, no stop): then
    // the index is held to the whole file.
    let mut whole = true;
    'chunks: while let Some(owned) = chunks.next_chunk()? {
        let chunk = owned.view(path);
        if let Some(why) = window::stop_reason(opts.deadline, &opts.interrupt) {
            partial = Some(why);
            whole = false;
            break;
        }
        if let Some(p) = &opts.progress {
            p(cur.done, scan.accesses);
        }
        // Records are decoded one at a time, straight into the step: no
        // list of a chunk's records is built. Before each, a run of
        // accesses that can only hit is consumed as a count, when it
        // cannot pass a boundary of the window (each record of the chunk
        // is at most one access there).
        let mut records = chunk.decoder();
        let count = u64::from(chunk.count);
        let mut n = 0;
        loop {
            if d.shortcut && cur.replays() && cur.left > count.saturating_sub(n) {
                let k = d.run(&mut records);
                d.index += k;
                n += k;
                cur.passed(k);
            }
            // An access (most records) goes straight to the access path,
            // no `Record` built; anything else through `step`.
            if let Some((id, offset, write)) = records.next_access() {
                if cur.left == 0 {
                    d.cross(&mut cur)?;
                }
                if cur.replays() {
                    d.access(id, offset, write)?;
                }
                d.index += 1;
                n += 1;
                cur.passed(1);
                if cur.finished() {
                    whole = false;
                    break 'chunks;
                }
                continue;
            }
            if let Some(mut hits) = records.next_hits() {
                d.index += 1;
                n += 1;
                // Split at every boundary it straddles.
                while hits > 0 {
                    if cur.left == 0 {
                        d.cross(&mut cur)?;
                    }
                    let take = hits.min(cur.left);
                    if cur.replays() {
                        d.hits(take);
                    }
                    cur.passed(take);
                    hits -= take;
                    if cur.finished() {
                        whole = false;
                        break 'chunks;
                    }
                }
                continue;
            }
            let Some(r) = records.next_record() else {
                break;
            };
            let r = r.map_err(|e| chunk.error(e))?;
            if let Some(c) = &mut check {
                c.record(d.index, &r, chunk.at, path)?;
            }
            let access = matches!(r, Record::Access { .. } | Record::Fault { .. });
            if access && cur.left == 0 {
                d.cross(&mut cur)?;
            }
            if !access || cur.replays() {
                d.step(&r)?;
            }
            d.index += 1;
            n += 1;
            if access {
                cur.passed(1);
                if cur.finished() {
                    whole = false;
                    break 'chunks;
                }
            }
        }
        chunk.check_count(n)?;
        chunks.recycle(owned);
    }
    drop(chunks);
    if let (Some(c), true) = (check, whole) {
        c.finish(d.index, path)?;
    }
    d.end_mark()?;
    let marks = std::mem::take(&mut d.marks);
    let skipped_advice = d.skipped.iter().map(|(&a, &n)| (a, n)).collect();
    let refused = std::mem::take(&mut d.refused);
    drop(d);
    machine.exit_space(space).map_err(internal)?;
    Ok(Replayed {
        run: Run { marks },
        scan,
        layout,
        skipped_advice,
        refused,
        partial,
    })
}

/// A replay from a trace's index: the first pass's checks of invariants 1
/// and 2, made on the records the replay decodes (all but accesses, which
/// the replay checks itself), and the index held to what they say, so that
/// a replay never uses a region the index placed wrongly. Invariant: every
/// region the records introduced so far is in the index, of its kind,
/// name, native address, birth and thread, no larger than its largest
/// size there.
struct IndexCheck {
    index: trace::Index,
    seen: Builder,
}

impl IndexCheck {
    fn new(index: trace::Index) -> Self {
        IndexCheck {
            index,
            seen: Builder::default(),
        }
    }

    /// Record `r`, the trace's record number `at_record`, in the chunk at
    /// byte `chunk`.
    fn record(
        &mut self,
        at_record: u64,
        r: &Record,
        chunk: u64,
        path: &Path,
    ) -> Result<(), ReplayError> {
        self.seen.passed(at_record - self.seen.scan().records, 0);
        self.seen.record(r).map_err(|what| TraceError::Format {
            path: path.to_path_buf(),
            offset: chunk,
            what: format!("record {at_record}: {what}"),
        })?;
        let id = match r {
            Record::Thread { tid } if *tid >= self.index.scan.threads => {
                return Err(self.bad(
                    format!(
                        "record {at_record} is of thread {tid}; the index counts {} threads",
                        self.index.scan.threads
                    ),
                    path,
                ))
            }
            Record::Map(m) => m.id,
            Record::Move { new_id, .. } => *new_id,
            Record::Resize { id, .. } => *id,
            _ => return Ok(()),
        };
        let seen = &self.seen.scan().regions[&id];
        match self.index.scan.regions.get(&id) {
            Some(ix) if agrees(seen, ix) => Ok(()),
            _ => Err(self.bad(
                format!("the index disagrees with record {at_record} on region {id}"),
                path,
            )),
        }
    }

    /// The end: `records` records replayed.
    fn finish(self, records: u64, path: &Path) -> Result<(), ReplayError> {
        let mut seen = self.seen.scan().clone();
        seen.records = records;
        seen.accesses = self.index.scan.accesses;
        if seen != self.index.scan {
            return Err(self.bad(
                "the index does not describe the records (regions or totals differ)".into(),
                path,
            ));
        }
        Ok(())
    }

    fn bad(&self, what: String, path: &Path) -> ReplayError {
        ReplayError::Trace(TraceError::Format {
            path: path.to_path_buf(),
            offset: self.index.at,
            what,
        })
    }
}

/// Whether a region as the records made it so far (`seen`) agrees with the
/// index's account of it (`ix`).
fn agrees(seen: &RegionInfo, ix: &RegionInfo) -> bool {
    seen.kind == ix.kind
        && seen.name == ix.name
        && seen.native == ix.native
        && seen.born == ix.born
        && seen.tid == ix.tid
        && seen.max_size <= ix.max_size
}

fn internal(e: impl std::fmt::Display) -> ReplayError {
    ReplayError::Internal(e.to_string())
}

struct Driver<'m> {
    machine: &'m Machine,
    space: SpaceId,
    /// One modeled CPU per trace thread, attached when the thread first
    /// appears.
    cpus: Vec<CpuHandle<'m>>,
    tid: usize,
    addr: &'m [u64],
    /// Each live region's current size (0: not mapped).
    size: Vec<u64>,
    /// Accesses the trace counted as hits without their addresses.
    hits: u64,
    baseline: Counters,
    marks: Vec<Mark>,
    start: Instant,
    index: u64,
    skipped: std::collections::BTreeMap<u8, u64>,
    /// The geometry's base page.
    page: u64,
    /// Per thread, the page its last access went to (see [`Last`]).
    last: Vec<Last>,
    /// Accesses counted as first-level hits without translating, by log2
    /// of the page size that holds them (see [`Last`]).
    repeats: [u64; 64],
    /// Whether such accesses are counted without translating them (not
    /// [`ReplayOptions::translate_all`]).
    shortcut: bool,
    /// The price of one first-level hit.
    hit: Ns3,
    /// Prices every thread's events (see the module documentation).
    pricer: Pricer<'m>,
    /// Per trace thread: its virtual clock, and its faults by kind as of
    /// its last priced event.
    clocks: Vec<Ns3>,
    /// Per trace thread: first-level hits not yet added to its clock
    /// (added as `hit * n` by [`Driver::flush`]).
    pending: Vec<u64>,
    kinds: Vec<crate::model::pricing::Priced>,
    /// The geometry's page size, for pricing system calls per page.
    page_bytes: u64,
    /// Per trace thread (its modeled CPU): the last-level table lines its
    /// caches hold (timing::TableLines).
    lines: Vec<TableLines>,
    /// The code of the SIGSEGV the last refused access raised (set where
    /// the refusal is made, taken by [`Driver::fault`]).
    segv: Option<String>,
    /// Recorded faults refused and gone past ([`refused`]).
    refused: Refused,
    /// The recorder inferred some faults' kinds (a refused write is then
    /// retried as a read).
    kinds_inferred: bool,
    /// Every mapping populated ([`ReplayOptions::prefault`]).
    prefault: bool,
    /// The latest clock when the window started: marks in the window
    /// report their time from there.
    origin: Ns3,
    /// The lock waits and contended acquisitions when the window started.
    waited: (Ns3, u64),
    /// The shootdowns' time and the LRU lock's waits at the window's start.
    waited_flush: (Ns3, Ns3),
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
struct Last {
    /// `!(page size - 1)`; 0: nothing known.
    mask: u64,
    base: u64,
    write: bool,
    /// The access was a clean first-level hit: the shortcut applies.
    l1: bool,
    shift: u8,
}

impl<'m> Driver<'m> {
    #[inline]
    fn cpu(&mut self) -> Result<&mut CpuHandle<'m>, ReplayError> {
        if self.tid >= self.cpus.len() {
            self.attach_cpus()?;
        }
        Ok(&mut self.cpus[self.tid])
    }

    /// Attaches CPUs up to the current thread's (the first time it appears).
    #[cold]
    #[inline(never)]
    fn attach_cpus(&mut self) -> Result<(), ReplayError> {
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
    fn clock(&mut self) -> &mut Ns3 {
        self.open_clock();
        self.flush(self.tid);
        &mut self.clocks[self.tid]
    }

    /// Makes the current thread's clock if it has none yet.
    #[inline(always)]
    fn open_clock(&mut self) {
        if self.clocks.len() <= self.tid {
            self.open_clock_slow();
        }
    }

    #[cold]
    #[inline(never)]
    fn open_clock_slow(&mut self) {
        self.flush_all();
        let start = self.clocks.iter().fold(Ns3::ZERO, |m, c| m.max(*c));
        self.clocks.resize(self.tid + 1, start);
        self.pending.resize(self.tid + 1, 0);
    }

    /// `n` first-level hits of the current thread, priced when its clock
    /// is next read or moved.
    #[inline]
    fn hits_pending(&mut self, n: u64) {
        self.open_clock();
        self.pending[self.tid] += n;
    }

    /// Adds thread `t`'s pending hits to its clock, as one product.
    #[inline]
    fn flush(&mut self, t: usize) {
        let n = std::mem::take(&mut self.pending[t]);
        if n != 0 {
            self.clocks[t] += self.hit * n as f64;
        }
    }

    fn flush_all(&mut self) {
        for t in 0..self.clocks.len() {
            self.flush(t);
        }
    }

    /// Consumes the run of accesses at the decoder's front that can only
    /// hit the first-level TLB (see [`Last`]): relative accesses of the
    /// current thread's last kind that stay in the page of its last
    /// access. Returns how many.
    #[inline]
    fn run(&mut self, records: &mut trace::codec::Decoder<'_>) -> u64 {
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
    fn event(&mut self, cost: Ns3, hold: Ns3) -> Result<(), ReplayError> {
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
    fn priced_call(
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

    fn usage(&self) -> Result<pricing::Usage, ReplayError> {
        pricing::usage(self.machine, self.space, self.page_bytes).map_err(internal)
    }

    fn refused(&self, what: String) -> ReplayError {
        ReplayError::Record {
            index: self.index,
            what,
        }
    }

    fn syscall(&self, r: Result<(), SyscallError>, what: &str) -> Result<(), ReplayError> {
        r.map_err(|e| match e {
            SyscallError::Errno(e) => self.refused(format!("{what}: {e}")),
            SyscallError::Internal(s) => ReplayError::Internal(s),
        })
    }

    #[inline]
    fn access(&mut self, id: u32, offset: u64, write: bool) -> Result<(), ReplayError> {
        // The first pass did not decode accesses (`Decoder::next_non_access`):
        // each is checked against its region here.
        let Some(&size) = self.size.get(id as usize) else {
            return Err(self.refused(format!(
                "an access to region {id}, which the trace never maps"
            )));
        };
        if offset >= size {
            return Err(self.refused(format!(
                "an access at offset {offset:#x} of region {id}, which is {}",
                if size == 0 {
                    "not mapped".to_string()
                } else {
                    format!("{size:#x} bytes")
                }
            )));
        }
        let va = self.addr[id as usize] + offset;
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
                // A walk records its table line pair, as the executor's.
                let cached = o.translation.hit == HitLevel::Walk && {
                    while self.lines.len() <= self.tid {
                        self.lines.push(TableLines::new(self.page_bytes));
                    }
                    self.lines[self.tid].walk(va)
                };
                let cost =
                    self.pricer
                        .costs
                        .access(o.translation.hit, o.translation.walk_refs, cached);
                let clean_l1 = o.faults == 0
                    && o.translation.hit == HitLevel::L1
                    && o.translation.walk_refs == 0;
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
                self.remember(va, write, o.translation.page_size, clean_l1);
                Ok(())
            }
            Err(AccessError::Segv { va, code }) => {
                self.segv = Some(format!("{code:?}"));
                Err(self.refused(format!("SIGSEGV at {va:#x} ({code:?})")))
            }
            Err(AccessError::Oom { va }) => Err(self.refused(format!("out of memory at {va:#x}"))),
            Err(AccessError::Internal(s)) => Err(ReplayError::Internal(s)),
        }
    }

    /// A recorded fault: an access of its kind, which the replay goes past
    /// when the model refuses it (see [`refused`]).
    fn fault(&mut self, id: u32, offset: u64, write: bool) -> Result<(), ReplayError> {
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
    fn hits(&mut self, count: u64) {
        match self.last.get(self.tid).filter(|l| l.mask != 0) {
            Some(l) => self.repeats[usize::from(l.shift)] += count,
            None => self.hits += count,
        }
        self.hits_pending(count);
    }

    /// The current thread's last access (see [`Last`]): `va`, of kind
    /// `write`, in a TLB entry of `size` bytes; `l1`: a clean first-level hit.
    #[inline(always)]
    fn remember(&mut self, va: u64, write: bool, size: u64, l1: bool) {
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

    fn map(&mut self, m: &MapEvent, addr: u64, len: u64) -> Result<(), ReplayError> {
        let kind = match m.kind {
            RegionKind::File => MapKind::File {
                cached: true,
                offset: 0,
            },
            RegionKind::Shmem => MapKind::Shmem,
            _ => MapKind::Anon,
        };
        let args = MmapArgs {
            addr,
            len,
            kind,
            shared: m.flags.has(trace::MapFlags::SHARED) || m.kind == RegionKind::Shmem,
            prot: prot(m.prot),
            populate: m.flags.has(trace::MapFlags::POPULATE) || self.prefault,
            locked: m.flags.has(trace::MapFlags::LOCKED),
            noreserve: m.flags.has(trace::MapFlags::NORESERVE),
            replace: false,
        };
        self.priced_call(SyscallKind::Mmap, 0, "mmap", |c| c.mmap(args))
    }

    /// The whole pages of `[offset, offset + len)` of region `id`: a range
    /// that reaches the region's end reaches its last (partial) page.
    fn pages(&self, id: u32, offset: u64, len: u64) -> Option<(u64, u64)> {
        let size = self.size[id as usize];
        let start = offset.next_multiple_of(self.page);
        let end = if offset + len >= size {
            size.next_multiple_of(self.page)
        } else {
            (offset + len) / self.page * self.page
        };
        (end > start).then(|| (self.addr[id as usize] + start, end - start))
    }

    /// Every thread's last page is forgotten: something may have changed
    /// a translation.
    fn forget(&mut self) {
        for l in &mut self.last {
            l.mask = 0;
            l.l1 = false;
        }
    }

    fn step(&mut self, r: &Record) -> Result<(), ReplayError> {
        if !matches!(
            r,
            Record::Access { .. }
                | Record::Fault { .. }
                | Record::Hits { .. }
                | Record::Thread { .. }
                | Record::Mark { .. }
        ) {
            self.forget();
        }
        match r {
            Record::Access { id, offset, write } => self.access(*id, *offset, *write),
            Record::Fault { id, offset, write } => self.fault(*id, *offset, *write),
            Record::Hits { count } => {
                self.hits(*count);
                Ok(())
            }
            Record::Thread { tid } => {
                self.tid = *tid as usize;
                Ok(())
            }
            Record::Mark { name } => self.mark(name),
            Record::Map(m) => {
                self.size[m.id as usize] = m.size;
                let a = self.addr[m.id as usize];
                self.map(m, a, m.size.next_multiple_of(self.page))
            }
            Record::Unmap { id, offset, len } => {
                let whole = *offset == 0 && *len >= self.size[*id as usize];
                let Some((a, len)) = self.pages(*id, *offset, *len) else {
                    return Ok(());
                };
                if whole {
                    self.size[*id as usize] = 0;
                }
                self.priced_call(SyscallKind::Munmap, len, "munmap", |c| c.munmap(a, len))
            }
            Record::Protect {
                id,
                offset,
                len,
                prot: p,
            } => {
                let Some((a, len)) = self.pages(*id, *offset, *len) else {
                    return Ok(());
                };
                let p = prot(*p);
                self.priced_call(SyscallKind::Mprotect, len, "mprotect", |c| {
                    c.mprotect(a, len, p)
                })
            }
            Record::Advise {
                id,
                offset,
                len,
                advice,
            } => {
                let Some(adv) = machine::Advice::from_number(*advice) else {
                    *self.skipped.entry(*advice).or_default() += 1;
                    return Ok(());
                };
                let Some((a, len)) = self.pages(*id, *offset, *len) else {
                    return Ok(());
                };
                self.priced_call(SyscallKind::Madvise, len, "madvise", |c| {
                    c.madvise(a, len, adv)
                })
            }
            Record::Lock { id, offset, len } => {
                let Some((a, len)) = self.pages(*id, *offset, *len) else {
                    return Ok(());
                };
                self.priced_call(SyscallKind::Other, len, "mlock", |c| c.mlock(a, len))
            }
            Record::Unlock { id, offset, len } => {
                let Some((a, len)) = self.pages(*id, *offset, *len) else {
                    return Ok(());
                };
                self.priced_call(SyscallKind::Other, len, "munlock", |c| c.munlock(a, len))
            }
            Record::Resize { id, size } => {
                let i = *id as usize;
                let page = self.page;
                let (base, old) = (self.addr[i], self.size[i].next_multiple_of(page));
                self.size[i] = *size;
                let size = &size.next_multiple_of(page);
                if *size > old {
                    // The heap grows: the new tail is a fresh anonymous
                    // mapping right after the old end (Linux: brk extends
                    // the VMA).
                    let m = MapEvent {
                        id: *id,
                        size: *size - old,
                        native: 0,
                        kind: RegionKind::Anon,
                        prot: trace::Prot(trace::Prot::READ | trace::Prot::WRITE),
                        flags: trace::MapFlags::default(),
                        name: String::new(),
                    };
                    self.map(&m, base + old, *size - old)
                } else if *size < old {
                    let (a, len) = (base + size, old - size);
                    self.priced_call(SyscallKind::Munmap, len, "munmap (shrink)", |c| {
                        c.munmap(a, len)
                    })
                } else {
                    Ok(())
                }
            }
            Record::Move {
                id,
                new_id,
                size,
                native,
            } => {
                let m = MapEvent {
                    id: *new_id,
                    size: *size,
                    native: *native,
                    kind: RegionKind::Anon,
                    prot: trace::Prot(trace::Prot::READ | trace::Prot::WRITE),
                    flags: trace::MapFlags::default(),
                    name: String::new(),
                };
                self.size[*new_id as usize] = *size;
                let a = self.addr[*new_id as usize];
                self.map(&m, a, size.next_multiple_of(self.page))?;
                let (old, old_size) = (
                    self.addr[*id as usize],
                    self.size[*id as usize].next_multiple_of(self.page),
                );
                self.size[*id as usize] = 0;
                self.priced_call(SyscallKind::Munmap, old_size, "munmap (move)", |c| {
                    c.munmap(old, old_size)
                })
            }
        }
    }

    /// A mark of the current thread: `predicted_ns` is its clock.
    fn mark(&mut self, name: &str) -> Result<(), ReplayError> {
        let at = *self.clock();
        self.mark_at(name, at)
    }

    /// The window starts before the next access: the counters so far are
    /// the mark `warmup`, and from here every mark counts from now (the
    /// model's state, TLBs and tables included, is kept).
    #[cold]
    fn cross(&mut self, cur: &mut window::Cursor) -> Result<(), ReplayError> {
        if !cur.cross() {
            return Ok(());
        }
        self.flush_all();
        let at = self.clocks.iter().fold(Ns3::ZERO, |m, c| m.max(*c));
        self.mark_at("warmup", at)?;
        self.baseline = snapshot::counters(self.machine, self.space).map_err(internal)?;
        self.hits = 0;
        self.repeats = [0; 64];
        self.start = Instant::now();
        self.origin = at;
        self.waited = (self.pricer.wait, self.pricer.contended);
        self.waited_flush = (self.pricer.flush, self.pricer.lru_wait());
        Ok(())
    }

    /// The end: `predicted_ns` is the latest clock (the makespan).
    fn end_mark(&mut self) -> Result<(), ReplayError> {
        self.flush_all();
        let at = self.clocks.iter().fold(Ns3::ZERO, |m, c| m.max(*c));
        self.mark_at("end", at)
    }

    fn mark_at(&mut self, name: &str, at: Ns3) -> Result<(), ReplayError> {
        for c in &mut self.cpus {
            c.checkpoint().map_err(internal)?;
        }
        let now = snapshot::counters(self.machine, self.space).map_err(internal)?;
        let mut c = now.since(&self.baseline);
        c.pt_pages = now.pt_pages;
        let repeats: u64 = self.repeats.iter().sum();
        for name in [
            counters::ACCESSES.name,
            counters::TLB_HITS.name,
            counters::TLB_L1_HITS.name,
        ] {
            let v = c.get(name).unwrap_or(0);
            c.set(name, v + (self.hits + repeats) as i64);
        }
        for (shift, &n) in self.repeats.iter().enumerate().filter(|(_, &n)| n > 0) {
            let name = l1_hits_name(shift as u32);
            let v = c.get(name).unwrap_or(0);
            c.set(name, v + n as i64);
        }
        c.set(
            counters::MODEL_WALL_NS.name,
            self.start.elapsed().as_nanos() as i64,
        );
        // Every thread's clock as of now, its pending hits included, from
        // the window's start.
        self.flush_all();
        let from = |t: Ns3| since(t, self.origin);
        let cpus: Vec<(usize, Ns3)> = self.clocks.iter().map(|&t| from(t)).enumerate().collect();
        Prediction {
            at: from(at),
            cpus: &cpus,
            lock_wait: since(self.pricer.wait, self.waited.0),
            contended: self.pricer.contended - self.waited.1,
            flush: since(self.pricer.flush, self.waited_flush.0),
            lru_wait: since(self.pricer.lru_wait(), self.waited_flush.1),
        }
        .write(&mut c);
        self.marks.push(Mark {
            name: name.to_string(),
            counters: c,
            latency: None,
        });
        Ok(())
    }
}

/// `t - origin`, each end at least 0 (a thread idle since before the
/// window started spent none of it).
fn since(t: Ns3, origin: Ns3) -> Ns3 {
    Ns3 {
        ns: (t.ns - origin.ns).max(0.0),
        lo: (t.lo - origin.lo).max(0.0),
        hi: (t.hi - origin.hi).max(0.0),
    }
}

/// The counter of first-level hits on pages of `1 << shift` bytes (the
/// sizes the MMU's statistics name, the rest as "other").
fn l1_hits_name(shift: u32) -> &'static str {
    let shifts = mmu::stats::SIZE_SHIFTS;
    let i = shifts
        .iter()
        .position(|&s| s == shift)
        .unwrap_or(shifts.len());
    counters::TLB_L1_HITS_BY_SIZE[i]
}

fn prot(p: trace::Prot) -> Prot {
    Prot {
        read: p.readable(),
        write: p.writable(),
        exec: p.executable(),
    }
}
