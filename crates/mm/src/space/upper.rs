//! The walk from the root to the PMD table, allocating the upper tables
//! it misses (Linux `__pud_alloc` / `__pmd_alloc`), and the lockless walk
//! that only looks.

use super::AddressSpace;
use crate::counters::ThreadCtx;
use crate::error::Errno;
use pt::{Entry, Level, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;

impl AddressSpace {
    /// The PMD table for `va`, if the upper levels exist (a lockless walk:
    /// locking invariant 2; Linux `pgd_offset` ... `pmd_offset`).
    ///
    /// # Errors
    /// `Err(level)`: the walk stopped at an entry of `level` that is not a
    /// table.
    #[inline]
    pub(crate) fn find_pmd_table(&self, va: VirtAddr) -> Result<TableAddr, Level> {
        let mut table = self.pt.root_table();
        let mut level = self.pt.root_level();
        while level > Level::PMD {
            table = self.pt.next_table(table, level, va).ok_or(level)?;
            level = level.down();
        }
        Ok(table)
    }

    /// The PMD table for `va`, allocating missing upper tables (Linux
    /// `__pud_alloc` / `__pmd_alloc`: allocate, then link under
    /// `page_table_lock` if still empty). A repeat of this thread's last
    /// walk is answered by [`crate::accel::PmdWalkCache`].
    #[inline]
    pub(crate) fn alloc_pmd_table(
        &self,
        ctx: &mut ThreadCtx,
        va: VirtAddr,
    ) -> Result<TableAddr, Errno> {
        if !self.pt.has_level(Level::PUD) {
            // The root is the PMD table.
            return Ok(self.pt.root_table());
        }
        let span = va.align_down(self.pt.entry_size(Level::PUD));
        // The mmap lock is held (read or write): `upper_gen` cannot move
        // under this walk.
        let gen = self.upper_gen.load(Ordering::Acquire);
        if let Some(table) = crate::accel::PmdWalkCache::get(self.id, gen, span) {
            return Ok(table);
        }
        let table = self.walk_alloc_pmd_table(ctx, va)?;
        crate::accel::PmdWalkCache::set(self.id, gen, span, table);
        Ok(table)
    }

    /// The walk [`AddressSpace::alloc_pmd_table`] caches.
    pub(crate) fn walk_alloc_pmd_table(
        &self,
        ctx: &mut ThreadCtx,
        va: VirtAddr,
    ) -> Result<TableAddr, Errno> {
        let mut table = self.pt.root_table();
        let mut level = self.pt.root_level();
        while level > Level::PMD {
            if self.pt.is_none(table, level, va) {
                let ptl = || self.lock_counted(ctx, &self.ptl, crate::LockClass::PageTableLock);
                self.pt.alloc_install(table, level, va, ptl)?;
            }
            table = match self.pt.read_entry(table, level, va)? {
                Entry::Table { pa } => TableAddr::new(pa),
                _ => {
                    return Err(Errno::Internal(format!(
                        "a leaf at {level} above the PMD for {va:#x}"
                    )))
                }
            };
            level = level.down();
        }
        Ok(table)
    }
}
