//! The 64 GiB benchmark's bound: random accesses over 64 GiB of 4 KiB
//! pages replayed through the `zen4` model and through the minimal second
//! model of the same TLBs that the tests hold it to
//! (`tests/reference`, which knows only this one case), alternately in
//! one process so that the host's moods hit both alike:
//!
//! ```text
//! cargo run --release -p mmu --example bound64 -- [rounds]
//! ```
//!
//! Each round replays 4 Mi accesses through each, both with the replay's
//! walk prefetch 8 accesses ahead (through a `WalkMemo`, as `Cpu::prefetch`), and prints millions of accesses per
//! second in the thread's CPU time, and their ratio. The two agree on every
//! physical address (checked here too). Under callgrind,
//! `--toggle-collect='*bound64*replay_*'` with `rounds` = 1 counts the
//! instructions of both replays (4 Mi accesses each).

#[path = "../tests/reference/mod.rs"]
mod reference;

mod replay;

use mmu::{Mmu, MmuConfig};
use pt::table::WalkMemo;
use pt::{PageTable, VirtAddr};

const AHEAD: usize = 8;

/// `vas` through the reference, each with the walk prefetch `AHEAD`
/// accesses ahead (out of line: callgrind counts it per call).
#[inline(never)]
fn replay_reference(r: &mut reference::Zen4, memo: &WalkMemo, pt: &PageTable, vas: &[u64]) -> u64 {
    let (mem, root) = (pt.mem(), pt.root());
    let mut sum = 0u64;
    for (k, &va) in vas.iter().enumerate() {
        pt.prefetch_walk_memo(memo, VirtAddr::new(vas[(k + AHEAD) % vas.len()]));
        sum = sum.wrapping_add(r.access(mem, root, va));
    }
    sum
}

/// `vas` through the model, as `replay_reference` does.
#[inline(never)]
fn replay_model(cpu: &mut mmu::Cpu, pt: &PageTable, vas: &[u64]) -> u64 {
    let mut sum = 0u64;
    for (k, &va) in vas.iter().enumerate() {
        cpu.prefetch(pt, vas[(k + AHEAD) % vas.len()]);
        sum = sum.wrapping_add(cpu.access(pt, va, true, true).unwrap().pa);
    }
    sum
}

fn main() {
    let rounds: usize = std::env::args().nth(1).map_or(3, |s| s.parse().unwrap());
    let pt = replay::table(replay::PAGES);
    let vas = replay::addresses();
    let m = Mmu::new(MmuConfig::preset("zen4").unwrap(), pt.geometry(), 1).unwrap();
    let mut cpu = m.attach(0, 1);
    let mut reference = reference::Zen4::new();
    // The prefetch memo `Cpu::prefetch` keeps, for the reference's replay.
    let memo = WalkMemo::new();
    let (mem, root) = (pt.mem(), pt.root());
    // One pass sets every accessed and dirty bit (which the reference
    // leaves to the model) and fills both.
    for &va in &vas {
        let a = cpu.access(&pt, va, true, true).unwrap().pa;
        assert_eq!(a, reference.access(mem, root, va), "{va:#x}");
    }
    for _ in 0..rounds {
        let t = replay::cpu_secs();
        let sum = replay_reference(&mut reference, &memo, &pt, &vas);
        let bound = vas.len() as f64 / (replay::cpu_secs() - t) / 1e6;
        let t = replay::cpu_secs();
        let sum2 = replay_model(&mut cpu, &pt, &vas);
        let model = vas.len() as f64 / (replay::cpu_secs() - t) / 1e6;
        assert_eq!(sum, sum2);
        println!(
            "reference {bound:.2} M/s  zen4 {model:.2} M/s  ratio {:.2}",
            bound / model
        );
    }
    let (s, c) = (cpu.stats(), &reference.counts);
    assert_eq!((s.walks, s.walk_refs), (c.walks, c.refs));
}
