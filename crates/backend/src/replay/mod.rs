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

mod calls;
mod drive;
mod driver;
pub mod from_workload;
mod index_check;
pub mod layout;
mod marks;
pub mod refused;
pub mod window;

use crate::model::{snapshot, ModelConfig};
use driver::Driver;
use index_check::IndexCheck;
pub use layout::{Layout, LayoutMode};
use machine::{Machine, MachineConfig};
pub use refused::{Refused, RefusedFault};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;
use thiserror::Error;
use trace::regions::{self, Scan};
use trace::{TraceError, TraceReader};
pub use window::{Stopped, Unit, Window};
use workload::result::Run;

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
    let (scan, check) = match trace::read_index(path)? {
        Some(ix) => (ix.scan.clone(), Some(IndexCheck::new(ix))),
        None => (regions::scan(&mut TraceReader::open(path)?)?, None),
    };
    let layout = layout::choose(&scan, &cfg.geometry, opts.layout).map_err(ReplayError::Layout)?;
    let kinds_inferred = refused::kinds_inferred(TraceReader::open(path)?.header());
    let unit = Unit::of(&scan);
    let w = opts.window;
    let total = unit.total(&scan);
    if !w.is_whole() && w.skip.saturating_add(w.warmup) >= total {
        let name = unit.name();
        return Err(ReplayError::Config(format!(
            "{}: the window starts after {} {} (skip {} + warm-up {}), but the trace has {total} {name}",
            path.display(),
            w.skip.saturating_add(w.warmup),
            name,
            w.skip,
            w.warmup,
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
    let mut d = Driver::new(&machine, space, &layout.addr, cfg, opts, kinds_inferred);
    d.baseline = snapshot::counters(&machine, space).map_err(internal)?;
    let cur = window::Cursor::new(opts.window, opts.prefault);
    let partial = drive::drive(&mut d, path, opts, cur, unit, total, check)?;
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

fn internal(e: impl std::fmt::Display) -> ReplayError {
    ReplayError::Internal(e.to_string())
}
