//! Stress: THPs swapped whole against concurrent faults, on a block device
//! (the folio waits whole in the swap cache and a fault maps it back whole)
//! and on a synchronous one (the folio leaves memory; each page is read
//! back past the swap cache). Two real threads of a parent page whole THPs
//! and parts of them out, read and write pages (bringing folios back whole
//! or a page at a time), and drop 2 MiB ranges so that new THPs are
//! faulted; a fork child on a third thread does the same to what it shares.
//! The device holds fewer slots than the region has pages, so it fills.
//! After the run the family's invariants hold, and after every exit no
//! slot is in use and nothing is leaked.
#![cfg(not(loom))]

mod common;
use common::*;
use mm::*;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

const REGION: u64 = 8 * M;

fn step(s: &AddressSpace, ctx: &mut ThreadCtx, rng: &mut impl Rng) {
    let thp = rng.random_range(0..REGION / (2 * M)) * 2 * M;
    let page = rng.random_range(0..REGION / (4 * K)) * 4 * K;
    match rng.random_range(0..10) {
        0 | 1 => done(s, s.madvise(ctx, BASE + thp, 2 * M, Advice::PageOut)),
        2 => {
            let at = page.min(REGION - 64 * K);
            done(s, s.madvise(ctx, BASE + at, 64 * K, Advice::PageOut));
        }
        3 => done(s, s.madvise(ctx, BASE + thp, 2 * M, Advice::DontNeed)),
        4..=6 => {
            access(s, ctx, BASE + page, false);
        }
        _ => {
            access(s, ctx, BASE + page, true);
        }
    }
}

fn run(device: SwapDeviceKind) {
    let p = Arc::new(space(MmConfig {
        thp: ThpMode::Madvise,
        // Five clusters for four THPs' worth of pages and the base pages.
        swap: Some(5 * 2 * M),
        swap_device: device,
        ..MmConfig::default()
    }));
    let mut ctx = ThreadCtx::new();
    done(&p, p.mmap(&mut ctx, MmapArgs::anon(BASE, REGION)));
    done(&p, p.madvise(&mut ctx, BASE, REGION, Advice::HugePage));
    for i in 0..REGION / (2 * M) {
        access(&p, &mut ctx, BASE + i * 2 * M, true);
    }
    // One THP swapped whole before the threads start: whether one is
    // swapped whole under them depends on the interleaving (the fork
    // below shares the others, and shared folios are not swapped), so the
    // check below would fail on some runs without it.
    done(&p, p.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    let first = p.swap_entries();
    let workers: Vec<_> = (0..2u64)
        .map(|seed| {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut ctx = ThreadCtx::new();
                let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
                let mut most = 0;
                for _ in 0..3000 {
                    step(&p, &mut ctx, &mut rng);
                    most = most.max(p.swap_entries());
                }
                most
            })
        })
        .collect();
    let child = Arc::new(p.new_child().unwrap());
    p.fork(&mut ctx, &child)
        .unwrap()
        .complete_without_tlb(&p)
        .unwrap();
    let c = child.clone();
    let t = std::thread::spawn(move || {
        let mut cc = ThreadCtx::new();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(100);
        for _ in 0..1000 {
            step(&c, &mut cc, &mut rng);
        }
        cc
    });
    let mut cc = t.join().unwrap();
    let most: i64 = workers
        .into_iter()
        .map(|w| w.join().unwrap())
        .fold(first, i64::max);
    assert!(most >= 512, "a whole THP was swapped at some point");
    AddressSpace::check_family(&[&p, &child]).unwrap();
    child.exit(&mut cc).unwrap();
    p.check_invariants().unwrap();
    p.exit(&mut ctx).unwrap();
    assert_eq!(p.swap_slots_used(), 0, "every slot freed by the last exit");
    assert!(p.mem().leaks().is_empty(), "leaks: {:?}", p.mem().leaks());
}

#[test]
fn whole_thp_swap_against_concurrent_faults_block_device() {
    run(SwapDeviceKind::Block);
}

#[test]
fn whole_thp_swap_against_concurrent_faults_synchronous_device() {
    run(SwapDeviceKind::Sync);
}
