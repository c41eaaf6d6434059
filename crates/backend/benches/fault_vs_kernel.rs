//! The model's 4 KiB anonymous write fault against this machine's kernel's,
//! measured in one run, interleaved: round i times the kernel's faults (the
//! kernel backend runs a workload that writes once to every page of a fresh
//! anonymous mapping) and then the model's (`mm::AddressSpace::fault` on
//! fresh pages, as the `mm` fault benchmark does), so both see the same
//! machine load. Prints each side's mean per fault with its 95% interval,
//! and the ratio.
//!
//! `cargo bench -p backend --bench fault_vs_kernel` (Linux only).

use std::sync::Arc;
use std::time::Instant;

/// Pages per round (256 MiB of 4 KiB pages).
const PAGES: u64 = 65_536;
const ROUNDS: usize = 10;

const KERNEL_WORKLOAD: &str = r#"
name = "fault-vs-kernel"
description = "one write per 4 KiB page of a fresh 256 MiB anonymous mapping"

[[thread]]
op = [
  { mmap = "buf", size = "256MiB" },
  { mark = "mapped" },
  { touch = "buf", access = "write", stride = "4KiB" },
  { mark = "touched" },
  { munmap = "buf" },
]
"#;

/// The kernel's nanoseconds per fault over the touch of one run.
fn kernel_round(w: &workload::plan::Workload) -> f64 {
    let run = backend::kernel::run(w, &backend::kernel::KernelOptions::default())
        .expect("the kernel backend runs the workload");
    let get = |mark: usize, name: &str| run.marks[mark].counters.get(name).unwrap_or(0);
    let faults = get(1, "minor_faults") - get(0, "minor_faults");
    assert!(
        faults as u64 >= PAGES,
        "expected at least {PAGES} faults, the kernel counted {faults}"
    );
    (get(1, "elapsed_ns") - get(0, "elapsed_ns")) as f64 / faults as f64
}

/// Faults every page of the region once, then gives them back
/// (MADV_DONTNEED, which also frees the PTE tables); returns the
/// nanoseconds per fault.
fn fault_all(s: &mm::AddressSpace, ctx: &mut mm::ThreadCtx, base: u64) -> f64 {
    let t = Instant::now();
    for p in 0..PAGES {
        match s.fault(ctx, base + p * 4096, mm::FaultAccess::WRITE) {
            mm::FaultResult::Handled { deferred, .. } => {
                deferred.complete_without_tlb(s).expect("nothing to free")
            }
            other => panic!("{other:?}"),
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / PAGES as f64;
    s.madvise(ctx, base, PAGES * 4096, mm::Advice::DontNeed)
        .and_then(|d| d.complete_without_tlb(s))
        .expect("DONTNEED");
    ns
}

/// The model's nanoseconds per fault over `PAGES` fresh pages. An untimed
/// pass first brings the model's own data back into the host's caches
/// after the kernel round (which touched 256 MiB): each side is timed in
/// its steady state, as the kernel's own fault path is warm in its round.
fn model_round(s: &mm::AddressSpace, ctx: &mut mm::ThreadCtx, base: u64) -> f64 {
    fault_all(s, ctx, base);
    fault_all(s, ctx, base)
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
    let w = workload::parse(KERNEL_WORKLOAD, "fault-vs-kernel", 48).expect("a valid workload");
    let g = Arc::new(pt::geometry::preset("x86-64-4l").expect("a preset"));
    let space = mm::AddressSpace::new(g, mm::MmConfig::default()).expect("an address space");
    let mut ctx = mm::ThreadCtx::new();
    let base = 32u64 << 40;
    space
        .mmap(&mut ctx, mm::MmapArgs::anon(base, PAGES * 4096))
        .and_then(|d| d.complete_without_tlb(&space))
        .expect("mmap");
    // Warm-up: one round each, not counted.
    kernel_round(&w);
    model_round(&space, &mut ctx, base);
    let (mut kernel, mut model) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        kernel.push(kernel_round(&w));
        model.push(model_round(&space, &mut ctx, base));
    }
    let k = stats::Summary::of(&kernel).expect("finite samples");
    let m = stats::Summary::of(&model).expect("finite samples");
    println!("{PAGES} faults per round, {ROUNDS} rounds, interleaved");
    show("kernel (this machine)", &k);
    show("model (mm fault path)", &m);
    println!(
        "ratio of means: the model's fault is {:.1} times faster (medians: {:.1})",
        k.mean / m.mean,
        k.median / m.median
    );
}
