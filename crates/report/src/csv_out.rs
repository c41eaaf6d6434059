//! CSV exports.
//!
//! - [`Table::to_csv`]: a table's columns with raw numbers (no thousands
//!   separators, full precision); an estimate column is followed by a
//!   `<column> ci95_half_width` column only when some row has a half-width, so
//!   no column is always empty. Titles and notes are not data and are left out.
//! - [`runs_to_csv`]: every raw value of every run, in long form: one row per
//!   configuration, mark, counter and run, under one header ([`RUNS_CSV_HEADER`]).

use crate::error::ReportError;
use crate::table::{Cell, Table};
use crate::views::flatten;
use workload::result::Run;

/// The header of [`runs_to_csv`].
pub const RUNS_CSV_HEADER: [&str; 7] = [
    "config", "workload", "mark", "counter", "unit", "run", "value",
];

/// The runs of one configuration, for [`runs_to_csv`].
#[derive(Debug, Clone, Copy)]
pub struct ConfigRuns<'a> {
    pub config: &'a str,
    pub workload: &'a str,
    pub runs: &'a [Run],
}

/// Every counter's value at every mark of every run of every configuration, one
/// row each (runs numbered from 1 in the order they were measured; table pages
/// per level as `pt_pages.<LEVEL>`), exact integers.
///
/// # Errors
/// [`ReportError::Csv`] if the writer fails (only on a bug in the writer).
pub fn runs_to_csv(configs: &[ConfigRuns<'_>]) -> Result<String, ReportError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(RUNS_CSV_HEADER)?;
    for c in configs {
        for (i, run) in c.runs.iter().enumerate() {
            let number = (i + 1).to_string();
            for m in &run.marks {
                for (k, v) in flatten(&m.counters) {
                    w.write_record([
                        c.config,
                        c.workload,
                        &m.name,
                        &k,
                        counters::unit_of(&k),
                        &number,
                        &v.to_string(),
                    ])?;
                }
            }
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|e| ReportError::Csv(e.into_error().into()))?;
    Ok(String::from_utf8(bytes).expect("CSV of UTF-8 strings is UTF-8"))
}

impl Table {
    /// The table as CSV (RFC 4180 quoting by the `csv` crate), one header line.
    ///
    /// # Errors
    /// [`ReportError::Csv`] if the writer fails (it writes to memory, so only on a
    /// bug in the writer).
    pub fn to_csv(&self) -> Result<String, ReportError> {
        let split: Vec<bool> = (0..self.columns().len())
            .map(|c| {
                self.rows().iter().any(|r| {
                    matches!(
                        r[c],
                        Cell::Estimate {
                            half_width: Some(_),
                            ..
                        }
                    )
                })
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

#[cfg(test)]
mod tests {
    use super::*;
    use workload::result::{Counters, Mark};

    #[test]
    fn an_estimate_without_half_widths_gets_no_empty_column() {
        let mut t = Table::new(["counter", "mean"]);
        t.push_row([Cell::text("a"), Cell::estimate(4.0, None)]);
        assert_eq!(t.to_csv().unwrap(), "counter,mean\na,4\n");
    }

    #[test]
    fn runs_in_long_form_one_row_per_value() {
        let run = |v: i64| {
            let mut c = Counters::default();
            c.set("minor_faults", v);
            c.pt_pages.insert("PTE".into(), 1);
            Run {
                marks: vec![Mark {
                    name: "end".into(),
                    counters: c,
                    latency: None,
                }],
            }
        };
        let runs = [run(3), run(5)];
        let csv = runs_to_csv(&[ConfigRuns {
            config: "a",
            workload: "w",
            runs: &runs,
        }])
        .unwrap();
        assert_eq!(
            csv,
            "config,workload,mark,counter,unit,run,value\n\
             a,w,end,minor_faults,,1,3\n\
             a,w,end,pt_pages.PTE,,1,1\n\
             a,w,end,minor_faults,,2,5\n\
             a,w,end,pt_pages.PTE,,2,1\n"
        );
    }
}
