//! Engine speed: translate by full walk on a dense 4-level table, and the
//! amortized cost of mapping 4 KiB pages.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use pt::geometry::preset;
use pt::{Attrs, PageTable, Perms, PhysAddr, VirtAddr};
use std::time::Duration;

const VA: u64 = 1 << 40;
const PA: u64 = 1 << 40;

/// A small xorshift so the benchmark's addresses are random but fixed.
fn addresses(n: usize, span: u64) -> Vec<VirtAddr> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            VirtAddr::new(VA + ((x % span) & !0xfff) + (x & 0xff8))
        })
        .collect()
}

fn translate(c: &mut Criterion) {
    // As the ptlab binary does: the arena on huge pages.
    pt::mem::set_arena_advisor(host::advise_huge_pages);
    let mut g = c.benchmark_group("translate");
    g.measurement_time(Duration::from_secs(3));
    for (name, span) in [("x86-64-4l", 1u64 << 30), ("x86-64-5l", 1 << 30)] {
        let pt = PageTable::with_new_memory(preset(name).unwrap()).unwrap();
        pt.map(
            VirtAddr::new(VA),
            PhysAddr::new(PA),
            span,
            4096,
            Attrs::new(Perms::USER_RW),
        )
        .unwrap();
        let addrs = addresses(1 << 16, span);
        g.throughput(Throughput::Elements(addrs.len() as u64));
        let seq: Vec<VirtAddr> = (0..addrs.len() as u64)
            .map(|i| VirtAddr::new(VA + i * 4096))
            .collect();
        g.bench_function(format!("full walk, sequential pages, {name}"), |b| {
            b.iter(|| {
                let mut sum = 0u64;
                for &va in &seq {
                    sum =
                        sum.wrapping_add(pt.translate(std::hint::black_box(va)).unwrap().pa.get());
                }
                sum
            })
        });
        g.bench_function(format!("full walk, dense 1 GiB of 4K, {name}"), |b| {
            b.iter(|| {
                let mut sum = 0u64;
                for &va in &addrs {
                    sum =
                        sum.wrapping_add(pt.translate(std::hint::black_box(va)).unwrap().pa.get());
                }
                sum
            })
        });
    }
    g.finish();
}

fn map(c: &mut Criterion) {
    let mut g = c.benchmark_group("map");
    g.measurement_time(Duration::from_secs(3));
    const LEN: u64 = 64 << 20;
    g.throughput(Throughput::Elements(LEN / 4096));
    g.bench_function("map 64 MiB of 4K pages, x86-64-4l", |b| {
        b.iter_batched(
            || PageTable::with_new_memory(preset("x86-64-4l").unwrap()).unwrap(),
            |pt| {
                pt.map(
                    VirtAddr::new(VA),
                    PhysAddr::new(PA),
                    LEN,
                    4096,
                    Attrs::new(Perms::USER_RW),
                )
                .unwrap();
                pt
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, translate, map);
criterion_main!(benches);
