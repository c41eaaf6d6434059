//! The calling thread's CPU time: what a benchmark on a shared machine reads
//! instead of the wall clock, since it leaves out the time other processes
//! (and, under a hypervisor, other guests) take.

/// Nanoseconds of CPU time the calling thread has used
/// (`CLOCK_THREAD_CPUTIME_ID`), or `None` where the clock cannot be read.
pub fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_advances_with_work() {
        let a = thread_cpu_ns().expect("Linux has a thread CPU clock");
        let mut x = 1u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        let b = thread_cpu_ns().unwrap();
        assert!(b > a, "{a} -> {b} after 20 M multiplications ({x})");
    }
}
