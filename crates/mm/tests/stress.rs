//! Stress: 8 real threads mixing faults, munmap (and re-mmap), MADV_DONTNEED
//! and mprotect on one address space, with random allocation failures,
//! then every invariant and the leak check. Duration: `PTLAB_STRESS_SECS`
//! (default 10 s) for the main configuration.
#![cfg(not(loom))]

mod common;
use common::*;
use mm::*;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SLOTS: u64 = 24;
const SLOT: u64 = 2 << 20;

fn slot_args(i: u64) -> MmapArgs {
    let addr = BASE + i * SLOT;
    match i % 6 {
        4 => MmapArgs {
            kind: MapKind::File {
                cached: i % 12 == 4,
                offset: 0,
            },
            shared: true,
            ..MmapArgs::anon(addr, SLOT)
        },
        5 => MmapArgs {
            kind: MapKind::Shmem,
            ..MmapArgs::anon(addr, SLOT)
        },
        _ => MmapArgs::anon(addr, SLOT),
    }
}

fn run(cfg: MmConfig, threads: usize, secs: f64, inject: bool) -> (ThreadCounters, u64) {
    let s = Arc::new(space(cfg));
    let mut ctx = ThreadCtx::new();
    for i in 0..SLOTS {
        done(&s, s.mmap(&mut ctx, slot_args(i)));
        if i % 3 == 0 {
            done(
                &s,
                s.madvise(&mut ctx, BASE + i * SLOT, SLOT, Advice::HugePage),
            );
        }
    }
    if inject {
        let n = Arc::new(AtomicU64::new(0));
        s.mem().set_fault_injection(Some(Box::new(move |_, _| {
            // Roughly one allocation in 500 fails, deterministically spread.
            n.fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                >> 55
                == 0
        })));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let s = s.clone();
            let stop = stop.clone();
            let ops = ops.clone();
            std::thread::spawn(move || {
                let mut rng = rand_pcg::Pcg64::seed_from_u64(t as u64 + 1);
                let mut ctx = ThreadCtx::new();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let slot = rng.random_range(0..SLOTS);
                    let base = BASE + slot * SLOT;
                    let off = rng.random_range(0..SLOT / 4096) * 4096;
                    let len = 4096 * rng.random_range(1..=128u64);
                    let len = len.min(SLOT - off);
                    let r = rng.random_range(0..100);
                    let d = if r < 70 {
                        let a = if rng.random_bool(0.6) {
                            FaultAccess::WRITE
                        } else {
                            FaultAccess::READ
                        };
                        match s.fault(&mut ctx, base + off, a) {
                            FaultResult::Handled { deferred, .. } => Ok(deferred),
                            FaultResult::Internal(e) => panic!("internal error: {e}"),
                            _ => Ok(Deferred::none()),
                        }
                    } else if r < 82 {
                        let whole = rng.random_bool(0.3);
                        let (o, l) = if whole { (0, SLOT) } else { (off, len) };
                        s.madvise(&mut ctx, base + o, l, Advice::DontNeed)
                    } else if r < 92 {
                        let p = if rng.random_bool(0.5) {
                            Prot::R
                        } else {
                            Prot::RW
                        };
                        s.mprotect(&mut ctx, base + off, len, p)
                    } else {
                        let d = s.munmap(&mut ctx, base + off, len);
                        if let Ok(d) = d {
                            d.complete_without_tlb(&s).unwrap();
                        }
                        let mut a = slot_args(slot);
                        a.addr = base + off;
                        a.len = len;
                        // The hole may already be refilled by another thread.
                        s.mmap(&mut ctx, a)
                    };
                    match d {
                        Ok(d) => d.complete_without_tlb(&s).unwrap(),
                        Err(Errno::Internal(e)) => panic!("internal error: {e}"),
                        Err(_) => {}
                    }
                    n += 1;
                }
                ops.fetch_add(n, Ordering::Relaxed);
                ctx
            })
        })
        .collect();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs_f64(secs) {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let ctxs: Vec<ThreadCtx> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    s.mem().set_fault_injection(None);
    s.take_pending().complete_without_tlb(&s).unwrap();
    if let Err(e) = s.check_invariants() {
        panic!("invariants broken after the stress run:\n{e}");
    }
    let refs: Vec<&ThreadCtx> = ctxs.iter().collect();
    let c = s.counters(&refs);
    let s = Arc::try_unwrap(s).expect("threads joined");
    finish(s, &mut ctx);
    (c.threads, ops.load(Ordering::Relaxed))
}

fn secs() -> f64 {
    std::env::var("PTLAB_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0)
}

#[test]
fn stress_8_threads_split_pmd_eager_reclaim_with_thp_and_injection() {
    let mut cfg = MmConfig {
        reclaim: Reclaim::Eager,
        ..MmConfig::default()
    };
    cfg.mthp.insert(64 << 10, MthpPolicy::Always);
    let (t, ops) = run(cfg, 8, secs(), true);
    assert!(ops > 1000, "the threads did real work ({ops} operations)");
    assert!(t.minor_faults > 100);
}

#[test]
fn stress_8_threads_global_lock_linux_reclaim() {
    let cfg = MmConfig {
        locking: Locking::Global,
        reclaim: Reclaim::On,
        ..MmConfig::default()
    };
    let (t, ops) = run(cfg, 8, secs() / 5.0, false);
    assert!(ops > 100, "{ops} operations");
    assert!(t.lock_acquisitions[LockClass::PageTableLock as usize] > 0);
}
