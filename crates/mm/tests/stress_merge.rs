//! Stress: threads faulting in one region while another thread splits and
//! merges its VMAs over and over (mprotect of a middle part to read-only and
//! back, MADV_NOHUGEPAGE and back, mlock and munlock, MADV_DONTNEED of whole
//! 2 MiB ranges), on huge pages that every split must split. Afterwards:
//! every invariant, the VMAs merged back into one, every page writable once
//! more with RSS exactly the region, and no leak. Duration: a fifth of
//! `PTLAB_STRESS_SECS` (default 10 s).
#![cfg(not(loom))]

mod common;
use common::*;
use mm::*;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LEN: u64 = 8 << 20;

fn secs() -> f64 {
    std::env::var("PTLAB_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0)
        / 5.0
}

fn complete(s: &AddressSpace, r: Result<Deferred, Errno>) {
    match r {
        Ok(d) => d.complete_without_tlb(s).unwrap(),
        Err(Errno::Internal(e)) => panic!("internal error: {e}"),
        Err(_) => {}
    }
}

/// Checks, while faults go on, that no huge page straddles a VMA boundary.
/// Only the caller changes VMAs, and a fault maps a huge page only where
/// one VMA covers its whole range, so the answer cannot race.
fn no_huge_page_straddles(s: &AddressSpace) {
    let vmas = s.vmas();
    let huge = 2u64 << 20;
    let mut b = BASE;
    while b < BASE + LEN {
        if s.page_table()
            .translate(pt::VirtAddr::new(b))
            .is_ok_and(|t| t.size == huge)
        {
            let v = vmas.iter().find(|v| v.start <= b && b < v.end).unwrap();
            assert!(
                v.end >= b + huge,
                "huge page at {b:#x} straddles the VMA end {:#x}",
                v.end
            );
        }
        b += huge;
    }
}

fn run(cfg: MmConfig, faulters: usize) {
    let s = Arc::new(space(cfg));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, LEN)));
    done(&s, s.madvise(&mut ctx, BASE, LEN, Advice::HugePage));
    // One write before any split: every piece shares the anon_vma, so
    // every piece can merge back at the end.
    assert!(access(&s, &mut ctx, BASE, true).is_none());
    let stop = Arc::new(AtomicBool::new(false));
    let changes = Arc::new(AtomicU64::new(0));
    let faulting: Vec<_> = (0..faulters)
        .map(|t| {
            let (s, stop) = (s.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = rand_pcg::Pcg64::seed_from_u64(t as u64 + 1);
                let mut ctx = ThreadCtx::new();
                while !stop.load(Ordering::Relaxed) {
                    let va = BASE + rng.random_range(0..LEN / 4096) * 4096;
                    let a = if rng.random_bool(0.6) {
                        FaultAccess::WRITE
                    } else {
                        FaultAccess::READ
                    };
                    match s.fault(&mut ctx, va, a) {
                        FaultResult::Handled { deferred, .. } => {
                            deferred.complete_without_tlb(&s).unwrap()
                        }
                        FaultResult::Internal(e) => panic!("internal error: {e}"),
                        // A write to the part that is read-only just now.
                        _ => {}
                    }
                }
                ctx
            })
        })
        .collect();
    let changer = {
        let (s, stop, changes) = (s.clone(), stop.clone(), changes.clone());
        std::thread::spawn(move || {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(99);
            let mut ctx = ThreadCtx::new();
            while !stop.load(Ordering::Relaxed) {
                // A middle part, rarely aligned to 2 MiB.
                let off = rng.random_range(1..LEN / 4096 - 1) * 4096;
                let len = (4096 * rng.random_range(1..=1024u64)).min(LEN - off);
                let (a, pair) = (BASE + off, rng.random_range(0..4));
                let (first, then) = match pair {
                    0 => (s.mprotect(&mut ctx, a, len, Prot::R), Some(Prot::RW)),
                    1 => (s.madvise(&mut ctx, a, len, Advice::NoHugePage), None),
                    2 => (s.mlock(&mut ctx, a, len), None),
                    _ => {
                        let huge = BASE + (off & !((2 << 20) - 1));
                        (s.madvise(&mut ctx, huge, 2 << 20, Advice::DontNeed), None)
                    }
                };
                complete(&s, first);
                no_huge_page_straddles(&s);
                let second = match (pair, then) {
                    (0, Some(p)) => s.mprotect(&mut ctx, a, len, p),
                    (1, _) => s.madvise(&mut ctx, a, len, Advice::HugePage),
                    (2, _) => s.munlock(&mut ctx, a, len),
                    _ => Ok(Deferred::none()),
                };
                complete(&s, second);
                changes.fetch_add(1, Ordering::Relaxed);
            }
            ctx
        })
    };
    // The time, and at least 20 split-and-merge pairs: the changer waits
    // for the mmap write lock while faults hold it for reading, so on a
    // loaded host it may get few turns.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs_f64(secs()) || changes.load(Ordering::Relaxed) < 20 {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the changer starved"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let mut ctxs: Vec<ThreadCtx> = faulting.into_iter().map(|h| h.join().unwrap()).collect();
    ctxs.push(changer.join().unwrap());
    s.take_pending().complete_without_tlb(&s).unwrap();
    if let Err(e) = s.check_invariants() {
        panic!("invariants broken after the stress run:\n{e}");
    }
    let refs: Vec<&ThreadCtx> = ctxs.iter().collect();
    assert!(s.counters(&refs).threads.minor_faults > 100);
    // Every pair restored what it changed: one VMA again, as mapped.
    let v = s.vmas();
    assert_eq!(v.len(), 1, "the pieces merged back: {v:?}");
    assert_eq!(
        (v[0].start, v[0].end, v[0].prot),
        (BASE, BASE + LEN, Prot::RW)
    );
    assert!(v[0].flags.hugepage && !v[0].flags.locked);
    // No page lost or mapped twice: writing every page leaves exactly the
    // region resident, and the recount agrees.
    let mut va = BASE;
    while va < BASE + LEN {
        assert!(access(&s, &mut ctx, va, true).is_none());
        va += 4096;
    }
    ctxs.push(ctx);
    let refs: Vec<&ThreadCtx> = ctxs.iter().collect();
    assert_eq!(s.counters(&refs).rss_anon_kb, (LEN >> 10) as i64);
    s.check_invariants().unwrap();
    let mut ctx = ctxs.pop().unwrap();
    let s = Arc::try_unwrap(s).expect("threads joined");
    finish(s, &mut ctx);
}

#[test]
fn stress_faults_while_the_middle_splits_and_merges_split_pmd() {
    run(MmConfig::default(), 3);
}

#[test]
fn stress_faults_while_the_middle_splits_and_merges_global_lock_eager_reclaim() {
    let cfg = MmConfig {
        locking: Locking::Global,
        reclaim: Reclaim::Eager,
        ..MmConfig::default()
    };
    run(cfg, 2);
}
