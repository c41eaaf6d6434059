//! `ptlab validate --time`: predicted against measured time, per workload
//! (see `experiment::validate::time`).

use super::print_json;
use crate::cli::ValidateArgs;
use crate::cmd::run::{about_workload, config_from, progress};
use crate::fail::{CmdResult, Failure};
use crate::out::outln;
use experiment::validate::time::{self, TimeCase, TimeOutcome};
use std::process::ExitCode;

pub fn run(args: ValidateArgs) -> CmdResult {
    if args.repeat == 0 {
        return Err(Failure::BadInput("--repeat must be at least 1".into()));
    }
    let model = config_from("model", &args.model)?;
    crate::cmd::run::with_host_costs(std::slice::from_ref(&model))?;
    let cases = if args.workloads.is_empty() {
        time::default_cases()
    } else {
        time::cases_of(&args.workloads)
            .map_err(|e| about_workload(&args.workloads.join(", "), e))?
    };
    let total = cases.len() * args.repeat * 2;
    let mut pb = progress(total, "validate --time", "run");
    let outcome = time::validate_time(&cases, &model, args.repeat, &mut |d, t, label| {
        pb.set_message(label);
        pb.set(d, t);
    });
    pb.finish();
    let outcome = outcome.map_err(|(label, e): (String, _)| about_workload(&label, e))?;
    if args.json {
        print_json(&outcome)?;
    } else {
        print_table(&outcome, args.markdown)?;
    }
    Ok(if outcome.nondeterministic.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Three significant figures in the unit that suits `ns`.
pub fn dur(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "us")
    } else {
        (ns, "ns")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

fn row(c: &TimeCase) -> [String; 7] {
    [
        c.workload.clone(),
        c.threads.to_string(),
        format!(
            "{} [{}, {}]",
            dur(c.measured.median),
            dur(c.measured.lo),
            dur(c.measured.hi)
        ),
        format!(
            "{} [{}, {}]",
            dur(c.predicted_ns),
            dur(c.predicted_lo_ns),
            dur(c.predicted_hi_ns)
        ),
        format!("{:+.1}", c.error_pct),
        c.cpu.as_ref().map_or("-".into(), |k| {
            format!("{} ({:+.1})", dur(k.median.median), k.error_pct)
        }),
        if c.calibration_like.is_some() {
            "calibration-like".into()
        } else {
            String::new()
        },
    ]
}

const HEAD: [&str; 7] = [
    "workload",
    "threads",
    "measured median [interval]",
    "predicted [lo, hi]",
    "error %",
    "kernel CPU time (error %)",
    "",
];

fn print_table(o: &TimeOutcome, markdown: bool) -> Result<(), Failure> {
    let rows: Vec<[String; 7]> = o.cases.iter().map(row).collect();
    if markdown {
        outln!("| {} |", HEAD.join(" | "))?;
        outln!("|{}", " --- |".repeat(HEAD.len()))?;
        for r in &rows {
            outln!("| {} |", r.join(" | "))?;
        }
    } else {
        let mut t = report::Table::new(HEAD);
        for r in &rows {
            t.push_row(r.iter().map(|s| report::Cell::text(s.as_str())));
        }
        crate::out::out!("{}", t.render())?;
    }
    let h = &o.held_out;
    outln!()?;
    outln!(
        "Held out ({} cases; {} calibration-like left out): median |error| {}, {} of {} within 15%, {} of {} within 30%; intervals overlap in {} of {}.",
        h.cases,
        o.cases.len() - h.cases,
        h.median_abs_error_pct
            .map_or("-".into(), |e| format!("{e:.1}%")),
        h.within_15,
        h.cases,
        h.within_30,
        h.cases,
        h.overlapping,
        h.cases
    )?;
    let k = &o.held_out_cpu;
    outln!(
        "Against the kernel's CPU time (one-thread held-out cases, {}): median |error| {}, {} within 15%, {} within 30%.",
        k.cases,
        k.median_abs_error_pct
            .map_or("-".into(), |e| format!("{e:.1}%")),
        k.within_15,
        k.within_30
    )?;
    outln!(
        "Measured: the kernel's elapsed time less its marks' counter reads, median of {} run(s) alternating with the model's; interval: {}.",
        o.repeat,
        o.measured_interval
    )?;
    outln!(
        "Predicted: the model's makespan in virtual time with {}; [lo, hi] from the cost file's intervals.",
        o.costs
    )?;
    if let Some(l) = &o.costs_label {
        outln!("{}", l.line())?;
    }
    let load = |l: &Option<time::Load>| {
        l.as_ref().map_or("unknown".into(), |l| {
            format!(
                "{:.2} {:.2} {:.2}{}",
                l.avg[0],
                l.avg[1],
                l.avg[2],
                l.runnable
                    .map_or(String::new(), |r| format!(" ({r} runnable)"))
            )
        })
    };
    outln!(
        "Host load average before {}, after {}.",
        load(&o.load_before),
        load(&o.load_after)
    )?;
    for c in o.cases.iter().filter(|c| c.calibration_like.is_some()) {
        outln!(
            "calibration-like: {} repeats {}",
            c.workload,
            c.calibration_like.unwrap_or_default()
        )?;
    }
    for n in &o.nondeterministic {
        outln!("error: the model predicted different times for {n} in two runs")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_keep_three_figures() {
        assert_eq!(dur(950.0), "950 ns");
        assert_eq!(dur(12_345.0), "12.3 us");
        assert_eq!(dur(3_210_000.0), "3.21 ms");
        assert_eq!(dur(45_600_000_000.0), "45.6 s");
    }
}
