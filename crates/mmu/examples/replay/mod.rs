//! What the MMU's replay benchmark and examples replay: a table of 4 KiB
//! pages and a stream of random page addresses in it, built the same way
//! everywhere so that their figures are of the same workload
//! (`benches/translate.rs` includes this file; `rand64` and `bound64`
//! replay its 64 GiB case).
#![allow(dead_code)]

use pt::{Attrs, PageTable, Perms, PhysAddr, VirtAddr};

/// Where the pages are mapped.
pub const BASE: u64 = 0x2000_0000_0000;
/// Where their frames are (1 TiB of physical memory).
pub const DATA: u64 = 1 << 40;
/// 64 GiB of 4 KiB pages: the replay benchmark's size.
pub const PAGES: u64 = 16 << 20;

/// An `x86-64-4l` table mapping `pages` 4 KiB pages at [`BASE`], on host
/// huge pages as the `ptlab` binary sets its arena up.
pub fn table(pages: u64) -> PageTable {
    pt::mem::set_arena_advisor(host::advise_huge_pages);
    let pt = PageTable::with_new_memory(pt::geometry::preset("x86-64-4l").unwrap()).unwrap();
    pt.map(
        VirtAddr::new(BASE),
        PhysAddr::new(DATA),
        pages * 4096,
        4096,
        Attrs::new(Perms::USER_RW),
    )
    .unwrap();
    pt
}

/// `n` page addresses drawn (xorshift from `seed`) from the first `range`
/// pages at [`BASE`]: a cheap deterministic random stream.
pub fn pages(n: usize, range: u64, mut seed: u64) -> Vec<u64> {
    (0..n)
        .map(|_| {
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            BASE + (seed.wrapping_mul(0x2545_f491_4f6c_dd1d) % range) * 4096
        })
        .collect()
}

/// The 64 GiB replay's 4 Mi addresses (the benchmark's too).
pub fn addresses() -> Vec<u64> {
    pages(1 << 22, PAGES, 11)
}

/// The calling thread's CPU time in seconds (steal time excluded).
pub fn cpu_secs() -> f64 {
    host::thread_cpu_ns().expect("CLOCK_THREAD_CPUTIME_ID") as f64 * 1e-9
}
