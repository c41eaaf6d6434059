//! Translates a million addresses of a dense 64 MiB table: run under
//! `valgrind --tool=callgrind` to count the instructions of a walk
//! (repeatable on a noisy machine, unlike wall time).

use pt::geometry::preset;
use pt::{Attrs, PageTable, Perms, PhysAddr, VirtAddr};

fn main() {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "x86-64-4l".into());
    let pt = PageTable::with_new_memory(preset(&name).expect("a preset name")).unwrap();
    let va = VirtAddr::new(1 << 32);
    let len = 64u64 << 20;
    let page = pt.geometry().page_size();
    pt.map(
        va,
        PhysAddr::new(1 << 40),
        len,
        page,
        Attrs::new(Perms::USER_RW),
    )
    .unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut sum = 0u64;
    let n = 1_000_000;
    let t = std::time::Instant::now();
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let a = va + (x % len);
        sum = sum.wrapping_add(pt.translate(std::hint::black_box(a)).unwrap().pa.get());
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    println!("{name}: {ns:.1} ns per translate (checksum {sum:x})");
}
