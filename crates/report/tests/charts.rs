//! SVG charts: well-formed XML, one shape per value, the names shown, bad input refused.

use report::chart::{
    bar_chart, line_chart, log2_histogram_chart, percentile_chart, series_color_hex,
    stacked_bar_chart, tail_values, ChartSpec, Estimate, HistScale, Series, YScale,
};
use report::{ReportError, Unit};
use stats::Interval;
use workload::result::LatencyHistogram;

fn spec() -> ChartSpec {
    ChartSpec::new(
        "Minor fault <latency> & more",
        "configuration",
        "latency (ns)",
    )
}

fn texts(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect()
}

/// Filled rectangles in series `i`'s colour.
fn rects_of(doc: &roxmltree::Document, i: usize) -> usize {
    let c = series_color_hex(i);
    doc.descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(c.as_str()))
        .count()
}

fn circles_of(doc: &roxmltree::Document, i: usize) -> usize {
    let c = series_color_hex(i);
    doc.descendants()
        .filter(|n| n.has_tag_name("circle") && n.attribute("fill") == Some(c.as_str()))
        .count()
}

/// Black polylines: error bars (the axes are drawn as lines or in other colours).
fn error_bars(doc: &roxmltree::Document) -> usize {
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some("#000000"))
        .filter(|n| {
            n.attribute("points")
                .is_some_and(|p| p.split_whitespace().count() == 6)
        })
        .count()
}

fn est(v: f64, hw: f64) -> Estimate {
    Estimate::with_ci(
        v,
        Interval {
            low: v - hw,
            high: v + hw,
        },
    )
}

#[test]
fn grouped_bars_have_a_bar_per_value_and_error_bars() {
    let cats: Vec<String> = ["lat_pagefault", "munmap loop", "no munmap"]
        .map(String::from)
        .to_vec();
    let series = vec![
        Series::new(
            "x86-64-4l",
            vec![est(105.6, 0.06), est(630.0, 5.0), est(400.0, 3.0)],
        ),
        Series::new(
            "x86-64-5l <&>",
            vec![est(105.9, 0.07), est(640.0, 6.0), Estimate::exact(401.0)],
        ),
    ];
    let svg = bar_chart(&spec(), &cats, &series).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    // One bar per value, plus the series' legend swatch.
    assert_eq!(rects_of(&doc, 0), 3 + 1);
    assert_eq!(rects_of(&doc, 1), 3 + 1);
    // Five values have a CI.
    assert_eq!(error_bars(&doc), 5);
    let t = texts(&doc);
    for want in [
        "Minor fault <latency> & more",
        "configuration",
        "latency (ns)",
        "x86-64-4l",
        "x86-64-5l <&>",
        "lat_pagefault",
        "no munmap",
    ] {
        assert!(t.iter().any(|x| x == want), "{want} not in {t:?}");
    }
}

#[test]
fn bars_are_as_tall_as_their_values() {
    let cats = vec!["a".to_string(), "b".to_string()];
    let series = vec![Series::new(
        "s",
        vec![Estimate::exact(100.0), Estimate::exact(50.0)],
    )];
    let svg = bar_chart(&spec(), &cats, &series).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let c = series_color_hex(0);
    let mut heights: Vec<f64> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(c.as_str()))
        .map(|n| n.attribute("height").unwrap().parse::<f64>().unwrap())
        .collect();
    heights.sort_by(f64::total_cmp);
    // [legend swatch, bar of 50, bar of 100]: twice the value, twice the height (±1 px).
    assert!((heights[2] - 2.0 * heights[1]).abs() <= 1.0, "{heights:?}");
}

#[test]
fn line_chart_has_a_point_per_value_and_a_band() {
    let threads = [1.0, 2.0, 4.0, 7.0];
    let s4: Vec<(f64, Estimate)> = threads
        .iter()
        .map(|&t| (t, est(1000.0 * t, 20.0)))
        .collect();
    let s5: Vec<(f64, Estimate)> = threads.iter().map(|&t| (t, est(950.0 * t, 20.0))).collect();
    let series = vec![Series::new("4-level", s4), Series::new("5-level", s5)];
    let svg = line_chart(
        &ChartSpec::new("ebizzy", "threads", "records/s").from_zero(),
        &series,
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(circles_of(&doc, 0), 4);
    assert_eq!(circles_of(&doc, 1), 4);
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("polygon"))
            .count(),
        2
    );
    let t = texts(&doc);
    assert!(t.iter().any(|x| x == "4-level") && t.iter().any(|x| x == "5-level"));
    assert!(t.iter().any(|x| x == "threads") && t.iter().any(|x| x == "records/s"));
}

#[test]
fn a_single_point_gets_an_error_bar_instead_of_a_band() {
    let series = vec![Series::new("one", vec![(4.0, est(10.0, 1.0))])];
    let svg = line_chart(&spec(), &series).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(circles_of(&doc, 0), 1);
    assert_eq!(error_bars(&doc), 1);
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("polygon"))
            .count(),
        0
    );
}

#[test]
fn stacked_bars_have_a_segment_per_value_and_totals() {
    let cats = vec!["4 KiB".to_string(), "64 KiB".to_string()];
    let layers = vec![
        Series::new("PTE", vec![2048.0, 32768.0]),
        Series::new("PMD", vec![8.0, 64.0]),
        Series::new("PUD", vec![4.0, 64.0]),
    ];
    let svg = stacked_bar_chart(
        &ChartSpec::new("Page-table memory", "base page", "kB"),
        &cats,
        &layers,
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    for l in 0..3 {
        assert_eq!(rects_of(&doc, l), 2 + 1, "layer {l}");
    }
    let t = texts(&doc);
    for want in ["PTE", "PMD", "PUD", "2,060", "32,896", "4 KiB"] {
        assert!(t.iter().any(|x| x == want), "{want} not in {t:?}");
    }
}

#[test]
fn histogram_chart_has_a_bar_per_used_bucket() {
    let mk = |b: Vec<u64>| LatencyHistogram {
        count: b.iter().sum(),
        buckets: b,
        ..Default::default()
    };
    let four = mk(vec![0, 0, 0, 0, 0, 0, 0, 82, 95337189, 84564013, 17892326]);
    let five = mk(vec![
        0, 0, 0, 0, 0, 0, 0, 0, 81011474, 95799968, 17652916, 751147,
    ]);
    let svg = log2_histogram_chart(
        &ChartSpec::new(
            "handle_mm_fault",
            "latency (ns, bucket lower bound)",
            "share of faults (%)",
        ),
        &[("4-level", &four), ("5-level", &five)],
        HistScale::Percent,
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    // Buckets 7 (128 ns) to 11 (2 KiB): five groups.
    assert_eq!(rects_of(&doc, 0), 5 + 1);
    assert_eq!(rects_of(&doc, 1), 5 + 1);
    let t = texts(&doc);
    for want in ["128", "256", "512", "1Ki", "2Ki", "4-level", "5-level"] {
        assert!(t.iter().any(|x| x == want), "{want} not in {t:?}");
    }
}

#[test]
fn charts_are_deterministic() {
    let cats = vec!["a".to_string()];
    let series = vec![Series::new("s", vec![est(1.0, 0.1)])];
    assert_eq!(
        bar_chart(&spec(), &cats, &series).unwrap(),
        bar_chart(&spec(), &cats, &series).unwrap()
    );
}

#[test]
fn bad_input_is_refused_with_a_reason() {
    let cats = vec!["a".to_string(), "b".to_string()];
    let short = vec![Series::new("s", vec![Estimate::exact(1.0)])];
    let err = bar_chart(&spec(), &cats, &short).unwrap_err();
    assert!(
        err.to_string()
            .contains("series \"s\" has 1 values for 2 categories"),
        "{err}"
    );
    let nan = vec![Series::new(
        "s",
        vec![Estimate::exact(f64::NAN), Estimate::exact(1.0)],
    )];
    assert!(matches!(
        bar_chart(&spec(), &cats, &nan),
        Err(ReportError::Input { .. })
    ));
    assert!(bar_chart(&spec(), &cats, &[]).is_err());
    let neg = vec![Series::new("PTE", vec![-1.0, 1.0])];
    assert!(stacked_bar_chart(&spec(), &cats, &neg).is_err());
    let empty = LatencyHistogram::default();
    assert!(log2_histogram_chart(&spec(), &[("x", &empty)], HistScale::Count).is_err());
    let no_points: Vec<Series<(f64, Estimate)>> = vec![Series::new("s", vec![])];
    assert!(line_chart(&spec(), &no_points).is_err());
}

// ---------------------------------------------------------------------------
// Charts that show their point (issue 15).

fn attr(n: &roxmltree::Node, name: &str) -> f64 {
    n.attribute(name).unwrap().parse().unwrap()
}

/// Data rectangles of series `i` (the legend swatch, 12 px wide, left out).
fn bars_of<'a>(doc: &'a roxmltree::Document, i: usize) -> Vec<roxmltree::Node<'a, 'a>> {
    let c = series_color_hex(i);
    doc.descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(c.as_str()))
        .filter(|n| attr(n, "width") != 12.0)
        .collect()
}

/// Texts written inside the plot (right of the value axis' tick labels), with x.
fn plot_texts(doc: &roxmltree::Document, left: f64) -> Vec<(String, f64, f64)> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| {
            let x: f64 = n.attribute("x")?.parse().ok()?;
            let y: f64 = n.attribute("y")?.parse().ok()?;
            (x >= left).then(|| (n.text().unwrap_or("").trim().to_string(), x, y))
        })
        .collect()
}

/// The value axis' tick labels as numbers: the numeric texts left of every bar.
fn value_ticks(doc: &roxmltree::Document) -> Vec<f64> {
    let left = bars_of(doc, 0)
        .iter()
        .map(|b| attr(b, "x"))
        .fold(f64::INFINITY, f64::min);
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter(|n| n.attribute("x").and_then(|x| x.parse::<f64>().ok()) < Some(left))
        .filter_map(|n| n.text()?.trim().replace(',', "").parse().ok())
        .collect()
}

#[test]
fn a_zero_bar_beside_512_is_labelled() {
    let cats = vec!["4 KiB pages".to_string(), "THP".to_string()];
    let series = vec![
        Series::new("faults", vec![Estimate::exact(512.0), Estimate::exact(0.0)]),
        Series::new(
            "TLB misses",
            vec![Estimate::exact(0.0), Estimate::exact(512.0)],
        ),
    ];
    let spec = ChartSpec::new("Faults and TLB misses", "pages", "events (count)");
    let svg = bar_chart(&spec, &cats, &series).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let bars = bars_of(&doc, 0);
    assert_eq!(bars.len(), 2);
    let left = bars
        .iter()
        .map(|b| attr(b, "x"))
        .fold(f64::INFINITY, f64::min);
    let labels = plot_texts(&doc, left);
    // Every bar, the empty ones too, has its value written over it.
    for b in bars.iter().chain(bars_of(&doc, 1).iter()) {
        let (x0, x1) = (attr(b, "x"), attr(b, "x") + attr(b, "width"));
        let over: Vec<&String> = labels
            .iter()
            .filter(|(_, x, _)| *x >= x0 && *x <= x1)
            .map(|(t, _, _)| t)
            .collect();
        assert!(
            over.iter().any(|t| *t == "512" || *t == "0"),
            "no value over a bar: {over:?} in {labels:?}"
        );
    }
    assert_eq!(labels.iter().filter(|(t, _, _)| t == "0").count(), 2);
}

#[test]
fn a_span_of_six_orders_gets_a_log_axis() {
    let cats = vec!["a".to_string(), "b".to_string()];
    let series = vec![Series::new(
        "s",
        vec![Estimate::exact(1.0), Estimate::exact(1e6)],
    )];
    let svg = bar_chart(&spec(), &cats, &series).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let t = texts(&doc);
    for decade in ["1", "10", "100", "1,000", "10,000", "100,000"] {
        assert!(t.iter().any(|x| x == decade), "{decade} not in {t:?}");
    }
    let mut h: Vec<f64> = bars_of(&doc, 0).iter().map(|b| attr(b, "height")).collect();
    h.sort_by(f64::total_cmp);
    // On a linear axis the bar of 1 would be 1e-6 of the other: under a pixel.
    assert!(h[0] >= 5.0 && h[1] / h[0] < 10.0, "{h:?}");
    // A linear axis is still available on request.
    let svg = bar_chart(&spec().y_scale(YScale::Linear), &cats, &series).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let mut h: Vec<f64> = bars_of(&doc, 0).iter().map(|b| attr(b, "height")).collect();
    h.sort_by(f64::total_cmp);
    assert!(h[0] < 1.0, "{h:?}");
}

#[test]
fn no_error_bar_reaches_below_the_zero_line() {
    // Student's t interval of [0, 0, 0, 0, 1610]: 322 (95% CI -219.8 to 863.8).
    let cats = vec!["split PTE".to_string(), "global".to_string()];
    let series = vec![Series::new(
        "contended",
        vec![
            Estimate::with_ci(
                322.0,
                Interval {
                    low: -219.8,
                    high: 863.8,
                },
            )
            .runs(5),
            Estimate::with_ci(
                900.0,
                Interval {
                    low: 850.0,
                    high: 950.0,
                },
            )
            .runs(5),
        ],
    )];
    let svg = bar_chart(&spec(), &cats, &series).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let bars = bars_of(&doc, 0);
    // SVG y grows downwards: the zero line is the bars' common bottom edge.
    let zero = bars
        .iter()
        .map(|b| attr(b, "y") + attr(b, "height"))
        .fold(f64::NEG_INFINITY, f64::max);
    let lowest = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some("#000000"))
        .filter(|n| n.attribute("points").unwrap().split_whitespace().count() == 6)
        .flat_map(|n| {
            n.attribute("points")
                .unwrap()
                .split_whitespace()
                .map(|p| p.split(',').nth(1).unwrap().parse::<f64>().unwrap())
                .collect::<Vec<_>>()
        })
        .fold(f64::NEG_INFINITY, f64::max);
    assert!(
        lowest <= zero + 0.5,
        "error bar to {lowest}, zero line at {zero}"
    );
    // The n of each mean is written with it.
    let t = texts(&doc);
    assert!(t.iter().any(|x| x == "322, n = 5"), "{t:?}");
}

#[test]
fn a_share_axis_ends_at_100_percent() {
    let all_in_one = LatencyHistogram {
        buckets: vec![0, 0, 0, 0, 0, 0, 0, 0, 1000],
        count: 1000,
        ..Default::default()
    };
    let some = LatencyHistogram {
        buckets: vec![0, 0, 0, 0, 0, 0, 0, 500, 500],
        count: 1000,
        ..Default::default()
    };
    let svg = log2_histogram_chart(
        &ChartSpec::new("Fault latency", "latency (ns)", "share of faults (%)"),
        &[("a", &all_in_one), ("b", &some)],
        HistScale::Percent,
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let n = value_ticks(&doc);
    assert!(n.contains(&100.0), "{n:?}");
    assert!(n.iter().all(|&v| v <= 100.0), "{n:?}");
}

#[test]
fn a_percentile_chart_shows_the_tail() {
    // A million writes around 2 us, ten at about a millisecond, one of 1.2 s.
    let mut buckets = vec![0u64; 31];
    buckets[10] = 1_000_000;
    buckets[20] = 10;
    buckets[30] = 1;
    let h = LatencyHistogram {
        count: buckets.iter().sum(),
        buckets,
        max_ns: 1_200_000_000,
        ..Default::default()
    };
    let svg = percentile_chart(
        &ChartSpec::new(
            "Write latency percentiles",
            "percentile",
            "latency (ns, log)",
        ),
        &[("ext4", &h)],
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let t = texts(&doc);
    for want in ["p50", "p99", "p99.9", "p99.99", "max", "1.20 s", "ext4"] {
        assert!(t.iter().any(|x| x == want), "{want} not in {t:?}");
    }
    let c = series_color_hex(0);
    let ys: Vec<f64> = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle") && n.attribute("fill") == Some(c.as_str()))
        .map(|n| attr(&n, "cy"))
        .collect();
    assert_eq!(ys.len(), 6);
    // The max stands far above the median: the tail is visible, not a zero bar.
    assert!(ys[0] - ys[5] > 150.0, "{ys:?}");
}

#[test]
fn a_percentile_chart_shows_the_percentiles_the_histogram_recorded() {
    // The recorder's p99 (4.35 us, from its fine buckets) is not where the
    // log2 bucket's interpolation would put it: the chart must show the
    // recorded figure, the one a text quoting the histogram shows.
    let mut buckets = vec![0u64; 20];
    buckets[8] = 9_000;
    buckets[12] = 990;
    buckets[17] = 10;
    let h = LatencyHistogram {
        count: 10_000,
        buckets,
        p50_ns: 400,
        p99_ns: 4_350,
        p999_ns: 213_000,
        max_ns: 250_000,
        ..Default::default()
    };
    let t = tail_values(&h).unwrap();
    assert_eq!(
        (t[0], t[2], t[3], t[5]),
        (400.0, 4_350.0, 213_000.0, 250_000.0)
    );
    assert!(t.windows(2).all(|w| w[0] <= w[1]), "{t:?}");
    let svg = percentile_chart(
        &ChartSpec::new("Write latency", "percentile", "latency").unit(Unit::Nanoseconds),
        &[("w", &h)],
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts = texts(&doc);
    for want in ["400 ns", "4.35 us", "213 us", "250 us"] {
        assert!(texts.iter().any(|x| x == want), "{want} not in {texts:?}");
    }
}

#[test]
fn a_time_axis_is_written_in_time_units() {
    let cats = vec!["a".to_string(), "b".to_string()];
    let series = vec![Series::new(
        "s",
        vec![Estimate::exact(12e6), Estimate::exact(25e6)],
    )];
    let svg = bar_chart(
        &ChartSpec::new("Time", "", "time").unit(Unit::Nanoseconds),
        &cats,
        &series,
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts = texts(&doc);
    assert!(texts.iter().any(|x| x.ends_with(" ms")), "{texts:?}");
    assert!(!texts.iter().any(|x| x.ends_with('M')), "{texts:?}");
}

#[test]
fn a_chart_must_say_what_it_plots() {
    let cats = vec!["a".to_string()];
    let series = vec![Series::new("s", vec![Estimate::exact(1.0)])];
    for spec in [
        ChartSpec::new("", "x", "faults"),
        ChartSpec::new("Faults", "x", " "),
    ] {
        let err = bar_chart(&spec, &cats, &series).unwrap_err();
        assert!(
            err.to_string().contains("title and a value-axis label"),
            "{err}"
        );
    }
}

#[test]
fn single_runs_are_hollow_points_and_the_legend_gives_n() {
    let one_run: Vec<(f64, Estimate)> = [1.0, 2.0, 4.0]
        .iter()
        .map(|&t| (t, Estimate::exact(1000.0 * t).runs(1)))
        .collect();
    let five: Vec<(f64, Estimate)> = [1.0, 2.0, 4.0]
        .iter()
        .map(|&t| (t, est(900.0 * t, 20.0).runs(5)))
        .collect();
    let svg = line_chart(
        &ChartSpec::new("ebizzy records/s by threads", "threads", "records/s"),
        &[
            Series::new("4-level", one_run),
            Series::new("5-level", five),
        ],
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let t = texts(&doc);
    assert!(t.iter().any(|x| x == "4-level (n = 1)"), "{t:?}");
    assert!(t.iter().any(|x| x == "5-level (n = 5)"), "{t:?}");
    // Points with an interval are filled; single runs are white with a coloured ring.
    assert_eq!(circles_of(&doc, 0), 0);
    assert_eq!(circles_of(&doc, 1), 3);
    let c = series_color_hex(0);
    let rings = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle") && n.attribute("stroke") == Some(c.as_str()))
        .count();
    assert_eq!(rings, 3);
}

#[test]
fn a_line_spanning_orders_of_magnitude_gets_a_log_axis() {
    let pts: Vec<(f64, Estimate)> = [1.0, 2.0, 3.0, 4.0]
        .iter()
        .map(|&x| (x, Estimate::exact(10f64.powf(2.0 * x))))
        .collect();
    let svg = line_chart(
        &ChartSpec::new("Page-table pages by size", "size", "pages"),
        &[Series::new("s", pts)],
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let t = texts(&doc);
    for decade in ["100", "1,000", "10,000", "100,000", "1M"] {
        assert!(t.iter().any(|x| x == decade), "{decade} not in {t:?}");
    }
}

#[test]
fn whole_number_x_values_get_no_fractional_tick_labels() {
    let series = vec![Series::new(
        "4-level",
        vec![
            (1.0, est(10.0, 1.0)),
            (2.0, est(11.0, 1.0)),
            (4.0, est(12.0, 1.0)),
        ],
    )];
    let svg = line_chart(&spec(), &series).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let t = texts(&doc);
    assert!(t.iter().any(|x| x == "2"), "{t:?}");
    assert!(
        !t.iter().any(|x| x == "1.5" || x == "2.5" || x == "3.5"),
        "{t:?}"
    );
}
