//! The table-page allocator: slots of the arena, reused last-freed first;
//! PTE tables come from the compact zone when the memory has one (and fall
//! back to the arena when it is full).
//!
//! ## Invariants
//!
//! - A table page is zeroed when handed out, with a present count of 0 and
//!   the level it was asked for.
//! - A table page is either free or allocated exactly once: freeing a free
//!   page, or an address that is no table page, is reported and changes
//!   nothing (the `allocated` flag of its [`super::TableMeta`] decides).
//! - `live` counts the pages handed out and not freed; `upper_frees` only
//!   grows (the walk memo's invalidation counter, see `pt::accel`).

use super::{lock, AllocKind, MemError, PhysMem, TABLE_ZONE_BASE};
use crate::sync::Ordering;

pub(super) struct TableAlloc {
    pub(super) next_slot: u64,
    pub(super) free: Vec<u64>,
    pub(super) live: u64,
}

impl PhysMem {
    /// Allocates a zeroed table page for `level`.
    ///
    /// # Errors
    /// [`MemError::OutOfMemory`] when the arena is full or injection says so.
    pub fn alloc_table(&self, level: usize) -> Result<u64, MemError> {
        let kind = AllocKind::Table { level };
        if self.injected_failure(kind) {
            return Err(MemError::OutOfMemory(kind));
        }
        if level == 0 {
            if let Some(pa) = self.alloc_compact() {
                return Ok(pa);
            }
        }
        let slot = {
            let mut t = lock(&self.tables);
            let slot = match t.free.pop() {
                Some(s) => s,
                None => {
                    let s = t.next_slot;
                    if (s >> self.pages_per_chunk_shift) as usize >= self.chunks.len() {
                        return Err(MemError::OutOfMemory(kind));
                    }
                    t.next_slot += 1;
                    s
                }
            };
            t.live += 1;
            slot
        };
        let pa = TABLE_ZONE_BASE + (slot << self.page_shift);
        let words = self.page_words(slot);
        for w in words {
            w.store(0, Ordering::Relaxed);
        }
        let meta = self.meta_of_slot(slot);
        meta.present.store(0, Ordering::Relaxed);
        meta.level.store(level as u32, Ordering::Relaxed);
        meta.allocated.store(true, Ordering::Release);
        Ok(pa)
    }

    /// Returns a table page to the allocator. The caller guarantees that no
    /// entry links to it and no walker can still reach it.
    ///
    /// # Errors
    /// [`MemError::DoubleFree`] or [`MemError::NotAFrame`]; nothing changes.
    pub fn free_table(&self, pa: u64) -> Result<(), MemError> {
        if let Some((slot, _)) = self.compact_at(pa) {
            return self.free_compact(slot, pa);
        }
        let slot = self.slot_of(pa).ok_or(MemError::NotAFrame(pa))?;
        let meta = self.meta_of_slot(slot);
        if meta
            .allocated
            .compare_exchange(true, false, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return Err(MemError::DoubleFree(pa));
        }
        if meta.level() > 0 {
            self.upper_frees.fetch_add(1, Ordering::Relaxed);
        }
        let mut t = lock(&self.tables);
        t.free.push(slot);
        t.live -= 1;
        Ok(())
    }

    /// How many table pages of levels above 0 have been freed: while it
    /// stays the same, every such table a walk met is still a table of the
    /// level it was found at (what [`crate::table::WalkMemo`] relies on).
    #[inline]
    pub fn upper_table_frees(&self) -> u64 {
        self.upper_frees.load(Ordering::Relaxed)
    }

    /// Table pages currently allocated.
    pub fn live_tables(&self) -> u64 {
        lock(&self.tables).live + self.compact.as_ref().map_or(0, |c| c.live())
    }
}
