//! CSV export of a [`Table`]: the same columns with raw numbers (no thousands
//! separators, full precision), an estimate column split into the mean and a
//! `ci95_half_width` column. Titles and notes are not data and are left out.

use crate::error::ReportError;
use crate::table::{Cell, Table};

impl Table {
    /// The table as CSV (RFC 4180 quoting by the `csv` crate), one header line.
    ///
    /// # Errors
    /// [`ReportError::Csv`] if the writer fails (it writes to memory, so only on a
    /// bug in the writer).
    pub fn to_csv(&self) -> Result<String, ReportError> {
        let split: Vec<bool> = (0..self.columns().len())
            .map(|c| {
                self.rows()
                    .iter()
                    .any(|r| matches!(r[c], Cell::Estimate { .. }))
            })
            .collect();
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = Vec::new();
        for (c, col) in self.columns().iter().enumerate() {
            header.push(col.title());
            if split[c] {
                header.push(format!("{} ci95_half_width", col.title()));
            }
        }
        w.write_record(&header)?;
        for row in self.rows() {
            let mut rec = Vec::with_capacity(header.len());
            for (c, cell) in row.iter().enumerate() {
                let (main, half) = raw(cell);
                rec.push(main);
                if split[c] {
                    rec.push(half.unwrap_or_default());
                }
            }
            w.write_record(&rec)?;
        }
        let bytes = w
            .into_inner()
            .map_err(|e| ReportError::Csv(e.into_error().into()))?;
        Ok(String::from_utf8(bytes).expect("CSV of UTF-8 strings is UTF-8"))
    }
}

/// A number as CSV wants it: shortest exact decimal, empty for NaN.
fn num(v: f64) -> String {
    if v.is_nan() {
        String::new()
    } else {
        format!("{v}")
    }
}

fn raw(cell: &Cell) -> (String, Option<String>) {
    match cell {
        Cell::Empty => (String::new(), None),
        Cell::Text(s) => (s.clone(), None),
        Cell::Int(v) => (v.to_string(), None),
        Cell::Float { value, .. } | Cell::Ratio(value) | Cell::PValue(value) => (num(*value), None),
        Cell::Estimate {
            mean, half_width, ..
        } => (num(*mean), half_width.map(num)),
    }
}
