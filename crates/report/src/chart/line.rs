//! Lines over a numeric x (threads, sizes): one series per configuration, each point
//! a circle, its 95% CI a translucent band (or an error bar where a band cannot be
//! drawn: a single point, or points of which only some have a CI).
//!
//! A point without an interval is drawn hollow, so that a single run is not read
//! as a mean with no spread; the legend gives each series' number of runs per point
//! when its estimates carry one (`4-level (n = 1)`). The value axis is logarithmic
//! where the values span orders of magnitude (see [`super::YScale`]).

use super::bars::error_bar;
use super::{
    axis_number, chart_err, check_names, clear_of_legend, draw_legend, frame, pad_range,
    series_color, ChartSpec, Estimate, Series, ValueAxis,
};
use crate::error::ReportError;
use plotters::prelude::*;

/// A line chart of `(x, estimate)` points; points are joined in increasing x.
///
/// # Errors
/// [`ReportError::Input`] when there is no series, a series has no point, or a value
/// is not finite; [`ReportError::Chart`] if plotters fails.
pub fn line_chart(
    spec: &ChartSpec,
    series: &[Series<(f64, Estimate)>],
) -> Result<String, ReportError> {
    check(spec, series)?;
    let points = || series.iter().flat_map(|s| s.values.iter());
    let Frame { axis, x, y } = Frame::fit(spec, series);
    let ((xlo, xhi), (ylo, yhi)) = (x, y);
    let (xspan, yspan) = (xhi - xlo, yhi - ylo);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (spec.width, spec.height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let mut chart = frame(&root, spec)
            .build_cartesian_2d(xlo..xhi, ylo..yhi)
            .map_err(chart_err)?;
        // Whole-number x values (thread counts, sizes in steps) get labels
        // only at whole numbers: a tick at "1.5 threads" names nothing.
        let whole_xs = points().all(|(x, _)| x.fract() == 0.0);
        let x_label = |x: &f64| {
            if whole_xs && (x - x.round()).abs() > 1e-9 {
                String::new()
            } else {
                axis_number(*x, xspan)
            }
        };
        let y_label = |y: &f64| axis.tick_label(*y, yspan, spec.unit);
        chart
            .configure_mesh()
            .x_desc(&spec.x_label)
            .y_desc(&spec.y_label)
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .draw()
            .map_err(chart_err)?;
        for (j, s) in series.iter().enumerate() {
            let color = series_color(j);
            let mut pts = s.values.clone();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let band = pts.len() >= 2 && pts.iter().all(|(_, e)| e.ci.is_some());
            if band {
                let upper = pts
                    .iter()
                    .map(|(x, e)| (*x, axis.coord(e.ci.map_or(e.value, |c| c.high))));
                let lower = pts
                    .iter()
                    .rev()
                    .map(|(x, e)| (*x, axis.coord(e.ci.map_or(e.value, |c| c.low))));
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        upper.chain(lower).collect::<Vec<_>>(),
                        color.mix(0.18).filled(),
                    )))
                    .map_err(chart_err)?;
            } else {
                let cap = xspan * 0.015;
                chart
                    .draw_series(pts.iter().filter_map(|(x, e)| {
                        e.ci.map(|c| error_bar(*x, cap, axis.coord(c.low), axis.coord(c.high)))
                    }))
                    .map_err(chart_err)?;
            }
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|(x, e)| (*x, axis.coord(e.value))),
                    color.stroke_width(2),
                ))
                .map_err(chart_err)?
                .label(legend_name(s))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|(x, e)| {
                    let style = if e.ci.is_some() {
                        color.filled()
                    } else {
                        WHITE.filled()
                    };
                    Circle::new((*x, axis.coord(e.value)), 4, style)
                }))
                .map_err(chart_err)?;
            // The outline of hollow points, in the series' colour.
            chart
                .draw_series(
                    pts.iter().filter(|(_, e)| e.ci.is_none()).map(|(x, e)| {
                        Circle::new((*x, axis.coord(e.value)), 4, color.stroke_width(2))
                    }),
                )
                .map_err(chart_err)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}

/// Checks a line chart's input: the spec, the names, every series with a
/// point and every value finite.
fn check(spec: &ChartSpec, series: &[Series<(f64, Estimate)>]) -> Result<(), ReportError> {
    spec.check("a line chart")?;
    check_names("a line chart", series)?;
    for s in series {
        if s.values.is_empty() {
            return Err(ReportError::input(
                "a line chart",
                format!("series \"{}\" has no point", s.name),
            ));
        }
        for (x, e) in &s.values {
            if !x.is_finite() {
                return Err(ReportError::input(
                    "a line chart",
                    format!("x = {x} is not finite"),
                ));
            }
            e.check("a line chart")?;
        }
    }
    Ok(())
}

/// The value axis and the plotted ranges of x and of the axis' coordinate,
/// padded, from zero when the spec asks, and clear of the legend.
struct Frame {
    axis: ValueAxis,
    x: (f64, f64),
    y: (f64, f64),
}

impl Frame {
    fn fit(spec: &ChartSpec, series: &[Series<(f64, Estimate)>]) -> Frame {
        let points = || series.iter().flat_map(|s| s.values.iter());
        let (xlo, xhi) = points().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (x, _)| {
            (a.min(*x), b.max(*x))
        });
        let axis = ValueAxis::choose(
            spec.y_scale,
            points().flat_map(|(_, e)| {
                let (l, h) = e.extent();
                [e.value, l, h]
            }),
        );
        let (mut ylo, yhi) = points().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (_, e)| {
            let (l, h) = e.extent();
            (a.min(axis.coord(l)), b.max(axis.coord(h)))
        });
        if spec.y_from_zero {
            ylo = ylo.min(axis.base());
        }
        let (xlo, xhi) = pad_range(xlo, xhi, 0.03, true);
        let (ylo, yhi) = pad_range(ylo, yhi, 0.05, !(spec.y_from_zero && ylo >= 0.0));
        let yhi = clear_of_legend(ylo, yhi, series.len(), spec.height);
        Frame {
            axis,
            x: (xlo, xhi),
            y: (ylo, yhi),
        }
    }
}

/// A series' legend entry: its name, with the runs behind each point when the
/// estimates say (`"4-level (n = 5)"`, `"4-level (n = 3 to 5)"`).
fn legend_name(s: &Series<(f64, Estimate)>) -> String {
    let ns: Option<Vec<usize>> = s.values.iter().map(|(_, e)| e.n).collect();
    match ns.as_deref().map(|ns| (ns.iter().min(), ns.iter().max())) {
        Some((Some(lo), Some(hi))) if lo == hi => format!("{} (n = {lo})", s.name),
        Some((Some(lo), Some(hi))) => format!("{} (n = {lo} to {hi})", s.name),
        _ => s.name.clone(),
    }
}
