//! The index of a version-2 trace, read from the end of the file (the end
//! marker gives its length) without reading the chunks.

use super::{TraceError, END, END_LEN, INDEX, MAGIC, MAX_CHUNK_RAW, VERSION, VERSION_INDEX};
use crate::le;
use crate::regions::Scan;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

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
    let version = le::u16(&fixed, 8);
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
    let body = 16 + u64::from(le::u32(&fixed, 12));
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
    let records = le::u64(&end, 4);
    let index_len = u64::from(le::u32(&end, 16));
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
    let raw_len = le::u32(&block, 4);
    let comp_len = u64::from(le::u32(&block, 8));
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
    agrees(&scan, records).map_err(|what| bad(at, what))?;
    Ok(Some(Index { scan, at }))
}

/// Whether an index that parsed agrees with itself and with the end
/// marker's `records`.
fn agrees(scan: &Scan, records: u64) -> Result<(), String> {
    if scan.records != records {
        return Err(format!(
            "the index counts {} records, the end marker {records}",
            scan.records
        ));
    }
    if scan.regions.iter().any(|(&id, r)| r.id != id) {
        return Err("the index names a region under another id".into());
    }
    Ok(())
}
