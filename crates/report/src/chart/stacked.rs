//! Stacked bars: one bar per category (e.g. configuration), one segment per layer
//! (e.g. page-table level), the bar's total written above it.

use super::{
    category_chart, chart_err, check_names, clear_of_legend, draw_legend, pad_range, series_color,
    ChartSpec, Series, ValueAxis,
};
use crate::error::ReportError;
use crate::number::format_float;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Stacked bars; `layers[l].values[i]` is the height of layer `l` in category `i`,
/// stacked from the first layer at the bottom.
///
/// # Errors
/// [`ReportError::Input`] when there is no category or layer, a layer does not have
/// one value per category, or a value is negative or not finite;
/// [`ReportError::Chart`] if plotters fails.
pub fn stacked_bar_chart(
    spec: &ChartSpec,
    categories: &[String],
    layers: &[Series<f64>],
) -> Result<String, ReportError> {
    spec.check("a stacked bar chart")?;
    check_names("a stacked bar chart", layers)?;
    if categories.is_empty() {
        return Err(ReportError::input("a stacked bar chart", "no categories"));
    }
    for l in layers {
        if l.values.len() != categories.len() {
            return Err(ReportError::input(
                "a stacked bar chart",
                format!(
                    "layer \"{}\" has {} values for {} categories",
                    l.name,
                    l.values.len(),
                    categories.len()
                ),
            ));
        }
        if let Some(v) = l.values.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
            return Err(ReportError::input(
                "a stacked bar chart",
                format!("layer \"{}\" has the value {v}; stacked values must be finite and not negative", l.name),
            ));
        }
    }
    let n = categories.len();
    let totals: Vec<f64> = (0..n)
        .map(|i| layers.iter().map(|l| l.values[i]).sum())
        .collect();
    let top = totals.iter().copied().fold(0.0, f64::max);
    // Room above the bars for their totals, and for the legend.
    let (ylo, yhi) = pad_range(0.0, top, 0.08, false);
    let yhi = clear_of_legend(ylo, yhi, layers.len(), spec.height);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (spec.width, spec.height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let mut chart = category_chart(&root, spec, categories, ValueAxis::Linear, ylo, yhi)?;
        let mut base = vec![0.0; n];
        for (j, l) in layers.iter().enumerate() {
            let color = series_color(j);
            let segments: Vec<Rectangle<(f64, f64)>> = l
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let r = Rectangle::new(
                        [(i as f64 + 0.2, base[i]), (i as f64 + 0.8, base[i] + v)],
                        color.filled(),
                    );
                    base[i] += v;
                    r
                })
                .collect();
            chart
                .draw_series(segments)
                .map_err(chart_err)?
                .label(&l.name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
        let style = TextStyle::from(("sans-serif", 13).into_font())
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(totals.iter().enumerate().map(|(i, t)| {
                Text::new(
                    format_float(*t, if t.fract() == 0.0 { 0 } else { 2 }),
                    (i as f64 + 0.5, *t),
                    style.clone(),
                )
            }))
            .map_err(chart_err)?;
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}
