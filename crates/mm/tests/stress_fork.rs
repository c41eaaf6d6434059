//! Stress: fork on one real thread against write and read faults and
//! MADV_DONTNEED on another (and the children writing on a third), 20
//! rounds; after each round the family's invariants (share table, map
//! counts, no unaccounted frame), and at the end no leaked frame or table.
#![cfg(not(loom))]

mod common;
use common::*;
use mm::*;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const ROUNDS: usize = 20;
const LEN: u64 = 8 * M;

fn cfg() -> MmConfig {
    MmConfig {
        thp: ThpMode::Madvise,
        ..MmConfig::default()
    }
}

#[test]
fn fork_against_faults_and_dontneed() {
    let p = Arc::new(space(cfg()));
    let mut ctx = ThreadCtx::new();
    done(&p, p.mmap(&mut ctx, MmapArgs::anon(BASE, LEN)));
    // The second half may take THP: forks share and split huge PMDs too.
    done(
        &p,
        p.madvise(&mut ctx, BASE + LEN / 2, LEN / 2, Advice::HugePage),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (p, stop) = (p.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut ctx = ThreadCtx::new();
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
            let mut n = 0u64;
            while !stop.load(Ordering::Acquire) || n < 2000 {
                let va = BASE + rng.random_range(0..LEN / 4096 - 16) * 4096;
                match rng.random_range(0..10) {
                    0 => done(&p, p.madvise(&mut ctx, va, 4096 * 16, Advice::DontNeed)),
                    1..=3 => {
                        access(&p, &mut ctx, va, false);
                    }
                    _ => {
                        access(&p, &mut ctx, va, true);
                    }
                }
                n += 1;
            }
            n
        })
    };
    let mut children = Vec::new();
    for round in 0..ROUNDS {
        let child = Arc::new(p.new_child().unwrap());
        p.fork(&mut ctx, &child)
            .unwrap()
            .complete_without_tlb(&p)
            .unwrap();
        // The child writes and unmaps on its own thread while the parent's
        // worker keeps faulting.
        let c = child.clone();
        let t = std::thread::spawn(move || {
            let mut cc = ThreadCtx::new();
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(round as u64);
            for _ in 0..200 {
                let va = BASE + rng.random_range(0..LEN / 4096) * 4096;
                access(&c, &mut cc, va, rng.random_bool(0.7));
            }
            done(&c, c.munmap(&mut cc, BASE, LEN / 8));
            cc
        });
        let mut cc = t.join().unwrap();
        if round % 2 == 0 {
            child.exit(&mut cc).unwrap();
        }
        children.push(child);
    }
    stop.store(true, Ordering::Release);
    let n = worker.join().unwrap();
    assert!(n >= 2000);
    let mut all: Vec<&AddressSpace> = vec![&p];
    all.extend(children.iter().map(|c| &**c));
    AddressSpace::check_family(&all).unwrap();
    let mut cc = ThreadCtx::new();
    for c in &children {
        c.exit(&mut cc).unwrap();
    }
    AddressSpace::check_family(&all).unwrap();
    assert_eq!(p.shared_frames(), 0, "every child has exited");
    drop(all);
    drop(children);
    let p = Arc::try_unwrap(p).expect("the worker has ended");
    finish(p, &mut ctx);
}
