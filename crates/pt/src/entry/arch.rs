//! An architecture: its entry codec and the hardware's rules, behind one trait.
//!
//! [`Architecture`] is what ptlab knows of one instruction set's paging: how
//! its words encode the neutral [`Entry`] (the codec, one module per
//! architecture, bit-exact) and the rules its hardware follows, as named
//! predicates and constants (which hardware page sizes exist, whether a
//! table entry gets an accessed bit, what a NAPOT word maps, what a
//! single-page invalidation drops). The geometry checks itself against the
//! rules; the walkers read the predicates once into per-geometry constants
//! and never ask which architecture they walk.
//!
//! ## Dispatch, in one place
//!
//! An [`Arch`] (the identifier a geometry carries) is resolved here and
//! nowhere else: [`with_architecture!`] is the one `match` on it. The
//! codec's free functions ([`super::encode`], [`super::decode`], ...) use
//! it to call the architecture statically, so each arm inlines its codec
//! as the hand-written `match` did; [`Arch::architecture`] gives the same
//! architecture as a `&'static dyn Architecture` for everything off the hot
//! paths (construction, checks, reading predicates once).
//!
//! Adding an architecture is: a codec module with a unit type implementing
//! [`Architecture`], a variant of [`Arch`], and one arm in the macro.

use std::fmt;

use super::{Attrs, DecodeError, Entry, LeafFields};
use crate::layout::{Arch, Layout, TableFields, NO_WORD};

/// One architecture's paging: its codec and its rules (see the module docs).
///
/// `level` indexes from the leaf (0) everywhere; `layout` is the geometry's
/// numbers (a `&Geometry` coerces to it).
pub trait Architecture: Send + Sync + fmt::Debug {
    /// The identifier geometries carry.
    fn arch(&self) -> Arch;

    /// The names a geometry file may give the architecture; the first is
    /// the one ptlab prints.
    fn names(&self) -> &'static [&'static str];

    /// The name ptlab prints.
    fn name(&self) -> &'static str {
        self.names()[0]
    }

    // ---------------------------------------------------------------
    // The codec (see `entry` for the neutral conventions).

    /// Word `j` of the group of hardware words of `entry` at `level`.
    fn encode(&self, layout: &Layout, level: usize, entry: &Entry, j: u64) -> u64;

    /// One hardware word back into the neutral view.
    ///
    /// # Errors
    /// [`DecodeError`] for encodings the architecture reserves.
    fn decode(&self, layout: &Layout, level: usize, raw: u64) -> Result<Entry, DecodeError>;

    /// `raw` with the hardware's accessed (and, on a write, dirty) update.
    fn mark_accessed(&self, level: usize, raw: u64, write: bool) -> u64;

    /// Whether a present leaf can carry `attrs`.
    fn representable(&self, attrs: &Attrs) -> bool;

    /// The next table's address if `raw` is a valid table entry at `level`.
    fn table_pa(&self, layout: &Layout, level: usize, raw: u64) -> Option<u64>;

    /// The bits of a plain leaf word that hold output address `pa`.
    fn leaf_address_bits(&self, layout: &Layout, pa: u64) -> u64;

    /// `(mask, value)`: a word of a level above the leaf level is a valid
    /// table entry exactly when `raw & mask == value`.
    fn table_test(&self, layout: &Layout) -> (u64, u64);

    /// Where the next table's address sits in a table entry: the address
    /// part of [`TableFields`] (its test is [`Architecture::table_test`]).
    fn table_address(&self, layout: &Layout) -> TableFields;

    /// `(mask, value)` of the codec's short decode path at leaf level
    /// `level` (see `entry::leaf_test`); none by default.
    fn leaf_test(&self, _layout: &Layout, _level: usize) -> (u64, u64) {
        NO_WORD
    }

    /// How a walk reads a common leaf of leaf level `level` without the
    /// codec, if the architecture's leaves allow it (see [`LeafFields`]).
    fn leaf_fields(&self, _layout: &Layout, _level: usize) -> Option<LeafFields> {
        None
    }

    // ---------------------------------------------------------------
    // The hardware's rules, as named predicates and constants.

    /// The hardware page shifts (granules) the architecture has, ascending.
    fn hw_page_shifts(&self) -> &'static [u32];

    /// [`Architecture::hw_page_shifts`] said for people, in an error.
    fn hw_page_rule(&self) -> &'static str;

    /// Whether the OS may manage pages larger than the hardware page, one
    /// software entry being a group of hardware words (the RISC-V 64 KiB
    /// page proposal); an ARM64 granule is the page.
    fn software_pages(&self) -> bool;

    /// The output-address width a geometry file gets when it names none
    /// (the format's widest: x86 MAXPHYADDR 52, Sv 56, ARM64 48 without LPA).
    fn default_oa_bits(&self) -> u32;

    /// Whether a contiguous (ARM) or NAPOT (RISC-V) run of `entries`
    /// entries may sit at `level` of a geometry whose software entry is
    /// `hw_words_per_entry` hardware words.
    fn allows_contiguous_run(&self, level: usize, entries: u32, hw_words_per_entry: u64) -> bool;

    /// The rule behind [`Architecture::allows_contiguous_run`], for an error.
    fn contiguous_rule(&self) -> &'static str;

    /// The bit the hardware sets in a *table* entry it walks through, 0 if
    /// it sets none (x86 sets A on every level, SDM vol. 3A §4.8; RISC-V
    /// reserves A in pointers; ARM needs FEAT_HAFT, not modeled).
    fn table_accessed_bit(&self) -> u64;

    /// Whether the hardware sets an accessed bit in table entries.
    fn sets_accessed_on_table_entries(&self) -> bool {
        self.table_accessed_bit() != 0
    }

    /// log2 of the bytes the leaf word `raw` at `level` maps when it is a
    /// NAPOT word whose run the hardware caches as one translation under a
    /// software page (RISC-V Svnapot), else `None`.
    fn napot_leaf_shift(&self, _level: usize, _raw: u64) -> Option<u32> {
        None
    }

    /// Whether software may replace the word `old` with `new` in place
    /// while `old` is live (valid, maybe cached by a TLB), rather than
    /// first writing an invalid word and invalidating the TLBs
    /// (break-before-make). Writing or replacing an invalid word is always
    /// allowed; x86 and RISC-V allow any change (followed by the
    /// invalidation), ARM64 only changes of write and privileged-execute
    /// permission, nG (to non-global) and software bits.
    fn may_change_live(&self, _old: u64, _new: u64) -> bool {
        true
    }

    /// Whether invalidating one page also drops every paging-structure
    /// cache entry of the address space (x86 INVLPG, SDM vol. 3A
    /// §4.10.4.1), rather than only those of the page's path.
    fn page_invalidation_flushes_walk_caches(&self) -> bool;
}

/// Runs `$body` with `$a` bound to the architecture `$arch` names, as a
/// reference to its concrete type: static calls that inline. The one
/// `match` on [`Arch`] in ptlab.
macro_rules! with_architecture {
    ($arch:expr, |$a:ident| $body:expr) => {
        match $arch {
            $crate::layout::Arch::X86_64 => {
                let $a = &$crate::entry::x86::X86_64;
                $body
            }
            $crate::layout::Arch::RiscV => {
                let $a = &$crate::entry::riscv::RiscV;
                $body
            }
            $crate::layout::Arch::Arm64 => {
                let $a = &$crate::entry::arm64::Arm64;
                $body
            }
        }
    };
}
pub(crate) use with_architecture;

impl Arch {
    /// Every architecture, in the order ptlab lists them.
    pub const ALL: [Arch; 3] = [Arch::X86_64, Arch::RiscV, Arch::Arm64];

    /// The architecture this identifier names.
    pub fn architecture(self) -> &'static dyn Architecture {
        with_architecture!(self, |a| a as &'static dyn Architecture)
    }

    /// The architecture a geometry file names (any of its
    /// [`Architecture::names`]).
    pub fn parse(s: &str) -> Option<Arch> {
        Arch::ALL
            .into_iter()
            .find(|a| a.architecture().names().contains(&s))
    }

    pub fn name(self) -> &'static str {
        self.architecture().name()
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each identifier resolves to the architecture that says it is that
    /// identifier, and every name parses back to it.
    #[test]
    fn identifiers_resolve_to_their_architecture() {
        for arch in Arch::ALL {
            let a = arch.architecture();
            assert_eq!(a.arch(), arch);
            for n in a.names() {
                assert_eq!(Arch::parse(n), Some(arch), "{n}");
            }
        }
        assert_eq!(Arch::parse("mips"), None);
        assert_eq!(Arch::X86_64.to_string(), "x86-64");
    }

    /// The predicates say what the manuals say (the values the walkers and
    /// the geometry checks used to spell out per architecture).
    #[test]
    fn predicates_match_the_manuals() {
        let [x86, rv, arm] = Arch::ALL.map(Arch::architecture);
        assert!(x86.sets_accessed_on_table_entries());
        assert!(!rv.sets_accessed_on_table_entries());
        assert!(!arm.sets_accessed_on_table_entries());
        assert!(x86.page_invalidation_flushes_walk_caches());
        assert!(!rv.page_invalidation_flushes_walk_caches());
        assert!(!arm.page_invalidation_flushes_walk_caches());
        assert_eq!(arm.hw_page_shifts(), &[12, 14, 16]);
        assert_eq!(x86.hw_page_shifts(), &[12]);
        assert!(!arm.software_pages() && rv.software_pages());
        assert!(!x86.allows_contiguous_run(0, 16, 1));
        assert!(rv.allows_contiguous_run(0, 16, 1));
        assert!(!rv.allows_contiguous_run(1, 16, 1));
        assert!(!rv.allows_contiguous_run(0, 16, 16));
        assert!(arm.allows_contiguous_run(2, 32, 1));
        let napot = crate::entry::riscv::N
            | crate::entry::riscv::V
            | crate::entry::riscv::R
            | crate::entry::riscv::NAPOT_64K_PATTERN << crate::entry::riscv::PPN_SHIFT;
        assert_eq!(rv.napot_leaf_shift(0, napot), Some(16));
        assert_eq!(rv.napot_leaf_shift(1, napot), None);
        assert_eq!(
            rv.napot_leaf_shift(0, napot & !crate::entry::riscv::N),
            None
        );
        assert_eq!(x86.napot_leaf_shift(0, u64::MAX), None);
    }

    /// ARM64's break-before-make rule: write permission and software bits may
    /// change on a live descriptor; its address, memory type, contiguous
    /// bit and nG-to-global may not; an invalid word on either side makes
    /// any change safe. x86 and RISC-V have no such rule.
    #[test]
    fn only_arm64_needs_break_before_make() {
        use crate::entry::arm64::*;
        let arm = Arch::Arm64.architecture();
        let page = VALID | TABLE_OR_PAGE | AF | SH_INNER | NG | 0x4000_0000;
        let live = |new: u64| arm.may_change_live(page, new);
        assert!(live(page | AP_RDONLY));
        assert!(live(page | DBM | PXN));
        assert!(live(page | SW_DIRTY));
        assert!(!live(page + 0x1000), "the output address");
        assert!(!live(page | ATTR_DEVICE << 2), "the memory type");
        assert!(!live(page | CONT), "the contiguous bit");
        assert!(!live(page & !NG), "non-global to global");
        assert!(
            arm.may_change_live(page & !NG, page),
            "global to non-global"
        );
        assert!(!live(page & !AF), "the access flag, as Linux treats it");
        assert!(
            arm.may_change_live(0, page) && live(0),
            "through an invalid word"
        );
        for a in [Arch::X86_64, Arch::RiscV].map(Arch::architecture) {
            assert!(a.may_change_live(page, page + 0x1000));
        }
    }
}
