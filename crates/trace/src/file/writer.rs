//! [`TraceWriter`]: records into chunks, each compressed as it fills, the
//! index learned as they go, then the end marker.

use super::Header;
use super::{
    CHUNK, CHUNK_TARGET, END, INDEX, MAGIC, MAX_CHUNK_RAW, MAX_HEADER, VERSION, VERSION_INDEX,
};
use crate::codec::{self, State};
use crate::le;
use crate::record::Record;
use crate::regions::Builder;
use std::io::{BufWriter, Write};
use std::path::Path;

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
        le::put_file_head(&mut self.out, MAGIC, self.version, h.len() as u32)?;
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

    /// Appends one instruction fetch: [`TraceWriter::push`] of a
    /// `Record::Fetch`, for an importer's hot path (the replay checks its
    /// offset, as an access's).
    ///
    /// # Errors
    /// Any I/O error writing a full chunk.
    #[inline]
    pub fn push_fetch(&mut self, id: u32, offset: u64) -> std::io::Result<()> {
        if let Some(b) = &mut self.index {
            b.fetched(1);
        }
        codec::encode_fetch(id, offset, &mut self.state, &mut self.buf);
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

    /// Appends a whole chunk encoded and compressed by someone else (an
    /// importer encoding parts of a trace on several threads): `raw` bytes
    /// of `accesses` accesses and `fetches` fetches (no other record,
    /// encoded from a fresh [`State`] with [`codec::encode_access`] and
    /// [`codec::encode_fetch`]), compressed as `frame` by a
    /// [`chunk_compressor`] at this writer's level. The chunk being
    /// filled is closed first.
    ///
    /// # Errors
    /// Any I/O error.
    pub fn push_chunk(
        &mut self,
        raw: usize,
        frame: &[u8],
        accesses: u32,
        fetches: u32,
    ) -> std::io::Result<()> {
        self.flush_chunk()?;
        let records = accesses + fetches;
        if let Some(b) = &mut self.index {
            b.passed(accesses.into(), accesses.into());
            b.fetched(fetches.into());
        }
        self.write_header()?;
        let head = [raw as u32, frame.len() as u32, records];
        le::put_block_head(&mut self.out, CHUNK, head)?;
        self.out.write_all(frame)?;
        self.records += u64::from(records);
        self.chunks += 1;
        Ok(())
    }

    /// The level chunks are compressed at.
    pub fn level(&self) -> i32 {
        self.level
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
        let c = match &mut self.compressor {
            Some(c) => c,
            None => self.compressor.insert(chunk_compressor(self.level)?),
        };
        let z = c.compress(&self.buf)?;
        self.write_header()?;
        let head = [self.buf.len() as u32, z.len() as u32, self.in_chunk];
        le::put_block_head(&mut self.out, CHUNK, head)?;
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
                let head = [json.len() as u32, z.len() as u32, 0];
                le::put_block_head(&mut self.out, INDEX, head)?;
                self.out.write_all(&z)?;
                index_len = 16 + z.len() as u32;
            }
        }
        le::put_end(&mut self.out, END, self.records, self.chunks, index_len)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A compressor of chunks at zstd `level`, as the writer's own: its frames
/// carry their checksum, so that a corrupt chunk is refused rather than
/// replayed as other accesses.
///
/// # Errors
/// zstd cannot make one (out of memory, a level out of range).
pub fn chunk_compressor(level: i32) -> std::io::Result<zstd::bulk::Compressor<'static>> {
    let mut c = zstd::bulk::Compressor::new(level)?;
    c.include_checksum(true)?;
    Ok(c)
}
