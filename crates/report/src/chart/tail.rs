//! The tail of a latency distribution as a percentile chart: one line per histogram
//! through p50, p90, p99, p99.9, p99.99 and the maximum, on a log value axis, each
//! point labelled with its value. A log2 histogram drawn as bars hides the tail (its
//! last buckets hold a few writes out of millions, bars of height 0); here the
//! p99.9 and the max that the text quotes are points as visible as the median.

use super::{
    category_chart, chart_err, check_names, draw_legend, pad_range, series_color, ChartSpec,
    Series, ValueAxis, YScale,
};
use crate::error::ReportError;
use crate::number::Unit;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use stats::quantile_from_log2;
use workload::result::LatencyHistogram;

/// The percentiles of the chart, with their labels; the maximum follows them.
pub const TAIL_PERCENTILES: [(f64, &str); 5] = [
    (0.5, "p50"),
    (0.9, "p90"),
    (0.99, "p99"),
    (0.999, "p99.9"),
    (0.9999, "p99.99"),
];

/// The points of a histogram's line on a percentile chart, in ns: p50, p90, p99,
/// p99.9, p99.99 (as [`TAIL_PERCENTILES`]) and the maximum. The percentiles the
/// histogram records itself (p50, p99, p99.9, from its fine buckets) are used as
/// they are, so a chart shows the same figures as a text that quotes them; p90 and
/// p99.99 are estimated within their log2 bucket ([`stats::quantile_from_log2`])
/// and kept between their recorded neighbours. Without a recorded maximum the top
/// of the last non-empty bucket bounds it. `None` for an empty histogram.
pub fn tail_values(h: &LatencyHistogram) -> Option<Vec<f64>> {
    if h.count == 0 && h.buckets.iter().all(|&c| c == 0) {
        return None;
    }
    let top = h
        .buckets
        .iter()
        .take(stats::LOG2_BUCKETS)
        .rposition(|&c| c > 0)
        .map_or(0.0, |i| stats::log2_bucket_bounds(i).1 as f64);
    let max = if h.max_ns > 0 { h.max_ns as f64 } else { top };
    let estimate = |q: f64| quantile_from_log2(&h.buckets, q).map(|v| v.min(max));
    // A recorded percentile (non-zero when the histogram has counts), else the
    // bucket estimate.
    let recorded = |v: u64, q: f64| {
        if v > 0 {
            Some((v as f64).min(max))
        } else {
            estimate(q)
        }
    };
    let p50 = recorded(h.p50_ns, 0.5)?;
    let p99 = recorded(h.p99_ns, 0.99)?.max(p50);
    let p999 = recorded(h.p999_ns, 0.999)?.max(p99);
    let p90 = estimate(0.9)?.clamp(p50, p99);
    let p9999 = estimate(0.9999)?.clamp(p999, max.max(p999));
    Some(vec![p50, p90, p99, p999, p9999, max.max(p9999)])
}

/// A percentile chart of latency histograms (values in ns, log2 buckets as
/// `LatencyHistogram::buckets`), each line through [`tail_values`]: the
/// histogram's recorded percentiles, the others estimated within their log2
/// bucket, the exact maximum last. The value axis is logarithmic unless the spec asks for linear,
/// and values are written in the spec's unit (nanoseconds, human-scaled, when it
/// has none).
///
/// # Errors
/// [`ReportError::Input`] when the spec has no title or value-axis label, there is
/// no histogram, or one is empty; [`ReportError::Chart`] if plotters fails.
pub fn percentile_chart(
    spec: &ChartSpec,
    series: &[(&str, &LatencyHistogram)],
) -> Result<String, ReportError> {
    spec.check("a percentile chart")?;
    let points: Vec<Series<f64>> = series
        .iter()
        .map(|(name, h)| {
            let values = tail_values(h).ok_or_else(|| {
                ReportError::input(
                    "a percentile chart",
                    format!("histogram \"{name}\" is empty"),
                )
            })?;
            Ok(Series::new(*name, values))
        })
        .collect::<Result<_, ReportError>>()?;
    check_names("a percentile chart", &points)?;
    let spec = ChartSpec {
        unit: if spec.unit == Unit::Plain {
            Unit::Nanoseconds
        } else {
            spec.unit
        },
        y_scale: if spec.y_scale == YScale::Linear {
            YScale::Linear
        } else {
            YScale::Log
        },
        ..spec.clone()
    };
    let mut categories: Vec<String> = TAIL_PERCENTILES
        .iter()
        .map(|(_, l)| l.to_string())
        .collect();
    categories.push("max".into());
    let all = || points.iter().flat_map(|s| s.values.iter().copied());
    let axis = ValueAxis::choose(spec.y_scale, all());
    let (lo, hi) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(axis.coord(v)), b.max(axis.coord(v)))
    });
    let (lo, hi) = (lo.min(axis.base()), hi);
    let (ylo, yhi) = pad_range(lo, hi, 0.08, false);
    // Room for the legend above the lines.
    let yhi = yhi + (yhi - ylo) * 0.15;
    let label_style =
        TextStyle::from(("sans-serif", 11).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (spec.width, spec.height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let mut chart = category_chart(&root, &spec, &categories, axis, ylo, yhi)?;
        for (j, s) in points.iter().enumerate() {
            let color = series_color(j);
            let xy: Vec<(f64, f64)> = s
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64 + 0.5, axis.coord(*v)))
                .collect();
            chart
                .draw_series(LineSeries::new(xy.clone(), color.stroke_width(2)))
                .map_err(chart_err)?
                .label(&s.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(xy.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(chart_err)?;
            // The first series is labelled above its points, the second below, so
            // that the labels of two close lines do not overlap.
            let (style, dy) = if j % 2 == 0 {
                (label_style.clone(), (yhi - ylo) * 0.015)
            } else {
                (
                    label_style.pos(Pos::new(HPos::Center, VPos::Top)),
                    -(yhi - ylo) * 0.015,
                )
            };
            chart
                .draw_series(
                    s.values.iter().zip(&xy).map(|(v, &(x, y))| {
                        Text::new(spec.value_text(*v), (x, y + dy), style.clone())
                    }),
                )
                .map_err(chart_err)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}
