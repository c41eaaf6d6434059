//! Writes a demonstration report (every chart kind, tables, an audit, a funclatency
//! histogram) to `DIR/index.html` and each chart to `DIR/*.svg`, with the seed's
//! published figures as data. Run: `cargo run -p report --example demo_report -- DIR`.

use report::chart::{
    bar_chart, line_chart, log2_histogram_chart, percentile_chart, stacked_bar_chart, ChartSpec,
    Estimate, HistScale, Series,
};
use report::html::Page;
use report::latency::render_log2;
use report::{Cell, Column, Table, Unit};
use stats::{Interval, Quantity, Summary};
use workload::result::LatencyHistogram;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: demo_report DIR")?;
    std::fs::create_dir_all(&dir)?;
    let [bars, line, stacked] = level_charts()?;
    let (h4, h5) = seed_histograms();
    let [hist, tail] = latency_charts(&h4, &h5)?;
    let [thp, locks] = count_charts()?;
    for (name, svg) in [
        ("bars", &bars),
        ("line", &line),
        ("stacked", &stacked),
        ("hist", &hist),
        ("tail", &tail),
        ("thp", &thp),
        ("locks", &locks),
    ] {
        std::fs::write(format!("{dir}/{name}.svg"), svg)?;
    }

    let t = latency_table();

    let mut page = Page::new("ptlab report demo");
    page.paragraph("Charts drawn from the seed's published figures & some illustrative data.");
    page.section("Fault latency")
        .table(&t)
        .figure(&bars, Some("Means with 95% confidence intervals."));
    page.section("Scaling").figure(&line, None);
    page.section("Page-table memory").figure(&stacked, None);
    page.section("Latency distribution")
        .figure(&hist, None)
        .figure(
            &tail,
            Some("The tail: p99.9 and the maximum as visible as the median."),
        )
        .preformatted(render_log2(&h4, "nsecs"));
    page.section("Counts beside zero")
        .figure(&thp, Some("A log axis; every bar labelled, the zero too."))
        .figure(
            &locks,
            Some("Means of 5 runs with bootstrap intervals, never below 0."),
        );
    page.section("Audit").table(&audit());
    std::fs::write(format!("{dir}/index.html"), page.render())?;
    println!("{}", t.render());
    Ok(())
}

/// An estimate with its 95% interval.
fn ci(v: f64, lo: f64, hi: f64) -> Estimate {
    Estimate::with_ci(v, Interval { low: lo, high: hi })
}

/// The charts of 4- against 5-level tables: latency bars, throughput lines
/// and page-table memory stacked by level.
fn level_charts() -> Result<[String; 3], report::ReportError> {
    let bars = bar_chart(
        &ChartSpec::new(
            "lat_pagefault, 30 runs, 95% CI",
            "page-table levels",
            "minor fault latency (ns)",
        ),
        &["lat_pagefault".to_string()],
        &[
            Series::new("4-level", vec![ci(105.637, 105.576, 105.698)]),
            Series::new("5-level", vec![ci(105.88, 105.81, 105.95)]),
        ],
    )?;
    let threads: Vec<f64> = (1..=7).map(f64::from).collect();
    let line = line_chart(
        &ChartSpec::new(
            "Throughput by threads (illustrative)",
            "threads",
            "records per second",
        ),
        &[
            Series::new(
                "4-level",
                threads
                    .iter()
                    .map(|&t| {
                        (
                            t,
                            ci(10_000.0 * t, 10_000.0 * t - 300.0, 10_000.0 * t + 300.0),
                        )
                    })
                    .collect(),
            ),
            Series::new(
                "5-level",
                threads
                    .iter()
                    .map(|&t| (t, ci(9_800.0 * t, 9_800.0 * t - 300.0, 9_800.0 * t + 300.0)))
                    .collect(),
            ),
        ],
    )?;
    let stacked = stacked_bar_chart(
        &ChartSpec::new(
            "Page-table memory by level (illustrative)",
            "base page size",
            "page-table memory (kB)",
        ),
        &["4 KiB".to_string(), "64 KiB".to_string()],
        &[
            Series::new("PTE", vec![2048.0, 2048.0]),
            Series::new("PMD", vec![8.0, 64.0]),
            Series::new("PUD", vec![4.0, 64.0]),
        ],
    )?;
    Ok([bars, line, stacked])
}

/// handle_mm_fault's latency histograms of the seed, 4- and 5-level.
fn seed_histograms() -> (LatencyHistogram, LatencyHistogram) {
    let h4 = LatencyHistogram {
        buckets: vec![
            0, 0, 0, 0, 0, 0, 0, 82, 95337189, 84564013, 17892326, 785823, 29906, 25789, 1784, 0,
            1, 2,
        ],
        count: 198690342,
        sum_ns: 125302193687,
        ..Default::default()
    };
    let h5 = LatencyHistogram {
        buckets: vec![
            0, 0, 0, 0, 0, 0, 0, 81, 81011474, 95799968, 17652916, 751147, 23601, 20151, 593, 0, 0,
            3,
        ],
        count: 195275209,
        sum_ns: 125164828170,
        ..Default::default()
    };
    (h4, h5)
}

/// The seed's latency distribution and its percentiles.
fn latency_charts(
    h4: &LatencyHistogram,
    h5: &LatencyHistogram,
) -> Result<[String; 2], report::ReportError> {
    let hist = log2_histogram_chart(
        &ChartSpec::new(
            "handle_mm_fault latency (seed)",
            "latency bucket (ns, lower bound)",
            "share of faults (%)",
        ),
        &[("4-level", h4), ("5-level", h5)],
        HistScale::Percent,
    )?;
    let tail = percentile_chart(
        &ChartSpec::new(
            "handle_mm_fault latency percentiles (seed)",
            "percentile",
            "latency (ns, log scale)",
        ),
        &[("4-level", h4), ("5-level", h5)],
    )?;
    Ok([hist, tail])
}

/// Counts beside zero: a log axis and intervals that never go below 0.
fn count_charts() -> Result<[String; 2], Box<dyn std::error::Error>> {
    let thp = bar_chart(
        &ChartSpec::new(
            "Faults and TLB misses touching 2 MiB (illustrative)",
            "page size",
            "events (count, log scale)",
        )
        .unit(Unit::Count),
        &["4 KiB pages".to_string(), "THP".to_string()],
        &[
            Series::new("faults", vec![Estimate::exact(512.0), Estimate::exact(1.0)]),
            Series::new(
                "TLB misses",
                vec![Estimate::exact(262_144.0), Estimate::exact(0.0)],
            ),
        ],
    )?;
    let contended = [0.0, 0.0, 0.0, 0.0, 1610.0];
    let locks = bar_chart(
        &ChartSpec::new(
            "Contended page-table lock acquisitions (illustrative)",
            "lock scheme",
            "contended acquisitions (count)",
        )
        .unit(Unit::Count),
        &["split PTE".to_string(), "global".to_string()],
        &[Series::new(
            "contended",
            vec![
                Estimate::from_summary(&Summary::of_quantity(&contended, Quantity::Count)?),
                Estimate::from_summary(&Summary::of_quantity(
                    &[880.0, 910.0, 905.0, 890.0, 915.0],
                    Quantity::Count,
                )?),
            ],
        )],
    )?;
    Ok([thp, locks])
}

/// The fault-latency table of the seed's means.
fn latency_table() -> Table {
    let mut t = Table::with_columns(vec![
        Column::new("levels"),
        Column::new("mean").unit("ns"),
        Column::new("runs"),
    ]);
    t.push_row([
        Cell::text("4"),
        Cell::estimate(105.637, Some(0.061)),
        Cell::int(30),
    ]);
    t.push_row([
        Cell::text("5"),
        Cell::estimate(105.88, Some(0.07)),
        Cell::int(30),
    ]);
    t
}

/// An audit table as the study shows it: JSON values, long explanations.
fn audit() -> Table {
    let mut t = Table::with_columns(vec![
        Column::new("id"),
        Column::new("status"),
        Column::new("value").wrap(24),
        Column::new("why").wrap(44),
        Column::new("fix").wrap(44),
    ]);
    let rows = [
        (
            "split_ptlocks",
            "ok",
            r#"{"pmd":null,"pte":true,"source":"inferred: 8 possible CPUs, so NR_CPUS >= 4, where Kconfig enables SPLIT_PTE_PTLOCKS"}"#,
            "Split page-table locks let faults on different page tables proceed in parallel; \
             a single mm-wide lock serialises them and shows up as lock contention.",
            "Nothing to do; on a kernel without them, rebuild with CONFIG_SPLIT_PTE_PTLOCKS=y.",
        ),
        (
            "ksm",
            "warn",
            r#"{"pages_sharing":131072,"run":1}"#,
            "KSM merges identical pages behind the workload's back; merged pages fault again on \
             write (copy-on-write), which adds faults the workload did not ask for.",
            "echo 0 > /sys/kernel/mm/ksm/run, or exclude the process with prctl(PR_SET_MEMORY_MERGE, 0).",
        ),
        (
            "tlb_shootdowns",
            "warn",
            r#"{"per_second":1843.5,"sampled_s":1.0,"total":98234521}"#,
            "Other processes flush TLBs on this machine all the time; every shootdown interrupts \
             the CPUs the benchmark runs on and lengthens its faults.",
            "Run on a quiet machine, or pin the workload to CPUs isolated with isolcpus= and nohz_full=.",
        ),
    ];
    for (id, status, value, why, fix) in rows {
        t.push_row([id, status, value, why, fix].map(Cell::text));
    }
    t
}
