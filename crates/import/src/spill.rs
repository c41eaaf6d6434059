//! The spill: every access of an import, kept in a temporary file while
//! the input is read, in [`Part`]s that become the trace's chunks once the
//! regions (and so every access's region and offset) are known at its end.
//!
//! The accesses are encoded as they are read, in the trace's own records
//! ([`trace::codec`]), so that little is left to do at the end:
//!
//! - an access within [`GAP`] of the previous one of its stream (data or
//!   fetches) is in the same region whatever the regions turn out to be
//!   (a region ends only at a gap of `GAP` between touched pages), so it
//!   is written as the trace writes it: a relative record, the zigzag
//!   difference of the addresses (equal to that of the offsets);
//! - any other access (the first of each stream in a part, or one far
//!   from the previous) is a *mark*: the absolute record's tag, then its
//!   address (8 bytes, little-endian) and the zigzag difference from the
//!   previous address of its stream (LEB128), its place in the part listed
//!   after the part's bytes. At the end a mark becomes what the trace writer makes of it:
//!   a relative record (the difference as it is) if the previous access of
//!   its stream is in the same region, else the region's id and the
//!   offset.
//!
//! The parts are then finished and compressed on one thread per core: the
//! decompressor's core is free by then, and this is all an import adds
//! after its input ends. Each part is one chunk, made as the trace writer
//! would make it from the same accesses.

use crate::infer::GAP;
use std::io::Write;
use std::os::unix::fs::FileExt;
use trace::codec::{FETCH_AT, FETCH_NEAR, READ_AT, READ_NEAR, WRITE_AT, WRITE_NEAR};
use trace::file::CHUNK_TARGET;
use trace::varint;

/// Tags by kind (0 load, 1 store, 2 fetch): absolute, relative.
const AT: [u8; 3] = [READ_AT, WRITE_AT, FETCH_AT];
const NEAR: [u8; 3] = [READ_NEAR, WRITE_NEAR, FETCH_NEAR];

/// Bytes a mark is taken to shrink by once finished.
const MARK_EXTRA: usize = 9;

/// A part of the spill: the accesses of one chunk of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Byte offset in the spill file; its bytes, then its marks' places
    /// (u32 little-endian each).
    pub offset: u64,
    pub len: u32,
    pub marks: u32,
    pub accesses: u32,
    pub fetches: u32,
    /// The part finished with the regions known when it was closed, if
    /// it was: the chunk, right after its marks' places.
    pub spec: Option<Spec>,
}

/// A part finished before the input ends, with the regions so far:
/// valid if every region it named still starts where it did and has the
/// same id (regions only grow and merge as pages are added, so the
/// relative records are right whatever happens; a mark named its region
/// by id and offset from its start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub raw: u32,
    pub frame: u32,
    /// The regions its marks named: (start, id).
    pub used: Vec<(u64, u32)>,
}

impl Spec {
    /// Whether the chunk is what finishing the part with `regions` makes.
    pub fn holds(&self, regions: &[(u64, u64)]) -> bool {
        self.used
            .iter()
            .all(|&(start, id)| regions.get(id as usize).is_some_and(|r| r.0 == start))
    }
}

/// Where the spill goes: the part being filled, the file, the parts
/// written.
pub struct Spill {
    file: std::fs::File,
    buf: Vec<u8>,
    marks: Vec<u32>,
    /// A part ends once it holds this many bytes.
    cap: usize,
    /// Each stream's previous address (data, fetches).
    prev: [u64; 2],
    /// Whether the stream has no access in the part yet.
    fresh: [bool; 2],
    /// Accesses and fetches in the part.
    counts: [u32; 2],
    written: u64,
    /// Finishes parts as they are closed, when asked to speculate.
    early: Option<Finisher>,
    pub parts: Vec<Part>,
    /// The first error writing the file (the rest are passed over).
    pub failed: Option<std::io::Error>,
}

impl Spill {
    /// Parts of about a chunk's size.
    pub fn new(file: std::fs::File) -> Spill {
        Spill::with_size(file, CHUNK_TARGET)
    }

    /// Parts of about `cap` bytes: tests make small ones.
    pub fn with_size(file: std::fs::File, cap: usize) -> Spill {
        Spill {
            file,
            buf: Vec::with_capacity(cap + 32),
            marks: Vec::new(),
            cap,
            prev: [0; 2],
            fresh: [true; 2],
            counts: [0; 2],
            written: 0,
            early: None,
            parts: Vec::new(),
            failed: None,
        }
    }

    /// One access at `addr` of `kind` (0 load, 1 store, 2 fetch); true
    /// when the part is full (then [`Spill::close`] it).
    #[inline(always)]
    pub fn put(&mut self, addr: u64, kind: u8) -> bool {
        let k = usize::from(kind);
        let s = usize::from(kind == 2);
        let prev = self.prev[s];
        self.prev[s] = addr;
        let d = addr.wrapping_sub(prev) as i64;
        let z = varint::zigzag(d);
        if self.fresh[s] || prev.abs_diff(addr) >= GAP {
            self.fresh[s] = false;
            self.marks.push(self.buf.len() as u32);
            self.buf.push(AT[k]);
            self.buf.extend_from_slice(&addr.to_le_bytes());
        } else {
            self.buf.push(NEAR[k]);
        }
        varint::put(&mut self.buf, z);
        self.counts[s] += 1;
        // A mark is about 9 bytes longer than what it becomes (8 bytes of
        // address and a long difference against a region id and an
        // offset): the chunk ends near the trace writer's size.
        self.buf.len() >= self.cap + MARK_EXTRA * self.marks.len()
    }

    /// Ends the part being filled (if it holds an access) and writes it;
    /// with `regions` (those of the pages so far), finished and
    /// compressed too, the chunk written after it ([`Spec`]).
    #[cold]
    pub fn close(&mut self, regions: Option<&[(u64, u64)]>) {
        if self.buf.is_empty() {
            return;
        }
        let mut marks = Vec::with_capacity(4 * self.marks.len());
        for m in &self.marks {
            marks.extend_from_slice(&m.to_le_bytes());
        }
        let spec = regions.and_then(|r| self.speculate(r));
        if self.failed.is_none() {
            let mut w = self
                .file
                .write_all(&self.buf)
                .and_then(|()| self.file.write_all(&marks));
            if let (Ok(()), Some((_, frame))) = (&w, &spec) {
                w = self.file.write_all(frame);
            }
            if let Err(e) = w {
                self.failed = Some(e);
            }
        }
        let frame = spec.as_ref().map_or(0, |(_, f)| f.len());
        self.parts.push(Part {
            offset: self.written,
            len: self.buf.len() as u32,
            marks: self.marks.len() as u32,
            accesses: self.counts[0],
            fetches: self.counts[1],
            spec: spec.map(|(s, _)| s),
        });
        self.written += (self.buf.len() + marks.len() + frame) as u64;
        self.buf.clear();
        self.marks.clear();
        self.fresh = [true; 2];
        self.counts = [0; 2];
    }

    /// The part being closed finished with `regions`, and its frame.
    fn speculate(&mut self, regions: &[(u64, u64)]) -> Option<(Spec, Vec<u8>)> {
        if self.early.is_none() {
            self.early = Finisher::new(crate::infer::LEVEL).ok();
        }
        let f = self.early.as_mut()?;
        let mut used = Vec::new();
        let marks = self.marks.iter().map(|&m| m as usize);
        finish_body(&self.buf, marks, regions, &mut f.out, &mut used)?;
        let frame = f.z.compress(&f.out).ok()?;
        let spec = Spec {
            raw: f.out.len() as u32,
            frame: frame.len() as u32,
            used,
        };
        Some((spec, frame))
    }

    pub fn file(&self) -> &std::fs::File {
        &self.file
    }
}

/// Regions each stream remembers while finishing a part.
const WAYS: usize = 4;

/// A chunk of the trace, encoded and compressed.
pub struct Chunk {
    pub raw: usize,
    pub frame: Vec<u8>,
    pub accesses: u32,
    pub fetches: u32,
}

/// What a thread finishing parts reuses from one to the next.
pub struct Finisher {
    z: zstd::bulk::Compressor<'static>,
    bytes: Vec<u8>,
    out: Vec<u8>,
}

impl Finisher {
    /// Compressing at zstd `level`, as the trace writer.
    ///
    /// # Errors
    /// zstd cannot make a compressor.
    pub fn new(level: i32) -> std::io::Result<Finisher> {
        Ok(Finisher {
            z: trace::file::chunk_compressor(level)?,
            bytes: Vec::new(),
            out: Vec::new(),
        })
    }

    /// [`finish`] with this thread's compressor and buffers.
    ///
    /// # Errors
    /// As [`finish`].
    pub fn finish(
        &mut self,
        part: &Part,
        file: &std::fs::File,
        regions: &[(u64, u64)],
    ) -> std::io::Result<Chunk> {
        finish(part, file, regions, self)
    }
}

/// Finishes `part` of `file` into a chunk: each mark made a relative
/// record or one naming its region (`regions`: (start, end), sorted, the
/// id the index; every address of the spill in one), then compressed.
///
/// # Errors
/// Reading the spill fails or its bytes are not what [`Spill`] wrote;
/// compressing fails.
fn finish(
    part: &Part,
    file: &std::fs::File,
    regions: &[(u64, u64)],
    f: &mut Finisher,
) -> std::io::Result<Chunk> {
    let bad = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "the importer's spill file is not what it wrote (at byte {})",
                part.offset
            ),
        )
    };
    let len = part.len as usize;
    let marks_len = 4 * part.marks as usize;
    let bytes = &mut f.bytes;
    // A part finished early with regions that still hold: its chunk as
    // it was made.
    if let Some(spec) = part.spec.as_ref().filter(|s| s.holds(regions)) {
        bytes.resize(spec.frame as usize, 0);
        file.read_exact_at(bytes, part.offset + (len + marks_len) as u64)?;
        return Ok(Chunk {
            raw: spec.raw as usize,
            frame: bytes.clone(),
            accesses: part.accesses,
            fetches: part.fetches,
        });
    }
    bytes.resize(len + marks_len, 0);
    file.read_exact_at(bytes, part.offset)?;
    let (body, marks) = bytes.split_at(len);
    let marks = marks
        .chunks_exact(4)
        .map(|m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]) as usize);
    finish_body(body, marks, regions, &mut f.out, &mut Vec::new()).ok_or_else(bad)?;
    Ok(Chunk {
        raw: f.out.len(),
        frame: f.z.compress(&f.out)?,
        accesses: part.accesses,
        fetches: part.fetches,
    })
}

/// The chunk of a part into `out`: its bytes (`body`) with each mark (at
/// the places `marks`, ascending) made a relative record or one naming
/// its region; the regions named pushed on `used`. `None` if the bytes
/// are not what [`Spill`] wrote or an address is in no region.
fn finish_body(
    body: &[u8],
    marks: impl Iterator<Item = usize>,
    regions: &[(u64, u64)],
    out: &mut Vec<u8>,
    used: &mut Vec<(u64, u32)>,
) -> Option<()> {
    out.clear();
    // Per stream (data, fetches): the region of its last access in the
    // chunk, and the regions it used last, as (start, end, id), the
    // latest first (the data of a program alternates between a few: its
    // stack, its heap, a table).
    let mut cur: [Option<u32>; 2] = [None; 2];
    let mut recent = [[(0u64, 0u64, 0u32); WAYS]; 2];
    let mut done = 0;
    for at in marks {
        let tag = *body.get(at).filter(|_| at >= done)?;
        out.extend_from_slice(&body[done..at]);
        let (s, k) = match tag {
            READ_AT => (0, 0),
            WRITE_AT => (0, 1),
            FETCH_AT => (1, 2),
            _ => return None,
        };
        let a = body.get(at + 1..at + 9)?;
        let a = u64::from_le_bytes([a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]]);
        // The difference is copied as it is, if at all: only its length
        // is read (its last byte is below 0x80).
        let diff = at + 9;
        let p = diff + 1 + body.get(diff..)?.iter().position(|&b| b < 0x80)?;
        let (start, id) = region(&mut recent[s], regions, a, used)?;
        if cur[s] == Some(id) {
            out.push(NEAR[k]);
            out.extend_from_slice(&body[diff..p]);
        } else {
            out.push(tag);
            varint::put(out, id.into());
            varint::put(out, a - start);
        }
        cur[s] = Some(id);
        done = p;
    }
    out.extend_from_slice(body.get(done..)?);
    Some(())
}

/// The start and id of the region holding `a`, looked up among `recent`
/// first (kept latest first).
#[inline]
fn region(
    recent: &mut [(u64, u64, u32); WAYS],
    regions: &[(u64, u64)],
    a: u64,
    used: &mut Vec<(u64, u32)>,
) -> Option<(u64, u32)> {
    if !(a >= recent[0].0 && a < recent[0].1) {
        let hit = (1..WAYS).find(|&k| a >= recent[k].0 && a < recent[k].1);
        let found = match hit {
            Some(k) => recent[k],
            None => {
                let i = regions.partition_point(|&(_, e)| e <= a);
                let &(st, e) = regions.get(i).filter(|&&(st, _)| a >= st)?;
                used.push((st, i as u32));
                (st, e, i as u32)
            }
        };
        // The latest first; the oldest (or the one found) goes.
        recent.copy_within(0..hit.unwrap_or(WAYS - 1), 1);
        recent[0] = found;
    }
    Some((recent[0].0, recent[0].2))
}
