//! The clock of the in-process probes: the calling thread's CPU time, so a
//! probe preempted by another process is not charged for the time it did
//! not run (on a shared host that is most of the wall time). The monotonic
//! clock where the CPU clock cannot be read.

use std::time::Instant;

/// A stopwatch on the thread's CPU time.
pub struct CpuTimer {
    cpu: Option<u64>,
    wall: Instant,
}

impl CpuTimer {
    pub fn start() -> CpuTimer {
        CpuTimer {
            cpu: host::thread_cpu_ns(),
            wall: Instant::now(),
        }
    }

    /// Nanoseconds of CPU time since [`CpuTimer::start`].
    pub fn ns(&self) -> f64 {
        match (self.cpu, host::thread_cpu_ns()) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64,
            _ => self.wall.elapsed().as_nanos() as f64,
        }
    }
}

/// Whether the probes time with the thread's CPU clock (said in methods).
pub fn name() -> &'static str {
    if host::thread_cpu_ns().is_some() {
        "thread CPU time"
    } else {
        "wall time"
    }
}
