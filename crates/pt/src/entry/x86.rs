//! x86-64 paging entries, 4-level and 5-level (Intel SDM vol. 3A, §4.5
//! "4-Level Paging and 5-Level Paging", tables 4-14 to 4-20; memory typing
//! §4.9).
//!
//! One 64-bit word per entry, the same layout at every level:
//!
//! ```text
//!  63  62..52   51..12          11..9  8  7      6  5  4    3    2   1   0
//!  XD  ignored  address         AVL    G  PS/PAT D  A  PCD  PWT  US  RW  P
//! ```
//!
//! - **P** (0) present. `P = 0` decodes to [`Entry::Invalid`] whatever the
//!   other bits hold (Linux keeps swap and PROT_NONE state there).
//! - **PS** (7) on a level above the PTE level: 1 = the entry maps a page
//!   (2 MiB in a PDE, 1 GiB in a PDPTE), 0 = it points to a table. At the PTE
//!   level every present entry is a 4 KiB page and bit 7 is its PAT bit.
//! - **Address**: bits 51:12 for a table or a 4 KiB page; 51:21 for a 2 MiB
//!   page and 51:30 for a 1 GiB page, whose bit 12 is the PAT bit and whose
//!   bits 20:13 / 29:13 are reserved. Bits 51:M (M = the geometry's
//!   `oa_bits`, MAXPHYADDR) are reserved.
//! - **XD** (63) execute-disable; IA32_EFER.NXE is assumed set (Linux sets it
//!   whenever the CPU has NX), so bit 63 is never reserved.
//!
//! ## Neutral view
//!
//! - Table entries are written as Linux writes them, `_PAGE_TABLE =
//!   P | RW | US | A | D` (0x67): the upper levels never restrict access, the
//!   leaf decides. Decoding a table ignores its flag bits (restrictions on
//!   upper levels and PWT/PCD of table entries are not modeled).
//! - Leaf: a present x86 page is always readable, so `perms.read` must be
//!   true; `write = RW`, `user = US`, `exec = !XD`, `global = G`,
//!   `accessed = A`, `dirty = D`.
//! - Memory type, with the PAT bit always 0 and Linux's PAT layout (entries
//!   0 to 3 = WB, WC, UC-, UC): `Normal` = PWT 0 PCD 0 (PAT 0, write-back);
//!   `NonCacheable` = PCD (PAT 2, UC-); `Device` = PCD | PWT (PAT 3, UC).
//!   A leaf with the PAT bit set or with PWT alone selects a type the neutral
//!   view cannot name: decode rejects it rather than guess.
//! - x86-64 has no contiguous entries: a contiguous leaf is a caller bug
//!   (debug-asserted).
//!
//! ## Decode errors
//!
//! [`DecodeError::Reserved`] for PS set at a level where the geometry has no
//! leaves (architecturally reserved in a PML4E or PML5E), address bits at or
//! above MAXPHYADDR, and the memory types above; [`DecodeError::Misaligned`]
//! for a 2 MiB or 1 GiB page with reserved low address bits set.

use super::{Attrs, DecodeError, Entry, MemType, Perms};
use crate::layout::Layout;

/// Present.
pub const P: u64 = 1 << 0;
/// Writable.
pub const RW: u64 = 1 << 1;
/// User-accessible.
pub const US: u64 = 1 << 2;
/// Page-level write-through.
pub const PWT: u64 = 1 << 3;
/// Page-level cache disable.
pub const PCD: u64 = 1 << 4;
/// Accessed.
pub const A: u64 = 1 << 5;
/// Dirty (leaves only).
pub const D: u64 = 1 << 6;
/// Page size: a leaf above the PTE level.
pub const PS: u64 = 1 << 7;
/// PAT bit of a 4 KiB PTE (the position of PS in the levels above).
pub const PAT_4K: u64 = 1 << 7;
/// Global (leaves only).
pub const G: u64 = 1 << 8;
/// PAT bit of a 2 MiB or 1 GiB page.
pub const PAT_HUGE: u64 = 1 << 12;
/// Execute-disable.
pub const XD: u64 = 1 << 63;
/// The flags of a table entry.
// Linux: arch/x86/include/asm/pgtable_types.h, _PAGE_TABLE
pub const TABLE_FLAGS: u64 = P | RW | US | A | D;
/// The address field, bits 51:12.
pub const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Address bits the geometry's MAXPHYADDR allows (bits `oa_bits-1`:12).
#[inline]
fn oa_mask(geom: &Layout) -> u64 {
    ADDR_MASK & ((1u64 << geom.oa_bits()) - 1)
}

#[inline]
fn bit(on: bool, mask: u64) -> u64 {
    (on as u64).wrapping_neg() & mask
}

#[inline]
fn mem_type_bits(t: MemType) -> u64 {
    match t {
        MemType::Normal => 0,
        MemType::NonCacheable => PCD,
        MemType::Device => PCD | PWT,
    }
}

/// The word for `entry` at `level`. x86-64 entries are single words, so `j`
/// must be 0.
#[inline]
pub fn encode(geom: &Layout, level: usize, entry: &Entry, j: u64) -> u64 {
    debug_assert_eq!(j, 0, "x86-64 entries are single words");
    match *entry {
        Entry::Invalid => 0,
        Entry::Swap { val } => super::swap_word(val),
        Entry::Table { pa } => {
            debug_assert!(level > 0, "a table entry at the PTE level");
            debug_assert_eq!(
                pa & !oa_mask(geom),
                0,
                "table address {pa:#x} misaligned or beyond oa_bits"
            );
            pa | TABLE_FLAGS
        }
        Entry::Leaf {
            pa,
            attrs,
            contiguous,
        } => {
            debug_assert!(!contiguous, "x86-64 has no contiguous entries");
            debug_assert!(
                geom.is_leaf_level(level),
                "a leaf at level {level}, which holds no leaves"
            );
            debug_assert!(representable(&attrs), "present x86-64 pages are readable");
            debug_assert_eq!(
                pa & !(oa_mask(geom) & !(geom.entry_size(level) - 1)),
                0,
                "leaf address {pa:#x} misaligned for level {level} or beyond oa_bits"
            );
            let p = attrs.perms;
            pa | P
                | bit(p.write, RW)
                | bit(p.user, US)
                | mem_type_bits(attrs.mem_type)
                | bit(attrs.accessed, A)
                | bit(attrs.dirty, D)
                | bit(level != 0, PS)
                | bit(attrs.global, G)
                | bit(!p.exec, XD)
        }
    }
}

/// Reads the word `raw` at `level`.
///
/// # Errors
/// [`DecodeError::Reserved`] for PS where the geometry allows no leaf,
/// address bits beyond `oa_bits`, a set PAT bit or PWT without PCD;
/// [`DecodeError::Misaligned`] for a huge page with low address bits set.
#[inline]
pub fn decode(geom: &Layout, level: usize, raw: u64) -> Result<Entry, DecodeError> {
    if raw & P == 0 {
        return Ok(Entry::Invalid);
    }
    if let Some(pa) = table_pa(geom, level, raw) {
        return Ok(Entry::Table { pa });
    }
    let (mask, value) = geom.leaf_test(level);
    if raw & mask == value && raw & (PWT | PCD) != PWT {
        // The short path: the test rules out every reserved bit and
        // misalignment, so the address field holds the page's address.
        return Ok(leaf(raw, raw & ADDR_MASK));
    }
    decode_checked(geom, level, raw)
}

/// [`decode`] with every check spelled out: for words that are neither a
/// table entry nor a leaf passing the short path's test.
fn decode_checked(geom: &Layout, level: usize, raw: u64) -> Result<Entry, DecodeError> {
    let oa = oa_mask(geom);
    let beyond_oa = raw & ADDR_MASK & !oa;
    if level != 0 && raw & PS == 0 {
        if beyond_oa != 0 {
            return Err(reserved(raw, level, "address bits at or above MAXPHYADDR"));
        }
        return Ok(Entry::Table { pa: raw & oa });
    }
    let size_mask = geom.entry_size(level) - 1;
    // Bit 7 at the PTE level, bit 12 above it.
    let pat = if level == 0 { PAT_4K } else { PAT_HUGE };
    let bad = (!geom.is_leaf_level(level))
        | (raw & pat != 0)
        | (raw & (PWT | PCD) == PWT)
        | (beyond_oa != 0);
    if bad {
        return Err(leaf_error(geom, level, raw));
    }
    if raw & oa & size_mask & !PAT_HUGE != 0 {
        return Err(DecodeError::Misaligned { raw, level });
    }
    Ok(leaf(raw, raw & oa & !size_mask))
}

/// The leaf that the checked word `raw` encodes, with output address `pa`.
#[inline]
fn leaf(raw: u64, pa: u64) -> Entry {
    let mem_type = match raw & (PWT | PCD) {
        0 => MemType::Normal,
        PCD => MemType::NonCacheable,
        _ => MemType::Device,
    };
    Entry::Leaf {
        pa,
        attrs: Attrs {
            perms: Perms {
                read: true,
                write: raw & RW != 0,
                exec: raw & XD == 0,
                user: raw & US != 0,
            },
            global: raw & G != 0,
            accessed: raw & A != 0,
            dirty: raw & D != 0,
            mem_type,
        },
        contiguous: false,
    }
}

/// The short path's leaf test at leaf level `level` (see
/// `entry::leaf_test`): present, PS set above the PTE level, and clear: the
/// PAT bit, address bits at or above MAXPHYADDR, and the address bits below
/// the page size. PWT without PCD is checked beside the test.
pub(crate) fn leaf_test(geom: &Layout, level: usize) -> (u64, u64) {
    let oa = oa_mask(geom);
    let misaligned = oa & (geom.entry_size(level) - 1);
    let (pat, ps) = if level == 0 {
        (PAT_4K, 0)
    } else {
        (PAT_HUGE, PS)
    };
    (P | ps | pat | (ADDR_MASK & !oa) | misaligned, P | ps)
}

/// The walk's view of a common leaf (see `entry::LeafFields`): the short
/// path's test, with PWT and PCD clear (normal memory, which also rules out
/// the reserved PWT-without-PCD).
pub(crate) fn leaf_fields(geom: &Layout, level: usize) -> super::LeafFields {
    let (mask, value) = leaf_test(geom, level);
    super::LeafFields {
        mask: mask | PWT | PCD,
        value,
        addr: ADDR_MASK,
        addr_shift: 0,
        write: RW,
        user: US,
        accessed: A,
        dirty: D,
    }
}

/// Whether a leaf with `attrs` has an x86-64 encoding: every present page is
/// readable (execute-only needs protection keys, not modeled).
#[inline]
pub fn representable(attrs: &Attrs) -> bool {
    attrs.perms.read
}

fn reserved(raw: u64, level: usize, why: &'static str) -> DecodeError {
    DecodeError::Reserved { raw, level, why }
}

/// Names the first rule a leaf word breaks (off the hot path).
#[cold]
fn leaf_error(geom: &Layout, level: usize, raw: u64) -> DecodeError {
    let why = if !geom.is_leaf_level(level) {
        "PS set at a level that holds no pages (reserved in a PML4E/PML5E)"
    } else if raw & ADDR_MASK & !oa_mask(geom) != 0 {
        "address bits at or above MAXPHYADDR"
    } else if raw & (PWT | PCD) == PWT {
        "PWT without PCD selects PAT entry 1 (WC), which the neutral view cannot name"
    } else {
        "PAT bit set: memory types beyond PWT/PCD are not modeled"
    };
    reserved(raw, level, why)
}

/// `raw` with A set, and D too when `write` (what the processor does on an
/// access through a leaf, SDM §4.8).
#[inline]
pub fn mark_accessed(raw: u64, write: bool) -> u64 {
    raw | A | bit(write, D)
}

/// The next table's address if `raw` is a valid table entry at `level`
/// (exactly when [`decode`] would return `Entry::Table`), else `None`: the
/// walk's fast path.
#[inline]
pub fn table_pa(geom: &Layout, level: usize, raw: u64) -> Option<u64> {
    let (mask, value) = geom.table_test(level);
    (raw & mask == value).then_some(raw & ADDR_MASK)
}

/// The table test of the levels above the PTE level (see
/// `entry::table_test`): present, PS clear, no address bit at or above
/// MAXPHYADDR.
pub(crate) fn table_test(geom: &Layout) -> (u64, u64) {
    (P | PS | (ADDR_MASK & !oa_mask(geom)), P)
}

/// x86-64 paging as an [`Architecture`](super::Architecture).
#[derive(Debug, Clone, Copy)]
pub struct X86_64;

impl super::Architecture for X86_64 {
    fn arch(&self) -> crate::layout::Arch {
        crate::layout::Arch::X86_64
    }
    fn names(&self) -> &'static [&'static str] {
        &["x86-64", "x86_64"]
    }
    #[inline(always)]
    fn encode(&self, geom: &Layout, level: usize, entry: &Entry, j: u64) -> u64 {
        encode(geom, level, entry, j)
    }
    #[inline(always)]
    fn decode(&self, geom: &Layout, level: usize, raw: u64) -> Result<Entry, DecodeError> {
        decode(geom, level, raw)
    }
    #[inline(always)]
    fn mark_accessed(&self, _level: usize, raw: u64, write: bool) -> u64 {
        mark_accessed(raw, write)
    }
    #[inline(always)]
    fn representable(&self, attrs: &Attrs) -> bool {
        representable(attrs)
    }
    #[inline(always)]
    fn table_pa(&self, geom: &Layout, level: usize, raw: u64) -> Option<u64> {
        table_pa(geom, level, raw)
    }
    #[inline(always)]
    fn leaf_address_bits(&self, _geom: &Layout, pa: u64) -> u64 {
        pa
    }
    fn table_test(&self, geom: &Layout) -> (u64, u64) {
        table_test(geom)
    }
    fn table_address(&self, _geom: &Layout) -> crate::layout::TableFields {
        crate::layout::TableFields {
            lo: ADDR_MASK,
            ..crate::layout::TableFields::NONE
        }
    }
    fn leaf_test(&self, geom: &Layout, level: usize) -> (u64, u64) {
        leaf_test(geom, level)
    }
    fn leaf_fields(&self, geom: &Layout, level: usize) -> Option<super::LeafFields> {
        Some(leaf_fields(geom, level))
    }
    fn hw_page_shifts(&self) -> &'static [u32] {
        &[12]
    }
    fn hw_page_rule(&self) -> &'static str {
        "hardware pages are 4 KiB (hw_page_shift 12)"
    }
    fn software_pages(&self) -> bool {
        true
    }
    fn default_oa_bits(&self) -> u32 {
        52
    }
    fn allows_contiguous_run(&self, _level: usize, _entries: u32, _words: u64) -> bool {
        false
    }
    fn contiguous_rule(&self) -> &'static str {
        "x86-64 has no contiguous entries"
    }
    fn table_accessed_bit(&self) -> u64 {
        // SDM vol. 3A §4.8: A is set in every paging-structure entry used.
        A
    }
    fn page_invalidation_flushes_walk_caches(&self) -> bool {
        // SDM vol. 3A §4.10.4.1: INVLPG invalidates all paging-structure-cache
        // entries of the current PCID, whatever their addresses.
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::preset;

    /// The short path of `decode` gives what the checked decode gives, on
    /// random words and on words shaped like leaves of every level.
    #[test]
    fn short_path_agrees_with_the_checked_decode() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for name in ["x86-64-4l", "x86-64-5l"] {
            let g = preset(name).unwrap();
            for level in 0..g.num_levels() {
                let mut short = 0;
                for i in 0..50_000u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Present words only: `decode_checked` runs after the P test.
                    let raw = match i % 4 {
                        0 => x | P,
                        // Leaf-shaped: present, PS above the PTE level,
                        // aligned to the level's size, in range.
                        1 => {
                            let size = g.entry_size(level);
                            (x & oa_mask(&g) & !(size - 1)) | (x & 0x17f) | P | bit(level > 0, PS)
                        }
                        2 => (x & ADDR_MASK) | (x & 0x1ff) | P,
                        _ => x | P | bit(level > 0, PS),
                    };
                    let (m, v) = g.leaf_test(level);
                    short += usize::from(raw & m == v && raw & (PWT | PCD) != PWT);
                    assert_eq!(
                        decode(&g, level, raw),
                        decode_checked(&g, level, raw),
                        "{name} level {level} {raw:#x}"
                    );
                }
                if g.is_leaf_level(level) {
                    assert!(
                        short > 1000,
                        "{name} level {level}: short path taken {short} times"
                    );
                }
            }
        }
    }
}
