//! One MMU path run `n` times, for instruction counts under callgrind (which
//! are repeatable on a shared machine where wall time is not):
//!
//! ```text
//! cargo build --release -p mmu --example icount
//! valgrind --tool=callgrind --toggle-collect='*icount*measured*' \
//!     target/release/examples/icount <scenario> <n>
//! ```
//!
//! The collected count divided by `n` is the cost of one access. Scenarios:
//!
//! - `l1_same`: zen4, 64-byte steps inside one page (the repeated-hit slot);
//! - `l1_hit`: zen4, round robin over 16 pages (a first-level lookup each);
//! - `l2_hit`: zen4, round robin over 256 pages (more than the 72 first-level
//!   entries, fewer than the 3072 second-level ones): an L1 miss, an L2 hit
//!   and an L1 fill each;
//! - `walk_hot`: preset `none`, round robin over 64 pages: a 4-level walk;
//! - `walk_zen4`: zen4, random pages over 1 GiB: misses both levels, walks
//!   from a walk-cache hit, fills both levels;
//! - `fault`: zen4, every other page of 64 MiB mapped, the others accessed:
//!   a miss, a walk to a not-present PTE, the fault's invalidation;
//! - `fault_map`: zen4, 64 MiB written page by page from empty: the fault,
//!   `pt` mapping the page, the retried access (as `ptlab run` does);
//! - `prefetch`: `Cpu::prefetch` alone over `walk_zen4`'s pages (what a
//!   replay adds to each access to overlap its walks' host cache misses).

mod replay;

use std::hint::black_box;

use mmu::{Mmu, MmuConfig};
use pt::{Attrs, PageTable, Perms, PhysAddr, VirtAddr};

use replay::{BASE, DATA};

const PAGE: u64 = 4096;

fn table() -> PageTable {
    PageTable::with_new_memory(pt::geometry::preset("x86-64-4l").unwrap()).unwrap()
}

fn map(pt: &PageTable, va: u64, pages: u64) {
    pt.map(
        VirtAddr::new(va),
        PhysAddr::new(DATA + (va - BASE)),
        pages * PAGE,
        PAGE,
        Attrs::new(Perms::USER_RW),
    )
    .unwrap();
}

/// The accesses to count (the warm-up calls [`run`] directly).
#[inline(never)]
fn measured(cpu: &mut mmu::Cpu, pt: &PageTable, vas: &[u64], n: usize, write: bool) -> u64 {
    run(cpu, pt, vas, n, write)
}

/// `vas` cycled `n` times over.
#[inline(never)]
fn run(cpu: &mut mmu::Cpu, pt: &PageTable, vas: &[u64], n: usize, write: bool) -> u64 {
    let mut sum = 0u64;
    for i in 0..n {
        let va = vas[i % vas.len()];
        if let Ok(a) = cpu.access(pt, black_box(va), write, true) {
            sum = sum.wrapping_add(a.pa);
        }
    }
    sum
}

/// `Cpu::prefetch` of `vas` cycled `n` times over.
#[inline(never)]
fn measured_prefetch(cpu: &mmu::Cpu, pt: &PageTable, vas: &[u64], n: usize) {
    for i in 0..n {
        cpu.prefetch(pt, black_box(vas[i % vas.len()]));
    }
}

/// First touch of `vas`: fault, map, retry.
#[inline(never)]
fn measured_fault_map(cpu: &mut mmu::Cpu, pt: &PageTable, vas: &[u64]) -> u64 {
    let mut sum = 0u64;
    for &va in vas {
        loop {
            match cpu.access(pt, black_box(va), true, true) {
                Ok(a) => {
                    sum = sum.wrapping_add(a.pa);
                    break;
                }
                Err(mmu::Fault::NotPresent { .. }) => map(pt, va, 1),
                Err(f) => panic!("{f}"),
            }
        }
    }
    sum
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scenario = args.get(1).map_or("l1_hit", String::as_str);
    let n: usize = args.get(2).map_or(1_000_000, |s| s.parse().unwrap());
    let pt = table();
    let preset = if scenario == "walk_hot" {
        "none"
    } else {
        "zen4"
    };
    let m = Mmu::new(MmuConfig::preset(preset).unwrap(), pt.geometry(), 1).unwrap();
    let mut cpu = m.attach(0, 1);
    let (vas, write): (Vec<u64>, bool) = match scenario {
        "l1_same" => {
            map(&pt, BASE, 1);
            ((0..64).map(|i| BASE + i * 64).collect(), false)
        }
        "l1_hit" => {
            map(&pt, BASE, 16);
            ((0..16).map(|i| BASE + i * PAGE + 64).collect(), false)
        }
        "l2_hit" => {
            map(&pt, BASE, 256);
            ((0..256).map(|i| BASE + i * PAGE).collect(), false)
        }
        "walk_hot" => {
            map(&pt, BASE, 64);
            ((0..64).map(|i| BASE + i * PAGE).collect(), false)
        }
        "walk_zen4" => {
            map(&pt, BASE, 1 << 18);
            (replay::pages(1 << 16, 1 << 18, 7), false)
        }
        "fault" => {
            for p in (0..1 << 14).step_by(2) {
                map(&pt, BASE + p * PAGE, 1);
            }
            (
                (0..1 << 13).map(|p| BASE + (2 * p + 1) * PAGE).collect(),
                true,
            )
        }
        "prefetch" => {
            map(&pt, BASE, 1 << 18);
            let vas = replay::pages(1 << 16, 1 << 18, 7);
            measured_prefetch(&cpu, &pt, &vas, n);
            report(scenario, n, 0, &cpu);
            return;
        }
        "fault_map" => {
            let vas: Vec<u64> = (0..n as u64).map(|p| BASE + p * PAGE).collect();
            let sum = measured_fault_map(&mut cpu, &pt, &vas);
            report(scenario, n, sum, &cpu);
            return;
        }
        _ => panic!("unknown scenario {scenario}"),
    };
    // Warm up: one pass fills the TLBs and walk caches as the loop keeps them.
    run(&mut cpu, &pt, &vas, vas.len(), write);
    let _ = cpu.take_stats();
    let sum = measured(&mut cpu, &pt, &vas, n, write);
    report(scenario, n, sum, &cpu);
}

fn report(scenario: &str, n: usize, sum: u64, cpu: &mmu::Cpu) {
    let s = cpu.stats();
    println!(
        "{scenario} n={n} sum={sum:#x}: l1_hits={} l2_hits={} walks={} refs={} faults={} ad_writes={}",
        s.l1_hits,
        s.l2_hits,
        s.walks,
        s.walk_refs,
        s.faults_not_present,
        s.ad_writes
    );
}
