//! The leaves a geometry needs to map what a live process has present.
//!
//! The host's snapshot says which host pages are present (or swapped) and
//! which are mapped by a PMD leaf. Under a geometry `G` the same memory is:
//!
//! - base pages: each present host page lies in one `G` page (a 64 KiB
//!   geometry maps the whole 64 KiB page around a touched 4 KiB one);
//! - a host huge page: a block leaf of `G` at the level whose entries have
//!   that size, when `G` has one; otherwise `G`'s base pages, grouped into
//!   one TLB entry each when `G` has a contiguous (NAPOT) leaf of that size.
//!
//! A geometry with fewer virtual-address bits than the host cannot place the
//! host's addresses; those are folded modulo its user range (which keeps
//! every alignment below that range, so tables below the root count the
//! same) and the result says it folded.
//!
//! Invariants of a [`Leaves`]: runs are sorted by start, aligned to their
//! leaf size, and runs of one level do not overlap.

use host::pagemap::{PageFlags, Snapshot, Vma};
use pt::Geometry;

/// `[start, end)` mapped by leaves of one level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafRun {
    pub start: u64,
    pub end: u64,
    /// Level of the leaves (0 = base pages).
    pub level: usize,
    /// Anonymous PMD leaves: Linux deposits one PTE table for each
    /// (`pgtable_trans_huge_deposit`), to split it later without allocating.
    pub deposit: bool,
    /// Base pages that one contiguous / NAPOT TLB entry of this size covers
    /// (0: one TLB entry per leaf).
    pub contig: u64,
}

/// The leaves of one process under one geometry.
#[derive(Debug, Clone, Default)]
pub struct Leaves {
    pub runs: Vec<LeafRun>,
    /// Some address did not fit the geometry and was folded.
    pub folded: bool,
}

/// Memory as the host maps it: `[start, end)`, by base pages (`huge` 0) or
/// by leaves of `huge` bytes, anonymous or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRange {
    pub start: u64,
    pub end: u64,
    pub huge: u64,
    pub anon: bool,
}

/// The snapshot's present or swapped memory as [`HostRange`]s (`huge` =
/// the host's PMD-leaf size, for the runs the snapshot marks huge).
pub fn host_ranges(snap: &Snapshot, huge: u64) -> Vec<HostRange> {
    snap.runs
        .iter()
        .map(|r| HostRange {
            start: r.start,
            end: r.end,
            huge: if r.flags.has(PageFlags::HUGE) && r.flags.has(PageFlags::PRESENT) {
                huge
            } else {
                0
            },
            anon: !r.flags.has(PageFlags::FILE),
        })
        .collect()
}

/// The leaves `g` needs for `ranges`.
pub fn from_ranges(g: &Geometry, ranges: &[HostRange]) -> Leaves {
    let page = g.page_size();
    let limit = g.user_limit();
    let mut folded = false;
    let mut runs = Vec::with_capacity(ranges.len());
    for r in ranges {
        let (mut s, mut e) = (r.start, r.end);
        if e > limit {
            folded = true;
            let len = e - s;
            s %= limit;
            e = s + len;
        }
        let block_level = (r.huge > 0)
            .then(|| (1..g.num_levels()).find(|&l| g.is_leaf_level(l) && g.entry_size(l) == r.huge))
            .flatten();
        match block_level {
            Some(level) => runs.push(LeafRun {
                start: s / r.huge * r.huge,
                end: e.next_multiple_of(r.huge),
                level,
                deposit: r.anon && level == 1,
                contig: 0,
            }),
            None => runs.push(LeafRun {
                start: s / page * page,
                end: e.next_multiple_of(page),
                level: 0,
                deposit: false,
                contig: g
                    .leaf_kind(r.huge)
                    .filter(|k| r.huge > 0 && k.is_contiguous() && k.level == 0)
                    .map_or(0, |k| u64::from(k.entries)),
            }),
        }
    }
    Leaves {
        runs: merge(runs),
        folded,
    }
}

/// Sorts and unites runs of one level that overlap or touch with the same
/// kind; runs of different levels are kept apart.
pub fn merge(mut runs: Vec<LeafRun>) -> Vec<LeafRun> {
    runs.sort_by_key(|r| (r.start, r.level));
    let mut out: Vec<LeafRun> = Vec::with_capacity(runs.len());
    for r in runs {
        if let Some(last) = out.last_mut() {
            let same =
                last.level == r.level && last.deposit == r.deposit && last.contig == r.contig;
            if same && r.start <= last.end {
                last.end = last.end.max(r.end);
                continue;
            }
            if last.level == r.level && r.start < last.end {
                // Overlap of different kinds (only after folding): keep
                // the first and what sticks out of it.
                if r.end > last.end {
                    let start = last.end;
                    out.push(LeafRun { start, ..r });
                }
                continue;
            }
        }
        out.push(r);
    }
    out
}

/// "THP always": every `block`-aligned block lying wholly inside an
/// anonymous VMA with any page present becomes one block leaf of `block`
/// bytes, as khugepaged would leave it (Linux: mm/khugepaged.c,
/// collapse_huge_page); the host's own huge pages are regrouped the same
/// way, other memory stays as it is.
pub fn thp_always(ranges: &[HostRange], vmas: &[Vma], block: u64) -> Vec<HostRange> {
    let mut out = Vec::with_capacity(ranges.len());
    let mut vi = 0;
    let mut last_block: Option<u64> = None;
    for r in ranges {
        while vi < vmas.len() && vmas[vi].end <= r.start {
            vi += 1;
        }
        let vma = vmas
            .get(vi)
            .filter(|v| v.start <= r.start && v.is_anonymous());
        let Some(v) = vma.filter(|_| r.anon) else {
            out.push(*r);
            continue;
        };
        // Walk the run block by block: blocks inside the VMA become huge.
        let mut at = r.start;
        while at < r.end {
            let b = at / block * block;
            let next = (b + block).min(r.end);
            if b >= v.start && b + block <= v.end {
                if last_block != Some(b) {
                    out.push(HostRange {
                        start: b,
                        end: b + block,
                        huge: block,
                        anon: true,
                    });
                    last_block = Some(b);
                }
            } else {
                out.push(HostRange {
                    start: at,
                    end: next,
                    huge: 0,
                    anon: true,
                });
            }
            at = next;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pt::geometry::preset;

    const M2: u64 = 2 << 20;

    fn hr(start: u64, end: u64, huge: u64) -> HostRange {
        HostRange {
            start,
            end,
            huge,
            anon: true,
        }
    }

    #[test]
    fn a_huge_page_is_a_pmd_leaf_on_x86_and_contiguous_pages_on_arm64_64k() {
        let x86 = preset("x86-64-4l").unwrap();
        let l = from_ranges(&x86, &[hr(1 << 30, (1 << 30) + M2, M2)]);
        assert_eq!(l.runs.len(), 1);
        assert_eq!((l.runs[0].level, l.runs[0].deposit), (1, true));

        let arm = preset("arm64-64k-48").unwrap();
        let l = from_ranges(&arm, &[hr(1 << 30, (1 << 30) + M2, M2)]);
        assert_eq!(l.runs[0].level, 0, "512 MiB blocks only: base pages");
        assert_eq!(
            l.runs[0].contig, 32,
            "one contiguous TLB entry per 32 pages"
        );
        assert!(!l.runs[0].deposit);
    }

    #[test]
    fn a_touched_4k_page_costs_a_whole_64k_page_and_neighbours_merge() {
        let g = preset("riscv-sv39-64k").unwrap();
        let l = from_ranges(&g, &[hr(0x10000, 0x11000, 0), hr(0x1f000, 0x20000, 0)]);
        assert_eq!(l.runs.len(), 1, "both pages fall in one 64 KiB page");
        assert_eq!((l.runs[0].start, l.runs[0].end), (0x10000, 0x20000));
    }

    #[test]
    fn addresses_past_a_small_va_are_folded_and_said() {
        let g = preset("riscv-sv39").unwrap();
        let va = 0x7ffc_0000_0000u64;
        let l = from_ranges(&g, &[hr(va, va + 0x1000, 0)]);
        assert!(l.folded);
        assert_eq!(l.runs[0].start, va % (1 << 38));
    }

    #[test]
    fn thp_always_turns_touched_blocks_inside_anonymous_vmas_into_huge_pages() {
        let vma = Vma {
            start: 0x4000_0000 - 0x1000,
            end: 0x4000_0000 + 2 * M2,
            perms: "rw-p".into(),
            offset: 0,
            inode: 0,
            path: String::new(),
            anon_huge_kb: None,
            file_pmd_kb: None,
        };
        let ranges = [
            hr(vma.start, vma.start + 0x1000, 0), // before the first full block
            hr(0x4000_0000, 0x4000_1000, 0),
            hr(0x4000_3000, 0x4000_4000, 0), // same block
            hr(0x4000_0000 + M2 + 0x5000, 0x4000_0000 + M2 + 0x6000, 0),
        ];
        let out = thp_always(&ranges, &[vma], M2);
        let huge: Vec<_> = out.iter().filter(|r| r.huge == M2).collect();
        assert_eq!(huge.len(), 2, "two blocks with pages, each once");
        assert_eq!(
            out.iter().filter(|r| r.huge == 0).count(),
            1,
            "the page before stays small"
        );
    }
}
