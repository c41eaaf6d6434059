//! A geometry's numbers: what the entry codecs and the walks read.
//!
//! A [`Layout`] is the part of a [`crate::Geometry`] that is numbers only:
//! which architecture's entries the tables hold ([`Arch`], an identifier),
//! the page shifts, the address widths and, per level, the shifts, masks
//! and the codec's word tests, kept in a fixed array so that the hot paths
//! do no vector indexing or recomputation. A `Geometry` dereferences to its
//! layout and adds the names, the level specifications and the checks.
//!
//! ## Why a module of its own
//!
//! The codecs ([`crate::entry`]) read a geometry's numbers, and a geometry
//! is checked against its architecture's rules and gets its per-level word
//! tests from its codec. With the numbers here the dependencies run one
//! way: `layout` (data, imports nothing of the crate) <- `entry` (codecs and
//! the [`crate::entry::Architecture`] trait) <- `geometry` (construction,
//! presets, files). Adding a format is adding a codec and data; this module
//! does not change.
//!
//! ## Invariants (established by [`crate::Geometry::new`])
//!
//! - `fast[i]` holds the numbers of level `i` for `i < num_levels`, the
//!   constants of an absent level above.
//! - `fast[i].table` accepts exactly the words the codec decodes to a table
//!   entry at level `i` (none at level 0); `fast[i].leaf_mask/leaf_value`
//!   accept only words the codec decodes to a plain leaf on its short path.

/// The most levels any geometry may have (5-level x86-64 uses 5).
pub const MAX_LEVELS: usize = 6;

/// Bytes in one hardware page-table entry, on every architecture ptlab models.
pub const ENTRY_BYTES: u64 = 8;

/// Which entry format (codec) a geometry's tables use: an identifier. What
/// an architecture does (its codec and its rules) is the
/// [`crate::entry::Architecture`] that [`Arch::architecture`] resolves it to,
/// in the codec module, the one place that tells the architectures apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    X86_64,
    RiscV,
    Arm64,
}

/// A test no word passes (no word has bit 0 both masked out and set): the
/// table test of a level without tables, the leaf test of a level without
/// leaves.
pub(crate) const NO_WORD: (u64, u64) = (0, 1);

/// How a hardware walk reads a table entry of one level without decoding
/// it: `raw` is a valid table entry exactly when `raw & mask == value`
/// (what [`crate::entry::table_pa`] accepts), and the next table is then at
/// `((raw & lo) << lo_shift) & !align | (raw & hi) << hi_shift` (the one
/// formula covers x86's plain field, RISC-V's shifted PPN and ARM's split
/// 52-bit address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableFields {
    pub mask: u64,
    pub value: u64,
    pub lo: u64,
    pub lo_shift: u32,
    pub align: u64,
    pub hi: u64,
    pub hi_shift: u32,
    /// The formula reduces to `raw & lo` (x86; ARM without 52-bit
    /// addresses): one operation on the walk's critical path instead of six.
    pub plain: bool,
}

impl TableFields {
    /// Fields whose test no word passes (a level without tables, or one
    /// not yet set up).
    pub const NONE: TableFields = TableFields {
        mask: NO_WORD.0,
        value: NO_WORD.1,
        lo: 0,
        lo_shift: 0,
        align: 0,
        hi: 0,
        hi_shift: 0,
        plain: true,
    };

    /// The next table's address in a word that passed the test.
    #[inline(always)]
    pub fn next_table(&self, raw: u64) -> u64 {
        if self.plain {
            return raw & self.lo;
        }
        (((raw & self.lo) << self.lo_shift) & !self.align) | ((raw & self.hi) << self.hi_shift)
    }
}

/// The numbers of one level that walks need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FastLevel {
    pub(crate) shift: u32,
    /// Index bits (software view).
    pub(crate) bits: u32,
    pub(crate) index_mask: u64,
    pub(crate) hw_shift: u32,
    /// Mask of the index into a table page in hardware words.
    pub(crate) hw_word_mask: u64,
    pub(crate) leaf: bool,
    pub(crate) contig: u32,
    /// A word `raw` of this level is a valid table entry exactly when
    /// `raw & table.mask == table.value` (set by the codec, see
    /// `entry::table_fields`): the walk's per-level test in one AND and one
    /// compare; `table.next_table` then gives the next table's address
    /// without the codec.
    pub(crate) table: TableFields,
    /// A word `raw` of this level is a plain valid leaf (one the codec can
    /// decode without further checks) when `raw & leaf_mask == leaf_value`;
    /// words that fail it take the codec's full decode (see
    /// `entry::Architecture::leaf_test`).
    pub(crate) leaf_mask: u64,
    pub(crate) leaf_value: u64,
}

impl FastLevel {
    /// The byte offset, inside a table page of this level, of the hardware
    /// word a hardware walk reads for `va`.
    #[inline(always)]
    pub(crate) fn word_offset(&self, va: u64) -> u64 {
        ((va >> self.hw_shift) & self.hw_word_mask) * ENTRY_BYTES
    }

    /// The constants of a level the geometry does not have.
    const UNUSED: FastLevel = FastLevel {
        shift: 0,
        bits: 0,
        index_mask: 0,
        hw_shift: 0,
        hw_word_mask: 0,
        leaf: false,
        contig: 0,
        table: TableFields::NONE,
        leaf_mask: NO_WORD.0,
        leaf_value: NO_WORD.1,
    };
}

/// One level's shape, as [`Layout::new`] takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LevelShape {
    pub(crate) shift: u32,
    pub(crate) bits: u32,
    pub(crate) leaf: bool,
    pub(crate) contig: u32,
}

/// A geometry's numbers (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    fast: [FastLevel; MAX_LEVELS],
    num_levels: usize,
    arch: Arch,
    page_shift: u32,
    hw_page_shift: u32,
    va_bits: u32,
    oa_bits: u32,
}

impl Layout {
    /// The numbers of checked levels (leaf first), with word tests that no
    /// word passes until [`Layout::set_word_tests`] gives the codec's.
    pub(crate) fn new(
        arch: Arch,
        page_shift: u32,
        hw_page_shift: u32,
        va_bits: u32,
        oa_bits: u32,
        levels: &[LevelShape],
    ) -> Layout {
        let sub = page_shift - hw_page_shift;
        let mut fast = [FastLevel::UNUSED; MAX_LEVELS];
        for (f, l) in fast.iter_mut().zip(levels) {
            *f = FastLevel {
                shift: l.shift,
                bits: l.bits,
                index_mask: (1u64 << l.bits) - 1,
                hw_shift: l.shift - sub,
                hw_word_mask: (1u64 << (l.bits + sub)) - 1,
                leaf: l.leaf,
                contig: l.contig,
                ..FastLevel::UNUSED
            };
        }
        Layout {
            fast,
            num_levels: levels.len(),
            arch,
            page_shift,
            hw_page_shift,
            va_bits,
            oa_bits,
        }
    }

    /// Sets the codec's word tests of `level` (see [`FastLevel`]).
    pub(crate) fn set_word_tests(&mut self, level: usize, table: TableFields, leaf: (u64, u64)) {
        let f = &mut self.fast[level];
        f.table = table;
        (f.leaf_mask, f.leaf_value) = leaf;
    }

    pub fn arch(&self) -> Arch {
        self.arch
    }
    /// log2 of the base page, which is also the size of a table page.
    pub fn page_shift(&self) -> u32 {
        self.page_shift
    }
    pub fn page_size(&self) -> u64 {
        1 << self.page_shift
    }
    /// log2 of the hardware page (smaller than [`Self::page_shift`] only for
    /// software-page geometries such as `riscv-sv39-64k`).
    pub fn hw_page_shift(&self) -> u32 {
        self.hw_page_shift
    }
    /// Bytes of one table page.
    pub fn table_bytes(&self) -> u64 {
        1 << self.page_shift
    }
    /// Hardware words making one software entry (16 for the RISC-V 64 KiB page, else 1).
    pub fn hw_words_per_entry(&self) -> u64 {
        1 << (self.page_shift - self.hw_page_shift)
    }
    /// Virtual-address bits translated.
    pub fn va_bits(&self) -> u32 {
        self.va_bits
    }
    /// Physical (output) address bits the entry format can hold.
    pub fn oa_bits(&self) -> u32 {
        self.oa_bits
    }
    pub fn num_levels(&self) -> usize {
        self.num_levels
    }
    pub fn root_level(&self) -> usize {
        self.num_levels - 1
    }

    /// The software index of `va` at `level`.
    #[inline]
    pub fn index(&self, level: usize, va: u64) -> u64 {
        let l = &self.fast[level];
        (va >> l.shift) & l.index_mask
    }

    /// `(mask, value)`: a word of `level` is a table entry exactly when
    /// `word & mask == value`.
    #[inline]
    pub(crate) fn table_test(&self, level: usize) -> (u64, u64) {
        let f = &self.fast[level];
        (f.table.mask, f.table.value)
    }

    /// `(mask, value)`: a word of `level` is a plain valid leaf when
    /// `word & mask == value` (words that fail may still be leaves; the
    /// codec's full decode says).
    #[inline]
    pub(crate) fn leaf_test(&self, level: usize) -> (u64, u64) {
        let f = &self.fast[level];
        (f.leaf_mask, f.leaf_value)
    }

    /// The walk constants of every level, leaf first (no bounds checks in
    /// a loop over them).
    #[inline]
    pub(crate) fn fast_levels(&self) -> &[FastLevel] {
        &self.fast[..self.num_levels]
    }

    /// Whether `level` may hold leaves.
    #[inline]
    pub fn is_leaf_level(&self, level: usize) -> bool {
        self.fast[level].leaf
    }

    /// Entries in a contiguous / NAPOT run at `level` (0 if none).
    #[inline]
    pub fn contig(&self, level: usize) -> u32 {
        self.fast[level].contig
    }

    /// The byte offset, inside a table page of `level`, of the hardware word
    /// a hardware walk reads for `va`.
    #[inline]
    pub fn hw_word_offset(&self, level: usize, va: u64) -> u64 {
        self.fast[level].word_offset(va)
    }

    /// Lowest VA bit a hardware table of `level` indexes.
    #[inline]
    pub fn hw_shift(&self, level: usize) -> u32 {
        self.fast[level].hw_shift
    }

    /// Index bits of one hardware table of `level`: a hardware table is one
    /// hardware page of 8-byte entries, or less at the root.
    #[inline]
    pub fn hw_bits(&self, level: usize) -> u32 {
        let sub = self.page_shift - self.hw_page_shift;
        (self.fast[level].bits + sub).min(self.hw_page_shift - 3)
    }

    /// The index of `va` inside the hardware table that the hardware walk
    /// reads at `level` (equal to [`Self::index`] when software and hardware
    /// pages are the same size).
    #[inline]
    pub fn hw_index(&self, level: usize, va: u64) -> u64 {
        (va >> self.hw_shift(level)) & ((1u64 << self.hw_bits(level)) - 1)
    }

    /// Bytes mapped by one software entry of `level`.
    #[inline]
    pub fn entry_size(&self, level: usize) -> u64 {
        1u64 << self.fast[level].shift
    }

    /// Whether `va` is canonical: the bits above `va_bits - 1` repeat it.
    pub fn is_canonical(&self, va: u64) -> bool {
        if self.va_bits >= 64 {
            return true;
        }
        let top = (va as i64) >> (self.va_bits - 1);
        top == 0 || top == -1
    }

    /// One past the highest user (lower-half) address.
    pub fn user_limit(&self) -> u64 {
        1u64 << (self.va_bits - 1)
    }
}
