//! A first pass over a trace: every region's kind, largest size, native
//! address and lifetime (for the placement of a replay), the trace's
//! totals, and the checks of the crate's invariants 1 and 2 for every
//! record but accesses, which it passes over without decoding (the replay
//! decodes and checks them).
//!
//! [`Builder`] keeps what the pass learns, one record at a time: the
//! writer of a format-2 trace runs it as it writes, and stores its
//! [`Scan`] in the trace's index (crate `file`), so a replay needs no first
//! pass; the replay runs it too, over the records it does not skip, to
//! check the index against the records.

use crate::codec::Tally;
use crate::file::{TraceError, TraceReader};
use crate::record::{Record, RegionId, RegionKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;

/// One region over the whole trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionInfo {
    pub id: RegionId,
    pub kind: RegionKind,
    pub name: String,
    /// The largest size it ever had.
    pub max_size: u64,
    /// Where the program had it first (0: unknown).
    pub native: u64,
    /// Index of the record that introduced it.
    pub born: u64,
    /// Index of the record that ended it (a whole munmap or a move), if any.
    pub died: Option<u64>,
    /// The thread that introduced it.
    pub tid: u32,
}

/// What a trace holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scan {
    pub regions: BTreeMap<RegionId, RegionInfo>,
    pub records: u64,
    /// Accesses, including those a `Hits` record stands for.
    pub accesses: u64,
    pub faults: u64,
    /// Instruction fetches (`Fetch` records): the trace's instructions,
    /// 0 when it has none (absent from an index written before them).
    #[serde(default)]
    pub instructions: u64,
    /// Threads seen (the highest tid plus one).
    pub threads: u32,
}

/// The pass, one record at a time. Invariant: `live` holds exactly the
/// regions introduced and not yet ended, each at its current size, and
/// every one of them is in `scan.regions`.
#[derive(Debug, Clone)]
pub struct Builder {
    scan: Scan,
    live: BTreeMap<RegionId, u64>,
    tid: u32,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            scan: Scan {
                threads: 1,
                ..Scan::default()
            },
            live: BTreeMap::new(),
            tid: 0,
        }
    }
}

impl Builder {
    /// What has been learned so far.
    pub fn scan(&self) -> &Scan {
        &self.scan
    }

    /// The totals of the records passed over without [`Builder::record`]:
    /// `records` records standing for `accesses` accesses.
    #[inline]
    pub fn passed(&mut self, records: u64, accesses: u64) {
        self.scan.records += records;
        self.scan.accesses += accesses;
    }

    /// `n` instruction fetches passed over without [`Builder::record`]
    /// (their offsets are checked by the replay, as accesses are).
    #[inline]
    pub fn fetched(&mut self, n: u64) {
        self.scan.records += n;
        self.scan.instructions += n;
    }

    /// The finished [`Scan`].
    pub fn finish(self) -> Scan {
        self.scan
    }

    /// Takes record `r`, the trace's record number `scan().records`;
    /// `Err` says how it breaks invariant 1 or 2 (the caller names the
    /// place).
    pub fn record(&mut self, r: &Record) -> Result<(), String> {
        let index = self.scan.records;
        self.scan.records += 1;
        let s = &mut self.scan;
        let live = &mut self.live;
        let tid = self.tid;
        let within = |live: &BTreeMap<RegionId, u64>, id: RegionId, off: u64, len: u64| match live
            .get(&id)
        {
            None => Err(format!("region {id} is used but not mapped")),
            Some(&size) if off.checked_add(len).is_none_or(|e| e > size) => Err(format!(
                "[{off:#x}, +{len:#x}) lies outside region {id} of {size:#x} bytes"
            )),
            Some(_) => Ok(()),
        };
        match r {
            Record::Map(m) => {
                if s.regions.contains_key(&m.id) {
                    return Err(format!("region {} is introduced twice", m.id));
                }
                live.insert(m.id, m.size);
                s.regions.insert(
                    m.id,
                    RegionInfo {
                        id: m.id,
                        kind: m.kind,
                        name: m.name.clone(),
                        max_size: m.size,
                        native: m.native,
                        born: index,
                        died: None,
                        tid,
                    },
                );
            }
            Record::Move {
                id,
                new_id,
                size,
                native,
            } => {
                within(live, *id, 0, 0)?;
                if s.regions.contains_key(new_id) {
                    return Err(format!("region {new_id} is introduced twice"));
                }
                live.remove(id);
                let old = s.regions.get_mut(id).expect("live regions are known");
                old.died = Some(index);
                let (kind, name) = (old.kind, old.name.clone());
                live.insert(*new_id, *size);
                s.regions.insert(
                    *new_id,
                    RegionInfo {
                        id: *new_id,
                        kind,
                        name,
                        max_size: *size,
                        native: *native,
                        born: index,
                        died: None,
                        tid,
                    },
                );
            }
            Record::Resize { id, size } => {
                within(live, *id, 0, 0)?;
                live.insert(*id, *size);
                let info = s.regions.get_mut(id).expect("live regions are known");
                info.max_size = info.max_size.max(*size);
            }
            Record::Unmap { id, offset, len } => {
                within(live, *id, *offset, *len)?;
                if *offset == 0 && *len == live[id] {
                    live.remove(id);
                    s.regions.get_mut(id).expect("known").died = Some(index);
                }
            }
            Record::Protect {
                id, offset, len, ..
            }
            | Record::Advise {
                id, offset, len, ..
            }
            | Record::Lock { id, offset, len }
            | Record::Unlock { id, offset, len } => within(live, *id, *offset, *len)?,
            Record::Access { id, offset, .. } => {
                within(live, *id, *offset, 1)?;
                s.accesses += 1;
            }
            Record::Fault { id, offset, .. } => {
                within(live, *id, *offset, 1)?;
                s.faults += 1;
            }
            Record::Fetch { id, offset } => {
                within(live, *id, *offset, 1)?;
                s.instructions += 1;
            }
            Record::Hits { count } => s.accesses += count,
            Record::Thread { tid: t } => {
                self.tid = *t;
                s.threads = s.threads.max(t.saturating_add(1));
            }
            Record::Mark { .. } => {}
        }
        Ok(())
    }
}

/// Reads `reader` to its end, collecting [`Scan`].
///
/// # Errors
/// What the reader raises, and [`TraceError::Format`] at the chunk of a
/// record that breaks invariant 1 or 2.
pub fn scan<R: Read>(reader: &mut TraceReader<R>) -> Result<Scan, TraceError> {
    let mut b = Builder::default();
    let path = reader.path().to_path_buf();
    while let Some(chunk) = reader.next_raw_chunk()? {
        let at = chunk.at;
        let mut records = chunk.decoder();
        // Accesses passed over in this chunk, those of them already
        // counted, and the other records.
        // `Hits` records are passed over too, tallied.
        let (mut passed, mut counted, mut others) = (0u64, 0u64, 0u64);
        let (mut hits, mut hits_counted) = (Tally::default(), Tally::default());
        loop {
            let next = records.next_non_access_or_hits(&mut passed, &mut hits);
            b.passed(
                passed - counted + (hits.records - hits_counted.records),
                passed - counted + (hits.count - hits_counted.count),
            );
            counted = passed;
            hits_counted = hits;
            let Some(r) = next else {
                break;
            };
            others += 1;
            let r = r.map_err(|e| chunk.error(e))?;
            let index = b.scan().records;
            b.record(&r).map_err(|what| TraceError::Format {
                path: path.clone(),
                offset: at,
                what: format!("record {index}: {what}"),
            })?;
        }
        chunk.check_count(passed + hits.records + others)?;
    }
    Ok(b.finish())
}
