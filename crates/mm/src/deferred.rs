//! Deferred work: what an operation leaves for the caller to do after the
//! TLB shootdown (Linux `mmu_gather`: flush, then free pages and tables).

use crate::cache::MemObject;
use crate::error::Errno;
use crate::space::AddressSpace;
use pt::table::{Flush, FreedTables};
use pt::{Level, TableAddr};
use std::sync::Arc;

/// Work an operation could not finish by itself: invalidate `flush` in every
/// TLB (and the walk caches when `flush_tables`), then call
/// [`Deferred::complete`] to free the unlinked tables and the data frames.
///
/// Most faults leave nothing to do, so the work lives in a box made on its
/// first write: an empty `Deferred` is one null word to build, move and
/// drop. It reads and writes as its [`Work`] (through `Deref`).
#[must_use = "changed translations must be flushed, then the Deferred completed"]
#[derive(Debug, Default)]
pub struct Deferred {
    work: Option<Box<Work>>,
}

/// What a [`Deferred`] holds.
#[derive(Debug, Default)]
pub struct Work {
    /// Virtual ranges whose translations changed.
    pub flush: Flush,
    /// Whether table pages were unlinked (walk caches must be flushed too).
    pub flush_tables: bool,
    /// Table pages unlinked from the tree, to free after the shootdown.
    pub tables: FreedTables,
    /// Data frames (pa, size) no longer mapped, to free after the shootdown.
    pub frames: Vec<(u64, u64)>,
    /// Memory objects whose last mapping went away (freed with their pages).
    pub(crate) objects: Vec<Arc<MemObject>>,
    /// Page entries gathered since the last flush (see [`crate::gather`]).
    pub(crate) batched_pages: u32,
    /// Tables gathered since the last flush (see [`crate::gather`]).
    pub(crate) batched_tables: u32,
}

/// The work of an empty `Deferred`, for reads.
static NO_WORK: Work = Work {
    flush: Flush { ranges: Vec::new() },
    flush_tables: false,
    tables: FreedTables {
        tables: Vec::new(),
        flush: Flush { ranges: Vec::new() },
    },
    frames: Vec::new(),
    objects: Vec::new(),
    batched_pages: 0,
    batched_tables: 0,
};

impl std::ops::Deref for Deferred {
    type Target = Work;
    fn deref(&self) -> &Work {
        self.work.as_deref().unwrap_or(&NO_WORK)
    }
}

impl std::ops::DerefMut for Deferred {
    fn deref_mut(&mut self) -> &mut Work {
        self.work.get_or_insert_with(Box::default)
    }
}

impl Deferred {
    /// Nothing to do.
    #[inline]
    pub fn none() -> Deferred {
        Deferred { work: None }
    }

    /// Whether there is nothing to flush or free.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.work.as_deref().is_none_or(|w| {
            w.flush.is_empty()
                && w.tables.tables.is_empty()
                && w.frames.is_empty()
                && w.objects.is_empty()
        })
    }

    pub(crate) fn add_flush(&mut self, va: u64, len: u64) {
        add_range(&mut self.flush, va, len);
    }

    pub(crate) fn add_table(&mut self, level: Level, table: TableAddr, va: u64, span: u64) {
        self.tables.tables.push((level, table));
        add_range(&mut self.tables.flush, va, span);
        self.flush_tables = true;
        // Linux: tlb_remove_table (a deposited table is freed at once
        // instead, and is pushed without this count).
        self.batched_tables += 1;
    }

    /// Takes every range to invalidate, leaves and unlinked tables' spans
    /// together, and whether walk caches must go too; what stays is the
    /// freeing of tables and frames.
    pub fn take_flush(&mut self) -> (Flush, bool) {
        let mut all = std::mem::take(&mut self.flush);
        for (va, len) in std::mem::take(&mut self.tables.flush).ranges {
            add_range(&mut all, va, len);
        }
        (all, std::mem::take(&mut self.flush_tables))
    }

    /// Appends `other`'s work to this one.
    pub fn merge(&mut self, other: Deferred) {
        let Some(other) = other.work else {
            return;
        };
        let Work {
            flush,
            flush_tables,
            tables,
            frames,
            objects,
            batched_pages,
            batched_tables,
        } = *other;
        self.batched_pages += batched_pages;
        self.batched_tables += batched_tables;
        for (va, len) in flush.ranges {
            add_range(&mut self.flush, va, len);
        }
        self.flush_tables |= flush_tables;
        let FreedTables { tables, flush } = tables;
        self.tables.tables.extend(tables);
        for (va, len) in flush.ranges {
            add_range(&mut self.tables.flush, va, len);
        }
        self.frames.extend(frames);
        self.objects.extend(objects);
    }

    /// Frees the tables and frames. Call after every TLB that may hold the
    /// flushed ranges (and walk caches, if `flush_tables`) was invalidated.
    ///
    /// # Errors
    /// [`Errno::Internal`] if a table or frame was freed twice (a bug).
    pub fn complete(self, space: &AddressSpace) -> Result<(), Errno> {
        if self.is_empty() {
            // Most faults leave nothing to do.
            return Ok(());
        }
        let Some(work) = self.work else {
            return Ok(());
        };
        let Work {
            flush,
            tables,
            frames,
            objects,
            ..
        } = *work;
        flush.done();
        tables.release(space.page_table())?;
        let mem = space.page_table().mem();
        for (pa, size) in frames {
            mem.free_data(pa, size)?;
        }
        drop(objects);
        Ok(())
    }

    /// For callers with no TLB model (tests, single-threaded runs): there is
    /// nothing to shoot down, so complete at once.
    ///
    /// # Errors
    /// As [`Deferred::complete`].
    pub fn complete_without_tlb(self, space: &AddressSpace) -> Result<(), Errno> {
        self.complete(space)
    }
}

/// Appends `[va, va + len)` to `f`, merging with the last range when adjacent.
pub(crate) fn add_range(f: &mut Flush, va: u64, len: u64) {
    if let Some(last) = f.ranges.last_mut() {
        if last.0 + last.1 == va {
            last.1 += len;
            return;
        }
    }
    f.ranges.push((va, len));
}
