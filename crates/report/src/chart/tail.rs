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

/// A percentile chart of latency histograms (values in ns, log2 buckets as
/// `LatencyHistogram::buckets`). Percentiles are estimated within their log2 bucket
/// ([`stats::quantile_from_log2`]) and kept at or below the exact maximum, which is
/// the last point. The value axis is logarithmic unless the spec asks for linear,
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
            let max = h.max_ns as f64;
            let values: Option<Vec<f64>> = TAIL_PERCENTILES
                .iter()
                .map(|(q, _)| {
                    quantile_from_log2(&h.buckets, *q)
                        .map(|v| if max > 0.0 { v.min(max) } else { v })
                })
                .collect();
            let mut values = values.ok_or_else(|| {
                ReportError::input(
                    "a percentile chart",
                    format!("histogram \"{name}\" is empty"),
                )
            })?;
            // Without a recorded maximum, the top of the last non-empty bucket bounds it.
            let top = h
                .buckets
                .iter()
                .take(stats::LOG2_BUCKETS)
                .rposition(|&c| c > 0)
                .map_or(0.0, |i| stats::log2_bucket_bounds(i).1 as f64);
            values.push(if max > 0.0 { max } else { top });
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
