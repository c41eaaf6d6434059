//! The child's thread coordination: a start gate and the workload's barrier.
//!
//! Both are a std `Mutex` and `Condvar` (futex-based: waiting and waking make
//! system calls but allocate nothing and touch only their own words, which
//! the child writes before the first measurement).
//!
//! Protocol of a run:
//! 1. every worker calls [`Gate::arrive`] and blocks;
//! 2. the coordinator [`Gate::wait_arrived`], takes the baseline, [`Gate::open`]s;
//! 3. workers run their ops; each ends with [`Barrier::leave`] and [`Gate::finish`];
//! 4. the coordinator [`Gate::wait_finished`], then takes the `end` mark while
//!    every worker is still alive (a thread's exit would unmap its stack and
//!    change the counters), reports, and exits the process.

use std::sync::{Condvar, Mutex, MutexGuard};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker that panicked cannot leave these counters half-updated, so a
    // poisoned lock is still consistent.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[derive(Default)]
struct GateState {
    arrived: usize,
    open: bool,
    finished: usize,
}

/// Start line and finish line of the workers.
#[derive(Default)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

impl Gate {
    /// Worker: reports ready and waits until the gate opens.
    pub fn arrive(&self) {
        let mut s = lock(&self.state);
        s.arrived += 1;
        self.cv.notify_all();
        while !s.open {
            s = self
                .cv
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Coordinator: waits until `n` workers have arrived.
    pub fn wait_arrived(&self, n: usize) {
        let mut s = lock(&self.state);
        while s.arrived < n {
            s = self
                .cv
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Coordinator: lets every worker go.
    pub fn open(&self) {
        lock(&self.state).open = true;
        self.cv.notify_all();
    }

    /// Worker: reports its ops done and blocks for good (the coordinator ends
    /// the process).
    pub fn finish(&self) -> ! {
        let mut s = lock(&self.state);
        s.finished += 1;
        self.cv.notify_all();
        loop {
            s = self
                .cv
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Coordinator: waits until `n` workers have finished.
    pub fn wait_finished(&self, n: usize) {
        let mut s = lock(&self.state);
        while s.finished < n {
            s = self
                .cv
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

struct BarrierState {
    /// Threads still running their ops.
    active: usize,
    waiting: usize,
    generation: u64,
}

/// The workload's `barrier`: waits until every thread still running has
/// reached a barrier. A thread that has finished its ops leaves the barrier,
/// so threads with fewer barriers than others never deadlock the run.
pub(crate) struct Barrier {
    state: Mutex<BarrierState>,
    cv: Condvar,
}

impl Barrier {
    pub fn new(threads: usize) -> Barrier {
        Barrier {
            state: Mutex::new(BarrierState {
                active: threads,
                waiting: 0,
                generation: 0,
            }),
            cv: Condvar::new(),
        }
    }

    pub fn wait(&self) {
        let mut s = lock(&self.state);
        s.waiting += 1;
        if s.waiting >= s.active {
            Self::release(&mut s, &self.cv);
            return;
        }
        let generation = s.generation;
        while s.generation == generation {
            s = self
                .cv
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// A thread that has no more ops stops counting.
    pub fn leave(&self) {
        let mut s = lock(&self.state);
        s.active -= 1;
        if s.waiting > 0 && s.waiting >= s.active {
            Self::release(&mut s, &self.cv);
        }
    }

    fn release(s: &mut BarrierState, cv: &Condvar) {
        s.waiting = 0;
        s.generation += 1;
        cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn barrier_separates_phases_and_tolerates_leavers() {
        // Thread 0 passes 3 barriers, the others 1: nobody may deadlock, and
        // nobody passes the first barrier before all have reached it.
        let n = 4;
        let barrier = Barrier::new(n);
        let reached = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..n {
                let (barrier, reached) = (&barrier, &reached);
                s.spawn(move || {
                    reached.fetch_add(1, Ordering::SeqCst);
                    barrier.wait();
                    assert_eq!(reached.load(Ordering::SeqCst), n);
                    if t == 0 {
                        barrier.wait();
                        barrier.wait();
                    }
                    barrier.leave();
                });
            }
        });
    }
}
