//! `ptlab trace -- CMD ARGS...`: the program under QEMU user mode with the
//! project's plugin, every load and store and its memory calls written to a
//! trace; a summary on stderr (the program owns stdout).

use crate::cli::TraceArgs;
use crate::fail::{CmdResult, Failure};
use std::process::ExitCode;

pub fn run(args: TraceArgs) -> CmdResult {
    super::check_out_dir(&args.out)?;
    let opts = qtrace::Options {
        out: args.out.clone(),
        filter: !args.no_filter,
    };
    let s = qtrace::trace(&args.command, &opts).map_err(|e| {
        if e.is_bad_input() {
            Failure::BadInput(e.to_string())
        } else {
            Failure::Error(anyhow::Error::new(e))
        }
    })?;
    let c = s.counts;
    let total = c.accesses + c.hits + c.unattributed;
    eprintln!(
        "traced {}: {total} accesses ({} written, {} as same-page hits, {} outside every region), {} memory calls, {} thread(s); {} bytes from the plugin",
        args.out.display(),
        c.accesses,
        c.hits,
        c.unattributed,
        c.syscalls,
        c.threads,
        s.stream_bytes,
    );
    if c.forks > 0 {
        eprintln!(
            "the program started {} child process(es): only the first process is traced (their accesses are not in the trace; its header says so)",
            c.forks
        );
    }
    if let Some(p) = &s.exec {
        eprintln!(
            "the program executed {p}: the trace ends there (what ran from then on ran natively, not under QEMU); trace the program it runs directly to see its accesses"
        );
    }
    let st = s.exit_status;
    let status = if st & 0x7f == 0 {
        format!("exited with status {}", st >> 8 & 0xff)
    } else {
        format!("was killed by signal {}", st & 0x7f)
    };
    eprintln!(
        "the program {status} after {:.3} s under QEMU",
        s.wall.as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
