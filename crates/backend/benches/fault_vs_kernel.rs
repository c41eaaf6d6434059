//! The model's 4 KiB anonymous write fault against this machine's kernel's,
//! measured in one run: ten rounds of the kernel's faults (the kernel
//! backend runs a workload that writes once to every page of a fresh
//! anonymous mapping), then ten of the model's (`mm::AddressSpace::fault`
//! on fresh pages, as the `mm` fault benchmark does), twice over. Prints
//! every round, each side's mean per fault with its 95% interval, and the
//! ratio of the means and of the medians.
//!
//! `cargo bench -p backend --bench fault_vs_kernel` (Linux only). The
//! region is 64 MiB (16,384 faults per round, the size of the `mm` fault
//! benchmark); `PTLAB_FAULT_MIB` sets another size (the model's per-fault
//! cost grows once its tables and lists outgrow the host's L2 cache).

use std::sync::Arc;
use std::time::Instant;

const ROUNDS: usize = 10;
const SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// The region's size in MiB.
fn region_mib() -> u64 {
    std::env::var("PTLAB_FAULT_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&m| (1..=4096).contains(&m))
        .unwrap_or(64)
}

fn kernel_workload(mib: u64) -> String {
    format!(
        r#"
name = "fault-vs-kernel"
description = "one write per 4 KiB page of a fresh {mib} MiB anonymous mapping"

[[thread]]
op = [
  {{ mmap = "buf", size = "{mib}MiB" }},
  {{ mark = "mapped" }},
  {{ touch = "buf", access = "write", stride = "4KiB" }},
  {{ mark = "touched" }},
  {{ munmap = "buf" }},
]
"#
    )
}

/// The kernel's nanoseconds per fault over the touch of one run.
fn kernel_round(w: &workload::plan::Workload, pages: u64) -> f64 {
    let run = backend::kernel::run(w, &backend::kernel::KernelOptions::default())
        .expect("the kernel backend runs the workload");
    let get = |mark: usize, name: &str| run.marks[mark].counters.get(name).unwrap_or(0);
    let faults = get(1, counters::MINOR_FAULTS.name) - get(0, counters::MINOR_FAULTS.name);
    assert!(
        faults as u64 >= pages,
        "expected at least {pages} faults, the kernel counted {faults}"
    );
    (get(1, counters::ELAPSED_NS.name) - get(0, counters::ELAPSED_NS.name)) as f64 / faults as f64
}

/// Faults every page of the region once, then gives them back
/// (MADV_DONTNEED, which also frees the PTE tables); returns the
/// nanoseconds per fault.
fn fault_all(s: &mm::AddressSpace, ctx: &mut mm::ThreadCtx, base: u64, pages: u64) -> f64 {
    let t = Instant::now();
    for p in 0..pages {
        match s.fault(ctx, base + p * 4096, mm::FaultAccess::WRITE) {
            mm::FaultResult::Handled { deferred, .. } => {
                deferred.complete_without_tlb(s).expect("nothing to free")
            }
            other => panic!("{other:?}"),
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / pages as f64;
    s.madvise(ctx, base, pages * 4096, mm::Advice::DontNeed)
        .and_then(|d| d.complete_without_tlb(s))
        .expect("DONTNEED");
    ns
}

fn show(name: &str, s: &stats::Summary) {
    let ci = s.ci95.expect("several rounds");
    println!(
        "{name:<28} {:>9.1} ns per fault (95% CI {:.1} to {:.1}; median {:.1}, n = {})",
        s.mean, ci.low, ci.high, s.median, s.n
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("fault_vs_kernel: bench");
        return;
    }
    let mib = region_mib();
    let pages = mib << 8;
    let w =
        workload::parse(&kernel_workload(mib), "fault-vs-kernel", 48).expect("a valid workload");
    let g = Arc::new(pt::geometry::preset("x86-64-4l").expect("a preset"));
    let space = mm::AddressSpace::new(g, mm::MmConfig::default()).expect("an address space");
    let mut ctx = mm::ThreadCtx::new();
    let base = 32u64 << 40;
    space
        .mmap(&mut ctx, mm::MmapArgs::anon(base, pages * 4096))
        .and_then(|d| d.complete_without_tlb(&space))
        .expect("mmap");
    // Blocks of rounds, kernel then model, twice (so a drift of the
    // machine shows as a difference between the blocks): the kernel backend
    // forks its child from this process, which write-protects every page of
    // the model's memory here until a write faults it back, so the model's
    // rounds are kept apart from the forks, after one untimed round.
    let (mut kernel, mut model) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        kernel_round(&w, pages);
        kernel.extend((0..ROUNDS).map(|_| kernel_round(&w, pages)));
        std::thread::sleep(SETTLE);
        fault_all(&space, &mut ctx, base, pages);
        model.extend((0..ROUNDS).map(|_| fault_all(&space, &mut ctx, base, pages)));
    }
    let round = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!("kernel rounds (ns per fault): {}", round(&kernel));
    println!("model rounds (ns per fault):  {}", round(&model));
    let k = stats::Summary::of(&kernel).expect("finite samples");
    let m = stats::Summary::of(&model).expect("finite samples");
    println!("{mib} MiB: {pages} faults per round, 2 x {ROUNDS} rounds per side");
    show("kernel (this machine)", &k);
    show("model (mm fault path)", &m);
    println!(
        "ratio of means: the model's fault is {:.1} times faster (medians: {:.1})",
        k.mean / m.mean,
        k.median / m.median
    );
}
