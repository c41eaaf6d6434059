//! Predicted VmPTE against the kernel's, and the difference explained.
//!
//! Linux's VmPTE (`mm_pgtables_bytes`) counts the PTE, PMD and PUD table
//! pages of an mm, plus one PTE table deposited beside each anonymous
//! PMD-mapped huge page (Linux: mm/huge_memory.c,
//! do_huge_pmd_anonymous_page and set_huge_zero_folio, via
//! `pgtable_trans_huge_deposit`). The prediction counts the tables that
//! the present (or swapped) pages need: the kernel can hold more (tables it
//! keeps empty), and the explanation bounds where those can be.
//!
//! Where empty tables can be kept: a table of level `l` covers one span of
//! `shift(l) + bits(l)` bits. The kernel frees tables whose span holds no
//! VMA when it unmaps (Linux: mm/memory.c, free_pgtables), so a kept empty
//! table lies in a span that overlaps some VMA and holds no present page:
//! the places counted here, an upper bound.

use super::leaves::LeafRun;
use super::tables::{counted_in_vmpte, spans_touched, LevelTables};
use host::pagemap::Vma;
use pt::Geometry;
use serde::Serialize;

/// What the prediction and the kernel say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Exact,
    /// The kernel holds table pages that no present page needs.
    KernelMore,
    /// The kernel holds fewer than the pages seen need.
    KernelLess,
    /// No VmPTE to compare with.
    Unknown,
}

/// Spans of one level where an empty table could be kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Places {
    pub level: usize,
    pub name: String,
    /// Bytes one table of the level covers.
    pub span: u64,
    pub places: u64,
}

/// The comparison.
#[derive(Debug, Clone, Serialize)]
pub struct VmPteCheck {
    pub predicted_kb: u64,
    /// Of which: deposited PTE tables.
    pub deposited_kb: u64,
    pub kernel_kb: Option<u64>,
    /// `kernel_kb - predicted_kb`.
    pub difference_kb: Option<i64>,
    /// The difference in table pages (rounded toward zero).
    pub difference_tables: Option<i64>,
    pub verdict: Verdict,
    pub places: Vec<Places>,
    /// Sum of `places`: at most this many kept empty tables fit.
    pub places_total: u64,
    /// Sentences for people, in order.
    pub explanation: Vec<String>,
}

/// PMD leaves with a deposited PTE table.
pub fn deposits(g: &Geometry, runs: &[LeafRun]) -> u64 {
    runs.iter()
        .filter(|r| r.deposit)
        .map(|r| (r.end - r.start) >> g.level(r.level).shift)
        .sum()
}

/// VmPTE in bytes that `levels` and `deposited` tables make.
pub fn vmpte_bytes(g: &Geometry, levels: &[LevelTables], deposited: u64) -> u64 {
    levels
        .iter()
        .filter(|l| l.in_vmpte)
        .map(|l| l.bytes)
        .sum::<u64>()
        + deposited * g.table_bytes()
}

/// Places per VmPTE level where an empty table could be kept.
pub fn places(g: &Geometry, vmas: &[Vma], runs: &[LeafRun]) -> Vec<Places> {
    (0..g.num_levels())
        .filter(|&l| counted_in_vmpte(g, l))
        .map(|level| {
            let l = g.level(level);
            let shift = l.shift + l.bits;
            let in_vmas = spans_touched(vmas.iter().map(|v| (v.start, v.end)), shift);
            let used = spans_touched(runs.iter().map(|r| (r.start, r.end)), shift);
            Places {
                level,
                name: l.name.clone(),
                span: 1u64 << shift,
                places: in_vmas.saturating_sub(used),
            }
        })
        .collect()
}

/// Inputs of [`check`] that are about the read, not the tables.
#[derive(Debug, Clone, Default)]
pub struct ReadFacts {
    pub kernel_kb: Option<u64>,
    pub kernel_kb_after: Option<u64>,
    pub complete: bool,
    pub huge_exact: bool,
}

/// Compares and explains.
pub fn check(
    g: &Geometry,
    levels: &[LevelTables],
    deposited: u64,
    places: Vec<Places>,
    facts: &ReadFacts,
) -> VmPteCheck {
    let table_kb = g.table_bytes() / 1024;
    let predicted_kb = vmpte_bytes(g, levels, deposited) / 1024;
    let places_total = places.iter().map(|p| p.places).sum();
    let difference_kb = facts.kernel_kb.map(|k| k as i64 - predicted_kb as i64);
    let difference_tables = difference_kb.map(|d| d / table_kb as i64);
    let verdict = match difference_kb {
        None => Verdict::Unknown,
        Some(0) => Verdict::Exact,
        Some(d) if d > 0 => Verdict::KernelMore,
        Some(_) => Verdict::KernelLess,
    };
    let mut explanation = Vec::new();
    let kb = |n: u64| format!("{n} kB");
    match (verdict, difference_kb, difference_tables) {
        (Verdict::Exact, _, _) => explanation.push(format!(
            "exact: the kernel's VmPTE ({}) is what the present pages need ({} of tables, {} of them deposited under huge pages)",
            kb(predicted_kb),
            kb(predicted_kb),
            kb(deposited * table_kb),
        )),
        (Verdict::KernelMore, Some(d), Some(t)) => {
            explanation.push(format!(
                "the kernel holds {} more: {t} table page(s) of {} with no present entry, kept after memory was unmapped or released (Linux frees an empty PTE table on MADV_DONTNEED only with PT_RECLAIM, and upper tables only when a whole span is unmapped)",
                kb(d as u64),
                kb(table_kb),
            ));
            let where_: Vec<String> = places
                .iter()
                .map(|p| {
                    format!(
                        "{} {} tables ({} spans inside VMAs with no present page)",
                        p.places,
                        p.name,
                        pt::geometry::human_size(p.span)
                    )
                })
                .collect();
            explanation.push(format!(
                "they can be among {places_total} places: {}",
                where_.join(", ")
            ));
            if !(d as u64).is_multiple_of(table_kb) {
                explanation.push(format!(
                    "{} kB is not a whole number of {} table pages: the kernel counts something this model does not",
                    d, table_kb
                ));
            }
            if t as u64 > places_total {
                explanation.push(format!(
                    "that is more than there are places ({places_total}): some tables map what pagemap does not show (VM_PFNMAP or VM_IO mappings), or the process changed while it was read"
                ));
            }
        }
        (Verdict::KernelLess, Some(d), Some(t)) => {
            explanation.push(format!(
                "the kernel holds {} less ({} table page(s)) than the pages seen need",
                kb(d.unsigned_abs()),
                t.unsigned_abs()
            ));
            if !facts.huge_exact {
                explanation.push("huge pages were placed from smaps counts (no PAGEMAP_SCAN): pages mapped by one PMD leaf may have been counted as 512 small ones, or deposits guessed".into());
            }
            explanation.push("or the process unmapped memory between the reads".into());
        }
        _ => explanation.push("no VmPTE in /proc/PID/status to compare with".into()),
    }
    if facts.kernel_kb != facts.kernel_kb_after {
        explanation.push(format!(
            "the process changed its tables while read: VmPTE went from {:?} kB to {:?} kB",
            facts.kernel_kb, facts.kernel_kb_after
        ));
    }
    if !facts.complete {
        explanation.push("the read stopped at its time limit: pages past that point were not seen, so the prediction is low".into());
    }
    VmPteCheck {
        predicted_kb,
        deposited_kb: deposited * table_kb,
        kernel_kb: facts.kernel_kb,
        difference_kb,
        difference_tables,
        verdict,
        places,
        places_total,
        explanation,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tables::count;
    use super::*;
    use pt::geometry::preset;

    fn vma(start: u64, end: u64) -> Vma {
        super::super::test_vma(start, end, 0)
    }

    #[test]
    fn a_kept_empty_table_is_explained_with_its_places() {
        let g = preset("x86-64-4l").unwrap();
        const M2: u64 = 2 << 20;
        let base = 1u64 << 40;
        // A VMA of 8 PTE spans with one page in the first and one huge page
        // in the third: 6 spans could hold an empty PTE table.
        let v = vec![vma(base, base + 8 * M2)];
        let runs = vec![
            LeafRun {
                start: base,
                end: base + 4096,
                level: 0,
                deposit: false,
                contig: 0,
            },
            LeafRun {
                start: base + 2 * M2,
                end: base + 3 * M2,
                level: 1,
                deposit: true,
                contig: 0,
            },
        ];
        let levels = count(&g, &runs);
        let dep = deposits(&g, &runs);
        assert_eq!(dep, 1);
        // PTE 1 + PMD 1 + PUD 1 + deposit 1 = 16 kB.
        assert_eq!(vmpte_bytes(&g, &levels, dep), 16 * 1024);
        let p = places(&g, &v, &runs);
        assert_eq!(
            p.iter().map(|p| p.places).collect::<Vec<_>>(),
            vec![6, 0, 0]
        );
        let facts = ReadFacts {
            kernel_kb: Some(24),
            kernel_kb_after: Some(24),
            complete: true,
            huge_exact: true,
        };
        let c = check(&g, &levels, dep, p, &facts);
        assert_eq!(c.verdict, Verdict::KernelMore);
        assert_eq!(c.difference_tables, Some(2));
        assert_eq!(c.places_total, 6);
        assert!(c.explanation.len() == 2, "{:?}", c.explanation);
        let exact = check(
            &g,
            &levels,
            dep,
            vec![],
            &ReadFacts {
                kernel_kb: Some(16),
                kernel_kb_after: Some(16),
                complete: true,
                huge_exact: true,
            },
        );
        assert_eq!(exact.verdict, Verdict::Exact);
    }
}
