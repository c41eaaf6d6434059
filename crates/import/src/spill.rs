//! The spill: every access of an import, a few bytes each, kept in a
//! temporary file while the input is read (the regions, and so every
//! access's region and offset, are known only at its end), then encoded
//! into the trace's chunks.
//!
//! An access is LEB128 of the zigzag difference from the previous address
//! of its stream (data or fetches), its kind in the first byte's two low
//! bits (0 load, 1 store, 2 fetch; the first byte carries 5 bits of the
//! difference: at most [`MAX`] bytes).
//!
//! The spill is cut into [`Segment`]s as it is written, each starting
//! from both streams' addresses, so that segments are encoded and
//! compressed on one thread per core once the input is read: the
//! decompressor's core is free by then, and this is the only work an
//! import adds after the input ends. Each segment makes chunks of its own
//! (a chunk ends at a segment's end as well as at the writer's chunk size).

use std::io::Write;
use std::os::unix::fs::FileExt;
use trace::codec::{self, State};
use trace::file::CHUNK_TARGET;

/// Most bytes one access takes.
pub const MAX: usize = 10;
/// Bytes buffered before a write.
pub const BUF: usize = 1 << 20;
/// Bytes of spill a segment holds at least (but the last): about four
/// chunks of the trace, so that a segment's last, partial chunk is a
/// small part of its output.
const SEGMENT: u64 = 4 << 20;

/// A part of the spill that decodes on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Byte offset in the spill file, and length.
    pub offset: u64,
    pub len: u64,
    /// Accesses it holds.
    pub accesses: u64,
    /// The previous data address and fetch address at its start.
    pub start: [u64; 2],
}

/// Where the spill goes: the file, the bytes not yet written, the
/// segments so far.
pub struct Spill {
    file: std::fs::File,
    /// `buf[..len]`: not yet written; written once `len` reaches `cap`.
    buf: Box<[u8]>,
    pub len: usize,
    pub cap: usize,
    /// Bytes a segment holds at least.
    segment: u64,
    /// Bytes written to the file.
    written: u64,
    /// The segment being filled: its first byte and its start addresses,
    /// and the access count at its start.
    open: (u64, [u64; 2], u64),
    pub segments: Vec<Segment>,
    /// The first error writing the file (the rest are passed over).
    pub failed: Option<std::io::Error>,
}

impl Spill {
    pub fn new(file: std::fs::File) -> Spill {
        Spill::with_sizes(file, BUF, SEGMENT)
    }

    /// A spill buffering `buf` bytes (at least [`MAX`]) and cut into
    /// segments of at least `segment` bytes: tests make many small ones.
    pub fn with_sizes(file: std::fs::File, buf: usize, segment: u64) -> Spill {
        let cap = buf.max(MAX);
        Spill {
            file,
            buf: vec![0; cap + MAX].into_boxed_slice(),
            len: 0,
            cap,
            segment,
            written: 0,
            open: (0, [0; 2], 0),
            segments: Vec::new(),
            failed: None,
        }
    }

    /// Appends an access to the buffer: `kind` and the zigzag difference
    /// `z`.
    #[inline(always)]
    pub fn put(&mut self, kind: u8, z: u64) {
        let mut rest = z >> 5;
        let buf = &mut self.buf[self.len..self.len + MAX];
        buf[0] = kind | ((z & 0x1F) as u8) << 2 | u8::from(rest != 0) << 7;
        let mut n = 1;
        while rest != 0 {
            let b = (rest & 0x7F) as u8;
            rest >>= 7;
            buf[n] = b | u8::from(rest != 0) << 7;
            n += 1;
        }
        self.len += n;
    }

    /// Writes the buffer out; `accesses` (all so far) and `prev` (the
    /// streams' last addresses) close the segment if it is long enough,
    /// or anyway when `last`.
    #[cold]
    pub fn flush(&mut self, accesses: u64, prev: [u64; 2], last: bool) {
        if self.failed.is_none() {
            if let Err(e) = self.file.write_all(&self.buf[..self.len]) {
                self.failed = Some(e);
            }
        }
        self.written += self.len as u64;
        self.len = 0;
        let (offset, start, first) = self.open;
        let len = self.written - offset;
        if (len >= self.segment || last) && accesses > first {
            self.segments.push(Segment {
                offset,
                len,
                accesses: accesses - first,
                start,
            });
            self.open = (self.written, prev, accesses);
        }
    }

    pub fn file(&self) -> &std::fs::File {
        &self.file
    }
}

/// One access at the start of `b`: the difference from the previous
/// address of its stream (to add, wrapping), its kind and its length in
/// bytes; `None` if `b` ends first.
#[inline(always)]
pub fn decode(b: &[u8]) -> Option<(u64, u8, usize)> {
    let b0 = *b.first()?;
    let mut z = u64::from(b0 >> 2 & 0x1F);
    let mut n = 1;
    if b0 & 0x80 != 0 {
        let mut shift = 5;
        loop {
            let x = *b.get(n)?;
            z |= u64::from(x & 0x7F).checked_shl(shift).unwrap_or(0);
            shift += 7;
            n += 1;
            if x & 0x80 == 0 || n == MAX {
                break;
            }
        }
    }
    let d = (z >> 1) as i64 ^ -((z & 1) as i64);
    Some((d as u64, b0 & 3, n))
}

/// Regions each stream remembers while encoding.
const WAYS: usize = 4;

/// A chunk of the trace, encoded and compressed.
pub struct Chunk {
    pub raw: usize,
    pub frame: Vec<u8>,
    pub accesses: u32,
    pub fetches: u32,
}

/// Encodes segment `seg` of `file` into chunks compressed by `z`, each
/// address as its region's id and offset (`regions`: (start, end),
/// sorted, the id the index; every address of the spill in one).
///
/// # Errors
/// Reading the spill fails or it ends early; compressing fails.
pub fn encode(
    seg: &Segment,
    file: &std::fs::File,
    regions: &[(u64, u64)],
    z: &mut zstd::bulk::Compressor<'static>,
) -> std::io::Result<Vec<Chunk>> {
    let short = || {
        std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the importer's spill file ends early",
        )
    };
    let mut bytes = vec![0u8; usize::try_from(seg.len).map_err(|_| short())?];
    file.read_exact_at(&mut bytes, seg.offset)?;
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(CHUNK_TARGET + 2 * MAX);
    let mut st = State::default();
    let (mut accesses, mut fetches) = (0u32, 0u32);
    // Per stream (data, fetches): the regions it used last, as (start,
    // end, id), the latest first (the data of a program alternates
    // between a few: its stack, its heap, a table).
    let mut recent = [[(0u64, 0u64, 0u32); WAYS]; 2];
    let mut addr = seg.start;
    let mut at = 0;
    for _ in 0..seg.accesses {
        let (d, kind, n) = decode(&bytes[at..]).ok_or_else(short)?;
        at += n;
        let s = usize::from(kind == 2);
        let a = addr[s].wrapping_add(d);
        addr[s] = a;
        let r = &mut recent[s];
        if !(a >= r[0].0 && a < r[0].1) {
            let hit = (1..WAYS).find(|&k| a >= r[k].0 && a < r[k].1);
            let found = match hit {
                Some(k) => r[k],
                None => {
                    let i = regions.partition_point(|&(_, e)| e <= a);
                    let (st, e) = regions[i];
                    (st, e, i as u32)
                }
            };
            // The latest first; the oldest (or the one found) goes.
            r.copy_within(0..hit.unwrap_or(WAYS - 1), 1);
            r[0] = found;
        }
        let c = r[0];
        if kind == 2 {
            codec::encode_fetch(c.2, a - c.0, &mut st, &mut buf);
            fetches += 1;
        } else {
            codec::encode_access(c.2, a - c.0, kind == 1, &mut st, &mut buf);
            accesses += 1;
        }
        if buf.len() >= CHUNK_TARGET {
            out.push(Chunk {
                raw: buf.len(),
                frame: z.compress(&buf)?,
                accesses,
                fetches,
            });
            buf.clear();
            st = State::default();
            (accesses, fetches) = (0, 0);
        }
    }
    if !buf.is_empty() {
        out.push(Chunk {
            raw: buf.len(),
            frame: z.compress(&buf)?,
            accesses,
            fetches,
        });
    }
    Ok(out)
}
