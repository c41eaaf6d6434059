//! Loom model of a fault on a swap entry against a zap of the same range,
//! on the tiny geometry (PTE tables of 4 entries), run with
//! `RUSTFLAGS="--cfg loom" cargo test -p mm --release --test loom_swap`.
//!
//! Four pages are swapped out clean (written, paged out, read back from
//! the swap cache, paged out again: each slot holds its page, nothing is
//! cached). Thread A: `MADV_DONTNEED` over the four, which clears the swap
//! entries and frees their slots (Linux `free_swap_and_cache`). Thread B: a
//! read fault on the first page, a major fault whose read-ahead reads the
//! other entries of the table without their lock, as Linux's
//! `swap_vma_readahead` does; or, if A went first, a fault on an empty PTE.
//! Afterwards every invariant holds (every swap entry names a slot in use,
//! every frame is mapped or in the swap cache), and after the exit no slot
//! is in use and no frame is leaked: a page read ahead into the cache for
//! a slot A freed meanwhile must not stay behind.
#![cfg(loom)]

mod tiny;

use loom::sync::Arc;
use mm::*;
use tiny::{tiny, PAGE, TABLE};

fn done(s: &AddressSpace, r: Result<Deferred, Errno>) {
    r.unwrap().complete_without_tlb(s).unwrap();
}

fn touch(s: &AddressSpace, ctx: &mut ThreadCtx, va: u64, write: bool) -> Deferred {
    let access = if write {
        FaultAccess::WRITE
    } else {
        FaultAccess::READ
    };
    match s.fault(ctx, va, access) {
        FaultResult::Handled { deferred, .. } => deferred,
        other => panic!("{other:?}"),
    }
}

fn model(kind: SwapRaKind) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.max_branches = 1_000_000;
    b.check(move || {
        let g = tiny();
        let mem = std::sync::Arc::new(pt::PhysMem::with_capacity(12, 1));
        let cfg = MmConfig {
            thp: ThpMode::Never,
            fault_around_bytes: PAGE,
            swap: Some(1 << 20),
            swap_readahead: SwapReadahead {
                kind,
                page_cluster: 2,
            },
            ..MmConfig::default()
        };
        let s = Arc::new(AddressSpace::with_memory(g, mem, cfg).unwrap());
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(TABLE, TABLE)));
        for write in [true, false] {
            for i in 0..4 {
                touch(&s, &mut ctx, TABLE + i * PAGE, write)
                    .complete_without_tlb(&s)
                    .unwrap();
            }
            done(&s, s.madvise(&mut ctx, TABLE, TABLE, Advice::PageOut));
        }
        assert_eq!(s.swap_entries(), 4);
        let a = {
            let s = s.clone();
            loom::thread::spawn(move || {
                let mut ctx = ThreadCtx::new();
                s.madvise(&mut ctx, TABLE, TABLE, Advice::DontNeed).unwrap()
            })
        };
        let fb = touch(&s, &mut ctx, TABLE, false);
        let da = a.join().unwrap();
        da.complete_without_tlb(&s).unwrap();
        fb.complete_without_tlb(&s).unwrap();
        if let Err(e) = s.check_invariants() {
            panic!("invariant broken: {e}");
        }
        s.exit(&mut ctx).unwrap();
        assert_eq!(s.swap_slots_used(), 0, "a slot outlived the exit");
        assert!(s.mem().leaks().is_empty(), "leaks: {:?}", s.mem().leaks());
    });
}

#[test]
fn swap_fault_with_vma_readahead_against_a_zap() {
    model(SwapRaKind::Vma);
}

#[test]
fn swap_fault_with_cluster_readahead_against_a_zap() {
    model(SwapRaKind::Cluster);
}
