//! Closing the fault events without waiting for the kernel.
//!
//! The last close of a tracepoint's perf event unregisters the perf probe
//! and then waits for every CPU to leave it (Linux:
//! kernel/trace/trace_event_perf.c, perf_trace_event_unreg, which calls
//! tracepoint_synchronize_unregister): a grace period, about 30 ms per
//! tracepoint on the machine of BENCHMARKS.md, two tracepoints, after the
//! program has exited. That is a wait, not work, and nothing of the
//! recording depends on it, so the recorder hands its last references to a
//! grandchild that drops them and exits on its own.
//!
//! ## Invariants
//! 1. The grandchild holds the events until the recorder has closed its
//!    own copies (it waits for the end of a pipe only the recorder keeps
//!    open), so the recorder's closes are never the last ones.
//! 2. The grandchild keeps no other descriptor (a caller reading the
//!    recorder's stdout or stderr sees them end with the recorder) and is
//!    not the recorder's child (it is never waited for and never reaped
//!    by the recorder's own `wait4(-1)`).
//! 3. On any failure (fork refused) the descriptors are simply closed
//!    here: the recording is the same, only later.

use std::os::fd::{AsRawFd, OwnedFd};

/// Closes `fds`, leaving the kernel's wait for the last close to a
/// detached grandchild. Anything mapped from them must be unmapped first
/// or be unmapped by the caller (a mapping holds its own reference).
pub fn close_detached(fds: Vec<OwnedFd>) {
    if fds.is_empty() {
        return;
    }
    let mut keep: Vec<libc::c_uint> = fds.iter().map(|f| f.as_raw_fd() as libc::c_uint).collect();
    let mut pipe = [0i32; 2];
    // SAFETY: a valid array of two descriptors for the kernel to fill.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let (read_end, write_end) = (pipe[0], pipe[1]);
    keep.push(read_end as libc::c_uint);
    keep.sort_unstable();
    // SAFETY: after fork the children call only async-signal-safe
    // functions (fork, close_range, read, _exit) on memory prepared
    // before it (`keep`); the parent continues normally.
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: see above.
        unsafe {
            if libc::fork() != 0 {
                // The middle process exits at once (whether or not the
                // grandchild could be made): the recorder reaps it.
                libc::_exit(0);
            }
            // The grandchild: everything closed but the events and the
            // pipe's read end (invariant 2).
            let mut low: libc::c_uint = 0;
            for &fd in &keep {
                if fd > low {
                    libc::close_range(low, fd - 1, 0);
                }
                low = fd + 1;
            }
            libc::close_range(low, libc::c_uint::MAX, 0);
            // Until the recorder's write end closes (invariant 1).
            let mut b = 0u8;
            while libc::read(read_end, (&mut b as *mut u8).cast(), 1) > 0 {}
            libc::_exit(0);
        }
    }
    if child > 0 {
        // SAFETY: reaping the middle process, ours, which exits at once.
        unsafe { libc::waitpid(child, std::ptr::null_mut(), libc::__WALL) };
    }
    drop(fds);
    // SAFETY: both ends are ours, opened above, closed once each.
    unsafe {
        libc::close(read_end);
        libc::close(write_end);
    }
}
