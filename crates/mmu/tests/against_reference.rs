//! The `zen4`, `icelake` and `neoverse-n1` models against a second, minimal
//! model of the same TLBs and walk caches (`reference`), access by access,
//! on a trace built to reach every outcome: first-level hits, second-level
//! hits, and walks that start below a walk-cache hit at each level or at the
//! root.

mod common;
mod reference;

use common::{map4k, rw, table, BASE};
use mmu::{Mmu, MmuConfig};
use reference::Model;

/// 16 MiB regions (4096 pages each), spread so that they fall under
/// different level-3 (512 GiB), level-2 (1 GiB) and level-1 (2 MiB)
/// entries: more of each than the walk caches hold.
fn regions() -> Vec<u64> {
    let mut r = Vec::new();
    for pml4 in 0..6u64 {
        for pdpt in 0..3u64 {
            r.push(BASE + (pml4 << 39) + ((pdpt * 7) << 30) + (pml4 << 24));
        }
    }
    r
}

#[test]
fn zen4_agrees_with_the_reference_model_access_by_access() {
    agree("zen4", reference::Zen4::new());
}

/// Ice Lake's first level is set associative (a memo instead of way
/// prediction) and split by size into three arrays.
#[test]
fn icelake_agrees_with_the_reference_model_access_by_access() {
    agree("icelake", reference::IceLake::new());
}

/// Neoverse N1's first level is too small for a presence filter, and its
/// levels hold five and seven sizes.
#[test]
fn neoverse_n1_agrees_with_the_reference_model_access_by_access() {
    agree("neoverse-n1", reference::NeoverseN1::new());
}

fn agree<const S1: usize, const W1: usize, const S2: usize, const W2: usize>(
    preset: &str,
    mut reference: Model<S1, W1, S2, W2>,
) {
    const PAGES: u64 = 4096;
    let pt = table("x86-64-4l");
    let regions = regions();
    for &r in &regions {
        map4k(&pt, r, PAGES, rw());
    }
    let m = Mmu::new(MmuConfig::preset(preset).unwrap(), pt.geometry(), 1).unwrap();
    let mut cpu = m.attach(0, 1);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut recent = [BASE; 64];
    for k in 0..400_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let page = match x % 10 {
            // A recent page: mostly first-level hits.
            0..=3 => recent[(x >> 8) as usize % recent.len()],
            // A page of a 2048-page working set inside one region: second
            // level hits once the first level has turned over.
            4..=6 => regions[(k / 50_000) as usize % regions.len()] + ((x >> 8) % 2048) * 4096,
            // Anywhere: walks, with walk-cache hits at varying depth.
            _ => regions[(x >> 8) as usize % regions.len()] + ((x >> 20) % PAGES) * 4096,
        };
        recent[(x >> 40) as usize % recent.len()] = page;
        let va = page + ((x >> 50) & 0xff8);
        // Writes, so that the first walk of each page sets D and no later
        // hit needs a dirty-bit walk (which the reference does not model).
        let got = cpu.access(&pt, va, true, true).unwrap().pa;
        let want = reference.access(pt.mem(), pt.root(), va);
        assert_eq!(got, want, "{preset}, access {k}: {va:#x}");
    }
    let s = cpu.stats();
    let c = &reference.counts;
    assert_eq!(s.l1_hits, c.l1_hits, "{preset}: first-level hits");
    assert_eq!(s.l2_hits, c.l2_hits, "{preset}: second-level hits");
    assert_eq!(s.walks, c.walks, "{preset}: walks");
    assert_eq!(s.walk_refs, c.refs, "{preset}: references");
    assert_eq!(
        s.pwc_hits[1..4],
        c.pwc_hits[1..4],
        "{preset}: walk-cache hits per level"
    );
    // The trace reached every outcome, each many times.
    for (what, n) in [
        ("first-level hits", c.l1_hits),
        ("second-level hits", c.l2_hits),
        ("level-1 walk-cache hits", c.pwc_hits[1]),
        ("level-2 walk-cache hits", c.pwc_hits[2]),
        ("level-3 walk-cache hits", c.pwc_hits[3]),
        (
            "walks from the root",
            c.walks - c.pwc_hits.iter().sum::<u64>(),
        ),
    ] {
        assert!(n > 1000, "{preset}, {what}: {n} {c:?}");
    }
}
