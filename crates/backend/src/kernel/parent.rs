//! The parent's side: fork the child, collect its report under a time limit,
//! and always reap it.
//!
//! Invariant: when [`run_in_child`] returns, on any path, the child has been
//! waited for (no zombie, no orphan). Past the time limit the child gets
//! SIGKILL, which ends all its threads. The parent starts no thread, so it
//! may fork from any context; the child also asks the kernel for SIGKILL if
//! the forking thread dies first (PR_SET_PDEATHSIG).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::child::child_main;
use super::program::Program;
use super::KernelError;

/// Runs `prog` in a forked child and returns the words of its report.
pub(crate) fn run_in_child(
    prog: &Program,
    fds: &[RawFd],
    timeout: Duration,
) -> Result<Vec<u64>, KernelError> {
    let mut pipe = [-1; 2];
    // SAFETY: `pipe` is a valid array of two descriptors to fill.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(setup("creating a pipe"));
    }
    // SAFETY: both descriptors were just created and are owned here only.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };

    // The measured process is a fork of this one and inherits its memory:
    // heap that ptlab freed but the allocator kept (after a model run, say)
    // would be copied by the workload's forks and made fault-free by their
    // children, so a fork's time would depend on what ptlab did before.
    // Give it back first.
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only returns free heap memory to the kernel; no
    // live allocation moves.
    unsafe {
        libc::malloc_trim(0);
    }
    // SAFETY: the child runs `child_main`, which follows the rules for a
    // child of a possibly multi-threaded process (see child.rs) and leaves
    // only through _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(setup("forking the workload process"));
    }
    if pid == 0 {
        let fd = write_end.as_raw_fd();
        // Leak the child's copies: the process ends with _exit.
        std::mem::forget(read_end);
        std::mem::forget(write_end);
        child_main(prog, fds, fd);
    }
    drop(write_end);
    let mut child = Child {
        pid,
        reaped: None,
        watched: Some(interrupt::watch(pid)),
    };
    let bytes = read_until_eof(&read_end, Instant::now() + timeout);
    let bytes = match bytes {
        Ok(b) => b,
        Err(ReadError::TimedOut) => {
            child.kill();
            return Err(KernelError::Timeout { limit: timeout });
        }
        Err(ReadError::Io(what)) => {
            child.kill();
            return Err(setup(what));
        }
    };
    let status = child.wait();
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .collect();
    if words.is_empty() {
        return Err(KernelError::ChildFailed {
            status: describe_status(status),
        });
    }
    Ok(words)
}

enum ReadError {
    TimedOut,
    Io(&'static str),
}

fn read_until_eof(fd: &OwnedFd, deadline: Instant) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReadError::TimedOut);
        }
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            if last_errno() == libc::EINTR {
                continue;
            }
            return Err(ReadError::Io("waiting for the workload's report"));
        }
        if rc == 0 {
            continue; // the deadline check above ends the loop
        }
        // SAFETY: reads into `chunk`, within its length.
        let n = unsafe { libc::read(fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
        match n {
            0 => return Ok(out),
            n if n > 0 => out.extend_from_slice(&chunk[..n as usize]),
            _ if last_errno() == libc::EINTR => {}
            _ => return Err(ReadError::Io("reading the workload's report")),
        }
    }
}

/// The forked child; reaped exactly once. A SIGINT or SIGTERM to ptlab
/// kills it (crate interrupt) until it is reaped.
struct Child {
    pid: libc::pid_t,
    reaped: Option<libc::c_int>,
    watched: Option<interrupt::Watched>,
}

impl Child {
    fn kill(&mut self) {
        if self.reaped.is_none() {
            // SAFETY: `pid` is our unreaped child, so the id cannot have been
            // reused by another process.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
        self.wait();
    }

    fn wait(&mut self) -> libc::c_int {
        if let Some(status) = self.reaped {
            return status;
        }
        let mut status = 0;
        // Unwatched before it is reaped (its pid may then be reused); it
        // is past its report or killed already.
        self.watched = None;
        loop {
            // SAFETY: waits for our own child; `status` is a valid out-pointer.
            let rc = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if rc == self.pid || (rc < 0 && last_errno() != libc::EINTR) {
                break;
            }
        }
        self.reaped = Some(status);
        status
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // Any early return (or panic) still leaves no child behind.
        self.kill();
    }
}

fn describe_status(status: libc::c_int) -> String {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        let hint = if sig == libc::SIGKILL {
            " (out of memory, or killed from outside)"
        } else {
            ""
        };
        format!("killed by signal {sig}{hint}, without a report")
    } else if libc::WIFEXITED(status) {
        format!("exit status {} without a report", libc::WEXITSTATUS(status))
    } else {
        format!("wait status {status:#x} without a report")
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn setup(what: &str) -> KernelError {
    KernelError::Setup {
        what: what.to_string(),
        source: std::io::Error::last_os_error(),
    }
}
