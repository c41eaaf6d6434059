//! Iteration over the leaves of a range, read-only: the one entry loop
//! every range walk (edit, free, dump) shares, and the leaf it reports.

use super::types::{Level, PhysAddr, VirtAddr};
use super::{table_end, Mapping, PageTable, PtError, TableAddr};
use crate::entry::{Attrs, Entry};

impl PageTable {
    // ---------------------------------------------------------------
    // Iterate.

    /// Calls `f` for every leaf overlapping `[va, va + len)`, in address
    /// order; a contiguous run is reported once, whole.
    ///
    /// # Errors
    /// [`PtError::Corrupt`] for a reserved encoding.
    pub fn for_each_mapping(
        &self,
        va: VirtAddr,
        len: u64,
        f: &mut dyn FnMut(Mapping),
    ) -> Result<(), PtError> {
        if len == 0 {
            return Ok(());
        }
        self.walk_range(
            self.root_table(),
            self.root_level(),
            va,
            va.saturating_add(len - 1),
            f,
        )
    }

    /// Visits the entries of `table` (of `level`) that overlap `[first,
    /// last]`, in address order: `f(va, entry)` gets the first address the
    /// entry maps and returns how many bytes to step (the entry's size, or a
    /// whole contiguous run's). The one loop every range walk shares.
    pub(super) fn visit_entries(
        &self,
        table: TableAddr,
        level: Level,
        first: VirtAddr,
        last: VirtAddr,
        f: &mut dyn FnMut(VirtAddr, Entry) -> Result<u64, PtError>,
    ) -> Result<(), PtError> {
        let g = &*self.geom;
        let l = g.level(level.get());
        let size = l.entry_size();
        let stop = last.min(table_end(first, l.shift + l.bits));
        let mut va = first.align_down(size);
        while va <= stop {
            let step = f(va, self.read_entry(table, level, va)?)?;
            match va.align_down(step).checked_add(step) {
                Some(n) => va = n,
                None => break,
            }
        }
        Ok(())
    }

    /// The leaf found at `va` of `level`, whole: a contiguous run from its
    /// first entry.
    pub(super) fn leaf_mapping(
        &self,
        level: Level,
        va: VirtAddr,
        pa: u64,
        attrs: Attrs,
        contiguous: bool,
    ) -> Mapping {
        let size = self.entry_size(level);
        let run = if contiguous {
            size * self.contig_entries(level)
        } else {
            size
        };
        Mapping {
            va: va.align_down(run),
            pa: PhysAddr::new(pa).align_down(run),
            size: run,
            level,
            attrs,
            contiguous,
        }
    }

    fn walk_range(
        &self,
        table: TableAddr,
        level: Level,
        first: VirtAddr,
        last: VirtAddr,
        f: &mut dyn FnMut(Mapping),
    ) -> Result<(), PtError> {
        let size = self.entry_size(level);
        self.visit_entries(table, level, first, last, &mut |va, e| match e {
            Entry::Invalid | Entry::Swap { .. } => Ok(size),
            Entry::Table { pa } => {
                let (first, last) = (va.max(first), (va + (size - 1)).min(last));
                self.walk_range(TableAddr::new(pa), level.down(), first, last, f)?;
                Ok(size)
            }
            Entry::Leaf {
                pa,
                attrs,
                contiguous,
            } => {
                let m = self.leaf_mapping(level, va, pa, attrs, contiguous);
                f(m);
                Ok(m.size)
            }
        })
    }

    /// Every leaf overlapping the range.
    ///
    /// # Errors
    /// As [`PageTable::for_each_mapping`].
    pub fn mappings(&self, va: VirtAddr, len: u64) -> Result<Vec<Mapping>, PtError> {
        let mut v = Vec::new();
        self.for_each_mapping(va, len, &mut |m| v.push(m))?;
        Ok(v)
    }

    pub(super) fn first_mapping(&self, va: VirtAddr, len: u64) -> Result<Option<Mapping>, PtError> {
        // The walk is cheap for a sparse range; stop reporting after one.
        let mut found = None;
        self.for_each_mapping(va, len, &mut |m| {
            if found.is_none() {
                found = Some(m)
            }
        })?;
        Ok(found)
    }
}
