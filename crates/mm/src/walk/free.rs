//! Freeing the page tables no VMA needs any more (Linux mm/memory.c
//! `free_pgtables` / `free_pgd_range` down through `free_pte_range`), run
//! after munmap's zap under the mmap lock held for writing (locking
//! invariant 2).

use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::AddressSpace;
use pt::{Entry, Level, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;

/// What `free_pgd_range` frees: every table below the root that overlaps
/// `[start, end)` and lies wholly inside `[floor, ceiling)`.
///
/// Invariant: `floor <= start` and `end <= ceiling` (the unmapped range
/// lies between its neighbouring VMAs); `start < end` for a range with
/// anything to free. The walk narrows `[start, end)` to each table's span
/// and keeps `[floor, ceiling)`.
#[derive(Clone, Copy)]
struct FreeRange {
    start: VirtAddr,
    end: VirtAddr,
    floor: VirtAddr,
    ceiling: VirtAddr,
}

impl AddressSpace {
    /// Linux `free_pgtables` / `free_pgd_range`: frees every table below the
    /// root that overlaps `[start, end)` and lies wholly inside
    /// `[floor, ceiling)` (no VMA needs any part of it). Runs under the mmap
    /// lock held for writing (locking invariant 2).
    pub(crate) fn free_pgtables(
        &self,
        ctx: &ThreadCtx,
        start: u64,
        end: u64,
        floor: u64,
        ceiling: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        // Invalidates every thread's cached walk (upper tables may go).
        self.upper_gen.fetch_add(1, Ordering::Release);
        let (root, level) = (self.pt.root_table(), self.pt.root_level());
        let [start, end, floor, ceiling] = [start, end, floor, ceiling].map(VirtAddr::new);
        let r = FreeRange {
            start,
            end,
            floor,
            ceiling,
        };
        self.free_walk(ctx, root, level, r, d)
    }

    // Linux: mm/memory.c, free_pgd_range (down through free_pte_range)
    fn free_walk(
        &self,
        ctx: &ThreadCtx,
        table: TableAddr,
        level: Level,
        r: FreeRange,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if level.is_pte() || r.start >= r.end {
            return Ok(());
        }
        let size = self.pt.entry_size(level);
        let mut va = r.start.align_down(size);
        while va < r.end {
            if let Some(child) = self.pt.next_table(table, level, va) {
                let hi = va.saturating_add(size);
                if va >= r.floor && hi <= r.ceiling {
                    self.free_subtree(ctx, child, level.down(), va, d)?;
                    self.pt.unlink_table(table, level, va);
                    d.add_table(level.down(), child, va.get(), size);
                    self.gather_check(ctx, d)?;
                } else {
                    let inner = FreeRange {
                        start: r.start.max(va),
                        end: r.end.min(hi),
                        ..r
                    };
                    self.free_walk(ctx, child, level.down(), inner, d)?;
                }
            }
            match va.checked_add(size) {
                Some(n) => va = n,
                None => break,
            }
        }
        Ok(())
    }

    fn free_subtree(
        &self,
        ctx: &ThreadCtx,
        table: TableAddr,
        level: Level,
        base: VirtAddr,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if level.is_pte() {
            let present = self.pt.present_entries(table);
            if present != 0 {
                return Err(Errno::Internal(format!(
                    "free_pgtables: PTE table at {base:#x} still maps {present} pages"
                )));
            }
            return Ok(());
        }
        let size = self.pt.entry_size(level);
        for i in 0..self.pt.ptrs_per_table(level) {
            let va = base + i * size;
            match self.pt.read_entry(table, level, va)? {
                Entry::Table { pa } => {
                    let child = TableAddr::new(pa);
                    self.free_subtree(ctx, child, level.down(), va, d)?;
                    // Linux: free_pte_range's pmd_clear (and pud_clear, ...):
                    // the entry goes before the table is gathered, so a
                    // table the gather frees midway is unreachable.
                    self.pt.unlink_table(table, level, va);
                    d.add_table(level.down(), child, va.get(), size);
                    self.gather_check(ctx, d)?;
                }
                Entry::Leaf { .. } | Entry::Swap { .. } => {
                    return Err(Errno::Internal(format!(
                        "free_pgtables: a leaf or swap entry at {va:#x} outside every VMA"
                    )))
                }
                Entry::Invalid => {}
            }
        }
        Ok(())
    }
}
