//! The recording loop: the program's memory system calls (ptrace stops
//! that the seccomp filter asks for) and its page faults (perf samples),
//! merged by time into one trace.
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

use crate::child;
use crate::infer::Inference;
use crate::maps;
use crate::perf::{Events, FaultSample, Sampler, Source};
use crate::space::Space;
use crate::{Options, RecordError, Summary};
use std::collections::{BTreeMap, HashMap};
use std::io::BufWriter;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use trace::{Record, TraceWriter};

fn timeval(t: libc::timeval) -> Duration {
    Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000)
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What both threads of the recorder share.
struct Shared {
    writer: TraceWriter<BufWriter<std::fs::File>>,
    space: Space,
    /// None when no fault events are sampled (`--only calls`, `native`,
    /// `faults-counting`).
    sampler: Option<Sampler>,
    queue: Vec<FaultSample>,
    /// Threads stopped inside a traced call: entry time.
    in_flight: BTreeMap<i32, u64>,
    /// Kernel tid -> trace thread number.
    threads: HashMap<u32, u32>,
    current: Option<u32>,
    main: u32,
    stats: Summary,
    error: Option<std::io::Error>,
    out: Vec<Record>,
    /// Fault kinds inferred, when the samples do not carry them (the
    /// software event: [`crate::infer`]).
    infer: Option<Inference>,
}

impl Shared {
    fn push(&mut self, r: Record) {
        if let Some(i) = &mut self.infer {
            i.observe(&r);
        }
        if self.error.is_none() {
            if let Err(e) = self.writer.push(&r) {
                self.error = Some(e);
            }
        }
    }

    fn switch_to(&mut self, tid: u32) {
        let n = self.threads.len() as u32;
        let t = *self.threads.entry(tid).or_insert(n);
        if self.current != Some(t) {
            self.current = Some(t);
            self.push(Record::Thread { tid: t });
        }
    }

    /// Drains the ring and writes the faults older than `bound` and than
    /// every call in flight (invariant 1).
    fn flush(&mut self, bound: u64) {
        let mut fresh = std::mem::take(&mut self.queue);
        let before = fresh.len();
        if let Some(s) = &mut self.sampler {
            s.drain(&mut fresh);
        }
        self.stats.fault_events += (fresh.len() - before) as u64;
        let limit = self
            .in_flight
            .values()
            .copied()
            .min()
            .unwrap_or(u64::MAX)
            .min(bound);
        fresh.sort_by_key(|s| s.time);
        // Where kinds are inferred: each page's last sample so far, so a
        // fault can tell whether its page faults again (infer, rule 3).
        let last_of_page: HashMap<u64, usize> = match self.infer {
            Some(_) => fresh
                .iter()
                .enumerate()
                .filter(|(_, s)| s.pid == self.main)
                .map(|(i, s)| (s.addr >> 12, i))
                .collect(),
            None => HashMap::new(),
        };
        let cut = fresh.partition_point(|s| s.time < limit);
        let keep = fresh.split_off(cut);
        for (i, s) in fresh.into_iter().enumerate() {
            if s.pid != self.main {
                self.stats.faults_other_processes += 1;
                continue;
            }
            match self.space.locate(s.addr) {
                Some((id, offset)) => {
                    self.switch_to(s.tid);
                    self.stats.faults_recorded += 1;
                    let write = match (s.write, &mut self.infer) {
                        (Some(w), _) => w,
                        (None, Some(inf)) => {
                            let again = last_of_page.get(&(s.addr >> 12)).is_some_and(|&l| l > i);
                            inf.kind(id, offset, s.addr, again)
                        }
                        (None, None) => true,
                    };
                    self.push(Record::Fault { id, offset, write });
                }
                None => self.stats.faults_unattributed += 1,
            }
        }
        self.queue = keep;
    }

    fn emit(&mut self) {
        let out = std::mem::take(&mut self.out);
        for r in &out {
            self.push(r.clone());
        }
        self.out = out;
        self.out.clear();
    }
}

fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn syscall_info(pid: i32) -> Option<libc::ptrace_syscall_info> {
    // SAFETY: an all-zero ptrace_syscall_info is a valid value of the
    // plain-data struct.
    let mut info: libc::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is a tracee in a ptrace stop; the kernel writes at most
    // the given size into `info`.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_GET_SYSCALL_INFO,
            pid,
            std::mem::size_of::<libc::ptrace_syscall_info>(),
            &mut info as *mut _,
        )
    };
    (r > 0).then_some(info)
}

fn resume(request: libc::c_uint, pid: i32, sig: i32) {
    // SAFETY: resuming a tracee of ours; an error (it died meanwhile) is
    // seen at the next waitpid.
    unsafe { libc::ptrace(request, pid, 0, sig as libc::c_long) };
}

fn tgid_of(pid: i32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The records of one finished call; `path` names the file an mmap
/// mapped (read while the program was stopped, [`mapped_file`]).
fn handle_call(sh: &mut Shared, nr: i64, a: [u64; 6], ret: i64, path: String) {
    let mut out = std::mem::take(&mut sh.out);
    crate::calls::apply(&mut sh.space, nr, a, ret, &|_| path.clone(), &mut out);
    sh.out = out;
}

/// The descriptor a successful call mapped a file from (mmap without
/// MAP_ANONYMOUS), whose name `calls::apply` asks for.
fn mapped_file(nr: i64, a: [u64; 6], ret: i64) -> Option<i32> {
    let failed = ret < 0 && ret > -4096;
    (nr == libc::SYS_mmap && a[3] as i32 & libc::MAP_ANONYMOUS == 0 && !failed)
        .then_some(a[4] as i32)
}

/// The path of descriptor `fd` of process `pid` ("" if unknown).
fn fd_path(pid: i32, fd: i32) -> String {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// Records `cmd` into `opts.out`.
pub fn run(
    cmd: &[String],
    opts: &Options,
    partial: &std::path::Path,
) -> Result<Summary, RecordError> {
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
    // the loop below then ends as at any exit.
    let watched = interrupt::watch(pid);
    let options = libc::PTRACE_O_TRACESECCOMP
        | libc::PTRACE_O_TRACESYSGOOD
        | libc::PTRACE_O_TRACECLONE
        | libc::PTRACE_O_TRACEFORK
        | libc::PTRACE_O_TRACEVFORK
        | libc::PTRACE_O_TRACEEXEC
        | libc::PTRACE_O_EXITKILL;
    if traced {
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
        threads: HashMap::new(),
        current: None,
        main: pid as u32,
        stats: Summary::default(),
        error: None,
        out: Vec::new(),
        infer: (source == Some(Source::SoftwareEvent)).then(Inference::new),
    }));
    lock(&shared).threads.insert(pid as u32, 0);
    // The sampler thread drains the ring while the program runs; it stops
    // when `done` is set.
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let timed_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let drainer = sampling.then(|| {
        let (sh, done) = (Arc::clone(&shared), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(2));
                lock(&sh).flush(u64::MAX);
            }
        })
    });
    // The watchdog waits on a channel that the end of the recording
    // closes, so that it stops at once rather than at its next poll.
    let (stop_watchdog, stopped) = std::sync::mpsc::channel::<()>();
    let watchdog = {
        let timed_out = Arc::clone(&timed_out);
        let timeout = opts.timeout;
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(timeout) {
                timed_out.store(true, std::sync::atomic::Ordering::Release);
                // SAFETY: killing our own tracee at the time limit.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        })
    };
    let started = Instant::now();
    if traced {
        resume(libc::PTRACE_CONT, pid, 0);
    } else {
        // SAFETY: continuing our own stopped child.
        unsafe { libc::kill(pid, libc::SIGCONT) };
    }
    let mut pending: HashMap<i32, (i64, [u64; 6], u64)> = HashMap::new();
    let mut foreign: HashMap<i32, bool> = HashMap::new();
    // Untraced, the exec is not seen: a failed one exits 127.
    let mut exec_seen = !traced;
    let mut exit_status = None;
    let mut rusage = None;
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid plain data.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waiting for any of our tracees; valid out pointers.
        let w = unsafe { libc::wait4(-1, &mut status, libc::__WALL, &mut ru) };
        if w < 0 {
            break;
        }
        let seen = Instant::now();
        if interrupt::requested().is_some() {
            // The program is dead (crate interrupt): end what it started
            // too, every tracee not yet reaped.
            for &t in foreign.keys() {
                // SAFETY: `t` is a tracee of ours that this loop has not
                // reaped (reaped ones leave `foreign`), so not a reused pid.
                unsafe { libc::kill(t, libc::SIGKILL) };
            }
        }
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            foreign.remove(&w);
            pending.remove(&w);
            lock(&shared).in_flight.remove(&w);
            if w == pid {
                exit_status = Some(status);
                rusage = Some(ru);
            }
            continue;
        }
        if !libc::WIFSTOPPED(status) {
            continue;
        }
        let is_foreign = *foreign
            .entry(w)
            .or_insert_with(|| tgid_of(w).is_some_and(|t| t != pid as u32));
        let sig = libc::WSTOPSIG(status);
        let event = status >> 16;
        if event == libc::PTRACE_EVENT_SECCOMP {
            if is_foreign {
                resume(libc::PTRACE_CONT, w, 0);
                continue;
            }
            if let Some(info) = syscall_info(w) {
                // SAFETY: at a seccomp stop the kernel fills the seccomp
                // member of the union.
                let (nr, args) = unsafe { (info.u.seccomp.nr as i64, info.u.seccomp.args) };
                let t = now_ns();
                pending.insert(w, (nr, args, t));
                lock(&shared).in_flight.insert(w, t);
            }
            resume(libc::PTRACE_SYSCALL, w, 0);
        } else if sig == (libc::SIGTRAP | 0x80) {
            let Some((nr, args, t)) = pending.remove(&w) else {
                resume(libc::PTRACE_CONT, w, 0);
                continue;
            };
            let ret = syscall_info(w)
                // SAFETY: at a syscall-exit stop the kernel fills the
                // exit member.
                .map(|i| unsafe { i.u.exit.sval })
                .unwrap_or(-1);
            // What only the stopped program can tell (a mapped file's
            // name, before it closes the descriptor) is read now; then it
            // goes on while its call and the faults before it are written
            // (invariant 1 holds: its entry stays in flight until then, so
            // its later faults wait behind the call's records). The stop
            // lasted for the whole flush before, ~220 samples a call on the
            // Python dict of BENCHMARKS.md.
            let path = mapped_file(nr, args, ret).map(|fd| fd_path(w, fd));
            resume(libc::PTRACE_CONT, w, 0);
            let resumed = Instant::now();
            let mut sh = lock(&shared);
            sh.flush(t);
            sh.in_flight.remove(&w);
            sh.stats.syscalls += 1;
            handle_call(&mut sh, nr, args, ret, path.unwrap_or_default());
            if !sh.out.is_empty() {
                sh.switch_to(w as u32);
                sh.emit();
            }
            sh.flush(u64::MAX);
            sh.stats.exit_stops_held += resumed - seen;
            sh.stats.exit_work += resumed.elapsed();
        } else if event == libc::PTRACE_EVENT_EXEC {
            if !is_foreign {
                exec_seen = true;
                let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
                let mut sh = lock(&shared);
                sh.flush(u64::MAX);
                if let Some(i) = &mut sh.infer {
                    i.attach(pid);
                }
                let mut out = std::mem::take(&mut sh.out);
                sh.space.exec(&mut out);
                maps::regions_at_exec(&text, &mut sh.space, &mut out);
                sh.out = out;
                sh.switch_to(pid as u32);
                sh.emit();
            }
            resume(libc::PTRACE_CONT, w, 0);
        } else if event == libc::PTRACE_EVENT_CLONE
            || event == libc::PTRACE_EVENT_FORK
            || event == libc::PTRACE_EVENT_VFORK
        {
            if event != libc::PTRACE_EVENT_CLONE || is_foreign {
                let mut new: libc::c_ulong = 0;
                // SAFETY: reading the new task's pid at a fork/clone stop.
                unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, w, 0, &mut new as *mut _) };
                if event != libc::PTRACE_EVENT_CLONE {
                    lock(&shared).stats.child_processes += 1;
                }
                foreign.insert(new as i32, true);
            }
            resume(libc::PTRACE_CONT, w, 0);
        } else if sig == libc::SIGSTOP || sig == libc::SIGTRAP {
            // A new task's first stop, or an event we do not use.
            resume(libc::PTRACE_CONT, w, 0);
        } else {
            // A signal for the program: deliver it.
            resume(libc::PTRACE_CONT, w, sig);
        }
    }
    let wall = started.elapsed();
    drop(watched);
    done.store(true, std::sync::atomic::Ordering::Release);
    drop(stop_watchdog);
    if let Some(d) = drainer {
        let _ = d.join();
    }
    let _ = watchdog.join();
    let shared = Arc::try_unwrap(shared)
        .map_err(|_| RecordError::Internal("the sampler thread still holds the trace".into()))?
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let mut sh = shared;
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
    stats.wall = wall;
    stats.fault_kinds_known = source == Some(Source::Tracepoints);
    stats.records = sh.writer.records();
    sh.writer.finish().map_err(|e| RecordError::Io {
        path: partial.into(),
        source: e,
    })?;
    if let Some(sig) = interrupt::requested() {
        return Err(RecordError::Interrupted(interrupt::name(sig)));
    }
    if timed_out.load(std::sync::atomic::Ordering::Acquire) {
        return Err(RecordError::Timeout(opts.timeout));
    }
    let status = exit_status
        .ok_or_else(|| RecordError::Internal("the program's exit was not seen".into()))?;
    if !exec_seen {
        return Err(RecordError::Exec(cmd[0].clone(), status));
    }
    stats.exit_status = status;
    if let Some(ru) = rusage {
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
