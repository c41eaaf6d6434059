//! [`TraceReader`]: the header, then one chunk at a time, each checked
//! (magic, lengths, the zstd frame's checksum, the record count) and the
//! end marker held to what was read.

use super::{
    Header, TraceError, CHUNK, END, INDEX, MAGIC, MAX_CHUNK_RAW, MAX_HEADER, VERSION, VERSION_INDEX,
};
use crate::codec;
use crate::le;
use crate::record::Record;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// One chunk's records, decompressed, not yet decoded.
pub struct RawChunk<'a> {
    /// Byte offset of the chunk in the file.
    pub at: u64,
    /// Records its header announces.
    pub count: u32,
    pub bytes: &'a [u8],
    pub(super) path: &'a Path,
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
        r.version = le::u16(&fixed, 8);
        if r.version == 0 || r.version > VERSION {
            return Err(r.bad(
                8,
                format!(
                    "trace format version {} is newer than this build reads (at most {VERSION}); use a newer ptlab",
                    r.version
                ),
            ));
        }
        let hlen = le::u32(&fixed, 12);
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
            let total = le::u64(&tail, 0);
            let chunks = le::u32(&tail, 8);
            let index_len = le::u32(&tail, 12);
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
            let raw_len = le::u32(&head, 0);
            let comp_len = le::u32(&head, 4);
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
        let raw_len = le::u32(&head, 0);
        let comp_len = le::u32(&head, 4);
        let count = le::u32(&head, 8);
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
