//! The replay's loop: chunk by chunk (read ahead on a second thread), each
//! record decoded straight into the driver, the window's boundaries
//! crossed where they fall ([`window`]).

use super::driver::Driver;
use super::index_check::IndexCheck;
use super::window::{self, Cursor, Stopped, Unit};
use super::{ReplayError, ReplayOptions};
use std::path::Path;
use trace::file::{Prefetch, RawChunk};
use trace::{Record, TraceReader};

/// Replays the trace at `path` through `d` from its first record, measuring
/// the window `cur` counts in `unit` (`total` of them in the trace);
/// returns why it stopped early, if it did.
pub(super) fn drive(
    d: &mut Driver<'_>,
    path: &Path,
    opts: &ReplayOptions,
    mut cur: Cursor,
    unit: Unit,
    total: u64,
    mut check: Option<IndexCheck>,
) -> Result<Option<Stopped>, ReplayError> {
    // Chunks are read and decompressed on a second thread, two ahead.
    let mut chunks = Prefetch::new(TraceReader::open(path)?, 2);
    let mut partial = None;
    // Whether every record was replayed (no window end, no stop): then
    // the index is held to the whole file.
    let mut whole = true;
    while let Some(owned) = chunks.next_chunk()? {
        let chunk = owned.view(path);
        if let Some(why) = window::stop_reason(opts.deadline, &opts.interrupt) {
            partial = Some(why);
            whole = false;
            break;
        }
        if let Some(p) = &opts.progress {
            p(cur.done, total);
        }
        let over = match unit {
            Unit::Accesses => by_accesses(d, &chunk, &mut cur, &mut check, path)?,
            Unit::Instructions => by_instructions(d, &chunk, &mut cur, &mut check, path)?,
        };
        if over {
            whole = false;
            break;
        }
        chunks.recycle(owned);
    }
    drop(chunks);
    if let (Some(c), true) = (check, whole) {
        c.finish(d.index, path)?;
    }
    Ok(partial)
}

/// The records of one chunk, the window in accesses; returns whether the
/// window ended in it.
///
/// Records are decoded one at a time, straight into the step: no list of
/// a chunk's records is built. Before each, a run of accesses that can
/// only hit is consumed as a count, when it cannot pass a boundary of the
/// window (each record of the chunk is at most one access there).
fn by_accesses(
    d: &mut Driver<'_>,
    chunk: &RawChunk<'_>,
    cur: &mut Cursor,
    check: &mut Option<IndexCheck>,
    path: &Path,
) -> Result<bool, ReplayError> {
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
        // An access (most records) goes straight to the access path, no
        // `Record` built; anything else through `step`.
        if let Some((id, offset, write)) = records.next_access() {
            if cur.left == 0 {
                d.cross(cur)?;
            }
            if cur.replays() {
                d.access(id, offset, write)?;
            }
            d.index += 1;
            n += 1;
            cur.passed(1);
            if cur.finished() {
                return Ok(true);
            }
            continue;
        }
        if let Some(mut hits) = records.next_hits() {
            d.index += 1;
            n += 1;
            // Split at every boundary it straddles.
            while hits > 0 {
                if cur.left == 0 {
                    d.cross(cur)?;
                }
                let take = hits.min(cur.left);
                if cur.replays() {
                    d.hits(take);
                }
                cur.passed(take);
                hits -= take;
                if cur.finished() {
                    return Ok(true);
                }
            }
            continue;
        }
        let Some(r) = records.next_record() else {
            break;
        };
        let r = r.map_err(|e| chunk.error(e))?;
        if let Some(c) = check {
            c.record(d.index, &r, chunk.at, path)?;
        }
        let access = matches!(r, Record::Access { .. } | Record::Fault { .. });
        if access && cur.left == 0 {
            d.cross(cur)?;
        }
        if !access || cur.replays() {
            d.step(&r)?;
        }
        d.index += 1;
        n += 1;
        if access {
            cur.passed(1);
            if cur.finished() {
                return Ok(true);
            }
        }
    }
    chunk.check_count(n)?;
    Ok(false)
}

/// The records of one chunk, the window in instructions (a trace with
/// `Fetch` records): a boundary falls before an instruction's fetch, so
/// an instruction's loads and stores are on the side of its fetch, and the
/// window ends before the fetch of the first instruction after it. Returns
/// whether the window ended in this chunk.
fn by_instructions(
    d: &mut Driver<'_>,
    chunk: &RawChunk<'_>,
    cur: &mut Cursor,
    check: &mut Option<IndexCheck>,
    path: &Path,
) -> Result<bool, ReplayError> {
    let mut records = chunk.decoder();
    let mut n = 0;
    loop {
        // A run of data accesses never passes a boundary here.
        if d.shortcut && cur.replays() {
            let k = d.run(&mut records);
            d.index += k;
            n += k;
        }
        if let Some((id, offset, write)) = records.next_access() {
            if cur.replays() {
                d.access(id, offset, write)?;
            }
            d.index += 1;
            n += 1;
            continue;
        }
        if let Some(hits) = records.next_hits() {
            if cur.replays() {
                d.hits(hits);
            }
            d.index += 1;
            n += 1;
            continue;
        }
        let Some(r) = records.next_record() else {
            break;
        };
        let r = r.map_err(|e| chunk.error(e))?;
        let fetch = matches!(r, Record::Fetch { .. });
        if fetch {
            if cur.finished() {
                return Ok(true);
            }
            if cur.left == 0 {
                d.cross(cur)?;
            }
        }
        if let Some(c) = check {
            c.record(d.index, &r, chunk.at, path)?;
        }
        let counted = matches!(r, Record::Access { .. } | Record::Fault { .. }) || fetch;
        if !counted || cur.replays() {
            d.step(&r)?;
        }
        d.index += 1;
        n += 1;
        if fetch {
            cur.passed(1);
        }
    }
    chunk.check_count(n)?;
    Ok(false)
}
