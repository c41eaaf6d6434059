//! The fifth level by vendor (question 1): the seed's Intel figure (+0.23%
//! per lat_pagefault fault, Ice Lake) beside AMD's (0.4068 to 0.4294 us,
//! +5.56%; +5.59% with THP always; linux-kernel, July 2024), and what of a
//! fault's cost grows with a fifth level as far as the model can say,
//! priced with the study's cost file: the hardware walks of the faulting
//! access (with walk caches that hold the new top level, and without), the
//! extra table page, and the kernel's own descent (`p4d_alloc` reads a real
//! P4D entry instead of folding it into the PGD; the model prices it as one
//! `walk.ref_cached` beyond the 4-level fault figures, backend's
//! `handler_walk_extra`). Then the inverse: what would have to be true for
//! +5.6%.

use super::figure::{row, FigUnit, Figure};
use super::read::mean;
use super::text::table;
use super::Section;
use crate::exec::ConfigResult;
use timing::{CostModel, Ns3};

/// AMD's lat_pagefault per fault, 4-level then 5-level (us), and with THP
/// always the change in percent (linux-kernel, July 2024).
pub(super) const AMD_US: (f64, f64) = (0.4068, 0.4294);
pub(super) const AMD_THP_PERCENT: f64 = 5.59;
/// The seed's (Ice Lake) per page read, 4-level then 5-level (ns).
pub(super) const INTEL_NS: (f64, f64) = (105.64, 105.88);

/// What the verdict quotes from this part.
pub(super) struct Parts {
    /// AMD's change per fault, in percent.
    pub amd_change: Figure,
    /// Walk references at `walk.ref_cached` that AMD's added time buys.
    pub refs_needed: Figure,
    /// Faults per top-level entry read from memory that would add as much.
    pub memory_every: Figure,
}

/// A cost file's figure as a prediction's interval.
fn cost(c: Ns3) -> Figure {
    Figure::ns(c.ns).with_interval(c.lo, c.hi)
}

/// `n` events of a cost, with its interval.
fn times(n: f64, c: Ns3) -> Figure {
    Figure::ns(n * c.ns).with_interval(n * c.lo, n * c.hi)
}

/// Adds the vendor part to `sec`: `pf` is the page-fault loop under 4 and 5
/// levels with walk caches, then without (as `five_level` declares it),
/// `costs` the study's cost file.
pub(super) fn add(sec: &mut Section, pf: &[ConfigResult], costs: &CostModel) -> Parts {
    let delta = |r: &ConfigResult, k: &str| mean(r, "touched", k) - mean(r, "mapped", k);
    let faults = delta(&pf[0], counters::MINOR_FAULTS.name);
    let per_fault =
        |a: &ConfigResult, b: &ConfigResult, k: &str| (delta(b, k) - delta(a, k)) / faults.max(1.0);
    let refs_cached = per_fault(&pf[0], &pf[1], counters::WALK_REFS.name);
    let refs_uncached = per_fault(&pf[2], &pf[3], counters::WALK_REFS.name);
    // One P4D table per address space (VmPTE counts PTE, PMD and PUD
    // tables only), allocated at the first fault under its PGD entry.
    let tables = 1.0 / faults.max(1.0);
    let (l1, l2, memory, alloc) = (
        costs.l1_hit,
        costs.walk_ref,
        memory_ref(costs),
        costs.pt_alloc,
    );
    let amd_added = 1000.0 * (AMD_US.1 - AMD_US.0);
    let amd_change = 100.0 * (AMD_US.1 / AMD_US.0 - 1.0);
    let intel_change = 100.0 * (INTEL_NS.1 / INTEL_NS.0 - 1.0);
    let rows = vec![
        row![
            "hardware walks, walk caches hold the top level (model)",
            Figure::plain(refs_cached),
            cost(l2),
            times(refs_cached, l2),
        ],
        row![
            "hardware walks, no walk cache for the top level (model, no walk caches)",
            Figure::plain(refs_uncached),
            cost(l2),
            times(refs_uncached, l2),
        ],
        row![
            "the same, each extra reference from memory",
            Figure::plain(refs_uncached),
            cost(memory),
            times(refs_uncached, memory),
        ],
        row![
            "the extra table page (P4D), once per address space",
            Figure::plain(tables),
            cost(alloc),
            times(tables, alloc),
        ],
        row![
            "the kernel's descent: p4d_alloc reads a real P4D entry (the model: one L2 hit)",
            Figure::plain(1.0),
            cost(l2),
            times(1.0, l2),
        ],
        row![
            "the same, the entry's line in L1",
            Figure::plain(1.0),
            cost(l1),
            times(1.0, l1),
        ],
    ];
    sec.tables.push(table(
        "What grows with a fifth level, per minor fault of the page-fault loop, priced with the \
         study's cost file (AMD measured +22.6 ns per fault, Intel +0.24 ns per page)",
        &["part", "extra per fault", "each", "added per fault"],
        rows,
    ));
    let refs_needed = amd_added / l2.ns;
    let memory_every = memory.ns / amd_added;
    sec.findings.push(format!(
        "By vendor: the seed measured {:+.2}% per lat_pagefault fault on Intel Ice Lake \
         ({} vs {} ns); on AMD lat_pagefault went from {} to {} us ({:+.2}%, {:+.2}% with THP \
         always; linux-kernel, July 2024), {:.1} ns per fault. The model's parts add {} (walks \
         with walk caches) to {} (no walk cache for the top level, lines from memory), plus \
         {} for the kernel's own descent; the model gives Intel's and AMD's presets the same \
         walk caches (neither vendor publishes their sizes): it predicts a change near Intel's, \
         not AMD's.",
        intel_change,
        INTEL_NS.0,
        INTEL_NS.1,
        AMD_US.0,
        AMD_US.1,
        amd_change,
        AMD_THP_PERCENT,
        amd_added,
        times(refs_cached, l2).text,
        times(refs_uncached, memory).text,
        times(1.0, l2).text,
    ));
    sec.findings.push(format!(
        "For +5.6% a fault must add {:.1} ns: {:.1} walk references that hit L2 ({} each) per \
         fault, or one top-level entry from memory ({} each) every {:.0} faults; that is, AMD's \
         walk caches would not keep the fifth level's entry across the fault and its retried \
         access, or the kernel's 5-level paths (p4d allocation and lookup, the run-time \
         pgtable_l5_enabled() checks) would cost about {:.0} L2 hits more than the one entry \
         the model prices.",
        amd_added,
        refs_needed,
        cost(l2).text,
        cost(memory).text,
        memory_every,
        refs_needed - 1.0,
    ));
    let parts = Parts {
        amd_change: Figure::percent(amd_change),
        refs_needed: Figure::plain(refs_needed),
        memory_every: Figure::new(memory_every, FigUnit::Count),
    };
    sec.figure("amd_lat_pagefault_change", &parts.amd_change);
    sec.figure("intel_lat_pagefault_change", Figure::percent(intel_change));
    sec.figure("five_level_refs_needed_for_amd", &parts.refs_needed);
    sec.figure(
        "five_level_faults_per_memory_ref_for_amd",
        &parts.memory_every,
    );
    parts
}

/// A walk reference from memory, which the cost model keeps inside
/// `tlb.miss_walk` (`walk.ref_memory` is not a field of its own): the
/// difference of the two walk figures, a last-level line fetched from
/// memory instead of the caches.
fn memory_ref(costs: &CostModel) -> Ns3 {
    let (w, c) = (costs.walk_extra, costs.walk_cached);
    Ns3 {
        ns: (w.ns - c.ns).max(0.0),
        lo: (w.lo - c.hi).max(0.0),
        hi: (w.hi - c.lo).max(0.0),
    }
}
