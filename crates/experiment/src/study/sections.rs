//! The five sections of the study, one per seed question. Each generates
//! its workloads (TOML text, the same format users write), runs them on the
//! model and, where the question is about this machine, on its kernel.

use super::{model, Lab, Section, StudyOptions, TableData};
use crate::config::RunConfig;
use crate::exec::{ConfigResult, ExecError};
use report::chart::{self, ChartSpec, Estimate, Series};
use stats::Summary;

// ---------------------------------------------------------------------
// Reading results.

/// The first mark called `mark` of a result's runs.
fn mark_of<'a>(r: &'a ConfigResult, mark: &str) -> Option<&'a crate::aggregate::MarkStats> {
    r.aggregate.marks.iter().find(|m| m.name == mark)
}

/// Mean of `counter` at `mark` (NaN if absent).
fn mean(r: &ConfigResult, mark: &str, counter: &str) -> f64 {
    mark_of(r, mark)
        .and_then(|m| m.counters.get(counter))
        .map_or(f64::NAN, |c| c.mean())
}

/// Summary of `counter` at `mark` over the repeats.
fn summary(r: &ConfigResult, mark: &str, counter: &str) -> Option<Summary> {
    mark_of(r, mark)?.counters.get(counter)?.stats.clone()
}

/// `a / b`, NaN when `b` is 0.
fn per(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        f64::NAN
    } else {
        a / b
    }
}

/// "105.6 ns (95% CI 105.5 to 105.7, n = 10)".
fn with_ci(s: &Summary, unit: &str) -> String {
    match &s.ci95 {
        Some(ci) => format!(
            "{:.1} {unit} (95% CI {:.1} to {:.1}, n = {})",
            s.mean, ci.low, ci.high, s.n
        ),
        None => format!("{:.1} {unit} (n = {})", s.mean, s.n),
    }
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v.abs() >= 100.0 {
        report::group_thousands(v.round() as i64)
    } else {
        format!("{v:.2}")
    }
}

fn table(title: &str, headers: &[&str], rows: Vec<Vec<String>>) -> TableData {
    TableData {
        title: title.into(),
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

fn exact(v: f64) -> Estimate {
    Estimate::exact(if v.is_finite() { v } else { 0.0 })
}

/// A kernel result, or the reason it could not be had (which becomes a note).
fn kernel_try(
    lab: &mut Lab,
    sec: &mut Section,
    what: &str,
    toml: &str,
    repeat: usize,
) -> Result<Option<ConfigResult>, ExecError> {
    match lab.measure(what, toml, &[RunConfig::kernel()], repeat) {
        Ok(mut r) => Ok(r.pop()),
        Err(e @ ExecError::Model(_)) => Err(e),
        Err(e) => {
            sec.notes
                .push(format!("the kernel part \"{what}\" was not run here: {e}"));
            Ok(None)
        }
    }
}

// ---------------------------------------------------------------------
// Workloads.

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

// ---------------------------------------------------------------------
// 1. 4-level vs 5-level.

pub(super) fn five_level(lab: &mut Lab) -> Result<Section, ExecError> {
    let o = lab.opts;
    let mut sec = Section::new(
        "five-level",
        "4-level vs 5-level page tables",
        "Does a fifth page-table level cost anything: per TLB miss, per fault, and on this machine?",
        "The model runs the same workloads with the x86-64 4-level and 5-level geometries: a page-fault \
         loop (lat_pagefault), ebizzy-like threads that map, fill, search and unmap chunks, and random \
         updates (GUPS). It counts the memory references of every hardware walk, with this host's \
         walk caches and with none. The kernel of this machine runs the page-fault loop repeatedly \
         to give its fault latency with a 95% confidence interval.",
        "lat_pagefault minor fault 105.64 ns (4-level) vs 105.88 ns (5-level), 30 runs, p = 1.5e-6; \
         ebizzy throughput diverges from 4 threads; handle_mm_fault mean 630 ns vs 640 ns.",
    );
    let size = o.pick("64MiB", "256MiB");
    let geos = [
        model("geometry=x86-64-4l"),
        model("geometry=x86-64-5l"),
        model("geometry=x86-64-4l,tlb=none"),
        model("geometry=x86-64-5l,tlb=none"),
    ];
    let pf = lab.measure("pagefault 4L/5L", &pagefault_toml(size), &geos, 1)?;
    let gups = lab.measure(
        "gups 4L/5L",
        &gups_toml(o.pick("128MiB", "512MiB"), o.pick(200_000, 1_000_000)),
        &geos,
        1,
    )?;
    let refs =
        |r: &ConfigResult, mark: &str| per(mean(r, mark, "walk_refs"), mean(r, mark, "walks"));
    let gups_refs = |r: &ConfigResult| {
        per(
            mean(r, "updated", "walk_refs") - mean(r, "filled", "walk_refs"),
            mean(r, "updated", "walks") - mean(r, "filled", "walks"),
        )
    };
    let gups_miss = |r: &ConfigResult| {
        1000.0
            * per(
                mean(r, "updated", "tlb_misses") - mean(r, "filled", "tlb_misses"),
                mean(r, "updated", "accesses") - mean(r, "filled", "accesses"),
            )
    };
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
        rows.push(vec![
            label.to_string(),
            num(refs(&pf[i], "touched")),
            num(gups_refs(&gups[i])),
            num(gups_miss(&gups[i])),
            num(mean(&pf[i], "touched", "minor_faults")),
            num(mean(&pf[i], "touched", "vmpte_kb")),
        ]);
    }
    sec.tables.push(table(
        "Model: memory references per hardware walk",
        &[
            "geometry",
            "refs/walk, page faults",
            "refs/walk, GUPS",
            "TLB misses per 1000 GUPS accesses",
            "minor faults",
            "VmPTE (kB)",
        ],
        rows,
    ));
    let (c4, c5) = (refs(&pf[2], "touched"), refs(&pf[3], "touched"));
    let (w4, w5) = (refs(&pf[0], "touched"), refs(&pf[1], "touched"));
    let (g4, g5) = (gups_refs(&gups[0]), gups_refs(&gups[1]));
    sec.findings.push(format!(
        "Without walk caches every 5-level walk reads one entry more: {} vs {} references per walk \
         ({:+.0}%); with this host's walk caches the page-fault loop reads {} vs {} and random \
         updates {} vs {} ({:+.1}%), because the upper levels stay cached.",
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
    sec.chart(
        "Memory references per hardware walk (model)",
        chart::bar_chart(
            &ChartSpec::new(
                "References per walk, 4-level vs 5-level",
                "workload",
                "memory references per walk",
            ),
            &[
                "page faults".into(),
                "GUPS".into(),
                "page faults, no walk cache".into(),
            ],
            &[
                Series::new("4-level", vec![exact(w4), exact(g4), exact(c4)]),
                Series::new("5-level", vec![exact(w5), exact(g5), exact(c5)]),
            ],
        ),
    );

    // ebizzy: references per 1000 accesses as threads grow.
    let threads: Vec<usize> = o.pick(vec![1, 2, 4], vec![1, 2, 4, 8]);
    let iters = o.pick(20, 60);
    let mut series4 = Vec::new();
    let mut series5 = Vec::new();
    let mut rows = Vec::new();
    for &t in &threads {
        let r = lab.measure(
            &format!("ebizzy {t} threads"),
            &ebizzy_toml(t, iters),
            &geos[..2],
            1,
        )?;
        let k = |r: &ConfigResult| {
            1000.0 * per(mean(r, "end", "walk_refs"), mean(r, "end", "accesses"))
        };
        let (a, b) = (k(&r[0]), k(&r[1]));
        rows.push(vec![
            t.to_string(),
            num(a),
            num(b),
            num(mean(&r[0], "end", "ipis")),
            num(mean(&r[0], "end", "minor_faults")),
        ]);
        series4.push((t as f64, exact(a)));
        series5.push((t as f64, exact(b)));
    }
    sec.tables.push(table(
        "Model: ebizzy-like threads, walk references per 1000 accesses",
        &["threads", "4-level", "5-level", "IPIs (4-level)", "faults"],
        rows,
    ));
    if let (Some(a), Some(b)) = (series4.last(), series5.last()) {
        sec.findings.push(format!(
            "ebizzy-like churn at {} threads costs {} walk references per 1000 accesses with 5 levels \
             vs {} with 4 ({:+.1}%, one run each; how the threads interleave moves these counts from \
             run to run, so only a difference larger than the table's spread across thread counts \
             means something).",
            a.0,
            num(b.1.value),
            num(a.1.value),
            100.0 * (b.1.value / a.1.value - 1.0)
        ));
    }
    sec.chart(
        "ebizzy-like threads: walk references per 1000 accesses (model)",
        chart::line_chart(
            &ChartSpec::new(
                "ebizzy: walk cost vs threads",
                "threads",
                "walk references per 1000 accesses",
            )
            .from_zero(),
            &[
                Series::new("4-level", series4),
                Series::new("5-level", series5),
            ],
        ),
    );

    // This machine.
    let fp = host::Fingerprint::read();
    let levels = if fp.la57 == Some(true) { 5 } else { 4 };
    sec.figure("host_la57", fp.la57);
    let k = kernel_try(
        lab,
        &mut sec,
        "pagefault on the kernel",
        &pagefault_toml(size),
        o.pick(3, 10),
    )?;
    if let Some(k) = k {
        if let Some(s) = summary(&k, "touched", "ns_per_fault") {
            sec.findings.push(format!(
                "This machine walks {levels} levels (la57 {}; kernel {}): a minor fault on fresh anonymous \
                 memory costs {}. The seed measured 105.64 ns (4-level) and 105.88 ns (5-level) with \
                 lat_pagefault on a file in the page cache, on bare metal.",
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
                with_ci(&s, "ns")
            ));
            sec.figure("kernel_ns_per_fault", &s);
            let model_ns = summary(&pf[0], "touched", "ns_per_fault");
            if let Some(m) = model_ns {
                sec.figure("model_ns_per_fault", &m);
            }
        }
    }
    Ok(sec)
}

// ---------------------------------------------------------------------
// 2. RISC-V 64 KiB base page vs 4 KiB with mTHP or THP.

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

pub(super) fn riscv_64k(lab: &mut Lab) -> Result<Section, ExecError> {
    let o = lab.opts;
    let mut sec = Section::new(
        "riscv-64k",
        "RISC-V: a 64 KiB base page vs 4 KiB with mTHP or THP",
        "What does a 64 KiB software base page (Svnapot) buy over 4 KiB pages with 64 KiB mTHP folios \
         or 2 MiB THP, and what does it cost in page-table memory?",
        "The model runs Sv39 with 4 KiB pages (no huge pages), with 64 KiB mTHP folios (Svnapot runs \
         of 16 PTEs), with 2 MiB THP, and the RFC's 64 KiB software page (16 hardware PTEs per entry, \
         64 KiB table pages). A dense workload faults a region in and then reads it at random; a \
         sparse one writes one page per 32 MiB (the span of one 64 KiB PTE table), as sparse arenas and \
         guard-page-separated allocations do.",
        "ARM 64K kernel vs 4K: Redis +250%, MySQL +16.9%, lmbench 16 MB mmap latency -76%, SPEC +4.17% \
         even against 4K with THP and contiguous PTEs; cost: a page table that needs 4 KiB takes 64 KiB.",
    );
    let labels = ["4K pages", "4K + 64K mTHP", "4K + 2M THP", "64K base page"];
    // The TLB of the Neoverse N1 (the RFC's Ampere Altra), which caches
    // 64 KiB contiguous runs as single entries, as an Svnapot core would.
    let configs = [
        model("geometry=riscv-sv39,thp=never,tlb=neoverse-n1"),
        model("geometry=riscv-sv39,thp=never,mthp=64k=always,tlb=neoverse-n1"),
        model("geometry=riscv-sv39,thp=always,tlb=neoverse-n1"),
        model("geometry=riscv-sv39-64k,thp=never,tlb=neoverse-n1"),
    ];
    // Larger than the 64 KiB entries' reach (1280 x 64 KiB = 80 MiB).
    let size = o.pick("256MiB", "1GiB");
    let dense = lab.measure(
        "dense 4K/mTHP/THP/64K",
        &dense_toml(size, o.pick(200_000, 1_000_000)),
        &configs,
        1,
    )?;
    let sparse_size = o.pick("4GiB", "32GiB");
    let sparse = lab.measure("sparse 4K/64K", &sparse_toml(sparse_size), &configs, 1)?;
    let miss = |r: &ConfigResult| {
        1000.0
            * per(
                mean(r, "random", "tlb_misses") - mean(r, "touched", "tlb_misses"),
                mean(r, "random", "accesses") - mean(r, "touched", "accesses"),
            )
    };
    let mut rows = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        rows.push(vec![
            l.to_string(),
            num(mean(&dense[i], "touched", "minor_faults")),
            num(mean(&dense[i], "touched", "vmpte_kb")),
            num(miss(&dense[i])),
            num(mean(&sparse[i], "touched", "vmpte_kb")),
            num(mean(&sparse[i], "touched", "rss_anon_kb")),
        ]);
    }
    sec.tables.push(table(
        &format!("Model: dense {size} and sparse {sparse_size} (one write per 32 MiB)"),
        &[
            "configuration",
            "faults (dense)",
            "VmPTE kB (dense)",
            "TLB misses per 1000 random reads",
            "VmPTE kB (sparse)",
            "RssAnon kB (sparse)",
        ],
        rows,
    ));
    let f = |i: usize| mean(&dense[i], "touched", "minor_faults");
    sec.findings.push(format!(
        "Faulting {size} densely takes {} faults with 4 KiB pages, {} with 64 KiB mTHP, {} with 2 MiB THP \
         and {} with a 64 KiB base page: the 64 KiB page gives mTHP's fault count without needing \
         free 64 KiB blocks, and THP does 32 times better still where 2 MiB is available.",
        num(f(0)),
        num(f(1)),
        num(f(2)),
        num(f(3))
    ));
    sec.findings.push(format!(
        "Random reads over the region miss the TLB {} times per 1000 accesses with 4 KiB pages, {} with \
         64 KiB mTHP, {} with 2 MiB THP and {} with the 64 KiB page (model TLB preset {}, whose \
         entries hold a whole 64 KiB NAPOT run).",
        num(miss(&dense[0])),
        num(miss(&dense[1])),
        num(miss(&dense[2])),
        num(miss(&dense[3])),
        crate::exec::model_config(&configs[0]).map(|c| c.tlb).unwrap_or_default()
    ));
    let (s4, s64) = (
        mean(&sparse[0], "touched", "vmpte_kb"),
        mean(&sparse[3], "touched", "vmpte_kb"),
    );
    sec.findings.push(format!(
        "The cost the RFC's critics named: on a sparse {sparse_size} arena the 64 KiB tables take {} kB \
         against {} kB with 4 KiB tables ({:.1} times), and each touched page makes 64 KiB resident \
         ({} kB vs {} kB).",
        num(s64),
        num(s4),
        s64 / s4,
        num(mean(&sparse[3], "touched", "rss_anon_kb")),
        num(mean(&sparse[0], "touched", "rss_anon_kb"))
    ));
    sec.figure("dense_faults", (0..4).map(f).collect::<Vec<_>>());
    sec.figure("sparse_vmpte_kb", [s4, s64]);
    let cats: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
    sec.chart(
        "Page faults to fault the dense region in (model)",
        chart::bar_chart(
            &ChartSpec::new("Faults, dense region", "configuration", "page faults"),
            &cats,
            &[Series::new("faults", (0..4).map(|i| exact(f(i))).collect())],
        ),
    );
    sec.chart(
        "Page-table memory of the sparse arena (model)",
        chart::bar_chart(
            &ChartSpec::new(
                "Page tables of a sparse arena",
                "configuration",
                "VmPTE (kB)",
            ),
            &cats,
            &[Series::new(
                "VmPTE",
                (0..4)
                    .map(|i| exact(mean(&sparse[i], "touched", "vmpte_kb")))
                    .collect(),
            )],
        ),
    );
    sec.chart(
        "TLB misses per 1000 random reads (model)",
        chart::bar_chart(
            &ChartSpec::new("TLB reach", "configuration", "TLB misses per 1000 accesses"),
            &cats,
            &[Series::new(
                "misses",
                (0..4).map(|i| exact(miss(&dense[i]))).collect(),
            )],
        ),
    );
    Ok(sec)
}

// ---------------------------------------------------------------------
// 3. Split PMD locks.

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

pub(super) fn split_pmd(lab: &mut Lab) -> Result<Section, ExecError> {
    let o = lab.opts;
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
    let threads = o.pick(4, 8);
    let labels = [
        "THP off, split PTE",
        "THP on, split PTE",
        "THP on, split PMD",
        "THP on, one lock",
    ];
    let configs = [
        model("locking=split-pte,thp=never"),
        model("locking=split-pte,thp=always"),
        model("locking=split-pmd,thp=always"),
        model("locking=global,thp=always"),
    ];
    let size = o.pick("64MiB", "256MiB");
    let r = lab.measure(
        "thp-fault-scaling",
        &thp_scaling_toml(size, threads, o.pick(4, 8)),
        &configs,
        o.pick(2, 3),
    )?;
    let mut rows = Vec::new();
    let mut contended = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        let c = mean(&r[i], "end", "lock_contended");
        contended.push(c);
        rows.push(vec![
            l.to_string(),
            num(mean(&r[i], "end", "minor_faults")),
            num(mean(&r[i], "end", "lock_acquisitions")),
            num(c),
            num(mean(&r[i], "end", "lock_contended.page_table_lock")),
            summary(&r[i], "end", "elapsed_ns")
                .map(|s| {
                    with_ci(
                        &Summary {
                            mean: s.mean / 1e6,
                            ci95: s.ci95.map(|c| stats::Interval {
                                low: c.low / 1e6,
                                high: c.high / 1e6,
                            }),
                            ..s
                        },
                        "ms",
                    )
                })
                .unwrap_or_default(),
        ]);
    }
    sec.tables.push(table(
        &format!(
            "Model: {threads} threads, each faulting {size} of its own 1 GiB region, repeatedly"
        ),
        &[
            "configuration",
            "faults",
            "lock acquisitions",
            "contended",
            "contended page_table_lock",
            "model time",
        ],
        rows,
    ));
    sec.findings.push(format!(
        "THP cuts the faults from {} to {}, but with PMD updates under the one page_table_lock {} \
         acquisitions were contended; with split PMD locks {} were ({} with one lock for everything). \
         The model's wall time is its own, not a machine's; the contended count is the mechanism \
         behind the seed's 49.9 s vs 33.9 s.",
        num(mean(&r[0], "end", "minor_faults")),
        num(mean(&r[1], "end", "minor_faults")),
        num(contended[1]),
        num(contended[2]),
        num(contended[3])
    ));
    sec.figure("lock_contended", &contended);
    let cats: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
    sec.chart(
        "Contended lock acquisitions (model)",
        chart::bar_chart(
            &ChartSpec::new("Lock contention", "configuration", "contended acquisitions"),
            &cats,
            &[Series::new(
                "contended",
                (0..4)
                    .map(|i| {
                        summary(&r[i], "end", "lock_contended")
                            .map_or(exact(contended[i]), |s| Estimate::from_summary(&s))
                    })
                    .collect(),
            )],
        ),
    );
    Ok(sec)
}

// ---------------------------------------------------------------------
// 4. Empty PTE tables.

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

pub(super) fn empty_tables(lab: &mut Lab) -> Result<Section, ExecError> {
    let o = lab.opts;
    let mut sec = Section::new(
        "empty-tables",
        "Empty PTE tables",
        "How much memory do empty PTE tables hold after MADV_DONTNEED, and what do Linux's PT_RECLAIM \
         and the full refcounting design of the slides give back?",
        "One write per 2 MiB over a large sparse mapping, then MADV_DONTNEED over all of it (the \
         slides' functional test), on this machine's kernel and on the model with reclaim off, on \
         (Linux since 6.14) and eager (a PTE table freed the moment its last entry goes). A second \
         workload drops each 2 MiB in two halves, so that no single call covers a whole table.",
        "VIRT 50 GB, RES 3.1 MB: VmPTE 102,640 kB before, 248 kB after; about 1% fewer page faults \
         per minute.",
    );
    let size = o.pick("8GiB", "50GiB");
    let labels = [
        "kernel",
        "model, reclaim off",
        "model, reclaim on",
        "model, eager",
    ];
    let models = [
        model("reclaim=off"),
        model("reclaim=on"),
        model("reclaim=eager"),
    ];
    let whole_m = lab.measure("dontneed-reclaim model", &reclaim_toml(size), &models, 1)?;
    let whole_k = kernel_try(
        lab,
        &mut sec,
        "dontneed-reclaim kernel",
        &reclaim_toml(size),
        1,
    )?;
    let tables = o.pick(256, 1024);
    let halves_m = lab.measure("dontneed halves model", &halves_toml(tables), &models, 1)?;
    let halves_k = kernel_try(
        lab,
        &mut sec,
        "dontneed halves kernel",
        &halves_toml(tables),
        1,
    )?;
    let all_whole: Vec<Option<&ConfigResult>> = std::iter::once(whole_k.as_ref())
        .chain(whole_m.iter().map(Some))
        .collect();
    let all_halves: Vec<Option<&ConfigResult>> = std::iter::once(halves_k.as_ref())
        .chain(halves_m.iter().map(Some))
        .collect();
    let at = |r: Option<&ConfigResult>, m: &str| r.map_or(f64::NAN, |r| mean(r, m, "vmpte_kb"));
    let mut rows = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        rows.push(vec![
            l.to_string(),
            num(at(all_whole[i], "touched")),
            num(at(all_whole[i], "dontneed")),
            num(at(all_halves[i], "touched")),
            num(at(all_halves[i], "dontneed")),
        ]);
    }
    sec.tables.push(table(
        "VmPTE (kB) before and after MADV_DONTNEED",
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
        "After one write per 2 MiB over {size}, VmPTE is {} kB on this kernel and {} kB on the model; \
         MADV_DONTNEED over all of it brings the kernel to {} kB and the model with reclaim on to {} kB \
         (off: {} kB stay). The slides: 102,640 kB to 248 kB.",
        num(k.0),
        num(on.0),
        num(k.1),
        num(on.1),
        num(off)
    ));
    let hk = at(all_halves[0], "dontneed");
    let hon = at(all_halves[2], "dontneed");
    let hea = at(all_halves[3], "dontneed");
    sec.findings.push(format!(
        "Dropping each 2 MiB in two halves defeats Linux's reclaim: {} kB of tables stay on the kernel \
         and {} kB on the model with reclaim on, while the eager design keeps {} kB; it frees what \
         Linux leaves behind, {} kB here.",
        num(hk),
        num(hon),
        num(hea),
        num(hon - hea)
    ));
    sec.figure("whole_vmpte_kb", [k.0, k.1, on.0, on.1, off]);
    sec.figure("halves_vmpte_kb", [hk, hon, hea]);
    let cats: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
    sec.chart(
        "VmPTE after MADV_DONTNEED",
        chart::bar_chart(
            &ChartSpec::new("Page tables left after DONTNEED", "", "VmPTE (kB)"),
            &cats,
            &[
                Series::new(
                    format!("whole {size}"),
                    all_whole
                        .iter()
                        .map(|r| exact(at(*r, "dontneed")))
                        .collect(),
                ),
                Series::new(
                    "in halves",
                    all_halves
                        .iter()
                        .map(|r| exact(at(*r, "dontneed")))
                        .collect(),
                ),
            ],
        ),
    );
    Ok(sec)
}

// ---------------------------------------------------------------------
// 5. This host's latency hazards.

fn shootdown_toml(churn: usize) -> String {
    // The reader must still be running while the other thread churns: an
    // idle CPU (lazy TLB) gets no shootdown. About 600 reads per munmap
    // keep it busy on both backends.
    let rounds = churn / 100;
    format!(
        r#"name = "study-tlb-shootdown"
[[thread]]
op = [
  {{ barrier = true }},
  {{ repeat = {churn}, op = [
    {{ mmap = "page", size = "4KiB" }},
    {{ touch = "page", access = "write" }},
    {{ munmap = "page" }},
  ] }},
  {{ barrier = true }},
  {{ mark = "churned" }},
]

[[thread]]
op = [
  {{ mmap = "own", size = "16MiB" }},
  {{ touch = "own", access = "write" }},
  {{ barrier = true }},
  {{ repeat = {rounds}, op = [
    {{ touch = "own", access = "read", pattern = "random", count = 60000 }},
  ] }},
  {{ barrier = true }},
  {{ munmap = "own" }},
]
"#
    )
}

fn writeback_toml(rounds: usize, sync: bool) -> String {
    let syncer = if sync {
        format!(
            r#"
[[thread]]
op = [
  {{ barrier = true }},
  {{ repeat = {}, op = [
    {{ sync = "log" }},
    {{ sleep = "5ms" }},
  ] }},
  {{ barrier = true }},
]
"#,
            rounds / 5
        )
    } else {
        r#"
[[thread]]
op = [
  { barrier = true },
  { barrier = true },
]
"#
        .to_string()
    };
    format!(
        r#"name = "study-writeback"
[[thread]]
op = [
  {{ mmap = "log", size = "4MiB", kind = "file", shared = true }},
  {{ touch = "log", access = "write" }},
  {{ barrier = true }},
  {{ repeat = {rounds}, op = [
    {{ touch = "log", access = "write", stride = "64KiB", latency = true }},
    {{ sleep = "1ms" }},
  ] }},
  {{ barrier = true }},
  {{ mark = "written" }},
  {{ munmap = "log" }},
]
{syncer}"#
    )
}

pub(super) fn hazards(lab: &mut Lab) -> Result<Section, ExecError> {
    let o = lab.opts;
    let mut sec = Section::new(
        "hazards",
        "This host's latency hazards",
        "What on this machine can make page tables change under a latency-sensitive program, and what \
         do TLB shootdowns and writeback cost here?",
        "The audit reads this host's settings (5-level paging, THP, KSM, NUMA balancing, swap, \
         PT_RECLAIM, split locks, hypervisor, shootdown rate, writable file mappings). Then, on the \
         kernel: one thread maps, touches and unmaps a page in a loop while another reads its own \
         memory (shootdowns per munmap), and a thread writes to a shared file mapping every \
         millisecond while another msyncs it (write latency with and without writeback).",
        "100,000 munmaps gave 100,016 tlb:tlb_flush events; writeback write-protects PTEs and causes \
         jitter of hundreds of microseconds; fixes: prefault, mlock, MAP_POPULATE, huge pages, no swap, \
         no writable file mappings.",
    );
    let audit = host::audit_with(&if o.quick {
        host::AuditOptions {
            tlb_sample: std::time::Duration::from_millis(250),
            experiments: false,
        }
    } else {
        host::AuditOptions::default()
    });
    let warn: Vec<&host::Item> = audit
        .items
        .iter()
        .filter(|i| i.status == host::Status::Warn)
        .collect();
    sec.tables.push(table(
        "Audit",
        &["id", "status", "value", "why", "fix"],
        audit
            .items
            .iter()
            .map(|i| {
                vec![
                    i.id.clone(),
                    serde_json::to_value(i.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    match &i.value {
                        serde_json::Value::String(s) => s.clone(),
                        v => v.to_string(),
                    },
                    i.why.clone(),
                    i.fix.clone(),
                ]
            })
            .collect(),
    ));
    sec.findings.push(format!(
        "The audit flags {} of {} items on this host{}.",
        warn.len(),
        audit.items.len(),
        if warn.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                warn.iter()
                    .map(|i| i.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    sec.figure("audit", &audit.items);

    let churn = o.pick(2000, 20000);
    let model_sd = lab.measure(
        "tlb-shootdown model",
        &shootdown_toml(churn),
        &[model("")],
        1,
    )?;
    let ipis_model = mean(&model_sd[0], "churned", "ipis");
    if let Some(k) = kernel_try(
        lab,
        &mut sec,
        "tlb-shootdown kernel",
        &shootdown_toml(churn),
        o.pick(2, 5),
    )? {
        if let Some(s) = summary(&k, "churned", "tlb_shootdowns") {
            sec.findings.push(format!(
                "{churn} munmaps while a second thread of the process reads its own memory raised {} TLB-shootdown \
                 interrupts on this machine ({:.2} per munmap; the model, with each thread on its own \
                 CPU, sends {} IPIs, {:.2} per munmap). The seed: 100,000 munmaps, 100,016 flushes.",
                with_ci(&s, ""),
                s.mean / churn as f64,
                num(ipis_model),
                ipis_model / churn as f64
            ));
            sec.figure("kernel_shootdowns", &s);
        }
    }
    let rounds = o.pick(100, 500);
    let with_sync = kernel_try(
        lab,
        &mut sec,
        "writeback kernel",
        &writeback_toml(rounds, true),
        1,
    )?;
    let without = kernel_try(
        lab,
        &mut sec,
        "no writeback kernel",
        &writeback_toml(rounds, false),
        1,
    )?;
    let lat = |r: &Option<ConfigResult>| {
        r.as_ref()
            .and_then(|r| r.runs.first())
            .and_then(|run| run.marks.iter().find_map(|m| m.latency.clone()))
    };
    if let (Some(a), Some(b)) = (lat(&with_sync), lat(&without)) {
        sec.findings.push(format!(
            "Writes to a shared file mapping take p99 {} ns and p99.9 {} ns (max {} ns) while another \
             thread msyncs it, against p99 {} ns, p99.9 {} ns (max {} ns) without writeback: each \
             msync write-protects the dirty PTEs and the next write faults.",
            a.p99_ns, a.p999_ns, a.max_ns, b.p99_ns, b.p999_ns, b.max_ns
        ));
        sec.chart(
            "Write latency to a shared file mapping, with and without msync (kernel)",
            chart::log2_histogram_chart(
                &ChartSpec::new(
                    "Writeback jitter",
                    "latency (ns, log2 buckets)",
                    "share of writes (%)",
                ),
                &[("with msync", &a), ("without", &b)],
                chart::HistScale::Percent,
            ),
        );
        sec.figure("writeback_latency", [&a, &b]);
    }
    Ok(sec)
}

/// Runs the sections make, for the progress bar.
pub(super) fn expected_runs(o: StudyOptions) -> usize {
    let ebizzy = o.pick(3, 4) * 2;
    let kernel_pf = o.pick(3, 10) + 1;
    let five = 4 + 4 + ebizzy + kernel_pf;
    let riscv = 8;
    let split = 4 * o.pick(2, 3);
    let empty = 3 + 1 + 3 + 1;
    let hazards = 1 + o.pick(2, 5) + 1 + 2;
    five + riscv + split + empty + hazards
}
