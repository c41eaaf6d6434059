//! SVG charts: well-formed XML, one shape per value, the names shown, bad input refused.

use report::chart::{
    bar_chart, line_chart, log2_histogram_chart, series_color_hex, stacked_bar_chart, ChartSpec,
    Estimate, HistScale, Series,
};
use report::ReportError;
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
