//! Stress: swap entries against concurrent faults. Two real threads of a
//! parent fault pages of a private region in (reads, writes) while paging
//! ranges of it out and lazily freeing others, over a small swap device
//! (full at times, more than half full most of the time, so swap-ins free
//! slots) with read-ahead on; a shmem region is written and paged out
//! beside it. A fork child on a third thread does the same to the entries
//! it shares with the parent, and half the children exit while the
//! parent's threads run. After every round the family's invariants hold
//! (every swap entry names a slot in use that counts it, every frame is
//! mapped, cached or in the swap cache); at the end, after every exit, no
//! slot is in use and no frame or table is leaked.
#![cfg(not(loom))]

mod common;
use common::*;
use mm::*;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const ROUNDS: usize = 10;
const ANON: u64 = BASE;
const ANON_PAGES: u64 = 256;
const SHMEM: u64 = BASE + 64 * M;
const SHMEM_PAGES: u64 = 64;

fn cfg(kind: SwapRaKind) -> MmConfig {
    MmConfig {
        // 192 slots for 256 private pages.
        swap: Some(192 * 4 * K),
        swap_readahead: SwapReadahead {
            kind,
            page_cluster: 3,
        },
        ..MmConfig::default()
    }
}

fn step(s: &AddressSpace, ctx: &mut ThreadCtx, rng: &mut impl Rng) {
    let page = rng.random_range(0..ANON_PAGES - 16);
    let va = ANON + page * 4 * K;
    match rng.random_range(0..12) {
        0 | 1 => done(s, s.madvise(ctx, va, 16 * 4 * K, Advice::PageOut)),
        2 => done(s, s.madvise(ctx, va, 4 * 4 * K, Advice::Free)),
        3 => {
            let sh = SHMEM + rng.random_range(0..SHMEM_PAGES - 8) * 4 * K;
            done(s, s.madvise(ctx, sh, 8 * 4 * K, Advice::PageOut));
        }
        4 => {
            let sh = SHMEM + rng.random_range(0..SHMEM_PAGES) * 4 * K;
            access(s, ctx, sh, rng.random_bool(0.5));
        }
        5..=7 => {
            access(s, ctx, va, false);
        }
        _ => {
            access(s, ctx, va, true);
        }
    }
}

fn run(kind: SwapRaKind) {
    let p = Arc::new(space(cfg(kind)));
    let mut ctx = ThreadCtx::new();
    done(
        &p,
        p.mmap(&mut ctx, MmapArgs::anon(ANON, ANON_PAGES * 4 * K)),
    );
    let shmem = MmapArgs {
        kind: MapKind::Shmem,
        shared: true,
        ..MmapArgs::anon(SHMEM, SHMEM_PAGES * 4 * K)
    };
    done(&p, p.mmap(&mut ctx, shmem));
    for i in 0..ANON_PAGES {
        access(&p, &mut ctx, ANON + i * 4 * K, true);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..2u64)
        .map(|seed| {
            let (p, stop) = (p.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut ctx = ThreadCtx::new();
                let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
                let mut n = 0u64;
                while !stop.load(Ordering::Acquire) || n < 2000 {
                    step(&p, &mut ctx, &mut rng);
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut children = Vec::new();
    let mut most_swapped = 0;
    for round in 0..ROUNDS {
        let child = Arc::new(p.new_child().unwrap());
        p.fork(&mut ctx, &child)
            .unwrap()
            .complete_without_tlb(&p)
            .unwrap();
        let c = child.clone();
        let t = std::thread::spawn(move || {
            let mut cc = ThreadCtx::new();
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(100 + round as u64);
            for _ in 0..200 {
                step(&c, &mut cc, &mut rng);
            }
            cc
        });
        let mut cc = t.join().unwrap();
        if round % 2 == 0 {
            child.exit(&mut cc).unwrap();
        }
        children.push(child);
        most_swapped = most_swapped.max(p.swap_entries());
    }
    stop.store(true, Ordering::Release);
    for w in workers {
        assert!(w.join().unwrap() >= 2000);
    }
    let mut all: Vec<&AddressSpace> = vec![&p];
    all.extend(children.iter().map(|c| &**c));
    AddressSpace::check_family(&all).unwrap();
    assert!(most_swapped > 0, "the parent had pages swapped out");
    for c in children {
        if !c.vmas().is_empty() {
            c.exit(&mut ThreadCtx::new()).unwrap();
        }
    }
    p.exit(&mut ctx).unwrap();
    assert_eq!(p.swap_slots_used(), 0, "every slot freed by the last exit");
    assert!(p.mem().leaks().is_empty(), "leaks: {:?}", p.mem().leaks());
}

#[test]
fn swap_entries_against_concurrent_faults_vma_readahead() {
    run(SwapRaKind::Vma);
}

#[test]
fn swap_entries_against_concurrent_faults_cluster_readahead() {
    run(SwapRaKind::Cluster);
}
