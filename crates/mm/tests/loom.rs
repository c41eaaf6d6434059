//! Loom model of fault against PT reclaim on a tiny geometry (a PMD table
//! of 4 entries over PTE tables of 4 entries), run with
//! `RUSTFLAGS="--cfg loom" cargo test -p mm --release --test loom`.
//!
//! Thread A: `MADV_DONTNEED` over the whole PTE table's range with reclaim
//! on, dropping the PTE lock every 2 entries (Linux's `need_resched()` in
//! `zap_pte_range`). Thread B: a write fault on the first page. Afterwards
//! every invariant must hold: no non-empty PTE table unlinked, counters
//! equal to a recount, no frame leaked.
//!
//! The second test runs the protocol with the 2025 Linux bug put back
//! (`DebugKnobs::reclaim_without_recheck`: the direct reclaim path is taken
//! even though the PTE lock was dropped midway, so the table is cleared
//! without re-checking that it is still empty) and asserts that loom finds
//! the interleaving where B's page is mapped into a table A then frees:
//! the checker reports the lost page (RSS counter 1, recount 0; a leaked frame).
#![cfg(loom)]

mod tiny;

use loom::sync::Arc;
use mm::config::DebugKnobs;
use mm::*;
use tiny::{tiny, PAGE, TABLE};

fn model(bug: bool) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    // Table pages are zeroed word by word (512 loom atomics each).
    b.max_branches = 1_000_000;
    b.check(move || {
        let g = tiny();
        let mem = std::sync::Arc::new(pt::PhysMem::with_capacity(12, 1));
        let cfg = MmConfig {
            locking: Locking::SplitPmd,
            reclaim: Reclaim::On,
            thp: ThpMode::Never,
            fault_around_bytes: PAGE,
            debug: DebugKnobs {
                zap_batch: 2,
                reclaim_without_recheck: bug,
                ..DebugKnobs::default()
            },
            ..MmConfig::default()
        };
        let s = Arc::new(AddressSpace::with_memory(g, mem, cfg).unwrap());
        let mut ctx = ThreadCtx::new();
        s.mmap(&mut ctx, MmapArgs::anon(TABLE, TABLE))
            .unwrap()
            .complete_without_tlb(&s)
            .unwrap();
        // A page at the end of the table, so the table exists.
        match s.fault(&mut ctx, TABLE + 3 * PAGE, FaultAccess::WRITE) {
            FaultResult::Handled { deferred, .. } => deferred.complete_without_tlb(&s).unwrap(),
            other => panic!("{other:?}"),
        }
        let a = {
            let s = s.clone();
            loom::thread::spawn(move || {
                let mut ctx = ThreadCtx::new();
                s.madvise(&mut ctx, TABLE, TABLE, Advice::DontNeed).unwrap()
            })
        };
        let fb = match s.fault(&mut ctx, TABLE, FaultAccess::WRITE) {
            FaultResult::Handled { deferred, .. } => deferred,
            other => panic!("{other:?}"),
        };
        let da = a.join().unwrap();
        da.complete_without_tlb(&s).unwrap();
        fb.complete_without_tlb(&s).unwrap();
        if let Err(e) = s.check_invariants() {
            panic!("invariant broken: {e}");
        }
    });
}

#[test]
fn fault_against_pt_reclaim_keeps_every_invariant() {
    model(false);
}

#[test]
fn the_2025_reclaim_bug_is_caught() {
    let caught = std::panic::catch_unwind(|| model(true));
    assert!(
        caught.is_err(),
        "loom must find the non-empty table reclaimed"
    );
}
