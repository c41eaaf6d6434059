//! The file's fixed-size fields, all little-endian: read from a header
//! already in memory (its length checked where it was read, so a field
//! outside it is a bug, not bad input), and the heads of the file and of
//! its blocks written.

use std::io::Write;

#[inline]
fn bytes<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    b[at..at + N]
        .try_into()
        .expect("a field lies inside the header read")
}

/// The `u16` at byte `at` of `b`.
#[inline]
pub fn u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes(b, at))
}

/// The `u32` at byte `at` of `b`.
#[inline]
pub fn u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes(b, at))
}

/// The `u64` at byte `at` of `b`.
#[inline]
pub fn u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes(b, at))
}

/// The file's 16 fixed bytes: `magic`, the version, the flags (0) and the
/// header's length.
pub fn put_file_head(
    out: &mut impl Write,
    magic: &[u8; 8],
    version: u16,
    header_len: u32,
) -> std::io::Result<()> {
    out.write_all(magic)?;
    out.write_all(&version.to_le_bytes())?;
    out.write_all(&0u16.to_le_bytes())?;
    out.write_all(&header_len.to_le_bytes())
}

/// A block's head (a chunk, the index): its magic and three `u32` fields.
pub fn put_block_head(
    out: &mut impl Write,
    magic: &[u8; 4],
    fields: [u32; 3],
) -> std::io::Result<()> {
    out.write_all(magic)?;
    for f in fields {
        out.write_all(&f.to_le_bytes())?;
    }
    Ok(())
}

/// The end marker: `magic`, the records (`u64`), the chunks and the
/// index's length (`u32` each).
pub fn put_end(
    out: &mut impl Write,
    magic: &[u8; 4],
    records: u64,
    chunks: u32,
    index_len: u32,
) -> std::io::Result<()> {
    out.write_all(magic)?;
    out.write_all(&records.to_le_bytes())?;
    out.write_all(&chunks.to_le_bytes())?;
    out.write_all(&index_len.to_le_bytes())
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_read_back_as_written() {
        let mut b = Vec::new();
        super::put_file_head(&mut b, b"PTLTRACE", 0x0203, 0x0a0b_0c0d).unwrap();
        super::put_block_head(&mut b, b"PTLC", [1, 0x0102_0304, u32::MAX]).unwrap();
        assert_eq!(&b[..8], b"PTLTRACE");
        assert_eq!(super::u16(&b, 8), 0x0203);
        assert_eq!(b[8], 0x03, "least significant byte first");
        assert_eq!(super::u16(&b, 10), 0);
        assert_eq!(super::u32(&b, 12), 0x0a0b_0c0d);
        assert_eq!(super::u32(&b, 20), 1);
        assert_eq!(super::u32(&b, 24), 0x0102_0304);
        assert_eq!(super::u64(&b, 24), 0xffff_ffff_0102_0304);
    }
}
