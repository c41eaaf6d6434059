//! SVG charts drawn with plotters' SVG backend into a `String`: no files, no fonts
//! (plotters is built without `ttf`, so text is written as SVG `<text>` elements and
//! laid out with plotters' built-in size estimate; the browser picks the font).
//!
//! Every chart takes a [`ChartSpec`] (title, axis labels with units, size) and named
//! series, and returns the SVG text. Series get colours in order from the Okabe–Ito
//! palette, which stays distinguishable for colour-blind readers; a series is always
//! drawn in the same colour, which is what tests and readers rely on.
//!
//! Shapes, so that a reader (or a test) can find the data in the SVG:
//! - bars and stacked segments are filled `<rect>`s in their series colour, one per
//!   value, plus one legend swatch per series;
//! - points of a line chart are `<circle>`s, one per value, with the line a
//!   `<polyline>` and the CI band a translucent `<polygon>`;
//! - an error bar is one black `<polyline>` (the bar and its two caps);
//! - every bar has its value written above it in a `<text>` (with `n = …` when the
//!   value is a mean of several runs), so a bar of 0 is still read.
//!
//! Invariants every chart keeps:
//! - it has a title and a value-axis label (what is plotted, with its unit), or it
//!   is refused;
//! - the value axis is logarithmic where positive values span three orders of
//!   magnitude or more (see [`YScale`]);
//! - a bar chart of non-negative values draws no error bar below zero, and a share
//!   axis ([`HistScale::Percent`]) ends at 100%.

mod bars;
mod line;
mod scale;
mod stacked;
mod tail;

pub use bars::{bar_chart, log2_histogram_chart, HistScale};
pub use line::line_chart;
pub use scale::{YScale, LOG_SPAN};
pub use stacked::stacked_bar_chart;
pub use tail::{percentile_chart, tail_values, TAIL_PERCENTILES};

pub(crate) use scale::ValueAxis;

use crate::error::ReportError;
use crate::number::{format_float, human, Unit};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::{
    Cartesian2d, ChartBuilder, ChartContext, Color, DrawingArea, SVGBackend, SeriesLabelPosition,
    BLACK, WHITE,
};
use plotters::style::RGBColor;
use stats::{Interval, Summary};

/// Title, axis labels (with their units, e.g. `"fault latency (ns)"`) and size in
/// pixels of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartSpec {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub width: u32,
    pub height: u32,
    /// Line charts only: start the y axis at 0 (bars always do).
    pub y_from_zero: bool,
    /// How the value axis is scaled (automatic by default).
    pub y_scale: YScale,
    /// The unit of the values, for the labels written on bars and points
    /// ([`Unit::Plain`] by default: three significant digits).
    pub unit: Unit,
}

impl ChartSpec {
    /// An 800×480 chart.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> ChartSpec {
        ChartSpec {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            width: 800,
            height: 480,
            y_from_zero: false,
            y_scale: YScale::Auto,
            unit: Unit::Plain,
        }
    }

    /// Sets how the value axis is scaled.
    pub fn y_scale(mut self, scale: YScale) -> ChartSpec {
        self.y_scale = scale;
        self
    }

    /// Sets the unit in which values are written on the chart (`Unit::Count`:
    /// whole numbers; `Unit::Nanoseconds`: `419 ms`).
    pub fn unit(mut self, unit: Unit) -> ChartSpec {
        self.unit = unit;
        self
    }

    /// A chart must say what it plots: a title and a value-axis label.
    pub(crate) fn check(&self, what: &str) -> Result<(), ReportError> {
        if self.title.trim().is_empty() || self.y_label.trim().is_empty() {
            return Err(ReportError::input(
                what,
                "a chart needs a title and a value-axis label saying what is plotted and its unit",
            ));
        }
        Ok(())
    }

    /// `v` as written on the chart, in the spec's unit.
    pub(crate) fn value_text(&self, v: f64) -> String {
        human(v, self.unit)
    }

    /// Sets the size in pixels.
    pub fn size(mut self, width: u32, height: u32) -> ChartSpec {
        self.width = width.max(100);
        self.height = height.max(100);
        self
    }

    /// Makes a line chart's y axis start at 0.
    pub fn from_zero(mut self) -> ChartSpec {
        self.y_from_zero = true;
        self
    }
}

/// A value with its 95% confidence interval when it has one, and the number of
/// runs behind it when known (written beside the value on the chart).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub ci: Option<Interval>,
    pub n: Option<usize>,
}

impl Estimate {
    /// An exact value (no error bar).
    pub fn exact(value: f64) -> Estimate {
        Estimate {
            value,
            ci: None,
            n: None,
        }
    }

    /// A value with its interval.
    pub fn with_ci(value: f64, ci: Interval) -> Estimate {
        Estimate {
            value,
            ci: Some(ci),
            n: None,
        }
    }

    /// Sets the number of runs the value is the mean of.
    pub fn runs(mut self, n: usize) -> Estimate {
        self.n = Some(n);
        self
    }

    /// The mean of a summary with its 95% CI (none for one run) and its n. Use a
    /// summary from [`stats::Summary::of_quantity`] so that the interval respects
    /// the quantity.
    pub fn from_summary(s: &Summary) -> Estimate {
        Estimate {
            value: s.mean,
            ci: s.ci95,
            n: Some(s.n),
        }
    }

    /// The label written at the value: `"322"`, `"322, n = 5"`.
    pub(crate) fn label(&self, spec: &ChartSpec) -> String {
        let v = spec.value_text(self.value);
        match self.n {
            Some(n) if n > 1 => format!("{v}, n = {n}"),
            _ => v,
        }
    }

    /// The lowest and highest point the estimate reaches.
    fn extent(&self) -> (f64, f64) {
        match self.ci {
            Some(ci) => (self.value.min(ci.low), self.value.max(ci.high)),
            None => (self.value, self.value),
        }
    }

    fn check(&self, what: &str) -> Result<(), ReportError> {
        let ok = self.value.is_finite()
            && self
                .ci
                .is_none_or(|c| c.low.is_finite() && c.high.is_finite());
        if ok {
            Ok(())
        } else {
            Err(ReportError::input(
                what,
                format!("value {:?} is not finite", self),
            ))
        }
    }
}

/// A named series of values.
#[derive(Debug, Clone, PartialEq)]
pub struct Series<T> {
    pub name: String,
    pub values: Vec<T>,
}

impl<T> Series<T> {
    pub fn new(name: impl Into<String>, values: Vec<T>) -> Series<T> {
        Series {
            name: name.into(),
            values,
        }
    }
}

/// Okabe–Ito colours (black left out: it draws axes and error bars).
const PALETTE: [(u8, u8, u8); 7] = [
    (0x00, 0x72, 0xB2), // blue
    (0xD5, 0x5E, 0x00), // vermillion
    (0x00, 0x9E, 0x73), // bluish green
    (0xE6, 0x9F, 0x00), // orange
    (0x56, 0xB4, 0xE9), // sky blue
    (0xCC, 0x79, 0xA7), // reddish purple
    (0xF0, 0xE4, 0x42), // yellow
];

/// The colour of the `i`-th series (the palette repeats after 7 series).
pub fn series_color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// The colour of the `i`-th series as SVG writes it, `"#0072B2"`.
pub fn series_color_hex(i: usize) -> String {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02X}{g:02X}{b:02X}")
}

pub(crate) fn chart_err<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Chart(e.to_string())
}

/// An axis tick label: grouped digits up to a million, then SI suffixes; decimals
/// enough to tell ticks `span / 10` apart.
pub(crate) fn axis_number(v: f64, span: f64) -> String {
    let (scaled, suffix, span) = match v.abs().max(span.abs()) {
        m if m >= 1e12 => (v / 1e12, "T", span / 1e12),
        m if m >= 1e9 => (v / 1e9, "G", span / 1e9),
        m if m >= 1e6 => (v / 1e6, "M", span / 1e6),
        _ => (v, "", span),
    };
    let step = span / 10.0;
    let decimals = if step > 0.0 && step.is_finite() {
        (-step.log10().floor()).clamp(0.0, 6.0) as usize
    } else {
        0
    };
    let mut text = format_float(scaled, decimals);
    // "2.0" reads as a measured decimal; ticks at whole numbers print as such.
    if text.contains('.') {
        text = text.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{text}{suffix}")
}

/// An axis tick label in `unit`: a duration in the time unit that the larger of
/// the value and the span needs (ticks `0 ms, 10 ms, 20 ms` on a 25 ms axis), with
/// decimals enough to tell ticks apart; other units as [`axis_number`].
pub(crate) fn axis_value(v: f64, span: f64, unit: Unit) -> String {
    if unit != Unit::Nanoseconds {
        return axis_number(v, span);
    }
    const TIME: [(f64, &str); 4] = [(1.0, "ns"), (1e3, "us"), (1e6, "ms"), (1e9, "s")];
    let m = v.abs().max(span.abs());
    let (f, name) = TIME
        .iter()
        .rev()
        .find(|(f, _)| m >= *f)
        .copied()
        .unwrap_or(TIME[0]);
    format!("{} {name}", axis_number(v / f, span / f))
}

/// The top of the y range that keeps data up to `top` (from `bottom`) clear of a
/// legend of `entries` lines in an upper corner of a `height`-pixel chart.
pub(crate) fn clear_of_legend(bottom: f64, top: f64, entries: usize, height: u32) -> f64 {
    // Caption, x label area and margins take about 110 px; a legend line about 19 px.
    let plot_px = (f64::from(height) - 110.0).max(50.0);
    let legend_px = 24.0 + 19.0 * entries as f64;
    let frac = (legend_px / plot_px).min(0.6);
    bottom + (top - bottom) / (1.0 - frac)
}

/// `[lo, hi]` widened by `frac` of the span on each chosen side; a zero span becomes
/// one unit wide so that plotters has a range to map.
pub(crate) fn pad_range(lo: f64, hi: f64, frac: f64, pad_low: bool) -> (f64, f64) {
    let span = hi - lo;
    if span <= 0.0 {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (if pad_low { lo - d } else { lo }, hi + d);
    }
    (
        if pad_low { lo - span * frac } else { lo },
        hi + span * frac,
    )
}

pub(crate) fn check_names<T>(what: &str, series: &[Series<T>]) -> Result<(), ReportError> {
    if series.is_empty() {
        return Err(ReportError::input(what, "no series"));
    }
    Ok(())
}

/// An x axis of `n` categories: category `i` spans `[i, i+1)` and its tick (and label)
/// sits at `i + 0.5`. Bars are placed with fractional x inside a category.
pub(crate) struct CategoryAxis {
    pub n: usize,
}

impl plotters::coord::ranged1d::Ranged for CategoryAxis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let frac = value / self.n.max(1) as f64;
        limit.0 + (f64::from(limit.1 - limit.0) * frac).round() as i32
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // Label every category when they fit, else every k-th one.
        let max = hint.max_num_points().max(1);
        let step = self.n.div_ceil(max).max(1);
        (0..self.n).step_by(step).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        0.0..self.n as f64
    }
}

/// The frame every chart shares: its caption, margins and axis label areas, on
/// `root` (which the chart draws into).
pub(crate) fn frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    spec: &ChartSpec,
) -> ChartBuilder<'a, 'static, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(&spec.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(84);
    b
}

/// A chart of `categories` (bars, one category per x slot) over `ylo..yhi` in
/// [`frame`], its mesh drawn: category names under their slots, no vertical
/// grid lines, both axes described.
pub(crate) fn category_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    spec: &ChartSpec,
    categories: &[String],
    axis: ValueAxis,
    ylo: f64,
    yhi: f64,
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<CategoryAxis, RangedCoordf64>>, ReportError>
{
    let mut chart = frame(root, spec)
        .build_cartesian_2d(
            CategoryAxis {
                n: categories.len(),
            },
            ylo..yhi,
        )
        .map_err(chart_err)?;
    let cat_label = |x: &f64| {
        categories
            .get(x.floor() as usize)
            .cloned()
            .unwrap_or_default()
    };
    let span = yhi - ylo;
    let y_label = |y: &f64| axis.tick_label(*y, span, spec.unit);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc(&spec.x_label)
        .y_desc(&spec.y_label)
        .x_label_formatter(&cat_label)
        .y_label_formatter(&y_label)
        .draw()
        .map_err(chart_err)?;
    Ok(chart)
}

/// The legend of every chart: one line per labelled series, boxed, at `position`.
pub(crate) fn draw_legend<'a, 'b: 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    position: SeriesLabelPosition,
) -> Result<(), ReportError> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(chart_err)
}
