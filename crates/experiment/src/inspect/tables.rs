//! Table pages a set of leaves needs, per level, without building the tree.
//!
//! A table of level `l` (below the root) exists for each distinct value of
//! `va >> (shift(l) + bits(l))` over the leaves at levels `<= l`: the span
//! one table of that level covers. Runs are sorted by start, so the spans
//! they touch come in order and can be counted by remembering the last one;
//! the root is one table. This equals what `pt::account` finds by walking a
//! tree built with the same leaves (checked by a property test).

use super::leaves::LeafRun;
use pt::Geometry;
use serde::Serialize;

/// Tables of one level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LevelTables {
    pub level: usize,
    pub name: String,
    pub tables: u64,
    pub bytes: u64,
    /// Linux counts this level in VmPTE (`mm_inc_nr_ptes/pmds/puds`).
    pub in_vmpte: bool,
    /// Leaves (pages or blocks) of this level.
    pub leaves: u64,
}

/// Whether Linux counts tables of `level` in VmPTE: the PTE, PMD and PUD
/// levels below the root (`mm_pgtables_bytes`); the PGD and a 5-level
/// tree's P4D are not counted.
pub fn counted_in_vmpte(g: &Geometry, level: usize) -> bool {
    level < g.root_level() && level < 3
}

/// Distinct `1 << shift`-aligned spans touched by sorted ranges.
pub fn spans_touched<I: IntoIterator<Item = (u64, u64)>>(ranges: I, shift: u32) -> u64 {
    let mut count = 0u64;
    let mut last: Option<u64> = None;
    for (start, end) in ranges {
        if end <= start {
            continue;
        }
        let lo = if shift >= 64 { 0 } else { start >> shift };
        let hi = if shift >= 64 { 0 } else { (end - 1) >> shift };
        let from = match last {
            Some(l) if l >= lo => l + 1,
            _ => lo,
        };
        if hi >= from {
            count += hi - from + 1;
        }
        last = Some(last.map_or(hi, |l| l.max(hi)));
    }
    count
}

/// Tables per level (leaf first) that `runs` need under `g`.
pub fn count(g: &Geometry, runs: &[LeafRun]) -> Vec<LevelTables> {
    let root = g.root_level();
    let any = !runs.is_empty();
    (0..g.num_levels())
        .map(|level| {
            let l = g.level(level);
            let tables = if level == root {
                u64::from(any)
            } else {
                spans_touched(
                    runs.iter()
                        .filter(|r| r.level <= level)
                        .map(|r| (r.start, r.end)),
                    l.shift + l.bits,
                )
            };
            LevelTables {
                level,
                name: l.name.clone(),
                tables,
                bytes: tables * g.table_bytes(),
                in_vmpte: counted_in_vmpte(g, level),
                leaves: runs
                    .iter()
                    .filter(|r| r.level == level)
                    .map(|r| (r.end - r.start) >> l.shift)
                    .sum(),
            }
        })
        .collect()
}

/// One bucket of the histogram of present entries per PTE table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// Fewest and most present entries of a table in the bucket.
    pub min: u64,
    pub max: u64,
    pub tables: u64,
}

/// Present (or swap) entries per leaf-level table, in buckets 1, 2-8,
/// 9-64, 65-256, 257 to one short of full, and full.
pub fn pte_histogram(g: &Geometry, runs: &[LeafRun]) -> Vec<Bucket> {
    let l0 = g.level(0);
    let full = l0.entries();
    let mut bounds: Vec<(u64, u64)> = vec![(1, 1), (2, 8), (9, 64), (65, 256), (257, full - 1)];
    bounds.retain(|&(lo, hi)| lo <= hi && hi < full);
    bounds.push((full, full));
    let mut buckets: Vec<Bucket> = bounds
        .iter()
        .map(|&(min, max)| Bucket {
            min,
            max,
            tables: 0,
        })
        .collect();
    let mut add = |n: u64, times: u64| {
        if let Some(b) = buckets.iter_mut().find(|b| b.min <= n && n <= b.max) {
            b.tables += times;
        }
    };
    let span_shift = l0.shift + l0.bits;
    let mut current: Option<(u64, u64)> = None; // (table index, entries)
    for r in runs.iter().filter(|r| r.level == 0) {
        let mut at = r.start;
        while at < r.end {
            let t = at >> span_shift;
            let table_end = (t + 1) << span_shift;
            // Whole tables in the middle of a long run: count them at once.
            if at == t << span_shift && r.end >= table_end {
                let whole = (r.end >> span_shift) - t;
                if let Some((_, n)) = current.take() {
                    add(n, 1);
                }
                add(full, whole);
                at = (t + whole) << span_shift;
                continue;
            }
            let stop = r.end.min(table_end);
            let n = (stop - at) >> l0.shift;
            current = match current {
                Some((ct, cn)) if ct == t => Some((t, cn + n)),
                Some((_, cn)) => {
                    add(cn, 1);
                    Some((t, n))
                }
                None => Some((t, n)),
            };
            at = stop;
        }
    }
    if let Some((_, n)) = current {
        add(n, 1);
    }
    buckets
}

#[cfg(test)]
mod tests {
    use super::super::leaves::merge;
    use super::*;
    use proptest::prelude::*;
    use pt::geometry::preset;
    use pt::{Attrs, PageTable, Perms};

    fn run(start: u64, end: u64, level: usize) -> LeafRun {
        LeafRun {
            start,
            end,
            level,
            deposit: false,
            contig: 0,
        }
    }

    #[test]
    fn spans_are_counted_once_across_runs() {
        assert_eq!(spans_touched([(0, 1), (5, 9), (9, 17)], 3), 3);
        assert_eq!(
            spans_touched([(0, 100), (10, 20)], 4),
            7,
            "a run inside another"
        );
    }

    #[test]
    fn histogram_puts_each_table_in_its_bucket() {
        let g = preset("x86-64-4l").unwrap();
        let t = 2u64 << 20;
        let runs = vec![
            run(0, 0x1000, 0),                      // table 0: 1
            run(t, t + 8 * 0x1000, 0),              // table 1: 8
            run(2 * t + 0x1000, 4 * t, 0),          // table 2: 511, tables 3: 512
            run(5 * t, 5 * t + 0x1000, 0),          // table 5: 1 ...
            run(5 * t + 0x3000, 5 * t + 0x5000, 0), // ... plus 2 = 3
        ];
        let h = pte_histogram(&g, &runs);
        let got: Vec<u64> = h.iter().map(|b| b.tables).collect();
        assert_eq!(got, vec![1, 2, 0, 0, 1, 1]);
        assert_eq!((h[4].min, h[4].max, h[5].min), (257, 511, 512));
    }

    /// Maps the runs into a real tree of `pt` and reads its accounting.
    fn brute_force(g: &Geometry, runs: &[LeafRun]) -> Vec<u64> {
        let pt = PageTable::with_new_memory(g.clone()).unwrap();
        for r in runs {
            let size = g.entry_size(r.level);
            pt.map(
                pt::VirtAddr::new(r.start),
                pt::PhysAddr::new(r.start),
                r.end - r.start,
                size,
                Attrs::new(Perms::USER_RW),
            )
            .unwrap();
        }
        let mut acc = pt::account::account(&pt).unwrap();
        acc.reverse(); // leaf first
        acc.iter().map(|a| a.tables).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn counting_equals_walking_a_real_tree(
            name in prop::sample::select(vec!["x86-64-4l", "x86-64-5l", "arm64-16k-48", "riscv-sv39-64k"]),
            raw in prop::collection::vec((0u64..1 << 14, 0u64..6, 1u64..40, prop::bool::weighted(0.2)), 1..24),
        ) {
            let g = preset(name).unwrap();
            let page = g.page_size();
            // Spread over a region several top-level spans wide, with
            // huge leaves where the geometry has a level-1 block.
            let stride = g.entry_size(1) / 8;
            let mut runs = Vec::new();
            let upper = g.entry_size(g.root_level() - 1);
            for (slot, hi, len, huge) in raw {
                let start = (slot * stride * 13 + hi * upper * 5) % (g.user_limit() / 2);
                if huge && g.is_leaf_level(1) {
                    let b = g.entry_size(1);
                    let s = start / b * b;
                    runs.push(run(s, s + b, 1));
                } else {
                    let s = start / page * page;
                    runs.push(run(s, s + len * page, 0));
                }
            }
            // Drop runs overlapping earlier ones: a tree maps each page once.
            let mut kept: Vec<LeafRun> = Vec::new();
            for r in runs {
                let clash = kept.iter().any(|k| {
                    let (ks, ke) = if k.level == 1 || r.level == 1 {
                        let b = g.entry_size(1);
                        (k.start / b * b, k.end.next_multiple_of(b))
                    } else {
                        (k.start, k.end)
                    };
                    r.start < ke && ks < r.end
                });
                if !clash {
                    kept.push(r);
                }
            }
            let merged = merge(kept);
            let want = brute_force(&g, &merged);
            let got: Vec<u64> = count(&g, &merged).iter().map(|t| t.tables).collect();
            prop_assert_eq!(got, want);
        }
    }
}
