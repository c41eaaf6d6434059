//! ARM64 stage 1 translation descriptors, VMSAv8-64 with the 4K, 16K and 64K
//! granules (Arm Architecture Reference Manual for A-profile, chapter D8
//! "The AArch64 Virtual Memory System Architecture", §D8.3 "Translation table
//! descriptor formats"; the hardware Access flag and dirty state, "Hardware
//! updates to the translation tables", §D8.5 in DDI 0487 J.a).
//!
//! The granule is `geom.hw_page_shift()` (`g` below: 12, 14 or 16). Level 0
//! of a geometry is the architecture's L3.
//!
//! ```text
//! page (level 0, bits\[1:0\] = 11) or block (above level 0, bits\[1:0\] = 01):
//!  63..59   58..55  54   53   52    51   50  49..48  47..g  g-1..12       11  10  9..8  7..6     5   4..2      1..0
//!  ignored  SW      UXN  PXN  Cont  DBM  GP  RES0    OA     RES0/OA51:48  nG  AF  SH    AP\[2:1\]  NS  AttrIndx  type
//!
//! table (above level 0, bits\[1:0\] = 11):
//!  63..59       58..51   50..48  47..g              g-1..12       11..2    1..0
//!  APTable etc  ignored  RES0    next-level table   RES0/OA51:48  ignored  11
//! ```
//!
//! - bits\[1:0\]: `x0` invalid ([`Entry::Invalid`]); `11` a table above level 0
//!   and a page at level 0; `01` a block, only at a level above 0 where the
//!   geometry allows leaves. `01` at level 0, or where the geometry has no
//!   blocks (4K L0, 16K L1 without FEAT_LPA2), is reserved.
//! - Output address: bits 47:g for pages and tables, 47:(block shift) for a
//!   block (lower OA bits RES0). With the 64K granule and a 52-bit OA
//!   (FEAT_LPA, `oa_bits` 52), OA\[51:48\] sits in bits 15:12. FEAT_LPA2 (52-bit
//!   OA with 4K/16K, reusing SH as OA) is not modeled.
//! - Table descriptors carry no attributes here; the hierarchical APTable,
//!   UXNTable, PXNTable and NSTable bits are ignored on decode (not modeled).
//!
//! ## Neutral view of a leaf
//!
//! - Memory type: ptlab assumes a fixed MAIR_EL1 ([`MAIR_EL1`]): AttrIndx 0 =
//!   Normal write-back (0xff), 1 = Normal non-cacheable (0x44), 2 =
//!   Device-nGnRE (0x04). Other indices decode to an error. (Linux's own MAIR
//!   numbers its types differently; only the meaning is modeled.)
//! - Shareability: every leaf is written inner shareable (SH = 11), as Linux
//!   does (`PTE_SHARED`); SH is ignored for Device and Normal non-cacheable
//!   memory. SH = 01 is reserved and decodes to an error.
//! - `user` = AP\[1\] (EL0 data access) or UXN = 0: as Linux says, every
//!   kernel mapping has UXN set (`pte_valid_not_user`). A kernel page is
//!   always readable. A user page is readable iff AP\[1\] = 1; the one user page
//!   without read is execute-only, Linux's `PAGE_EXECONLY` (AP = 10, UXN = 0,
//!   PXN = 1). See [`representable`].
//! - Write and dirty, as Linux uses DBM (`PTE_WRITE` is DBM, bit 51) with
//!   hardware dirty-state management:
//!
//!   | neutral                | AP\[2\] | DBM | SW dirty (55) |
//!   |------------------------|-------|-----|---------------|
//!   | write, dirty           | 0     | 1   | 0             |
//!   | write, clean           | 1     | 1   | 0             |
//!   | read-only, clean       | 1     | 0   | 0             |
//!   | read-only, dirty       | 1     | 0   | 1             |
//!
//!   A writable-clean page is read-only to the hardware until the first write,
//!   which (DBM = 1) clears AP\[2\]: that is the dirty bit. A read-only page
//!   keeps its dirtiness in software bit 55, Linux's `PTE_DIRTY`. Decoding:
//!   `write = !AP[2] | DBM`, `dirty = !AP[2] | bit 55` (a writable word
//!   without DBM can be written without notice, so it counts as dirty).
//! - Execute: a user page has PXN = 1 always and UXN = !exec; a kernel page
//!   has UXN = 1 and PXN = !exec (as Linux's `PAGE_KERNEL_EXEC`). Decoding
//!   reads UXN for user pages and PXN for kernel pages.
//! - `global` = !nG, `accessed` = AF, `contiguous` = the Contiguous bit (each
//!   entry of a run keeps its own output address).

use super::{Attrs, DecodeError, Entry, MemType, Perms};
use crate::layout::Layout;

/// bits\[1:0\] bit 0: valid.
pub const VALID: u64 = 1 << 0;
/// bits\[1:0\] bit 1: table (above level 0) or page (level 0); clear = block.
pub const TABLE_OR_PAGE: u64 = 1 << 1;
/// AttrIndx, bits 4:2.
pub const ATTR_INDX_MASK: u64 = 7 << 2;
/// AttrIndx value of Normal write-back memory.
pub const ATTR_NORMAL: u64 = 0;
/// AttrIndx value of Normal non-cacheable memory.
pub const ATTR_NORMAL_NC: u64 = 1;
/// AttrIndx value of Device-nGnRE memory.
pub const ATTR_DEVICE: u64 = 2;
/// The MAIR_EL1 these indices assume: Attr0 = 0xff, Attr1 = 0x44, Attr2 = 0x04.
pub const MAIR_EL1: u64 = 0x04_44_ff;
/// AP\[1\]: accessible from EL0.
pub const AP_EL0: u64 = 1 << 6;
/// AP\[2\]: read-only.
pub const AP_RDONLY: u64 = 1 << 7;
/// SH, bits 9:8.
pub const SH_MASK: u64 = 3 << 8;
/// SH = 11, inner shareable.
pub const SH_INNER: u64 = 3 << 8;
/// SH = 01, reserved.
const SH_RESERVED: u64 = 1 << 8;
/// Access flag.
pub const AF: u64 = 1 << 10;
/// Not global.
pub const NG: u64 = 1 << 11;
/// Dirty Bit Modifier (Linux's `PTE_WRITE`).
pub const DBM: u64 = 1 << 51;
/// Contiguous hint.
pub const CONT: u64 = 1 << 52;
/// Privileged execute-never.
pub const PXN: u64 = 1 << 53;
/// Unprivileged execute-never.
pub const UXN: u64 = 1 << 54;
/// Software dirty bit of a read-only page.
// Linux: arch/arm64/include/asm/pgtable-prot.h, PTE_DIRTY
pub const SW_DIRTY: u64 = 1 << 55;

/// How far OA\[51:48\] sits above its bits 15:12 in a descriptor.
const HI_SHIFT: u32 = 36;

/// Where the output address sits in a descriptor of one geometry.
#[derive(Clone, Copy)]
struct OaLayout {
    /// OA bits kept in place: 47:g (or below 48 when `oa_bits` is smaller).
    field: u64,
    /// Bits 15:12 when they hold OA\[51:48\] (64K granule, 52-bit OA), else 0.
    hi: u64,
    /// Bits 49:12 that are neither OA nor anything else: RES0.
    res0: u64,
    /// Output addresses must be below `1 << limit`.
    limit: u32,
}

#[inline]
fn layout(geom: &Layout) -> OaLayout {
    let g = geom.hw_page_shift();
    let lpa = g == 16 && geom.oa_bits() > 48;
    let top = geom.oa_bits().min(48);
    let field = ((1u64 << top) - 1) & !((1u64 << g) - 1);
    let hi = if lpa { 0xf << 12 } else { 0 };
    let bits_49_12 = ((1u64 << 50) - 1) & !0xfff;
    OaLayout {
        field,
        hi,
        res0: bits_49_12 & !field & !hi,
        limit: if lpa { geom.oa_bits().min(52) } else { top },
    }
}

/// The output address held in `raw`.
#[inline]
fn desc_pa(raw: u64, l: OaLayout) -> u64 {
    // Bits 15:12 -> OA[51:48].
    (raw & l.field) | ((raw & l.hi) << HI_SHIFT)
}

/// The descriptor's address fields under `geom`: the output address is
/// `raw & lo | (raw & hi) << hi_shift` (as `desc_pa` computes it).
pub(crate) fn address_fields(geom: &Layout) -> (u64, u64, u32) {
    let l = layout(geom);
    (l.field, l.hi, HI_SHIFT)
}

/// The descriptor bits holding output address `pa` under `geom`.
#[inline]
pub(crate) fn address_bits(geom: &Layout, pa: u64) -> u64 {
    pa_desc(pa, layout(geom))
}

/// The descriptor bits holding output address `pa`.
#[inline]
fn pa_desc(pa: u64, l: OaLayout) -> u64 {
    // OA[51:48] -> bits 15:12.
    (pa & l.field) | ((pa >> HI_SHIFT) & l.hi)
}

#[inline]
fn bit(on: bool, mask: u64) -> u64 {
    (on as u64).wrapping_neg() & mask
}

#[inline]
fn attr_indx(t: MemType) -> u64 {
    match t {
        MemType::Normal => ATTR_NORMAL,
        MemType::NonCacheable => ATTR_NORMAL_NC,
        MemType::Device => ATTR_DEVICE,
    }
}

/// The descriptor for `entry` at `level`. ARM64 entries are single words, so
/// `j` must be 0.
#[inline]
pub fn encode(geom: &Layout, level: usize, entry: &Entry, j: u64) -> u64 {
    debug_assert_eq!(j, 0, "ARM64 descriptors are single words");
    let l = layout(geom);
    match *entry {
        Entry::Invalid => 0,
        Entry::Swap { val } => super::swap_word(val),
        Entry::Table { pa } => {
            debug_assert!(level > 0, "a table descriptor at L3");
            debug_assert!(
                pa % geom.table_bytes() == 0 && pa >> l.limit == 0,
                "table address {pa:#x} misaligned or beyond the output range"
            );
            pa_desc(pa, l) | TABLE_OR_PAGE | VALID
        }
        Entry::Leaf {
            pa,
            attrs,
            contiguous,
        } => {
            let p = attrs.perms;
            debug_assert!(
                geom.is_leaf_level(level),
                "a leaf at level {level}, which holds no blocks"
            );
            debug_assert!(representable(&attrs), "not expressible on ARM64: {p:?}");
            debug_assert!(
                !contiguous || geom.contig(level) != 0,
                "contiguous leaf at level {level}, which has no contiguous runs"
            );
            debug_assert!(
                pa % geom.entry_size(level) == 0 && pa >> l.limit == 0,
                "leaf address {pa:#x} misaligned for level {level} or beyond the output range"
            );
            let dirty = attrs.dirty;
            pa_desc(pa, l)
                | VALID
                | bit(level == 0, TABLE_OR_PAGE)
                | (attr_indx(attrs.mem_type) << 2)
                | bit(p.user && p.read, AP_EL0)
                | bit(!(p.write && dirty), AP_RDONLY)
                | SH_INNER
                | bit(attrs.accessed, AF)
                | bit(!attrs.global, NG)
                | bit(p.write, DBM)
                | bit(contiguous, CONT)
                | bit(p.user || !p.exec, PXN)
                | bit(!p.user || !p.exec, UXN)
                | bit(dirty && !p.write, SW_DIRTY)
        }
    }
}

/// Reads the descriptor `raw` at `level`.
///
/// # Errors
/// [`DecodeError::Reserved`] for a block at level 0 or where the geometry
/// allows none, an AttrIndx outside ptlab's MAIR, SH = 01, set RES0 address
/// bits or an address beyond the output range; [`DecodeError::Misaligned`]
/// for a block whose output address has bits below the block size set.
#[inline]
pub fn decode(geom: &Layout, level: usize, raw: u64) -> Result<Entry, DecodeError> {
    if raw & VALID == 0 {
        return Ok(Entry::Invalid);
    }
    let l = layout(geom);
    let pa = desc_pa(raw, l);
    let bad_oa = (raw & l.res0 != 0) | (pa >> l.limit != 0);
    let block = raw & TABLE_OR_PAGE == 0;
    if level != 0 && !block {
        if bad_oa {
            return Err(DecodeError::Reserved {
                raw,
                level,
                why: "RES0 address bits set, or address beyond the output range",
            });
        }
        return Ok(Entry::Table { pa });
    }
    let bad = (block & ((level == 0) | !geom.is_leaf_level(level)))
        | (raw & ATTR_INDX_MASK > ATTR_DEVICE << 2)
        | (raw & SH_MASK == SH_RESERVED)
        | bad_oa;
    if bad {
        return Err(leaf_error(geom, level, raw));
    }
    if pa & (geom.entry_size(level) - 1) != 0 {
        return Err(DecodeError::Misaligned { raw, level });
    }
    let mem_type = match raw & ATTR_INDX_MASK {
        0 => MemType::Normal,
        4 => MemType::NonCacheable,
        _ => MemType::Device,
    };
    let el0_data = raw & AP_EL0 != 0;
    let user = el0_data | (raw & UXN == 0);
    let rdonly = raw & AP_RDONLY != 0;
    let xn = if user { UXN } else { PXN };
    Ok(Entry::Leaf {
        pa,
        attrs: Attrs {
            perms: Perms {
                read: el0_data | !user,
                write: !rdonly | (raw & DBM != 0),
                exec: raw & xn == 0,
                user,
            },
            global: raw & NG == 0,
            accessed: raw & AF != 0,
            dirty: !rdonly | (raw & SW_DIRTY != 0),
            mem_type,
        },
        contiguous: raw & CONT != 0,
    })
}

/// Whether a leaf with `attrs` has an ARM64 encoding: readable, or a user
/// execute-only page (no read, no write).
#[inline]
pub fn representable(attrs: &Attrs) -> bool {
    let p = attrs.perms;
    p.read || (p.user && p.exec && !p.write)
}

/// Names the first rule a leaf descriptor breaks (off the hot path).
#[cold]
fn leaf_error(geom: &Layout, level: usize, raw: u64) -> DecodeError {
    let why = if raw & TABLE_OR_PAGE == 0 && level == 0 {
        "bits[1:0] = 01 at L3 is reserved"
    } else if raw & TABLE_OR_PAGE == 0 && !geom.is_leaf_level(level) {
        "a block descriptor at a level without blocks"
    } else if raw & ATTR_INDX_MASK > ATTR_DEVICE << 2 {
        "AttrIndx outside ptlab's fixed MAIR (0 Normal, 1 Normal-NC, 2 Device)"
    } else if raw & SH_MASK == SH_RESERVED {
        "SH = 01 is reserved"
    } else {
        "RES0 address bits set, or address beyond the output range"
    };
    DecodeError::Reserved { raw, level, why }
}

/// `raw` with the Access flag set; on a write to a writable-clean page
/// (DBM = 1) also AP\[2\] cleared, which is how the hardware records dirty
/// state (§D8.5). A write to a page without DBM changes nothing more: the
/// walker faults on it before it gets here, or the page is already dirty.
#[inline]
pub fn mark_accessed(_level: usize, raw: u64, write: bool) -> u64 {
    (raw | AF) & !bit(write & (raw & DBM != 0), AP_RDONLY)
}

/// The next table's address if `raw` is a valid table descriptor at
/// `level` (exactly when [`decode`] would return `Entry::Table`), else
/// `None`: the walk's fast path.
#[inline]
pub fn table_pa(geom: &Layout, level: usize, raw: u64) -> Option<u64> {
    let (mask, value) = geom.table_test(level);
    (raw & mask == value).then(|| desc_pa(raw, layout(geom)))
}

/// The table test of the levels above the leaf level (see
/// `entry::table_test`): valid with the table bit, no RES0 address bit, and
/// no output-address bit at or above the limit (the field bits stop below
/// it; of the high bits 15:12, which hold OA\[51:48\], those past it).
pub(crate) fn table_test(geom: &Layout) -> (u64, u64) {
    let l = layout(geom);
    let in_range = (1u64 << l.limit) - 1;
    let beyond = (l.field & !in_range) | (l.hi & !(in_range >> HI_SHIFT));
    (
        VALID | TABLE_OR_PAGE | l.res0 | beyond,
        VALID | TABLE_OR_PAGE,
    )
}

/// ARM64 (VMSAv8-64) stage 1 as an [`Architecture`](super::Architecture).
#[derive(Debug, Clone, Copy)]
pub struct Arm64;

impl super::Architecture for Arm64 {
    fn arch(&self) -> crate::layout::Arch {
        crate::layout::Arch::Arm64
    }
    fn names(&self) -> &'static [&'static str] {
        &["arm64", "aarch64"]
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
    fn mark_accessed(&self, level: usize, raw: u64, write: bool) -> u64 {
        mark_accessed(level, raw, write)
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
    fn leaf_address_bits(&self, geom: &Layout, pa: u64) -> u64 {
        address_bits(geom, pa)
    }
    fn table_test(&self, geom: &Layout) -> (u64, u64) {
        table_test(geom)
    }
    fn table_address(&self, geom: &Layout) -> crate::layout::TableFields {
        let (lo, hi, hi_shift) = address_fields(geom);
        crate::layout::TableFields {
            lo,
            hi,
            hi_shift,
            ..crate::layout::TableFields::NONE
        }
    }
    fn hw_page_shifts(&self) -> &'static [u32] {
        &[12, 14, 16]
    }
    fn hw_page_rule(&self) -> &'static str {
        "granules are 4K, 16K or 64K (shift 12, 14, 16)"
    }
    fn software_pages(&self) -> bool {
        false
    }
    fn default_oa_bits(&self) -> u32 {
        48
    }
    fn allows_contiguous_run(&self, _level: usize, _entries: u32, _words: u64) -> bool {
        // Any leaf level; the geometry checks the run is a power of two.
        true
    }
    fn contiguous_rule(&self) -> &'static str {
        "ARM64 contiguous runs need a leaf level"
    }
    fn table_accessed_bit(&self) -> u64 {
        // Hardware AF in table descriptors needs FEAT_HAFT, not modeled.
        0
    }
    fn may_change_live(&self, old: u64, new: u64) -> bool {
        may_change_live(old, new)
    }
    fn page_invalidation_flushes_walk_caches(&self) -> bool {
        false
    }
}

/// Software bits 58:55 (Linux's `PTE_SWBITS_MASK`).
const SW_BITS: u64 = 0xf << 55;

/// Whether the live descriptor `old` may become `new` without
/// break-before-make (the Arm ARM's break-before-make rules, as Linux
/// applies them): creating or taking down a mapping always may; a live one
/// keeps its output address, its memory type and shareability, its access
/// flag, its contiguous bit (a live contiguous run may not be touched at
/// all) and its nG unless global becomes non-global; it may change AP\[2\]
/// (read-only), DBM (Linux's `PTE_WRITE`), PXN and the software bits.
// Linux: arch/arm64/mm/mmu.c, pgattr_change_is_safe
fn may_change_live(old: u64, new: u64) -> bool {
    let mutable = PXN | AP_RDONLY | DBM | NG | SW_BITS;
    if old & VALID == 0 || new & VALID == 0 {
        return true;
    }
    if (old | new) & CONT != 0 || old & !new & NG != 0 {
        return false;
    }
    (old ^ new) & !mutable == 0
}
