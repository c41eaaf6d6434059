//! Question 3: why did THP make a threaded fault benchmark slower until PMD
//! tables got their own locks? The model runs threads faulting their own
//! regions under split PTE locks, split PMD locks and one lock, THP on and
//! off, and counts (contended) lock acquisitions.

use super::experiments::{Experiment, Results};
use super::read::{mean, summary};
use super::text::{count, count_figure, estimate, point, table, INTERVALS};
use super::{model, Section, StudyOptions};
use report::chart::{self, ChartSpec, Series};
use report::Unit;
use stats::Quantity;

/// Experiment indices, in declaration order.
const SCALING: usize = 0;

fn thp_scaling_toml(chunk: &str, threads: usize, rounds: usize) -> String {
    // Each thread faults its own 1 GiB region (one PMD table each), so that
    // PMD-level updates meet only on a lock the threads share: the one
    // page_table_lock, unless PMD tables have their own.
    format!(
        r#"name = "study-thp-fault-scaling"
[[thread]]
count = {threads}
op = [
  {{ mmap = "r{{tid}}", size = "1GiB", noreserve = true }},
  {{ madvise = "r{{tid}}", advice = "hugepage" }},
  {{ barrier = true }},
  {{ repeat = {rounds}, op = [
    {{ touch = "r{{tid}}", access = "write", len = "{chunk}" }},
    {{ madvise = "r{{tid}}", advice = "dontneed", len = "{chunk}" }},
  ] }},
  {{ barrier = true }},
  {{ munmap = "r{{tid}}" }},
]
"#
    )
}

/// Runs per configuration: the threads really race, so the contended
/// counts differ from run to run and need an interval (five runs at least).
const RUNS: usize = 5;

fn threads(o: StudyOptions) -> usize {
    o.pick(4, 8)
}

fn chunk(o: StudyOptions) -> &'static str {
    o.pick("64MiB", "256MiB")
}

/// The fault-scaling workload under the four locking and THP settings.
pub(super) fn experiments(o: StudyOptions) -> Vec<Experiment> {
    // Real threads: the contention counted here is the host's, found by
    // threads racing on the model's locks (the virtual-time executor's is
    // `virtual_contended`, with `predicted_ns`).
    let configs = [
        model("locking=split-pte,thp=never,executor=threads"),
        model("locking=split-pte,thp=always,executor=threads"),
        model("locking=split-pmd,thp=always,executor=threads"),
        model("locking=global,thp=always,executor=threads"),
    ];
    vec![Experiment::model(
        "thp-fault-scaling",
        thp_scaling_toml(chunk(o), threads(o), o.pick(4, 8)),
        &configs,
        RUNS,
    )]
}

/// The section from the results of [`experiments`].
pub(super) fn section(o: StudyOptions, r: &Results) -> Section {
    let mut sec = Section::new(
        "split-pmd",
        "Split PMD locks",
        "Why did THP make a threaded fault benchmark slower until PMD tables got their own locks?",
        "The model runs threads that each fault their own region in and drop it again (like the \
         benchmark of the split-PMD-lock patch) with split PTE locks only (PMD updates under the one page_table_lock, as before the \
         patch), with split PMD locks (Linux today) and with one lock for everything, with THP on and \
         off, on real threads, and counts lock acquisitions and contended acquisitions.",
        "36.5 s with THP off (24 M faults), 49.9 s with THP on (50 k faults, contention), 33.9 s with \
         THP on and split PMD locks.",
    );
    sec.method = format!(
        "{} Only the mechanism is reported: this section runs real threads to count the \
         host's contention, and predicted times come only from the virtual-time executor, which \
         this section does not use yet; the model's own wall-clock time is ptlab's speed, not \
         the modeled system's, so it is not shown. {INTERVALS}",
        sec.method
    );
    let (threads, size) = (threads(o), chunk(o));
    let labels = [
        "THP off, split PTE",
        "THP on, split PTE",
        "THP on, split PMD",
        "THP on, one lock",
    ];
    let r = r.model(SCALING);
    let contended: Vec<Option<stats::Summary>> = r
        .iter()
        .map(|c| summary(c, "end", counters::LOCK_CONTENDED.name, Quantity::Count))
        .collect();
    let text = |s: &Option<stats::Summary>| {
        s.as_ref()
            .map_or("n/a".to_string(), |s| estimate(s, Unit::Count))
    };
    let mut rows = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        let at = |counter: &str| count(mean(&r[i], "end", counter));
        rows.push(vec![
            l.to_string(),
            at(counters::MINOR_FAULTS.name),
            at(counters::LOCK_ACQUISITIONS.name),
            at(counters::LOCK_ACQUISITIONS_BY_LOCK[1]),
            at(counters::LOCK_ACQUISITIONS_BY_LOCK[2]),
            text(&contended[i]),
            text(&summary(
                &r[i],
                "end",
                counters::LOCK_CONTENDED_BY_LOCK[1],
                Quantity::Count,
            )),
        ]);
    }
    sec.tables.push(table(
        &format!(
            "Model: {threads} threads, each faulting {size} of its own 1 GiB region, repeatedly \
             (means of {RUNS} runs)"
        ),
        &[
            "configuration",
            "faults",
            "lock acquisitions",
            "page_table_lock acquisitions",
            "PMD-lock acquisitions",
            "contended acquisitions",
            "contended page_table_lock",
        ],
        rows,
    ));
    let faults = |i: usize| mean(&r[i], "end", counters::MINOR_FAULTS.name);
    sec.findings.push(format!(
        "THP cuts the faults from {} to {}. Contended lock acquisitions per run, with PMD \
         updates under the one page_table_lock: {}; with split PMD locks: {}; with one lock for \
         everything: {}. These are counts of the mechanism behind the seed's 49.9 s vs 33.9 s; this \
         section gives no time for them yet (it does not run in virtual time).",
        count(faults(0)),
        count(faults(1)),
        text(&contended[1]),
        text(&contended[2]),
        text(&contended[3])
    ));
    sec.figure(
        counters::MINOR_FAULTS.name,
        (0..4).map(|i| count_figure(faults(i))).collect::<Vec<_>>(),
    );
    sec.figure(counters::LOCK_CONTENDED.name, &contended);
    let cats: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
    sec.chart(
        &format!(
            "Contended lock acquisitions per run (model; mean of {RUNS} runs with its 95% interval)"
        ),
        chart::bar_chart(
            &ChartSpec::new(
                "Contended lock acquisitions per run, by locking scheme (model)",
                "configuration",
                "contended acquisitions per run",
            )
            .unit(Unit::Count),
            &cats,
            &[Series::new(
                "contended",
                (0..4)
                    .map(|i| {
                        point(
                            contended[i].as_ref(),
                            mean(&r[i], "end", counters::LOCK_CONTENDED.name),
                        )
                    })
                    .collect(),
            )],
        ),
    );
    sec
}
