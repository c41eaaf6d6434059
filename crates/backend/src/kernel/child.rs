//! The measured child process: from `fork` to `_exit`.
//!
//! Invariants that make its counters the workload's alone:
//!
//! - Everything the child allocates (the counter reader, mark records,
//!   latency histograms, worker stacks and their scratch buffers) is
//!   allocated and written *before* the baseline; after it, nothing is
//!   allocated or freed (a free could trim the heap and change RSS).
//! - Before the baseline the child's own memory is made fault-free
//!   ([`super::quiesce`]) and every code path of a mark is run once.
//! - The `end` mark is taken while all workers are still alive, and the
//!   process then leaves with `_exit`, so no thread exit or destructor runs
//!   inside the measurement.
//! - Only one report is written: the first failure (an op's syscall, or a
//!   SIGSEGV/SIGBUS) claims [`FAILING`], writes its report and `_exit`s;
//!   others park.
//!
//! The parent may have other threads (the test harness does): the child uses
//! glibc's malloc, which is fork-safe, only before the baseline, and takes no
//! lock the parent could have held at `fork`.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use host::CounterReader;

use super::program::Program;
use super::sync::{Barrier, Gate};
use super::wire::{self, Call, HEADER_WORDS, MAGIC, NONE, RECORD_WORDS, SAMPLE_WORDS};
use crate::latency::{FineHist, HIST_WORDS};

/// Stack of each worker thread, and how much of it is written up front.
const WORKER_STACK: usize = 512 * 1024;
const STACK_PRETOUCH: usize = 64 * 1024;
/// Exit codes of the child (the parent reads the report, not these).
pub(super) const EXIT_OK: i32 = 0;
pub(super) const EXIT_FAILED: i32 = 3;

/// Claimed by the first failure; later ones park instead of reporting.
static FAILING: AtomicBool = AtomicBool::new(false);
/// The pipe to the parent, for the signal handler.
static REPORT_FD: AtomicI32 = AtomicI32::new(-1);

/// State shared by the coordinator and the workers.
pub(crate) struct Shared<'a> {
    pub prog: &'a Program,
    /// Region files by region id (-1: none).
    pub fds: &'a [RawFd],
    /// The root of each tmpfs mount of `shmem_huge` regions (see
    /// `super::tmpfs`), by mount index.
    pub tmpfs_fds: Vec<RawFd>,
    /// A file region made cold by an earlier `file = "cold"` mmap.
    pub cold: Vec<AtomicBool>,
    pub barrier: Barrier,
    gate: Gate,
    pub(super) log: Mutex<MarkLog>,
    /// Where a fork's child hands its mark records back (if any fork).
    pub(super) fork_area: Option<super::fork::ForkArea>,
}

/// Mark records and latency histograms, in memory written before the
/// baseline.
pub(super) struct MarkLog {
    pub(super) reader: CounterReader,
    t0: Instant,
    pub(super) base: [u64; SAMPLE_WORDS],
    /// What the runner's own work around forks added to the counters (see
    /// `super::fork`), taken off every later sample.
    pub(super) offset: [u64; SAMPLE_WORDS],
    pub(super) records: Vec<u64>,
    pub(super) n_records: usize,
    hists: Vec<u64>,
    n_hists: usize,
    /// Latency pending in workers when they finished, for the `end` mark.
    end_hist: Box<FineHist>,
    /// Nanoseconds the marks so far spent reading the counters (their sum:
    /// `elapsed_ns` minus it is the workload's own time).
    read_ns: u64,
    /// The process's CPU time at the baseline.
    cpu0: Option<u64>,
    /// CPU time the marks so far spent reading the counters.
    cpu_read_ns: u64,
}

/// What a worker owns.
pub(crate) struct Local {
    /// Latency of accesses since this thread's last mark.
    pub hist: Box<FineHist>,
    /// Scratch for reading a file back into the page cache.
    pub warm: Vec<u8>,
    /// A fork's child running beside this thread (`wait = false`).
    pub(super) child: Option<super::fork::Running>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The child's whole life. Never returns.
pub(crate) fn child_main(prog: &Program, fds: &[RawFd], report_fd: RawFd) -> ! {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        coordinate(prog, fds, report_fd)
    }));
    report_panic()
}

/// The process's set-up before any thread starts: the death signal, the
/// default signal dispositions, the fault handlers, the tmpfs mounts of
/// `shmem_huge` regions (their root directories' descriptors returned, by
/// mount) and the run's memory cgroup. A failure is reported and ends the
/// process.
fn set_up_process(prog: &Program, report_fd: RawFd) -> Vec<RawFd> {
    // SAFETY: prctl with these arguments only sets a flag: if the parent
    // dies, the kernel kills this child, so none is left behind.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
    // The parent's SIGINT and SIGTERM handlers (crate interrupt) are its
    // own: a terminal's Ctrl-C ends the workload at once, as it would any
    // program, and the parent cleans up.
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: signal() with SIG_DFL only resets a disposition
        // (async-signal-safe, no memory shared with the parent).
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
    REPORT_FD.store(report_fd, Ordering::SeqCst);
    install_fault_handlers();
    // The tmpfs mounts of shmem_huge regions, in a mount namespace of this
    // process's own, before any thread starts (unshare needs that).
    let mut tmpfs_fds = vec![-1; prog.tmpfs.len()];
    if !prog.tmpfs.is_empty() {
        if let Err(e) = super::tmpfs::mount_all(&prog.tmpfs_paths, &prog.tmpfs_data, &mut tmpfs_fds)
        {
            report_failure(&[MAGIC, wire::STATUS_SETUP, wire::SETUP_TMPFS, e as u64, 0, 0]);
        }
    }
    // Into the run's memory cgroup before any memory of the workload is
    // charged (see `thp_steps`).
    if let Some(r) = &prog.reclaim {
        super::thp_steps::prefault_own_files();
        if let Err(e) = super::thp_steps::join(&r.procs) {
            report_failure(&[
                MAGIC,
                wire::STATUS_SETUP,
                wire::SETUP_CGROUP,
                e as u64,
                0,
                0,
            ]);
        }
    }
    tmpfs_fds
}

fn coordinate(prog: &Program, fds: &[RawFd], report_fd: RawFd) -> ! {
    let tmpfs_fds = set_up_process(prog, report_fd);

    let n = prog.threads.len();
    let mut records = vec![0u64; prog.mark_records as usize * RECORD_WORDS];
    let mut hists = vec![0u64; prog.latency_slots as usize * HIST_WORDS];
    prefault_words(&mut records);
    prefault_words(&mut hists);
    let mut end_hist = FineHist::new();
    end_hist.clear();
    let sh = Shared {
        prog,
        fds,
        tmpfs_fds,
        cold: (0..prog.regions.len())
            .map(|_| AtomicBool::new(false))
            .collect(),
        barrier: Barrier::new(n),
        gate: Gate::default(),
        fork_area: super::fork::ForkArea::new(prog),
        log: Mutex::new(MarkLog {
            reader: CounterReader::open(),
            t0: Instant::now(),
            base: [NONE; SAMPLE_WORDS],
            offset: [0; SAMPLE_WORDS],
            records,
            n_records: 0,
            hists,
            n_hists: 0,
            end_hist,
            read_ns: 0,
            cpu0: None,
            cpu_read_ns: 0,
        }),
    };

    std::thread::scope(|s| {
        for tid in 0..n {
            let sh = &sh;
            let spawned = std::thread::Builder::new()
                .stack_size(WORKER_STACK)
                .spawn_scoped(s, move || worker(sh, tid));
            if let Err(e) = spawned {
                report_failure(&[
                    MAGIC,
                    wire::STATUS_SETUP,
                    wire::SETUP_SPAWN,
                    e.raw_os_error().unwrap_or(0) as u64,
                    0,
                    0,
                ]);
            }
        }
        sh.gate.wait_arrived(n);

        // Everything the child maps of its own is mapped by now (workers are
        // parked at the gate): no region may overlap any of it (see `room`).
        if let Ok(maps) = std::fs::read_to_string("/proc/self/maps") {
            if let Some((region, start, end)) = super::room::first_collision(&maps, &prog.regions) {
                report_failure(&[MAGIC, wire::STATUS_COLLISION, region as u64, start, end, 0]);
            }
        }
        super::quiesce::quiesce();
        {
            let mut log = lock(&sh.log);
            // Reads the counters and the clock once before the baseline, so
            // the first measured mark finds their code and data mapped (the
            // record buffers were written above; quiesce mapped all code).
            let _ = log.reader.read();
            let _ = log.t0.elapsed();
            let base = log.reader.read();
            log.base = wire::sample_words(&base);
            log.cpu0 = process_cpu_ns();
            log.t0 = Instant::now();
        }
        sh.gate.open();
        sh.gate.wait_finished(n);

        let end = prog.end_mark();
        let mut log = lock(&sh.log);
        log.record(end, NONE, None);
        write_report(&log);
        // SAFETY: _exit ends the process without running destructors or
        // atexit handlers of the parent's program; the report is written.
        unsafe { libc::_exit(EXIT_OK) }
    })
}

fn worker(sh: &Shared, tid: usize) {
    // A panic must not unwind into the parent's code that this forked
    // process still has on its stack: report it and end the process.
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker_body(sh, tid))).is_err() {
        report_panic();
    }
}

pub(super) fn report_panic() -> ! {
    report_failure(&[MAGIC, wire::STATUS_SETUP, wire::SETUP_PANIC, 0, 0, 0])
}

fn worker_body(sh: &Shared, tid: usize) {
    let mut local = Local {
        hist: FineHist::new(),
        warm: vec![0u8; 64 * 1024],
        child: None,
    };
    local.hist.clear();
    if let Some(&cpu) = sh.prog.pin_cpus.get(tid % sh.prog.pin_cpus.len().max(1)) {
        // Best effort: a CPU taken away since the set was read leaves the
        // thread where the scheduler puts it.
        host::affinity::pin_for_good(cpu);
    }
    host::counters::prefault_write(&mut local.warm);
    pretouch_stack();
    sh.gate.arrive();
    super::exec::run_ops(sh, tid, &sh.prog.threads[tid], &mut local);
    // A child not waited for is waited for at the end, before `end`.
    super::fork::waitpid(sh, &mut local);
    if local.hist.count > 0 {
        lock(&sh.log).end_hist.merge(&local.hist);
    }
    sh.barrier.leave();
    sh.gate.finish()
}

impl Shared<'_> {
    /// Records a mark reached by thread `tid`, with the latency pending in
    /// `pending` (which is then cleared).
    pub fn mark(&self, name: u32, tid: usize, pending: &mut FineHist) {
        lock(&self.log).record(name, tid as u64, Some(pending));
    }

    /// Reports a failed system call of op `op` and ends the process.
    pub fn fail(&self, op: u32, call: Call, errno: i32) -> ! {
        report_failure(&[
            MAGIC,
            wire::STATUS_OP_ERROR,
            u64::from(op),
            call as u64,
            errno as u64,
            0,
        ])
    }
}

impl MarkLog {
    /// Appends a record. `pending` is the thread's latency since its last
    /// mark; `None` for the `end` mark, which takes what the workers left.
    fn record(&mut self, name: u32, tid: u64, pending: Option<&mut FineHist>) {
        let MarkLog {
            reader,
            t0,
            records,
            n_records,
            hists,
            n_hists,
            end_hist,
            read_ns,
            cpu0,
            cpu_read_ns,
            offset,
            ..
        } = self;
        // The read is timed too: it happens inside the measured time (before
        // the clock), and validate --time takes it out; on both clocks.
        let cpu_before = process_cpu_ns();
        let before = t0.elapsed().as_nanos() as u64;
        let sample = reader.read();
        let elapsed = t0.elapsed().as_nanos() as u64;
        let cpu_after = process_cpu_ns();
        *read_ns += elapsed.saturating_sub(before);
        let cpu = match (cpu_before, cpu_after, *cpu0) {
            (Some(b), Some(a), Some(then)) => {
                *cpu_read_ns += a.saturating_sub(b);
                a.saturating_sub(then).saturating_sub(*cpu_read_ns)
            }
            _ => NONE,
        };
        let pending = pending.unwrap_or(&mut **end_hist);
        let mut hist = NONE;
        if pending.count > 0 && (*n_hists + 1) * HIST_WORDS <= hists.len() {
            let at = *n_hists * HIST_WORDS;
            pending.to_words(&mut hists[at..at + HIST_WORDS]);
            hist = *n_hists as u64;
            *n_hists += 1;
            pending.clear();
        }
        let at = *n_records * RECORD_WORDS;
        // Program::build counted every mark; a miss here would be a bug in
        // that count, and dropping the mark beats corrupting the report.
        if at + RECORD_WORDS > records.len() {
            return;
        }
        let r = &mut records[at..at + RECORD_WORDS];
        r[0] = u64::from(name);
        r[1] = hist;
        r[2] = elapsed;
        r[3] = tid;
        r[4] = *read_ns;
        r[5] = cpu;
        r[6..].copy_from_slice(&wire::sample_words(&sample));
        for (w, o) in r[6..].iter_mut().zip(offset.iter()) {
            if *w != NONE {
                *w = w.wrapping_sub(*o);
            }
        }
        *n_records += 1;
    }
}

/// The CPU time of every thread of this process, in ns.
fn process_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

fn write_report(log: &MarkLog) {
    let header = [
        MAGIC,
        wire::STATUS_OK,
        log.n_records as u64,
        log.n_hists as u64,
        0,
        0,
    ];
    let fd = REPORT_FD.load(Ordering::SeqCst);
    write_words(fd, &header);
    write_words(fd, &log.base);
    write_words(fd, &log.records[..log.n_records * RECORD_WORDS]);
    write_words(fd, &log.hists[..log.n_hists * HIST_WORDS]);
}

/// Writes a failure report (one header) once and exits; a second failure
/// parks until the first has ended the process.
pub(super) fn report_failure(header: &[u64; HEADER_WORDS]) -> ! {
    if FAILING.swap(true, Ordering::SeqCst) {
        loop {
            // SAFETY: pause only waits for a signal.
            unsafe { libc::pause() };
        }
    }
    write_words(REPORT_FD.load(Ordering::SeqCst), header);
    // Nothing left behind: a child running beside this process is ended
    // before the process is.
    super::fork::kill_running();
    // SAFETY: see child_main.
    unsafe { libc::_exit(EXIT_FAILED) }
}

/// write(2) of all of `words`; async-signal-safe (no allocation, no locks).
fn write_words(fd: RawFd, words: &[u64]) {
    // SAFETY: a `u64` slice is plain bytes; the view covers exactly its memory.
    let bytes = unsafe {
        std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), std::mem::size_of_val(words))
    };
    let mut done = 0;
    while done < bytes.len() {
        // SAFETY: the pointer and length stay inside `bytes`.
        let n = unsafe { libc::write(fd, bytes[done..].as_ptr().cast(), bytes.len() - done) };
        if n > 0 {
            done += n as usize;
        } else if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        } else {
            return; // The parent is gone or the pipe is broken: nothing to do.
        }
    }
}

extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler;
    // si_addr is defined for SIGSEGV and SIGBUS.
    let addr = unsafe { (*info).si_addr() } as u64;
    report_failure(&[MAGIC, wire::STATUS_FAULT, sig as u64, addr, 0, 0]);
}

fn install_fault_handlers() {
    for sig in [libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: sigaction is plain data; all-zero is a valid start.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_fault as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO;
        // SAFETY: `sa` is initialized; the handler only calls
        // async-signal-safe functions (write, _exit, pause).
        unsafe {
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Writes every page of a buffer (see `host::counters::prefault_write`).
pub(super) fn prefault_words(words: &mut [u64]) {
    // SAFETY: a `u64` slice is plain bytes; the view covers exactly its memory
    // and is the only borrow while it lives.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(
            words.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(words),
        )
    };
    host::counters::prefault_write(bytes);
}

/// Writes [`STACK_PRETOUCH`] bytes of this thread's stack below the current
/// frame, so that ops, which never go that deep, do not fault on the stack.
#[inline(never)]
pub(super) fn pretouch_stack() {
    let mut area = [0u8; STACK_PRETOUCH];
    for i in (0..STACK_PRETOUCH).step_by(4096) {
        // SAFETY: `i` is inside `area`.
        unsafe { area.as_mut_ptr().add(i).write_volatile(1) };
    }
    std::hint::black_box(&area);
}
