//! The recording loop proper: every ptrace stop of the program and of what
//! it starts, until the last tracee is reaped. Seccomp stops open a call,
//! syscall-exit stops write it (after the faults older than its entry:
//! invariant 1 of [`super`]), exec stops read the new image's mappings,
//! fork and clone stops note the processes the trace does not follow.

use super::ptrace::{fd_path, handle_call, mapped_file, resume, syscall_info, tgid_of};
use super::shared::{lock, Shared};
use crate::maps;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How the program ended, as the loop saw it.
pub(super) struct Ended {
    /// Whether the program's exec was seen (untraced, it is not: a failed
    /// one exits 127).
    pub(super) exec_seen: bool,
    pub(super) exit_status: Option<i32>,
    pub(super) rusage: Option<libc::rusage>,
}

/// The loop's state.
pub(super) struct EventLoop {
    /// The program (the first tracee).
    pid: i32,
    shared: Arc<Mutex<Shared>>,
    /// Calls entered and not yet exited: number, arguments, entry time.
    pending: HashMap<i32, (i64, [u64; 6], u64)>,
    /// Tracees seen, and whether each belongs to another process than the
    /// program (a child process: its calls are not recorded).
    foreign: HashMap<i32, bool>,
    ended: Ended,
}

impl EventLoop {
    pub(super) fn new(pid: i32, shared: Arc<Mutex<Shared>>, traced: bool) -> EventLoop {
        EventLoop {
            pid,
            shared,
            pending: HashMap::new(),
            foreign: HashMap::new(),
            ended: Ended {
                exec_seen: !traced,
                exit_status: None,
                rusage: None,
            },
        }
    }

    /// Waits for stops until no tracee is left.
    pub(super) fn run(mut self) -> Ended {
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
                for &t in self.foreign.keys() {
                    // SAFETY: `t` is a tracee of ours that this loop has not
                    // reaped (reaped ones leave `foreign`), so not a reused pid.
                    unsafe { libc::kill(t, libc::SIGKILL) };
                }
            }
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                self.reaped(w, status, ru);
            } else if libc::WIFSTOPPED(status) {
                self.stopped(w, status, seen);
            }
        }
        self.ended
    }

    fn reaped(&mut self, w: i32, status: i32, ru: libc::rusage) {
        self.foreign.remove(&w);
        self.pending.remove(&w);
        lock(&self.shared).in_flight.remove(&w);
        if w == self.pid {
            self.ended.exit_status = Some(status);
            self.ended.rusage = Some(ru);
        }
    }

    fn stopped(&mut self, w: i32, status: i32, seen: Instant) {
        let pid = self.pid;
        let is_foreign = *self
            .foreign
            .entry(w)
            .or_insert_with(|| tgid_of(w).is_some_and(|t| t != pid as u32));
        let sig = libc::WSTOPSIG(status);
        let event = status >> 16;
        if event == libc::PTRACE_EVENT_SECCOMP {
            self.call_entry(w, is_foreign);
        } else if sig == (libc::SIGTRAP | 0x80) {
            self.call_exit(w, seen);
        } else if event == libc::PTRACE_EVENT_EXEC {
            if !is_foreign {
                self.exec();
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
                    lock(&self.shared).stats.child_processes += 1;
                }
                self.foreign.insert(new as i32, true);
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

    /// A seccomp stop: the program enters a call the filter asks about.
    fn call_entry(&mut self, w: i32, is_foreign: bool) {
        if is_foreign {
            resume(libc::PTRACE_CONT, w, 0);
            return;
        }
        if let Some(info) = syscall_info(w) {
            // SAFETY: at a seccomp stop the kernel fills the seccomp
            // member of the union.
            let (nr, args) = unsafe { (info.u.seccomp.nr as i64, info.u.seccomp.args) };
            let t = now_ns();
            self.pending.insert(w, (nr, args, t));
            lock(&self.shared).in_flight.insert(w, t);
        }
        resume(libc::PTRACE_SYSCALL, w, 0);
    }

    /// A syscall-exit stop: the call's records are written.
    fn call_exit(&mut self, w: i32, seen: Instant) {
        let Some((nr, args, t)) = self.pending.remove(&w) else {
            resume(libc::PTRACE_CONT, w, 0);
            return;
        };
        let ret = syscall_info(w)
            // SAFETY: at a syscall-exit stop the kernel fills the
            // exit member.
            .map(|i| unsafe { i.u.exit.sval })
            .unwrap_or(-1);
        // What only the stopped program can tell (a mapped file's name,
        // before it closes the descriptor) is read now; then it goes on
        // while its call and the faults before it are written (invariant 1
        // holds: its entry stays in flight until then, so its later faults
        // wait behind the call's records). The stop lasted for the whole
        // flush before, ~220 samples a call on the Python dict of
        // BENCHMARKS.md.
        let path = mapped_file(nr, args, ret).map(|fd| fd_path(w, fd));
        resume(libc::PTRACE_CONT, w, 0);
        let resumed = Instant::now();
        let mut sh = lock(&self.shared);
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
    }

    /// The program's exec: the new image's mappings start the trace.
    fn exec(&mut self) {
        let pid = self.pid;
        self.ended.exec_seen = true;
        let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        let mut sh = lock(&self.shared);
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
}
