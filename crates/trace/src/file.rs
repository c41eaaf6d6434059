//! The trace file: a header, then chunks of zstd-compressed records, then
//! an end marker.
//!
//! ```text
//! offset 0   "PTLTRACE"            8 bytes
//!        8   version               u16 little-endian (this build: 1)
//!       10   flags                 u16, 0
//!       12   header length H       u32, at most 64 KiB
//!       16   header                H bytes of JSON ([`Header`])
//! then, repeated:
//!            "PTLC"                chunk magic
//!            raw length            u32: bytes of records once decompressed (at most 16 MiB)
//!            compressed length C   u32
//!            records               u32: how many records the chunk holds
//!            zstd frame            C bytes
//! then:
//!            "PTLE"                end marker
//!            records               u64: records in the whole file
//!            chunks                u32
//!            reserved              u32, 0
//! ```
//!
//! A file without its end marker was cut short (the recording was killed,
//! the disk filled): readers say so, with the byte offset where it ends.
//! Each chunk decodes on its own, so memory stays bounded by one chunk.

use crate::codec::{self, State};
use crate::record::Record;
use serde::{Deserialize, Serialize};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The format version this build writes, and the newest it reads.
pub const VERSION: u16 = 1;
const MAGIC: &[u8; 8] = b"PTLTRACE";
const CHUNK: &[u8; 4] = b"PTLC";
const END: &[u8; 4] = b"PTLE";
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
    let mut input = r.input;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TraceError::Io { path, source }
    };
    let h = serde_json::to_vec(header).expect("a header always serializes");
    let mut out = BufWriter::new(std::fs::File::create(dst).map_err(io(dst))?);
    out.write_all(MAGIC).map_err(io(dst))?;
    out.write_all(&VERSION.to_le_bytes()).map_err(io(dst))?;
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
    pub fn new(mut out: W, header: &Header) -> std::io::Result<Self> {
        let h = serde_json::to_vec(header).expect("a header always serializes");
        assert!(h.len() as u64 <= u64::from(MAX_HEADER), "header too long");
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&0u16.to_le_bytes())?;
        out.write_all(&(h.len() as u32).to_le_bytes())?;
        out.write_all(&h)?;
        Ok(TraceWriter {
            out,
            buf: Vec::with_capacity(CHUNK_TARGET + 64),
            state: State::default(),
            in_chunk: 0,
            records: 0,
            chunks: 0,
            level: 3,
            compressor: None,
        })
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
    /// [`TraceWriter::last_access`]);
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
        last_offset: Option<u64>,
    ) -> std::io::Result<bool> {
        if records == 0 {
            return Ok(false);
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
        self.out.write_all(END)?;
        self.out.write_all(&self.records.to_le_bytes())?;
        self.out.write_all(&self.chunks.to_le_bytes())?;
        self.out.write_all(&0u32.to_le_bytes())?;
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
        if &magic != CHUNK {
            return Err(self.bad(
                at,
                format!(
                    "expected a chunk (\"PTLC\") or the end marker (\"PTLE\"), found {magic:02x?}"
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
        let mut comp = std::mem::take(&mut self.compressed);
        comp.resize(comp_len as usize, 0);
        let filled = self.fill(&mut comp, "a chunk's compressed records");
        self.compressed = comp;
        filled?;
        self.raw.clear();
        self.raw.reserve(raw_len as usize);
        let n = self
            .decompressor
            .decompress_to_buffer(&self.compressed, &mut self.raw)
            .map_err(|e| self.bad(at + 16, format!("the chunk does not decompress: {e}")))?;
        if n != raw_len as usize {
            return Err(self.bad(
                at + 16,
                format!("the chunk decompresses to {n} bytes, its header says {raw_len}"),
            ));
        }
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
