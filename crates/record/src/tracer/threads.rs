//! The recorder's two helper threads: the sampler thread that drains the
//! perf ring while the program runs (invariant 3 of [`super`]), and the
//! watchdog that kills the program at the time limit (invariant 2).

use super::shared::{lock, Shared};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The running helper threads; [`Helpers::stop`] ends and joins them.
pub(super) struct Helpers {
    done: Arc<AtomicBool>,
    timed_out: Arc<AtomicBool>,
    drainer: Option<JoinHandle<()>>,
    stop_watchdog: Sender<()>,
    watchdog: JoinHandle<()>,
}

impl Helpers {
    /// Starts the drainer (when `sampling`) and the watchdog for `pid`.
    pub(super) fn start(
        shared: &Arc<Mutex<Shared>>,
        sampling: bool,
        pid: i32,
        timeout: Duration,
    ) -> Helpers {
        let done = Arc::new(AtomicBool::new(false));
        let timed_out = Arc::new(AtomicBool::new(false));
        let drainer = sampling.then(|| {
            let (sh, done) = (Arc::clone(shared), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(2));
                    lock(&sh).flush(u64::MAX);
                }
            })
        });
        // The watchdog waits on a channel that the end of the recording
        // closes, so that it stops at once rather than at its next poll.
        let (stop_watchdog, stopped) = channel::<()>();
        let watchdog = {
            let timed_out = Arc::clone(&timed_out);
            std::thread::spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(timeout) {
                    timed_out.store(true, Ordering::Release);
                    // SAFETY: killing our own tracee at the time limit.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            })
        };
        Helpers {
            done,
            timed_out,
            drainer,
            stop_watchdog,
            watchdog,
        }
    }

    /// Ends both threads; true if the watchdog killed the program.
    pub(super) fn stop(self) -> bool {
        self.done.store(true, Ordering::Release);
        drop(self.stop_watchdog);
        if let Some(d) = self.drainer {
            let _ = d.join();
        }
        let _ = self.watchdog.join();
        self.timed_out.load(Ordering::Acquire)
    }
}
