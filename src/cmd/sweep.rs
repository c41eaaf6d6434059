//! `ptlab sweep FILE`: every task of a sweep file on this machine's cores,
//! one table (docs/sweep.md). A bad file: exit 2 before anything runs. A
//! failed task: retried once, kept in the table with its message, listed on
//! stderr, exit 1 after the table is written.

use crate::cli::SweepArgs;
use crate::fail::{bad, CmdResult, Failure};
use crate::out::out;
use experiment::sweep;
use std::process::ExitCode;

pub fn run(args: SweepArgs) -> CmdResult {
    let path = args.file.display().to_string();
    let file = sweep::read(&path).map_err(bad)?;
    // Every task prices with this host's own cost file unless the sweep
    // names one (in [config] or as an axis).
    let names_costs =
        file.config.iter().any(|(k, _)| k == "costs") || file.axes.iter().any(|a| a.key == "costs");
    crate::host_costs::install_default(!names_costs)?;
    let format = match &args.out {
        None => None,
        Some(p) => match p.extension().and_then(|e| e.to_str()) {
            Some("csv") => Some((p, false)),
            Some("json") => Some((p, true)),
            _ => {
                return Err(Failure::BadInput(format!(
                    "--out {}: the table is written as .csv or .json (Parquet: the Python package's ptlab.sweep)",
                    p.display()
                )))
            }
        },
    };
    if args.jobs == Some(0) {
        return Err(Failure::BadInput("--jobs must be at least 1".into()));
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let tasks = sweep::expand(&file);
    let mut pb = super::run::progress(
        tasks.len(),
        &format!("sweep {} ({jobs} jobs)", file.name),
        "task",
    );
    let outcomes = sweep::run_local(&tasks, jobs, &mut |done, total, _| pb.set(done, total));
    pb.finish();
    let table = sweep::Table::new(&file.name, &outcomes);
    let as_json = format.map_or(args.json, |(_, json)| json);
    let text = match as_json {
        true => {
            let mut s =
                serde_json::to_string_pretty(&table.to_json()).map_err(anyhow::Error::from)?;
            s.push('\n');
            s
        }
        false => table.to_csv().map_err(anyhow::Error::from)?,
    };
    match format {
        Some((p, _)) => std::fs::write(p, &text).map_err(|e| {
            Failure::Error(anyhow::Error::new(e).context(format!("writing {}", p.display())))
        })?,
        None => out!("{text}")?,
    }
    eprintln!(
        "sweep {}: {} tasks, {} rows, {} failed",
        file.name,
        table.tasks,
        table.rows.len(),
        table.failed
    );
    for o in &outcomes {
        if let Err(m) = &o.result {
            eprintln!(
                "failed after {} attempts: task {} ({}): {m}",
                o.attempts, o.task.index, o.config
            );
        }
    }
    Ok(if table.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
