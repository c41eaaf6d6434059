//! Loom model of a VMA split and re-merge against faults on the same range
//! (issue 17: "merge and split under concurrent faults"), on the tiny
//! geometry of `tiny` (one PTE table of 4 pages), run with
//! `RUSTFLAGS="--cfg loom" cargo test -p mm --release --test loom_merge`.
//!
//! Thread A: mprotect of the second page to read-only, which splits the
//! VMA in three (Linux `vma_modify` -> `split_vma`), then back to
//! read-write, which merges the three again (`vma_merge_existing_range`).
//! Main thread: the first write fault of the mapping, on its first page
//! (it installs the anon_vma: on the whole VMA, or on the first piece only
//! if the split came first), then a read fault on the third page (the zero
//! page, no anon_vma). (With the two faults on a third thread as well, loom
//! runs for minutes; the faults are ordered here to keep it to seconds.) Whatever the interleaving, afterwards: every
//! invariant of the checker holds (counters equal a recount, no table or
//! frame lost, each huge or present entry inside one VMA), the three
//! pieces merged back into one VMA (a piece without an anon_vma merges with
//! one that has it), the written page is mapped writable, the read one to
//! the zero page, and exit leaks nothing.
#![cfg(loom)]

mod tiny;

use loom::sync::Arc;
use mm::*;
use tiny::{tiny, PAGE, TABLE};

fn handled(r: FaultResult) -> Deferred {
    match r {
        FaultResult::Handled { deferred, .. } => deferred,
        other => panic!("{other:?}"),
    }
}

#[test]
fn split_and_remerge_against_first_write_and_read_faults_keep_every_invariant() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    // Table pages are zeroed word by word (512 loom atomics each).
    b.max_branches = 1_000_000;
    b.check(|| {
        let mem = std::sync::Arc::new(pt::PhysMem::with_capacity(12, 1));
        let cfg = MmConfig {
            locking: Locking::SplitPmd,
            thp: ThpMode::Never,
            fault_around_bytes: PAGE,
            ..MmConfig::default()
        };
        let s = Arc::new(AddressSpace::with_memory(tiny(), mem, cfg).unwrap());
        let mut ctx = ThreadCtx::new();
        s.mmap(&mut ctx, MmapArgs::anon(TABLE, TABLE))
            .unwrap()
            .complete_without_tlb(&s)
            .unwrap();
        let a = {
            let s = s.clone();
            loom::thread::spawn(move || {
                let mut ctx = ThreadCtx::new();
                for prot in [Prot::R, Prot::RW] {
                    s.mprotect(&mut ctx, TABLE + PAGE, PAGE, prot)
                        .unwrap()
                        .complete_without_tlb(&s)
                        .unwrap();
                }
            })
        };
        handled(s.fault(&mut ctx, TABLE, FaultAccess::WRITE))
            .complete_without_tlb(&s)
            .unwrap();
        handled(s.fault(&mut ctx, TABLE + 2 * PAGE, FaultAccess::READ))
            .complete_without_tlb(&s)
            .unwrap();
        a.join().unwrap();
        if let Err(e) = s.check_invariants() {
            panic!("invariant broken: {e}");
        }
        let vmas = s.vmas();
        assert_eq!(vmas.len(), 1, "the pieces merge again: {vmas:?}");
        assert!(
            vmas[0].anon_vma.get().is_some(),
            "the write fault's anon_vma"
        );
        let t = |va: u64| s.page_table().translate(pt::VirtAddr::new(va)).unwrap();
        assert!(t(TABLE).attrs.perms.write);
        assert_ne!(t(TABLE).pa.get(), s.zero_page());
        assert_eq!(t(TABLE + 2 * PAGE).pa.get(), s.zero_page());
        s.exit(&mut ctx).unwrap();
        let leaks = s.mem().leaks();
        assert!(leaks.is_empty(), "leaks after exit: {leaks:?}");
    });
}
