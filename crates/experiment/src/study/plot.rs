//! A section's charts drawn from its figures: one value source.
//!
//! A chart is given [`Figure`]s, each named after the section figure it
//! shows (`name` or `name[i]` in the section's `figures`, or a verdict
//! figure's name). The SVG is drawn from those figures (value, interval and
//! runs), and the same figures go to study.json as the chart's `data`, so
//! that the text, the tables, study.json and the chart cannot disagree; a
//! test (tests/study.rs) resolves every charted name in study.json and
//! compares the values.

use super::figure::Figure;
use super::{Chart, Section};
use report::chart::{self, ChartSpec, Estimate, Series};
use serde::Serialize;

/// One charted value: the figure, the section figure it is, and the label
/// the chart writes at it (bars only).
#[derive(Debug, Clone, Serialize)]
pub struct ChartPoint {
    /// The category (bars) or the x value (lines), as written on the axis.
    pub x: String,
    pub figure: Figure,
    /// The section figure it shows: `name`, `name[i]`, `name[i][j]`.
    pub name: String,
    /// The text the chart writes at the value (bars), when it writes one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// One series of a chart's data.
#[derive(Debug, Clone, Serialize)]
pub struct ChartSeries {
    pub name: String,
    pub points: Vec<ChartPoint>,
}

/// A value to chart: its figure and the section figure it is.
pub(crate) struct Named {
    pub figure: Figure,
    pub name: String,
}

/// `figure`, which is the section's figure `name`.
pub(crate) fn named(name: impl Into<String>, figure: Figure) -> Named {
    Named {
        figure,
        name: name.into(),
    }
}

/// As a chart draws it: the point (0 when undefined, as "n/a" has no
/// height), the figure's interval and its runs.
fn estimate(f: &Figure) -> Estimate {
    let v = f.value.unwrap_or(0.0);
    let mut e = match (f.low, f.high) {
        (Some(low), Some(high)) => Estimate::with_ci(
            v,
            stats::Interval {
                low: low.min(v),
                high: high.max(v),
            },
        ),
        _ => Estimate::exact(v),
    };
    e.n = f.n;
    e
}

impl Section {
    /// A bar chart of `series` (name, one value per category).
    pub(crate) fn bars(
        &mut self,
        caption: &str,
        spec: &ChartSpec,
        categories: &[String],
        series: Vec<(String, Vec<Named>)>,
    ) {
        let drawn: Vec<Series<Estimate>> = series
            .iter()
            .map(|(n, v)| Series::new(n.clone(), v.iter().map(|p| estimate(&p.figure)).collect()))
            .collect();
        let svg = chart::bar_chart(spec, categories, &drawn);
        let data = series
            .into_iter()
            .map(|(name, values)| ChartSeries {
                name,
                points: values
                    .into_iter()
                    .zip(categories)
                    .map(|(p, x)| {
                        let e = estimate(&p.figure);
                        let v = report::human(e.value, spec.unit);
                        let label = match e.n {
                            Some(n) if n > 1 => format!("{v}, n = {n}"),
                            _ => v,
                        };
                        ChartPoint {
                            x: x.clone(),
                            figure: p.figure,
                            name: p.name,
                            label: Some(label),
                        }
                    })
                    .collect(),
            })
            .collect();
        self.push_chart(caption, svg, data);
    }

    /// A line chart of `series` (name, (x, value) points).
    pub(crate) fn lines(
        &mut self,
        caption: &str,
        spec: &ChartSpec,
        series: Vec<(String, Vec<(f64, Named)>)>,
    ) {
        let drawn: Vec<Series<(f64, Estimate)>> = series
            .iter()
            .map(|(n, v)| {
                Series::new(
                    n.clone(),
                    v.iter().map(|(x, p)| (*x, estimate(&p.figure))).collect(),
                )
            })
            .collect();
        let svg = chart::line_chart(spec, &drawn);
        let data = series
            .into_iter()
            .map(|(name, values)| ChartSeries {
                name,
                points: values
                    .into_iter()
                    .map(|(x, p)| ChartPoint {
                        x: super::text::num(x),
                        figure: p.figure,
                        name: p.name,
                        label: None,
                    })
                    .collect(),
            })
            .collect();
        self.push_chart(caption, svg, data);
    }

    /// A chart drawn by `svg` from exactly the values of `data` (a
    /// percentile chart reads its histograms through the same function
    /// that made the figures).
    pub(crate) fn push_chart(
        &mut self,
        caption: &str,
        svg: Result<String, report::ReportError>,
        data: Vec<ChartSeries>,
    ) {
        match svg {
            Ok(svg) => self.charts.push(Chart {
                caption: caption.into(),
                svg,
                data,
            }),
            Err(e) => self
                .notes
                .push(format!("chart \"{caption}\" not drawn: {e}")),
        }
    }
}
