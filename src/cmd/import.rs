//! `ptlab import champsim|lackey FILE`: another tool's trace as a ptlab trace.

use crate::cli::ImportCmd;
use crate::fail::{CmdResult, Failure};
use std::process::ExitCode;

pub fn run(what: ImportCmd) -> CmdResult {
    let (format, args) = match what {
        ImportCmd::Champsim(a) => (import::Format::Champsim, a),
        ImportCmd::Lackey(a) => (import::Format::Lackey, a),
    };
    let out = args.out.unwrap_or_else(|| args.file.with_extension("ptl"));
    if out == args.file {
        return Err(Failure::BadInput(format!(
            "{}: the output would overwrite the input; give --out",
            args.file.display()
        )));
    }
    let s = import::import(format, &args.file, &out).map_err(|e| {
        if e.is_bad_input() {
            Failure::BadInput(e.to_string())
        } else {
            Failure::Error(anyhow::Error::new(e))
        }
    })?;
    eprintln!(
        "imported {} into {}: {} accesses ({} loads, {} stores), {} regions inferred",
        args.file.display(),
        out.display(),
        s.loads + s.stores,
        s.loads,
        s.stores,
        s.regions
    );
    Ok(ExitCode::SUCCESS)
}
