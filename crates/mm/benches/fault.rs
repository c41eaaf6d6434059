//! Fault-path benchmarks: one 4 KiB anonymous write fault on one thread, and
//! two threads faulting disjoint 2 MiB ranges under each locking scheme
//! (throughput in faults per second; the contended-acquisition counts are
//! printed to stderr).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mm::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

const BASE: u64 = 32 << 40;
const M: u64 = 1 << 20;
/// Pages faulted between two (untimed) MADV_DONTNEED of the region.
const CHUNK: u64 = 16 * 1024;

fn space(locking: Locking) -> AddressSpace {
    let g = Arc::new(pt::geometry::preset("x86-64-4l").unwrap());
    AddressSpace::new(
        g,
        MmConfig {
            locking,
            ..MmConfig::default()
        },
    )
    .unwrap()
}

fn fault(s: &AddressSpace, ctx: &mut ThreadCtx, va: u64) {
    match s.fault(ctx, va, FaultAccess::WRITE) {
        FaultResult::Handled { deferred, .. } => deferred.complete_without_tlb(s).unwrap(),
        other => panic!("{other:?}"),
    }
}

/// Faults `n` fresh pages of `[base, base + len)` on one thread, resetting
/// the range with DONTNEED outside the timed part.
fn timed_faults(s: &AddressSpace, ctx: &mut ThreadCtx, base: u64, len: u64, n: u64) -> Duration {
    let pages = len / 4096;
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < n {
        let k = (n - done).min(pages);
        let t = Instant::now();
        for p in 0..k {
            fault(s, ctx, base + p * 4096);
        }
        total += t.elapsed();
        s.madvise(ctx, base, len, Advice::DontNeed)
            .unwrap()
            .complete_without_tlb(s)
            .unwrap();
        done += k;
    }
    total
}

fn one_thread(c: &mut Criterion) {
    let s = space(Locking::SplitPmd);
    let mut ctx = ThreadCtx::new();
    let len = CHUNK * 4096;
    s.mmap(&mut ctx, MmapArgs::anon(BASE, len))
        .unwrap()
        .complete_without_tlb(&s)
        .unwrap();
    let mut g = c.benchmark_group("fault");
    g.throughput(Throughput::Elements(1));
    g.bench_function("anon_write_4k", |b| {
        b.iter_custom(|iters| timed_faults(&s, &mut ctx, BASE, len, iters))
    });
    g.finish();
}

fn scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("fault_scaling");
    // Each thread faults its own 2 MiB ranges: one PMD table, disjoint PTE tables.
    let per_thread = 8 * M;
    for locking in [Locking::SplitPmd, Locking::Global] {
        for threads in [1u64, 2] {
            let s = space(locking);
            let mut ctx = ThreadCtx::new();
            s.mmap(&mut ctx, MmapArgs::anon(BASE, 2 * per_thread))
                .unwrap()
                .complete_without_tlb(&s)
                .unwrap();
            let mut contended = 0u64;
            let mut acquired = 0u64;
            g.throughput(Throughput::Elements(threads));
            let name = format!("{locking:?}/{threads}_threads");
            g.bench_function(&name, |b| {
                b.iter_custom(|iters| {
                    let (d, ctxs) = std::thread::scope(|sc| {
                        let hs: Vec<_> = (0..threads)
                            .map(|t| {
                                let s = &s;
                                sc.spawn(move || {
                                    let mut ctx = ThreadCtx::new();
                                    let base = BASE + t * per_thread;
                                    let d = timed_faults(s, &mut ctx, base, per_thread, iters);
                                    (d, ctx)
                                })
                            })
                            .collect();
                        let mut max = Duration::ZERO;
                        let mut ctxs = Vec::new();
                        for h in hs {
                            let (d, ctx) = h.join().unwrap();
                            max = max.max(d);
                            ctxs.push(ctx);
                        }
                        (max, ctxs)
                    });
                    for c in &ctxs {
                        contended += c.counters.lock_contended.iter().sum::<u64>();
                        acquired += c.counters.lock_acquisitions.iter().sum::<u64>();
                    }
                    d
                })
            });
            eprintln!(
                "{name}: lock acquisitions {acquired}, contended {contended} ({:.3}%)",
                100.0 * contended as f64 / acquired.max(1) as f64
            );
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = one_thread, scaling
}
criterion_main!(benches);
