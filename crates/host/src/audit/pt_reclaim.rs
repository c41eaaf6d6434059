//! The PT_RECLAIM experiment: does MADV_DONTNEED of a whole 2 MiB range free
//! its PTE table?
//!
//! It runs in a forked child so that this process's counters (VmPTE, faults)
//! are untouched. The child uses only raw syscalls and its stack (no
//! allocation: the parent may have other threads, whose locks a forked child
//! must not need) and answers with its exit status.

/// Exit statuses of the probe child.
const RECLAIMED: i32 = 0;
const KEPT: i32 = 1;
const INCONCLUSIVE: i32 = 2;

const TWO_MIB: usize = 2 << 20;

/// `Some(true)` if this kernel freed the PTE table, `Some(false)` if it kept
/// it, `None` if the experiment could not tell (no VmPTE, fork failed, the
/// write needed no new table).
pub fn probe_pt_reclaim() -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: the child runs only async-signal-safe code (syscalls on its
        // stack) and leaves with _exit, never returning into Rust.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return None;
        }
        if pid == 0 {
            let code = child();
            // SAFETY: _exit is always safe; it skips atexit handlers and
            // destructors that belong to the parent.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        loop {
            // SAFETY: `pid` is our child; `status` is a valid out-pointer.
            let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
            if rc == pid {
                break;
            }
            if rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return None;
            }
        }
        if !libc::WIFEXITED(status) {
            return None;
        }
        match libc::WEXITSTATUS(status) {
            RECLAIMED => Some(true),
            KEPT => Some(false),
            _ => None,
        }
    }
    #[cfg(not(target_os = "linux"))]
    None
}

#[cfg(target_os = "linux")]
fn child() -> i32 {
    // SAFETY: open on a NUL-terminated literal path.
    let fd = unsafe { libc::open(c"/proc/self/status".as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        return INCONCLUSIVE;
    }
    let mut buf = [0u8; 16 * 1024];
    let mut vmpte = || -> Option<u64> {
        // SAFETY: reads into our stack buffer, within its length.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return None;
        }
        crate::procfs::field_kb(&buf[..n as usize], b"VmPTE")
    };
    // Two 2 MiB blocks, so one 2 MiB-aligned block lies inside: its PTE table
    // then maps only this mapping.
    // SAFETY: a fresh anonymous mapping; the kernel picks the address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            2 * TWO_MIB,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return INCONCLUSIVE;
    }
    let aligned = (p as usize + TWO_MIB - 1) & !(TWO_MIB - 1);
    let block = aligned as *mut libc::c_void;
    // A huge page would map the block from the PMD, with no PTE table to free.
    // SAFETY: `block..block+2MiB` lies inside the mapping created above.
    unsafe { libc::madvise(block, TWO_MIB, libc::MADV_NOHUGEPAGE) };
    let Some(before) = vmpte() else {
        return INCONCLUSIVE;
    };
    // SAFETY: the first byte of the block is mapped read-write.
    unsafe { (aligned as *mut u8).write_volatile(1) };
    let Some(touched) = vmpte() else {
        return INCONCLUSIVE;
    };
    // SAFETY: as above, the range is inside our mapping.
    if unsafe { libc::madvise(block, TWO_MIB, libc::MADV_DONTNEED) } != 0 {
        return INCONCLUSIVE;
    }
    let Some(after) = vmpte() else {
        return INCONCLUSIVE;
    };
    if touched <= before {
        INCONCLUSIVE
    } else if after < touched {
        RECLAIMED
    } else {
        KEPT
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn probe_agrees_with_config() {
        let probe = probe_pt_reclaim();
        let config =
            crate::kconfig::KernelConfig::read().and_then(|c| c.enabled("CONFIG_PT_RECLAIM"));
        if let (Some(p), Some(c)) = (probe, config) {
            assert_eq!(p, c, "experiment and kernel config disagree");
        }
        // this project's development machine has PT_RECLAIM.
        if config == Some(true) {
            assert_eq!(probe, Some(true));
        }
    }
}
