//! Faults 64 MiB of anonymous memory page by page, eight times (DONTNEED in
//! between): run under `valgrind --tool=callgrind` to count the
//! instructions of one 4 KiB anonymous write fault (repeatable on a noisy
//! machine, unlike wall time), or alone for a rough time per fault.

use mm::*;
use std::sync::Arc;

fn main() {
    let g = Arc::new(pt::geometry::preset("x86-64-4l").expect("a preset"));
    let s = AddressSpace::new(g, MmConfig::default()).expect("an address space");
    let mut ctx = ThreadCtx::new();
    let base = 32u64 << 40;
    let len = 64u64 << 20;
    s.mmap(&mut ctx, MmapArgs::anon(base, len))
        .unwrap()
        .complete_without_tlb(&s)
        .unwrap();
    let mut faulting = std::time::Duration::ZERO;
    let rounds: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8);
    for _ in 0..rounds {
        let t = std::time::Instant::now();
        for p in 0..len / 4096 {
            match s.fault(&mut ctx, base + p * 4096, FaultAccess::WRITE) {
                FaultResult::Handled { deferred, .. } => deferred.complete_without_tlb(&s).unwrap(),
                other => panic!("{other:?}"),
            }
        }
        faulting += t.elapsed();
        s.madvise(&mut ctx, base, len, Advice::DontNeed)
            .unwrap()
            .complete_without_tlb(&s)
            .unwrap();
    }
    let n = rounds * len / 4096;
    println!(
        "{:.1} ns per fault over {n} faults",
        faulting.as_nanos() as f64 / n as f64
    );
}
