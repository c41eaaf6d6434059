//! The tree-wide conveniences that change it: map, unmap, protect,
//! free_empty and teardown, each the table layer's primitives driven over
//! a range (for callers without an OS model).

use super::types::{Level, PhysAddr, VirtAddr};
use super::{
    table_end, Flush, FreedTables, LeafRun, Mapping, PageTable, PtError, TableAddr, Unmapped,
};
use crate::entry::{Attrs, Entry, Perms};
use crate::geometry::LeafKind;

impl PageTable {
    // ---------------------------------------------------------------
    // Map.

    /// Maps `[va, va + len)` to `[pa, pa + len)` with leaves of `leaf_size`
    /// (any size [`Geometry::leaf_sizes`] lists: a page, a block, or a
    /// contiguous / NAPOT run). Either everything is mapped or nothing.
    ///
    /// # Errors
    /// [`PtError::BadLeafSize`], [`PtError::Misaligned`] (va, pa or len not
    /// multiples of the leaf size), [`PtError::OutOfRange`],
    /// [`PtError::PhysOutOfRange`], [`PtError::AlreadyMapped`] if any page
    /// of the range is mapped, [`PtError::Mem`] if tables run out.
    pub fn map(
        &self,
        va: VirtAddr,
        pa: PhysAddr,
        len: u64,
        leaf_size: u64,
        attrs: Attrs,
    ) -> Result<(), PtError> {
        let kind = self.leaf_kind(leaf_size)?;
        self.check_representable(&attrs)?;
        Self::check_aligned("virtual address", va.get(), leaf_size)?;
        Self::check_aligned("physical address", pa.get(), leaf_size)?;
        Self::check_aligned("length", len, leaf_size)?;
        self.check_va(va.get(), len)?;
        let oa = self.geom.oa_bits();
        if pa.checked_add(len).is_none_or(|end| end.get() > 1u64 << oa) {
            return Err(PtError::PhysOutOfRange {
                pa: pa.get(),
                len,
                oa_bits: oa,
            });
        }
        if let Some(m) = self.first_mapping(va, len)? {
            return Err(PtError::AlreadyMapped {
                va: m.va.max(va).get(),
            });
        }
        let mut done = 0;
        while done < len {
            match self.map_in_one_table(va + done, pa + done, len - done, kind, attrs) {
                Ok(n) => done += n,
                Err(e) => {
                    if done > 0 {
                        // Keep the all-or-nothing promise.
                        let undone = self.unmap(va, done)?;
                        undone.flush.done();
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Maps leaves from `va` up to `len` bytes or the end of the table that
    /// holds them, whichever comes first; returns the bytes mapped. One walk
    /// from the root serves a whole table of leaves.
    fn map_in_one_table(
        &self,
        va: VirtAddr,
        pa: PhysAddr,
        len: u64,
        kind: LeafKind,
        attrs: Attrs,
    ) -> Result<u64, PtError> {
        let g = &*self.geom;
        let leaf_level = Level::new(kind.level);
        let mut table = self.root_table();
        for level in self
            .root_level()
            .down_to_pte()
            .take_while(|l| *l > leaf_level)
        {
            table = self.table_below(table, level, va)?;
        }
        let l = g.level(kind.level);
        let step = l.entry_size();
        let table_left = table_end(va, l.shift + l.bits).offset_from(va) + 1;
        let n = len.min(table_left);
        let contiguous = kind.is_contiguous();
        let mut off = 0;
        while off < n {
            // An empty table below a would-be huge leaf must be freed first
            // (Linux maps a THP only on a pmd_none entry).
            if let Entry::Table { .. } = self.read_entry(table, leaf_level, va + off)? {
                return Err(PtError::TableInTheWay {
                    va: (va + off).get(),
                    level: leaf_level,
                });
            }
            off += step;
        }
        self.set_ptes(
            table,
            leaf_level,
            LeafRun {
                va,
                pa,
                nr: n / step,
                attrs,
                contiguous,
            },
        );
        Ok(n)
    }

    /// The table below the entry for `va` of `table` (of `level`),
    /// installing an empty one if the entry is empty (under the parent
    /// table's own lock: the tree-wide operations have no OS model to say
    /// which lock covers an entry).
    ///
    /// # Errors
    /// [`PtError::AlreadyMapped`] if the entry is a leaf; [`PtError::Mem`]
    /// if no table page can be had.
    fn table_below(
        &self,
        table: TableAddr,
        level: Level,
        va: VirtAddr,
    ) -> Result<TableAddr, PtError> {
        if let Some(t) = self.next_table(table, level, va) {
            return Ok(t);
        }
        if self.is_none(table, level, va) {
            self.alloc_install(table, level, va, || self.ptlock_ptr(table).lock())?;
        }
        match self.read_entry(table, level, va)? {
            Entry::Table { pa } => Ok(TableAddr::new(pa)),
            _ => Err(PtError::AlreadyMapped { va: va.get() }),
        }
    }

    // ---------------------------------------------------------------
    // Unmap and protect.

    /// Removes every leaf in `[va, va + len)`, splitting a huge leaf or a
    /// contiguous run that is only partly inside. Tables are not freed (see
    /// [`PageTable::free_empty`]).
    ///
    /// # Errors
    /// [`PtError::Misaligned`] (va or len not multiples of the base page),
    /// [`PtError::OutOfRange`], [`PtError::Mem`] if a split needs a table
    /// page and none can be had (the tree is unchanged for the leaf being split).
    pub fn unmap(&self, va: VirtAddr, len: u64) -> Result<Unmapped, PtError> {
        let page = self.geom.page_size();
        Self::check_aligned("virtual address", va.get(), page)?;
        Self::check_aligned("length", len, page)?;
        self.check_va(va.get(), len)?;
        let mut out = Unmapped::default();
        self.edit_range(va, len, &mut |pt, table, level, m| {
            let step = pt.entry_size(level);
            for i in 0..m.size / step {
                pt.pte_clear(table, level, m.va + i * step);
            }
            out.pieces.push((m.va.get(), m.pa.get(), m.size));
            out.flush.add(m.va.get(), m.size);
        })?;
        Ok(out)
    }

    /// Sets the permissions of every leaf in `[va, va + len)` to `perms`,
    /// keeping the other attributes (accessed, dirty, memory type), splitting
    /// leaves partly inside.
    ///
    /// # Errors
    /// As [`PageTable::unmap`].
    pub fn protect(&self, va: VirtAddr, len: u64, perms: Perms) -> Result<Flush, PtError> {
        let page = self.geom.page_size();
        self.check_representable(&Attrs::new(perms))?;
        Self::check_aligned("virtual address", va.get(), page)?;
        Self::check_aligned("length", len, page)?;
        self.check_va(va.get(), len)?;
        let mut flush = Flush::default();
        self.edit_range(va, len, &mut |pt, table, level, m| {
            let step = pt.entry_size(level);
            let attrs = Attrs { perms, ..m.attrs };
            pt.set_ptes(
                table,
                level,
                LeafRun {
                    va: m.va,
                    pa: m.pa,
                    nr: m.size / step,
                    attrs,
                    contiguous: m.contiguous,
                },
            );
            flush.add(m.va.get(), m.size);
        })?;
        Ok(flush)
    }

    /// Applies `edit` to every leaf wholly inside `[va, va + len)` after
    /// splitting the leaves that straddle its ends. `edit` gets the table and
    /// level holding the leaf and the leaf itself (a whole run for
    /// contiguous leaves).
    fn edit_range(
        &self,
        va: VirtAddr,
        len: u64,
        edit: &mut dyn FnMut(&PageTable, TableAddr, Level, Mapping),
    ) -> Result<(), PtError> {
        self.split_at(va)?;
        // The end needs a split only if something can lie beyond it.
        if let Some(end) = va
            .checked_add(len)
            .filter(|e| self.geom.is_canonical(e.get()))
        {
            self.split_at(end)?;
        }
        self.edit_walk(
            self.root_table(),
            self.root_level(),
            va,
            va + (len - 1),
            edit,
        )
    }

    fn edit_walk(
        &self,
        table: TableAddr,
        level: Level,
        first: VirtAddr,
        last: VirtAddr,
        edit: &mut dyn FnMut(&PageTable, TableAddr, Level, Mapping),
    ) -> Result<(), PtError> {
        let size = self.entry_size(level);
        self.visit_entries(table, level, first, last, &mut |va, e| match e {
            Entry::Invalid | Entry::Swap { .. } => Ok(size),
            Entry::Table { pa } => {
                self.edit_walk(
                    TableAddr::new(pa),
                    level.down(),
                    va.max(first),
                    (va + (size - 1)).min(last),
                    edit,
                )?;
                Ok(size)
            }
            Entry::Leaf {
                pa,
                attrs,
                contiguous,
            } => {
                let m = self.leaf_mapping(level, va, pa, attrs, contiguous);
                // split_at guarantees leaves here lie wholly inside.
                debug_assert!(m.va >= first && m.va + (m.size - 1) <= last);
                edit(self, table, level, m);
                Ok(m.size)
            }
        })
    }

    /// Makes `boundary` (a base-page-aligned address) a boundary between
    /// leaves: unfolds the contiguous run and splits the huge leaf that
    /// straddle it, through the table layer's primitives (under each
    /// table's own lock, as [`PageTable::table_below`] installs).
    fn split_at(&self, boundary: VirtAddr) -> Result<(), PtError> {
        let mut table = self.root_table();
        for level in self.root_level().down_to_pte() {
            match self.read_entry(table, level, boundary)? {
                Entry::Invalid | Entry::Swap { .. } => return Ok(()),
                Entry::Table { pa } => table = TableAddr::new(pa),
                Entry::Leaf { .. } => {
                    let _lock = self.ptlock_ptr(table).lock();
                    self.contpte_try_unfold(table, level, boundary)?;
                    if boundary.is_aligned(self.entry_size(level)) {
                        return Ok(());
                    }
                    // A huge leaf straddles the boundary: split it one level down.
                    let child = self.alloc_table(level.down())?;
                    match self.split_huge_leaf(table, level, boundary, child, None) {
                        Ok(true) => {}
                        other => {
                            self.free_table(child)?;
                            other?;
                        }
                    }
                    table = child;
                }
            }
        }
        Ok(())
    }

    // ---------------------------------------------------------------
    // Freeing tables.

    /// Unlinks every table below the root that maps nothing and lies in
    /// `[va, va + len)`'s tables, bottom-up (a parent emptied by freeing its
    /// children goes too). The tables are returned by [`FreedTables::release`].
    ///
    /// # Errors
    /// [`PtError::Corrupt`] for a reserved encoding.
    pub fn free_empty(&self, va: VirtAddr, len: u64) -> Result<FreedTables, PtError> {
        let mut out = FreedTables::default();
        if len > 0 {
            self.free_walk(
                self.root_table(),
                self.root_level(),
                va,
                va.saturating_add(len - 1),
                &mut out,
            )?;
        }
        Ok(out)
    }

    fn free_walk(
        &self,
        table: TableAddr,
        level: Level,
        first: VirtAddr,
        last: VirtAddr,
        out: &mut FreedTables,
    ) -> Result<(), PtError> {
        if level.is_pte() {
            return Ok(());
        }
        let size = self.entry_size(level);
        self.visit_entries(table, level, first, last, &mut |va, e| {
            if let Entry::Table { pa } = e {
                let child = TableAddr::new(pa);
                let (first, last) = (va.max(first), (va + (size - 1)).min(last));
                self.free_walk(child, level.down(), first, last, out)?;
                if self.present_entries(child) == 0 {
                    self.unlink_table(table, level, va);
                    out.tables.push((level.down(), child));
                    out.flush.add(va.get(), size);
                }
            }
            Ok(size)
        })
    }

    /// Frees every table page of the tree, the root included, without
    /// touching data frames (their owner frees them). After this the tree
    /// must not be used.
    ///
    /// # Errors
    /// A [`MemError`] if a table was already freed (a bug).
    pub fn teardown(&self) -> Result<(), PtError> {
        self.teardown_walk(self.root_table(), self.root_level())?;
        self.mem.free_table(self.root)?;
        for c in &self.tables_per_level {
            c.store(0, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    fn teardown_walk(&self, table: TableAddr, level: Level) -> Result<(), PtError> {
        if level.is_pte() {
            return Ok(());
        }
        let size = self.entry_size(level);
        for i in 0..self.ptrs_per_table(level) {
            let va = VirtAddr::new(i * size);
            if let Some(child) = self.next_table(table, level, va) {
                self.teardown_walk(child, level.down())?;
                self.free_table(child)?;
            }
        }
        Ok(())
    }
}
