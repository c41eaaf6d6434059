//! Marks: the counters taken at a trace's `Mark` records, where the
//! window starts (`warmup`) and at the end, each from the window's start.

use super::driver::Driver;
use super::{internal, window, ReplayError};
use crate::model::{snapshot, Prediction};
use std::time::Instant;
use timing::Ns3;
use workload::result::Mark;

impl Driver<'_> {
    /// A mark of the current thread: `predicted_ns` is its clock.
    pub(super) fn mark(&mut self, name: &str) -> Result<(), ReplayError> {
        let at = *self.clock();
        self.mark_at(name, at)
    }

    /// The window starts before the next access: the counters so far are
    /// the mark `warmup`, and from here every mark counts from now (the
    /// model's state, TLBs and tables included, is kept).
    #[cold]
    pub(super) fn cross(&mut self, cur: &mut window::Cursor) -> Result<(), ReplayError> {
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
    pub(super) fn end_mark(&mut self) -> Result<(), ReplayError> {
        self.flush_all();
        let at = self.clocks.iter().fold(Ns3::ZERO, |m, c| m.max(*c));
        self.mark_at("end", at)
    }

    pub(super) fn mark_at(&mut self, name: &str, at: Ns3) -> Result<(), ReplayError> {
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
