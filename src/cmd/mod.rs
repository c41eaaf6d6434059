//! One module per command.

mod audit;
pub(crate) mod calibrate;
mod explain;
mod geometry;
mod import;
mod inspect;
mod record;
mod run;
mod study;
mod sweep;
mod trace;
mod validate;
mod validate_time;
mod workloads;

use crate::cli::{Cli, Command};
use crate::fail::CmdResult;
use crate::out::outln;

pub fn dispatch(cli: Cli) -> CmdResult {
    match cli.command {
        Command::Study(args) => study::run(args),
        Command::Geometry { what } => geometry::run(what),
        Command::Explain(args) => explain::run(args),
        Command::Workloads { what } => workloads::run(what),
        Command::Run(args) => run::run(args),
        Command::Compare(args) => run::compare(args),
        Command::Replay(args) => run::replay(args),
        Command::Record(args) => record::run(args),
        Command::Trace(args) => trace::run(args),
        Command::Import { what } => import::run(what),
        Command::Inspect(args) => inspect::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Audit { json, fast } => audit::run(json, fast),
        Command::Validate(args) => validate::run(args),
        Command::Sweep(args) => sweep::run(args),
    }
}

/// Prints one JSON document on stdout.
/// Refuses (exit 2) an `--out` path whose directory does not exist, before
/// a program is started only to fail at the end.
pub fn check_out_dir(out: &std::path::Path) -> Result<(), crate::fail::Failure> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(crate::fail::Failure::BadInput(format!(
                "--out {}: the directory {} does not exist",
                out.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}

pub fn print_json<T: serde::Serialize>(v: &T) -> CmdResult {
    let s = serde_json::to_string_pretty(v).map_err(anyhow::Error::from)?;
    outln!("{s}")?;
    Ok(std::process::ExitCode::SUCCESS)
}
