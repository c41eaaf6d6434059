//! `ptlab record -- CMD ARGS...`: the program run natively, its
//! address-space calls and page faults written to a trace; a summary on
//! stderr (the program owns stdout).

use crate::cli::{RecordArgs, RecordPart};
use crate::fail::{CmdResult, Failure};
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: RecordArgs) -> CmdResult {
    super::check_out_dir(&args.out)?;
    let only = args.only.map(|p| match p {
        RecordPart::Native => record::Only::Native,
        RecordPart::Faults => record::Only::Faults,
        RecordPart::FaultsCounting => record::Only::FaultsCounting,
        RecordPart::FaultsSoftware => record::Only::FaultsSoftware,
        RecordPart::Calls => record::Only::Calls,
        RecordPart::All => record::Only::All,
    });
    // PTLAB_TRACEFS (a diagnostic, docs/cli.md): `none` records as a host
    // without tracefs does; a directory names the tracefs to use.
    let choice = record::tracefs::Choice::from_env(std::env::var("PTLAB_TRACEFS").ok().as_deref());
    let tracefs = record::tracefs::locate(&choice);
    if let (true, Some(dir)) = (tracefs.mounted, &tracefs.dir) {
        eprintln!(
            "ptlab record: tracefs was not mounted; mounted it at {} to read each fault's kind (left mounted, as systemd mounts it at boot)",
            dir.display()
        );
    }
    let opts = record::Options {
        out: args.out.clone(),
        timeout: Duration::from_secs(args.timeout),
        only: only.unwrap_or_default(),
        tracefs,
    };
    let s = record::record(&args.command, &opts).map_err(|e| {
        if e.is_bad_input() {
            Failure::BadInput(e.to_string())
        } else {
            Failure::Error(anyhow::Error::new(e))
        }
    })?;
    let status = if libc_exited(s.exit_status) {
        format!("exited with status {}", s.exit_status >> 8 & 0xff)
    } else {
        format!("killed by signal {}", s.exit_status & 0x7f)
    };
    if let Some(part) = args.only {
        // One line a script can read: key=value, seconds and counts.
        eprintln!(
            "diagnostic only={part:?} wall={:.6} user={:.6} sys={:.6} recorder_cpu={:.6} minflt={} fault_events={} lost={} calls={} exit_stops_held={:.6} exit_work={:.6} status={}",
            s.wall.as_secs_f64(),
            s.program_user.as_secs_f64(),
            s.program_sys.as_secs_f64(),
            s.recorder_cpu.as_secs_f64(),
            s.kernel_minor_faults,
            s.fault_events,
            s.lost,
            s.syscalls,
            s.exit_stops_held.as_secs_f64(),
            s.exit_work.as_secs_f64(),
            s.exit_status,
        );
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "recorded {}: {} records, {} memory calls, {} faults recorded of {} minor + {} major the kernel counted{}{}{}",
        args.out.display(),
        s.records,
        s.syscalls,
        s.faults_recorded,
        s.kernel_minor_faults,
        s.kernel_major_faults,
        if s.faults_unattributed > 0 {
            format!(", {} outside every known region", s.faults_unattributed)
        } else {
            String::new()
        },
        if s.faults_other_processes > 0 {
            format!(
                ", {} in {} child process(es) not recorded (the kernel's count includes them)",
                s.faults_other_processes, s.child_processes
            )
        } else {
            String::new()
        },
        if s.lost > 0 {
            format!(", {} samples lost (ring full)", s.lost)
        } else {
            String::new()
        },
    );
    eprintln!(
        "the program {status} after {:.3} s under the recorder",
        s.wall.as_secs_f64(),
    );
    if !s.fault_kinds_known {
        let i = s.inferred;
        eprintln!(
            "fault kinds inferred for {} faults (no access to the exceptions tracepoints{}): {} reads ({} by protection, {} by page state, {} faulted again), {} writes ({} by page state, {} without evidence); docs/trace.md",
            i.total(),
            opts.tracefs.why.as_deref().map_or(String::new(), |w| format!(": {w}")),
            i.reads(),
            i.read_by_protection,
            i.read_by_page_state,
            i.read_by_later_fault,
            i.writes(),
            i.write_by_page_state,
            i.write_by_default,
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// WIFEXITED, without a libc dependency in the binary.
fn libc_exited(status: i32) -> bool {
    status & 0x7f == 0
}
