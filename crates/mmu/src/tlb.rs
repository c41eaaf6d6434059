//! TLB levels: the arrays of one level, looked up together, filled with the
//! largest entry size they hold that fits the translation.
//!
//! An entry caches one translation piece: its virtual base and size, the
//! physical base, the permissions and whether the page is known dirty
//! ([`TlbEntry`]). Entries are tagged with the ASID (x86 PCID, ARM ASID,
//! RISC-V ASID): a flush of one address space leaves the others.
//!
//! ## Invariants
//!
//! - `fill_for[s]` names, for a translation of `2^s` bytes, the array and
//!   entry size the level fills: the array holding the largest size `<= 2^s`
//!   (the first such array on ties), or none.
//! - Every entry of an array has one of that array's sizes, and sits in the
//!   set its virtual page number at that size selects.

use crate::cache::{Cache, ASID_MASK};
use crate::config::TlbArrayConfig;

/// Permission and state bits of a TLB entry.
pub(crate) mod flags {
    pub const READ: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const USER: u8 = 4;
    /// The leaf's dirty bit was set when the entry was filled (or since).
    pub const DIRTY: u8 = 8;
}

/// The cached part of a translation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TlbEntry {
    /// Physical address of the entry's first byte.
    pub pa_base: u64,
    pub flags: u8,
    /// log2 of the entry's size.
    pub shift: u8,
}

/// The key every lookup compares: the address's 4 KiB page and the ASID.
#[inline]
pub(crate) fn key(va: u64, asid: u16) -> u64 {
    (va & !ASID_MASK) | u64::from(asid)
}

#[inline]
fn tag_mask(shift: u32) -> u64 {
    !((1u64 << shift) - 1) | ASID_MASK
}

pub(crate) struct TlbArray {
    cache: Cache<TlbEntry>,
    /// The sizes this array holds, as log2, ascending.
    shifts: Box<[u8]>,
}

impl TlbArray {
    #[inline]
    fn set_for(&self, va: u64, shift: u8) -> usize {
        self.cache.set_of(va >> shift)
    }

    /// Way index of the entry matching `key` (any of the array's sizes).
    #[inline]
    fn lookup(&mut self, va: u64, key: u64) -> Option<usize> {
        if self.cache.is_fully_associative() {
            return self.cache.probe(0, key);
        }
        for k in 0..self.shifts.len() {
            let set = self.set_for(va, self.shifts[k]);
            if let Some(i) = self.cache.probe(set, key) {
                return Some(i);
            }
        }
        None
    }

    /// Empties every entry of `asid` covering `va`; returns how many.
    fn invalidate_va(&mut self, va: u64, asid: u16) -> u64 {
        let k = key(va, asid);
        if self.cache.is_fully_associative() {
            return self.cache.invalidate_in_set(0, |t, m, _| k & m == t);
        }
        let mut n = 0;
        for j in 0..self.shifts.len() {
            let set = self.set_for(va, self.shifts[j]);
            n += self.cache.invalidate_in_set(set, |t, m, _| k & m == t);
        }
        n
    }
}

/// One level of the TLB hierarchy.
pub(crate) struct TlbLevel {
    arrays: Vec<TlbArray>,
    fill_for: [Option<(u8, u8)>; 64],
}

/// Where a lookup hit: array and way.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    array: u8,
    way: u32,
}

impl TlbLevel {
    /// Builds the level for a geometry whose hardware page is `2^hw_shift`
    /// (resolving [`crate::config::PageSize::Base`]). `seed` varies per
    /// CPU and level so that random replacement differs between them.
    pub(crate) fn new(cfg: &[TlbArrayConfig], hw_shift: u32, seed: u64) -> TlbLevel {
        let arrays: Vec<TlbArray> = cfg
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let mut shifts: Vec<u8> = a
                    .sizes
                    .iter()
                    .map(|s| s.bytes(hw_shift).trailing_zeros() as u8)
                    .collect();
                shifts.sort_unstable();
                shifts.dedup();
                TlbArray {
                    cache: Cache::new(
                        a.entries as usize,
                        a.ways as usize,
                        a.replacement,
                        seed.wrapping_mul(31).wrapping_add(i as u64),
                    ),
                    shifts: shifts.into_boxed_slice(),
                }
            })
            .collect();
        let mut fill_for = [None; 64];
        for (s, slot) in fill_for.iter_mut().enumerate() {
            let mut best: Option<(u8, u8)> = None;
            for (i, a) in arrays.iter().enumerate() {
                if let Some(&fs) = a.shifts.iter().rev().find(|&&fs| usize::from(fs) <= s) {
                    if best.is_none_or(|(_, b)| fs > b) {
                        best = Some((i as u8, fs));
                    }
                }
            }
            *slot = best;
        }
        TlbLevel { arrays, fill_for }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }

    /// The entry covering `va` for the ASID in `key`, if any.
    #[inline]
    pub(crate) fn lookup(&mut self, va: u64, key: u64) -> Option<(Slot, TlbEntry)> {
        for (ai, a) in self.arrays.iter_mut().enumerate() {
            if let Some(way) = a.lookup(va, key) {
                let e = a.cache.val(way);
                return Some((
                    Slot {
                        array: ai as u8,
                        way: way as u32,
                    },
                    e,
                ));
            }
        }
        None
    }

    /// Sets flag bits on the entry at `slot` (a dirty-bit update).
    pub(crate) fn set_flags(&mut self, slot: Slot, bits: u8) {
        self.arrays[usize::from(slot.array)]
            .cache
            .val_mut(slot.way as usize)
            .flags |= bits;
    }

    /// Caches the translation of `va` (a page of `2^size_shift` bytes whose
    /// byte `va` is at `pa`) as the largest piece this level can hold.
    /// Returns the size shift used, or `None` if no array holds a size that fits.
    pub(crate) fn fill(
        &mut self,
        va: u64,
        asid: u16,
        pa: u64,
        size_shift: u32,
        flags: u8,
    ) -> Option<u8> {
        let (ai, fs) = self.fill_for[size_shift as usize]?;
        let a = &mut self.arrays[usize::from(ai)];
        let mask = tag_mask(u32::from(fs));
        let set = a.set_for(va, fs);
        let entry = TlbEntry {
            pa_base: pa & !((1u64 << fs) - 1),
            flags,
            shift: fs,
        };
        a.cache.insert(set, key(va, asid) & mask, mask, entry);
        Some(fs)
    }

    /// Empties every entry of `asid` covering `va`; returns how many.
    pub(crate) fn invalidate_va(&mut self, va: u64, asid: u16) -> u64 {
        self.arrays
            .iter_mut()
            .map(|a| a.invalidate_va(va, asid))
            .sum()
    }

    /// Empties every entry of `asid`; returns how many.
    pub(crate) fn flush_asid(&mut self, asid: u16) -> u64 {
        let a = u64::from(asid);
        self.arrays
            .iter_mut()
            .map(|x| x.cache.invalidate_all(|t, _, _| t & ASID_MASK == a))
            .sum()
    }

    /// Empties everything; returns how many entries were valid.
    pub(crate) fn flush_all(&mut self) -> u64 {
        self.arrays
            .iter_mut()
            .map(|x| x.cache.invalidate_all(|_, _, _| true))
            .sum()
    }

    /// Valid entries over all arrays.
    pub(crate) fn occupancy(&self) -> usize {
        self.arrays.iter().map(|a| a.cache.occupancy()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{PageSize, Replacement};

    fn arr(entries: u32, ways: u32, sizes: &[u64]) -> TlbArrayConfig {
        TlbArrayConfig {
            name: "t".into(),
            entries,
            ways,
            sizes: sizes.iter().map(|&b| PageSize::Bytes(b)).collect(),
            replacement: Replacement::Lru,
        }
    }

    #[test]
    fn fills_choose_the_largest_size_that_fits() {
        // Like AMD's L2: 4K and 2M only.
        let l = TlbLevel::new(&[arr(8, 2, &[4096, 2 << 20])], 12, 1);
        assert_eq!(l.fill_for[12], Some((0, 12)));
        assert_eq!(l.fill_for[16], Some((0, 12)), "64K splinters to 4K");
        assert_eq!(l.fill_for[30], Some((0, 21)), "1G smashes to 2M");
        assert_eq!(l.fill_for[11], None);
        // Like Intel's L1: one array per size.
        let l = TlbLevel::new(
            &[
                arr(4, 4, &[4096]),
                arr(4, 4, &[2 << 20]),
                arr(2, 2, &[1 << 30]),
            ],
            12,
            1,
        );
        assert_eq!(l.fill_for[21], Some((1, 21)));
        assert_eq!(l.fill_for[30], Some((2, 30)));
        assert_eq!(l.fill_for[39], Some((2, 30)));
    }

    #[test]
    fn splintered_entries_cover_only_their_piece() {
        let mut l = TlbLevel::new(&[arr(8, 2, &[4096, 2 << 20])], 12, 1);
        // A 1 GiB page at va 0x4000_0000 -> pa 0x1_0000_0000, accessed at +0x30_1234.
        let va = 0x4030_1234;
        let pa = 0x1_0030_1234;
        assert_eq!(l.fill(va, 3, pa, 30, flags::READ), Some(21));
        let (_, e) = l
            .lookup(0x4021_0000, key(0x4021_0000, 3))
            .expect("same 2M piece");
        assert_eq!(e.pa_base, 0x1_0020_0000);
        assert!(
            l.lookup(0x4040_0000, key(0x4040_0000, 3)).is_none(),
            "next 2M piece"
        );
        assert_eq!(l.invalidate_va(0x4020_0000, 3), 1);
        assert_eq!(l.occupancy(), 0);
    }
}
