//! Question 1: does a fifth page-table level cost anything, per TLB miss,
//! per fault, and on this machine? The model runs a page-fault loop, GUPS and
//! ebizzy-like threads under the x86-64 4-level and 5-level geometries (with
//! and without walk caches), GUPS as a guest over a host (nested walks, cold
//! and with the second dimension's caches); the kernel runs the page-fault
//! loop.

use super::experiments::{
    declared, Costs, Experiment, Fingerprint, KernelRun, ModelRun, Plan, Results,
};
use super::figure::{row, FigUnit, Figure};
use super::plot::{named, Named};
use super::read::{derived, mean, per, summary};
use super::text::{count_figure, estimate, num, table, INTERVALS};
use super::{model, Section, StudyOptions, Verdict};
use crate::exec::ConfigResult;
use report::chart::ChartSpec;
use report::Unit;
use stats::Quantity;

/// The experiments' and the host's handles.
struct Runs {
    pagefault: ModelRun,
    gups: ModelRun,
    nested: ModelRun,
    /// One per thread count, with it.
    ebizzy: Vec<(usize, ModelRun)>,
    kernel_pagefault: KernelRun,
    lat_pagefault: ModelRun,
    host: Fingerprint,
    costs: Costs,
}

/// The guest-over-host pairs of the nested experiment: (label, guest levels,
/// host levels, guest geometry, host geometry).
const NESTED_PAIRS: [(&str, u32, u32, &str, &str); 4] = [
    ("4-level on 4-level", 4, 4, "x86-64-4l", "x86-64-4l"),
    ("5-level on 5-level", 5, 5, "x86-64-5l", "x86-64-5l"),
    ("5-level on 4-level", 5, 4, "x86-64-5l", "x86-64-4l"),
    ("4-level on 5-level", 4, 5, "x86-64-4l", "x86-64-5l"),
];

/// Each pair cold (no TLB, no walk cache, no nested TLB, no host walk
/// cache: every update walks both dimensions in full), then with this
/// host's TLB and walk caches and the second dimension's caches on. THP off
/// and 4 KiB host pages, so that every walk reaches the 4 KiB leaves of both
/// dimensions.
fn nested_configs() -> Vec<crate::config::RunConfig> {
    let mut v = Vec::new();
    for cached in [false, true] {
        for (_, _, _, g, h) in NESTED_PAIRS {
            let caches = if cached {
                "host-caches=on".to_string()
            } else {
                "tlb=none,host-caches=off".to_string()
            };
            v.push(model(&format!(
                "geometry={g},host-geometry={h},host-page=4K,thp=never,{caches}"
            )));
        }
    }
    v
}

fn pagefault_toml(size: &str) -> String {
    format!(
        r#"name = "study-pagefault"
[[thread]]
op = [
  {{ mmap = "buf", size = "{size}" }},
  {{ mark = "mapped" }},
  {{ touch = "buf", access = "write" }},
  {{ mark = "touched" }},
  {{ munmap = "buf" }},
]
"#
    )
}

fn ebizzy_toml(threads: usize, iterations: usize) -> String {
    format!(
        r#"name = "study-ebizzy"
[[thread]]
count = {threads}
op = [
  {{ repeat = {iterations}, op = [
    {{ mmap = "chunk{{tid}}", size = "512KiB" }},
    {{ touch = "chunk{{tid}}", access = "write" }},
    {{ touch = "chunk{{tid}}", access = "read", pattern = "random", count = 1024, seed = 7 }},
    {{ munmap = "chunk{{tid}}" }},
  ] }},
]
"#
    )
}

fn gups_toml(size: &str, count: u64) -> String {
    format!(
        r#"name = "study-gups"
[[thread]]
op = [
  {{ mmap = "table", size = "{size}" }},
  {{ touch = "table", access = "write" }},
  {{ mark = "filled" }},
  {{ touch = "table", access = "write", pattern = "random", count = {count}, seed = 1 }},
  {{ mark = "updated" }},
  {{ munmap = "table" }},
]
"#
    )
}

/// The geometries compared: with this host's walk caches, then without.
fn geometries() -> [crate::config::RunConfig; 4] {
    [
        model("geometry=x86-64-4l"),
        model("geometry=x86-64-5l"),
        model("geometry=x86-64-4l,tlb=none"),
        model("geometry=x86-64-5l,tlb=none"),
    ]
}

fn ebizzy_threads(_o: StudyOptions) -> Vec<usize> {
    // 1 to 8 threads, as the seed's ebizzy runs (quick too: the points
    // are small).
    vec![1, 2, 4, 8]
}

/// Runs of each ebizzy point: how the threads interleave moves its counts,
/// so every point is a mean with its spread.
const EBIZZY_RUNS: usize = 5;

/// Runs of the kernel's page-fault loop: enough for an interval.
fn kernel_runs(o: StudyOptions) -> usize {
    o.pick(5, 10)
}

/// The model's page faults and GUPS under every geometry, ebizzy per thread
/// count under the two with walk caches, the kernel's page-fault loop.
fn declare(o: StudyOptions, p: &mut Plan) -> Runs {
    let size = o.pick("64MiB", "256MiB");
    let geos = geometries();
    let pagefault = p.model(Experiment::model(
        "pagefault 4L/5L",
        pagefault_toml(size),
        &geos,
        1,
    ));
    let gups = p.model(Experiment::model(
        "gups 4L/5L",
        gups_toml(o.pick("128MiB", "512MiB"), o.pick(200_000, 1_000_000)),
        &geos,
        1,
    ));
    let nested = p.model(Experiment::model(
        "gups nested",
        gups_toml(o.pick("32MiB", "128MiB"), o.pick(50_000, 200_000)),
        &nested_configs(),
        1,
    ));
    let iters = o.pick(20, 60);
    let ebizzy = ebizzy_threads(o)
        .into_iter()
        .map(|t| {
            let run = p.model(Experiment::model(
                &format!("ebizzy {t} threads"),
                ebizzy_toml(t, iters),
                &geos[..2],
                EBIZZY_RUNS,
            ));
            (t, run)
        })
        .collect();
    let kernel_pagefault = p.kernel(Experiment::kernel(
        "pagefault on the kernel",
        pagefault_toml(size),
        kernel_runs(o),
    ));
    Runs {
        pagefault,
        gups,
        nested,
        ebizzy,
        kernel_pagefault,
        lat_pagefault: super::five_level_time::declare(o, p),
        host: p.fingerprint(),
        costs: p.costs(),
    }
}

/// The four-level and five-level x86 geometries, for the user's trace.
const YOURS: super::yours::Pair = super::yours::Pair {
    what: "4-level vs 5-level",
    base: "geometry=x86-64-4l",
    other: "geometry=x86-64-5l",
    change: "a fifth level",
};

/// [`declare`], then the user's trace under [`YOURS`] (`study --trace`).
fn with_yours(o: StudyOptions, p: &mut Plan) -> (Runs, Option<ModelRun>) {
    (declare(o, p), super::yours::declare(o, p, &YOURS))
}

pub(super) fn plan(o: StudyOptions) -> Plan {
    declared(o, with_yours).0
}

/// What a fifth level costs a guest: the nested GUPS runs' references per
/// walk, cold and cached, in a table, a finding, figures and a chart.
fn nested_part(sec: &mut Section, runs: &[ConfigResult], gups_refs: &dyn Fn(&ConfigResult) -> f64) {
    let n = NESTED_PAIRS.len();
    let delta = |r: &ConfigResult, c: &str| mean(r, "updated", c) - mean(r, "filled", c);
    let mut rows = Vec::new();
    let (mut cold, mut cached) = (Vec::new(), Vec::new());
    for (i, (label, g, h, _, _)) in NESTED_PAIRS.iter().enumerate() {
        let (c, w) = (&runs[i], &runs[n + i]);
        let walks = delta(w, counters::WALKS.name);
        cold.push(gups_refs(c));
        cached.push(gups_refs(w));
        rows.push(row![
            label.to_string(),
            Figure::count(f64::from((g + 1) * (h + 1) - 1)),
            Figure::plain(gups_refs(c)),
            Figure::plain(gups_refs(w)),
            Figure::plain(per(delta(w, counters::GUEST_WALK_REFS.name), walks)),
            Figure::plain(per(delta(w, counters::HOST_WALK_REFS.name), walks)),
            Figure::share(
                100.0
                    * per(
                        delta(w, counters::NESTED_TLB_HITS.name),
                        delta(w, counters::NESTED_TLB_HITS.name)
                            + delta(w, counters::NESTED_TLB_MISSES.name),
                    )
            ),
            Figure::count(mean(c, "filled", counters::EPT_VIOLATIONS.name)),
        ]);
    }
    sec.tables.push(table(
        "Model: GUPS as a guest over a host (nested walks), memory references per walk",
        &[
            "guest on host",
            "(g+1)(h+1)-1",
            "refs/walk, cold",
            "refs/walk, with caches",
            "guest refs/walk, with caches",
            "host refs/walk, with caches",
            "nested TLB hit %",
            "EPT violations (fill)",
        ],
        rows,
    ));
    sec.findings.push(format!(
        "Under a hypervisor, a cold nested walk reads {} references with 4-level guest and host \
         and {} with 5-level both ({:+.0}%; natively 4 and 5); with the TLB, walk caches, nested \
         TLB and host walk caches, {} and {} ({:+.1}%).",
        num(cold[0]),
        num(cold[1]),
        100.0 * (cold[1] / cold[0] - 1.0),
        num(cached[0]),
        num(cached[1]),
        100.0 * (cached[1] / cached[0] - 1.0),
    ));
    sec.figure("nested_refs_per_walk_cold", cold.clone());
    sec.figure("nested_refs_per_walk_cached", cached.clone());
    let points = |name: &str, v: &[f64]| -> Vec<Named> {
        v.iter()
            .enumerate()
            .map(|(i, &x)| named(format!("{name}[{i}]"), Figure::plain(x)))
            .collect()
    };
    sec.bars(
        "Nested walks: memory references per walk, GUPS (model, exact counts of one run each)",
        &ChartSpec::new(
            "Memory references per walk of a guest over a host (model)",
            "guest on host",
            "memory references per walk",
        ),
        &NESTED_PAIRS
            .iter()
            .map(|p| p.0.to_string())
            .collect::<Vec<_>>(),
        vec![
            ("cold".into(), points("nested_refs_per_walk_cold", &cold)),
            (
                "with caches".into(),
                points("nested_refs_per_walk_cached", &cached),
            ),
        ],
    );
}

/// ebizzy: references per 1000 accesses as threads grow, EBIZZY_RUNS runs
/// per point, in a table, a finding, figures and a chart.
fn ebizzy_part(sec: &mut Section, r: &Results, runs: &Runs) {
    let mut series4 = Vec::new();
    let mut series5 = Vec::new();
    let mut by_threads = Vec::new();
    let mut rows = Vec::new();
    let mut last = None;
    for (i, &(t, run)) in runs.ebizzy.iter().enumerate() {
        let r = r.model(run);
        let k = |r: &ConfigResult| {
            derived(r, Quantity::NonNegative, |at| {
                1000.0
                    * per(
                        at("end", counters::WALK_REFS.name),
                        at("end", counters::ACCESSES.name),
                    )
            })
        };
        let (a, b) = (k(&r[0]), k(&r[1]));
        let ipis = summary(&r[0], "end", counters::IPIS.name, Quantity::Count);
        let fig = |s: &Option<stats::Summary>, u| {
            s.as_ref()
                .map_or(Figure::new(f64::NAN, u), |s| Figure::summary(s, u))
        };
        let (fa, fb) = (fig(&a, FigUnit::Plain), fig(&b, FigUnit::Plain));
        rows.push(row![
            Figure::count(t as f64),
            fa.clone(),
            fb.clone(),
            fig(&ipis, FigUnit::Count),
            Figure::count(mean(&r[0], "end", counters::MINOR_FAULTS.name)),
        ]);
        let name = |l: usize| format!("ebizzy_refs_per_1000_accesses_by_threads[{i}][{l}]");
        series4.push((t as f64, named(name(0), fa.clone())));
        series5.push((t as f64, named(name(1), fb.clone())));
        by_threads.push([fa, fb]);
        last = Some((t, a, b));
    }
    sec.tables.push(table(
        &format!(
            "Model: ebizzy-like threads, walk references per 1000 accesses ({EBIZZY_RUNS} runs each)"
        ),
        &["threads", "4-level", "5-level", "IPIs (4-level)", "faults (4-level)"],
        rows,
    ));
    if let Some((t, Some(a), Some(b))) = last {
        let overlap = match (a.ci95, b.ci95) {
            (Some(x), Some(y)) => x.low <= y.high && y.low <= x.high,
            _ => true,
        };
        sec.findings.push(format!(
            "ebizzy-like churn at {t} threads: {} walk references per 1000 accesses with 5 levels \
             vs {} with 4 ({}).",
            estimate(&b, Unit::Plain),
            estimate(&a, Unit::Plain),
            if overlap {
                "the intervals overlap: no difference beyond the runs' spread"
            } else {
                "the intervals do not overlap"
            }
        ));
        sec.figure("ebizzy_refs_per_1000_accesses", [&a, &b]);
    }
    // Every thread count's pair, as the table and the chart show them.
    sec.figure("ebizzy_refs_per_1000_accesses_by_threads", &by_threads);
    sec.lines(
        &format!(
            "ebizzy-like threads: walk references per 1000 accesses (model; mean of {EBIZZY_RUNS} runs \
             per point with its 95% interval; a hollow point has no interval)"
        ),
        &ChartSpec::new(
            "Walk references per 1,000 accesses vs threads, ebizzy-like (model)",
            "threads",
            "walk references per 1000 accesses",
        )
        .from_zero(),
        vec![("4-level".into(), series4), ("5-level".into(), series5)],
    );
}

/// The section from the results of [`declare`]'s experiments.
pub(super) fn section(o: StudyOptions, r: &Results) -> Section {
    let mut sec = header();
    sec.method = format!("{} {INTERVALS}", sec.method);
    let (runs, mine) = declared(o, with_yours).1;
    let pf = r.model(runs.pagefault);
    let gups = r.model(runs.gups);
    let WalkRefs { c4, c5, g4, g5 } = walk_refs(&mut sec, pf, gups);

    nested_part(&mut sec, r.model(runs.nested), &gups_refs);

    ebizzy_part(&mut sec, r, &runs);

    // Predicted time (five_level_time).
    let ebizzy: Vec<(usize, &[ConfigResult])> = runs
        .ebizzy
        .iter()
        .map(|&(t, run)| (t, r.model(run)))
        .collect();
    let lat = r.model(runs.lat_pagefault);
    let (f4, f5) = super::five_level_time::add(&mut sec, pf, &ebizzy, Some(lat));
    let nested = r.model(runs.nested);
    let cold = |i: usize| gups_refs(&nested[i]);
    let amd = super::five_level_amd::add(&mut sec, pf, r.costs(runs.costs));
    sec.verdict = Verdict::default()
        .fig("fault_change", Figure::change(&f4, &f5))
        .fig("fault_added", Figure::ns(f5.ns - f4.ns))
        .fig("fault_4l", Figure::ns(f4.ns))
        .fig("gups_refs_change", Figure::percent(100.0 * (g5 / g4 - 1.0)))
        .fig(
            "uncached_refs_change",
            Figure::percent(100.0 * (c5 / c4 - 1.0)),
        )
        .fig(
            "nested_cold_change",
            Figure::percent(100.0 * (cold(1) / cold(0) - 1.0)),
        )
        .fig("amd_change", amd.amd_change)
        .fig("refs_needed", amd.refs_needed)
        .fig("memory_every", amd.memory_every)
        .say(
            "A fifth level adds {fault_added} ({fault_change}) to a {fault_4l} minor fault here, \
             predicted: walk caches hold the upper levels (random updates {gups_refs_change} \
             walk references; uncached {uncached_refs_change}, nested cold \
             {nested_cold_change}). AMD measured {amd_change} per fault: that needs \
             {refs_needed} more L2-hit walk references per fault, or a memory reference every \
             {memory_every} faults.",
        );

    host_part(&mut sec, r, &runs);
    sec.findings
        .extend(super::yours::finding(o, r, mine, &YOURS));
    sec
}

/// The section's title, question, method and the seed's figure.
fn header() -> Section {
    Section::new(
        "4-level vs 5-level page tables",
        "Does a fifth page-table level cost anything: per TLB miss, per fault, and on this machine?",
        "The model runs the same workloads with the x86-64 4-level and 5-level geometries: a page-fault \
         loop (lat_pagefault), ebizzy-like threads that map, fill, search and unmap chunks, and random \
         updates (GUPS). It counts the memory references of every hardware walk, with this host's \
         walk caches and with none, and predicts the time of the page-fault loop and of ebizzy \
         in virtual time (one modeled CPU per thread, the cost file's figures). GUPS also runs as a \
         guest over a host (host-geometry): every TLB miss walks the guest's tables and, for each \
         guest entry and for the data, the host's, with all caches off and then with this host's \
         TLB and walk caches, a 32-entry nested TLB and host walk caches keyed by guest-physical \
         address (counts of the model). The kernel of this machine runs the page-fault loop \
         repeatedly to give its measured fault latency. Which parts of a fault grow with the \
         fifth level (hardware walks with and without a walk cache for the top level, the extra \
         table, the kernel's own p4d descent) are priced with the study's cost file from the \
         page-fault loop's counts.",
        "lat_pagefault minor fault 105.64 ns (4-level) vs 105.88 ns (5-level), 30 runs, p = 1.5e-6 \
         (Intel Ice Lake, +0.23%); ebizzy throughput diverges from 4 threads; handle_mm_fault mean \
         630 ns vs 640 ns. On AMD, lat_pagefault went from 0.4068 to 0.4294 us (+5.56%; +5.59% \
         with THP always; linux-kernel, July 2024).",
    )
}

/// References per walk of a page-fault-loop run up to `mark`.
fn pf_refs(r: &ConfigResult, mark: &str) -> f64 {
    per(
        mean(r, mark, counters::WALK_REFS.name),
        mean(r, mark, counters::WALKS.name),
    )
}

/// References per walk of a GUPS run's updates.
fn gups_refs(r: &ConfigResult) -> f64 {
    per(
        mean(r, "updated", counters::WALK_REFS.name) - mean(r, "filled", counters::WALK_REFS.name),
        mean(r, "updated", counters::WALKS.name) - mean(r, "filled", counters::WALKS.name),
    )
}

/// TLB misses per 1000 accesses of a GUPS run's updates.
fn gups_miss(r: &ConfigResult) -> f64 {
    1000.0
        * per(
            mean(r, "updated", counters::TLB_MISSES.name)
                - mean(r, "filled", counters::TLB_MISSES.name),
            mean(r, "updated", counters::ACCESSES.name)
                - mean(r, "filled", counters::ACCESSES.name),
        )
}

/// References per walk, 4 vs 5 levels, that the verdict reads: in random
/// updates with walk caches (`g`) and in the page-fault loop without them
/// (`c`).
struct WalkRefs {
    c4: f64,
    c5: f64,
    g4: f64,
    g5: f64,
}

/// The model's references per walk: the table, the finding, the figures and
/// the chart.
fn walk_refs(sec: &mut Section, pf: &[ConfigResult], gups: &[ConfigResult]) -> WalkRefs {
    let mut rows = Vec::new();
    for (i, label) in [
        "4-level",
        "5-level",
        "4-level, no walk caches",
        "5-level, no walk caches",
    ]
    .iter()
    .enumerate()
    {
        rows.push(row![
            label.to_string(),
            Figure::plain(pf_refs(&pf[i], "touched")),
            Figure::plain(gups_refs(&gups[i])),
            Figure::plain(gups_miss(&gups[i])),
            Figure::count(mean(&pf[i], "touched", counters::MINOR_FAULTS.name)),
            Figure::kib(mean(&pf[i], "touched", counters::VMPTE_KB.name)),
        ]);
    }
    sec.tables.push(table(
        "Model: memory references per hardware walk",
        &[
            "geometry",
            "refs/walk, page faults",
            "refs/walk, GUPS",
            "TLB misses per 1000 GUPS accesses",
            "minor faults (page-fault loop)",
            "VmPTE (page-fault loop)",
        ],
        rows,
    ));
    let (c4, c5) = (pf_refs(&pf[2], "touched"), pf_refs(&pf[3], "touched"));
    let (w4, w5) = (pf_refs(&pf[0], "touched"), pf_refs(&pf[1], "touched"));
    let (g4, g5) = (gups_refs(&gups[0]), gups_refs(&gups[1]));
    sec.findings.push(format!(
        "References per walk, 5 vs 4 levels: {} vs {} without walk caches ({:+.0}%); with them \
         {} vs {} in the page-fault loop and {} vs {} in random updates ({:+.1}%).",
        num(c5),
        num(c4),
        100.0 * (c5 / c4 - 1.0),
        num(w5),
        num(w4),
        num(g5),
        num(g4),
        100.0 * (g5 / g4 - 1.0)
    ));
    sec.figure("refs_per_walk_no_cache", [c4, c5]);
    sec.figure("refs_per_walk_pagefault", [w4, w5]);
    sec.figure("refs_per_walk_gups", [g4, g5]);
    sec.figure(
        "pagefault_minor_faults",
        (0..4)
            .map(|i| count_figure(mean(&pf[i], "touched", counters::MINOR_FAULTS.name)))
            .collect::<Vec<_>>(),
    );
    let named_refs = |i: usize, (w, g, c): (f64, f64, f64)| {
        vec![
            named(format!("refs_per_walk_pagefault[{i}]"), Figure::plain(w)),
            named(format!("refs_per_walk_gups[{i}]"), Figure::plain(g)),
            named(format!("refs_per_walk_no_cache[{i}]"), Figure::plain(c)),
        ]
    };
    sec.bars(
        "Memory references per hardware walk (model, exact counts of one run each)",
        &ChartSpec::new(
            "Memory references per hardware walk, 4-level vs 5-level (model)",
            "workload",
            "memory references per walk",
        ),
        &[
            "page faults".into(),
            "GUPS".into(),
            "page faults, no walk cache".into(),
        ],
        vec![
            ("4-level".into(), named_refs(0, (w4, g4, c4))),
            ("5-level".into(), named_refs(1, (w5, g5, c5))),
        ],
    );

    WalkRefs { c4, c5, g4, g5 }
}

/// This machine: its levels and its kernel's measured minor fault.
fn host_part(sec: &mut Section, r: &Results, runs: &Runs) {
    let fp = r.fingerprint(runs.host);
    let levels = if fp.la57 == Some(true) { 5 } else { 4 };
    sec.figure("host_la57", fp.la57);
    if let Some(k) = r.kernel(runs.kernel_pagefault) {
        if let Some(s) = summary(k, "touched", counters::NS_PER_FAULT.name, Quantity::Time) {
            sec.findings.push(format!(
                "This machine walks {levels} levels (la57 {}; kernel {}): a minor fault on fresh \
                 anonymous memory costs {} (measured).",
                match fp.la57 {
                    Some(true) => "present",
                    Some(false) => "absent",
                    None => "unknown",
                },
                match fp.kernel_5level {
                    Some(true) => "built for 5 levels, folded to 4 at boot",
                    Some(false) => "built for 4 levels",
                    None => "configuration unreadable",
                },
                estimate(&s, Unit::Nanoseconds)
            ));
            sec.figure("kernel_ns_per_fault", &s);
        }
    }
}
