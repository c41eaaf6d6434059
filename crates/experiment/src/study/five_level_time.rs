//! The time part of question 1 (4-level vs 5-level): what the model
//! predicts a fifth level costs per minor fault (lat_pagefault-like) and
//! to ebizzy-like threads, beside the seed's measured figures. Kept apart
//! from `five_level` (which counts the walks) so that each file stays one
//! concern; `five_level::section` calls [`add`] with its results.

use super::read::mean;
use super::text::table;
use super::time;
use super::Section;
use crate::exec::ConfigResult;
use report::chart::{self, ChartSpec, Estimate, Series};
use report::Unit;

/// Adds the predicted times to `sec`: `pf` is the page-fault loop under
/// 4-level then 5-level (with walk caches first), `ebizzy` each thread
/// count's runs under the same two.
pub(super) fn add(sec: &mut Section, pf: &[ConfigResult], ebizzy: &[(usize, &[ConfigResult])]) {
    let per_fault = |r: &ConfigResult| {
        let faults = mean(r, "touched", counters::MINOR_FAULTS.name)
            - mean(r, "mapped", counters::MINOR_FAULTS.name);
        time::between(r, "mapped", "touched").per(faults)
    };
    let (f4, f5) = (per_fault(&pf[0]), per_fault(&pf[1]));
    sec.findings.push(format!(
        "Predicted time per minor fault of the page-fault loop (the fault, its retry's walk, its \
         share of table allocation): {} with 4 levels and {} with 5 ({:+.3}%). The seed measured \
         105.64 vs 105.88 ns (+0.23%) with lat_pagefault on bare metal; the model prices the \
         fault handler's own descent of the tables as part of the fixed fault figure, so a fifth \
         level reaches its prediction only through the hardware walks and the extra table.",
        f4.text(),
        f5.text(),
        time::percent(&f4, &f5)
    ));
    sec.figure("predicted_ns_per_fault", [f4, f5]);

    let mut rows = Vec::new();
    let (mut s4, mut s5) = (Vec::new(), Vec::new());
    let mut diffs = Vec::new();
    for &(t, r) in ebizzy {
        let (a, b) = (time::at(&r[0], "end"), time::at(&r[1], "end"));
        let d = time::percent(&a, &b);
        rows.push(vec![t.to_string(), a.text(), b.text(), format!("{d:+.3}%")]);
        s4.push((t as f64, a.estimate()));
        s5.push((t as f64, b.estimate()));
        diffs.push((t, d));
    }
    sec.tables.push(table(
        "Model: predicted time of the ebizzy-like run (makespan), 4 vs 5 levels",
        &["threads", "4-level", "5-level", "5-level vs 4-level"],
        rows,
    ));
    if let (Some(first), Some(last)) = (diffs.first(), diffs.last()) {
        sec.findings.push(format!(
            "ebizzy-like threads: 5 levels predict {:+.3}% at {} thread(s) and {:+.3}% at {} \
             threads. The seed's ebizzy throughput diverged from 4 threads up; in the model each \
             thread maps, fills and searches its own chunks, sharing the mmap_lock, the \
             shootdowns of its munmaps and the memory bandwidth, and a fifth level adds only \
             walk references and one table.",
            first.1, first.0, last.1, last.0
        ));
    }
    sec.figure("ebizzy_predicted_percent", &diffs);
    let ratio: Vec<(f64, Estimate)> = diffs
        .iter()
        .map(|&(t, d)| (t as f64, Estimate::exact(d)))
        .collect();
    sec.chart(
        "ebizzy-like threads: predicted makespan against threads, 4 vs 5 levels (model, one run \
         each, interval from the cost file)",
        chart::line_chart(
            &ChartSpec::new(
                "Predicted ebizzy-like makespan vs threads, 4-level vs 5-level (model)",
                "threads",
                "predicted time (ns)",
            )
            .unit(Unit::Nanoseconds)
            .from_zero(),
            &[Series::new("4-level", s4), Series::new("5-level", s5)],
        ),
    );
    sec.chart(
        "ebizzy-like threads: predicted 5-level time relative to 4-level, in percent (model)",
        chart::line_chart(
            &ChartSpec::new(
                "5-level vs 4-level predicted time, ebizzy-like (model)",
                "threads",
                "5-level time / 4-level time - 1 (%)",
            ),
            &[Series::new("5-level vs 4-level", ratio)],
        ),
    );
}
