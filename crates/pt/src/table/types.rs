//! The types of the table layer's boundary: a level of the tree and the
//! physical address of a table page.
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

use std::fmt;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TableAddr(u64);

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
