//! `ptlab import champsim|lackey FILE`: another tool's trace as a ptlab trace.

use crate::cli::ImportCmd;
use crate::fail::{CmdResult, Failure};
use std::process::ExitCode;

pub fn run(what: ImportCmd) -> CmdResult {
    let (format, args) = match what {
        ImportCmd::Champsim {
            args,
            cloudsuite: false,
        } => (import::Format::Champsim, args),
        ImportCmd::Champsim {
            args,
            cloudsuite: true,
        } => (import::Format::Cloudsuite, args),
        ImportCmd::Lackey(a) => (import::Format::Lackey, a),
    };
    let out = args.out.unwrap_or_else(|| args.file.with_extension("ptl"));
    if out == args.file {
        return Err(Failure::BadInput(format!(
            "{}: the output would overwrite the input; give --out",
            args.file.display()
        )));
    }
    let started = std::time::Instant::now();
    let imported = import::import(format, &args.file, &out).map_err(|e| {
        if e.is_bad_input() {
            Failure::BadInput(e.to_string())
        } else {
            Failure::Error(anyhow::Error::new(e))
        }
    })?;
    let s = imported.summary;
    eprintln!(
        "imported {} ({}) into {}: {} instructions, {} accesses ({} loads, {} stores), {} regions inferred, in {:.1} s",
        args.file.display(),
        imported.compression.name(),
        out.display(),
        s.instructions,
        s.loads + s.stores,
        s.loads,
        s.stores,
        s.regions,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
