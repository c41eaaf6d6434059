//! ChampSim's instruction traces: a sequence of fixed-size records (the
//! file usually xz-compressed; [`crate::source`] tells by content), each
//! one instruction, little-endian, laid out as ChampSim's C++ structs are
//! in memory (inc/trace_instruction.h in ChampSim's repository: no packing,
//! so 8-byte fields are 8-byte aligned).
//!
//! The standard `input_instr`, 64 bytes:
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
//! The CloudSuite `cloudsuite_instr` (ChampSim's `--cloudsuite` traces),
//! 96 bytes: ip 8, is_branch 1, branch_taken 1, destination_registers 4,
//! source_registers 4, 6 bytes of padding, destination_memory 4 x 8 at
//! 24, source_memory 4 x 8 at 56, asid 2 at 88, 6 bytes of padding.
//!
//! Each record is an instruction fetched at its ip, then its source
//! addresses as loads, then its destination addresses as stores (the
//! instruction reads before it writes).

use crate::{Access, ImportError};
use std::io::BufRead;
use std::path::Path;

/// Where a record's addresses are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of one record.
    pub size: usize,
    /// Offset and count of the destination (store) addresses.
    pub stores: (usize, usize),
    /// Offset and count of the source (load) addresses.
    pub loads: (usize, usize),
}

/// ChampSim's standard `input_instr`.
pub const STANDARD: Layout = Layout {
    size: 64,
    stores: (16, 2),
    loads: (32, 4),
};

/// ChampSim's `cloudsuite_instr`.
pub const CLOUDSUITE: Layout = Layout {
    size: 96,
    stores: (24, 4),
    loads: (56, 4),
};

impl Layout {
    /// The accesses of one record (`rec` is `self.size` bytes): its
    /// fetch, then its loads, then its stores.
    #[inline(always)]
    pub fn accesses(&self, rec: &[u8], f: &mut impl FnMut(Access)) {
        let word = |o: usize| trace::le::u64(rec, o);
        f(Access::fetch(word(0)));
        for i in 0..self.loads.1 {
            let a = word(self.loads.0 + 8 * i);
            if a != 0 {
                f(Access::load(a));
            }
        }
        for i in 0..self.stores.1 {
            let a = word(self.stores.0 + 8 * i);
            if a != 0 {
                f(Access::store(a));
            }
        }
    }
}

/// Reads the records of `input` (decompressed bytes; `path` names it in
/// errors), calling `f` per access (each record's fetch first); returns
/// the records (instructions).
///
/// The records are decoded where they lie in the input's buffer (a
/// record cut by the end of a buffer is put together in a small one), and
/// each layout's loop is compiled with its offsets as constants: this is
/// the importer's hot loop, beside the decompressor.
///
/// # Errors
/// A read fails ([`ImportError::Io`]); the bytes end inside a record (the
/// byte offset of that record in the decompressed stream).
pub fn read(
    input: &mut dyn BufRead,
    layout: Layout,
    path: &Path,
    f: &mut impl FnMut(Access),
) -> Result<u64, ImportError> {
    // The constant layouts by value: each call below is its own copy of
    // `records`, specialized.
    match layout {
        STANDARD => records(input, STANDARD, path, f),
        CLOUDSUITE => records(input, CLOUDSUITE, path, f),
        other => records(input, other, path, f),
    }
}

#[inline(always)]
fn records(
    input: &mut dyn BufRead,
    layout: Layout,
    path: &Path,
    f: &mut impl FnMut(Access),
) -> Result<u64, ImportError> {
    let size = layout.size;
    // A record cut by the end of a buffer: `have` bytes of it.
    let mut cut = vec![0u8; size];
    let mut have = 0usize;
    let mut records = 0u64;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(ImportError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        let mut rest = buf;
        if have > 0 {
            let take = (size - have).min(rest.len());
            cut[have..have + take].copy_from_slice(&rest[..take]);
            have += take;
            rest = &rest[take..];
            if have == size {
                layout.accesses(&cut, f);
                records += 1;
                have = 0;
            }
        }
        let mut whole = rest.chunks_exact(size);
        for rec in &mut whole {
            layout.accesses(rec, f);
        }
        records += (rest.len() / size) as u64;
        let tail = whole.remainder();
        if !tail.is_empty() {
            cut[..tail.len()].copy_from_slice(tail);
            have = tail.len();
        }
        input.consume(len);
    }
    if have != 0 {
        let offset = records * size as u64;
        let length = offset + have as u64;
        // A CloudSuite trace read as standard records ends cut unless its
        // length is a multiple of both sizes: say what it may be.
        let hint = if size == STANDARD.size && length.is_multiple_of(CLOUDSUITE.size as u64) {
            " (its length fits CloudSuite's 96-byte records: --cloudsuite?)"
        } else {
            ""
        };
        return Err(ImportError::Binary {
            path: path.to_path_buf(),
            offset,
            what: format!(
                "the records end inside a record ({have} of {size} bytes): the trace was cut short{hint}"
            ),
        });
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of `layout` with these addresses in its fields.
    fn record(layout: Layout, loads: &[u64], stores: &[u64]) -> Vec<u8> {
        let mut r = vec![0xAAu8; layout.size];
        for i in 0..layout.loads.1 {
            let a = loads.get(i).copied().unwrap_or(0);
            let o = layout.loads.0 + 8 * i;
            r[o..o + 8].copy_from_slice(&a.to_le_bytes());
        }
        for i in 0..layout.stores.1 {
            let a = stores.get(i).copied().unwrap_or(0);
            let o = layout.stores.0 + 8 * i;
            r[o..o + 8].copy_from_slice(&a.to_le_bytes());
        }
        r
    }

    #[test]
    fn the_fetch_comes_first_then_loads_then_stores_and_zero_is_no_access() {
        for layout in [STANDARD, CLOUDSUITE] {
            let mut bytes = record(layout, &[0x1000, 0, 0x2000], &[0x3000]);
            bytes[..8].copy_from_slice(&0x40_1000u64.to_le_bytes());
            let mut second = record(layout, &[], &[0, 0x4000]);
            second[..8].copy_from_slice(&0x40_1004u64.to_le_bytes());
            bytes.extend(second);
            let mut got = Vec::new();
            let n = read(&mut &bytes[..], layout, Path::new("t"), &mut |a| {
                got.push(a)
            })
            .unwrap();
            assert_eq!(n, 2);
            let want = [
                Access::fetch(0x40_1000),
                Access::load(0x1000),
                Access::load(0x2000),
                Access::store(0x3000),
                Access::fetch(0x40_1004),
                Access::store(0x4000),
            ];
            assert_eq!(got, want);
        }
    }

    /// Records cut by the ends of the input's buffers (buffers of a few
    /// bytes, shorter than a record) read as whole ones.
    #[test]
    fn records_cut_by_buffer_ends_are_put_together() {
        for layout in [STANDARD, CLOUDSUITE] {
            let mut bytes = Vec::new();
            let mut want = Vec::new();
            for i in 1..=40u64 {
                let (l, s) = (0x10_0000 * i, 0x20_0000 * i + 8);
                let mut r = record(layout, &[l], &[0, s]);
                r[..8].copy_from_slice(&(0x40_0000 + 4 * i).to_le_bytes());
                bytes.extend(r);
                want.extend([
                    Access::fetch(0x40_0000 + 4 * i),
                    Access::load(l),
                    Access::store(s),
                ]);
            }
            for cap in [1, 7, 63, 64, 95, 100, 4096] {
                let mut r = std::io::BufReader::with_capacity(cap, &bytes[..]);
                let mut got = Vec::new();
                let n = read(&mut r, layout, Path::new("t"), &mut |a| got.push(a)).unwrap();
                assert_eq!(n, 40);
                assert_eq!(got, want, "buffers of {cap} bytes");
            }
            // Cut short: the offset of the cut record, whatever the buffers.
            let cut = &bytes[..bytes.len() - 5];
            for cap in [7, 4096] {
                let mut r = std::io::BufReader::with_capacity(cap, cut);
                let e = read(&mut r, layout, Path::new("t"), &mut |_| {}).unwrap_err();
                let at = format!("byte {}:", 39 * layout.size);
                assert!(e.to_string().contains(&at), "{e}");
            }
        }
    }

    #[test]
    fn the_layouts_are_champsims_struct_sizes() {
        // The last address field ends where the struct's fields end.
        assert_eq!(STANDARD.loads.0 + 8 * STANDARD.loads.1, STANDARD.size);
        // CloudSuite: 88 bytes of fields up to asid, 2 of asid, padded to 8.
        assert_eq!(CLOUDSUITE.loads.0 + 8 * CLOUDSUITE.loads.1 + 2, 90);
        assert_eq!(CLOUDSUITE.size, 90usize.next_multiple_of(8));
    }
}
