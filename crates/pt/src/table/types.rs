//! The types of the table layer's boundary: a level of the tree, the
//! physical address of a table page, and virtual and physical addresses.
//!
//! The OS model (`mm`) names the levels it works on as Linux does (PTE,
//! PMD, PUD) instead of writing level numbers, and hands table pages around
//! as [`TableAddr`] so that a table cannot be confused with a data frame or
//! a virtual address in the `(table, level, va)` triples of the primitives.
//!
//! ## Invariants
//! - Levels are indexed from the leaf: [`Level::PTE`] is 0 and a level's
//!   parent is [`Level::up`]. Which levels exist is the geometry's business
//!   ([`crate::Geometry::num_levels`]); a `Level` is only a name for one.
//! - A [`TableAddr`] is the base of a table page allocated by
//!   [`crate::PhysMem::alloc_table`] (page-aligned, inside the table arena).
//! - [`VirtAddr`] and [`PhysAddr`] are plain words with no conversion
//!   between them or from `u64` other than by name (`new`, `get`): an
//!   address changes space only where a table says so. Their arithmetic
//!   takes sizes that are powers of two where it aligns, as every page,
//!   leaf and run size of a geometry is.
//! - Offsets (`+ u64`, [`VirtAddr::add`]) overflow as `u64` arithmetic
//!   does: a panic in debug builds, a wrap in release builds;
//!   [`VirtAddr::checked_add`] says `None` instead. No valid address range
//!   of any geometry ends past `u64::MAX`, so an overflow is a caller's bug.
//!
//! ## Where the typed world begins
//! Every function of the table layer takes and returns these types: its
//! primitives (`read_entry`, `set_entry`, `install_table`, ...), translate
//! and its [`crate::Translation`], the iteration's [`crate::table::Mapping`]
//! and the tree-wide conveniences (`map`, `unmap`, `protect`, `free_empty`,
//! `dump`); so do the MMU model's hardware walk and the OS model's walks
//! and fault paths. Addresses arrive as bare `u64` only at the outer edges
//! that read them from a workload: the machine's `access`, the MMU's
//! `access` (its TLBs are keyed by the word), and the OS model's system
//! calls (`mmap`, `munmap`, `fault`, ...), each of which converts once on
//! entry. Below the table layer the words stay bare: [`crate::PhysMem`]
//! reads and writes words by physical address, and an entry's codec
//! ([`crate::Entry`]) holds the address bits as the hardware does. Error
//! values and the flush ranges handed to the TLBs carry bare words too.

use std::fmt;
use std::ops::{Add, AddAssign};

/// One level of a page-table tree, counted from the leaf level (Linux's
/// names on x86-64: PTE, PMD, PUD, P4D, PGD; the geometry holds each
/// architecture's own names for display).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Level(u8);

impl Level {
    /// The leaf level of base pages (Linux's PTE table).
    pub const PTE: Level = Level(0);
    /// The level above the PTE tables (Linux's PMD), whose leaves are the
    /// PMD-sized huge pages.
    pub const PMD: Level = Level(1);
    /// The level above the PMD tables (Linux's PUD).
    pub const PUD: Level = Level(2);

    /// The level numbered `n` from the leaf (for code that walks every
    /// level of a geometry, not for naming one).
    ///
    /// # Panics
    /// If `n` is not below [`crate::geometry::MAX_LEVELS`].
    #[inline]
    pub const fn new(n: usize) -> Level {
        assert!(n < crate::geometry::MAX_LEVELS, "no such level");
        Level(n as u8)
    }

    /// Its number, counted from the leaf (0 = PTE).
    #[inline]
    pub const fn get(self) -> usize {
        self.0 as usize
    }

    /// Whether this is the leaf level of base pages.
    #[inline]
    pub const fn is_pte(self) -> bool {
        self.0 == 0
    }

    /// The level of the tables this level's table entries point to.
    ///
    /// # Panics
    /// At the PTE level, which points to no table.
    #[inline]
    pub const fn down(self) -> Level {
        assert!(self.0 > 0, "the PTE level has no level below it");
        Level(self.0 - 1)
    }

    /// The level whose table entries point to tables of this level.
    #[inline]
    pub const fn up(self) -> Level {
        Level::new(self.0 as usize + 1)
    }

    /// The levels from `self` down to [`Level::PTE`], highest first.
    pub fn down_to_pte(self) -> impl Iterator<Item = Level> {
        (0..=self.0).rev().map(Level)
    }
}

impl From<Level> for usize {
    #[inline]
    fn from(l: Level) -> usize {
        l.get()
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "level {}", self.0)
    }
}

/// The physical address of a table page (what an upper entry or the root
/// register holds).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TableAddr(u64);

impl fmt::Debug for TableAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TableAddr({:#x})", self.0)
    }
}

impl TableAddr {
    /// The table page at physical address `pa` (as returned by the arena).
    #[inline]
    pub const fn new(pa: u64) -> TableAddr {
        TableAddr(pa)
    }

    /// Its physical address.
    #[inline]
    pub const fn pa(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TableAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "table {:#x}", self.0)
    }
}

/// Declares an address newtype: one `u64`, ordered, with the arithmetic
/// the table layer's callers need (offset, alignment to a size, page index).
macro_rules! address {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(u64);

        impl $name {
            #[doc = concat!("The ", $what, " `a`.")]
            #[inline(always)]
            pub const fn new(a: u64) -> $name {
                $name(a)
            }

            /// The raw word (where a hardware word or an index is built).
            #[inline(always)]
            pub const fn get(self) -> u64 {
                self.0
            }

            /// The address `bytes` further on (overflow as `u64`'s `+`:
            /// see the module docs).
            #[inline(always)]
            pub const fn add(self, bytes: u64) -> $name {
                $name(self.0 + bytes)
            }

            /// The address `bytes` further on, or `None` past `u64::MAX`.
            #[inline(always)]
            pub const fn checked_add(self, bytes: u64) -> Option<$name> {
                match self.0.checked_add(bytes) {
                    Some(a) => Some($name(a)),
                    None => None,
                }
            }

            /// The address `bytes` further on, or the last address there
            /// is (`u64::MAX`) past it: for loops that stop at a range's end.
            #[inline(always)]
            pub const fn saturating_add(self, bytes: u64) -> $name {
                $name(self.0.saturating_add(bytes))
            }

            /// The end of the block of `size` bytes (a power of two) that
            /// holds this address, or `end` if that comes first: the next
            /// step of a walk over `[self, end)` one entry of `size` at a
            /// time (Linux `pmd_addr_end`, `pud_addr_end`). The last block
            /// of the address space ends at `end`.
            #[inline(always)]
            pub const fn addr_end(self, size: u64, end: $name) -> $name {
                debug_assert!(size.is_power_of_two());
                let boundary = (self.0 | (size - 1)).saturating_add(1);
                if boundary < end.0 {
                    $name(boundary)
                } else {
                    end
                }
            }

            /// The address `bytes` before it (a caller's bug below 0, as
            /// `u64`'s `-`).
            #[inline(always)]
            pub const fn sub(self, bytes: u64) -> $name {
                $name(self.0 - bytes)
            }

            /// Bytes from `base` up to this address.
            #[inline(always)]
            pub const fn offset_from(self, base: $name) -> u64 {
                self.0 - base.0
            }

            /// Rounded down to a multiple of `size` (a power of two).
            #[inline(always)]
            pub const fn align_down(self, size: u64) -> $name {
                debug_assert!(size.is_power_of_two());
                $name(self.0 & !(size - 1))
            }

            /// Rounded up to a multiple of `size` (a power of two; the
            /// result must fit in 64 bits).
            #[inline(always)]
            pub const fn align_up(self, size: u64) -> $name {
                debug_assert!(size.is_power_of_two());
                $name((self.0 + (size - 1)) & !(size - 1))
            }

            /// Whether it is a multiple of `size`.
            #[inline(always)]
            pub const fn is_aligned(self, size: u64) -> bool {
                self.0 % size == 0
            }

            /// The number of the page of `1 << page_shift` bytes it lies in.
            #[inline(always)]
            pub const fn page_index(self, page_shift: u32) -> u64 {
                self.0 >> page_shift
            }

            /// Its offset inside the block of `size` bytes (a power of two)
            /// it lies in.
            #[inline(always)]
            pub const fn offset_in(self, size: u64) -> u64 {
                debug_assert!(size.is_power_of_two());
                self.0 & (size - 1)
            }
        }

        impl Add<u64> for $name {
            type Output = $name;
            #[inline(always)]
            fn add(self, bytes: u64) -> $name {
                $name(self.0 + bytes)
            }
        }

        impl AddAssign<u64> for $name {
            #[inline(always)]
            fn add_assign(&mut self, bytes: u64) {
                self.0 += bytes;
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#x}", self.0)
            }
        }

        // Addresses read as hex everywhere, `{:?}` included.
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:#x})"), self.0)
            }
        }

        // So that `{:#x}` in an error message reads an address as it read
        // the bare word.
        impl fmt::LowerHex for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::LowerHex::fmt(&self.0, f)
            }
        }
    };
}

address! {
    /// A virtual address: what a walk translates (Linux `unsigned long
    /// addr`; aarch64-paging's `VirtualAddress`).
    VirtAddr, "virtual address"
}

address! {
    /// A physical address: what a leaf maps to, and where a walk reads its
    /// words (Linux `phys_addr_t`).
    PhysAddr, "physical address"
}

impl TableAddr {
    /// The table page's physical address, typed.
    #[inline(always)]
    pub const fn phys(self) -> PhysAddr {
        PhysAddr(self.0)
    }
}

impl PhysAddr {
    /// The number of the frame of `1 << page_shift` bytes it lies in
    /// (Linux `PHYS_PFN`).
    #[inline(always)]
    pub const fn frame_number(self, page_shift: u32) -> u64 {
        self.0 >> page_shift
    }

    /// The table page at this address (the caller knows it is one: it
    /// read it from a table entry or the arena gave it).
    #[inline(always)]
    pub const fn table(self) -> TableAddr {
        TableAddr(self.0)
    }
}

impl fmt::LowerHex for TableAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_count_from_the_leaf() {
        assert_eq!(Level::PTE.get(), 0);
        assert_eq!(Level::PTE.up(), Level::PMD);
        assert_eq!(Level::PMD.up(), Level::PUD);
        assert_eq!(Level::PUD.down(), Level::PMD);
        assert!(Level::PTE.is_pte() && !Level::PMD.is_pte());
        assert!(Level::PTE < Level::PMD && Level::PMD < Level::PUD);
        let all: Vec<Level> = Level::PUD.down_to_pte().collect();
        assert_eq!(all, [Level::PUD, Level::PMD, Level::PTE]);
    }

    #[test]
    fn addresses_align_and_index_by_size() {
        let va = VirtAddr::new(0x20_1234);
        assert_eq!(va.align_down(0x1000), VirtAddr::new(0x20_1000));
        assert_eq!(va.align_up(0x1000), VirtAddr::new(0x20_2000));
        assert_eq!(va.align_up(0x20_0000), VirtAddr::new(0x40_0000));
        assert_eq!(va.align_down(0x20_0000), VirtAddr::new(0x20_0000));
        // Aligned addresses stay where they are.
        let top = VirtAddr::new(0x40_0000);
        assert_eq!((top.align_up(0x1000), top.align_down(0x1000)), (top, top));
        assert!(top.is_aligned(0x20_0000) && !va.is_aligned(0x1000));
        assert_eq!(va.page_index(12), 0x201);
        assert_eq!(va.add(0x10).get(), 0x20_1244);
        assert_eq!(va.add(0x10).offset_from(va), 0x10);
        assert!(va < va.add(1));
        let pa = PhysAddr::new(0x8000_0fff);
        assert_eq!(pa.align_down(0x1000).get(), 0x8000_0000);
        assert_eq!(pa.page_index(12), 0x8_0000);
        assert_eq!(TableAddr::new(0x5000).phys(), PhysAddr::new(0x5000));
        assert_eq!(format!("{va} {pa}"), "0x201234 0x80000fff");
    }

    #[test]
    fn offsets_add_and_overflow_as_documented() {
        let va = VirtAddr::new(0x7fff_f000);
        assert_eq!(va + 0x1000, VirtAddr::new(0x8000_0000));
        let mut v = va;
        v += 0x20;
        assert_eq!(v, va.add(0x20));
        assert_eq!(v.sub(0x20), va);
        assert_eq!(va.checked_add(0x1000), Some(VirtAddr::new(0x8000_0000)));
        let top = VirtAddr::new(u64::MAX - 0xfff);
        assert_eq!(top.checked_add(0xfff), Some(VirtAddr::new(u64::MAX)));
        assert_eq!(top.checked_add(0x1000), None);
        assert_eq!(PhysAddr::new(u64::MAX).checked_add(1), None);
        assert_eq!(va.offset_in(0x1000), 0);
        assert_eq!(top.saturating_add(0x2000), VirtAddr::new(u64::MAX));
        assert_eq!(va.saturating_add(1), va + 1);
        assert_eq!(VirtAddr::new(0x20_1234).offset_in(0x20_0000), 0x1234);
    }

    #[test]
    fn addr_end_steps_to_the_next_block_or_the_range_end() {
        let pmd = 0x20_0000;
        let a = VirtAddr::new(0x20_1000);
        // Inside a block: its end; a block-aligned address: the next one.
        assert_eq!(
            a.addr_end(pmd, VirtAddr::new(0x100_0000)),
            VirtAddr::new(0x40_0000)
        );
        let b = VirtAddr::new(0x40_0000);
        assert_eq!(
            b.addr_end(pmd, VirtAddr::new(0x100_0000)),
            VirtAddr::new(0x60_0000)
        );
        // The range ends first.
        assert_eq!(
            a.addr_end(pmd, VirtAddr::new(0x30_0000)),
            VirtAddr::new(0x30_0000)
        );
        assert_eq!(
            a.addr_end(pmd, VirtAddr::new(0x40_0000)),
            VirtAddr::new(0x40_0000)
        );
        // The last block of the address space: its end does not fit in 64
        // bits, so the range's end is the step.
        let last = VirtAddr::new(u64::MAX - 0xf_ffff);
        let end = VirtAddr::new(u64::MAX);
        assert_eq!(last.addr_end(pmd, end), end);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "overflow")]
    fn an_offset_past_the_top_panics_in_debug_builds() {
        let _ = VirtAddr::new(u64::MAX) + 1;
    }

    #[test]
    fn frames_and_tables_are_named_by_physical_addresses() {
        let pa = PhysAddr::new(0x1234_5678);
        assert_eq!(pa.frame_number(12), 0x12345);
        assert_eq!(pa.frame_number(21), 0x91);
        let t = PhysAddr::new(0x7000).table();
        assert_eq!(t, TableAddr::new(0x7000));
        assert_eq!(t.phys(), PhysAddr::new(0x7000));
    }

    #[test]
    fn addresses_print_as_hex() {
        let va = VirtAddr::new(0xdead_b000);
        assert_eq!(format!("{va:?}"), "VirtAddr(0xdeadb000)");
        assert_eq!(format!("{:?}", PhysAddr::new(255)), "PhysAddr(0xff)");
        assert_eq!(format!("{:?}", TableAddr::new(0x5000)), "TableAddr(0x5000)");
        assert_eq!(format!("{va:#x} {va:x}"), "0xdeadb000 deadb000");
        assert_eq!(format!("{:#x}", TableAddr::new(0x5000)), "0x5000");
        // Through a struct's derived Debug too (what an assertion prints).
        assert_eq!(format!("{:?}", Some(va)), "Some(VirtAddr(0xdeadb000))");
    }

    #[test]
    #[should_panic(expected = "no level below")]
    fn nothing_is_below_the_pte_level() {
        let _ = Level::PTE.down();
    }

    #[test]
    #[should_panic(expected = "no such level")]
    fn levels_stop_at_the_deepest_geometry() {
        let _ = Level::new(crate::geometry::MAX_LEVELS);
    }
}
