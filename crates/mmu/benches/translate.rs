//! Speed of the MMU model: a first-level TLB hit, a full miss with its walk,
//! and random accesses over 64 GiB of 4 KiB pages.
//!
//! `cargo bench -p mmu --bench translate`. Every benchmark is measured
//! twice: in wall time (`wall/...`) and in the benchmark thread's CPU time
//! (`cpu/...`, `CLOCK_THREAD_CPUTIME_ID`), which excludes the time other
//! processes take on a shared machine.

use std::cell::OnceCell;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mmu::{Mmu, MmuConfig};
use pt::PageTable;

#[path = "../examples/replay/mod.rs"]
mod replay;
use replay::{pages, BASE};

/// The calling thread's CPU time.
struct ThreadTime;

fn thread_ns() -> u64 {
    host::thread_cpu_ns().expect("CLOCK_THREAD_CPUTIME_ID")
}

struct NsFormatter;

impl ValueFormatter for NsFormatter {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        "ns"
    }
    fn scale_throughputs(&self, _typical: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let n = match *t {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => n,
            Throughput::Bits(n) => n,
        } as f64;
        for v in values {
            *v = n * 1e3 / *v; // per ns -> millions per second
        }
        "M/s"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

impl Measurement for ThreadTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_ns()
    }
    fn end(&self, t: u64) -> u64 {
        thread_ns() - t
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &NsFormatter
    }
}

/// [`replay::table`], saying how long a large one took to map.
fn table(pages: u64) -> PageTable {
    let t = Instant::now();
    let pt = replay::table(pages);
    if pages > 1 << 20 {
        let s = t.elapsed().as_secs_f64();
        eprintln!(
            "setup: mapped {pages} 4 KiB pages in {s:.2} s ({:.0} ns per page)",
            s * 1e9 / pages as f64
        );
    }
    pt
}

fn mmu(preset: &str, pt: &PageTable) -> Arc<Mmu> {
    Mmu::new(MmuConfig::preset(preset).unwrap(), pt.geometry(), 1).unwrap()
}

/// The harness's own cost per iteration, to read the others against: a
/// load, an add and a store through `black_box`.
fn floor<M: Measurement>(c: &mut Criterion<M>, clock: &str) {
    let mut g = c.benchmark_group(format!("{clock}/floor"));
    g.measurement_time(Duration::from_secs(2));
    let mut x = 0u64;
    g.bench_function("black_box_add", |b| {
        b.iter(|| {
            x = x.wrapping_add(black_box(64));
            black_box(x)
        })
    });
    g.finish();
}

fn l1_hit<M: Measurement>(c: &mut Criterion<M>, clock: &str) {
    let pt = table(64);
    let mut g = c.benchmark_group(format!("{clock}/l1_hit"));
    g.measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(1));
    for preset in ["icelake", "zen4"] {
        let m = mmu(preset, &pt);
        let mut cpu = m.attach(0, 1);
        // 16 pages: all in the first-level TLB after one round.
        let vas: Vec<u64> = (0..16).map(|i| BASE + i * 4096 + 64).collect();
        for &va in &vas {
            cpu.access(&pt, va, false, true).unwrap();
        }
        // Round robin over the 16 pages: every access looks the TLB up.
        let mut i = 0;
        g.bench_function(format!("{preset}/16_pages"), |b| {
            b.iter(|| {
                i = (i + 1) & 15;
                black_box(cpu.access(&pt, black_box(vas[i]), false, true).unwrap().pa)
            })
        });
        // 64-byte steps within one page: hits on the same entry.
        let mut off = 0;
        g.bench_function(format!("{preset}/same_page"), |b| {
            b.iter(|| {
                off = (off + 64) & 4095;
                black_box(
                    cpu.access(&pt, black_box(BASE + off), false, true)
                        .unwrap()
                        .pa,
                )
            })
        });
        assert_eq!(cpu.stats().tlb_misses, 16, "every timed access hit");
    }
    g.finish();
}

/// A full miss whose walk reads only host-cache-resident words: 64 pages,
/// no TLB and no walk cache. This is the model's own cost of a miss and a
/// 4-level walk, without the host's memory latency.
fn miss_walk_hot<M: Measurement>(c: &mut Criterion<M>, clock: &str) {
    let pt = table(64);
    let m = mmu("none", &pt);
    let mut cpu = m.attach(0, 1);
    let mut g = c.benchmark_group(format!("{clock}/miss_walk_hot"));
    g.measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    g.bench_function("none", |b| {
        b.iter(|| {
            i = (i + 1) & 63;
            black_box(
                cpu.access(&pt, black_box(BASE + i * 4096), false, true)
                    .unwrap()
                    .pa,
            )
        })
    });
    g.finish();
    assert_eq!(cpu.stats().tlb_hits, 0);
}

fn miss_walk<M: Measurement>(c: &mut Criterion<M>, clock: &str) {
    // 1 GiB of pages accessed at random: with no TLB and no walk cache
    // ("none") every access walks 4 levels; with "zen4" nearly every access
    // misses both TLB levels (1 GiB >> 3072 x 4 KiB) and walks.
    let pt = OnceCell::new();
    let vas = pages(1 << 16, 1 << 18, 7);
    let mut g = c.benchmark_group(format!("{clock}/miss_walk"));
    g.measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(1));
    for preset in ["none", "zen4"] {
        let mut state = None;
        let mut i = 0;
        g.bench_function(preset, |b| {
            let pt = pt.get_or_init(|| table(1 << 18));
            let cpu = state.get_or_insert_with(|| mmu(preset, pt).attach(0, 1));
            b.iter(|| {
                i = (i + 1) & ((1 << 16) - 1);
                black_box(cpu.access(pt, black_box(vas[i]), false, true).unwrap().pa)
            });
        });
        if let Some(cpu) = state {
            let s = cpu.stats();
            eprintln!(
                "  {preset}: {:.1}% of accesses walked, {:.2} references per walk",
                100.0 * s.walks as f64 / s.accesses as f64,
                s.mean_walk_refs()
            );
        }
    }
    g.finish();
}

fn random_64g<M: Measurement>(c: &mut Criterion<M>, clock: &str) {
    const BATCH: usize = 1 << 16;
    /// How far ahead a replay prefetches (accesses).
    const AHEAD: usize = 8;
    let pt = OnceCell::new();
    let vas = OnceCell::new();
    let mut g = c.benchmark_group(format!("{clock}/random_64g"));
    g.measurement_time(Duration::from_secs(5));
    g.sample_size(20);
    g.throughput(Throughput::Elements(BATCH as u64));
    for (preset, ahead) in [
        ("zen4", false),
        ("zen4", true),
        ("icelake", false),
        ("none", false),
        ("none", true),
    ] {
        let mut state = None;
        let mut at = 0;
        let name = if ahead {
            format!("{preset}/prefetch")
        } else {
            preset.to_string()
        };
        g.bench_function(&name, |b| {
            let pt = pt.get_or_init(|| table(replay::PAGES));
            let vas: &Vec<u64> = vas.get_or_init(replay::addresses);
            let cpu = state.get_or_insert_with(|| mmu(preset, pt).attach(0, 1));
            b.iter(|| {
                let mut sum = 0u64;
                for (k, &va) in vas[at..at + BATCH].iter().enumerate() {
                    if ahead {
                        // As the model backend replays a random touch.
                        cpu.prefetch(pt, vas[(at + k + AHEAD) % vas.len()]);
                    }
                    sum = sum.wrapping_add(cpu.access(pt, va, true, true).unwrap().pa);
                }
                at = (at + BATCH) % vas.len();
                black_box(sum)
            });
        });
        if let Some(cpu) = state {
            let s = cpu.stats();
            eprintln!(
                "  {name}: {:.1}% TLB misses, {:.2} references per walk, {:.1}% of walks hit a walk cache",
                100.0 * s.tlb_misses as f64 / s.accesses as f64,
                s.mean_walk_refs(),
                100.0 * s.pwc_hits_total() as f64 / s.walks.max(1) as f64
            );
        }
    }
    g.finish();
}

fn wall(c: &mut Criterion<WallTime>) {
    floor(c, "wall");
    l1_hit(c, "wall");
    miss_walk_hot(c, "wall");
    miss_walk(c, "wall");
    random_64g(c, "wall");
}

fn cpu(c: &mut Criterion<ThreadTime>) {
    floor(c, "cpu");
    l1_hit(c, "cpu");
    miss_walk_hot(c, "cpu");
    miss_walk(c, "cpu");
    random_64g(c, "cpu");
}

criterion_group!(wall_group, wall);
criterion_group! {
    name = cpu_group;
    config = Criterion::default().with_measurement(ThreadTime);
    targets = cpu
}
criterion_main!(wall_group, cpu_group);
