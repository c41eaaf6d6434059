//! A figure of the study as every part of the report reads it: its value, its
//! unit, its interval where it has one, and the text it is written as.
//!
//! One source for every number: a section's verdict names its figures
//! ([`Verdict`]), a table's numeric cells are figures, and study.json holds
//! the same values with their unit (never a formatted string alone). The
//! text of a figure is made here once ([`Figure::text`]), so the HTML, the
//! terminal and study.json cannot disagree on it; `render`'s test compares
//! every figure the HTML names with study.json.

use super::time::Predicted;
use serde::{Deserialize, Serialize};
use stats::{MeanInterval, Summary};
use std::collections::BTreeMap;

/// What a figure's value counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FigUnit {
    /// A duration in nanoseconds.
    #[serde(rename = "ns")]
    Ns,
    /// A relative change in percent, signed: "+0.40%".
    #[serde(rename = "% change")]
    Percent,
    /// A share in percent (a hit rate, a part of a whole): "97.3%".
    #[serde(rename = "%")]
    Share,
    /// A size in KiB (the kB of /proc).
    #[serde(rename = "KiB")]
    Kib,
    /// A size in bytes.
    #[serde(rename = "B")]
    Bytes,
    /// Events, pages, tables: whole.
    #[serde(rename = "count")]
    Count,
    /// A ratio of two like figures ("1.37x", "16.0x").
    #[serde(rename = "ratio")]
    Ratio,
    /// A rate or a plain number (references per walk).
    #[serde(rename = "number")]
    Plain,
}

/// One figure: `value` is `null` in JSON when undefined (the run had no
/// such figure), `low`/`high` its interval (the cost file's for a
/// prediction, a bootstrap 95% interval for a mean of runs), `n` the runs
/// behind a mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub value: Option<f64>,
    pub unit: FigUnit,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<usize>,
    /// As written in the HTML and the terminal.
    pub text: String,
}

/// `v` in `unit` for people: "6.93 us", "+0.40%", "136 KiB", "16,384",
/// "16.0x"; "n/a" when undefined.
pub(crate) fn write(v: f64, unit: FigUnit) -> String {
    use report::Unit;
    if !v.is_finite() {
        return "n/a".into();
    }
    match unit {
        FigUnit::Ns => report::human(v, Unit::Nanoseconds),
        FigUnit::Percent => {
            let a = v.abs();
            if a >= 10.0 {
                format!("{v:+.0}%")
            } else if a >= 1.0 {
                format!("{v:+.1}%")
            } else if a == 0.0 {
                "0%".into()
            } else {
                format!("{v:+.2}%")
            }
        }
        FigUnit::Share => format!("{v:.1}%"),
        FigUnit::Kib => report::human(v, Unit::Kilobytes),
        FigUnit::Bytes => report::human(v, Unit::Bytes),
        FigUnit::Count => report::human(v, Unit::Count),
        FigUnit::Ratio if v >= 100.0 => format!("{}x", report::group_thousands(v.round() as i64)),
        FigUnit::Ratio if v >= 10.0 => format!("{v:.1}x"),
        FigUnit::Ratio => format!("{v:.2}x"),
        FigUnit::Plain => super::text::num(v),
    }
}

impl Figure {
    /// A figure without an interval.
    pub(crate) fn new(v: f64, unit: FigUnit) -> Figure {
        Figure {
            value: v.is_finite().then_some(v),
            unit,
            low: None,
            high: None,
            n: None,
            text: write(v, unit),
        }
    }

    /// With its interval, written after it: "6.93 us [5.72 us to 8.09 us]".
    pub(crate) fn with_interval(mut self, low: f64, high: f64) -> Figure {
        if let Some(v) = self.value.filter(|_| low.is_finite() && high.is_finite()) {
            let (low, high) = (low.min(high).min(v), high.max(low).max(v));
            if low < high {
                self.low = Some(low);
                self.high = Some(high);
                self.text = format!(
                    "{} [{} to {}]",
                    self.text,
                    write(low, self.unit),
                    write(high, self.unit)
                );
            }
        }
        self
    }

    pub(crate) fn count(v: f64) -> Figure {
        Figure::new(v, FigUnit::Count)
    }
    pub(crate) fn kib(v: f64) -> Figure {
        Figure::new(v, FigUnit::Kib)
    }
    pub(crate) fn ns(v: f64) -> Figure {
        Figure::new(v, FigUnit::Ns)
    }
    pub(crate) fn plain(v: f64) -> Figure {
        Figure::new(v, FigUnit::Plain)
    }
    pub(crate) fn percent(v: f64) -> Figure {
        Figure::new(v, FigUnit::Percent)
    }

    /// A share in percent (a hit rate), unsigned: "97.3%".
    pub(crate) fn share(v: f64) -> Figure {
        Figure::new(v, FigUnit::Share)
    }

    /// A prediction with the cost file's interval.
    pub(crate) fn predicted(p: &Predicted) -> Figure {
        Figure::ns(p.ns).with_interval(p.lo, p.hi)
    }

    /// `b` against `a` in percent (`b / a - 1`), its interval from the two
    /// predictions' ends taken on the same schedule (both low, both high).
    pub(crate) fn change(a: &Predicted, b: &Predicted) -> Figure {
        let pct = |x: f64, y: f64| 100.0 * (y / x - 1.0);
        Figure::percent(pct(a.ns, b.ns)).with_interval(pct(a.lo, b.lo), pct(a.hi, b.hi))
    }

    /// A mean of runs with its interval and n; with too few runs that
    /// differ, no interval.
    pub(crate) fn summary(s: &Summary, unit: FigUnit) -> Figure {
        let mut f = Figure::new(s.mean, unit);
        if let MeanInterval::Estimated { interval, .. } = s.interval {
            f = f.with_interval(interval.low, interval.high);
        }
        f.n = Some(s.n);
        f
    }
}

/// A section's verdict: the sentence that answers its question for this
/// host, made from a template whose `{name}` slots are its figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Verdict {
    pub text: String,
    pub figures: BTreeMap<String, Figure>,
}

impl Verdict {
    /// Adds a figure the template may name.
    pub(crate) fn fig(mut self, name: &str, f: Figure) -> Verdict {
        self.figures.insert(name.into(), f);
        self
    }

    /// Writes `template`, each `{name}` replaced by the text of figure
    /// `name` (a slot without a figure is a bug of the section: it panics in
    /// tests and stays visible otherwise).
    pub(crate) fn say(mut self, template: &str) -> Verdict {
        let mut out = String::with_capacity(template.len() + 64);
        let mut rest = template;
        while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            let Some(j) = rest[i..].find('}') else {
                break;
            };
            let name = &rest[i + 1..i + j];
            match self.figures.get(name) {
                Some(f) => out.push_str(&f.text),
                None => {
                    debug_assert!(false, "verdict slot {{{name}}} has no figure");
                    out.push_str(&rest[i..=i + j]);
                }
            }
            rest = &rest[i + j + 1..];
        }
        out.push_str(rest);
        self.text = out;
        self
    }

    /// Words in the text (the verdict is at most 60).
    pub fn words(&self) -> usize {
        self.text.split_whitespace().count()
    }
}

/// A table cell: text, or a figure (a number with its unit).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum TableCell {
    Text(String),
    Figure(Figure),
}

impl TableCell {
    /// As shown.
    pub fn text(&self) -> &str {
        match self {
            TableCell::Text(s) => s,
            TableCell::Figure(f) => &f.text,
        }
    }
}

impl From<String> for TableCell {
    fn from(s: String) -> TableCell {
        TableCell::Text(s)
    }
}

impl From<&str> for TableCell {
    fn from(s: &str) -> TableCell {
        TableCell::Text(s.into())
    }
}

impl From<Figure> for TableCell {
    fn from(f: Figure) -> TableCell {
        TableCell::Figure(f)
    }
}

/// A table row from cells of either kind.
macro_rules! row {
    ($($x:expr),* $(,)?) => { vec![$($crate::study::figure::TableCell::from($x)),*] };
}
pub(crate) use row;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_fills_its_slots_with_the_figures_text() {
        let v = Verdict::default()
            .fig("a", Figure::percent(0.4).with_interval(0.3, 0.5))
            .fig("t", Figure::ns(6930.0))
            .say("adds {a} to a fault ({t})");
        assert_eq!(
            v.text,
            "adds +0.40% [+0.30% to +0.50%] to a fault (6.93 us)"
        );
        assert_eq!(v.words(), 10);
        let j = serde_json::to_value(&v.figures["t"]).unwrap();
        assert_eq!(j["value"], 6930.0);
        assert_eq!(j["unit"], "ns");
    }

    #[test]
    fn an_interval_never_excludes_the_value_and_undefined_is_null() {
        let f = Figure::count(5.0).with_interval(6.0, 9.0);
        assert_eq!((f.low, f.high), (Some(5.0), Some(9.0)));
        let none = Figure::kib(f64::NAN);
        assert_eq!(none.text, "n/a");
        assert_eq!(
            serde_json::to_value(&none).unwrap()["value"],
            serde_json::Value::Null
        );
        assert_eq!(write(-12.4, FigUnit::Percent), "-12%");
        assert_eq!(write(16.0, FigUnit::Ratio), "16.0x");
    }
}
