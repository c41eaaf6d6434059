//! How every system call ends: unlinked tables shot down while the mmap
//! lock is held, and the work of a failed operation parked until the next
//! one (Linux keeps what was done before an error).

use super::{lock_plain, AddressSpace, TableFlusher};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::gather::GatherFlush;
use pt::table::FreedTables;
use std::sync::atomic::Ordering;

impl AddressSpace {
    /// Whether an operation holds the mmap lock for writing (for tests and
    /// assertions about the lock protocol).
    pub fn mmap_lock_is_write_locked(&self) -> bool {
        self.vmas.is_write_locked()
    }

    /// Installs the function that shoots down the translations of page
    /// tables an operation unlinked, called while the operation still holds
    /// the mmap lock (Linux: `free_pgtables` and `tlb_finish_mmu` both run
    /// before `mmap_write_unlock`, and PT_RECLAIM's flush before
    /// `mmap_read_unlock`). Without it, another thread could map and fault
    /// in the freed table's span while its CPU's walk cache still points at
    /// the unlinked table. Callers that model no TLB need none.
    /// Returns `false` if one was already installed.
    pub fn set_table_flusher(&self, f: TableFlusher) -> bool {
        self.table_flusher.set(f).is_ok()
    }

    /// If `d` unlinked tables, flushes everything it changed now, through
    /// the table flusher (the caller still holds the mmap lock), leaving
    /// only the freeing of tables and frames to [`Deferred::complete`].
    pub(crate) fn flush_unlinked_tables(&self, ctx: &ThreadCtx, d: &mut Deferred) {
        let Some(f) = self.table_flusher.get() else {
            return;
        };
        if d.tables.tables.is_empty() {
            return;
        }
        let (all, _) = d.take_flush();
        // The tables stay in `d`, freed by its completion.
        f(GatherFlush {
            cpu: ctx.cpu,
            flush: &all,
            tables_too: true,
            pt: &self.pt,
            tables: FreedTables::default(),
        });
        all.done();
        // Linux: the flush resets the gather's range; the tables stay in
        // their batch until the end of the call.
    }

    /// The work left by operations that failed midway (see the field doc).
    /// Complete it like any [`Deferred`].
    pub fn take_pending(&self) -> Deferred {
        if !self.has_pending.swap(false, Ordering::AcqRel) {
            return Deferred::none();
        }
        std::mem::take(&mut *lock_plain(&self.pending))
    }

    /// Ends an operation: its work on success (with any pending work), or
    /// the error with the work parked.
    pub(super) fn finish_op(
        &self,
        r: Result<(), Errno>,
        mut d: Deferred,
    ) -> Result<Deferred, Errno> {
        match r {
            Ok(()) => {
                d.merge(self.take_pending());
                Ok(d)
            }
            Err(e) => {
                if !d.is_empty() {
                    lock_plain(&self.pending).merge(d);
                    self.has_pending.store(true, Ordering::Release);
                }
                Err(e)
            }
        }
    }
}
