//! The part of a trace a replay measures, ChampSim's warm-up and
//! simulation window, in instructions where the trace has them (`Fetch`
//! records: an imported ChampSim or lackey trace) and otherwise in
//! accesses ([`Unit`]): the first `skip` are passed over (not replayed:
//! their regions' address-space records still are), the next `warmup` are
//! replayed but not counted (the TLBs, the page tables and the faulted
//! pages stay as they left them), and then `limit` (or the rest of the
//! trace) are measured.
//!
//! The window starts just before its first access (in instructions:
//! before its first instruction's fetch): everything replayed before it
//! (the warm-up, and with [`super::ReplayOptions::prefault`] the maps and
//! their populate) is the run's mark `warmup`, and every later mark counts
//! from the window's start. The window ends right after its last access
//! (in instructions: before the fetch of the instruction after its last,
//! so the last instruction's loads and stores are in it); the replay stops
//! there.
//!
//! A `Hits` record (accesses a tracer counted without their addresses)
//! that straddles a boundary of a window in accesses is split at it; a run
//! of sure first-level hits is consumed as a count only where it cannot
//! pass a boundary ([`Cursor::left`] against the chunk's records left).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What a window counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Each access one, a `Hits` record its count.
    Accesses,
    /// Each `Fetch` record one (a trace that has them).
    Instructions,
}

impl Unit {
    /// Instructions where the trace has them, else accesses.
    pub fn of(scan: &trace::regions::Scan) -> Unit {
        if scan.instructions > 0 {
            Unit::Instructions
        } else {
            Unit::Accesses
        }
    }

    /// How many of them the trace holds.
    pub fn total(self, scan: &trace::regions::Scan) -> u64 {
        match self {
            Unit::Accesses => scan.accesses,
            Unit::Instructions => scan.instructions,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Unit::Accesses => "accesses",
            Unit::Instructions => "instructions",
        }
    }
}

/// The window, in the trace's [`Unit`] (accesses: each access of the
/// trace one, a `Hits` record its count; instructions: each fetch one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    /// Units passed over before anything is replayed.
    pub skip: u64,
    /// Units replayed, not counted, before the window.
    pub warmup: u64,
    /// Units measured (`None`: to the end of the trace).
    pub limit: Option<u64>,
}

impl Window {
    /// Whether the whole trace is measured from its first record.
    pub fn is_whole(&self) -> bool {
        *self == Window::default()
    }
}

/// Why a replay ended before the trace (or the window) did: its counters
/// are those so far, marked partial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// [`super::ReplayOptions::deadline`] passed.
    TimeLimit,
    /// [`super::ReplayOptions::interrupt`] was raised (SIGINT).
    Interrupted,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stopped::TimeLimit => "the time limit was reached",
            Stopped::Interrupted => "interrupted",
        })
    }
}

/// Whether the replay must stop now, and why (checked once a chunk).
pub(crate) fn stop_reason(
    deadline: Option<Instant>,
    interrupt: &Option<Arc<AtomicBool>>,
) -> Option<Stopped> {
    if interrupt
        .as_ref()
        .is_some_and(|f| f.load(Ordering::Relaxed))
    {
        return Some(Stopped::Interrupted);
    }
    if deadline.is_some_and(|t| Instant::now() >= t) {
        return Some(Stopped::TimeLimit);
    }
    None
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Skip,
    Warm,
    Measure,
}

/// Where the replay is in its window.
#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    window: Window,
    pub(crate) phase: Phase,
    /// Accesses before the next boundary (`u64::MAX`: none ahead). At 0 in
    /// `Skip` or `Warm` the next phase begins before the next access; at 0
    /// in `Measure` the window is over.
    pub(crate) left: u64,
    /// Accesses passed so far, skipped ones included.
    pub(crate) done: u64,
}

impl Cursor {
    /// `prefault`: the window starts at the trace's first access even
    /// with no warm-up (the maps before it, populated, are set-up).
    pub(crate) fn new(window: Window, prefault: bool) -> Cursor {
        let mut c = Cursor {
            window,
            phase: Phase::Measure,
            left: u64::MAX,
            done: 0,
        };
        if window.skip > 0 {
            c.phase = Phase::Skip;
            c.left = window.skip;
        } else if window.warmup > 0 || prefault {
            c.phase = Phase::Warm;
            c.left = window.warmup;
        } else {
            c.left = window.limit.unwrap_or(u64::MAX);
        }
        c
    }

    /// `k` accesses passed.
    #[inline(always)]
    pub(crate) fn passed(&mut self, k: u64) {
        self.left -= k;
        self.done += k;
    }

    /// Whether accesses are replayed now (not skipped).
    #[inline(always)]
    pub(crate) fn replays(&self) -> bool {
        self.phase != Phase::Skip
    }

    /// Whether the measured window is over.
    #[inline(always)]
    pub(crate) fn finished(&self) -> bool {
        self.left == 0 && self.phase == Phase::Measure
    }

    /// Moves past every boundary reached (the access about to be replayed
    /// is the next phase's); returns whether the window starts here.
    pub(crate) fn cross(&mut self) -> bool {
        let mut starts = false;
        while self.left == 0 && self.phase != Phase::Measure {
            if self.phase == Phase::Skip {
                self.phase = Phase::Warm;
                self.left = self.window.warmup;
            } else {
                self.phase = Phase::Measure;
                self.left = self.window.limit.unwrap_or(u64::MAX);
                starts = true;
            }
        }
        starts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks `n` accesses one at a time through a cursor; returns the
    /// phase of each and where the window started.
    fn walk(w: Window, prefault: bool, n: u64) -> (Vec<Phase>, Option<u64>) {
        let mut c = Cursor::new(w, prefault);
        let mut phases = Vec::new();
        let mut start = None;
        for i in 0..n {
            if c.left == 0 && c.phase != Phase::Measure && c.cross() {
                start = Some(i);
            }
            if c.finished() {
                break;
            }
            phases.push(c.phase);
            c.passed(1);
        }
        (phases, start)
    }

    #[test]
    fn skip_warmup_and_limit_split_the_accesses() {
        let w = Window {
            skip: 2,
            warmup: 3,
            limit: Some(4),
        };
        let (p, start) = walk(w, false, 20);
        use Phase::*;
        assert_eq!(
            p,
            vec![Skip, Skip, Warm, Warm, Warm, Measure, Measure, Measure, Measure]
        );
        assert_eq!(start, Some(5));
    }

    #[test]
    fn no_window_measures_everything_and_prefault_starts_at_the_first_access() {
        let (p, start) = walk(Window::default(), false, 5);
        assert_eq!(p, vec![Phase::Measure; 5]);
        assert_eq!(start, None);
        let (p, start) = walk(Window::default(), true, 5);
        assert_eq!(p, vec![Phase::Measure; 5]);
        assert_eq!(start, Some(0));
        // A skip with no warm-up goes straight to the window.
        let w = Window {
            skip: 3,
            warmup: 0,
            limit: None,
        };
        let (p, start) = walk(w, false, 5);
        assert_eq!(p.iter().filter(|&&x| x == Phase::Measure).count(), 2);
        assert_eq!(start, Some(3));
    }
}
