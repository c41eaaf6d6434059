//! Question 2: what does a 64 KiB software base page (RISC-V Svnapot) buy
//! over 4 KiB pages with 64 KiB mTHP folios or 2 MiB THP, and what does it
//! cost in page-table memory? The model runs a dense and a sparse workload
//! under the four configurations.

use super::experiments::{declared, Experiment, ModelRun, Plan, Results};
use super::figure::{row, Figure};
use super::plot::named;
use super::read::{mean, per};
use super::text::{count, count_figure, kb, num, table};
use super::time::{self, Predicted};
use super::{model, Section, StudyOptions, Verdict};
use crate::config::RunConfig;
use crate::exec::ConfigResult;
use report::chart::{ChartSpec, YScale};
use report::Unit;

fn dense_toml(size: &str, count: u64) -> String {
    format!(
        r#"name = "study-dense"
[[thread]]
op = [
  {{ mmap = "heap", size = "{size}" }},
  {{ madvise = "heap", advice = "hugepage" }},
  {{ touch = "heap", access = "write" }},
  {{ mark = "touched" }},
  {{ touch = "heap", access = "read", pattern = "random", count = {count}, seed = 3 }},
  {{ mark = "random" }},
  {{ munmap = "heap" }},
]
"#
    )
}

fn sparse_toml(size: &str) -> String {
    format!(
        r#"name = "study-sparse"
[[thread]]
op = [
  {{ mmap = "arena", size = "{size}", noreserve = true }},
  {{ touch = "arena", access = "write", stride = "32MiB" }},
  {{ mark = "touched" }},
  {{ munmap = "arena" }},
]
"#
    )
}

/// 4 KiB pages, 64 KiB mTHP, 2 MiB THP, the 64 KiB base page, all with the
/// TLB of the Neoverse N1 (the RFC's Ampere Altra), which caches 64 KiB
/// contiguous runs as single entries, as an Svnapot core would.
fn configurations() -> [RunConfig; 4] {
    [
        model("geometry=riscv-sv39,thp=never,tlb=neoverse-n1"),
        model("geometry=riscv-sv39,thp=never,mthp=64k=always,tlb=neoverse-n1"),
        model("geometry=riscv-sv39,thp=always,tlb=neoverse-n1"),
        model("geometry=riscv-sv39-64k,thp=never,tlb=neoverse-n1"),
    ]
}

/// Larger than the 64 KiB entries' reach (1280 x 64 KiB = 80 MiB).
fn dense_size(o: StudyOptions) -> &'static str {
    o.pick("256MiB", "1GiB")
}

fn sparse_size(o: StudyOptions) -> &'static str {
    o.pick("4GiB", "32GiB")
}

/// The dense and the sparse workload under every configuration.
fn declare(o: StudyOptions, p: &mut Plan) -> Runs {
    let configs = configurations();
    Runs {
        dense: p.model(Experiment::model(
            "dense 4K/mTHP/THP/64K",
            dense_toml(dense_size(o), o.pick(200_000, 1_000_000)),
            &configs,
            1,
        )),
        sparse: p.model(Experiment::model(
            "sparse 4K/64K",
            sparse_toml(sparse_size(o)),
            &configs,
            1,
        )),
    }
}

/// The experiments' handles.
struct Runs {
    dense: ModelRun,
    sparse: ModelRun,
}

/// Sv39 with 4 KiB and with a 64 KiB base page, for the user's trace.
const YOURS: super::yours::Pair = super::yours::Pair {
    what: "RISC-V 64 KiB base page",
    base: "geometry=riscv-sv39",
    other: "geometry=riscv-sv39-64k",
    change: "a 64 KiB base page (Sv39)",
};

/// [`declare`], then the user's trace under [`YOURS`] (`study --trace`).
fn with_yours(o: StudyOptions, p: &mut Plan) -> (Runs, Option<ModelRun>) {
    (declare(o, p), super::yours::declare(o, p, &YOURS))
}

pub(super) fn plan(o: StudyOptions) -> Plan {
    declared(o, with_yours).0
}

/// The section from the results of [`declare`]'s experiments.
pub(super) fn section(o: StudyOptions, r: &Results) -> Section {
    let mut sec = header();
    let (runs, mine) = declared(o, with_yours).1;
    let m = Measured::read(r, &runs);
    let (size, sparse_size) = (dense_size(o), sparse_size(o));
    model_table(&mut sec, &m, size, sparse_size);
    findings(&mut sec, &m, size, sparse_size);
    verdict(&mut sec, &m, size);
    charts(&mut sec, &m, size, sparse_size);
    sec.findings
        .extend(super::yours::finding(o, r, mine, &YOURS));
    sec
}

const LABELS: [&str; 4] = ["4K pages", "4K + 64K mTHP", "4K + 2M THP", "64K base page"];

/// The section's title, question, method and the seed's figure.
fn header() -> Section {
    Section::new(
        "RISC-V: a 64 KiB base page vs 4 KiB with mTHP or THP",
        "What does a 64 KiB software base page (Svnapot) buy over 4 KiB pages with 64 KiB mTHP folios \
         or 2 MiB THP, and what does it cost in page-table memory?",
        "The model runs Sv39 with 4 KiB pages (no huge pages), with 64 KiB mTHP folios (Svnapot runs \
         of 16 PTEs), with 2 MiB THP, and the RFC's 64 KiB software page (16 hardware PTEs per entry, \
         64 KiB table pages). A dense workload faults a region in and then reads it at random; a \
         sparse one writes one page per 32 MiB (the span of one 64 KiB PTE table), as sparse arenas and \
         guard-page-separated allocations do. Times are predicted in virtual time from the cost \
         file. The break-evens are computed from these runs: in fault time, a 64 KiB fault costs \
         as much as this many 4 KiB faults (predicted time per fault of the dense runs), so with \
         fewer 4 KiB pages touched per 64 KiB the large page costs more than it saves; in table \
         memory, a 64 KiB table covers 32 MiB and a 4 KiB one 2 MiB, so the sparse run's VmPTE \
         ratio says how many 2 MiB spans per 32 MiB must be touched for 4 KiB tables to cost as \
         much.",
        "ARM 64K kernel vs 4K: Redis +250%, MySQL +16.9%, lmbench 16 MB mmap latency -76%, SPEC +4.17% \
         even against 4K with THP and contiguous PTEs; cost: a page table that needs 4 KiB takes 64 KiB.",
    )
}

/// TLB misses per 1000 random reads: the random phase's misses over its
/// accesses, the fault-in phase's subtracted.
fn miss(r: &ConfigResult) -> f64 {
    1000.0
        * per(
            mean(r, "random", counters::TLB_MISSES.name)
                - mean(r, "touched", counters::TLB_MISSES.name),
            mean(r, "random", counters::ACCESSES.name)
                - mean(r, "touched", counters::ACCESSES.name),
        )
}

/// What the section reads from the runs, by configuration (in [`LABELS`]'
/// order).
struct Measured<'a> {
    dense: &'a [ConfigResult],
    sparse: &'a [ConfigResult],
    fault_in: Vec<Predicted>,
    reads: Vec<Predicted>,
}

impl<'a> Measured<'a> {
    fn read(r: &'a Results, runs: &Runs) -> Measured<'a> {
        let dense = r.model(runs.dense);
        let sparse = r.model(runs.sparse);
        let fault_in = dense.iter().map(|r| time::at(r, "touched")).collect();
        let reads = dense
            .iter()
            .map(|r| time::between(r, "touched", "random"))
            .collect();
        Measured {
            dense,
            sparse,
            fault_in,
            reads,
        }
    }

    /// The dense run's faults under configuration `i`.
    fn faults(&self, i: usize) -> f64 {
        mean(&self.dense[i], "touched", counters::MINOR_FAULTS.name)
    }

    /// The sparse run's VmPTE under configuration `i`.
    fn sparse_vmpte(&self, i: usize) -> f64 {
        mean(&self.sparse[i], "touched", counters::VMPTE_KB.name)
    }
}

fn model_table(sec: &mut Section, m: &Measured, size: &str, sparse_size: &str) {
    let (dense, sparse) = (m.dense, m.sparse);
    let mut rows = Vec::new();
    for (i, l) in LABELS.iter().enumerate() {
        rows.push(row![
            l.to_string(),
            Figure::count(mean(&dense[i], "touched", counters::MINOR_FAULTS.name)),
            Figure::predicted(&m.fault_in[i]),
            Figure::predicted(&m.reads[i]),
            Figure::kib(mean(&dense[i], "touched", counters::VMPTE_KB.name)),
            Figure::plain(miss(&dense[i])),
            Figure::kib(mean(&sparse[i], "touched", counters::VMPTE_KB.name)),
            Figure::kib(mean(&sparse[i], "touched", counters::RSS_ANON_KB.name)),
        ]);
    }
    sec.tables.push(table(
        &format!("Model: dense {size} and sparse {sparse_size} (one write per 32 MiB)"),
        &[
            "configuration",
            "faults (dense)",
            "fault-in time (dense, predicted)",
            "random reads (predicted)",
            "VmPTE (dense)",
            "TLB misses per 1000 random reads",
            "VmPTE (sparse)",
            "RssAnon (sparse)",
        ],
        rows,
    ));
}

fn findings(sec: &mut Section, m: &Measured, size: &str, sparse_size: &str) {
    let (dense, sparse) = (m.dense, m.sparse);
    let f = |i: usize| m.faults(i);
    sec.findings.push(format!(
        "Faulting {size} densely takes {} faults with 4 KiB pages, {} with 64 KiB mTHP, {} with \
         2 MiB THP and {} with a 64 KiB base page (mTHP's count, without needing free 64 KiB \
         blocks).",
        count(f(0)),
        count(f(1)),
        count(f(2)),
        count(f(3))
    ));
    sec.findings.push(format!(
        "Random reads miss the TLB {} times per 1000 accesses with 4 KiB pages, {} with 64 KiB \
         mTHP, {} with 2 MiB THP and {} with the 64 KiB page (TLB preset {}, whose entries hold a \
         64 KiB NAPOT run).",
        num(miss(&dense[0])),
        num(miss(&dense[1])),
        num(miss(&dense[2])),
        num(miss(&dense[3])),
        crate::exec::model_config(&dense[0].config)
            .map(|c| c.tlb)
            .unwrap_or_default()
    ));
    let (s4, s64) = (m.sparse_vmpte(0), m.sparse_vmpte(3));
    sec.findings.push(format!(
        "On a sparse {sparse_size} arena the 64 KiB tables take {} against {} with 4 KiB tables \
         ({:.1} times), and each touched page makes 64 KiB resident ({} vs {}).",
        kb(s64),
        kb(s4),
        s64 / s4,
        kb(mean(&sparse[3], "touched", counters::RSS_ANON_KB.name)),
        kb(mean(&sparse[0], "touched", counters::RSS_ANON_KB.name))
    ));
}

/// The verdict, with the break-evens computed from the model's own figures
/// (see the method).
fn verdict(sec: &mut Section, m: &Measured, size: &str) {
    let (fault_in, reads) = (&m.fault_in, &m.reads);
    let (s4, s64) = (m.sparse_vmpte(0), m.sparse_vmpte(3));
    let per_fault = |i: usize| fault_in[i].ns / m.faults(i);
    let pages_break_even = per_fault(3) / per_fault(0);
    let table_break_even_bytes = 32.0 * 1048576.0 * s4 / s64;
    sec.verdict = Verdict::default()
        .fig(
            "fault_in_change",
            Figure::change(&fault_in[0], &fault_in[3]),
        )
        .fig("fault_in_64k", Figure::ns(fault_in[3].ns))
        .fig("fault_in_4k", Figure::ns(fault_in[0].ns))
        .fig("reads_change", Figure::change(&reads[0], &reads[3]))
        .fig("pages_break_even", Figure::plain(pages_break_even))
        .fig(
            "table_break_even",
            Figure::new(table_break_even_bytes, super::figure::FigUnit::Bytes),
        )
        .say(&format!(
            "A 64 KiB base page faults {size} in {{fault_in_64k}} against {{fault_in_4k}} with \
             4 KiB pages ({{fault_in_change}}) and changes random-read time by {{reads_change}}. \
             It costs more fault time than it saves below {{pages_break_even}} touched 4 KiB \
             pages per 64 KiB, and more table memory when touches lie over \
             {{table_break_even}} apart."
        ));
}

/// The section's named figures and its three bar charts.
fn charts(sec: &mut Section, m: &Measured, size: &str, sparse_size: &str) {
    let (dense, sparse) = (m.dense, m.sparse);
    let f = |i: usize| m.faults(i);
    let (s4, s64) = (m.sparse_vmpte(0), m.sparse_vmpte(3));
    sec.figure(
        "dense_faults",
        (0..4).map(|i| count_figure(f(i))).collect::<Vec<_>>(),
    );
    sec.figure("sparse_vmpte_kb", [count_figure(s4), count_figure(s64)]);
    sec.figure(
        "tlb_misses_per_1000_reads",
        (0..4).map(|i| miss(&dense[i])).collect::<Vec<_>>(),
    );
    let cats: Vec<String> = LABELS.iter().map(|s| s.to_string()).collect();
    sec.bars(
        &format!("Page faults to fault the dense {size} region in (model, exact counts of one run; log scale)"),
        &ChartSpec::new(
            format!("Page faults to fault {size} in, by page size (model)"),
            "configuration",
            "page faults (log scale)",
        )
        .unit(Unit::Count)
        .y_scale(YScale::Log),
        &cats,
        vec![(
            "faults".into(),
            (0..4)
                .map(|i| named(format!("dense_faults[{i}]"), Figure::count(f(i))))
                .collect(),
        )],
    );
    // Every configuration's sparse VmPTE (sparse_vmpte_kb keeps 4K's and
    // 64K's, as before).
    let sparse_vmpte: Vec<Figure> = (0..4)
        .map(|i| Figure::kib(mean(&sparse[i], "touched", counters::VMPTE_KB.name)))
        .collect();
    sec.figure("sparse_vmpte_by_configuration", &sparse_vmpte);
    sec.bars(
        &format!("Page-table memory of the sparse {sparse_size} arena (model, one run; log scale)"),
        &ChartSpec::new(
            format!("VmPTE of a sparse {sparse_size} arena, one write per 32 MiB (model)"),
            "configuration",
            "VmPTE (kB, log scale)",
        )
        .unit(Unit::Kilobytes)
        .y_scale(YScale::Log),
        &cats,
        vec![(
            "VmPTE".into(),
            sparse_vmpte
                .into_iter()
                .enumerate()
                .map(|(i, f)| named(format!("sparse_vmpte_by_configuration[{i}]"), f))
                .collect(),
        )],
    );
    sec.bars(
        "TLB misses per 1,000 random reads of the dense region (model, one run; every bar labelled, \
         so THP's 0 shows)",
        &ChartSpec::new(
            format!("TLB misses per 1,000 random reads over {size} (model)"),
            "configuration",
            "TLB misses per 1,000 reads",
        ),
        &cats,
        vec![(
            "misses".into(),
            (0..4)
                .map(|i| {
                    named(
                        format!("tlb_misses_per_1000_reads[{i}]"),
                        Figure::plain(miss(&dense[i])),
                    )
                })
                .collect(),
        )],
    );
}
