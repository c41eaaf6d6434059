//! The trace file: a header, then chunks of zstd-compressed records, then
//! an end marker.
//!
//! ```text
//! offset 0   "PTLTRACE"            8 bytes
//!        8   version               u16 little-endian (this build writes 2, reads 1 and 2)
//!       10   flags                 u16, 0
//!       12   header length H       u32, at most 64 KiB
//!       16   header                H bytes of JSON ([`Header`])
//! then, repeated:
//!            "PTLC"                chunk magic
//!            raw length            u32: bytes of records once decompressed (at most 16 MiB)
//!            compressed length C   u32
//!            records               u32: how many records the chunk holds
//!            zstd frame            C bytes
//! then, version 2 only, at most once (the index, a [`Scan`]):
//!            "PTLI"                index magic
//!            raw length            u32: bytes of JSON once decompressed (at most 16 MiB)
//!            compressed length C   u32
//!            reserved              u32, 0
//!            zstd frame            C bytes, with its checksum
//! then:
//!            "PTLE"                end marker
//!            records               u64: records in the whole file
//!            chunks                u32
//!            index length          u32: bytes of the index right before
//!                                  the end marker (16 + C), 0 if none
//!                                  (version 1: reserved, 0)
//! ```
//!
//! The index holds what a first pass over the records learns (every
//! region's kind, largest size, native address and lifetime; the totals):
//! the writer keeps it as it writes ([`crate::regions::Builder`]), a
//! replay reads it from the end of the file ([`read_index`]) instead of
//! decompressing the whole trace twice. A reader of version 1 refuses a
//! version-2 file at byte 8, as every newer version; this build reads
//! version-1 files (no index: the replay makes the first pass).
//!
//! A file without its end marker was cut short (the recording was killed,
//! the disk filled): readers say so, with the byte offset where it ends.
//! Each chunk decodes on its own, so memory stays bounded by one chunk.

use crate::codec::{self, State};
use crate::record::Record;
use crate::regions::{Builder, Scan};
use serde::{Deserialize, Serialize};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The format version this build writes, and the newest it reads.
pub const VERSION: u16 = 2;
/// The first version with the index.
pub const VERSION_INDEX: u16 = 2;
const MAGIC: &[u8; 8] = b"PTLTRACE";
const CHUNK: &[u8; 4] = b"PTLC";
const INDEX: &[u8; 4] = b"PTLI";
const END: &[u8; 4] = b"PTLE";
/// Bytes of the end marker.
const END_LEN: u64 = 20;
const MAX_HEADER: u32 = 64 << 10;
/// A chunk's records never exceed this once decompressed: a reader's
/// memory is bounded by it.
pub const MAX_CHUNK_RAW: u32 = 16 << 20;
/// The writer closes a chunk once its records reach this size.
pub const CHUNK_TARGET: usize = 1 << 20;

/// What a trace says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Header {
    /// Who made it: "record", "trace", "champsim", "lackey", "test".
    pub source: String,
    /// The program and its arguments, if known.
    #[serde(default)]
    pub command: Vec<String>,
    /// The base page size the program ran with.
    pub page_size: u64,
    /// Virtual-address bits of the process that ran it (0: unknown).
    #[serde(default)]
    pub va_bits: u32,
    /// What the trace leaves out or approximates, in words.
    #[serde(default)]
    pub notes: Vec<String>,
    /// What the kernel counted while the trace was made (e.g.
    /// `minor_faults` from the program's rusage), for a replay to compare.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub observed: std::collections::BTreeMap<String, i64>,
}

/// Copies the trace at `src` to `dst` with `header` instead of its own
/// (the records are copied as they are): how a recorder that learns
/// figures at the end puts them in the header.
///
/// # Errors
/// As [`TraceReader::open`], and I/O errors writing `dst`.
pub fn rewrite_header(src: &Path, dst: &Path, header: &Header) -> Result<(), TraceError> {
    let r = TraceReader::open(src)?;
    let version = r.version;
    let mut input = r.input;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TraceError::Io { path, source }
    };
    let h = serde_json::to_vec(header).expect("a header always serializes");
    let mut out = BufWriter::new(std::fs::File::create(dst).map_err(io(dst))?);
    out.write_all(MAGIC).map_err(io(dst))?;
    out.write_all(&version.to_le_bytes()).map_err(io(dst))?;
    out.write_all(&0u16.to_le_bytes()).map_err(io(dst))?;
    out.write_all(&(h.len() as u32).to_le_bytes())
        .map_err(io(dst))?;
    out.write_all(&h).map_err(io(dst))?;
    std::io::copy(&mut input, &mut out).map_err(io(dst))?;
    out.flush().map_err(io(dst))
}

/// Why a trace could not be read or written.
#[derive(Debug, Error)]
pub enum TraceError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The bytes are not a well-formed trace of a version this build reads.
    #[error("{path}: byte {offset}: {what}")]
    Format {
        path: PathBuf,
        offset: u64,
        what: String,
    },
}

/// Writes a trace, one record at a time.
pub struct TraceWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    state: State,
    in_chunk: u32,
    records: u64,
    chunks: u32,
    level: i32,
    /// Made at the first chunk, reused by the others.
    compressor: Option<zstd::bulk::Compressor<'static>>,
    /// The index being learned (version 2); `None` when writing version 1
    /// or once a record broke invariant 1 or 2 (then no index is written
    /// and a reader's first pass reports the record).
    index: Option<Builder>,
    version: u16,
    /// Where the header put the version field, to rewrite it.
    header: Vec<u8>,
}

impl TraceWriter<BufWriter<std::fs::File>> {
    /// Creates (or truncates) the file at `path`.
    ///
    /// # Errors
    /// Any I/O error creating or writing the header.
    pub fn create(path: &Path, header: &Header) -> std::io::Result<Self> {
        let f = std::fs::File::create(path)?;
        TraceWriter::new(BufWriter::new(f), header)
    }
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace on `out` with `header`.
    ///
    /// # Errors
    /// Any I/O error writing the header.
    pub fn new(out: W, header: &Header) -> std::io::Result<Self> {
        let h = serde_json::to_vec(header).expect("a header always serializes");
        assert!(h.len() as u64 <= u64::from(MAX_HEADER), "header too long");
        Ok(TraceWriter {
            out,
            buf: Vec::with_capacity(CHUNK_TARGET + 64),
            state: State::default(),
            in_chunk: 0,
            records: 0,
            chunks: 0,
            level: 3,
            compressor: None,
            index: Some(Builder::default()),
            version: VERSION,
            header: h,
        })
    }

    /// Writes format version `v` (1 or 2; 1 has no index): how the tests
    /// make an older trace. Before the first record only.
    pub fn with_version(mut self, v: u16) -> Self {
        assert!((1..=VERSION).contains(&v), "no trace format version {v}");
        assert!(
            self.records == 0,
            "the version is chosen before the first record"
        );
        self.version = v;
        if v < VERSION_INDEX {
            self.index = None;
        }
        self
    }

    /// The file header, written before the first chunk (so that
    /// [`TraceWriter::with_version`] may still change it).
    fn write_header(&mut self) -> std::io::Result<()> {
        if self.header.is_empty() {
            return Ok(());
        }
        let h = std::mem::take(&mut self.header);
        self.out.write_all(MAGIC)?;
        self.out.write_all(&self.version.to_le_bytes())?;
        self.out.write_all(&0u16.to_le_bytes())?;
        self.out.write_all(&(h.len() as u32).to_le_bytes())?;
        self.out.write_all(&h)
    }

    /// Sets the zstd level (1 is fastest; 3 the default).
    pub fn with_level(mut self, level: i32) -> Self {
        self.level = level;
        self.compressor = None;
        self
    }

    /// Appends one record.
    ///
    /// # Errors
    /// Any I/O error writing a full chunk.
    #[inline]
    pub fn push(&mut self, r: &Record) -> std::io::Result<()> {
        if let Some(b) = &mut self.index {
            if b.record(r).is_err() {
                self.index = None;
            }
        }
        codec::encode(r, &mut self.state, &mut self.buf);
        self.in_chunk += 1;
        self.records += 1;
        if self.buf.len() >= CHUNK_TARGET {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Appends one access: [`TraceWriter::push`] of a `Record::Access`,
    /// for a tracer's hot path.
    ///
    /// # Errors
    /// Any I/O error writing a full chunk.
    #[inline]
    pub fn push_access(&mut self, id: u32, offset: u64, write: bool) -> std::io::Result<()> {
        // Accesses are checked by the replay, not by the index.
        if let Some(b) = &mut self.index {
            b.passed(1, 1);
        }
        codec::encode_access(id, offset, write, &mut self.state, &mut self.buf);
        self.in_chunk += 1;
        self.records += 1;
        if self.buf.len() >= CHUNK_TARGET {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Appends records already encoded in this format by someone else (a
    /// tracer that writes them as it goes): relative accesses (0x12, 0x13)
    /// and hits (0x18) only, `records` of them, continuing from the chunk's
    /// last access (if they hold a relative access, there must be one:
    /// [`TraceWriter::last_access`]), standing for `accesses` accesses
    /// (each access one, each `Hits` record its count);
    /// `last_offset` is the offset their last access reached (`None` if
    /// they are all hits). Returns whether the chunk was closed after them,
    /// so that the next access must name its region again.
    ///
    /// # Errors
    /// Any I/O error writing a full chunk.
    pub fn push_encoded(
        &mut self,
        bytes: &[u8],
        records: u32,
        accesses: u64,
        last_offset: Option<u64>,
    ) -> std::io::Result<bool> {
        if records == 0 {
            return Ok(false);
        }
        if let Some(b) = &mut self.index {
            b.passed(u64::from(records), accesses);
        }
        self.buf.extend_from_slice(bytes);
        if let Some(off) = last_offset {
            self.state.set_last_offset(off);
        }
        self.in_chunk += records;
        self.records += u64::from(records);
        if self.buf.len() >= CHUNK_TARGET {
            self.flush_chunk()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The chunk's last access (region, offset): what a relative access
    /// appended now is relative to.
    pub fn last_access(&self) -> Option<(u32, u64)> {
        self.state.last_access()
    }

    fn flush_chunk(&mut self) -> std::io::Result<()> {
        if self.in_chunk == 0 {
            return Ok(());
        }
        // The frame carries its checksum: a corrupt chunk is refused rather
        // than replayed as other accesses.
        let c = match &mut self.compressor {
            Some(c) => c,
            None => {
                let mut c = zstd::bulk::Compressor::new(self.level)?;
                c.include_checksum(true)?;
                self.compressor.insert(c)
            }
        };
        let z = c.compress(&self.buf)?;
        self.write_header()?;
        self.out.write_all(CHUNK)?;
        self.out.write_all(&(self.buf.len() as u32).to_le_bytes())?;
        self.out.write_all(&(z.len() as u32).to_le_bytes())?;
        self.out.write_all(&self.in_chunk.to_le_bytes())?;
        self.out.write_all(&z)?;
        self.buf.clear();
        self.state = State::default();
        self.in_chunk = 0;
        self.chunks += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Writes the last chunk and the end marker; returns the output.
    ///
    /// # Errors
    /// Any I/O error.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.flush_chunk()?;
        self.write_header()?;
        let mut index_len = 0u32;
        if let Some(b) = self.index.take() {
            let json = serde_json::to_vec(&b.finish()).expect("a scan always serializes");
            if json.len() <= MAX_CHUNK_RAW as usize {
                let mut c = zstd::bulk::Compressor::new(self.level)?;
                c.include_checksum(true)?;
                let z = c.compress(&json)?;
                self.out.write_all(INDEX)?;
                self.out.write_all(&(json.len() as u32).to_le_bytes())?;
                self.out.write_all(&(z.len() as u32).to_le_bytes())?;
                self.out.write_all(&0u32.to_le_bytes())?;
                self.out.write_all(&z)?;
                index_len = 16 + z.len() as u32;
            }
        }
        self.out.write_all(END)?;
        self.out.write_all(&self.records.to_le_bytes())?;
        self.out.write_all(&self.chunks.to_le_bytes())?;
        self.out.write_all(&index_len.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// One chunk's records, decompressed, not yet decoded.
pub struct RawChunk<'a> {
    /// Byte offset of the chunk in the file.
    pub at: u64,
    /// Records its header announces.
    pub count: u32,
    pub bytes: &'a [u8],
    path: &'a Path,
}

impl<'a> RawChunk<'a> {
    /// The chunk's records, one at a time.
    pub fn decoder(&self) -> codec::Decoder<'a> {
        codec::Decoder::new(self.bytes)
    }

    /// A record that did not decode, as an error naming the file and the
    /// chunk's offset.
    pub fn error(&self, e: codec::DecodeError) -> TraceError {
        TraceError::Format {
            path: self.path.to_path_buf(),
            offset: self.at,
            what: format!(
                "in the chunk at byte {}, byte {} of its records: {}",
                self.at, e.at, e.what
            ),
        }
    }

    /// Checks that `n` records were decoded, as the header says.
    ///
    /// # Errors
    /// [`TraceError::Format`] if not.
    pub fn check_count(&self, n: u64) -> Result<(), TraceError> {
        if n == u64::from(self.count) {
            return Ok(());
        }
        Err(TraceError::Format {
            path: self.path.to_path_buf(),
            offset: self.at,
            what: format!(
                "the chunk holds {n} records, its header says {}",
                self.count
            ),
        })
    }
}

/// Reads a trace, one chunk at a time.
pub struct TraceReader<R: Read> {
    pub(crate) input: R,
    path: PathBuf,
    offset: u64,
    header: Header,
    version: u16,
    raw: Vec<u8>,
    compressed: Vec<u8>,
    decompressor: zstd::bulk::Decompressor<'static>,
    records: u64,
    chunks: u32,
    ended: bool,
    /// Bytes of the index block passed over (0: none yet).
    index_len: u64,
}

impl TraceReader<BufReader<std::fs::File>> {
    /// Opens the trace at `path` and reads its header.
    ///
    /// # Errors
    /// [`TraceError::Io`] if it cannot be opened; [`TraceError::Format`] if
    /// it is not a trace or is of a newer version.
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let f = std::fs::File::open(path).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        TraceReader::new(BufReader::with_capacity(1 << 20, f), path)
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads the header from `input`; `path` names it in errors.
    ///
    /// # Errors
    /// As [`TraceReader::open`].
    pub fn new(input: R, path: &Path) -> Result<Self, TraceError> {
        let decompressor = zstd::bulk::Decompressor::new().map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut r = TraceReader {
            input,
            path: path.to_path_buf(),
            offset: 0,
            header: Header::default(),
            version: 0,
            raw: Vec::new(),
            compressed: Vec::new(),
            decompressor,
            records: 0,
            chunks: 0,
            ended: false,
            index_len: 0,
        };
        let mut fixed = [0u8; 16];
        r.fill(&mut fixed, "the file header")?;
        if &fixed[..8] != MAGIC {
            return Err(r.bad(0, "not a ptlab trace (it does not start with \"PTLTRACE\")"));
        }
        r.version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if r.version == 0 || r.version > VERSION {
            return Err(r.bad(
                8,
                format!(
                    "trace format version {} is newer than this build reads (at most {VERSION}); use a newer ptlab",
                    r.version
                ),
            ));
        }
        let hlen = u32::from_le_bytes(fixed[12..16].try_into().expect("4 bytes"));
        if hlen > MAX_HEADER {
            return Err(r.bad(
                12,
                format!("a header of {hlen} bytes (at most {MAX_HEADER})"),
            ));
        }
        let mut h = vec![0u8; hlen as usize];
        r.fill(&mut h, "the JSON header")?;
        r.header = serde_json::from_slice(&h)
            .map_err(|e| r.bad(16, format!("the JSON header does not parse: {e}")))?;
        Ok(r)
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The path the reader names in its errors.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The format version of the file.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// The byte offset the reader has reached.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn bad(&self, offset: u64, what: impl Into<String>) -> TraceError {
        TraceError::Format {
            path: self.path.clone(),
            offset,
            what: what.into(),
        }
    }

    /// Reads exactly `buf.len()` bytes; a short file is a format error that
    /// says where it ends.
    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<(), TraceError> {
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(self.bad(
                        self.offset + got as u64,
                        format!(
                            "the file ends inside {what} ({} of {} bytes): it was cut short",
                            got,
                            buf.len()
                        ),
                    ))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(TraceError::Io {
                        path: self.path.clone(),
                        source,
                    })
                }
            }
        }
        self.offset += got as u64;
        Ok(())
    }

    /// Decodes the next chunk into `out` (cleared first); `false` once the
    /// end marker has been read.
    ///
    /// # Errors
    /// [`TraceError::Format`] with the byte offset of what is wrong: a cut
    /// file, a bad chunk header, a frame that does not decompress, a record
    /// that does not decode.
    pub fn next_chunk(&mut self, out: &mut Vec<Record>) -> Result<bool, TraceError> {
        out.clear();
        let Some(chunk) = self.next_raw_chunk()? else {
            return Ok(false);
        };
        codec::decode_all(chunk.bytes, out).map_err(|e| chunk.error(e))?;
        chunk.check_count(out.len() as u64)?;
        Ok(true)
    }

    /// Reads the `comp_len` compressed bytes of the block (a chunk or the
    /// index) whose magic is at `at`, and decompresses them into `raw`,
    /// which must come to the `raw_len` bytes its header says. `reading`
    /// names what was being read when the file is cut short, `block` what
    /// failed to decompress (reported at the block's data, 16 bytes after
    /// its magic).
    fn read_frame(
        &mut self,
        at: u64,
        comp_len: u32,
        raw_len: u32,
        reading: &str,
        block: &str,
    ) -> Result<(), TraceError> {
        let mut comp = std::mem::take(&mut self.compressed);
        comp.resize(comp_len as usize, 0);
        let filled = self.fill(&mut comp, reading);
        self.compressed = comp;
        filled?;
        self.raw.clear();
        self.raw.reserve(raw_len as usize);
        let n = self
            .decompressor
            .decompress_to_buffer(&self.compressed, &mut self.raw)
            .map_err(|e| self.bad(at + 16, format!("{block} does not decompress: {e}")))?;
        if n != raw_len as usize {
            return Err(self.bad(
                at + 16,
                format!("{block} decompresses to {n} bytes, its header says {raw_len}"),
            ));
        }
        Ok(())
    }

    /// Reads and decompresses the next chunk, leaving its records to be
    /// decoded one at a time ([`RawChunk::decoder`]); `None` once the end
    /// marker has been read.
    ///
    /// # Errors
    /// As [`TraceReader::next_chunk`], except what only decoding finds.
    pub fn next_raw_chunk(&mut self) -> Result<Option<RawChunk<'_>>, TraceError> {
        if self.ended {
            return Ok(None);
        }
        let at = self.offset;
        let mut magic = [0u8; 4];
        self.fill(
            &mut magic,
            "a chunk header (no end marker: the trace was cut short)",
        )?;
        if &magic == END {
            let mut tail = [0u8; 16];
            self.fill(&mut tail, "the end marker")?;
            let total = u64::from_le_bytes(tail[..8].try_into().expect("8 bytes"));
            let chunks = u32::from_le_bytes(tail[8..12].try_into().expect("4 bytes"));
            let index_len = u32::from_le_bytes(tail[12..16].try_into().expect("4 bytes"));
            if self.version >= VERSION_INDEX && u64::from(index_len) != self.index_len {
                return Err(self.bad(
                    at + 16,
                    format!(
                        "the end marker gives an index of {index_len} bytes, the file holds {}",
                        self.index_len
                    ),
                ));
            }
            if total != self.records || chunks != self.chunks {
                return Err(self.bad(
                    at,
                    format!(
                        "the end marker counts {total} records in {chunks} chunks, the file holds {} in {}",
                        self.records, self.chunks
                    ),
                ));
            }
            self.ended = true;
            return Ok(None);
        }
        if &magic == INDEX && self.version >= VERSION_INDEX && self.index_len == 0 {
            // The index: a replay reads it first, from the end
            // (`read_index`); here its frame is only checked (it
            // decompresses, with its checksum, to its length).
            let mut head = [0u8; 12];
            self.fill(&mut head, "the index header")?;
            let raw_len = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
            let comp_len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
            if raw_len > MAX_CHUNK_RAW || comp_len > MAX_CHUNK_RAW + (MAX_CHUNK_RAW >> 4) {
                return Err(self.bad(
                    at + 8,
                    format!("an index of {comp_len} compressed bytes: at most {MAX_CHUNK_RAW}"),
                ));
            }
            self.read_frame(at, comp_len, raw_len, "the index", "the index")?;
            self.index_len = 16 + u64::from(comp_len);
            return self.next_raw_chunk();
        }
        if &magic != CHUNK || self.index_len != 0 {
            return Err(self.bad(
                at,
                format!(
                    "expected {} the end marker (\"PTLE\"), found {magic:02x?}",
                    if self.index_len != 0 {
                        ""
                    } else if self.version >= VERSION_INDEX {
                        "a chunk (\"PTLC\"), the index (\"PTLI\") or"
                    } else {
                        "a chunk (\"PTLC\") or"
                    }
                ),
            ));
        }
        let mut head = [0u8; 12];
        self.fill(&mut head, "a chunk header")?;
        let raw_len = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
        let comp_len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
        let count = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
        if raw_len > MAX_CHUNK_RAW || comp_len > MAX_CHUNK_RAW + (MAX_CHUNK_RAW >> 4) {
            return Err(self.bad(
                at + 4,
                format!(
                    "a chunk of {raw_len} bytes ({comp_len} compressed): at most {MAX_CHUNK_RAW}"
                ),
            ));
        }
        self.read_frame(
            at,
            comp_len,
            raw_len,
            "a chunk's compressed records",
            "the chunk",
        )?;
        self.records += u64::from(count);
        self.chunks += 1;
        Ok(Some(RawChunk {
            at,
            count,
            bytes: &self.raw,
            path: &self.path,
        }))
    }

    /// Calls `f` on every record of the rest of the file, chunk by chunk.
    ///
    /// # Errors
    /// As [`TraceReader::next_chunk`], or the first error `f` returns.
    pub fn for_each<E: From<TraceError>>(
        &mut self,
        mut f: impl FnMut(&Record) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut buf = Vec::new();
        while self.next_chunk(&mut buf)? {
            for r in &buf {
                f(r)?;
            }
        }
        Ok(())
    }
}

/// A trace's index (format version 2): what the first pass over its
/// records would learn, and where it lies in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub scan: Scan,
    /// Byte offset of the index block ("PTLI").
    pub at: u64,
}

/// Reads the index of the trace at `path` from the end of the file,
/// without reading its chunks: `None` for a version-1 trace or one written
/// without an index (then the first pass, [`crate::regions::scan`], gives
/// the same [`Scan`]).
///
/// # Errors
/// [`TraceError::Format`] with the byte offset: a file cut short (no end
/// marker), an index that is cut, does not decompress or parse, or whose
/// totals disagree with the end marker's.
pub fn read_index(path: &Path) -> Result<Option<Index>, TraceError> {
    let f = std::fs::File::open(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    read_index_from(f, path)
}

/// [`read_index`] of `input`, which `path` names in errors.
///
/// # Errors
/// As [`read_index`].
pub fn read_index_from<R: Read + Seek>(
    mut input: R,
    path: &Path,
) -> Result<Option<Index>, TraceError> {
    let io = |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bad = |offset: u64, what: String| TraceError::Format {
        path: path.to_path_buf(),
        offset,
        what,
    };
    let mut fixed = [0u8; 16];
    input.read_exact(&mut fixed).map_err(|_| {
        bad(
            0,
            "not a ptlab trace (shorter than its 16-byte file header)".into(),
        )
    })?;
    if &fixed[..8] != MAGIC {
        return Err(bad(
            0,
            "not a ptlab trace (it does not start with \"PTLTRACE\")".into(),
        ));
    }
    let version = u16::from_le_bytes([fixed[8], fixed[9]]);
    if version == 0 || version > VERSION {
        return Err(bad(
            8,
            format!(
                "trace format version {version} is newer than this build reads (at most {VERSION}); use a newer ptlab"
            ),
        ));
    }
    if version < VERSION_INDEX {
        return Ok(None);
    }
    let body = 16
        + u64::from(u32::from_le_bytes(
            fixed[12..16].try_into().expect("4 bytes"),
        ));
    let len = input.seek(SeekFrom::End(0)).map_err(io)?;
    if len < body + END_LEN {
        return Err(bad(
            len,
            "the file ends without its end marker (\"PTLE\"): it was cut short".into(),
        ));
    }
    let end_at = len - END_LEN;
    let mut end = [0u8; END_LEN as usize];
    input.seek(SeekFrom::Start(end_at)).map_err(io)?;
    input.read_exact(&mut end).map_err(io)?;
    if &end[..4] != END {
        return Err(bad(
            len,
            format!(
                "the file ends without its end marker (\"PTLE\" expected at byte {end_at}): it was cut short"
            ),
        ));
    }
    let records = u64::from_le_bytes(end[4..12].try_into().expect("8 bytes"));
    let index_len = u64::from(u32::from_le_bytes(end[16..20].try_into().expect("4 bytes")));
    if index_len == 0 {
        return Ok(None);
    }
    if index_len < 16 || index_len > end_at - body {
        return Err(bad(
            end_at + 16,
            format!(
                "the end marker gives an index of {index_len} bytes, which does not fit the file"
            ),
        ));
    }
    let at = end_at - index_len;
    let mut block = vec![0u8; index_len as usize];
    input.seek(SeekFrom::Start(at)).map_err(io)?;
    input.read_exact(&mut block).map_err(io)?;
    if &block[..4] != INDEX {
        return Err(bad(
            at,
            format!(
                "expected the index (\"PTLI\") here, found {:02x?}",
                &block[..4]
            ),
        ));
    }
    let raw_len = u32::from_le_bytes(block[4..8].try_into().expect("4 bytes"));
    let comp_len = u64::from(u32::from_le_bytes(
        block[8..12].try_into().expect("4 bytes"),
    ));
    if raw_len > MAX_CHUNK_RAW || 16 + comp_len != index_len {
        return Err(bad(
            at + 4,
            format!(
                "an index of {raw_len} bytes, {comp_len} compressed, in a block of {index_len}"
            ),
        ));
    }
    let json = zstd::bulk::Decompressor::new()
        .and_then(|mut d| d.decompress(&block[16..], raw_len as usize))
        .map_err(|e| bad(at + 16, format!("the index does not decompress: {e}")))?;
    if json.len() != raw_len as usize {
        return Err(bad(
            at + 16,
            format!(
                "the index decompresses to {} bytes, its header says {raw_len}",
                json.len()
            ),
        ));
    }
    let scan: Scan = serde_json::from_slice(&json)
        .map_err(|e| bad(at + 16, format!("the index does not parse: {e}")))?;
    if scan.records != records {
        return Err(bad(
            at,
            format!(
                "the index counts {} records, the end marker {records}",
                scan.records
            ),
        ));
    }
    if scan.regions.iter().any(|(&id, r)| r.id != id) {
        return Err(bad(at, "the index names a region under another id".into()));
    }
    Ok(Some(Index { scan, at }))
}

/// One chunk's records, decompressed, owned (what [`Prefetch`] hands over).
pub struct OwnedChunk {
    /// Byte offset of the chunk in the file.
    pub at: u64,
    /// Records its header announces.
    pub count: u32,
    pub bytes: Vec<u8>,
}

impl OwnedChunk {
    /// The chunk as [`RawChunk`], naming `path` in its errors.
    pub fn view<'a>(&'a self, path: &'a Path) -> RawChunk<'a> {
        RawChunk {
            at: self.at,
            count: self.count,
            bytes: &self.bytes,
            path,
        }
    }
}

impl<R: Read> TraceReader<R> {
    /// [`TraceReader::next_raw_chunk`] into `buf` (its old contents
    /// dropped, its allocation reused by the reader): (offset, records).
    ///
    /// # Errors
    /// As [`TraceReader::next_raw_chunk`].
    pub fn next_chunk_into(&mut self, buf: &mut Vec<u8>) -> Result<Option<(u64, u32)>, TraceError> {
        std::mem::swap(&mut self.raw, buf);
        let got = self.next_raw_chunk().map(|c| c.map(|c| (c.at, c.count)));
        std::mem::swap(&mut self.raw, buf);
        got
    }
}

/// Reads and decompresses a trace's chunks on a thread of its own, at most
/// `depth` chunks ahead of the consumer (a bounded channel), so a replay
/// overlaps its work with the reading and the zstd decompression. The
/// chunks come in the file's order, the reader's first error after the
/// chunks before it. Memory: at most `depth + 2` chunks' buffers.
pub struct Prefetch {
    rx: Option<std::sync::mpsc::Receiver<Result<OwnedChunk, TraceError>>>,
    /// Buffers handed back for reuse.
    back: Option<std::sync::mpsc::Sender<Vec<u8>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Prefetch {
    /// Starts reading `reader` (its header already read) on a new thread.
    pub fn new<R: Read + Send + 'static>(mut reader: TraceReader<R>, depth: usize) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel(depth.max(1));
        let (back, spare) = std::sync::mpsc::channel::<Vec<u8>>();
        let thread = std::thread::Builder::new()
            .name("ptlab-trace-read".into())
            .spawn(move || loop {
                let mut buf = spare.try_recv().unwrap_or_default();
                let sent = match reader.next_chunk_into(&mut buf) {
                    Ok(Some((at, count))) => tx.send(Ok(OwnedChunk {
                        at,
                        count,
                        bytes: buf,
                    })),
                    Ok(None) => return,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                // The consumer is gone (it stopped early): so is the reader.
                if sent.is_err() {
                    return;
                }
            })
            .expect("a thread can be started");
        Prefetch {
            rx: Some(rx),
            back: Some(back),
            thread: Some(thread),
        }
    }

    /// The next chunk; `None` after the last.
    ///
    /// # Errors
    /// What the reader raised, in its place in the file.
    pub fn next_chunk(&mut self) -> Result<Option<OwnedChunk>, TraceError> {
        match self.rx.as_ref().map(|rx| rx.recv()) {
            Some(Ok(Ok(c))) => Ok(Some(c)),
            Some(Ok(Err(e))) => Err(e),
            _ => Ok(None),
        }
    }

    /// Hands a chunk's buffer back for the reader to fill again.
    pub fn recycle(&self, chunk: OwnedChunk) {
        if let Some(b) = &self.back {
            let _ = b.send(chunk.bytes);
        }
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        // Closing the channel stops the reader at its next chunk.
        self.rx = None;
        self.back = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
