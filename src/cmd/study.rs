//! `ptlab study`: the main job.

use crate::cli::StudyArgs;
use crate::fail::{CmdResult, Failure};
use crate::out::{out, outln};
use crate::progress::Progress;
use anyhow::Context;
use experiment::study::{self, StudyOptions};
use std::process::ExitCode;

pub fn run(args: StudyArgs) -> CmdResult {
    // A file that is not a trace stops here, before any run (a trace
    // that breaks later stops its replay with the byte offset: exit 2).
    let trace: Option<&'static std::path::Path> = match args.trace {
        Some(t) => {
            if !t.is_file() {
                return Err(Failure::BadInput(format!(
                    "--trace {}: no such file",
                    t.display()
                )));
            }
            if !experiment::replay::is_trace(&t.to_string_lossy()) {
                return Err(Failure::BadInput(format!(
                    "--trace {}: not a ptlab trace (it does not start with PTLTRACE; \
                     `ptlab record`, `trace` and `import` write one)",
                    t.display()
                )));
            }
            // The options are Copy and live for the whole command.
            Some(Box::leak(t.into_boxed_path()))
        }
        None => None,
    };
    let opts = StudyOptions {
        quick: args.quick,
        production: args.production,
        trace,
    };
    let ids = study::section_ids();
    if let Some(bad) = args.only.iter().find(|o| !ids.contains(&o.as_str())) {
        return Err(Failure::BadInput(format!(
            "--only: no section \"{bad}\" (the sections: {})",
            ids.join(", ")
        )));
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create the output folder {}", args.out.display()))
        .map_err(|e| Failure::BadInput(format!("{e:#}")))?;
    let total = study::expected_runs_of(opts, &args.only);
    let costs = {
        if let Some(f) = &args.costs {
            // A missing or bad file stops before the first run (and
            // before a calibration).
            backend::model::load_costs(f).map_err(Failure::BadInput)?;
        }
        // This host's own file unless one is named (calibrated the first
        // time, before the study's progress starts).
        crate::host_costs::for_prediction(args.costs.as_deref())?
    };
    let mut pb = Progress::new(
        total,
        "study",
        "run",
        "study [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}: {msg}",
    );
    let result = study::run_selected(opts, Some(&costs), &args.only, &mut |what, runs| {
        pb.set_message(what);
        pb.set(runs, total.max(runs));
    });
    pb.finish();
    let s = result.map_err(|e| Failure::Error(anyhow::Error::new(e)))?;
    if let Some(w) = &s.load.warning {
        eprintln!("warning: {w}");
    }
    let html = study::render::html(&s);
    let json = serde_json::to_string_pretty(&s).map_err(anyhow::Error::new)?;
    let index = args.out.join("index.html");
    std::fs::write(&index, html).with_context(|| format!("writing {}", index.display()))?;
    let sj = args.out.join("study.json");
    std::fs::write(&sj, &json).with_context(|| format!("writing {}", sj.display()))?;
    if args.json {
        outln!("{json}")?;
    } else {
        out!("{}", study::render::summary(&s))?;
        outln!(
            "\nReport: {} (and {}), {} measured runs and {} warm-up runs in {:.0} s",
            index.display(),
            sj.display(),
            s.runs,
            s.warmup_runs,
            s.elapsed_s
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
