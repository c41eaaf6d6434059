//! The recording loop: the program's memory system calls (ptrace stops
//! that the seccomp filter asks for) and its page faults (perf samples),
//! merged by time into one trace. This file sets the recording up and
//! sums it; [`shared`] holds what the threads share, [`threads`] the
//! sampler thread and the watchdog, [`event_loop`] the ptrace loop.
//!
//! ## Invariants
//! 1. Records come out in time order per thread: a fault sample is written
//!    only once it is older than every system call still in flight (a
//!    thread stopped between its call's entry and exit), and a call's
//!    records are written at its exit, after every fault older than its
//!    entry.
//! 2. The program never outlives the recorder: PTRACE_O_EXITKILL and the
//!    child's parent-death signal kill it with the recorder, the watchdog
//!    at the time limit.
//! 3. Memory is bounded by the perf ring and by the faults between two
//!    drains (the sampler thread drains every few milliseconds).

mod event_loop;
mod ptrace;
mod shared;
mod threads;

use crate::child;
use crate::infer::Inference;
use crate::perf::{Events, Sampler, Source};
use crate::space::Space;
use crate::{Options, RecordError, Summary};
use event_loop::EventLoop;
use shared::Shared;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use threads::Helpers;
use trace::{Record, TraceWriter};

fn timeval(t: libc::timeval) -> Duration {
    Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000)
}

/// Records `cmd` into `opts.out`.
pub fn run(cmd: &[String], opts: &Options, partial: &Path) -> Result<Summary, RecordError> {
    let program = child::resolve(&cmd[0]).ok_or_else(|| RecordError::NotFound(cmd[0].clone()))?;
    let header = trace::Header {
        source: "record".into(),
        command: cmd.to_vec(),
        page_size: 4096,
        va_bits: 48,
        notes: vec![],
        observed: Default::default(),
    };
    let writer = TraceWriter::create(partial, &header).map_err(|e| RecordError::Io {
        path: partial.into(),
        source: e,
    })?;
    let traced = opts.only.calls();
    let filter = if traced {
        crate::seccomp::program()
    } else {
        Vec::new()
    };
    let child = child::spawn(&program, cmd, &filter, traced).map_err(RecordError::Spawn)?;
    let pid = child.pid;
    // A SIGINT or SIGTERM to ptlab kills the program (crate interrupt);
    // the loop then ends as at any exit.
    let watched = interrupt::watch(pid);
    if traced {
        let options = libc::PTRACE_O_TRACESECCOMP
            | libc::PTRACE_O_TRACESYSGOOD
            | libc::PTRACE_O_TRACECLONE
            | libc::PTRACE_O_TRACEFORK
            | libc::PTRACE_O_TRACEVFORK
            | libc::PTRACE_O_TRACEEXEC
            | libc::PTRACE_O_EXITKILL;
        // SAFETY: `pid` is our stopped tracee.
        unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0, options as libc::c_long) };
    }
    let sampler = match opts
        .only
        .events()
        .map(|e| Sampler::open(pid, e, opts.tracefs.dir.as_deref()))
        .transpose()
    {
        Ok(s) => s,
        Err(e) => {
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), libc::__WALL);
            }
            return Err(RecordError::Perf(e));
        }
    };
    let source = sampler.as_ref().map(|s| s.source);
    let sampling = opts.only.events().is_some_and(|e| e != Events::Counting);
    let shared = Arc::new(Mutex::new(Shared {
        writer,
        space: Space::default(),
        sampler,
        queue: Vec::new(),
        in_flight: BTreeMap::new(),
        threads: HashMap::from([(pid as u32, 0)]),
        current: None,
        main: pid as u32,
        stats: Summary::default(),
        error: None,
        out: Vec::new(),
        infer: (source == Some(Source::SoftwareEvent)).then(Inference::new),
    }));
    let helpers = Helpers::start(&shared, sampling, pid, opts.timeout);
    let started = Instant::now();
    if traced {
        ptrace::resume(libc::PTRACE_CONT, pid, 0);
    } else {
        // SAFETY: continuing our own stopped child.
        unsafe { libc::kill(pid, libc::SIGCONT) };
    }
    let ended = EventLoop::new(pid, Arc::clone(&shared), traced).run();
    let wall = started.elapsed();
    drop(watched);
    let timed_out = helpers.stop();
    let sh = Arc::try_unwrap(shared)
        .map_err(|_| RecordError::Internal("the sampler thread still holds the trace".into()))?
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let mut stats = finish(sh, sampling, partial)?;
    stats.wall = wall;
    stats.fault_kinds_known = source == Some(Source::Tracepoints);
    if let Some(sig) = interrupt::requested() {
        return Err(RecordError::Interrupted(interrupt::name(sig)));
    }
    if timed_out {
        return Err(RecordError::Timeout(opts.timeout));
    }
    let status = ended
        .exit_status
        .ok_or_else(|| RecordError::Internal("the program's exit was not seen".into()))?;
    if !ended.exec_seen {
        return Err(RecordError::Exec(cmd[0].clone(), status));
    }
    stats.exit_status = status;
    if let Some(ru) = ended.rusage {
        stats.kernel_minor_faults = ru.ru_minflt as u64;
        stats.kernel_major_faults = ru.ru_majflt as u64;
        stats.program_user = timeval(ru.ru_utime);
        stats.program_sys = timeval(ru.ru_stime);
    }
    // SAFETY: an all-zero rusage is valid plain data; a valid out pointer.
    let mut me: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF sums every thread of the recorder.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut me) };
    stats.recorder_cpu = timeval(me.ru_utime) + timeval(me.ru_stime);
    Ok(stats)
}

/// Writes what is left once the program is gone (the last samples, the
/// exit mark), closes the events and the trace, and sums the recording.
fn finish(mut sh: Shared, sampling: bool, partial: &Path) -> Result<Summary, RecordError> {
    // A call whose exit was never seen (its thread died inside it) holds
    // nothing back any more.
    sh.in_flight.clear();
    sh.flush(u64::MAX);
    sh.push(Record::Mark {
        name: "exit".into(),
    });
    let mut stats = sh.stats.clone();
    // Every sample is drained: the events are closed, without waiting for
    // the kernel's release (crate::release).
    if let Some(s) = sh.sampler.take() {
        stats.lost = s.lost;
        if !sampling {
            stats.fault_events = s.count();
        }
        s.release();
    }
    if let Some(e) = sh.error.take() {
        return Err(RecordError::Io {
            path: partial.into(),
            source: e,
        });
    }
    stats.approximations = sh.space.approximations;
    stats.inferred = sh.infer.as_ref().map(|i| i.counts).unwrap_or_default();
    stats.records = sh.writer.records();
    sh.writer.finish().map_err(|e| RecordError::Io {
        path: partial.into(),
        source: e,
    })?;
    Ok(stats)
}
