//! Page-table entries: one neutral view above bit-exact codecs.
//!
//! The engine and the MMU model speak [`Entry`]; the table pages hold the
//! architecture's own 64-bit words, produced by [`encode`] and read back by
//! [`decode`]. Each codec module documents the bit layout it implements and
//! cites the manual section.
//!
//! A software entry of a geometry with a software page larger than its
//! hardware page (`riscv-sv39-64k`) is a group of hardware words: the engine
//! calls [`encode_group_word`] once per word of the group.
//!
//! Neutral conventions shared by every codec:
//! - `Leaf.pa` is the output address of the page or block this entry maps,
//!   aligned to the entry's size. For a word of a contiguous (ARM) or NAPOT
//!   (RISC-V) run, ARM stores each entry's own output address while Svnapot
//!   stores the run's base with the low PPN bits replaced by the NAPOT
//!   pattern, so [`decode`] of a NAPOT word yields the *run base*. Callers
//!   that need the address of one page of a run use [`leaf_output`].
//! - `Attrs.perms.write` means "writes are allowed by this entry"; `dirty`
//!   means "the hardware would treat the page as written" (ARM expresses
//!   both through AP\[2\] and DBM; see `arm64`).
//!
//! Each architecture is one [`Architecture`] (its codec and its hardware's
//! rules); the functions below dispatch on the geometry's architecture in
//! one place, [`arch`]. Codecs read the geometry's numbers, a
//! [`crate::layout::Layout`] (a `&Geometry` coerces to it), and nothing else
//! of it: `layout` <- `entry` <- `geometry`, no cycle.

pub mod arch;
pub mod arm64;
pub mod riscv;
pub mod x86;

pub use crate::layout::TableFields;
use crate::layout::{Layout, NO_WORD};
use arch::with_architecture;
pub use arch::Architecture;
use thiserror::Error;

/// Access permissions of a leaf.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Perms {
    pub read: bool,
    pub write: bool,
    pub exec: bool,
    /// Accessible from user mode.
    pub user: bool,
}

impl Perms {
    /// Read-write user data (the common case).
    pub const USER_RW: Perms = Perms {
        read: true,
        write: true,
        exec: false,
        user: true,
    };
    /// Read-only user data.
    pub const USER_R: Perms = Perms {
        read: true,
        write: false,
        exec: false,
        user: true,
    };
}

/// Memory type of a leaf (x86 PWT/PCD, RISC-V Svpbmt, ARM AttrIndx with a fixed MAIR).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MemType {
    #[default]
    Normal,
    NonCacheable,
    Device,
}

/// Attributes of a leaf entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Attrs {
    pub perms: Perms,
    /// Global (x86 G, RISC-V G, ARM !nG).
    pub global: bool,
    pub accessed: bool,
    pub dirty: bool,
    pub mem_type: MemType,
}

impl Attrs {
    pub fn new(perms: Perms) -> Attrs {
        Attrs {
            perms,
            ..Attrs::default()
        }
    }
}

/// The neutral view of one (software) entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Entry {
    /// Not present: the hardware walk stops here with a fault.
    Invalid,
    /// Points to the next-level table page at `pa`.
    Table { pa: u64 },
    /// Maps a page or block at `pa`. `contiguous` marks a member of a
    /// contiguous (ARM) or NAPOT (RISC-V) run.
    Leaf {
        pa: u64,
        attrs: Attrs,
        contiguous: bool,
    },
    /// Not present, but not empty either: a word the OS keeps for itself
    /// in a non-present entry (Linux's swap entry, `is_swap_pte`). The
    /// hardware sees a non-present entry ([`decode`] answers
    /// [`Entry::Invalid`]); only [`crate::PageTable::read_entry`], the
    /// software's view, tells it apart from an empty one. `val` is the
    /// OS's own value (below 2^62), stored above the valid bit of every
    /// format ([`swap_word`]).
    Swap { val: u64 },
}

impl Entry {
    /// Whether the hardware would use this entry (a table or a leaf).
    pub fn is_present(&self) -> bool {
        matches!(self, Entry::Table { .. } | Entry::Leaf { .. })
    }
    /// Whether the entry is empty (Linux `pte_none`).
    pub fn is_none(&self) -> bool {
        matches!(self, Entry::Invalid)
    }
    pub fn is_leaf(&self) -> bool {
        matches!(self, Entry::Leaf { .. })
    }
}

/// A hardware word the codec cannot read as a valid entry of that level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error("reserved encoding {raw:#018x} at level {level}: {why}")]
    Reserved {
        raw: u64,
        level: usize,
        why: &'static str,
    },
    #[error("misaligned output address in {raw:#018x} at level {level}")]
    Misaligned { raw: u64, level: usize },
}

/// Where a non-present word keeps [`Entry::Swap`]'s value: bit 0 (x86 P,
/// RISC-V V, ARM's valid bit) is clear, so no format's walker uses it;
/// bit 1 set keeps the word nonzero (an empty entry is zero everywhere).
const SWAP_SHIFT: u32 = 2;
const SWAP_TAG: u64 = 0b10;

/// The hardware word of [`Entry::Swap`] with value `val` (any level, any
/// format, every word of a software-page group).
#[inline]
pub fn swap_word(val: u64) -> u64 {
    debug_assert!(val < 1 << (64 - SWAP_SHIFT), "swap value {val:#x} too wide");
    (val << SWAP_SHIFT) | SWAP_TAG
}

/// The value of the non-present, nonzero word `raw` read as a software
/// entry ([`Entry::Swap`]).
#[inline]
pub fn swap_val(raw: u64) -> u64 {
    raw >> SWAP_SHIFT
}

/// The hardware word of `entry` at `level` of `geom` (the first word of its
/// group, for software-page geometries).
///
/// `level` indexes from the leaf (0). Leaves at levels the geometry marks as
/// non-leaf, misaligned addresses and addresses wider than `oa_bits` are the
/// caller's bugs: the engine checks them before encoding (debug-asserted here).
#[inline]
pub fn encode(geom: &Layout, level: usize, entry: &Entry) -> u64 {
    encode_group_word(geom, level, entry, 0)
}

/// Word `j` (0-based) of the group of hardware words that make one software
/// entry. For a table entry, word `j` points to hardware table `j` inside the
/// next table page; for a leaf, word `j` maps hardware page `j` of it (a
/// NAPOT word at the leaf level of a software-page geometry).
#[inline]
pub fn encode_group_word(geom: &Layout, level: usize, entry: &Entry, j: u64) -> u64 {
    if let Entry::Swap { val } = *entry {
        return swap_word(val);
    }
    with_architecture!(geom.arch(), |a| a.encode(geom, level, entry, j))
}

/// Reads one hardware word at `level` back into the neutral view. For a word
/// of a software-page group, the returned addresses are those of the whole
/// software entry (table page base, or leaf base).
///
/// # Errors
/// [`DecodeError`] for encodings the architecture reserves.
#[inline]
pub fn decode(geom: &Layout, level: usize, raw: u64) -> Result<Entry, DecodeError> {
    with_architecture!(geom.arch(), |a| a.decode(geom, level, raw))
}

/// `raw` with the Accessed flag set, and Dirty too when `write` (what the
/// hardware walker does on an access; ARM's DBM makes a clean-writable page
/// dirty by clearing AP\[2\]). `raw` must be a valid leaf word.
#[inline]
pub fn mark_accessed(geom: &Layout, level: usize, raw: u64, write: bool) -> u64 {
    with_architecture!(geom.arch(), |a| a.mark_accessed(level, raw, write))
}

/// The physical address that `va` reaches through the leaf entry `pa`
/// (decoded at `level`, mapping `leaf_size` bytes: the entry's size, or the
/// run's size for a contiguous leaf).
#[inline]
pub fn leaf_output(leaf_pa: u64, leaf_size: u64, va: u64) -> u64 {
    (leaf_pa & !(leaf_size - 1)) | (va & (leaf_size - 1))
}

/// Whether the architecture can express `attrs` in a present leaf (x86 has
/// no write-only or unreadable present page; RISC-V reserves write-without-
/// read and a leaf needs one of R/W/X). PROT_NONE must be kept non-present
/// above the codec, as Linux does.
#[inline]
pub fn representable(geom: &Layout, attrs: &Attrs) -> bool {
    with_architecture!(geom.arch(), |a| a.representable(attrs))
}

/// The next table's physical address if `raw` is a valid table entry at
/// `level`, else `None` (then [`decode`] says what it is). Equivalent to
/// matching `decode(..) == Ok(Entry::Table { pa })`, without building the
/// neutral view: the walk's fast path.
#[inline]
pub fn table_pa(geom: &Layout, level: usize, raw: u64) -> Option<u64> {
    with_architecture!(geom.arch(), |a| a.table_pa(geom, level, raw))
}

/// `(mask, value)` such that a word `raw` of `level` is a valid table entry
/// (what [`table_pa`] accepts) exactly when `raw & mask == value`. Computed
/// once per geometry; a level that holds no tables gets a test nothing
/// passes.
pub(crate) fn table_test(geom: &Layout, level: usize) -> (u64, u64) {
    if level == 0 {
        return NO_WORD;
    }
    geom.arch().architecture().table_test(geom)
}

/// `(mask, value)` such that a word `raw` of `level` with `raw & mask ==
/// value` is a valid leaf that the codec decodes on its short path (the
/// common leaf: not reserved, aligned, in range). Words that fail the test
/// take the codec's full decode, which accepts the rest and names what is
/// wrong with the others. A codec without a short path gives a test nothing
/// passes.
pub(crate) fn leaf_test(geom: &Layout, level: usize) -> (u64, u64) {
    if !geom.is_leaf_level(level) {
        return NO_WORD;
    }
    geom.arch().architecture().leaf_test(geom, level)
}

/// The [`TableFields`] of `level` (a level that holds no tables gets a test
/// no word passes).
pub fn table_fields(geom: &Layout, level: usize) -> TableFields {
    let (mask, value) = table_test(geom, level);
    let f = geom.arch().architecture().table_address(geom);
    TableFields {
        mask,
        value,
        plain: f.lo_shift == 0 && f.align == 0 && f.hi == 0,
        ..f
    }
}

/// How a hardware walk reads the common leaf word of one level without
/// decoding it: a word with `raw & mask == value` is a valid, plain (not
/// contiguous or NAPOT) leaf, readable, of normal memory, whose fields are
/// the bits below. Words that fail the test may still be leaves; the walk
/// then takes [`decode`]. Only the bits an MMU needs for a TLB entry are
/// named (execute permission and memory type are not modeled there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafFields {
    pub mask: u64,
    pub value: u64,
    /// The page's output address is `((raw & addr) << addr_shift) & !(entry_size - 1)`.
    pub addr: u64,
    pub addr_shift: u32,
    /// The bit that allows writes (set: writable).
    pub write: u64,
    /// The bit that allows user-mode access.
    pub user: u64,
    /// The accessed and dirty bits the hardware sets on an access.
    pub accessed: u64,
    pub dirty: u64,
}

/// The [`LeafFields`] of `level`, or `None` where the codec has none (a
/// level without leaves; ARM64, whose write and dirty state share AP\[2\]
/// and DBM and which always takes [`decode`]).
pub fn leaf_fields(geom: &Layout, level: usize) -> Option<LeafFields> {
    if !geom.is_leaf_level(level) {
        return None;
    }
    geom.arch().architecture().leaf_fields(geom, level)
}

/// The word of a plain (not contiguous) leaf at `level` whose attributes
/// encode to `bits` (the word [`encode`] gives for the leaf at address 0),
/// mapping `pa`: every codec puts the address in fields of its own, so
/// `encode(leaf at pa) == address_bits(pa) | encode(leaf at 0)`. Lets a
/// caller encode the attributes once for many leaves.
#[inline]
pub fn leaf_with_address(geom: &Layout, bits: u64, pa: u64) -> u64 {
    bits | with_architecture!(geom.arch(), |a| a.leaf_address_bits(geom, pa))
}
