//! What ptlab does on SIGINT and SIGTERM: the work that leaves things
//! behind (a kernel run's region files and its workload process, a
//! recording's partial trace and its program) ends its children, removes
//! its files on its ordinary error path, and ptlab exits with one line on
//! stderr and status 128 + the signal (130, 143).
//!
//! How: [`install`] (once, in `main`) replaces the signals' default action
//! by a listening thread (signal-hook's iterator: the handler only writes
//! to a pipe, the thread does the rest). Work that must clean up runs
//! inside a [`Section`]; the children it starts are [`watch`]ed. On a
//! signal the thread records it and ends every watched child (SIGKILL,
//! through a pidfd, so a reused pid is never hit). The section's own code
//! sees its child gone (a pipe at its end, `wait` returning), asks
//! [`requested`] and returns through its ordinary error path, which
//! removes what it made; when the outermost section is dropped the process
//! exits with the line. Outside every section there is nothing to clean:
//! the thread prints the line and exits at once, as the default action
//! would have ended the process.
//!
//! ## Invariants
//! 1. A child watched before the signal is ended by it; one watched after
//!    it is ended at once ([`watch`] checks under the same lock).
//! 2. A section entered after the signal never starts: the process exits
//!    there, with nothing made yet.
//! 3. ptlab always ends: a second signal, or a section that has not ended
//!    [`GRACE`] after the first, exits at once without cleaning up (and says
//!    so).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How long a section has to clean up after the signal.
pub const GRACE: Duration = Duration::from_secs(10);

/// The first signal received (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static STATE: Mutex<State> = Mutex::new(State {
    next: 0,
    sections: Vec::new(),
    children: Vec::new(),
    interrupted: None,
});

/// A watched child: a pidfd, or the pid where pidfds are not supported.
enum Handle {
    Pidfd(OwnedFd),
    Pid(libc::pid_t),
}

struct State {
    next: u64,
    /// Open sections, outermost first: (id, what it is).
    sections: Vec<(u64, String)>,
    children: Vec<(u64, Handle)>,
    /// What was running when the signal came (the innermost section).
    interrupted: Option<String>,
}

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// The name of a signal this module handles.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// The exit status after `sig`: 128 + its number.
pub fn status(sig: i32) -> i32 {
    128 + sig
}

/// Takes over SIGINT and SIGTERM for the rest of the process.
///
/// # Errors
/// The handlers or the listening thread could not be set up.
pub fn install() -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM])?;
    std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || {
            for sig in signals.forever() {
                received(sig);
            }
        })?;
    Ok(())
}

/// The signal received, if any.
pub fn requested() -> Option<i32> {
    match SIGNAL.load(Ordering::Acquire) {
        0 => None,
        s => Some(s),
    }
}

/// What the listening thread does with `sig`.
fn received(sig: i32) {
    if SIGNAL
        .compare_exchange(0, sig, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        leave(
            sig,
            &format!(
                "ptlab: interrupted again by {}: exiting without cleaning up",
                name(sig)
            ),
        );
    }
    let mut st = state();
    for (_, h) in &st.children {
        end(h);
    }
    let Some((_, what)) = st.sections.last() else {
        drop(st);
        leave(sig, &format!("ptlab: interrupted by {}", name(sig)));
    };
    st.interrupted = Some(what.clone());
    drop(st);
    // The section cleans up and exits (Section's Drop); past the grace
    // period, exit anyway (invariant 3).
    std::thread::spawn(move || {
        std::thread::sleep(GRACE);
        leave(
            sig,
            &format!(
                "ptlab: interrupted by {}; the work in progress did not stop within {} s: exiting without cleaning up",
                name(sig),
                GRACE.as_secs()
            ),
        );
    });
}

/// Prints `line` and ends the process at once (no destructor runs: for the
/// paths where nothing is left to clean, or cleaning has failed).
fn leave(sig: i32, line: &str) -> ! {
    eprintln!("{line}");
    // SAFETY: _exit ends the process; nothing after it runs.
    unsafe { libc::_exit(status(sig)) }
}

fn end(h: &Handle) {
    match h {
        // SAFETY: a pidfd of ours; a null siginfo and no flags, as
        // kill(2) would send.
        Handle::Pidfd(fd) => unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        },
        // SAFETY: kill has no memory effects; the pid is a child the
        // caller has not reaped yet (Watched is dropped before reaping).
        Handle::Pid(pid) => unsafe {
            libc::kill(*pid, libc::SIGKILL);
        },
    }
}

/// Work that cleans up after itself when interrupted: while one is open,
/// a signal ends the watched children and lets the work return through
/// its error path; dropping the outermost section then exits the process,
/// with the line naming `what`. Declare it before the things it must see
/// cleaned up (locals drop in reverse order).
#[must_use = "a section lasts as long as its value"]
pub struct Section {
    id: u64,
}

impl Section {
    /// Opens a section doing `what` (e.g. "the kernel run of writeback:
    /// its region files removed, its process ended"); exits at once if a
    /// signal came already (invariant 2).
    pub fn enter(what: impl Into<String>) -> Section {
        let mut st = state();
        if let Some(sig) = requested() {
            drop(st);
            leave(sig, &format!("ptlab: interrupted by {}", name(sig)));
        }
        st.next += 1;
        let id = st.next;
        st.sections.push((id, what.into()));
        Section { id }
    }
}

impl Drop for Section {
    fn drop(&mut self) {
        let mut st = state();
        st.sections.retain(|(id, _)| *id != self.id);
        let (Some(sig), true) = (requested(), st.sections.is_empty()) else {
            return;
        };
        let what = st.interrupted.take().unwrap_or_default();
        drop(st);
        eprintln!("ptlab: interrupted by {}: {what}", name(sig));
        std::process::exit(status(sig));
    }
}

/// A child that a signal ends, until this is dropped (drop it before
/// reaping the child).
#[must_use = "the child is watched as long as this value lives"]
pub struct Watched {
    id: u64,
}

/// Watches child `pid`: a signal, received or to come, sends it SIGKILL.
pub fn watch(pid: libc::pid_t) -> Watched {
    // SAFETY: pidfd_open takes a pid and flags and returns a new
    // descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let h = if fd >= 0 {
        // SAFETY: a new descriptor that nothing else owns.
        Handle::Pidfd(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    } else {
        Handle::Pid(pid)
    };
    let mut st = state();
    if requested().is_some() {
        end(&h);
    }
    st.next += 1;
    let id = st.next;
    st.children.push((id, h));
    Watched { id }
}

impl Drop for Watched {
    fn drop(&mut self) {
        state().children.retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_names_are_the_shells() {
        assert_eq!(status(libc::SIGINT), 130);
        assert_eq!(status(libc::SIGTERM), 143);
        assert_eq!(name(libc::SIGTERM), "SIGTERM");
    }

    #[test]
    fn sections_and_children_are_forgotten_when_dropped() {
        // No signal in this test process: nothing exits.
        let outer = Section::enter("outer");
        let inner = Section::enter("inner");
        // SAFETY: fork; the child only _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: in the child, nothing but _exit.
            unsafe { libc::_exit(0) };
        }
        let w = watch(pid);
        assert_eq!(state().children.len(), 1);
        drop(w);
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        drop(inner);
        assert_eq!(state().sections.len(), 1);
        drop(outer);
        assert!(state().sections.is_empty() && state().children.is_empty());
        assert_eq!(requested(), None);
    }
}
