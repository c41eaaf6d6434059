//! What the recorder's threads share: the trace writer, the program's
//! address space as the recorder knows it, and the fault samples not yet
//! written (the ordering rule is invariant 1 of [`super`]).

use crate::infer::Inference;
use crate::perf::{FaultSample, Sampler};
use crate::space::Space;
use crate::Summary;
use std::collections::{BTreeMap, HashMap};
use std::io::BufWriter;
use std::sync::Mutex;
use trace::{Record, TraceWriter};

/// What both threads of the recorder share.
pub(super) struct Shared {
    pub(super) writer: TraceWriter<BufWriter<std::fs::File>>,
    pub(super) space: Space,
    /// None when no fault events are sampled (`--only calls`, `native`,
    /// `faults-counting`).
    pub(super) sampler: Option<Sampler>,
    pub(super) queue: Vec<FaultSample>,
    /// Threads stopped inside a traced call: entry time.
    pub(super) in_flight: BTreeMap<i32, u64>,
    /// Kernel tid -> trace thread number.
    pub(super) threads: HashMap<u32, u32>,
    pub(super) current: Option<u32>,
    pub(super) main: u32,
    pub(super) stats: Summary,
    pub(super) error: Option<std::io::Error>,
    pub(super) out: Vec<Record>,
    /// Fault kinds inferred, when the samples do not carry them (the
    /// software event: [`crate::infer`]).
    pub(super) infer: Option<Inference>,
}

impl Shared {
    pub(super) fn push(&mut self, r: Record) {
        if let Some(i) = &mut self.infer {
            i.observe(&r);
        }
        if self.error.is_none() {
            if let Err(e) = self.writer.push(&r) {
                self.error = Some(e);
            }
        }
    }

    pub(super) fn switch_to(&mut self, tid: u32) {
        let n = self.threads.len() as u32;
        let t = *self.threads.entry(tid).or_insert(n);
        if self.current != Some(t) {
            self.current = Some(t);
            self.push(Record::Thread { tid: t });
        }
    }

    /// Drains the ring and writes the faults older than `bound` and than
    /// every call in flight (invariant 1).
    pub(super) fn flush(&mut self, bound: u64) {
        let mut fresh = std::mem::take(&mut self.queue);
        let before = fresh.len();
        if let Some(s) = &mut self.sampler {
            s.drain(&mut fresh);
        }
        self.stats.fault_events += (fresh.len() - before) as u64;
        let limit = self
            .in_flight
            .values()
            .copied()
            .min()
            .unwrap_or(u64::MAX)
            .min(bound);
        fresh.sort_by_key(|s| s.time);
        // Where kinds are inferred: each page's last sample so far, so a
        // fault can tell whether its page faults again (infer, rule 3).
        let last_of_page: HashMap<u64, usize> = match self.infer {
            Some(_) => fresh
                .iter()
                .enumerate()
                .filter(|(_, s)| s.pid == self.main)
                .map(|(i, s)| (s.addr >> 12, i))
                .collect(),
            None => HashMap::new(),
        };
        let cut = fresh.partition_point(|s| s.time < limit);
        let keep = fresh.split_off(cut);
        for (i, s) in fresh.into_iter().enumerate() {
            if s.pid != self.main {
                self.stats.faults_other_processes += 1;
                continue;
            }
            match self.space.locate(s.addr) {
                Some((id, offset)) => {
                    self.switch_to(s.tid);
                    self.stats.faults_recorded += 1;
                    let write = match (s.write, &mut self.infer) {
                        (Some(w), _) => w,
                        (None, Some(inf)) => {
                            let again = last_of_page.get(&(s.addr >> 12)).is_some_and(|&l| l > i);
                            inf.kind(id, offset, s.addr, again)
                        }
                        (None, None) => true,
                    };
                    self.push(Record::Fault { id, offset, write });
                }
                None => self.stats.faults_unattributed += 1,
            }
        }
        self.queue = keep;
    }

    pub(super) fn emit(&mut self) {
        let out = std::mem::take(&mut self.out);
        for r in &out {
            self.push(r.clone());
        }
        self.out = out;
        self.out.clear();
    }
}

pub(super) fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
