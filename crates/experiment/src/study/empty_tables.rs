//! Question 4: how much memory do empty PTE tables hold after MADV_DONTNEED,
//! and what do Linux's PT_RECLAIM and the slides' eager design give back? The
//! kernel and the model (reclaim off, on, eager) drop a sparse mapping whole
//! and in halves of every 2 MiB.

use super::experiments::{declared, Experiment, KernelRun, ModelRun, Plan, Results};
use super::figure::{row, Figure};
use super::plot::named;
use super::read::mean;
use super::text::{count_figure, kb, table};
use super::{model, Section, StudyOptions, Verdict};
use crate::exec::ConfigResult;
use report::chart::{ChartSpec, YScale};
use report::Unit;

/// Writes per 2 MiB of the random production case, in hundredths: 151 M
/// random writes over 50 TiB, the slides' RES of 590 GB.
const RANDOM_WRITES_PER_2MIB_CENTI: u64 = 576;

/// The experiments' handles.
struct Runs {
    whole_model: ModelRun,
    whole_kernel: KernelRun,
    halves_model: ModelRun,
    halves_kernel: KernelRun,
    /// With `--production` only: the slides' 55 TB process (model only).
    slides_model: Option<ModelRun>,
    /// With `--production` only: the same process with its pages where an
    /// allocator puts them, in random order (model only, reclaim on).
    slides_random_model: Option<ModelRun>,
}

fn reclaim_toml(size: &str) -> String {
    format!(
        r#"name = "study-dontneed-reclaim"
[[thread]]
op = [
  {{ mmap = "big", size = "{size}", noreserve = true }},
  {{ touch = "big", access = "write", stride = "2MiB" }},
  {{ mark = "touched" }},
  {{ madvise = "big", advice = "dontneed" }},
  {{ mark = "dontneed" }},
  {{ munmap = "big" }},
]
"#
    )
}

/// DONTNEED in two halves of every 2 MiB: no single call covers a table.
fn halves_toml(tables: u64) -> String {
    let mut ops = String::new();
    for t in 0..tables {
        let base = t * 2;
        ops.push_str(&format!(
            "  {{ madvise = \"big\", advice = \"dontneed\", offset = \"{}KiB\", len = \"1MiB\" }},\n  \
             {{ madvise = \"big\", advice = \"dontneed\", offset = \"{}KiB\", len = \"1MiB\" }},\n",
            base * 1024,
            base * 1024 + 1024
        ));
    }
    format!(
        r#"name = "study-dontneed-halves"
[[thread]]
op = [
  {{ mmap = "big", size = "{}MiB" }},
  {{ touch = "big", access = "write", stride = "2MiB" }},
  {{ mark = "touched" }},
{ops}  {{ mark = "dontneed" }},
  {{ munmap = "big" }},
]
"#,
        tables * 2
    )
}

fn size(o: StudyOptions) -> &'static str {
    o.pick("8GiB", "50GiB")
}

/// PTE tables of the halves workload (2 MiB each).
fn tables(o: StudyOptions) -> u64 {
    o.pick(256, 1024)
}

/// Each workload on the model (reclaim off, on, eager), then on the kernel.
fn declare(o: StudyOptions, p: &mut Plan) -> Runs {
    let models = [
        model("reclaim=off"),
        model("reclaim=on"),
        model("reclaim=eager"),
    ];
    Runs {
        whole_model: p.model(Experiment::model(
            "dontneed-reclaim model",
            reclaim_toml(size(o)),
            &models,
            1,
        )),
        whole_kernel: p.kernel(Experiment::kernel(
            "dontneed-reclaim kernel",
            reclaim_toml(size(o)),
            1,
        )),
        halves_model: p.model(Experiment::model(
            "dontneed halves model",
            halves_toml(tables(o)),
            &models,
            1,
        )),
        halves_kernel: p.kernel(Experiment::kernel(
            "dontneed halves kernel",
            halves_toml(tables(o)),
            1,
        )),
        // The model only: the kernel backend refuses a run that may need
        // more memory than this machine has, as it should.
        slides_model: o.production.then(|| {
            p.model(
                Experiment::model("slides-55tb model", slides_toml("50TiB"), &models, 1)
                    // A few minutes per mode on a 2-core machine (BENCHMARKS.md,
                    // "Scale and the production run"); the default 120 s would stop
                    // it on a loaded host.
                    .timeout(std::time::Duration::from_secs(900)),
            )
        }),
        // The random order costs the host's caches more per write: one
        // mode (Linux's) and a longer limit.
        slides_random_model: o.production.then(|| {
            p.model(
                Experiment::model(
                    "slides-55tb random model",
                    slides_random_toml(50 << 40),
                    &[model("reclaim=on")],
                    1,
                )
                .timeout(std::time::Duration::from_secs(1800)),
            )
        }),
    }
}

pub(super) fn plan(o: StudyOptions) -> Plan {
    declared(o, declare).0
}

/// The slides' process with its pages where an allocator puts them rather
/// than on a stride: `size` bytes noreserve, 5.76 writes per 2 MiB at
/// uniformly random pages (151 M over 50 TiB, about 5.8 pages per PTE
/// table on average, as in the strided case, but each table holding more
/// or fewer), then MADV_DONTNEED over all of it.
fn slides_random_toml(size: u64) -> String {
    let count = size / (2 << 20) * RANDOM_WRITES_PER_2MIB_CENTI / 100;
    let mib = size >> 20;
    format!(
        r#"name = "slides-55tb-random"
[[thread]]
op = [
  {{ mmap = "heap", size = "{mib}MiB", noreserve = true }},
  {{ touch = "heap", access = "write", pattern = "random", count = {count} }},
  {{ mark = "touched" }},
  {{ madvise = "heap", advice = "dontneed" }},
  {{ mark = "dontneed" }},
  {{ munmap = "heap" }},
]
"#
    )
}

/// The reclaim slides' real process (VIRT 55 TB, RES 590 GB, VmPTE 110 GB)
/// at `size` (50 TiB is 55 TB): an allocator's pattern, five pages written
/// in every 2 MiB and a sixth in every other (5.5 pages, 22 KiB per 2 MiB),
/// spread over the 2 MiB (pages 0, 97, 211, 307, 401 and 463), so that
/// every PTE table holds 5 or 6 entries; then MADV_DONTNEED over all of it.
fn slides_toml(size: &str) -> String {
    let touch = |stride: &str, kib: u64| {
        format!(
            "  {{ touch = \"heap\", access = \"write\", stride = \"{stride}\", offset = \"{kib}KiB\" }},\n"
        )
    };
    let mut touches = String::new();
    for page in [0u64, 97, 211, 307, 401] {
        touches.push_str(&touch("2MiB", page * 4));
    }
    touches.push_str(&touch("4MiB", 463 * 4));
    format!(
        r#"name = "slides-55tb"
[[thread]]
op = [
  {{ mmap = "heap", size = "{size}", noreserve = true }},
{touches}  {{ mark = "touched" }},
  {{ madvise = "heap", advice = "dontneed" }},
  {{ mark = "dontneed" }},
  {{ munmap = "heap" }},
]
"#
    )
}

/// The production rows: the slides' 55 TB process per reclaim mode.
fn slides_table(sec: &mut Section, r: &Results, slides: ModelRun, random: Option<ModelRun>) {
    let runs = r.model(slides);
    let random = random.map_or(&[][..], |x| r.model(x));
    let at = |r: &ConfigResult, m: &str, c: &str| mean(r, m, c);
    let modes = ["reclaim off", "reclaim on", "eager"];
    let rows = runs
        .iter()
        .zip(modes)
        .chain(random.iter().zip(["random order, reclaim on"]))
        .map(|(run, mode)| {
            row![
                mode.to_string(),
                Figure::kib(at(run, "touched", counters::RSS_ANON_KB.name)),
                Figure::kib(at(run, "touched", counters::VMPTE_KB.name)),
                Figure::kib(at(run, "dontneed", counters::RSS_ANON_KB.name)),
                Figure::kib(at(run, "dontneed", counters::VMPTE_KB.name)),
                Figure::count(at(run, "touched", counters::MINOR_FAULTS.name)),
                Figure::predicted(&super::time::at(run, "end")),
            ]
        })
        .collect();
    sec.tables.push(table(
        "The slides' process on the model: 50 TiB (55 TB) noreserve, 5.5 pages written per 2 MiB \
         at six offsets in address order, or 5.76 writes per 2 MiB at random pages",
        &[
            "",
            "RSS touched",
            "VmPTE touched",
            "RSS after DONTNEED",
            "VmPTE after DONTNEED",
            "faults",
            "predicted time",
        ],
        rows,
    ));
    if let (Some(off), Some(on)) = (runs.first(), runs.get(1)) {
        sec.findings.push(format!(
            "The slides' process (VIRT 55 TB, RES 590 GB, VmPTE 110 GB) on the model: RES {}, \
             VmPTE {} after the writes; after MADV_DONTNEED over all of it {} of tables stay \
             with reclaim off and {} with reclaim on.",
            kb(at(off, "touched", counters::RSS_ANON_KB.name)),
            kb(at(off, "touched", counters::VMPTE_KB.name)),
            kb(at(off, "dontneed", counters::VMPTE_KB.name)),
            kb(at(on, "dontneed", counters::VMPTE_KB.name)),
        ));
    }
    if let Some(rand) = random.first() {
        sec.findings.push(format!(
            "Written in random order, as an allocator places pages (5.76 writes per 2 MiB): RES \
             {}, VmPTE {} after the writes, {} after MADV_DONTNEED with reclaim on.",
            kb(at(rand, "touched", counters::RSS_ANON_KB.name)),
            kb(at(rand, "touched", counters::VMPTE_KB.name)),
            kb(at(rand, "dontneed", counters::VMPTE_KB.name)),
        ));
    }
}

/// The section from the results of [`declare`]'s experiments.
pub(super) fn section(o: StudyOptions, r: &Results) -> Section {
    let runs = declared(o, declare).1;
    let mut sec = section_base(o, r, &runs);
    if let Some(slides) = runs.slides_model {
        slides_table(&mut sec, r, slides, runs.slides_random_model);
    }
    sec
}

fn section_base(o: StudyOptions, r: &Results, runs: &Runs) -> Section {
    let mut sec = header();
    let (size, tables) = (size(o), tables(o));
    let labels = [
        "kernel",
        "model, reclaim off",
        "model, reclaim on",
        "model, eager",
    ];
    let (whole_m, whole_k) = (r.model(runs.whole_model), r.kernel(runs.whole_kernel));
    let (halves_m, halves_k) = (r.model(runs.halves_model), r.kernel(runs.halves_kernel));
    let all_whole: Vec<Option<&ConfigResult>> = std::iter::once(whole_k)
        .chain(whole_m.iter().map(Some))
        .collect();
    let all_halves: Vec<Option<&ConfigResult>> = std::iter::once(halves_k)
        .chain(halves_m.iter().map(Some))
        .collect();
    let at = vmpte_at;
    let mut rows = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        rows.push(row![
            l.to_string(),
            Figure::kib(at(all_whole[i], "touched")),
            Figure::kib(at(all_whole[i], "dontneed")),
            Figure::kib(at(all_halves[i], "touched")),
            Figure::kib(at(all_halves[i], "dontneed")),
        ]);
    }
    sec.tables.push(table(
        "VmPTE before and after MADV_DONTNEED",
        &[
            "",
            &format!("{size}: touched"),
            "after DONTNEED",
            &format!("{} MiB in halves: touched", tables * 2),
            "after DONTNEED",
        ],
        rows,
    ));
    let k = (at(all_whole[0], "touched"), at(all_whole[0], "dontneed"));
    let on = (at(all_whole[2], "touched"), at(all_whole[2], "dontneed"));
    let off = at(all_whole[1], "dontneed");
    sec.findings.push(format!(
        "After one write per 2 MiB over {size}, VmPTE is {} on this kernel and {} on the model; \
         MADV_DONTNEED over all of it brings the kernel to {} and the model with reclaim on to {} \
         (off: {} stay). The slides: 102,640 kB to 248 kB.",
        kb(k.0),
        kb(on.0),
        kb(k.1),
        kb(on.1),
        kb(off)
    ));
    let hk = at(all_halves[0], "dontneed");
    let hon = at(all_halves[2], "dontneed");
    let hea = at(all_halves[3], "dontneed");
    sec.findings.push(format!(
        "Dropping each 2 MiB in two halves defeats Linux's reclaim: {} of tables stay on the kernel \
         and {} on the model with reclaim on, while the eager design keeps {}; it frees what \
         Linux leaves behind, {} here.",
        kb(hk),
        kb(hon),
        kb(hea),
        kb(hon - hea)
    ));
    // The kernel's figures where it ran, the model's (reclaim on) otherwise.
    let (who, before, after, halves, halves_before) = if k.0.is_finite() && k.1.is_finite() {
        ("this kernel", k.0, k.1, hk, at(all_halves[0], "touched"))
    } else {
        (
            "the model (reclaim on)",
            on.0,
            on.1,
            hon,
            at(all_halves[2], "touched"),
        )
    };
    sec.verdict = Verdict::default()
        .fig("freed", Figure::share(100.0 * (1.0 - after / before)))
        .fig("before", Figure::kib(before))
        .fig("after", Figure::kib(after))
        .fig("halves_left", Figure::kib(halves))
        .fig(
            "halves_share",
            Figure::share(100.0 * halves / halves_before),
        )
        .fig("eager_left", Figure::kib(hea))
        .say(&format!(
            "After MADV_DONTNEED over a sparse {size} touched once per 2 MiB, {who} frees \
             {{freed}} of its {{before}} of page tables ({{after}} left). Dropped in halves, so \
             that no call covers a whole table, {{halves_left}} stay ({{halves_share}} of them); only the \
             eager design frees them ({{eager_left}} left)."
        ));
    sec.figure(
        "whole_vmpte_kb",
        [k.0, k.1, on.0, on.1, off].map(count_figure),
    );
    sec.figure("halves_vmpte_kb", [hk, hon, hea].map(count_figure));
    left_chart(&mut sec, size, &labels, [&all_whole, &all_halves]);
    sec
}

/// The section's title, question, method and the seed's figure.
fn header() -> Section {
    Section::new(
        "Empty PTE tables",
        "How much memory do empty PTE tables hold after MADV_DONTNEED, and what do Linux's PT_RECLAIM \
         and the full refcounting design of the slides give back?",
        "One write per 2 MiB over a large sparse mapping, then MADV_DONTNEED over all of it (the \
         slides' functional test), on this machine's kernel and on the model with reclaim off, on \
         (Linux since 6.14) and eager (a PTE table freed the moment its last entry goes). A second \
         workload drops each 2 MiB in two halves, so that no single call covers a whole table.",
        "VIRT 50 GB, RES 3.1 MB: VmPTE 102,640 kB before, 248 kB after; about 1% fewer page faults \
         per minute.",
    )
}

/// VmPTE at `mark` of a run (NaN where it did not run).
fn vmpte_at(r: Option<&ConfigResult>, mark: &str) -> f64 {
    r.map_or(f64::NAN, |r| mean(r, mark, counters::VMPTE_KB.name))
}

/// The VmPTE left after MADV_DONTNEED, per workload (whole, halves) and per
/// label: the figure and its chart.
fn left_chart(sec: &mut Section, size: &str, labels: &[&str], runs: [&[Option<&ConfigResult>]; 2]) {
    let at = vmpte_at;
    let cats: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
    // Per workload (whole, halves), per label: VmPTE after the drop, as
    // the table and the chart show it.
    let left: Vec<Vec<Figure>> = runs
        .iter()
        .map(|all| {
            all.iter()
                .map(|r| Figure::kib(at(*r, "dontneed")))
                .collect()
        })
        .collect();
    sec.figure("vmpte_left_after_dontneed", &left);
    let series = [format!("whole {size}"), "in halves".to_string()]
        .into_iter()
        .zip(&left)
        .enumerate()
        .map(|(s, (name, figs))| {
            let points = figs
                .iter()
                .enumerate()
                .map(|(i, f)| named(format!("vmpte_left_after_dontneed[{s}][{i}]"), f.clone()))
                .collect();
            (name, points)
        })
        .collect();
    sec.bars(
        "VmPTE left after MADV_DONTNEED, kernel and model (one run each; log scale, every bar labelled)",
        &ChartSpec::new(
            "Page-table memory (VmPTE) left after MADV_DONTNEED",
            "",
            "VmPTE (kB, log scale)",
        )
        .unit(Unit::Kilobytes)
        .y_scale(YScale::Log),
        &cats,
        series,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::plan::Op;

    /// The slides' case checks as a workload at 48 bits, and its pattern
    /// gives what the slides saw: 590.6 GB written, every 2 MiB of the
    /// 50 TiB holding a PTE table (VmPTE 107.4 GB, within 10% of 110 GB).
    #[test]
    fn the_slides_case_is_a_valid_workload_of_the_slides_size() {
        let w = workload::parse(&slides_toml("50TiB"), "slides", 48).unwrap();
        let mut per_4mib = 0u64;
        w.for_each_op(|_, op| {
            if let Op::Touch(t) = op {
                per_4mib += (4 << 20) / t.stride;
            }
        });
        assert_eq!(per_4mib, 11, "5.5 pages per 2 MiB");
        let size: u64 = 50 << 40;
        let written = size / (4 << 20) * per_4mib * 4096;
        assert!((written as f64 / 1e9 - 590.6).abs() < 0.1, "{written}");
        let vmpte = size / (2 << 20) * 4096;
        assert!(((vmpte as f64) / 110e9 - 1.0).abs() < 0.1, "{vmpte}");
    }

    /// The production case is the only one allowed past the default
    /// timeout: a mode takes minutes of CPU, more on a loaded host.
    #[test]
    fn only_the_production_case_may_run_for_minutes() {
        let o = StudyOptions {
            quick: false,
            production: true,
            trace: None,
        };
        let (plan, runs) = declared(o, declare);
        let slides = runs.slides_model.expect("declared with --production");
        let random = runs
            .slides_random_model
            .expect("declared with --production");
        assert_eq!(plan.experiments.len(), 6);
        for (i, x) in plan.experiments.iter().enumerate() {
            let long = x.options().timeout.as_secs() > 120;
            assert_eq!(
                long,
                slides == ModelRun::at(i) || random == ModelRun::at(i),
                "{}",
                x.what
            );
        }
        let quick = StudyOptions {
            quick: true,
            production: false,
            trace: None,
        };
        assert!(declared(quick, declare).1.slides_model.is_none());
    }

    /// The random case writes as many pages as the allocator process of
    /// issue 35 (151 M over 50 TiB, 5.76 per PTE table on average) at
    /// random pages of the whole mapping.
    #[test]
    fn the_random_case_writes_the_slides_pages_at_random() {
        let size: u64 = 50 << 40;
        let w = workload::parse(&slides_random_toml(size), "slides-random", 48).unwrap();
        let mut touches = Vec::new();
        w.for_each_op(|_, op| {
            if let Op::Touch(t) = op {
                touches.push(t.clone());
            }
        });
        assert_eq!(touches.len(), 1);
        let t = &touches[0];
        assert_eq!(t.pattern, workload::plan::Pattern::Random);
        assert_eq!((t.range.offset, t.range.len, t.stride), (0, size, 4096));
        assert!((t.count as f64 / 151e6 - 1.0).abs() < 0.01, "{}", t.count);
        let per_table = t.count as f64 / (size / (2 << 20)) as f64;
        assert!((5.7..5.8).contains(&per_table), "{per_table}");
    }
}
