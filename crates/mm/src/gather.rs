//! The bounded gather of a zap (Linux `struct mmu_gather`, mm/mmu_gather.c):
//! how many freed pages and page-table pages an operation may hold before it
//! must flush the TLB and free them, and that flush.
//!
//! ## Invariants
//!
//! 1. A [`Deferred`] never holds more than [`GatherLimits::pages`] page
//!    entries nor more than [`GatherLimits::tables`] page-table pages
//!    counted in its batches: the entry that fills a batch is followed, at
//!    the next point where no page-table lock is held, by a flush that
//!    empties it. So the memory of a zap is bounded whatever its range.
//! 2. Flush before free (as [`crate::deferred`]): the flush shoots down every
//!    range gathered so far, through the space's table flusher while the
//!    caller still holds the mmap lock, and only then are the batched frames
//!    freed and the batched tables handed over to be freed.
//! 3. The flushes are counted as Linux counts them: a full page batch is one
//!    `tlb_flush_mmu` (one TLB flush, then the pages and tables freed); a
//!    full table batch is one `tlb_table_flush` (one TLB flush, then the
//!    tables freed, the pages staying in their batch); what is left at the
//!    end is the operation's own flush (`tlb_finish_mmu`).
//!
//! ## The bounds (include/asm-generic/tlb.h, mm/mmu_gather.c)
//!
//! Pages: the gather's on-stack batch holds `MMU_GATHER_BUNDLE` (8) entries,
//! then up to `MAX_GATHER_BATCH_COUNT` (10,000 / `MAX_GATHER_BATCH`) batch
//! pages of `MAX_GATHER_BATCH` ((page size - 16) / 8) entries each are
//! allocated; a batch counts as full one entry early (room is kept for a
//! two-entry folio run), and `__tlb_remove_folio_pages_size` asks for a flush
//! when the last batch fills: 7 + 19 x 509 = 9,678 entries with 4 KiB pages.
//! Tables: `tlb_remove_table` gathers `MAX_TABLE_BATCH` ((page size - 24) /
//! 8, 509 with 4 KiB pages) tables per batch page and calls
//! `tlb_table_flush` when it is full. The batch pages are allocated with
//! GFP_NOWAIT; the model takes that allocation to succeed.
//!
//! ## What one entry is
//!
//! Every normal page a zap unmaps is one entry (anonymous or page cache,
//! small or a PMD-mapped THP); the shared zero pages are none (Linux:
//! `vm_normal_page` gives no page). A deposited table freed with a THP is
//! freed at once by Linux (`zap_deposited_table`, `pte_free`), so it is not
//! in the table batch (the model frees it with the page batch). Linux gives
//! a run of PTEs mapping one large folio two entries (page and count); the
//! model gives each PTE one, so with multi-size THP it flushes more often
//! than Linux (no validation workload fills a batch with mTHP). Not
//! modeled either: Linux also flushes at the end of every PTE table in which
//! it zapped a dirty PTE of a page-cache folio (`delay_rmap`, `force_flush`
//! in `zap_present_folio_ptes`), so a zap of written shared file or shmem
//! pages flushes more often on Linux than here.

use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::AddressSpace;
use pt::table::{Flush, FreedTables};
use pt::PageTable;

/// How much one gather holds before it must flush (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatherLimits {
    /// Page entries before `tlb_flush_mmu`.
    pub pages: u32,
    /// Page-table pages before `tlb_table_flush`.
    pub tables: u32,
}

impl GatherLimits {
    /// Linux's bounds for a kernel whose pages are `page_size` bytes
    /// (64-bit: 8-byte pointers).
    pub fn for_page_size(page_size: u64) -> GatherLimits {
        const BUNDLE: u64 = 8; // MMU_GATHER_BUNDLE
        let batch = (page_size - 16) / 8; // MAX_GATHER_BATCH
        let count = (10_000 / batch).max(1); // MAX_GATHER_BATCH_COUNT
        let pages = (BUNDLE - 1) + count * (batch - 1);
        let tables = (page_size - 24) / 8; // MAX_TABLE_BATCH
        GatherLimits {
            pages: u32::try_from(pages).unwrap_or(u32::MAX),
            tables: u32::try_from(tables).unwrap_or(u32::MAX),
        }
    }
}

/// A TLB flush asked for by an operation that still holds the mmap lock:
/// what [`AddressSpace::set_table_flusher`]'s function receives.
pub struct GatherFlush<'a> {
    /// The CPU of the caller, if it runs on one.
    pub cpu: Option<usize>,
    /// The ranges to invalidate on every CPU that may cache the space.
    pub flush: &'a Flush,
    /// Whether tables were unlinked since the last flush (walk caches too).
    pub tables_too: bool,
    /// The tree the tables belong to.
    pub pt: &'a PageTable,
    /// Tables to free once no CPU can reach them (after this flush).
    pub tables: FreedTables,
}

impl AddressSpace {
    /// After one more page entry was gathered: whether the page batch is
    /// full (Linux: `__tlb_remove_folio_pages` returned true).
    pub(crate) fn gather_page(&self, d: &mut Deferred) -> bool {
        d.batched_pages += 1;
        d.batched_pages >= self.gather.pages
    }

    /// Whether the table batch is full (Linux: `tlb_remove_table` reached
    /// `MAX_TABLE_BATCH`); call where no page-table lock is held, then
    /// [`AddressSpace::tlb_table_flush`].
    pub(crate) fn table_batch_full(&self, d: &Deferred) -> bool {
        d.batched_tables >= self.gather.tables
    }

    /// If a batch of `d` is full, flushes it: the page batch with
    /// `tlb_flush_mmu`, else the table batch with `tlb_table_flush`. Call
    /// where no page-table lock is held.
    ///
    /// # Errors
    /// As [`Deferred::complete`].
    pub(crate) fn gather_check(&self, ctx: &ThreadCtx, d: &mut Deferred) -> Result<(), Errno> {
        if d.batched_pages >= self.gather.pages {
            self.tlb_flush_mmu(ctx, d)
        } else if self.table_batch_full(d) {
            self.tlb_table_flush(ctx, d)
        } else {
            Ok(())
        }
    }

    /// Linux: mm/mmu_gather.c, tlb_flush_mmu — the TLB flush of everything
    /// gathered, then the gathered tables and pages freed.
    ///
    /// # Errors
    /// As [`Deferred::complete`].
    pub(crate) fn tlb_flush_mmu(&self, ctx: &ThreadCtx, d: &mut Deferred) -> Result<(), Errno> {
        self.tlb_table_flush(ctx, d)?;
        d.batched_pages = 0;
        let mem = self.pt.mem();
        for (pa, size) in std::mem::take(&mut d.frames) {
            mem.free_data(pa, size)?;
        }
        Ok(())
    }

    /// Linux: mm/mmu_gather.c, tlb_table_flush (with `tlb_table_invalidate`:
    /// x86 flushes the TLB before tables are freed) — the TLB flush of
    /// everything gathered, then the gathered tables freed.
    ///
    /// # Errors
    /// As [`Deferred::complete`].
    pub(crate) fn tlb_table_flush(&self, ctx: &ThreadCtx, d: &mut Deferred) -> Result<(), Errno> {
        let (flush, tables_too) = d.take_flush();
        let tables = std::mem::take(&mut d.tables);
        d.batched_tables = 0;
        match self.table_flusher.get() {
            Some(f) => f(GatherFlush {
                cpu: ctx.cpu,
                flush: &flush,
                tables_too,
                pt: &self.pt,
                tables,
            }),
            // No TLB is modeled: nothing can reach the tables.
            None => {
                tables.release(&self.pt)?;
            }
        }
        flush.done();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures of include/asm-generic/tlb.h worked by hand: 4 KiB pages
    /// give 9,678 page entries (7 + 19 x 509) and 509 tables; 64 KiB pages
    /// 7 + 1 x 8,189 and 8,189.
    #[test]
    fn limits_follow_the_kernel_arithmetic() {
        assert_eq!(
            GatherLimits::for_page_size(4096),
            GatherLimits {
                pages: 9_678,
                tables: 509
            }
        );
        assert_eq!(
            GatherLimits::for_page_size(65_536),
            GatherLimits {
                pages: 8_196,
                tables: 8_189
            }
        );
    }
}
