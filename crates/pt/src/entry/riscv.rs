//! RISC-V Sv39/Sv48/Sv57 page-table entries with Svnapot and Svpbmt (RISC-V
//! privileged architecture: "Sv39: Page-Based 39-bit Virtual-Memory System"
//! and the Sv48/Sv57 sections, chapter "Svnapot" (NAPOT translation
//! contiguity) and chapter "Svpbmt" (page-based memory types)).
//!
//! ```text
//!  63  62..61  60..54    53..10   9..8  7  6  5  4  3  2  1  0
//!  N   PBMT    reserved  PPN      RSW   D  A  G  U  X  W  R  V
//! ```
//!
//! - **V** (0) valid; `V = 0` decodes to [`Entry::Invalid`].
//! - **R W X** (3:1): all zero = a pointer to the next table; anything else
//!   is a leaf, except W without R (`-W-`, `-WX`), which is reserved.
//! - **PPN** (53:10) = physical address bits 55:12.
//! - **PBMT** (62:61, Svpbmt): 0 PMA, 1 NC, 2 IO, 3 reserved.
//! - **N** (63, Svnapot): the leaf is one PTE of a naturally aligned run. The
//!   only defined size is 64 KiB at the leaf level: N = 1 with
//!   `PPN[3:0] = 0b1000`, the other PPN bits being the run's base; each of
//!   the run's 16 PTEs holds that same PPN.
//!
//! The walk rules follow the spec, and QEMU's walker
//! (`target/riscv/cpu_helper.c`, `get_physical_address`) agrees: reserved
//! bits 60:54 set, a pointer PTE with D, A, U, N or PBMT set, a pointer at the
//! last level, a superpage whose low PPN bits are not zero, W without R, and
//! N at a level above the leaf or with a PPN pattern other than `...1000`
//! all fault.
//!
//! ## Neutral view
//!
//! - A pointer is `V` alone plus the PPN (A, D, U, N and PBMT zero, as the spec
//!   requires; G is left 0).
//! - A leaf has `R W X U G A D` from the neutral attributes and PBMT from the
//!   memory type: `Normal` = PMA (0), `NonCacheable` = NC (1), `Device` = IO (2).
//!   A leaf must allow read or execute, and write only with read (debug-asserted).
//! - A contiguous leaf at level 0 of a 4 KiB geometry is a NAPOT PTE. Its
//!   `pa` may be the run's base or any page inside the run: the PPN's low four
//!   bits are replaced by the pattern, and [`decode`] returns the run base
//!   with `contiguous = true`.
//!
//! ## Software pages (riscv-sv39-64k, riscv-sv48-64k)
//!
//! One software entry is 16 hardware words (`geom.hw_words_per_entry()`),
//! written by [`encode`] with `j` = 0..16:
//!
//! - table: word `j` points to hardware table `j` of the 64 KiB table page,
//!   `pa + j * 4 KiB`;
//! - leaf at level 0 (a 64 KiB page): all 16 words are the same NAPOT PTE of
//!   the page's base, N = 1 (a software page of another size, which Svnapot
//!   cannot express, gets plain PTEs, word `j` mapping `pa + j * 4 KiB`);
//! - leaf above level 0 (32 MiB at PMD, 16 GiB at PGD of Sv39): word `j` is a
//!   plain superpage PTE for `pa + j * 2^hw_shift(level)`, N = 0.
//!
//! [`decode`] of any word of a group returns the software entry: a table's
//! address aligned down to the table page, a leaf's aligned down to the
//! software entry's size (so every word of a group decodes to the same
//! [`Entry`]); a software leaf is never `contiguous`.

use super::{Attrs, DecodeError, Entry, MemType, Perms};
use crate::layout::Layout;

/// Valid.
pub const V: u64 = 1 << 0;
/// Readable.
pub const R: u64 = 1 << 1;
/// Writable.
pub const W: u64 = 1 << 2;
/// Executable.
pub const X: u64 = 1 << 3;
/// User-accessible.
pub const U: u64 = 1 << 4;
/// Global.
pub const G: u64 = 1 << 5;
/// Accessed.
pub const A: u64 = 1 << 6;
/// Dirty.
pub const D: u64 = 1 << 7;
/// The PPN field, bits 53:10.
pub const PPN_MASK: u64 = ((1 << 44) - 1) << PPN_SHIFT;
/// Bit position of PPN\[0\].
pub const PPN_SHIFT: u32 = 10;
/// Bits 60:54, reserved: must be zero.
pub const RESERVED: u64 = 0x7f << 54;
/// Svpbmt field, bits 62:61.
pub const PBMT_MASK: u64 = 3 << 61;
/// PBMT = NC: non-cacheable, idempotent, weakly ordered main memory.
pub const PBMT_NC: u64 = 1 << 61;
/// PBMT = IO: non-cacheable, non-idempotent, strongly ordered I/O.
pub const PBMT_IO: u64 = 2 << 61;
/// Svnapot N bit.
pub const N: u64 = 1 << 63;
/// `PPN[3:0]` of a 64 KiB NAPOT PTE.
pub const NAPOT_64K_PATTERN: u64 = 0b1000;
/// Bytes of the only NAPOT size Svnapot defines.
pub const NAPOT_64K_BYTES: u64 = 64 << 10;

/// Hardware (4 KiB) page shift: the PPN counts 4 KiB frames.
const PAGE_SHIFT: u32 = 12;

#[inline]
fn bit(on: bool, mask: u64) -> u64 {
    (on as u64).wrapping_neg() & mask
}

/// The PPN field holding the frame of `pa`.
#[inline]
pub(crate) fn ppn_field(pa: u64) -> u64 {
    (pa >> PAGE_SHIFT) << PPN_SHIFT
}

/// The physical address the PPN field of `raw` names.
#[inline]
fn field_pa(raw: u64) -> u64 {
    (raw & PPN_MASK) << (PAGE_SHIFT - PPN_SHIFT)
}

#[inline]
fn pbmt_bits(t: MemType) -> u64 {
    match t {
        MemType::Normal => 0,
        MemType::NonCacheable => PBMT_NC,
        MemType::Device => PBMT_IO,
    }
}

/// Word `j` of the group for `entry` at `level` (`j` = 0 unless the
/// geometry has a software page; see the module docs).
#[inline]
pub fn encode(geom: &Layout, level: usize, entry: &Entry, j: u64) -> u64 {
    debug_assert!(j < geom.hw_words_per_entry(), "word {j} beyond the group");
    let oa_limit = 1u64 << geom.oa_bits();
    match *entry {
        Entry::Invalid => 0,
        Entry::Swap { val } => super::swap_word(val),
        Entry::Table { pa } => {
            debug_assert!(level > 0, "a pointer PTE at the last level");
            debug_assert!(
                pa % geom.table_bytes() == 0 && pa < oa_limit,
                "table address {pa:#x} misaligned or beyond oa_bits"
            );
            ppn_field(pa + (j << geom.hw_page_shift())) | V
        }
        Entry::Leaf {
            pa,
            attrs,
            contiguous,
        } => {
            let p = attrs.perms;
            debug_assert!(
                geom.is_leaf_level(level),
                "a leaf at level {level}, which holds no leaves"
            );
            debug_assert!(
                representable(&attrs),
                "RISC-V leaves need R or X, and W only with R: {p:?}"
            );
            debug_assert!(
                !contiguous || (level == 0 && geom.contig(0) != 0),
                "contiguous leaf at level {level}, which has no NAPOT runs"
            );
            debug_assert!(
                pa < oa_limit
                    && pa
                        % (if contiguous {
                            1 << PAGE_SHIFT
                        } else {
                            geom.entry_size(level)
                        })
                        == 0,
                "leaf address {pa:#x} misaligned for level {level} or beyond oa_bits"
            );
            let flags = V
                | bit(p.read, R)
                | bit(p.write, W)
                | bit(p.exec, X)
                | bit(p.user, U)
                | bit(attrs.global, G)
                | bit(attrs.accessed, A)
                | bit(attrs.dirty, D)
                | pbmt_bits(attrs.mem_type);
            // A NAPOT word: a 4 KiB geometry's contiguous leaf, or every
            // PTE-level leaf of a 64 KiB software page. (A software page of
            // another size has no NAPOT encoding: its words are plain PTEs.)
            let napot = level == 0
                && (contiguous || geom.hw_words_per_entry() << PAGE_SHIFT == NAPOT_64K_BYTES);
            if napot {
                let ppn = ((pa >> PAGE_SHIFT) & !0xf) | NAPOT_64K_PATTERN;
                (ppn << PPN_SHIFT) | N | flags
            } else {
                ppn_field(pa + (j << geom.hw_shift(level))) | flags
            }
        }
    }
}

/// Reads the word `raw` at `level`; for a word of a software-page group,
/// returns the whole software entry.
///
/// # Errors
/// [`DecodeError::Reserved`] for the reserved encodings listed in the module
/// docs (and a leaf at a level where the geometry allows none, or an address
/// beyond `oa_bits`); [`DecodeError::Misaligned`] for a superpage whose low
/// PPN bits are not zero.
#[inline]
pub fn decode(geom: &Layout, level: usize, raw: u64) -> Result<Entry, DecodeError> {
    if raw & V == 0 {
        return Ok(Entry::Invalid);
    }
    let pa = field_pa(raw);
    let beyond_oa = pa >> geom.oa_bits() != 0;
    if raw & (R | W | X) == 0 {
        let bad = (level == 0) | (raw & (RESERVED | D | A | U | N | PBMT_MASK) != 0) | beyond_oa;
        if bad {
            return Err(pointer_error(level, raw));
        }
        return Ok(Entry::Table {
            pa: pa & !(geom.table_bytes() - 1),
        });
    }
    let napot = raw & N != 0;
    let bad = (raw & RESERVED != 0)
        | (raw & (R | W) == W)
        | (raw & PBMT_MASK == PBMT_MASK)
        | (napot & ((level != 0) | ((pa >> PAGE_SHIFT) & 0xf != NAPOT_64K_PATTERN)))
        | !geom.is_leaf_level(level)
        | beyond_oa;
    if bad {
        return Err(leaf_error(geom, level, raw));
    }
    // A hardware superpage must be aligned to its own size (a NAPOT PTE
    // only exists at level 0, whose alignment is one page).
    if pa & ((1u64 << geom.hw_shift(level)) - 1) != 0 {
        return Err(DecodeError::Misaligned { raw, level });
    }
    let align = if napot {
        NAPOT_64K_BYTES.max(geom.entry_size(level))
    } else {
        geom.entry_size(level)
    };
    let mem_type = match raw & PBMT_MASK {
        0 => MemType::Normal,
        PBMT_NC => MemType::NonCacheable,
        _ => MemType::Device,
    };
    Ok(Entry::Leaf {
        pa: pa & !(align - 1),
        attrs: Attrs {
            perms: Perms {
                read: raw & R != 0,
                write: raw & W != 0,
                exec: raw & X != 0,
                user: raw & U != 0,
            },
            global: raw & G != 0,
            accessed: raw & A != 0,
            dirty: raw & D != 0,
            mem_type,
        },
        // In a software-page geometry the NAPOT run is the software page
        // itself, not a run of software entries.
        contiguous: napot & (geom.hw_words_per_entry() == 1),
    })
}

/// The walk's view of a common leaf (see `entry::LeafFields`): V and R set
/// (so never the reserved W-without-R), PBMT clear, no reserved bit, no PPN
/// bit at or above `oa_bits` and none below the hardware superpage's
/// alignment at `level`; N clear, except at the leaf level of a
/// software-page geometry, whose every leaf word is a 64 KiB NAPOT word
/// (N set, PPN\[3:0\] = 1000).
pub(crate) fn leaf_fields(geom: &Layout, level: usize) -> super::LeafFields {
    let in_range = ((1u64 << geom.oa_bits()) - 1) >> (PAGE_SHIFT - PPN_SHIFT);
    let beyond_oa = PPN_MASK & !in_range;
    let misaligned = PPN_MASK & (((1u64 << geom.hw_shift(level)) - 1) >> (PAGE_SHIFT - PPN_SHIFT));
    let (napot_mask, napot) = if level == 0 && geom.hw_words_per_entry() > 1 {
        (0xf << PPN_SHIFT, N | NAPOT_64K_PATTERN << PPN_SHIFT)
    } else {
        (0, 0)
    };
    super::LeafFields {
        mask: V | R | RESERVED | N | PBMT_MASK | beyond_oa | misaligned | napot_mask,
        value: V | R | napot,
        addr: PPN_MASK,
        addr_shift: PAGE_SHIFT - PPN_SHIFT,
        write: W,
        user: U,
        accessed: A,
        dirty: D,
    }
}

/// Whether a leaf with `attrs` has a RISC-V encoding: R or X set, and W only
/// with R (R = W = X = 0 would be a pointer, W without R is reserved).
#[inline]
pub fn representable(attrs: &Attrs) -> bool {
    let p = attrs.perms;
    p.read || (p.exec && !p.write)
}

/// Names the first rule a pointer word breaks (off the hot path).
#[cold]
fn pointer_error(level: usize, raw: u64) -> DecodeError {
    let why = if level == 0 {
        "a pointer PTE (R = W = X = 0) at the last level"
    } else if raw & RESERVED != 0 {
        "reserved bits 60:54 set"
    } else if raw & (D | A | U) != 0 {
        "D, A or U set in a pointer PTE (reserved for future use)"
    } else if raw & (N | PBMT_MASK) != 0 {
        "N or PBMT set in a pointer PTE"
    } else {
        "table address beyond oa_bits"
    };
    DecodeError::Reserved { raw, level, why }
}

/// Names the first rule a leaf word breaks (off the hot path).
#[cold]
fn leaf_error(geom: &Layout, level: usize, raw: u64) -> DecodeError {
    let why = if raw & RESERVED != 0 {
        "reserved bits 60:54 set"
    } else if raw & (R | W) == W {
        "W without R is reserved"
    } else if raw & PBMT_MASK == PBMT_MASK {
        "PBMT = 3 is reserved"
    } else if raw & N != 0 && level != 0 {
        "N set above the leaf level (Svnapot defines only 64 KiB runs of 4 KiB PTEs)"
    } else if raw & N != 0 {
        "N set with PPN[3:0] other than 1000 (reserved NAPOT size)"
    } else if !geom.is_leaf_level(level) {
        "a leaf at a level where this geometry allows none"
    } else {
        "output address beyond oa_bits"
    };
    DecodeError::Reserved { raw, level, why }
}

/// `raw` with A set, and D too when `write` (the hardware A/D update of the
/// privileged spec's Svadu, or what the OS does on the fault under Svade).
#[inline]
pub fn mark_accessed(raw: u64, write: bool) -> u64 {
    raw | A | bit(write, D)
}

/// The next table's address if `raw` is a valid pointer entry at `level`
/// (exactly when [`decode`] would return `Entry::Table`), else `None`: the
/// walk's fast path.
#[inline]
pub fn table_pa(geom: &Layout, level: usize, raw: u64) -> Option<u64> {
    let (mask, value) = geom.table_test(level);
    (raw & mask == value).then(|| field_pa(raw) & !(geom.table_bytes() - 1))
}

/// The table test of the levels above the leaf level (see
/// `entry::table_test`): V alone among V/R/W/X, no reserved, D, A, U, N or
/// PBMT bit, and no PPN bit that would put the table at or above `oa_bits`.
pub(crate) fn table_test(geom: &Layout) -> (u64, u64) {
    // PPN bit k holds physical address bit k + (PAGE_SHIFT - PPN_SHIFT).
    let in_range = ((1u64 << geom.oa_bits()) - 1) >> (PAGE_SHIFT - PPN_SHIFT);
    let beyond_oa = PPN_MASK & !in_range;
    (
        V | R | W | X | RESERVED | D | A | U | N | PBMT_MASK | beyond_oa,
        V,
    )
}

/// RISC-V Sv39/48/57 with Svnapot and Svpbmt as an
/// [`Architecture`](super::Architecture).
#[derive(Debug, Clone, Copy)]
pub struct RiscV;

impl super::Architecture for RiscV {
    fn arch(&self) -> crate::layout::Arch {
        crate::layout::Arch::RiscV
    }
    fn names(&self) -> &'static [&'static str] {
        &["riscv", "riscv64"]
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
        ppn_field(pa)
    }
    fn table_test(&self, geom: &Layout) -> (u64, u64) {
        table_test(geom)
    }
    fn table_address(&self, geom: &Layout) -> crate::layout::TableFields {
        crate::layout::TableFields {
            lo: PPN_MASK,
            lo_shift: PAGE_SHIFT - PPN_SHIFT,
            align: geom.table_bytes() - 1,
            ..crate::layout::TableFields::NONE
        }
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
        56
    }
    fn allows_contiguous_run(&self, level: usize, entries: u32, words: u64) -> bool {
        // Svnapot defines only 64 KiB runs of 4 KiB PTEs, at the leaf level.
        level == 0 && entries == 16 && words == 1
    }
    fn contiguous_rule(&self) -> &'static str {
        "RISC-V Svnapot runs are 16 entries of 4 KiB at the leaf level only"
    }
    fn table_accessed_bit(&self) -> u64 {
        // A, D and U of a non-leaf PTE are reserved.
        0
    }
    fn napot_leaf_shift(&self, level: usize, raw: u64) -> Option<u32> {
        (level == 0 && raw & N != 0).then_some(NAPOT_64K_BYTES.trailing_zeros())
    }
    fn page_invalidation_flushes_walk_caches(&self) -> bool {
        false
    }
}
