//! `ptlab validate`: the kernel as referee of the model.

use super::print_json;
use crate::cli::ValidateArgs;
use crate::cmd::run::{about_workload, config_from, progress};
use crate::fail::{CmdResult, Failure};
use crate::out::{out, outln};
use experiment::validate;
use std::process::ExitCode;

pub fn run(args: ValidateArgs) -> CmdResult {
    if args.time {
        return super::validate_time::run(args);
    }
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
    let outcome = validate::validate(&names, &model, !args.unpinned, &mut |d| {
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
        outln!(
            "Compared at every mark: {} ({} counters)",
            outcome.compared.join(", "),
            outcome.compared.len()
        )?;
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
        for s in &outcome.skipped {
            outln!("{}", s.reason)?;
        }
        if !rows.is_empty() {
            outln!()?;
            out!("{}", report::views::validate_table(&rows).render())?;
        }
        print_observed(&outcome)?;
        let skipped = if outcome.skipped.is_empty() {
            String::new()
        } else {
            format!("; {} skipped", outcome.skipped.len())
        };
        outln!(
            "\n{} of {} workloads agree with the kernel on the compared counters ({}); {} warning(s){skipped}",
            outcome.workloads.iter().filter(|w| w.ok).count(),
            outcome.workloads.len(),
            model.label,
            outcome.warnings
        )?;
    }
    Ok(if outcome.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The observed counters side by side: a row per workload where either side
/// is nonzero, then each warning with its reason.
fn print_observed(outcome: &validate::Outcome) -> Result<(), Failure> {
    use report::{Cell, Table};
    let mut t = Table::new(["workload", "counter", "kernel", "runs", "model", ""]);
    let mut quiet = 0;
    for w in &outcome.workloads {
        for o in &w.observed {
            let (min, max) = o.kernel.range();
            if max == 0 && o.model == 0 {
                quiet += 1;
                continue;
            }
            t.push_row([
                Cell::text(&w.workload),
                Cell::text(&o.counter),
                Cell::text(if min == max {
                    min.to_string()
                } else {
                    format!("{min} to {max}")
                }),
                Cell::int(o.kernel.samples.len() as i64),
                Cell::int(o.model),
                Cell::text(if o.warning.is_some() { "warning" } else { "" }),
            ]);
        }
    }
    outln!(
        "\nObserved, not compared (the kernel's value is not the workload's alone), at the end mark: {}",
        outcome.observed.join(", ")
    )?;
    if quiet > 0 {
        outln!("0 on both sides in {quiet} workload(s)")?;
    }
    if !t.is_empty() {
        out!("{}", t.render())?;
    }
    for w in &outcome.workloads {
        for o in w.warnings() {
            outln!(
                "warning: {} {}: {}",
                w.workload,
                o.counter,
                o.warning.as_deref().unwrap_or_default()
            )?;
        }
    }
    Ok(())
}
