//! Terminal tables: a header with units, numbers right-aligned with thousands
//! separators, `mean ± half-width` cells whose `±` signs line up, long text wrapped.
//!
//! A table is data first ([`Cell`]s that know their kind), text second: the same table
//! renders for the terminal ([`Table::render`]), as CSV ([`Table::to_csv`], raw numbers)
//! and as HTML ([`crate::html`]). A number with a [`Unit`] other than
//! [`Unit::Plain`] is written human-scaled for people (`419 ms`, counts whole) and
//! exported exact.

use crate::number::{decimals_for, format_float, group_thousands, human, Unit};
use stats::{Interval, NotApplicable, Quantity, Ratio, Significance, Summary};
use std::fmt;

/// How a column's cells are aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A column: its header, the unit of its numbers, alignment and wrapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub header: String,
    /// Shown in the header as `header (unit)`; `None` for counts and text.
    pub unit: Option<String>,
    /// `None`: right if every non-empty cell is a number, left otherwise.
    pub align: Option<Align>,
    /// Wrap text at word boundaries to this many characters (terminal only).
    pub max_width: Option<usize>,
}

impl Column {
    /// A column with automatic alignment, no unit, no wrapping.
    pub fn new(header: impl Into<String>) -> Column {
        Column {
            header: header.into(),
            unit: None,
            align: None,
            max_width: None,
        }
    }

    /// Sets the unit; an empty unit means none.
    pub fn unit(mut self, unit: impl Into<String>) -> Column {
        let unit = unit.into();
        self.unit = (!unit.is_empty()).then_some(unit);
        self
    }

    /// Forces an alignment.
    pub fn align(mut self, align: Align) -> Column {
        self.align = Some(align);
        self
    }

    /// Wraps the column's text at `width` characters.
    pub fn wrap(mut self, width: usize) -> Column {
        self.max_width = Some(width.max(1));
        self
    }

    /// The header as shown: `"elapsed (ns)"`, or the bare header without a unit.
    pub fn title(&self) -> String {
        match &self.unit {
            Some(u) => format!("{} ({u})", self.header),
            None => self.header.clone(),
        }
    }
}

/// One value of a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Empty,
    Text(String),
    Int(i64),
    /// A number: with [`Unit::Plain`], `decimals` decimals; with another unit,
    /// scaled for people by [`human`] (`decimals` is then unused).
    Float {
        value: f64,
        decimals: usize,
        unit: Unit,
    },
    /// A mean with the half-width of its 95% confidence interval, `105.637 ± 0.061`;
    /// with a unit other than [`Unit::Plain`] and the interval's bounds in `ci`, the
    /// mean and its (possibly asymmetric) interval scaled for people,
    /// `322 (0 to 966)`, `419 ms (401 ms to 436 ms)`.
    Estimate {
        mean: f64,
        half_width: Option<f64>,
        decimals: usize,
        unit: Unit,
        ci: Option<Interval>,
    },
    /// A ratio such as "ratio to first", three decimals.
    Ratio(f64),
    /// A p-value: three decimals, or scientific notation below 0.001.
    PValue(f64),
}

impl Cell {
    /// A text cell.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    /// An integer cell.
    pub fn int(v: i64) -> Cell {
        Cell::Int(v)
    }

    /// A number with a fixed number of decimals.
    pub fn float(value: f64, decimals: usize) -> Cell {
        Cell::Float {
            value,
            decimals,
            unit: Unit::Plain,
        }
    }

    /// A number in `unit`, written for people by [`human`] (`Unit::Count`: a whole
    /// number; `Unit::Nanoseconds`: `419 ms`) and exported exact to CSV.
    pub fn quantity(value: f64, unit: Unit) -> Cell {
        Cell::Float {
            value,
            decimals: 0,
            unit,
        }
    }

    /// A mean and its CI half-width, with decimals chosen to show two significant
    /// digits of the half-width (none for exact integers).
    pub fn estimate(mean: f64, half_width: Option<f64>) -> Cell {
        Cell::Estimate {
            mean,
            half_width,
            decimals: decimals_for(mean, half_width),
            unit: Unit::Plain,
            ci: None,
        }
    }

    /// The mean of a summary with its CI half-width (no half-width for one run).
    /// A summary of counts ([`stats::Summary::of_quantity`] with
    /// [`Quantity::Count`]) shows whole numbers, one of times human-scaled
    /// nanoseconds; others as [`Cell::estimate`].
    pub fn from_summary(s: &Summary) -> Cell {
        match s.quantity {
            Quantity::Count => Cell::from_summary_in(s, Unit::Count),
            Quantity::Time => Cell::from_summary_in(s, Unit::Nanoseconds),
            _ => Cell::estimate(s.mean, s.ci95.map(|ci| ci.half_width())),
        }
    }

    /// The mean of a summary and its interval's bounds, written in `unit`
    /// (`Unit::of_counter(name)` for a counter): `"322 (0 to 966)"`. The CSV export
    /// keeps the exact mean and the half-width.
    pub fn from_summary_in(s: &Summary, unit: Unit) -> Cell {
        if unit == Unit::Plain {
            return Cell::estimate(s.mean, s.ci95.map(|ci| ci.half_width()));
        }
        Cell::Estimate {
            mean: s.mean,
            half_width: s.ci95.map(|ci| ci.half_width()),
            decimals: 0,
            unit,
            ci: s.ci95,
        }
    }

    /// A ratio cell.
    pub fn ratio(v: f64) -> Cell {
        Cell::Ratio(v)
    }

    /// A ratio of means ([`stats::ratio_of_means`]): with an interval,
    /// `1.050 ± 0.020`; exact or without an interval, the ratio; 0 / 0 the text
    /// `undefined (0 / 0)` and x / 0 `infinite`, never a number.
    pub fn from_ratio(r: &Ratio) -> Cell {
        match (*r, r.interval()) {
            (Ratio::Defined { ratio, .. }, Some(ci)) if ci.low < ci.high => Cell::Estimate {
                mean: ratio,
                half_width: Some(ci.half_width()),
                decimals: decimals_for(ratio, Some(ci.half_width())).max(2),
                unit: Unit::Plain,
                ci: Some(ci),
            },
            (Ratio::Defined { ratio, .. }, _) => Cell::Ratio(ratio),
            (Ratio::Undefined, _) => Cell::text("undefined (0 / 0)"),
            (Ratio::Infinite { .. }, _) => Cell::text("infinite (x / 0)"),
        }
    }

    /// The outcome of [`stats::compare_means`]: its p-value, or why there is none
    /// (`n/a: exact`, `n/a: identical`, `n/a: too few runs`), never `0.000` for a
    /// test that was not meaningful.
    pub fn from_significance(s: &Significance) -> Cell {
        match s {
            Significance::Tested { test } => Cell::PValue(test.p),
            Significance::NotApplicable { why } => Cell::text(match why {
                NotApplicable::NoSpread { .. } => "n/a: exact",
                NotApplicable::IdenticalSamples => "n/a: identical",
                NotApplicable::TooFewRuns { .. } => "n/a: too few runs",
            }),
        }
    }

    /// A p-value cell.
    pub fn p_value(p: f64) -> Cell {
        Cell::PValue(p)
    }

    /// Whether the cell holds a number (numbers align right).
    pub fn is_numeric(&self) -> bool {
        !matches!(self, Cell::Empty | Cell::Text(_))
    }

    /// The cell as text for people, without padding.
    pub fn display(&self) -> String {
        match self {
            Cell::Estimate { .. } => {
                let (m, h) = self.estimate_parts().expect("an estimate");
                match h {
                    Some(h) => format!("{m}{}{h}", self.estimate_separator()),
                    None => m,
                }
            }
            _ => self.plain_display(),
        }
    }

    fn plain_display(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Text(s) => s.clone(),
            Cell::Int(v) => group_thousands(*v),
            Cell::Float {
                value,
                decimals,
                unit: Unit::Plain,
            } => format_float(*value, *decimals),
            Cell::Float { value, unit, .. } => human(*value, *unit),
            Cell::Ratio(r) => format_float(*r, if r.abs() >= 100.0 { 1 } else { 3 }),
            Cell::PValue(p) if *p > 0.0 && *p < 0.001 => format!("{p:.1e}"),
            Cell::PValue(p) => format_float(*p, 3),
            Cell::Estimate { .. } => self.display(),
        }
    }

    /// `(mean text, spread text)` of an estimate, `None` for other cells: the
    /// half-width, or with a unit the interval's bounds in parentheses.
    fn estimate_parts(&self) -> Option<(String, Option<String>)> {
        match *self {
            Cell::Estimate {
                mean,
                half_width,
                decimals,
                unit: Unit::Plain,
                ..
            } => Some((
                format_float(mean, decimals),
                half_width.map(|h| format_float(h, decimals)),
            )),
            Cell::Estimate { mean, unit, ci, .. } => Some((
                human(mean, unit),
                ci.map(|c| format!("({} to {})", human(c.low, unit), human(c.high, unit))),
            )),
            _ => None,
        }
    }

    /// What stands between an estimate's mean and its spread: `" ± "` before a
    /// half-width, a space before bounds.
    fn estimate_separator(&self) -> &'static str {
        match self {
            Cell::Estimate {
                unit: Unit::Plain, ..
            } => " ± ",
            _ => " ",
        }
    }
}

/// A table: optional title, columns, rows of cells, notes printed under it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    title: Option<String>,
    columns: Vec<Column>,
    rows: Vec<Vec<Cell>>,
    notes: Vec<String>,
}

impl Table {
    /// A table with these headers (automatic alignment, no units).
    pub fn new<I, S>(headers: I) -> Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Table::with_columns(headers.into_iter().map(Column::new).collect())
    }

    /// A table with these columns.
    pub fn with_columns(columns: Vec<Column>) -> Table {
        Table {
            columns,
            ..Table::default()
        }
    }

    /// Sets the title printed above the table.
    pub fn with_title(mut self, title: impl Into<String>) -> Table {
        self.title = Some(title.into());
        self
    }

    /// The column at `index`, to set its unit, alignment or wrapping.
    ///
    /// # Panics
    /// If there is no such column.
    pub fn column_mut(&mut self, index: usize) -> &mut Column {
        &mut self.columns[index]
    }

    /// Appends a row; a short row is padded with empty cells.
    ///
    /// # Panics
    /// If the row has more cells than the table has columns (a programming error).
    pub fn push_row<I: IntoIterator<Item = Cell>>(&mut self, cells: I) {
        let mut row: Vec<Cell> = cells.into_iter().collect();
        assert!(
            row.len() <= self.columns.len(),
            "row of {} cells in a table of {} columns",
            row.len(),
            self.columns.len()
        );
        row.resize(self.columns.len(), Cell::Empty);
        self.rows.push(row);
    }

    /// Adds a line printed under the table (a warning, a legend).
    pub fn push_note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    pub fn rows(&self) -> &[Vec<Cell>] {
        &self.rows
    }

    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The alignment column `c` gets.
    pub fn alignment(&self, c: usize) -> Align {
        self.columns[c].align.unwrap_or_else(|| {
            let mut cells = self
                .rows
                .iter()
                .map(|r| &r[c])
                .filter(|x| **x != Cell::Empty);
            let mut any = false;
            let numeric = cells.all(|x| {
                any = true;
                x.is_numeric()
            });
            if any && numeric {
                Align::Right
            } else {
                Align::Left
            }
        })
    }

    /// The table as text for a terminal; lines end without trailing spaces and the
    /// text ends with a newline.
    pub fn render(&self) -> String {
        let ncol = self.columns.len();
        // Cell texts, each a list of lines (more than one only for wrapped columns).
        let mut texts: Vec<Vec<Vec<String>>> = Vec::with_capacity(self.rows.len());
        let estimate_widths: Vec<(usize, usize)> =
            (0..ncol).map(|c| self.estimate_widths(c)).collect();
        for row in &self.rows {
            let mut out = Vec::with_capacity(ncol);
            for (c, cell) in row.iter().enumerate() {
                let sep = cell.estimate_separator();
                let text = match (cell.estimate_parts(), estimate_widths[c]) {
                    (Some((m, Some(h))), (mw, hw)) => {
                        format!("{}{m}{sep}{}{h}", pad(mw, &m), pad(hw, &h))
                    }
                    (Some((m, None)), (mw, hw)) if hw > 0 => {
                        format!("{}{m}{}", pad(mw, &m), " ".repeat(hw + width(sep)))
                    }
                    _ => cell.display(),
                };
                out.push(match self.columns[c].max_width {
                    Some(w) => wrap(&text, w),
                    None => vec![text],
                });
            }
            texts.push(out);
        }
        let headers: Vec<String> = self.columns.iter().map(Column::title).collect();
        let widths: Vec<usize> = (0..ncol)
            .map(|c| {
                texts
                    .iter()
                    .flat_map(|r| r[c].iter())
                    .map(|s| width(s))
                    .chain(std::iter::once(width(&headers[c])))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let aligns: Vec<Align> = (0..ncol).map(|c| self.alignment(c)).collect();
        let line = |cells: &[&str]| -> String {
            let mut s = String::new();
            for (c, text) in cells.iter().enumerate() {
                if c > 0 {
                    s.push_str("  ");
                }
                let fill = " ".repeat(widths[c] - width(text));
                match aligns[c] {
                    Align::Left => {
                        s.push_str(text);
                        s.push_str(&fill);
                    }
                    Align::Right => {
                        s.push_str(&fill);
                        s.push_str(text);
                    }
                }
            }
            s.trim_end().to_string()
        };
        let mut out = String::new();
        if let Some(t) = &self.title {
            out.push_str(t);
            out.push('\n');
        }
        let hdr: Vec<&str> = headers.iter().map(String::as_str).collect();
        out.push_str(&line(&hdr));
        out.push('\n');
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        let rule: Vec<&str> = rule.iter().map(String::as_str).collect();
        out.push_str(&line(&rule));
        out.push('\n');
        for row in &texts {
            let height = row.iter().map(Vec::len).max().unwrap_or(1);
            for l in 0..height {
                let cells: Vec<&str> = row
                    .iter()
                    .map(|lines| lines.get(l).map_or("", String::as_str))
                    .collect();
                out.push_str(&line(&cells));
                out.push('\n');
            }
        }
        for n in &self.notes {
            out.push_str(n);
            out.push('\n');
        }
        out
    }

    /// Widest mean text and widest half-width text among the estimates of column `c`.
    fn estimate_widths(&self, c: usize) -> (usize, usize) {
        self.rows
            .iter()
            .filter_map(|r| r[c].estimate_parts())
            .fold((0, 0), |(mw, hw), (m, h)| {
                (mw.max(width(&m)), hw.max(h.as_deref().map_or(0, width)))
            })
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

/// Display width, counting characters (the tables hold no wide characters).
fn width(s: &str) -> usize {
    s.chars().count()
}

fn pad(w: usize, s: &str) -> String {
    " ".repeat(w.saturating_sub(width(s)))
}

/// Splits `text` into lines of at most `w` characters at spaces; a word longer than
/// `w` is cut.
fn wrap(text: &str, w: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > w {
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
            }
            lines.push(word.drain(..w).collect());
        }
        let word: String = word.into_iter().collect();
        if word.is_empty() {
            continue;
        }
        if !cur.is_empty() && width(&cur) + 1 + width(&word) > w {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(&word);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrapping_keeps_words_and_cuts_long_ones() {
        assert_eq!(wrap("a bb ccc dddd", 6), vec!["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("abcdefgh", 3), vec!["abc", "def", "gh"]);
        assert_eq!(wrap("", 5), vec![""]);
    }
}
