//! The same present memory under other geometries and policies: table
//! memory and TLB reach.
//!
//! TLB reach: each leaf is one TLB entry (a contiguous / NAPOT run of base
//! pages is one entry of its size). The entries needed are counted per
//! size, and the reach of a TLB of [`TLB_ENTRIES`] entries is the memory
//! its entries cover when filled with the largest translations first, as a
//! fraction of the memory mapped (1 = it holds every translation).

use super::leaves::{from_ranges, thp_always, HostRange};
use super::tables::{count, LevelTables};
use super::vmpte::{deposits, vmpte_bytes};
use host::pagemap::Vma;
use pt::Geometry;
use serde::Serialize;

/// Entries of the TLB whose reach is reported: a 1,536-entry second-level
/// TLB (Intel's STLB since Skylake; AMD Zen 2).
pub const TLB_ENTRIES: u64 = 1536;

/// TLB entries of one size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SizeCount {
    pub size: u64,
    pub entries: u64,
}

/// What a TLB needs and covers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlbReach {
    pub by_size: Vec<SizeCount>,
    pub entries: u64,
    pub tlb_entries: u64,
    /// Bytes `tlb_entries` entries cover, largest translations first.
    pub reach_bytes: u64,
    /// `reach_bytes` over the bytes mapped (0 to 1).
    pub coverage: f64,
}

/// One scenario's figures.
#[derive(Debug, Clone, Serialize)]
pub struct WhatIf {
    pub geometry: String,
    pub scenario: String,
    /// Some address was folded into a smaller virtual address space.
    pub folded: bool,
    pub levels: Vec<LevelTables>,
    pub deposited: u64,
    /// Empty tables the kernel keeps beyond `levels` (only in the "kernel
    /// now" row: the VmPTE difference in table pages).
    pub kept: u64,
    /// All table pages (every level and the deposits), bytes.
    pub table_bytes: u64,
    /// What Linux would report as VmPTE, kB.
    pub vmpte_kb: u64,
    /// Bytes the leaves map (a 64 KiB page maps 64 KiB for one touched 4 KiB).
    pub mapped_bytes: u64,
    pub tlb: TlbReach,
}

/// The TLB figures of a set of leaves.
pub fn tlb_reach(g: &Geometry, runs: &[super::leaves::LeafRun]) -> TlbReach {
    let mut by: std::collections::BTreeMap<u64, u64> = Default::default();
    for r in runs {
        let leaf = g.entry_size(r.level);
        let size = if r.contig > 0 { leaf * r.contig } else { leaf };
        *by.entry(size).or_default() += (r.end - r.start) / size;
    }
    let mapped: u64 = by.iter().map(|(s, n)| s * n).sum();
    let entries = by.values().sum();
    let mut left = TLB_ENTRIES;
    let mut reach = 0u64;
    for (size, n) in by.iter().rev() {
        let take = left.min(*n);
        reach += take * size;
        left -= take;
    }
    TlbReach {
        by_size: by
            .into_iter()
            .map(|(size, entries)| SizeCount { size, entries })
            .collect(),
        entries,
        tlb_entries: TLB_ENTRIES,
        reach_bytes: reach,
        coverage: if mapped == 0 {
            1.0
        } else {
            reach as f64 / mapped as f64
        },
    }
}

/// The figures of `ranges` under `g`.
pub fn figures(g: &Geometry, scenario: &str, ranges: &[HostRange]) -> WhatIf {
    let leaves = from_ranges(g, ranges);
    let levels = count(g, &leaves.runs);
    let deposited = deposits(g, &leaves.runs);
    WhatIf {
        geometry: g.name().to_string(),
        scenario: scenario.to_string(),
        folded: leaves.folded,
        table_bytes: levels.iter().map(|l| l.bytes).sum::<u64>() + deposited * g.table_bytes(),
        vmpte_kb: vmpte_bytes(g, &levels, deposited) / 1024,
        mapped_bytes: leaves.runs.iter().map(|r| r.end - r.start).sum(),
        tlb: tlb_reach(g, &leaves.runs),
        levels,
        deposited,
        kept: 0,
    }
}

/// "as mapped" and "THP always" under `g` (THP's block: `g`'s level-1
/// leaf, 2 MiB on x86-64, 32 MiB on arm64-16k and riscv-sv39-64k).
pub fn scenarios(g: &Geometry, ranges: &[HostRange], vmas: &[Vma]) -> Vec<WhatIf> {
    let mut out = vec![figures(g, "as mapped", ranges)];
    if g.num_levels() > 1 && g.is_leaf_level(1) {
        let thp = thp_always(ranges, vmas, g.entry_size(1));
        out.push(figures(g, "THP always", &thp));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pt::geometry::preset;

    const M2: u64 = 2 << 20;

    fn vma(start: u64, end: u64) -> Vma {
        super::super::test_vma(start, end, 0)
    }

    /// 4 MiB at 1 TiB, 2 MiB-aligned; one page touched per 64 KiB of the
    /// first 2 MiB (32 pages) and one page in the second.
    fn case() -> (Vec<HostRange>, Vec<Vma>) {
        let base = 1u64 << 40;
        let mut r: Vec<HostRange> = (0..32)
            .map(|i| HostRange {
                start: base + i * 0x10000,
                end: base + i * 0x10000 + 0x1000,
                huge: 0,
                anon: true,
            })
            .collect();
        r.push(HostRange {
            start: base + M2,
            end: base + M2 + 0x1000,
            huge: 0,
            anon: true,
        });
        (r, vec![vma(base, base + 2 * M2)])
    }

    #[test]
    fn hand_counted_case_on_x86_64() {
        let (r, v) = case();
        let g = preset("x86-64-4l").unwrap();
        let s = scenarios(&g, &r, &v);
        // As mapped: 2 PTE + 1 PMD + 1 PUD + 1 PGD = 5 tables; VmPTE 16 kB.
        assert_eq!(s[0].table_bytes, 5 * 4096);
        assert_eq!(s[0].vmpte_kb, 16);
        assert_eq!(s[0].tlb.entries, 33);
        assert_eq!(s[0].tlb.coverage, 1.0);
        // THP always: two 2 MiB leaves, no PTE table, two deposits:
        // PMD + PUD + PGD + 2 deposits = 5 pages, VmPTE 16 kB.
        assert_eq!(s[1].levels[0].tables, 0);
        assert_eq!(s[1].deposited, 2);
        assert_eq!(s[1].vmpte_kb, 16);
        assert_eq!(
            s[1].tlb.by_size,
            vec![SizeCount {
                size: M2,
                entries: 2
            }]
        );
        assert_eq!(s[1].mapped_bytes, 2 * M2);
    }

    #[test]
    fn hand_counted_case_on_riscv_64k_and_5_level() {
        let (r, v) = case();
        // 64 KiB pages: each touched 4 KiB page costs its 64 KiB page: 33
        // pages, one 64 KiB PTE table (it spans 32 MiB), one PMD, one PGD.
        let g = preset("riscv-sv39-64k").unwrap();
        let s = &scenarios(&g, &r, &v)[0];
        assert!(s.folded, "1 TiB is past Sv39's 256 GiB user range");
        assert_eq!(s.mapped_bytes, 33 * 0x10000);
        assert_eq!(s.table_bytes, 3 * 0x10000);
        assert_eq!(
            s.vmpte_kb,
            2 * 64,
            "PTE and PMD tables; the PGD is not counted"
        );
        // 5-level: one more table (P4D), not counted in VmPTE.
        let g5 = preset("x86-64-5l").unwrap();
        let s5 = &scenarios(&g5, &r, &v)[0];
        assert_eq!(s5.table_bytes, 6 * 4096);
        assert_eq!(s5.vmpte_kb, 16);
    }

    #[test]
    fn a_tlb_fills_with_the_largest_translations_first() {
        let g = preset("x86-64-4l").unwrap();
        let base = 1u64 << 40;
        let runs = vec![
            super::super::leaves::LeafRun {
                start: base,
                end: base + 2000 * 4096,
                level: 0,
                deposit: false,
                contig: 0,
            },
            super::super::leaves::LeafRun {
                start: base + 8 * M2,
                end: base + 10 * M2,
                level: 1,
                deposit: true,
                contig: 0,
            },
        ];
        let t = tlb_reach(&g, &runs);
        assert_eq!(t.entries, 2002);
        assert_eq!(t.reach_bytes, 2 * M2 + 1534 * 4096);
        let mapped = (2 * M2 + 2000 * 4096) as f64;
        assert!((t.coverage - t.reach_bytes as f64 / mapped).abs() < 1e-12);
    }
}
