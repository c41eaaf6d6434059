//! `ptlab`: the command line. Parsing and printing only; the work is in the
//! crates under `crates/` (see docs/design.md).

mod cli;
mod cmd;
mod fail;
mod host_costs;
mod interrupt;
mod out;
mod progress;
mod suggest;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // The model's table arena on huge pages: far fewer host TLB misses in
    // walks over large tables (advice only; see host::advise_huge_pages).
    pt::mem::set_arena_advisor(host::advise_huge_pages);
    // SIGINT and SIGTERM end the work in progress cleanly, exit 130 / 143
    // (crate interrupt); without the handlers they keep their default.
    let _ = ::interrupt::install();
    let cli = cli::Cli::parse();
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(e) => e.report(),
    }
}
