//! `record`: runs a program natively and records what it does to its
//! address space (mmap, munmap, mprotect, madvise, mremap, brk, mlock) and
//! the page faults the kernel takes for it, into a trace (crate `trace`)
//! that `ptlab replay` runs on the model under any configuration.
//!
//! How: the system calls through ptrace, stopped only for those calls by a
//! seccomp filter ([`seccomp`]); the faults from perf events, the
//! `exceptions` tracepoints when allowed (address and read or write), else
//! the software page-fault event (address only), each fault's kind then
//! inferred ([`infer`]); tracefs, where the tracepoints are described, is
//! found or mounted by [`tracefs`]. The two are
//! merged by time ([`tracer`]), native addresses are turned into regions
//! ([`space`], [`maps`]). At the end the events are closed by a detached
//! grandchild ([`release`]), since the kernel's release of a tracepoint's
//! last perf event waits for a grace period. [`Only`] runs one part alone
//! (a diagnostic that prices each).
//!
//! ## Invariants
//! 1. Nothing is left behind: the trace is written to a partial file next
//!    to the output, renamed into place only when complete, and removed on
//!    any failure; the program is killed with the recorder.
//! 2. No privilege is needed where the kernel allows tracing one's own
//!    child: without access to tracepoints the recording infers fault
//!    kinds, and says how many, rather than failing.

pub mod calls;
mod child;
pub mod infer;
pub mod maps;
mod perf;
mod release;
pub mod seccomp;
pub mod space;
pub mod tracefs;
mod tracer;

use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

/// How a recording is made.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the trace goes.
    pub out: PathBuf,
    /// The program is killed past this.
    pub timeout: Duration,
    /// Which parts of the recorder run ([`Only::All`] for a recording;
    /// the others are diagnostics that price each part).
    pub only: Only,
    /// The tracefs whose `exceptions` tracepoints give each fault's kind
    /// ([`tracefs::locate`]); without one, the software page-fault event,
    /// the kinds inferred ([`infer`]).
    pub tracefs: tracefs::Located,
}

/// The parts of the recorder a run keeps: a diagnostic (`ptlab record
/// --only`) that measures what each part costs the program. Every one
/// but [`Only::All`] writes an incomplete trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Only {
    /// The recording: calls and faults.
    #[default]
    All,
    /// Nothing: the program started the same way, not traced, no events.
    Native,
    /// The fault events sampled and drained exactly as the recording
    /// does, the program not traced (no calls, so the samples fall in no
    /// known region and are counted, not written).
    Faults,
    /// The same fault events counting (no sample, no ring).
    FaultsCounting,
    /// The software page-fault event sampled with its address instead of
    /// the tracepoints, drained the same way.
    FaultsSoftware,
    /// The memory calls stopped and recorded, no fault events.
    Calls,
}

impl Only {
    /// Whether the program is traced and its memory calls stopped.
    pub fn calls(self) -> bool {
        matches!(self, Only::All | Only::Calls)
    }

    /// The fault events opened, if any.
    fn events(self) -> Option<perf::Events> {
        match self {
            Only::All | Only::Faults => Some(perf::Events::Sampled),
            Only::FaultsCounting => Some(perf::Events::Counting),
            Only::FaultsSoftware => Some(perf::Events::SoftwareSampled),
            Only::Native | Only::Calls => None,
        }
    }
}

/// What a recording saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub records: u64,
    pub syscalls: u64,
    pub faults_recorded: u64,
    /// Faults at addresses no known region held (the vsyscall page, a race
    /// with a thread's unmap).
    pub faults_unattributed: u64,
    /// Faults of processes the program started (not recorded).
    pub faults_other_processes: u64,
    pub child_processes: u64,
    /// Samples the kernel dropped (the ring was full).
    pub lost: u64,
    /// Calls recorded approximately (a partial mremap).
    pub approximations: u64,
    /// Whether reads and writes are told apart (tracepoints were allowed).
    pub fault_kinds_known: bool,
    /// Faults whose kind was inferred, by rule (all zero with tracepoints).
    pub inferred: infer::Counts,
    /// The program's wait status.
    pub exit_status: i32,
    /// The program's own minor and major faults (rusage).
    pub kernel_minor_faults: u64,
    pub kernel_major_faults: u64,
    /// The program's wall time under the recorder.
    pub wall: Duration,
    /// The program's own CPU time, user and system (its rusage at exit).
    pub program_user: Duration,
    pub program_sys: Duration,
    /// The recorder's own CPU time, every thread, user + system.
    pub recorder_cpu: Duration,
    /// The time the tracer kept the program stopped at its calls' exits
    /// (from seeing the stop to resuming it), and the time it then spent
    /// writing the call and the faults before it while the program ran.
    pub exit_stops_held: Duration,
    pub exit_work: Duration,
    /// Fault samples read from the rings (every process), or with
    /// [`Only::FaultsCounting`] the events' count.
    pub fault_events: u64,
}

/// Why a recording failed.
#[derive(Debug, Error)]
pub enum RecordError {
    #[error("{0}: command not found")]
    NotFound(String),
    #[error("{0}: the program could not be executed (wait status {1:#x})")]
    Exec(String, i32),
    #[error("starting the program: {0}")]
    Spawn(std::io::Error),
    #[error("opening the page-fault events (perf_event_open): {0}")]
    Perf(std::io::Error),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the program was killed at the time limit of {} s", .0.as_secs())]
    Timeout(Duration),
    #[error("{0}")]
    Trace(trace::TraceError),
    /// SIGINT or SIGTERM (crate interrupt), by name.
    #[error("interrupted by {0}")]
    Interrupted(&'static str),
    #[error("internal error: {0}")]
    Internal(String),
}

impl RecordError {
    /// Whether the user's input is at fault (exit status 2).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            RecordError::NotFound(_) | RecordError::Exec(..) | RecordError::Io { .. }
        )
    }
}

impl From<trace::TraceError> for RecordError {
    fn from(e: trace::TraceError) -> Self {
        RecordError::Trace(e)
    }
}

/// The partial file next to `out`.
fn partial_of(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    out.with_file_name(name)
}

/// Records `cmd` (program and arguments) into `opts.out`.
///
/// # Errors
/// [`RecordError`]; the output is not created and nothing is left behind.
pub fn record(cmd: &[String], opts: &Options) -> Result<Summary, RecordError> {
    if cmd.is_empty() {
        return Err(RecordError::NotFound(String::new()));
    }
    let partial = partial_of(&opts.out);
    // On SIGINT or SIGTERM (crate interrupt) the program is killed, the
    // recording returns an error, the partial file is removed below, and
    // then this section exits the process.
    let _section = interrupt::Section::enter(format!(
        "the recording of {}: the program ended, {} removed, no trace written",
        cmd[0],
        partial.display()
    ));
    let result = tracer::run(cmd, opts, &partial).and_then(|s| {
        let mut r = trace::TraceReader::open(&partial)?;
        let mut header = r.header().clone();
        drop(r.next_chunk(&mut Vec::new()));
        header.observed.insert("minor_faults".into(), s.kernel_minor_faults as i64);
        header.observed.insert("major_faults".into(), s.kernel_major_faults as i64);
        header.observed.insert("faults_recorded".into(), s.faults_recorded as i64);
        header.observed.insert("faults_unattributed".into(), s.faults_unattributed as i64);
        header.observed.insert("samples_lost".into(), s.lost as i64);
        header
            .observed
            .insert("faults_other_processes".into(), s.faults_other_processes as i64);
        let inf = s.inferred;
        if !s.fault_kinds_known {
            header.observed.insert("faults_inferred".into(), inf.total() as i64);
            header
                .observed
                .insert("faults_inferred_reads".into(), inf.reads() as i64);
            header
                .observed
                .insert("faults_inferred_by_default".into(), inf.write_by_default as i64);
            header.notes.push(format!(
                "fault kinds inferred, not read from the kernel (no access to the exceptions tracepoints{}): {} of {} recorded faults; {} reads ({} in mappings without write permission, {} by the page's state, {} faulted again), {} writes ({} by the page's state, {} without evidence)",
                opts.tracefs.why.as_deref().map_or(String::new(), |w| format!(": {w}")),
                inf.total(),
                s.faults_recorded,
                inf.reads(),
                inf.read_by_protection,
                inf.read_by_page_state,
                inf.read_by_later_fault,
                inf.writes(),
                inf.write_by_page_state,
                inf.write_by_default,
            ));
        }
        header.notes.push(
            "faults taken inside system calls by the kernel on the program's behalf (MAP_POPULATE, get_user_pages) are not sampled; the replay makes them from the call itself".into(),
        );
        trace::rewrite_header(&partial, &opts.out, &header)?;
        Ok(s)
    });
    let _ = std::fs::remove_file(&partial);
    if result.is_err() {
        let _ = std::fs::remove_file(&opts.out);
    }
    result
}
