//! The deferred-work order: what must happen, and in which order, after an
//! operation of the OS model changed translations, so that no CPU can use a
//! translation or a table the model has given back.
//!
//! An operation (a fault, a system call) returns its work as an
//! [`mm::Deferred`] (Linux's `mmu_gather`); [`complete`] does it.
//!
//! ## Invariants
//!
//! 1. Shoot down before freeing (Linux: `tlb_finish_mmu`, flush then free).
//!    Every range whose translations changed is invalidated, by
//!    [`mmu::Mmu::shootdown`] from the CPU that ran the operation (its own
//!    TLB at once, one modeled IPI to every other CPU running the address
//!    space), before any frame or table of the work is freed.
//! 2. Tables unlinked under the mmap lock are shot down under it. The table
//!    flusher that [`install_table_flusher`] puts on each address space runs
//!    while the operation still holds the mmap lock (Linux: `free_pgtables`
//!    and PT reclaim flush before `mmap_*_unlock`), so no other CPU can map
//!    and fault in the span while its walk cache still points at the
//!    unlinked table. It posts the initiating CPU's own invalidation to that
//!    CPU's mailbox, so [`complete`] then polls the initiator: a Linux
//!    initiator has invalidated its own TLB when the flush returns.
//! 3. A table is freed only after every CPU's TLB and walk cache can no
//!    longer reach it. Unlinked tables are retired to the MMU after the
//!    shootdown that covers them ([`mmu::Mmu::retire_tables`]), tagged with
//!    the flush generation; [`mmu::Mmu::reclaim_retired`] frees them once
//!    no CPU's mailbox holds a message of that generation or older, that is
//!    once every CPU running the space has polled (at its next access, an
//!    explicit poll, or detach). Nothing waits: a CPU that lags holds the
//!    tables back until it catches up.
//! 4. Frames are freed after the shootdown of (1), by
//!    [`mm::Deferred::complete`]: a data frame is no longer reachable through
//!    a leaf TLB entry once every TLB that held it was invalidated, and the
//!    hardware re-walks before it could use it again.
//! 5. The work of a system call that failed midway is completed too (Linux
//!    keeps what was done before the error): [`mm::AddressSpace::take_pending`]
//!    hands it out and it goes through the same order.
//! 6. Retired tables are reclaimed after every completion and before a
//!    counter snapshot that should not count them ([`checkpoint`]).

use mm::{AddressSpace, Deferred};
use mmu::{Cpu, FlushKind, Mmu};
use std::sync::Arc;

/// Installs on `space` (running as `asid` on `mmu`) the function that shoots
/// down the translations of tables an operation unlinks, while it still holds
/// the mmap lock (invariant 2), and the flushes of a zap whose gather fills
/// midway (`mm::gather`: the tables it hands over are retired, invariant 3;
/// it frees the frames itself after the flush, invariant 4). Returns `false`
/// if the space had one.
pub fn install_table_flusher(space: &AddressSpace, mmu: &Arc<Mmu>, asid: mmu::Asid) -> bool {
    let mmu = Arc::clone(mmu);
    space.set_table_flusher(Box::new(move |g| {
        if !g.flush.is_empty() {
            let kind = if g.tables_too {
                FlushKind::LeavesAndTables
            } else {
                FlushKind::Leaves
            };
            let _ = mmu.shootdown_from(g.cpu, asid, g.flush, kind);
        }
        // Invariant 3: freed once every CPU has applied this flush.
        mmu.retire_tables(g.pt, g.tables);
    }))
}

/// Does `d`, the work of an operation `cpu` (of `mmu`) ran on `space`, in the order of
/// the invariants: shoot down what it changed, apply the initiator's own
/// posted invalidation, retire its tables to the MMU, free its frames, and
/// free the retired tables every CPU has let go of.
///
/// # Errors
/// The description of an inconsistency (a table or a frame freed twice: a
/// bug in the model).
pub fn complete(
    mmu: &Mmu,
    cpu: &mut Cpu,
    space: &AddressSpace,
    mut d: Deferred,
) -> Result<(), String> {
    if d.is_empty() {
        return Ok(());
    }
    let pt = space.page_table();
    let (flush, tables_too) = d.take_flush();
    if !flush.is_empty() {
        let kind = if tables_too {
            FlushKind::LeavesAndTables
        } else {
            FlushKind::Leaves
        };
        let asid = cpu.asid();
        let _ = mmu.shootdown(cpu, asid, &flush, kind);
    }
    flush.done();
    // Invariant 2: the table flusher posted this CPU's own invalidation to
    // its mailbox.
    cpu.poll();
    let tables = std::mem::take(&mut d.tables);
    mmu.retire_tables(pt, tables);
    d.complete(space).map_err(|e| e.to_string())?;
    mmu.reclaim_retired(pt).map_err(|e| e.to_string())?;
    Ok(())
}

/// Brings `cpu` up to date and frees the tables no CPU can reach any more:
/// what a CPU does before counters are read (invariant 6).
///
/// # Errors
/// As [`complete`].
pub fn checkpoint(mmu: &Mmu, cpu: &mut Cpu, space: &AddressSpace) -> Result<(), String> {
    cpu.poll();
    mmu.reclaim_retired(space.page_table())
        .map(|_| ())
        .map_err(|e| e.to_string())
}
