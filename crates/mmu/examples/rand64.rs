//! Random accesses over 64 GiB of 4 KiB pages, timed in one process so that
//! variants compare as ratios on a noisy host (the criterion benchmark
//! `translate -- random_64g` is the reference figure):
//!
//! ```text
//! cargo run --release -p mmu --example rand64 -- [preset] [rounds] [ahead] [threads]
//! ```
//!
//! Each round replays 4 Mi accesses without prefetch, with the walk's
//! prefetch only (`PageTable::prefetch_walk`), and with `Cpu::prefetch`,
//! `ahead` accesses ahead (8 unless given); it prints millions of accesses per second of each, in
//! the thread's CPU time. With `threads` > 1, each round also replays the
//! accesses split between that many threads, each its own modeled CPU of one
//! `Mmu` over the one table, with `Cpu::prefetch`, and prints the aggregate
//! rate in wall time (the modeled machine's parallel replay).

mod replay;

use mmu::{Mmu, MmuConfig};
use pt::{PageTable, VirtAddr};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let preset = args.get(1).map_or("zen4", String::as_str);
    let rounds: usize = args.get(2).map_or(3, |s| s.parse().unwrap());
    let ahead: usize = args.get(3).map_or(8, |s| s.parse().unwrap());
    let threads: usize = args.get(4).map_or(1, |s| s.parse().unwrap());
    let pt = replay::table(replay::PAGES);
    let vas = replay::addresses();
    let m = Mmu::new(
        MmuConfig::preset(preset).unwrap(),
        pt.geometry(),
        threads + 1,
    )
    .unwrap();
    let mut cpu = m.attach(0, 1);
    // One pass to set every accessed and dirty bit and fill the TLBs.
    for &va in &vas {
        cpu.access(&pt, va, true, true).unwrap();
    }
    for _ in 0..rounds {
        let mut line = String::new();
        for mode in ["none", "walk", "all"] {
            let t = replay::cpu_secs();
            let mut sum = 0u64;
            for (k, &va) in vas.iter().enumerate() {
                let next = vas[(k + ahead) % vas.len()];
                match mode {
                    "walk" => pt.prefetch_walk(VirtAddr::new(next)),
                    "all" => cpu.prefetch(&pt, next),
                    _ => {}
                }
                sum = sum.wrapping_add(cpu.access(&pt, va, true, true).unwrap().pa);
            }
            std::hint::black_box(sum);
            let mps = vas.len() as f64 / (replay::cpu_secs() - t) / 1e6;
            line += &format!("{mode} {mps:.2} M/s  ");
        }
        if threads > 1 {
            line += &format!(
                "{threads} threads {:.2} M/s",
                parallel(&m, &pt, &vas, threads, ahead)
            );
        }
        println!("{preset}: {line}");
    }
}

/// Replays `vas` split between `threads` threads, CPUs 1.. of `m` (CPU 0 is
/// the main thread's), each with `Cpu::prefetch`; returns the aggregate rate
/// in millions of accesses per second of wall time.
fn parallel(
    m: &std::sync::Arc<Mmu>,
    pt: &PageTable,
    vas: &[u64],
    threads: usize,
    ahead: usize,
) -> f64 {
    let chunk = vas.len() / threads;
    let t = std::time::Instant::now();
    std::thread::scope(|s| {
        for i in 0..threads {
            let part = &vas[i * chunk..(i + 1) * chunk];
            s.spawn(move || {
                // CPU 0 belongs to the main thread.
                let mut cpu = m.attach(i + 1, 1);
                let mut sum = 0u64;
                for (k, &va) in part.iter().enumerate() {
                    cpu.prefetch(pt, part[(k + ahead) % part.len()]);
                    sum = sum.wrapping_add(cpu.access(pt, va, true, true).unwrap().pa);
                }
                std::hint::black_box(sum);
            });
        }
    });
    (chunk * threads) as f64 / t.elapsed().as_secs_f64() / 1e6
}
