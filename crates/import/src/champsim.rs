//! ChampSim's instruction traces: an xz-compressed sequence of 64-byte
//! `input_instr` records, little-endian:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | ip |
//! | 8 | 1 | is_branch |
//! | 9 | 1 | branch_taken |
//! | 10 | 2 | destination_registers (one byte each) |
//! | 12 | 4 | source_registers |
//! | 16 | 16 | destination_memory: 2 addresses (0: none) |
//! | 32 | 32 | source_memory: 4 addresses (0: none) |
//!
//! Each record's source addresses are loads, its destination addresses
//! stores, in that order (the instruction reads before it writes).

use crate::{Access, ImportError};
use std::io::Read;
use std::path::Path;

pub const RECORD: usize = 64;

/// The accesses of one record, loads then stores.
pub fn accesses(rec: &[u8; RECORD], f: &mut dyn FnMut(Access)) {
    let word = |o: usize| u64::from_le_bytes(rec[o..o + 8].try_into().expect("8 bytes"));
    for i in 0..4 {
        let a = word(32 + 8 * i);
        if a != 0 {
            f(Access {
                addr: a,
                write: false,
            });
        }
    }
    for i in 0..2 {
        let a = word(16 + 8 * i);
        if a != 0 {
            f(Access {
                addr: a,
                write: true,
            });
        }
    }
}

/// Reads the trace at `path`, calling `f` per access; returns the records.
///
/// # Errors
/// The file cannot be opened; it is not xz (the byte offset in the file
/// where decompression failed); it ends inside a record (the byte offset
/// of that record in the decompressed stream).
pub fn read(path: &Path, f: &mut dyn FnMut(Access)) -> Result<u64, ImportError> {
    let file = std::fs::File::open(path).map_err(|source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut z =
        xz2::read::XzDecoder::new_multi_decoder(std::io::BufReader::with_capacity(1 << 20, file));
    let mut buf = vec![0u8; RECORD * 16384];
    let mut have = 0usize;
    let mut offset = 0u64;
    let mut records = 0u64;
    loop {
        let n = match z.read(&mut buf[have..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(ImportError::Binary {
                    path: path.to_path_buf(),
                    offset: z.total_in(),
                    what: format!(
                        "not a valid xz stream ({e}) after {} bytes of records",
                        offset + have as u64
                    ),
                })
            }
        };
        if n == 0 {
            break;
        }
        have += n;
        let whole = have / RECORD * RECORD;
        for rec in buf[..whole].chunks_exact(RECORD) {
            accesses(rec.try_into().expect("64 bytes"), f);
        }
        records += (whole / RECORD) as u64;
        offset += whole as u64;
        buf.copy_within(whole..have, 0);
        have -= whole;
    }
    if have != 0 {
        return Err(ImportError::Binary {
            path: path.to_path_buf(),
            offset,
            what: format!(
                "the records end inside a record ({have} of {RECORD} bytes): the trace was cut short"
            ),
        });
    }
    Ok(records)
}
