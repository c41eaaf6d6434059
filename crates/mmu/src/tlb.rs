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
use crate::presence::Presence;

/// Permission and state bits of a TLB entry.
pub(crate) mod flags {
    pub const READ: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const USER: u8 = 4;
    /// The leaf's dirty bit was set when the entry was filled (or since).
    pub const DIRTY: u8 = 8;
}

/// The cached part of a translation, packed in one word so that the hit
/// path keeps it in a register: the physical base (aligned to at least
/// 4 KiB) with the `flags` in bits 3:0 and log2 of the size in bits 9:4.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TlbEntry(u64);

impl TlbEntry {
    #[inline(always)]
    pub(crate) fn new(pa_base: u64, flags: u8, shift: u8) -> TlbEntry {
        debug_assert!(pa_base & 0xfff == 0 && flags < 16 && shift < 64);
        TlbEntry(pa_base | u64::from(flags) | u64::from(shift) << 4)
    }
    /// Physical address of the entry's first byte.
    #[inline(always)]
    pub(crate) fn pa_base(self) -> u64 {
        self.0 & !0xfff
    }
    /// `flags` bits.
    #[inline(always)]
    pub(crate) fn flags(self) -> u8 {
        (self.0 & 0xf) as u8
    }
    /// log2 of the entry's size.
    #[inline(always)]
    pub(crate) fn shift(self) -> u8 {
        ((self.0 >> 4) & 0x3f) as u8
    }
    fn with_flags(self, bits: u8) -> TlbEntry {
        TlbEntry(self.0 | u64::from(bits))
    }
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

/// Entries of a way-prediction table, per page size.
const HINTS: usize = 256;

/// Fully associative arrays with more ways than this get a way predictor.
const HINT_MIN_WAYS: usize = 8;

/// Arrays with at least this many entries get a presence filter.
const FILTER_MIN_ENTRIES: usize = 64;

pub(crate) struct TlbArray {
    cache: Cache<TlbEntry>,
    /// The sizes this array holds, as log2, ascending (`nshifts` used).
    shifts: [u8; 8],
    nshifts: usize,
    /// For each size shift the array holds, its index in `shifts`.
    size_index: [u8; 64],
    /// Way prediction for wide fully associative arrays: per size, `HINTS`
    /// entry indices selected by the low bits of the page number at that
    /// size. A prediction is checked against the entry's tag, so a stale one
    /// only costs the scan it would have taken anyway.
    hints: Box<[u32]>,
    /// Which entries may cover a page, per size, for large arrays (a scan
    /// is as cheap in small ones).
    presence: Presence,
}

impl TlbArray {
    fn new(cache: Cache<TlbEntry>, sizes: &[u8], entries: usize, ways: usize) -> TlbArray {
        let mut shifts = [0; 8];
        let nshifts = sizes.len().min(8);
        shifts[..nshifts].copy_from_slice(&sizes[..nshifts]);
        let mut size_index = [0; 64];
        for (k, &sh) in shifts[..nshifts].iter().enumerate() {
            size_index[usize::from(sh)] = k as u8;
        }
        let hints = if cache.is_fully_associative() && ways > HINT_MIN_WAYS {
            vec![0; HINTS * nshifts].into_boxed_slice()
        } else {
            Box::new([])
        };
        TlbArray {
            cache,
            shifts,
            nshifts,
            size_index,
            hints,
            presence: Presence::new(
                if entries >= FILTER_MIN_ENTRIES {
                    // When full, at most 1 counter in 32 is non-zero
                    // (small arrays), about 1 in 20 at 3072 entries: a
                    // miss in Zen 4's L2 scans its set one time in 20
                    // (64 KiB of counters per size; 1 in 10 with half as
                    // many cost 19 instructions per miss more).
                    (entries * 32).next_power_of_two().min(1 << 16)
                } else {
                    0
                },
                nshifts,
            ),
        }
    }

    #[inline]
    fn set_for(&self, va: u64, shift: u8) -> usize {
        self.cache.set_of(va >> shift)
    }

    #[inline]
    fn hint_slot(k: usize, va: u64, shift: u8) -> usize {
        k * HINTS + ((va >> shift) as usize & (HINTS - 1))
    }

    /// The size index of an entry's size.
    #[inline(always)]
    fn k_of(&self, shift: u8) -> usize {
        usize::from(self.size_index[usize::from(shift & 63)])
    }

    /// Entry index matching `key` (any of the array's sizes).
    #[inline(always)]
    fn lookup(&mut self, va: u64, key: u64) -> Option<usize> {
        if self.presence.is_on() {
            let mut maybe = false;
            for k in 0..self.nshifts {
                let shift = self.shifts[k];
                if self.presence.maybe(k, va >> shift) {
                    maybe = true;
                    if !self.hints.is_empty() {
                        let i = self.hints[Self::hint_slot(k, va, shift)] as usize;
                        if self.cache.probe_at(i, key) {
                            return Some(i);
                        }
                    }
                }
            }
            if !maybe {
                return None;
            }
        }
        self.scan(va, key)
    }

    #[inline(always)]
    fn scan(&mut self, va: u64, key: u64) -> Option<usize> {
        if self.cache.is_fully_associative() {
            let found = self.cache.probe(0, key);
            return self.hinted(va, found);
        }
        for k in 0..self.nshifts {
            let set = self.set_for(va, self.shifts[k]);
            if let Some(i) = self.cache.probe(set, key) {
                return self.hinted(va, Some(i));
            }
        }
        None
    }

    /// Records the prediction for a found entry.
    #[inline]
    fn hinted(&mut self, va: u64, found: Option<usize>) -> Option<usize> {
        if let Some(i) = found {
            if !self.hints.is_empty() {
                let shift = self.cache.val(i).shift();
                self.hints[Self::hint_slot(self.k_of(shift), va, shift)] = i as u32;
            }
        }
        found
    }

    /// Inserts an entry known to be absent, keeping the filter exact.
    #[inline]
    fn insert(&mut self, va: u64, asid: u16, entry: TlbEntry) -> usize {
        let fs = entry.shift();
        let mask = tag_mask(u32::from(fs));
        let set = self.set_for(va, fs);
        let (i, evicted) = self
            .cache
            .insert_absent(set, key(va, asid) & mask, mask, entry);
        if let Some((old_tag, old)) = evicted {
            count_out(&mut self.presence, &self.size_index, old_tag, old);
        }
        self.presence.count(self.k_of(fs), va >> fs, true);
        if !self.hints.is_empty() {
            self.hints[Self::hint_slot(self.k_of(fs), va, fs)] = i as u32;
        }
        i
    }

    /// Empties the entries (all sets) whose `(tag, mask)` `f` selects,
    /// keeping the filter exact; returns how many.
    fn invalidate_where(&mut self, f: impl Fn(u64, u64) -> bool) -> u64 {
        let presence = &mut self.presence;
        let size_index = &self.size_index;
        self.cache.invalidate_all(|t, m, v| {
            let hit = f(t, m);
            if hit {
                count_out(presence, size_index, t, *v);
            }
            hit
        })
    }

    /// Whether the presence filter proves that no entry of any size
    /// covers `va` (for any ASID).
    #[inline]
    fn surely_absent(&self, va: u64) -> bool {
        self.presence.is_on()
            && (0..self.nshifts).all(|k| !self.presence.maybe(k, va >> self.shifts[k]))
    }

    /// Empties every entry of `asid` covering `va`; returns how many.
    fn invalidate_va(&mut self, va: u64, asid: u16) -> u64 {
        if self.surely_absent(va) {
            return 0;
        }
        let k = key(va, asid);
        let mut n = 0;
        for j in 0..self.nshifts {
            let set = self.set_for(va, self.shifts[j]);
            let presence = &mut self.presence;
            let size_index = &self.size_index;
            n += self
                .cache
                .invalidate_key(set, k, |t, v| count_out(presence, size_index, t, *v));
            if self.cache.is_fully_associative() {
                break; // one set holds every size
            }
        }
        n
    }
}

/// Counts entry `e`, tagged `tag`, out of its array's filter as it leaves
/// the array (evicted or invalidated). Not a method: the callers hold the
/// array's cache borrowed while they call it.
#[inline(always)]
fn count_out(presence: &mut Presence, size_index: &[u8; 64], tag: u64, e: TlbEntry) {
    let k = usize::from(size_index[usize::from(e.shift() & 63)]);
    presence.count(k, tag >> e.shift(), false);
}

/// Entries of a level's memo (a power of two).
const MEMO: usize = 512;
/// A memo slot that names no entry (array 255 does not exist).
const MEMO_EMPTY: u32 = u32::MAX;

/// One level of the TLB hierarchy.
pub(crate) struct TlbLevel {
    arrays: Vec<TlbArray>,
    fill_for: [Option<(u8, u8)>; 64],
    /// The entry that last answered for each 4 KiB page number modulo
    /// [`MEMO`], as `array << 24 | way`: a lookup first checks that entry's
    /// tag (one comparison, whatever the array's size and associativity),
    /// and scans only when it does not match. A stale memo costs only the
    /// scan; it never makes an entry match that does not. A level is filled
    /// for an address only after a lookup of the whole level missed it (see
    /// [`TlbLevel::fill`]), so at most one entry of a level covers an
    /// address: the memo answers with the entry the scan would find.
    /// None for a level whose arrays all predict their ways (wide fully
    /// associative ones, like Zen 4's L1): their hints already find an
    /// entry in one comparison, and a memo would only add work to misses.
    memo: Option<Box<[u32; MEMO]>>,
}

/// Where a lookup hit: array and way.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    array: u8,
    way: u32,
}

impl Slot {
    /// Names no entry (array 255 does not exist).
    pub(crate) const NONE: Slot = Slot {
        array: u8::MAX,
        way: 0,
    };
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
                let cache = Cache::new(
                    a.entries as usize,
                    a.ways as usize,
                    a.replacement,
                    seed.wrapping_mul(31).wrapping_add(i as u64),
                );
                TlbArray::new(cache, &shifts, a.entries as usize, a.ways as usize)
            })
            .collect();
        let mut fill_for = [None; 64];
        for (s, slot) in fill_for.iter_mut().enumerate() {
            let mut best: Option<(u8, u8)> = None;
            for (i, a) in arrays.iter().enumerate() {
                let held = &a.shifts[..a.nshifts];
                if let Some(&fs) = held.iter().rev().find(|&&fs| usize::from(fs) <= s) {
                    if best.is_none_or(|(_, b)| fs > b) {
                        best = Some((i as u8, fs));
                    }
                }
            }
            *slot = best;
        }
        let hinted = arrays.iter().all(|a| !a.hints.is_empty());
        TlbLevel {
            fill_for,
            memo: (!arrays.is_empty() && !hinted).then(|| Box::new([MEMO_EMPTY; MEMO])),
            arrays,
        }
    }

    #[inline(always)]
    fn memo_slot(va: u64) -> usize {
        (va >> 12) as usize & (MEMO - 1)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }

    /// The entry covering `va` for the ASID in `key`, if any.
    #[inline(always)]
    pub(crate) fn lookup(&mut self, va: u64, key: u64) -> Option<(Slot, TlbEntry)> {
        let mi = Self::memo_slot(va);
        let m = self.memo.as_ref().map_or(MEMO_EMPTY, |m| m[mi]);
        let (ai, way) = ((m >> 24) as usize, (m & 0xff_ffff) as usize);
        let found = |a: &TlbArray, ai: usize, way: usize| {
            let slot = Slot {
                array: ai as u8,
                way: way as u32,
            };
            Some((slot, a.cache.val(way)))
        };
        if let Some(a) = self.arrays.get_mut(ai) {
            if a.cache.probe_at(way, key) {
                return found(a, ai, way);
            }
        }
        for ai in 0..self.arrays.len() {
            let a = &mut self.arrays[ai];
            if let Some(way) = a.lookup(va, key) {
                if let Some(m) = &mut self.memo {
                    m[mi] = (ai as u32) << 24 | way as u32;
                }
                return found(a, ai, way);
            }
        }
        None
    }

    /// Marks the entry at `slot` used (its array's replacement state), as a
    /// lookup that hit it would.
    #[inline]
    pub(crate) fn touch(&mut self, slot: Slot) {
        self.arrays[usize::from(slot.array)]
            .cache
            .touch_at(slot.way as usize);
    }

    /// Whether a hit's replacement update may wait and be replayed later in
    /// the order of the hits (true for LRU, whose order after a run of
    /// touches depends only on each entry's last touch, and for random
    /// replacement, which keeps nothing; not for PLRU).
    pub(crate) fn touches_replayable(&self) -> bool {
        self.arrays.iter().all(|a| a.cache.touches_replayable())
    }

    /// Sets flag bits on the entry at `slot` (a dirty-bit update).
    pub(crate) fn set_flags(&mut self, slot: Slot, bits: u8) {
        let e = self.arrays[usize::from(slot.array)]
            .cache
            .val_mut(slot.way as usize);
        *e = e.with_flags(bits);
    }

    /// Caches the translation of `va` (a page of `2^size_shift` bytes whose
    /// byte `va` is at `pa`) as the largest piece this level can hold. The
    /// level must hold no entry for `va` (a lookup just missed).
    /// Returns the size shift used, or `None` if no array holds a size that fits.
    #[inline(always)]
    pub(crate) fn fill(
        &mut self,
        va: u64,
        asid: u16,
        pa: u64,
        size_shift: u32,
        flags: u8,
    ) -> Option<u8> {
        // A level that holds no such size (or nothing, as under the `none`
        // preset) costs a load and a branch.
        let (ai, fs) = self.fill_for[size_shift as usize & 63]?;
        let entry = TlbEntry::new(pa & !((1u64 << fs) - 1), flags, fs);
        let way = self.arrays[usize::from(ai)].insert(va, asid, entry);
        if let Some(m) = &mut self.memo {
            m[Self::memo_slot(va)] = u32::from(ai) << 24 | way as u32;
        }
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
            .map(|x| x.invalidate_where(|t, _| t & ASID_MASK == a))
            .sum()
    }

    /// Empties everything; returns how many entries were valid.
    pub(crate) fn flush_all(&mut self) -> u64 {
        self.arrays
            .iter_mut()
            .map(|x| x.invalidate_where(|_, _| true))
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
        assert_eq!(e.pa_base(), 0x1_0020_0000);
        assert!(
            l.lookup(0x4040_0000, key(0x4040_0000, 3)).is_none(),
            "next 2M piece"
        );
        assert_eq!(l.invalidate_va(0x4020_0000, 3), 1);
        assert_eq!(l.occupancy(), 0);
    }
}
