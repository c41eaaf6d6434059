//! `ptlab validate`: the kernel as referee of the model.

use super::print_json;
use crate::cli::ValidateArgs;
use crate::cmd::run::{about_workload, config_from, progress};
use crate::fail::CmdResult;
use crate::out::{out, outln};
use experiment::validate;
use std::process::ExitCode;

pub fn run(args: ValidateArgs) -> CmdResult {
    let model = config_from("model", &args.model)?;
    let names: Vec<String> = if args.workloads.is_empty() {
        workload::validate_suite()
            .iter()
            .map(|(n, _)| n.to_string())
            .collect()
    } else {
        args.workloads.clone()
    };
    let mut pb = progress(names.len(), "validate", "workload");
    // validate reports each workload when it is done, so on an error the one
    // under way is the one after the last reported.
    let mut done = 0;
    let outcome = validate::validate(&names, &model, &mut |d| {
        done = d;
        pb.set(d, names.len());
    });
    pb.finish();
    let outcome = outcome.map_err(|e| about_workload(&names[done.min(names.len() - 1)], e))?;
    if args.json {
        print_json(&outcome)?;
    } else {
        let rows: Vec<report::views::DiffRow> = outcome
            .workloads
            .iter()
            .flat_map(|w| {
                w.diffs.iter().map(move |d| report::views::DiffRow {
                    workload: &w.workload,
                    mark: &d.mark,
                    counter: &d.counter,
                    kernel: d.kernel,
                    model: d.model,
                })
            })
            .collect();
        for w in &outcome.workloads {
            outln!(
                "{:<28} {}",
                w.workload,
                if w.ok {
                    format!("ok ({} marks, {} counters each)", w.marks, w.counters)
                } else {
                    format!("{} difference(s)", w.diffs.len())
                }
            )?;
        }
        if !rows.is_empty() {
            outln!()?;
            out!("{}", report::views::validate_table(&rows).render())?;
        }
        outln!(
            "\n{} of {} workloads agree with the kernel ({})",
            outcome.workloads.iter().filter(|w| w.ok).count(),
            outcome.workloads.len(),
            model.label
        )?;
    }
    Ok(if outcome.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
