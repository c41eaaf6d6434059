//! LEB128 variable-length integers and zigzag signed deltas: small numbers
//! (region ids, the 8-byte stride of a sequential scan) take one byte.

/// Appends `v` as unsigned LEB128.
#[inline]
pub fn put(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Reads an unsigned LEB128 at `*pos`, advancing it; `None` if the bytes
/// end first or the number does not fit 64 bits.
///
/// Numbers of one to four bytes (below 2^28: every region id and the
/// delta of an access within 128 MiB of the one before) are read with one
/// bounds check, the rest byte by byte ([`get_long`]); both read the same
/// (a property test compares them on any bytes).
#[inline]
pub fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    if let Some(&[b0, b1, b2, b3, ..]) = buf.get(*pos..) {
        if b0 < 0x80 {
            *pos += 1;
            return Some(u64::from(b0));
        }
        let lo = u64::from(b0 & 0x7f);
        if b1 < 0x80 {
            *pos += 2;
            return Some(lo | u64::from(b1) << 7);
        }
        let mid = lo | u64::from(b1 & 0x7f) << 7;
        if b2 < 0x80 {
            *pos += 3;
            return Some(mid | u64::from(b2) << 14);
        }
        if b3 < 0x80 {
            *pos += 4;
            return Some(mid | u64::from(b2 & 0x7f) << 14 | u64::from(b3) << 21);
        }
    }
    get_long(buf, pos)
}

/// [`get`] byte by byte: any length, near the end of `buf`.
#[inline(never)]
pub fn get_long(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Zigzag: small magnitudes of either sign become small unsigned numbers.
#[inline]
pub fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

/// The inverse of [`zigzag`].
#[inline]
pub fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(v: u64) {
            let mut b = Vec::new();
            put(&mut b, v);
            let mut pos = 0;
            prop_assert_eq!(get(&b, &mut pos), Some(v));
            prop_assert_eq!(pos, b.len());
        }

        /// The four-byte fast path reads what the byte loop reads, on
        /// any bytes (cut, overlong, at any position), and stops at the
        /// same place.
        #[test]
        fn get_reads_as_the_byte_loop(buf in prop::collection::vec(prop_oneof![any::<u8>(), 0x80u8..], 0..14), at in 0usize..16) {
            let (mut p, mut q) = (at, at);
            let (a, b) = (get(&buf, &mut p), get_long(&buf, &mut q));
            prop_assert_eq!(a, b);
            if a.is_some() {
                prop_assert_eq!(p, q);
            }
        }

        #[test]
        fn zigzag_round_trip(d: i64) {
            prop_assert_eq!(unzigzag(zigzag(d)), d);
        }
    }

    #[test]
    fn small_values_take_one_byte() {
        let mut b = Vec::new();
        put(&mut b, zigzag(8));
        put(&mut b, zigzag(-8));
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn a_cut_number_is_refused() {
        let mut b = Vec::new();
        put(&mut b, 1 << 40);
        b.pop();
        assert_eq!(get(&b, &mut 0), None);
    }

    #[test]
    fn an_overlong_number_is_refused() {
        let b = [0xffu8; 11];
        assert_eq!(get(&b, &mut 0), None);
    }
}
