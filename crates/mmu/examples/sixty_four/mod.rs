//! What the 64 GiB examples (`rand64`, `bound64`) replay: the table, the
//! addresses and the clock, so that their figures are of the same workload
//! (the criterion benchmark `translate -- random_64g` builds the same).

use pt::{Attrs, PageTable, Perms};

/// Where the 64 GiB are mapped (1 TiB of physical memory behind them).
pub const BASE: u64 = 0x2000_0000_0000;
/// 64 GiB of 4 KiB pages.
pub const PAGES: u64 = 16 << 20;

/// An `x86-64-4l` table mapping [`PAGES`] pages at [`BASE`], on host huge
/// pages as the `ptlab` binary sets its arena up.
pub fn table() -> PageTable {
    pt::mem::set_arena_advisor(host::advise_huge_pages);
    let pt = PageTable::with_new_memory(pt::geometry::preset("x86-64-4l").unwrap()).unwrap();
    pt.map(
        BASE,
        1 << 40,
        PAGES * 4096,
        4096,
        Attrs::new(Perms::USER_RW),
    )
    .unwrap();
    pt
}

/// 4 Mi page addresses drawn uniformly (xorshift) from the mapped pages.
pub fn addresses() -> Vec<u64> {
    let mut x = 11u64;
    (0..1 << 22)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            BASE + (x.wrapping_mul(0x2545_f491_4f6c_dd1d) % PAGES) * 4096
        })
        .collect()
}

/// The calling thread's CPU time in seconds (steal time excluded).
pub fn cpu_secs() -> f64 {
    host::thread_cpu_ns().expect("CLOCK_THREAD_CPUTIME_ID") as f64 * 1e-9
}
