//! The lock protocol of the address space, and the helpers that keep it.
//!
//! ## Locks
//! - The **mmap lock** (reader-writer, over the VMAs). Faults and madvise
//!   advice that does not change VMAs (DONTNEED, FREE, POPULATE_*,
//!   WILLNEED, PAGEOUT) take it for reading; mmap, munmap, mprotect,
//!   mlock/munlock and MADV_\[NO\]HUGEPAGE for writing. Readers take a
//!   per-thread slot of it (see the `mmap_lock` module), so concurrent faults
//!   share no lock word; a writer takes every slot.
//! - **`page_table_lock`** (one per address space): the entries of every
//!   level above the PMD; under `Global` also the PMD and PTE entries, under
//!   `SplitPte` also the PMD entries.
//! - The **PMD lock** (`SplitPmd`): the lock beside each PMD table page,
//!   over that table's entries (huge leaves and links to PTE tables).
//! - The **PTE lock** (`SplitPte`, `SplitPmd`): the lock beside each PTE
//!   table page, over that table's entries.
//!
//! ## Invariants
//! 1. Order: mmap lock, then PMD lock, then PTE lock, then a memory
//!    object's page lock or the deposit/folio registries. A PMD lock is
//!    never *waited for* while a PTE lock is held (only try-locked: Linux
//!    `try_get_and_clear_pmd`).
//! 2. Tables above the PTE level are unlinked only by munmap
//!    (`free_pgtables`), under the mmap lock held for writing: under the
//!    read lock, a walk may read the upper levels without locks, and a
//!    thread may reuse its last walk's PMD table while `upper_gen` (bumped
//!    by `free_pgtables` before it unlinks anything) is unchanged (the
//!    `accel` module's PMD walk cache).
//! 3. A PTE table is reached by reading its PMD entry without a lock, then
//!    taking the table's lock and re-checking that the PMD entry still
//!    points to it (Linux `pte_offset_map_lock`'s `pmd_same`); if not, the
//!    walker retries from the PMD entry. The table page stays in the arena
//!    after it is freed, so locking a stale one is harmless.
//! 4. Entries of a table are written only with its lock held (upper levels:
//!    `page_table_lock`).
//! 5. A PTE table is unlinked only with both the PMD lock and its own lock
//!    held and its emptiness known under them: either re-checked (the count
//!    of present entries is 0), or established by a zap pass that held the
//!    PTE lock from its first entry to the unlink (the direct path). A pass
//!    that dropped the PTE lock midway must re-check (the 2025 Linux bug
//!    "fix incorrect reclaim of non-empty PTE pages" was this rule broken).
//! 6. Unlinked tables and unmapped frames leave through [`crate::Deferred`]
//!    and are freed only after the TLB shootdown.
//! 7. Every acquisition is counted per class; a failed try-lock before the
//!    blocking lock counts as contended. When the thread keeps a lock log
//!    (`ThreadCtx::lock_log`), every acquisition is also logged, in order,
//!    with the lock's identity (a virtual-time executor replays the log).

use crate::config::Locking;
use crate::counters::{LockClass, ThreadCtx};
use crate::mmap_lock::{ReadGuard, WriteGuard};
use crate::space::AddressSpace;
use crate::vma::Vmas;
use pt::sync::{SpinGuard, SpinLock};
use pt::{Level, TableAddr, VirtAddr};

impl AddressSpace {
    /// Takes `m`, counting the acquisition (and a contention if a try-lock fails).
    #[inline]
    pub(crate) fn lock_counted<'a>(
        &self,
        ctx: &mut ThreadCtx,
        m: &'a SpinLock,
        class: LockClass,
    ) -> SpinGuard<'a> {
        ctx.counters.lock_acquisitions[class as usize] += 1;
        ctx.log_lock(std::ptr::from_ref(m) as usize, class, true);
        match m.try_lock() {
            Some(g) => g,
            None => {
                ctx.counters.lock_contended[class as usize] += 1;
                m.lock()
            }
        }
    }

    /// The lock over the entries of the PMD table at `pmd_table`.
    #[inline]
    pub(crate) fn pmd_lockptr(&self, pmd_table: TableAddr) -> (&SpinLock, LockClass) {
        match self.cfg.locking {
            Locking::Global | Locking::SplitPte => (&self.ptl, LockClass::PageTableLock),
            Locking::SplitPmd => (self.pt.ptlock_ptr(pmd_table), LockClass::Pmd),
        }
    }

    /// The lock over the entries of the PTE table at `pte_table`.
    #[inline]
    pub(crate) fn pte_lockptr(&self, pte_table: TableAddr) -> (&SpinLock, LockClass) {
        match self.cfg.locking {
            Locking::Global => (&self.ptl, LockClass::PageTableLock),
            _ => (self.pt.ptlock_ptr(pte_table), LockClass::Pte),
        }
    }

    /// Linux `pmd_lock`.
    #[inline]
    pub(crate) fn pmd_lock(&self, ctx: &mut ThreadCtx, pmd_table: TableAddr) -> SpinGuard<'_> {
        let (m, c) = self.pmd_lockptr(pmd_table);
        self.lock_counted(ctx, m, c)
    }

    /// Linux `pte_offset_map_lock`: locks the PTE table `table` that the PMD
    /// entry for `va` pointed to, and re-checks that it still does
    /// (invariant 3). `None`: it does not any more; retry.
    #[inline(always)]
    pub(crate) fn pte_offset_map_lock(
        &self,
        ctx: &mut ThreadCtx,
        pmd_table: TableAddr,
        va: VirtAddr,
        table: TableAddr,
    ) -> Option<SpinGuard<'_>> {
        let (m, c) = self.pte_lockptr(table);
        let g = self.lock_counted(ctx, m, c);
        // pmd_same: the PMD entry still points to this table.
        (self.pt.next_table(pmd_table, Level::PMD, va) == Some(table)).then_some(g)
    }

    /// The mmap lock for reading.
    #[inline]
    pub(crate) fn mmap_read(&self, ctx: &mut ThreadCtx) -> ReadGuard<'_, Vmas> {
        ctx.counters.lock_acquisitions[LockClass::Mmap as usize] += 1;
        ctx.log_lock(0, LockClass::Mmap, false);
        let (g, waited) = self.vmas.read();
        if waited {
            ctx.counters.lock_contended[LockClass::Mmap as usize] += 1;
        }
        g
    }

    /// The mmap lock for writing.
    pub(crate) fn mmap_write(&self, ctx: &mut ThreadCtx) -> WriteGuard<'_, Vmas> {
        ctx.counters.lock_acquisitions[LockClass::Mmap as usize] += 1;
        ctx.log_lock(0, LockClass::Mmap, true);
        let (g, waited) = self.vmas.write();
        if waited {
            ctx.counters.lock_contended[LockClass::Mmap as usize] += 1;
        }
        g
    }
}
