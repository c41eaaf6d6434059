//! The trace file: a header, then chunks of zstd-compressed records, then
//! an end marker.
//!
//! ```text
//! offset 0   "PTLTRACE"            8 bytes
//!        8   version               u16 little-endian (this build writes 3, reads 1 to 3)
//!       10   flags                 u16, 0
//!       12   header length H       u32, at most 64 KiB
//!       16   header                H bytes of JSON ([`Header`])
//! then, repeated:
//!            "PTLC"                chunk magic
//!            raw length            u32: bytes of records once decompressed (at most 16 MiB)
//!            compressed length C   u32
//!            records               u32: how many records the chunk holds
//!            zstd frame            C bytes
//! then, version 2 and later, at most once (the index, a [`Scan`]):
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
//!
//! The module's rooms: [`writer`] ([`TraceWriter`]), [`reader`]
//! ([`TraceReader`], one chunk at a time), [`index`] (the index read from
//! the end, [`read_index`]), [`prefetch`] (the reader on a thread of its
//! own, [`Prefetch`]); [`crate::le`] reads and writes their little-endian
//! fields.

mod index;
mod prefetch;
mod reader;
mod writer;

pub use index::{read_index, read_index_from, Index};
pub use prefetch::{OwnedChunk, Prefetch};
pub use reader::{RawChunk, TraceReader};
pub use writer::{chunk_compressor, TraceWriter};

use serde::{Deserialize, Serialize};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The format version this build writes, and the newest it reads.
pub const VERSION: u16 = 3;
/// The first version with the index.
pub const VERSION_INDEX: u16 = 2;
/// The first version with instruction fetches (`Fetch` records, tags 0x14
/// and 0x15): a reader of version 2 would stop at their unknown tag, so
/// it refuses the file at byte 8 instead.
pub const VERSION_FETCH: u16 = 3;
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
    let version = r.version();
    let mut input = r.input;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TraceError::Io { path, source }
    };
    let h = serde_json::to_vec(header).expect("a header always serializes");
    let mut out = BufWriter::new(std::fs::File::create(dst).map_err(io(dst))?);
    crate::le::put_file_head(&mut out, MAGIC, version, h.len() as u32).map_err(io(dst))?;
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
