//! `ptlab study`: the main job.

use crate::out::{out, outln};
use crate::cli::StudyArgs;
use crate::fail::{CmdResult, Failure};
use anyhow::Context;
use experiment::study::{self, StudyOptions};
use indicatif::{ProgressBar, ProgressStyle};
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: StudyArgs) -> CmdResult {
    let opts = StudyOptions { quick: args.quick };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create the output folder {}", args.out.display()))
        .map_err(|e| Failure::BadInput(format!("{e:#}")))?;
    let pb = ProgressBar::new(study::expected_runs(opts) as u64);
    pb.set_style(
        ProgressStyle::with_template(
            "study [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}: {msg}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    pb.enable_steady_tick(Duration::from_millis(200));
    let result = study::run(opts, &mut |what, runs| {
        pb.set_message(what.to_string());
        pb.set_position(runs as u64);
    });
    pb.finish_and_clear();
    let s = result.map_err(|e| Failure::Error(anyhow::Error::new(e)))?;
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
            "\nReport: {} (and {}), {} runs in {:.0} s",
            index.display(),
            sj.display(),
            s.runs,
            s.elapsed_s
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
