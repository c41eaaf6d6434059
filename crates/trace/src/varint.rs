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
#[inline]
pub fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
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
