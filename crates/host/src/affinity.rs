//! Pinning the calling thread to one CPU: calibration's probes that need
//! two CPUs (the lock hand-off, the TLB shootdown) put one thread on each,
//! and the single-thread probes stay on one CPU so that a migration does
//! not empty the caches halfway through a timing; the kernel backend pins
//! a workload's threads when asked (`KernelOptions::pin_threads`).

use std::marker::PhantomData;
use std::mem::MaybeUninit;

/// The calling thread's CPU set, restored on drop.
pub struct Pinned {
    old: libc::cpu_set_t,
    /// Not `Send`: the set must be restored on the thread it was taken on.
    _here: PhantomData<*const ()>,
}

/// Pins the calling thread to `cpu`. `None` if the kernel refuses (no such
/// CPU, or outside the allowed set).
pub fn pin_to(cpu: usize) -> Option<Pinned> {
    let mut old = MaybeUninit::<libc::cpu_set_t>::zeroed();
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `old` is a writable cpu_set_t of `size` bytes; pid 0 is the
    // calling thread.
    if unsafe { libc::sched_getaffinity(0, size, old.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: sched_getaffinity succeeded and filled it.
    let old = unsafe { old.assume_init() };
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= 8 * size {
        return None;
    }
    // SAFETY: `cpu` is below the set's capacity in bits (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of `size` bytes.
    if unsafe { libc::sched_setaffinity(0, size, &set) } != 0 {
        return None;
    }
    Some(Pinned {
        old,
        _here: PhantomData,
    })
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: `old` is the set sched_getaffinity gave for this thread.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.old);
        }
    }
}

/// Pins the calling thread to `cpu` for the rest of its life (its old set is
/// not kept). `false` if the kernel refuses.
pub fn pin_for_good(cpu: usize) -> bool {
    pin_to(cpu).map(std::mem::forget).is_some()
}

/// The CPUs this thread may run on, in order.
pub fn allowed_cpus() -> Vec<usize> {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: an all-zero cpu_set_t is valid; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is writable, of `size` bytes; pid 0 is this thread.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Vec::new();
    }
    (0..8 * size)
        // SAFETY: every `c` is below the set's capacity in bits.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}
