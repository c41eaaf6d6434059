//! The sweep's table: one row per task, run and mark (a failed task: one
//! row with its status, attempts and message), columns `workload`,
//! `config`, `tlb_used`, the axes by key, `run`, `mark`, `status`,
//! `attempts`, `error`,
//! then every counter any run had, sorted by name (empty where a run has
//! none).
//!
//! Invariant: the table is a function of the outcomes and the axes alone, so
//! outcomes gathered from Ray give the table of outcomes run on local cores.

use super::runner::Outcome;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// A cell: text, a whole number, or nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    Text(String),
    Int(i64),
    Empty,
}

impl Cell {
    fn csv(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(n) => n.to_string(),
            Cell::Empty => String::new(),
        }
    }
}

/// The table of a sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub tasks: usize,
    pub failed: usize,
}

/// The fixed columns before the axes and after them.
const LEADING: [&str; 3] = ["workload", "config", "tlb_used"];
const TRAILING: [&str; 5] = ["run", "mark", "status", "attempts", "error"];

impl Table {
    /// The table of `outcomes` (ordered by task index) of the sweep `name`.
    pub fn new(name: &str, outcomes: &[Outcome]) -> Table {
        let mut sorted: Vec<&Outcome> = outcomes.iter().collect();
        sorted.sort_by_key(|o| o.task.index);
        let axes: Vec<String> = sorted
            .first()
            .map(|o| o.task.axes.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        let counters: BTreeSet<&String> = sorted
            .iter()
            .filter_map(|o| o.result.as_ref().ok())
            .flatten()
            .flat_map(|r| r.counters.keys())
            .collect();
        let mut columns: Vec<String> = LEADING.iter().map(|s| s.to_string()).collect();
        columns.extend(axes.iter().cloned());
        columns.extend(TRAILING.iter().map(|s| s.to_string()));
        columns.extend(counters.iter().map(|s| s.to_string()));
        let text = |s: &str| Cell::Text(s.to_string());
        let mut rows = Vec::new();
        let mut failed = 0;
        for o in &sorted {
            let mut lead = vec![
                text(&o.task.workload),
                text(&o.config),
                o.tlb.as_deref().map_or(Cell::Empty, text),
            ];
            lead.extend(o.task.axes.iter().map(|(_, v)| text(v)));
            match &o.result {
                Ok(marks) => {
                    for m in marks {
                        let mut row = lead.clone();
                        row.extend([
                            Cell::Int(m.run as i64),
                            text(&m.mark),
                            text("ok"),
                            Cell::Int(i64::from(o.attempts)),
                            Cell::Empty,
                        ]);
                        row.extend(
                            counters
                                .iter()
                                .map(|c| m.counters.get(*c).map_or(Cell::Empty, |v| Cell::Int(*v))),
                        );
                        rows.push(row);
                    }
                }
                Err(message) => {
                    failed += 1;
                    let mut row = lead.clone();
                    row.extend([
                        Cell::Empty,
                        Cell::Empty,
                        text("failed"),
                        Cell::Int(i64::from(o.attempts)),
                        text(message),
                    ]);
                    row.extend(counters.iter().map(|_| Cell::Empty));
                    rows.push(row);
                }
            }
        }
        Table {
            name: name.to_string(),
            columns,
            rows,
            tasks: sorted.len(),
            failed,
        }
    }

    /// The table as CSV (a header line, then the rows).
    ///
    /// # Errors
    /// The CSV writer's (none expected writing to memory).
    pub fn to_csv(&self) -> Result<String, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&self.columns)?;
        for r in &self.rows {
            w.write_record(r.iter().map(Cell::csv))?;
        }
        let bytes = w.into_inner().map_err(|e| e.into_error())?;
        Ok(String::from_utf8(bytes).expect("the cells are UTF-8"))
    }

    /// The table as one JSON document: `sweep`, `tasks`, `failed`,
    /// `columns`, and `rows` (arrays in column order, `null` where empty).
    pub fn to_json(&self) -> Value {
        json!({
            "sweep": self.name,
            "tasks": self.tasks,
            "failed": self.failed,
            "columns": self.columns,
            "rows": self.rows,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::expand::Task;
    use super::super::runner::MarkRow;
    use super::*;

    fn outcome(index: usize, result: Result<Vec<MarkRow>, String>) -> Outcome {
        Outcome {
            task: Task {
                index,
                workload: "w".into(),
                pairs: vec![("cpus".into(), index.to_string())],
                axes: vec![("cpus".into(), index.to_string())],
                repeat: 1,
                timeout_s: 1,
            },
            config: format!("cpus={index}"),
            tlb: result.is_ok().then(|| "zen4".to_string()),
            attempts: if result.is_ok() { 1 } else { 2 },
            result,
        }
    }

    #[test]
    fn failed_tasks_keep_a_row_and_rows_follow_the_task_order() {
        let ok = |v: i64| {
            Ok(vec![MarkRow {
                run: 0,
                mark: "end".into(),
                counters: [("minor_faults".to_string(), v)].into(),
            }])
        };
        let t = Table::new(
            "s",
            &[
                outcome(2, ok(7)),
                outcome(1, Err("bad, \"tlb\"".into())),
                outcome(0, ok(5)),
            ],
        );
        assert_eq!(
            t.columns,
            [
                "workload",
                "config",
                "tlb_used",
                "cpus",
                "run",
                "mark",
                "status",
                "attempts",
                "error",
                "minor_faults"
            ]
        );
        assert_eq!((t.tasks, t.failed, t.rows.len()), (3, 1, 3));
        assert_eq!(t.rows[0][2], Cell::Text("zen4".into()));
        assert_eq!(t.rows[0][9], Cell::Int(5));
        assert_eq!(t.rows[1][6], Cell::Text("failed".into()));
        assert_eq!(t.rows[1][7], Cell::Int(2));
        assert_eq!(t.rows[1][9], Cell::Empty);
        let csv = t.to_csv().unwrap();
        assert_eq!(
            csv.lines().nth(2).unwrap(),
            "w,cpus=1,,1,,,failed,2,\"bad, \"\"tlb\"\"\","
        );
        assert_eq!(t.to_json()["rows"][1][9], Value::Null);
    }
}
