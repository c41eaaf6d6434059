//! Writes a demonstration report (every chart kind, a table, a funclatency histogram)
//! to `DIR/index.html` and each chart to `DIR/*.svg`, with the seed's published
//! figures as data. Run: `cargo run -p report --example demo_report -- DIR`.

use report::chart::{
    bar_chart, line_chart, log2_histogram_chart, stacked_bar_chart, ChartSpec, Estimate, HistScale,
    Series,
};
use report::html::Page;
use report::latency::render_log2;
use report::{Cell, Column, Table};
use stats::Interval;
use workload::result::LatencyHistogram;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: demo_report DIR")?;
    std::fs::create_dir_all(&dir)?;
    let ci = |v: f64, lo: f64, hi: f64| Estimate::with_ci(v, Interval { low: lo, high: hi });

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
    let hist = log2_histogram_chart(
        &ChartSpec::new(
            "handle_mm_fault latency (seed)",
            "latency bucket (ns, lower bound)",
            "share of faults (%)",
        ),
        &[("4-level", &h4), ("5-level", &h5)],
        HistScale::Percent,
    )?;
    for (name, svg) in [
        ("bars", &bars),
        ("line", &line),
        ("stacked", &stacked),
        ("hist", &hist),
    ] {
        std::fs::write(format!("{dir}/{name}.svg"), svg)?;
    }

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
    let mut page = Page::new("ptlab report demo");
    page.paragraph("Charts drawn from the seed's published figures & some illustrative data.");
    page.section("Fault latency")
        .table(&t)
        .figure(&bars, Some("Means with 95% confidence intervals."));
    page.section("Scaling").figure(&line, None);
    page.section("Page-table memory").figure(&stacked, None);
    page.section("Latency distribution")
        .figure(&hist, None)
        .preformatted(render_log2(&h4, "nsecs"));
    std::fs::write(format!("{dir}/index.html"), page.render())?;
    println!("{}", t.render());
    Ok(())
}
