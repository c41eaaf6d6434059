//! Grouped bars with error bars, and the log2 latency histogram drawn as bars.

use super::{
    category_chart, chart_err, check_names, clear_of_legend, draw_legend, pad_range, series_color,
    ChartSpec, Estimate, Series, ValueAxis,
};
use crate::error::ReportError;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use stats::Interval;
use workload::result::LatencyHistogram;

/// Bars of one group fill this fraction of a category's width.
const GROUP_WIDTH: f64 = 0.8;

/// Grouped bars: for each category (x), one bar per series (e.g. configuration), with
/// an error bar where the value has a CI and the value (and n) written above every
/// bar. Bars start at 0, or at the floor of a log axis (see [`super::YScale`]). When
/// every value is non-negative, error bars are cut at 0: a count or a time cannot
/// be below it, whatever interval it was handed.
///
/// # Errors
/// [`ReportError::Input`] when the spec has no title or value-axis label, there is
/// no category or series, a series does not have one value per category, or a value
/// is not finite; [`ReportError::Chart`] if plotters fails.
pub fn bar_chart(
    spec: &ChartSpec,
    categories: &[String],
    series: &[Series<Estimate>],
) -> Result<String, ReportError> {
    draw_bars(spec, categories, series, None)
}

/// [`bar_chart`], its value axis ending at `cap` at most (100 for shares).
fn draw_bars(
    spec: &ChartSpec,
    categories: &[String],
    series: &[Series<Estimate>],
    cap: Option<f64>,
) -> Result<String, ReportError> {
    spec.check("a bar chart")?;
    check_names("a bar chart", series)?;
    if categories.is_empty() {
        return Err(ReportError::input("a bar chart", "no categories"));
    }
    for s in series {
        if s.values.len() != categories.len() {
            return Err(ReportError::input(
                "a bar chart",
                format!(
                    "series \"{}\" has {} values for {} categories",
                    s.name,
                    s.values.len(),
                    categories.len()
                ),
            ));
        }
        for e in &s.values {
            e.check("a bar chart")?;
        }
    }
    let all = || series.iter().flat_map(|s| s.values.iter());
    let non_negative = all().all(|e| e.value >= 0.0);
    // The interval as drawn: never below 0 for a quantity that cannot be.
    let drawn = |e: &Estimate| {
        e.ci.map(|ci| Interval {
            low: if non_negative {
                ci.low.max(0.0)
            } else {
                ci.low
            },
            high: ci.high,
        })
    };
    let axis = ValueAxis::choose(
        spec.y_scale,
        all().flat_map(|e| {
            let ci = drawn(e);
            [Some(e.value), ci.map(|c| c.low), ci.map(|c| c.high)]
                .into_iter()
                .flatten()
        }),
    );
    let base = axis.base();
    let (lo, hi) = all().fold((base, base), |(a, b), e| {
        let (l, h) = drawn(e).map_or((e.value, e.value), |c| {
            (c.low.min(e.value), c.high.max(e.value))
        });
        (a.min(axis.coord(l)), b.max(axis.coord(h)))
    });
    let (ylo, yhi) = pad_range(lo, hi, 0.04, lo < base);
    // Room above the tallest bar for its label.
    let yhi = yhi + (yhi - ylo) * 0.06;
    let mut yhi = clear_of_legend(ylo, yhi, series.len(), spec.height);
    if let Some(cap) = cap {
        yhi = yhi.min(axis.coord(cap)).max(hi);
    }
    let k = series.len() as f64;
    let bar = GROUP_WIDTH / k;
    let label_style =
        TextStyle::from(("sans-serif", 11).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (spec.width, spec.height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let mut chart = category_chart(&root, spec, categories, axis, ylo, yhi)?;
        for (j, s) in series.iter().enumerate() {
            let color = series_color(j);
            let left = |i: usize| i as f64 + (1.0 - GROUP_WIDTH) / 2.0 + j as f64 * bar;
            chart
                .draw_series(s.values.iter().enumerate().map(|(i, e)| {
                    // A small gap between neighbouring bars of a group.
                    let x0 = left(i) + bar * 0.05;
                    let x1 = left(i) + bar * 0.95;
                    Rectangle::new([(x0, base), (x1, axis.coord(e.value))], color.filled())
                }))
                .map_err(chart_err)?
                .label(&s.name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
            chart
                .draw_series(s.values.iter().enumerate().filter_map(|(i, e)| {
                    drawn(e).map(|ci| {
                        error_bar(
                            left(i) + bar / 2.0,
                            bar * 0.25,
                            axis.coord(ci.low),
                            axis.coord(ci.high),
                        )
                    })
                }))
                .map_err(chart_err)?;
            chart
                .draw_series(s.values.iter().enumerate().map(|(i, e)| {
                    let top = drawn(e).map_or(e.value, |c| c.high.max(e.value));
                    let y = axis.coord(top.max(0.0)).min(yhi);
                    Text::new(e.label(spec), (left(i) + bar / 2.0, y), label_style.clone())
                }))
                .map_err(chart_err)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}

/// An error bar at `x` from `low` to `high` with caps `cap` wide: one path drawn
/// top cap, stem, bottom cap.
pub(crate) fn error_bar(x: f64, cap: f64, low: f64, high: f64) -> PathElement<(f64, f64)> {
    let h = cap / 2.0;
    PathElement::new(
        vec![
            (x - h, high),
            (x + h, high),
            (x, high),
            (x, low),
            (x - h, low),
            (x + h, low),
        ],
        BLACK.stroke_width(1),
    )
}

/// What the bars of a histogram chart show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistScale {
    /// The count of each bucket.
    Count,
    /// Each bucket's share of its histogram's count, in percent: histograms with
    /// different counts (runs of different lengths) compare directly. The axis ends
    /// at 100%.
    Percent,
}

/// Log2 latency histograms as grouped bars, one group per bucket from the first to
/// the last bucket any histogram uses, one bar per histogram. Buckets are labelled by
/// their lower bound with binary suffixes (`256`, `512`, `1Ki`, … `1Mi`).
///
/// # Errors
/// [`ReportError::Input`] when no histogram has a value; as [`bar_chart`] otherwise.
pub fn log2_histogram_chart(
    spec: &ChartSpec,
    series: &[(&str, &LatencyHistogram)],
    scale: HistScale,
) -> Result<String, ReportError> {
    let used = |h: &LatencyHistogram| {
        let first = h.buckets.iter().position(|&c| c > 0)?;
        let last = h.buckets.iter().rposition(|&c| c > 0)?;
        Some((first, last))
    };
    let (first, last) = series
        .iter()
        .filter_map(|(_, h)| used(h))
        .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
        .ok_or_else(|| ReportError::input("a histogram chart", "every histogram is empty"))?;
    let last = last.min(stats::LOG2_BUCKETS - 1);
    let categories: Vec<String> = (first..=last)
        .map(|i| binary_label(stats::log2_bucket_bounds(i).0))
        .collect();
    let bars: Vec<Series<Estimate>> = series
        .iter()
        .map(|(name, h)| {
            let total: u64 = h.buckets.iter().sum();
            let values = (first..=last)
                .map(|i| {
                    let c = h.buckets.get(i).copied().unwrap_or(0) as f64;
                    Estimate::exact(match scale {
                        HistScale::Count => c,
                        HistScale::Percent if total > 0 => 100.0 * c / total as f64,
                        HistScale::Percent => 0.0,
                    })
                })
                .collect();
            Series::new(*name, values)
        })
        .collect();
    match scale {
        HistScale::Count => bar_chart(spec, &categories, &bars),
        HistScale::Percent => {
            let spec = ChartSpec {
                unit: crate::number::Unit::Percent,
                ..spec.clone()
            };
            draw_bars(&spec, &categories, &bars, Some(100.0))
        }
    }
}

/// `0`, `2`, … `512`, `1Ki`, `2Ki`, … `1Mi`, … (bucket bounds are powers of two).
fn binary_label(v: u64) -> String {
    const UNITS: [(&str, u32); 6] = [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ];
    for (suffix, shift) in UNITS {
        if v >= 1u64 << shift {
            return format!("{}{suffix}", v >> shift);
        }
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::binary_label;

    #[test]
    fn bucket_labels() {
        assert_eq!(binary_label(0), "0");
        assert_eq!(binary_label(512), "512");
        assert_eq!(binary_label(1024), "1Ki");
        assert_eq!(binary_label(1 << 21), "2Mi");
        assert_eq!(binary_label(1 << 63), "8Ei");
    }
}
