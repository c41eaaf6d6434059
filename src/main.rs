//! `ptlab`: the command line. Parsing and printing only; the work is in the
//! crates under `crates/` (see DESIGN.md).

mod cli;
mod cmd;
mod fail;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(e) => e.report(),
    }
}
