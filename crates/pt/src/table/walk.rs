//! The hardware walk's view of the tree: translate as the MMU walks,
//! and the walk's last word for a replay's prefetch.

use super::types::{Level, PhysAddr, VirtAddr};
use super::{PageTable, PtError, TableAddr, Translation};
use crate::entry::{self, Entry};
use crate::geometry::MAX_LEVELS;

impl PageTable {
    // ---------------------------------------------------------------
    // Translate.

    /// Walks the tree for `va` as the hardware would (the software view of
    /// a software-page geometry: one walk per software entry), recording the
    /// physical address of every hardware word read.
    ///
    /// # Errors
    /// [`PtError::NotMapped`] naming the level where the walk met an empty
    /// entry; [`PtError::OutOfRange`] for a non-canonical address;
    /// [`PtError::Corrupt`] for a reserved encoding.
    #[inline]
    pub fn translate(&self, va: VirtAddr) -> Result<Translation, PtError> {
        let g = &*self.geom;
        if !g.is_canonical(va.get()) {
            return Err(PtError::OutOfRange {
                va: va.get(),
                len: 1,
                va_bits: g.va_bits(),
            });
        }
        self.walk_to_leaf(va)
    }

    /// The walk of [`PageTable::translate`] for a canonical `va`. A table
    /// entry is tested and followed through the level's word test (which
    /// accepts exactly what [`entry::table_pa`] accepts, see
    /// `layout::TableFields`); any other word goes to the codec's decode.
    #[inline(always)]
    fn walk_to_leaf(&self, va: VirtAddr) -> Result<Translation, PtError> {
        let g = &*self.geom;
        let mut entry_pas = [PhysAddr::new(0); MAX_LEVELS];
        let mut table = self.root_table();
        for (i, (level, f)) in g.fast_levels().iter().enumerate().rev().enumerate() {
            let epa = table.phys() + f.word_offset(va.get());
            entry_pas[i] = epa;
            let reads = i + 1;
            let raw = self.mem.read_walk(epa.get());
            if raw & f.table.mask == f.table.value {
                table = TableAddr::new(f.table.next_table(raw));
                continue;
            }
            match entry::decode(g, level, raw)? {
                Entry::Table { pa } => table = TableAddr::new(pa),
                Entry::Invalid | Entry::Swap { .. } => {
                    return Err(PtError::NotMapped {
                        va: va.get(),
                        level: Level::new(level),
                    })
                }
                Entry::Leaf {
                    pa,
                    attrs,
                    contiguous,
                } => {
                    let size = if contiguous {
                        g.entry_size(level) * u64::from(g.contig(level).max(1))
                    } else {
                        g.entry_size(level)
                    };
                    return Ok(Translation {
                        pa: PhysAddr::new(entry::leaf_output(pa, size, va.get())),
                        size,
                        level: Level::new(level),
                        attrs,
                        contiguous,
                        entry_pas,
                        reads,
                    });
                }
            }
        }
        unreachable!("level 0 holds only leaves or nothing")
    }

    /// Hints the host to bring into its caches the word a walk for `va`
    /// reads at the lowest level it reaches ([`PageTable::last_walk_word`]):
    /// the levels above are read as a walk reads them (their few tables are
    /// usually cached), the last one is prefetched. A replay that knows its
    /// next addresses calls this a few accesses ahead, so that the walks'
    /// misses in the host's caches overlap instead of queueing. Changes
    /// nothing.
    #[inline]
    pub fn prefetch_walk(&self, va: VirtAddr) {
        if let Some(epa) = self.last_walk_word(va) {
            self.mem.prefetch(epa.get());
        }
    }

    /// The physical address of the last hardware word a walk for `va`
    /// reads: the leaf, or the first entry that is not a table; `None` for a
    /// non-canonical `va`. It reads the levels above with each level's table
    /// test and address fields rather than the codec: a replay calls it
    /// once per access.
    pub fn last_walk_word(&self, va: VirtAddr) -> Option<PhysAddr> {
        if !self.geom.is_canonical(va.get()) {
            return None;
        }
        Some(match self.table_on_path(va, Level::PTE) {
            Ok(table) => self.hw_entry_pa(table, Level::PTE, va),
            Err(last) => last,
        })
    }

    /// The table of `level` a walk for (canonical) `va` reaches, or the
    /// address of the word above it where the walk stops (a leaf or an
    /// empty entry).
    pub(super) fn table_on_path(&self, va: VirtAddr, level: Level) -> Result<TableAddr, PhysAddr> {
        let mut table = self.root_table();
        for f in self.geom.fast_levels()[level.get() + 1..].iter().rev() {
            let epa = table.phys() + f.word_offset(va.get());
            let raw = self.mem.read_walk(epa.get());
            if raw & f.table.mask != f.table.value {
                return Err(epa);
            }
            table = TableAddr::new(f.table.next_table(raw));
        }
        Ok(table)
    }
}
