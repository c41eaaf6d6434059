//! A workload's `fork` on the kernel: a real fork(2) of the measured
//! process, from its one workload thread.
//!
//! # The child ("grandchild" of the runner)
//!
//! It is a copy of the calling thread only. Before its own baseline it
//! makes its runner memory fault-free as the measured process did at its
//! start ([`super::quiesce`], leaving the workload's regions exactly as
//! fork left them), opens its own counter reader (an inherited
//! /proc/self/status descriptor would read the parent's), writes its stack
//! and the pages its marks will write, and asks for SIGKILL if the parent
//! thread dies (PR_SET_PDEATHSIG). Then it runs its ops with the same
//! executor, its marks going to its own copy of the mark log, and copies
//! them with its baseline into [`ForkArea`], a shared mapping made before
//! the parent's baseline, and `_exit`s. A failing op reports through the
//! report pipe as in the parent and exits with `EXIT_FAILED`.
//!
//! # The parent
//!
//! Its thread waits (polling `waitpid` with 1 ms sleeps, so a child past
//! the run's time limit is killed with SIGKILL and still reaped). Its
//! counters must stay the workload's: fork write-protects every private
//! page of the runner too (heap, stacks, TLS, the mark log), and the
//! runner's first write to each afterwards would be a fault the workload
//! did not make. So the parent reads its counters just before the fork,
//! and after the reap writes every present page of its own private memory
//! (MADV_POPULATE_WRITE, no byte changed; the workload's regions are left
//! write-protected, as Linux leaves them), reads again, and takes the
//! difference off every later mark ([`MarkLog`]'s `offset`): the workload's
//! parent thread does nothing in that window, so its faults and anonymous
//! memory changes are the runner's. Not its file, shmem and page-table
//! counters: the child's work can change those in the parent too (a hole
//! punched, a shmem page paged out, a table retracted by a collapse reach
//! every process that maps the object), and the runner's own work never
//! does ([`runner_moves`]).
//! The child's records are then copied into the parent's, rebased so that
//! the report's subtraction of the parent's baseline gives the child's
//! counters since the child's own baseline.
//!
//! # A child the parent does not wait for (`wait = false`)
//!
//! [`start`] forks as above, but the parent's thread goes on with its next
//! ops. The separation of the runner's own faults moves to just after the
//! fork, before the parent's next op: it reads its counters before the
//! fork, writes every present page of its own private memory
//! (MADV_POPULATE_WRITE, the workload's regions left alone), reads again
//! and takes the difference off later marks. From then on every page the
//! runner writes is its own again, and it allocates nothing while the
//! child runs (the mark log, the counter reader's buffer and the fork
//! area were made before the baseline), so the parent's marks count its
//! workload alone. [`waitpid`] (or the end of the thread's ops, in
//! `child::worker_body`) reaps the child under the run's time limit,
//! counted from the fork, takes the same window once more (nothing of the
//! runner should fault there; it costs one pass over its maps), and copies
//! the child's records back. Every way out of the process reaps the
//! child: a failure's report kills and reaps it ([`kill_running`], called
//! by `child::report_failure`), and the child also has PR_SET_PDEATHSIG,
//! checked against a parent that died before it was set.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use host::CounterReader;

use super::child::{lock, pretouch_stack, report_failure, Local, Shared, EXIT_FAILED, EXIT_OK};
use super::program::{KOp, Program};
use super::wire::{self, Call, MAGIC, NONE, RECORD_WORDS, SAMPLE_WORDS};

/// The pid of the child running beside the parent (`wait = false`), 0 if
/// none: a failure report kills and reaps it ([`kill_running`]).
static RUNNING: AtomicI32 = AtomicI32::new(0);

/// A child forked with `wait = false`, not yet reaped.
pub(crate) struct Running {
    pid: libc::pid_t,
    /// Past this it is killed (the run's time limit, from the fork).
    deadline: Instant,
}

/// How long the parent sleeps between two looks at its child.
const POLL: Duration = Duration::from_millis(1);

/// A shared anonymous mapping: `[n_records, baseline (SAMPLE_WORDS),
/// records (fork_records x RECORD_WORDS)]`, made and written before the
/// parent's baseline.
pub(crate) struct ForkArea {
    ptr: *mut u64,
    words: usize,
}

// SAFETY: the area is written by one process at a time (the child while
// the parent's only workload thread waits for it), and read by the parent
// after reaping it; no two threads touch it at once.
unsafe impl Sync for ForkArea {}
// SAFETY: as above; the pointer is to a mapping owned for the process's life.
unsafe impl Send for ForkArea {}

impl ForkArea {
    /// The area for `prog`'s forks, or `None` if it has none (or the
    /// mapping failed: a fork then reports a setup failure).
    pub(crate) fn new(prog: &Program) -> Option<ForkArea> {
        if !has_fork(prog) {
            return None;
        }
        let words = 1 + SAMPLE_WORDS + prog.fork_records as usize * RECORD_WORDS;
        // SAFETY: a fresh shared anonymous mapping; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                words * 8,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let a = ForkArea {
            ptr: p.cast(),
            words,
        };
        a.pretouch();
        Some(a)
    }

    /// Writes every word (zero), so that later writes do not fault.
    fn pretouch(&self) {
        for i in 0..self.words {
            // SAFETY: `i` is inside the mapping.
            unsafe { self.ptr.add(i).write_volatile(0) };
        }
    }

    fn set(&self, i: usize, v: u64) {
        assert!(i < self.words);
        // SAFETY: checked just above.
        unsafe { self.ptr.add(i).write_volatile(v) };
    }

    fn get(&self, i: usize) -> u64 {
        assert!(i < self.words);
        // SAFETY: checked just above.
        unsafe { self.ptr.add(i).read_volatile() }
    }
}

fn has_fork(prog: &Program) -> bool {
    prog.threads
        .iter()
        .flatten()
        .any(|op| matches!(op.kind, super::program::KOpKind::Fork { .. }))
}

/// Runs a fork op: the child runs `body`, the parent waits (see the module
/// documentation).
pub(crate) fn fork(sh: &Shared, tid: usize, op: u32, body: &[KOp], local: &mut Local) {
    let (pid, pre) = fork_child(sh, tid, op, body, local);
    reaped(wait_with_limit(pid, sh.prog.fork_timeout));
    own_window(sh, pre);
    copy_back(
        &mut lock(&sh.log),
        sh.fork_area.as_ref().expect("checked at the fork"),
    );
}

/// Runs a fork op with `wait = false`: the child runs `body` while this
/// thread goes on (see the module documentation).
pub(crate) fn start(sh: &Shared, tid: usize, op: u32, body: &[KOp], local: &mut Local) {
    let (pid, pre) = fork_child(sh, tid, op, body, local);
    RUNNING.store(pid, Ordering::SeqCst);
    local.child = Some(Running {
        pid,
        deadline: Instant::now() + sh.prog.fork_timeout,
    });
    own_window(sh, pre);
}

/// Waits for the running child, if any (a `waitpid` op, or the end of the
/// thread's ops), and copies its records back.
pub(crate) fn waitpid(sh: &Shared, local: &mut Local) {
    let Some(c) = local.child.take() else {
        return;
    };
    let left = c.deadline.saturating_duration_since(Instant::now());
    reaped(wait_with_limit(c.pid, left));
    RUNNING.store(0, Ordering::SeqCst);
    let pre = {
        let mut log = lock(&sh.log);
        wire::sample_words(&log.reader.read())
    };
    own_window(sh, pre);
    copy_back(
        &mut lock(&sh.log),
        sh.fork_area.as_ref().expect("checked at the fork"),
    );
}

/// Kills and reaps the child running beside this process, if any. Only
/// async-signal-safe calls: `child::report_failure` calls it, from the
/// fault handler too.
pub(super) fn kill_running() {
    let pid = RUNNING.swap(0, Ordering::SeqCst);
    if pid > 0 {
        let mut status = 0;
        // SAFETY: signals and reaps our own unreaped child (RUNNING is
        // cleared once it is reaped, so the pid cannot be reused).
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            while libc::waitpid(pid, &mut status, 0) < 0 && errno() == libc::EINTR {}
        }
    }
}

/// Forks; in the child runs `body` and never returns. In the parent: the
/// child's pid and the counters read just before the fork.
fn fork_child(
    sh: &Shared,
    tid: usize,
    op: u32,
    body: &[KOp],
    local: &mut Local,
) -> (libc::pid_t, [u64; SAMPLE_WORDS]) {
    let Some(area) = sh.fork_area.as_ref() else {
        sh.fail(op, Call::Fork, libc::ENOMEM);
    };
    let pre = {
        let mut log = lock(&sh.log);
        wire::sample_words(&log.reader.read())
    };
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: fork from one thread of this multithreaded process: the child
    // is a copy of this thread alone. It takes only the mark log's lock,
    // which no other thread holds now (the coordinator is parked, this
    // thread released it), and glibc's malloc, which glibc's fork makes
    // usable in the child; it leaves with _exit only.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        sh.fail(op, Call::Fork, errno());
    }
    if pid == 0 {
        child(sh, tid, body, local, area, parent);
    }
    (pid, pre)
}

/// Acts on the child's wait status: a failed child ends this process (its
/// failure is reported already, or is reported here).
fn reaped(status: Option<libc::c_int>) {
    match status {
        Some(code) if libc::WIFEXITED(code) && libc::WEXITSTATUS(code) == EXIT_OK => {}
        Some(code) if libc::WIFEXITED(code) && libc::WEXITSTATUS(code) == EXIT_FAILED => {
            // The child wrote its failure to the report pipe: end here
            // without writing another report.
            // SAFETY: _exit ends the process; the report is written.
            unsafe { libc::_exit(EXIT_FAILED) }
        }
        _ => report_failure(&[MAGIC, wire::STATUS_SETUP, wire::SETUP_FORK, 0, 0, 0]),
    }
}

/// The runner's own window: every present page of its private memory
/// written (the workload's regions left alone), and what the counters
/// moved since `pre` taken off every later mark.
fn own_window(sh: &Shared, pre: [u64; SAMPLE_WORDS]) {
    let regions: Vec<(u64, u64)> = sh.prog.regions.iter().map(|r| (r.addr, r.size)).collect();
    super::quiesce::quiesce_except(&regions, true);
    drop(regions);
    let mut log = lock(&sh.log);
    let post = wire::sample_words(&log.reader.read());
    for k in 0..SAMPLE_WORDS {
        if pre[k] != NONE && post[k] != NONE && runner_moves(wire::COUNTER_NAMES[k]) {
            log.offset[k] = log.offset[k].wrapping_add(post[k].wrapping_sub(pre[k]));
        }
    }
}

/// Whether the parent's counter `name` is taken off over the fork's window
/// (see the module documentation). The runner's own copy-on-write work
/// moves faults, anonymous memory and times; it never maps or unmaps a
/// file or shmem page (by a PTE or a PMD) or a page table (its private memory was made
/// anonymous and present by quiesce before the baseline, and the
/// populate-write only copies present pages). Those counters can move in
/// the window only by the child's work on pages the parent maps too (a
/// hole punched by MADV_REMOVE, shmem pageout, a collapse retracting the
/// parent's page table: Linux acts on every mapping through the reverse
/// map), which is the workload's, so they are kept.
fn runner_moves(name: &str) -> bool {
    ![
        counters::RSS_FILE_KB.name,
        counters::RSS_SHMEM_KB.name,
        counters::SHMEM_PMD_KB.name,
        counters::FILE_PMD_KB.name,
        counters::VMPTE_KB.name,
    ]
    .contains(&name)
}

/// Where a mark record's counter sample starts (see wire.rs's layout).
const SAMPLE_AT: usize = RECORD_WORDS - SAMPLE_WORDS;

/// The child's records, rebased onto the parent's baseline, appended to
/// the parent's log.
fn copy_back(log: &mut super::child::MarkLog, area: &ForkArea) {
    let n = area.get(0) as usize;
    let child_base: Vec<u64> = (0..SAMPLE_WORDS).map(|k| area.get(1 + k)).collect();
    for i in 0..n {
        let at = log.n_records * RECORD_WORDS;
        if at + RECORD_WORDS > log.records.len() {
            return; // Program::build counted them; see MarkLog::record.
        }
        let src = 1 + SAMPLE_WORDS + i * RECORD_WORDS;
        // name, hist, elapsed_ns, tid, mark_read_ns as the child wrote them;
        // cpu_ns is not comparable (the child's process clock starts at the
        // fork, the parent's baseline before it), so it is left unknown.
        for w in 0..5 {
            log.records[at + w] = area.get(src + w);
        }
        log.records[at + 5] = NONE;
        for (k, &cb) in child_base.iter().enumerate() {
            let (now, pb) = (area.get(src + SAMPLE_AT + k), log.base[k]);
            log.records[at + SAMPLE_AT + k] = if now == NONE || cb == NONE || pb == NONE {
                NONE
            } else {
                pb.wrapping_add(now.wrapping_sub(cb))
            };
        }
        log.n_records += 1;
    }
}

/// The child's whole life. Never returns.
fn child(
    sh: &Shared,
    tid: usize,
    body: &[KOp],
    local: &mut Local,
    area: &ForkArea,
    parent: libc::pid_t,
) -> ! {
    // SAFETY: prctl only sets a flag: the kernel kills this process if the
    // thread that forked it dies.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
    // A parent that died before the flag was set sends no signal.
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != parent {
        // SAFETY: _exit ends this process only; nothing was measured.
        unsafe { libc::_exit(EXIT_FAILED) }
    }
    // This process has no child of its own.
    RUNNING.store(0, Ordering::SeqCst);
    local.child = None;
    let regions: Vec<(u64, u64)> = sh.prog.regions.iter().map(|r| (r.addr, r.size)).collect();
    super::quiesce::quiesce_except(&regions, false);
    drop(regions);
    pretouch_stack();
    area.pretouch();
    let start = {
        let mut log = lock(&sh.log);
        log.reader = CounterReader::open();
        let from = log.n_records * RECORD_WORDS;
        // One word per page, and the last: the child's marks write there.
        let last = log.records.len().saturating_sub(1);
        for i in (from..log.records.len())
            .step_by(512)
            .chain(std::iter::once(last))
        {
            if let Some(w) = log.records.get_mut(i) {
                // SAFETY: `w` is a valid, exclusively borrowed word.
                unsafe { std::ptr::write_volatile(w, 0) };
            }
        }
        log.offset = [0; SAMPLE_WORDS];
        let _ = log.reader.read();
        let base = wire::sample_words(&log.reader.read());
        log.base = base;
        for (k, b) in base.iter().enumerate() {
            area.set(1 + k, *b);
        }
        log.n_records
    };
    super::exec::run_ops(sh, tid, body, local);
    let log = lock(&sh.log);
    let n = log.n_records - start;
    for i in 0..n {
        for w in 0..RECORD_WORDS {
            area.set(
                1 + SAMPLE_WORDS + i * RECORD_WORDS + w,
                log.records[(start + i) * RECORD_WORDS + w],
            );
        }
    }
    area.set(0, n as u64);
    // SAFETY: _exit ends this process only, without destructors; the
    // records are in the shared area.
    unsafe { libc::_exit(EXIT_OK) }
}

/// Waits for `pid`, killing it with SIGKILL past `limit`; its wait status,
/// or `None` if waiting failed.
fn wait_with_limit(pid: libc::pid_t, limit: Duration) -> Option<libc::c_int> {
    let deadline = Instant::now() + limit;
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waits for our own child; `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Some(status);
        }
        if r < 0 && errno() != libc::EINTR {
            return None;
        }
        if Instant::now() >= deadline {
            // SAFETY: signals our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            // SAFETY: as above; a blocking wait reaps the killed child.
            while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 && errno() == libc::EINTR {}
            return None;
        }
        std::thread::sleep(POLL);
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}
