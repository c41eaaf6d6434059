//! Moving page tables (Linux mm/mremap.c `move_page_tables` and below,
//! mm/huge_memory.c `move_huge_pmd`): extent by extent, whole tables where
//! the module invariants of [`super`] allow, else entry by entry.

use super::Remapped;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::{lock_plain, AddressSpace};
use crate::vma::Vma;
use pt::table::Flush;
use pt::{Entry, Level, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;

/// The state of one `move_page_tables` (Linux `struct
/// pagetable_move_control`): the next source address to move and where it
/// goes, up to the end of the source range.
///
/// Invariant: `old_addr <= old_end`, and `new_addr - old_addr` stays the
/// distance of the move (both advance by each extent).
struct PagetableMove<'a> {
    vma: &'a Vma,
    old_addr: u64,
    new_addr: u64,
    old_end: u64,
    /// The geometry has a PUD level: PMD tables can move whole.
    pud: bool,
}

/// One entry's move: the entry of `old_table` for `old` goes to the entry
/// of `new_table` for `new` (both tables of the same level; for
/// `move_ptes`, the PMD tables above the PTE tables).
#[derive(Clone, Copy)]
struct EntryMove {
    old_table: TableAddr,
    new_table: TableAddr,
    old: VirtAddr,
    new: VirtAddr,
}

/// Linux `get_extent`: how much of `[old, old_end)` to move in one step
/// so that neither side crosses a boundary of `size`.
fn get_extent(size: u64, old: u64, old_end: u64, new: u64) -> u64 {
    let mask = !(size - 1);
    // Wrapping: at the top of the address space `next` overflows to 0,
    // and the difference is still the distance to the boundary.
    let mut extent = (old.wrapping_add(size) & mask).wrapping_sub(old);
    extent = extent.min(old_end - old);
    extent.min((new.wrapping_add(size) & mask).wrapping_sub(new))
}

impl AddressSpace {
    // Linux: mm/mremap.c, move_page_tables
    /// Moves the entries of `[old, old + len)` to `[new, new + len)`,
    /// extent by extent (see the module invariants).
    pub(super) fn move_page_tables(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        old: u64,
        new: u64,
        len: u64,
        d: &mut Deferred,
    ) -> Result<Remapped, Errno> {
        let mut out = Remapped::default();
        let mut pmc = PagetableMove {
            vma,
            old_addr: old,
            new_addr: new,
            old_end: old + len,
            // PUD-level moves need a PUD table to move a PMD table out of.
            pud: self.pt.has_level(Level::PUD),
        };
        while pmc.old_addr < pmc.old_end {
            let extent = self.move_extent(ctx, &pmc, &mut out, d)?;
            pmc.old_addr += extent;
            pmc.new_addr += extent;
        }
        Ok(out)
    }

    /// One step of [`AddressSpace::move_page_tables`] from `pmc`'s next
    /// source address; returns the bytes it covered.
    fn move_extent(
        &self,
        ctx: &mut ThreadCtx,
        pmc: &PagetableMove,
        out: &mut Remapped,
        d: &mut Deferred,
    ) -> Result<u64, Errno> {
        let PagetableMove {
            vma,
            old_addr: o,
            new_addr: n,
            old_end,
            pud,
        } = *pmc;
        let (ov, nv) = (VirtAddr::new(o), VirtAddr::new(n));
        if pud {
            let size = self.pt.entry_size(Level::PUD);
            let extent = get_extent(size, o, old_end, n);
            // Linux: get_old_pud (nothing there: nothing to move).
            let Some(old_pud) = self.table_for(ov, Level::PUD) else {
                return Ok(extent);
            };
            if self.pt.is_none(old_pud, Level::PUD, ov) {
                return Ok(extent);
            }
            // Linux: alloc_new_pud
            let new_pud = self.alloc_table_for(ctx, nv, Level::PUD)?;
            let m = EntryMove {
                old_table: old_pud,
                new_table: new_pud,
                old: ov,
                new: nv,
            };
            if extent == size && self.move_normal_pud(ctx, m, d)? {
                out.pmd_tables_moved += 1;
                return Ok(extent);
            }
        }
        let extent = get_extent(self.pmd_size, o, old_end, n);
        // Linux: get_old_pmd
        let Some(old_pmd) = self.table_for(ov, Level::PMD) else {
            return Ok(extent);
        };
        if self.pt.is_none(old_pmd, Level::PMD, ov) {
            return Ok(extent);
        }
        // Linux: alloc_new_pmd
        let new_pmd = self.alloc_table_for(ctx, nv, Level::PMD)?;
        let m = EntryMove {
            old_table: old_pmd,
            new_table: new_pmd,
            old: ov,
            new: nv,
        };
        let whole = extent == self.pmd_size;
        match self.pt.read_entry(old_pmd, Level::PMD, ov)? {
            Entry::Leaf { .. } => {
                if whole && self.move_huge_pmd(ctx, vma, m, d)? {
                    out.huge_pmds_moved += 1;
                    return Ok(extent);
                }
                // Linux: split_huge_pmd
                let g = self.pmd_lock(ctx, old_pmd);
                let r = self.split_huge_pmd_locked(vma, old_pmd, ov, d);
                drop(g);
                r?;
            }
            Entry::Table { .. } => {
                if whole && self.move_normal_pmd(ctx, m, d)? {
                    out.pte_tables_moved += 1;
                    return Ok(extent);
                }
            }
            Entry::Invalid | Entry::Swap { .. } => return Ok(extent),
        }
        // A file folio's split leaves nothing mapped here.
        if self.pt.is_none(old_pmd, Level::PMD, ov) {
            return Ok(extent);
        }
        // Linux: pte_alloc of the destination, then move_ptes.
        if self.pt.is_none(new_pmd, Level::PMD, nv) {
            let lock = || self.pmd_lock(ctx, new_pmd);
            self.pt.alloc_install(new_pmd, Level::PMD, nv, lock)?;
        }
        out.ptes_moved += self.move_ptes(ctx, m, extent, d)?;
        Ok(extent)
    }

    /// The table holding the entries of `level` for `va`, if the levels
    /// above it exist (a walk that allocates nothing).
    fn table_for(&self, va: VirtAddr, level: Level) -> Option<TableAddr> {
        let mut table = self.pt.root_table();
        let mut l = self.pt.root_level();
        while l > level {
            table = self.pt.next_table(table, l, va)?;
            l = l.down();
        }
        Some(table)
    }

    /// [`AddressSpace::table_for`], allocating the missing tables above
    /// `level` (Linux `alloc_new_pud` / `alloc_new_pmd`: `pud_alloc`,
    /// `pmd_alloc` under `page_table_lock`).
    fn alloc_table_for(
        &self,
        ctx: &mut ThreadCtx,
        va: VirtAddr,
        level: Level,
    ) -> Result<TableAddr, Errno> {
        let mut table = self.pt.root_table();
        let mut l = self.pt.root_level();
        while l > level {
            if self.pt.is_none(table, l, va) {
                let ptl = || self.lock_counted(ctx, &self.ptl, crate::LockClass::PageTableLock);
                self.pt.alloc_install(table, l, va, ptl)?;
            }
            table = self.pt.next_table(table, l, va).ok_or_else(|| {
                Errno::Internal(format!("a leaf at {l} above the {level} for {va:#x}"))
            })?;
            l = l.down();
        }
        Ok(table)
    }

    // Linux: mm/mremap.c, move_normal_pud
    /// Moves the PMD table under the PUD entry for `m.old` to the empty
    /// entry for `m.new`; `false` if the destination entry is in use.
    fn move_normal_pud(
        &self,
        ctx: &mut ThreadCtx,
        m: EntryMove,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        let EntryMove {
            old_table: old_pud,
            new_table: new_pud,
            old: o,
            new: n,
        } = m;
        if !self.pt.is_none(new_pud, Level::PUD, n) {
            return Ok(false);
        }
        // Linux: pud_lock is mm->page_table_lock.
        let g = self.lock_counted(ctx, &self.ptl, crate::LockClass::PageTableLock);
        let Some(pmd_table) = self.pt.next_table(old_pud, Level::PUD, o) else {
            return Ok(false);
        };
        self.pt.pte_clear(old_pud, Level::PUD, o);
        self.pt
            .set_entry(new_pud, Level::PUD, n, &Entry::Table { pa: pmd_table.pa() });
        drop(g);
        let size = self.pt.entry_size(Level::PUD);
        // The deposits of the huge PMDs under it are keyed by address.
        {
            let mut deps = lock_plain(&self.deposits);
            let keys: Vec<u64> = deps
                .keys()
                .copied()
                .filter(|a| (o.get()..o.get() + size).contains(a))
                .collect();
            for a in keys {
                let t = deps.remove(&a).expect("listed above");
                deps.insert(a - o.get() + n.get(), t);
            }
        }
        // A PMD table moved: every thread's cached walk to one is stale.
        self.upper_gen.fetch_add(1, Ordering::Release);
        self.flush_moved(ctx, o.get(), size, d);
        Ok(true)
    }

    // Linux: mm/mremap.c, move_normal_pmd
    /// Moves the PTE table under the PMD entry for `m.old` to the empty
    /// entry for `m.new`; `false` if the destination entry is in use.
    fn move_normal_pmd(
        &self,
        ctx: &mut ThreadCtx,
        m: EntryMove,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        let EntryMove {
            old_table: old_pmd,
            new_table: new_pmd,
            old: o,
            new: n,
        } = m;
        if !self.pt.is_none(new_pmd, Level::PMD, n) {
            return Ok(false);
        }
        let (g_old, g_new) = self.pmd_lock_pair(ctx, old_pmd, new_pmd);
        let Some(pte_table) = self.pt.next_table(old_pmd, Level::PMD, o) else {
            return Ok(false);
        };
        self.pt.pte_clear(old_pmd, Level::PMD, o);
        self.pt
            .set_entry(new_pmd, Level::PMD, n, &Entry::Table { pa: pte_table.pa() });
        drop(g_new);
        drop(g_old);
        self.flush_moved(ctx, o.get(), self.pmd_size, d);
        Ok(true)
    }

    // Linux: mm/huge_memory.c, move_huge_pmd
    /// Moves the huge PMD leaf for `m.old` to the empty entry for `m.new`, with its
    /// deposited table (`pgtable_trans_huge_withdraw` / `_deposit`; a
    /// page-cache folio has none); `false` if the destination is in use.
    fn move_huge_pmd(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        m: EntryMove,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        let EntryMove {
            old_table: old_pmd,
            new_table: new_pmd,
            old: o,
            new: n,
        } = m;
        if !self.pt.is_none(new_pmd, Level::PMD, n) {
            return Ok(false);
        }
        let (g_old, g_new) = self.pmd_lock_pair(ctx, old_pmd, new_pmd);
        let e = self.pt.ptep_get_and_clear(old_pmd, Level::PMD, o)?;
        self.pt.set_entry(new_pmd, Level::PMD, n, &e);
        if self.file_pmd_rss(vma).is_none() {
            let mut deps = lock_plain(&self.deposits);
            let t = deps
                .remove(&o.get())
                .ok_or_else(|| Errno::Internal(format!("no deposited table for {o:#x}")))?;
            deps.insert(n.get(), t);
        }
        drop(g_new);
        drop(g_old);
        self.flush_moved(ctx, o.get(), self.pmd_size, d);
        Ok(true)
    }

    // Linux: mm/mremap.c, move_ptes
    /// Moves the PTEs of `[m.old, m.old + len)` (inside one PTE table,
    /// under the PMD entry of `m.old_table`) to the PTE table under the PMD
    /// entry of `m.new_table` for `m.new`; returns how many it moved.
    /// Contiguous runs are unfolded first (Linux arm64
    /// `get_and_clear_full_ptes`).
    fn move_ptes(
        &self,
        ctx: &mut ThreadCtx,
        m: EntryMove,
        len: u64,
        d: &mut Deferred,
    ) -> Result<u64, Errno> {
        let EntryMove {
            old_table: old_pmd,
            new_table: new_pmd,
            old: o,
            new: n,
        } = m;
        let missing = || Errno::Internal(format!("move_ptes without a PTE table at {o:#x}"));
        let old_t = self
            .pt
            .next_table(old_pmd, Level::PMD, o)
            .ok_or_else(missing)?;
        let new_t = self
            .pt
            .next_table(new_pmd, Level::PMD, n)
            .ok_or_else(missing)?;
        let (m_old, c_old) = self.pte_lockptr(old_t);
        let g_old = self.lock_counted(ctx, m_old, c_old);
        let (m_new, c_new) = self.pte_lockptr(new_t);
        let g_new = (!std::ptr::eq(m_old, m_new)).then(|| self.lock_counted(ctx, m_new, c_new));
        let mut moved = 0;
        let mut off = 0;
        while off < len {
            let (a, b) = (o + off, n + off);
            off += self.page;
            let e = match self.pt.read_entry(old_t, Level::PTE, a)? {
                Entry::Invalid => continue,
                Entry::Leaf {
                    contiguous: true, ..
                } => {
                    self.pt.contpte_try_unfold(old_t, Level::PTE, a)?;
                    self.pt.read_entry(old_t, Level::PTE, a)?
                }
                e => e,
            };
            self.pt.pte_clear(old_t, Level::PTE, a);
            let e = match e {
                Entry::Leaf { pa, attrs, .. } => Entry::Leaf {
                    pa,
                    attrs,
                    contiguous: false,
                },
                e => e,
            };
            self.pt.set_entry(new_t, Level::PTE, b, &e);
            moved += 1;
        }
        drop(g_new);
        drop(g_old);
        if moved > 0 {
            self.flush_moved(ctx, o.get(), len, d);
        }
        Ok(moved)
    }

    /// The PMD locks of two PMD tables, the second only if it is another
    /// lock (Linux: `pmd_lock`, then `spin_lock_nested` if they differ).
    fn pmd_lock_pair(
        &self,
        ctx: &mut ThreadCtx,
        old_pmd: TableAddr,
        new_pmd: TableAddr,
    ) -> (pt::sync::SpinGuard<'_>, Option<pt::sync::SpinGuard<'_>>) {
        let (m_old, c) = self.pmd_lockptr(old_pmd);
        let g_old = self.lock_counted(ctx, m_old, c);
        let (m_new, c) = self.pmd_lockptr(new_pmd);
        let g_new = (!std::ptr::eq(m_old, m_new)).then(|| self.lock_counted(ctx, m_new, c));
        (g_old, g_new)
    }

    /// Linux `flush_tlb_range` after moving `[va, va + len)`: through the
    /// table flusher while the mmap lock is held (a moved table must not be
    /// reached through the old address once the lock is dropped), or left
    /// to the caller's shootdown when none is installed.
    fn flush_moved(&self, ctx: &ThreadCtx, va: u64, len: u64, d: &mut Deferred) {
        match self.table_flusher.get() {
            Some(f) => {
                let flush = Flush {
                    ranges: vec![(va, len)],
                };
                f(crate::gather::GatherFlush {
                    cpu: ctx.cpu,
                    flush: &flush,
                    tables_too: true,
                    pt: &self.pt,
                    tables: pt::table::FreedTables::default(),
                });
                flush.done();
            }
            None => {
                d.add_flush(va, len);
                d.flush_tables = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::get_extent;

    const M2: u64 = 2 << 20;

    #[test]
    fn extents_stop_at_either_sides_boundary() {
        // Both aligned: a whole PMD span.
        assert_eq!(get_extent(M2, 4 * M2, 10 * M2, 8 * M2), M2);
        // The end of the range comes first.
        assert_eq!(get_extent(M2, 4 * M2, 4 * M2 + 4096, 8 * M2), 4096);
        // The source is 4 KiB into a span: up to its boundary.
        assert_eq!(get_extent(M2, M2 + 4096, 10 * M2, 8 * M2), M2 - 4096);
        // The destination's boundary comes first.
        assert_eq!(get_extent(M2, M2, 10 * M2, 3 * M2 - 8192), 8192);
        // At the top of the address space the next boundary wraps to 0.
        let top = u64::MAX - M2 + 1;
        assert_eq!(get_extent(M2, top, u64::MAX, 0), M2 - 1);
    }
}
