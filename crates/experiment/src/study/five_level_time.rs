//! The time part of question 1 (4-level vs 5-level): what the model
//! predicts a fifth level costs per minor fault (lat_pagefault-like) and
//! to ebizzy-like threads, beside the seed's measured figures. Kept apart
//! from `five_level` (which counts the walks) so that each file stays one
//! concern; `five_level::section` calls [`add`] with its results.

use super::experiments::{Experiment, ModelRun, Plan};
use super::figure::{row, Figure};
use super::plot::{named, Named};
use super::read::mean;
use super::text::table;
use super::time;
use super::{model, Section, StudyOptions};
use crate::exec::ConfigResult;
use report::chart::ChartSpec;
use report::Unit;

/// The cost files of the lat_pagefault-like loop: this host's (or
/// `--costs`) and the seed's era, each under 4 then 5 levels.
const LAT_COSTS: [(&str, &str); 2] = [
    ("this host", ""),
    ("bare metal 2013", ",costs=bare-metal-2013"),
];

/// lmbench's lat_pagefault: a cached file mapped, one byte read per 4 KiB
/// page (fault-around maps 16 pages a fault), unmapped, `rounds` times.
fn lat_pagefault_toml(rounds: usize) -> String {
    format!(
        r#"name = "study-lat-pagefault"
[[thread]]
op = [
  {{ mark = "start" }},
  {{ repeat = {rounds}, op = [
    {{ mmap = "file", size = "12MiB", kind = "file", file = "cached", shared = true, prot = "r" }},
    {{ touch = "file", access = "read", stride = "4KiB" }},
    {{ munmap = "file" }},
  ] }},
  {{ mark = "done" }},
]
"#
    )
}

/// Declares the lat_pagefault-like loop under both cost files, 4 and 5
/// levels each (after `five_level`'s own experiments).
pub(super) fn declare(o: StudyOptions, p: &mut Plan) -> ModelRun {
    let configs: Vec<_> = LAT_COSTS
        .iter()
        .flat_map(|(_, c)| ["x86-64-4l", "x86-64-5l"].map(|g| model(&format!("geometry={g}{c}"))))
        .collect();
    p.model(Experiment::model(
        "lat_pagefault-like 4L/5L",
        lat_pagefault_toml(o.pick(10, 100)),
        &configs,
        1,
    ))
}

/// The lat_pagefault-like loop's predicted time per page read and per
/// fault, 4 against 5 levels under each cost file.
fn add_lat(sec: &mut Section, lat: &[ConfigResult]) {
    let mut rows = Vec::new();
    let mut figs = Vec::new();
    for (i, (cname, _)) in LAT_COSTS.iter().enumerate() {
        let (r4, r5) = (&lat[2 * i], &lat[2 * i + 1]);
        let delta = |r: &ConfigResult, k: &str| mean(r, "done", k) - mean(r, "start", k);
        let pages = delta(r4, counters::ACCESSES.name);
        let faults = delta(r4, counters::MINOR_FAULTS.name);
        let (t4, t5) = (
            time::between(r4, "start", "done"),
            time::between(r5, "start", "done"),
        );
        let d = time::percent(&t4, &t5);
        rows.push(row![
            cname.to_string(),
            Figure::predicted(&t4.per(pages)),
            Figure::predicted(&t5.per(pages)),
            Figure::predicted(&t4.per(faults)),
            Figure::predicted(&t5.per(faults)),
            Figure::change(&t4, &t5),
        ]);
        let figures = match *cname {
            "this host" => "this host's figures".to_string(),
            c => format!("the {c} figures"),
        };
        sec.findings.push(format!(
            "lat_pagefault-like (a cached 12 MiB file, a byte read per page), {figures}: {} vs \
             {} per page, 4 vs 5 levels ({d:+.3}%); the seed: 105.64 vs 105.88 ns (+0.23%).",
            t4.per(pages).short(),
            t5.per(pages).short(),
        ));
        figs.push((cname.to_string(), t4.per(pages), t5.per(pages), d));
    }
    sec.tables.push(table(
        "Model: lat_pagefault-like loop, predicted time, 4 vs 5 levels, beside the seed's \
         105.64 vs 105.88 ns per page (+0.23%)",
        &[
            "cost file",
            "4-level per page",
            "5-level per page",
            "4-level per fault",
            "5-level per fault",
            "5-level vs 4-level",
        ],
        rows,
    ));
    sec.figure("lat_pagefault_predicted", figs);
}

/// Adds the predicted times to `sec`: `pf` is the page-fault loop under
/// 4-level then 5-level (with walk caches first), `ebizzy` each thread
/// count's runs under the same two, `lat` the runs of [`declare`]'s experiment.
/// Returns the predicted time per minor fault, 4 then 5 levels (the
/// verdict's).
pub(super) fn add(
    sec: &mut Section,
    pf: &[ConfigResult],
    ebizzy: &[(usize, &[ConfigResult])],
    lat: Option<&[ConfigResult]>,
) -> (time::Predicted, time::Predicted) {
    if let Some(lat) = lat {
        add_lat(sec, lat);
    }
    let per_fault = |r: &ConfigResult| {
        let faults = mean(r, "touched", counters::MINOR_FAULTS.name)
            - mean(r, "mapped", counters::MINOR_FAULTS.name);
        time::between(r, "mapped", "touched").per(faults)
    };
    let (f4, f5) = (per_fault(&pf[0]), per_fault(&pf[1]));
    sec.findings.push(format!(
        "Predicted time per minor fault of the page-fault loop: {} with 4 levels, {} with 5 \
         ({:+.3}%: the walks' extra entry, the extra table, the fault handler's own descent).",
        f4.text(),
        f5.text(),
        time::percent(&f4, &f5)
    ));
    sec.figure("predicted_ns_per_fault", [f4, f5]);

    let mut rows = Vec::new();
    let (mut s4, mut s5) = (Vec::new(), Vec::new());
    let mut diffs = Vec::new();
    let mut makespans = Vec::new();
    for (i, &(t, r)) in ebizzy.iter().enumerate() {
        let (a, b) = (time::at(&r[0], "end"), time::at(&r[1], "end"));
        let d = time::percent(&a, &b);
        let (fa, fb) = (Figure::predicted(&a), Figure::predicted(&b));
        rows.push(row![
            Figure::count(t as f64),
            fa.clone(),
            fb.clone(),
            Figure::change(&a, &b),
        ]);
        let name = |l: usize| format!("ebizzy_predicted_ns[{i}][{l}]");
        s4.push((t as f64, named(name(0), fa.clone())));
        s5.push((t as f64, named(name(1), fb.clone())));
        makespans.push([fa, fb]);
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
             threads (the seed's ebizzy throughput diverged from 4 threads up).",
            first.1, first.0, last.1, last.0
        ));
    }
    sec.figure("ebizzy_predicted_percent", &diffs);
    sec.figure("ebizzy_predicted_ns", &makespans);
    let ratio: Vec<(f64, Named)> = diffs
        .iter()
        .enumerate()
        .map(|(i, &(t, d))| {
            let f = Figure::percent(d);
            (
                t as f64,
                named(format!("ebizzy_predicted_percent[{i}][1]"), f),
            )
        })
        .collect();
    sec.lines(
        "ebizzy-like threads: predicted makespan against threads, 4 vs 5 levels (model, one run \
         each, interval from the cost file)",
        &ChartSpec::new(
            "Predicted ebizzy-like makespan vs threads, 4-level vs 5-level (model)",
            "threads",
            "predicted time",
        )
        .unit(Unit::Nanoseconds)
        .from_zero(),
        vec![("4-level".into(), s4), ("5-level".into(), s5)],
    );
    sec.lines(
        "ebizzy-like threads: predicted 5-level time relative to 4-level, in percent (model)",
        &ChartSpec::new(
            "5-level vs 4-level predicted time, ebizzy-like (model)",
            "threads",
            "5-level time / 4-level time - 1 (%)",
        ),
        vec![("5-level vs 4-level".into(), ratio)],
    );
    (f4, f5)
}
