//! A replay from a trace's index, held to the records as they come.

use super::ReplayError;
use std::path::Path;
use trace::regions::{Builder, RegionInfo};
use trace::{Record, TraceError};

/// A replay from a trace's index: the first pass's checks of invariants 1
/// and 2, made on the records the replay decodes (all but accesses, which
/// the replay checks itself), and the index held to what they say, so that
/// a replay never uses a region the index placed wrongly. Invariant: every
/// region the records introduced so far is in the index, of its kind,
/// name, native address, birth and thread, no larger than its largest
/// size there.
pub(super) struct IndexCheck {
    index: trace::Index,
    seen: Builder,
}

impl IndexCheck {
    pub(super) fn new(index: trace::Index) -> Self {
        IndexCheck {
            index,
            seen: Builder::default(),
        }
    }

    /// Record `r`, the trace's record number `at_record`, in the chunk at
    /// byte `chunk`.
    pub(super) fn record(
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
    pub(super) fn finish(self, records: u64, path: &Path) -> Result<(), ReplayError> {
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
