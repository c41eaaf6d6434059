//! `ptlab workloads list|show`.

use super::print_json;
use crate::cli::WorkloadsCmd;
use crate::fail::{CmdResult, Failure};
use crate::out::{out, outln};
use serde_json::json;
use std::process::ExitCode;

pub fn run(what: WorkloadsCmd) -> CmdResult {
    match what {
        WorkloadsCmd::List { json, validation } => {
            let rows: Vec<(String, String, String)> = if validation {
                workload::validate_suite()
                    .iter()
                    .map(|(n, text)| (n.to_string(), description(text), String::new()))
                    .collect()
            } else {
                workload::builtin::list()
                    .into_iter()
                    .map(|(n, d, s)| (n.into(), d.into(), s.into()))
                    .collect()
            };
            if json {
                return print_json(
                    &rows
                        .iter()
                        .map(|(n, d, s)| json!({"name": n, "description": d, "seed": s}))
                        .collect::<Vec<_>>(),
                );
            }
            let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(4);
            for (n, d, s) in &rows {
                let seed = if s.is_empty() {
                    String::new()
                } else {
                    format!(" [seed: {s}]")
                };
                outln!("{n:<width$}  {d}{seed}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        WorkloadsCmd::Show { name } => {
            let text = workload::builtin::get(&name)
                .or_else(|| workload::builtin::get_validate(&name))
                .ok_or_else(|| {
                    Failure::BadInput(format!(
                        "no built-in workload \"{name}\"{}; `ptlab workloads list` shows them",
                        workload::suggest::did_you_mean(&name, &workload::builtin::names())
                    ))
                })?;
            out!("{text}")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The `description` line of a workload's TOML.
fn description(text: &str) -> String {
    text.parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("description")?.as_str().map(str::to_string))
        .unwrap_or_default()
}
