//! The two THP steps that ask the kernel for work it does on its own time:
//!
//! - `deferred_split`: the deferred split shrinker runs from memory
//!   reclaim. To run it for the workload's memory only, the backend makes a
//!   memory cgroup of its own under the one ptlab runs in (cgroup v2: with
//!   the memory controller enabled there; v1: the memory hierarchy), the
//!   workload process moves into it before its first op (so its THPs are
//!   charged there and queued on its split queue), and the step asks that
//!   cgroup to reclaim: `memory.reclaim` (v2) or `memory.force_empty` (v1),
//!   with swappiness 0 so that no anonymous page is swapped out. Reclaim
//!   that finds nothing to free goes down to its lowest priority, where the
//!   shrinkers scan their whole queues (Linux: mm/vmscan.c, shrink_slab).
//!   The cgroup is removed when the run ends, on every path.
//! - `khugepaged`: the step waits until khugepaged has finished two full
//!   scans (`khugepaged/full_scans`), so one whole pass over every
//!   registered process began after the step, within a time limit from
//!   `scan_sleep_millisecs`. Nothing in sysfs is changed.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::KernelError;

const KHUGEPAGED_DIR: &str = "/sys/kernel/mm/transparent_hugepage/khugepaged";

/// The files the workload process uses in its reclaim cgroup.
#[derive(Debug)]
pub(crate) struct ReclaimFiles {
    /// `cgroup.procs`: the process writes its pid here first.
    pub procs: CString,
    /// What the step writes `trigger_value` to.
    pub trigger: CString,
    pub trigger_value: &'static [u8],
}

/// A memory cgroup made for one run; removed on drop.
#[derive(Debug)]
pub(crate) struct ReclaimCgroup {
    dir: PathBuf,
}

fn setup(what: &str, e: std::io::Error) -> KernelError {
    KernelError::Setup {
        what: format!("deferred_split needs a memory cgroup of its own: {what}"),
        source: e,
    }
}

impl ReclaimCgroup {
    /// Makes the cgroup under the one this process runs in.
    ///
    /// # Errors
    /// [`KernelError::Setup`] naming what is missing (no memory controller
    /// this process can reach, no permission).
    pub(crate) fn create() -> Result<(ReclaimCgroup, ReclaimFiles), KernelError> {
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| setup("reading /proc/self/cgroup", e))?;
        let no_memcg = || {
            setup(
                "no memory controller (cgroup v2 with memory enabled, or v1's memory hierarchy)",
                std::io::Error::from_raw_os_error(libc::ENOENT),
            )
        };
        let (parent, v2) = memcg_dir(&own).ok_or_else(no_memcg)?;
        let dir = parent.join(format!("ptlab-{}", std::process::id()));
        let _ = std::fs::remove_dir(&dir); // a leftover of a killed run
        std::fs::create_dir(&dir).map_err(|e| setup(&format!("creating {}", dir.display()), e))?;
        let cg = ReclaimCgroup { dir };
        let (trigger, value): (&str, &'static [u8]) = if v2 {
            // More than the workload can free: reclaim goes down to its
            // lowest priority (and answers EAGAIN, which the step expects).
            ("memory.reclaim", b"1G swappiness=0")
        } else {
            std::fs::write(cg.dir.join("memory.swappiness"), "0")
                .map_err(|e| setup("setting memory.swappiness", e))?;
            ("memory.force_empty", b"0")
        };
        let c = |name: &str| {
            CString::new(cg.dir.join(name).into_os_string().into_encoded_bytes())
                .map_err(|_| no_memcg())
        };
        let files = ReclaimFiles {
            procs: c("cgroup.procs")?,
            trigger: c(trigger)?,
            trigger_value: value,
        };
        Ok((cg, files))
    }
}

impl Drop for ReclaimCgroup {
    /// Removes the cgroup once its process is gone (the run waited for
    /// it); a few retries while the kernel lets go of the exited task.
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!(
            "warning: could not remove the memory cgroup {} (rmdir it by hand)",
            self.dir.display()
        );
    }
}

/// The directory of this process's memory cgroup and whether it is v2,
/// from /proc/self/cgroup's text.
fn memcg_dir(own: &str) -> Option<(PathBuf, bool)> {
    let root = Path::new("/sys/fs/cgroup");
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "memory") {
            let dir = root.join("memory").join(path);
            if dir.join("memory.force_empty").exists() {
                return Some((dir, false));
            }
        } else if id == "0" && controllers.is_empty() {
            let dir = root.join(path);
            let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                .is_ok_and(|s| s.split_whitespace().any(|c| c == "memory"));
            if enabled {
                return Some((dir, true));
            }
        }
    }
    None
}

/// How long a `khugepaged` step waits at most: three scan intervals and
/// ten seconds, at most a minute; `None` if khugepaged's counters cannot
/// be read (no THP support).
pub(crate) fn khugepaged_limit() -> Option<Duration> {
    read_full_scans()?;
    let sleep_ms: u64 = std::fs::read_to_string(format!("{KHUGEPAGED_DIR}/scan_sleep_millisecs"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(
        Duration::from_millis(sleep_ms.saturating_mul(3).saturating_add(10_000))
            .min(Duration::from_secs(60)),
    )
}

/// khugepaged's count of full scans (no allocation: the child calls it
/// while it runs the workload).
pub(crate) fn read_full_scans() -> Option<u64> {
    const PATH: &[u8] = b"/sys/kernel/mm/transparent_hugepage/khugepaged/full_scans\0";
    let mut buf = [0u8; 32];
    // SAFETY: PATH is NUL-terminated; the descriptor is closed below.
    let fd = unsafe { libc::open(PATH.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: buf is a valid buffer of its length; fd is open.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: fd is open and ours.
    unsafe { libc::close(fd) };
    if n <= 0 {
        return None;
    }
    let mut v: u64 = 0;
    let mut any = false;
    for &b in &buf[..n as usize] {
        if b.is_ascii_digit() {
            v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            any = true;
        } else {
            break;
        }
    }
    any.then_some(v)
}

/// Why a `khugepaged` step failed.
pub(crate) enum WaitError {
    /// The counter could not be read (errno).
    Read(i32),
    /// Two full scans did not end within the limit.
    TimedOut,
}

/// The child's `khugepaged` step: waits for two more full scans, at most
/// `limit` (past it the run fails rather than report counters khugepaged
/// had no chance to change).
pub(crate) fn wait_khugepaged(limit: Duration) -> Result<(), WaitError> {
    let start = Instant::now();
    let first = read_full_scans().ok_or(WaitError::Read(libc::EIO))?;
    loop {
        let now = read_full_scans().ok_or(WaitError::Read(libc::EIO))?;
        if now >= first + 2 {
            return Ok(());
        }
        if start.elapsed() >= limit {
            return Err(WaitError::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes `value` to the file at `path` (the child's cgroup moves and
/// reclaim requests; no allocation). `Err(errno)` on failure, except the
/// EAGAIN of a reclaim that freed less than asked, which is expected.
pub(crate) fn write_file(path: &CString, value: &[u8]) -> Result<(), i32> {
    // SAFETY: path is a NUL-terminated string; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: value is a valid buffer of its length; fd is open.
    let n = unsafe { libc::write(fd, value.as_ptr().cast(), value.len()) };
    let e = errno();
    // SAFETY: fd is open and ours.
    unsafe { libc::close(fd) };
    if n < 0 && e != libc::EAGAIN {
        return Err(e);
    }
    Ok(())
}

/// Reads every page of this process's own file mappings (its executable
/// and libraries) into memory while it is still in ptlab's cgroup: a page
/// the process would read in later would be charged to the run's cgroup,
/// and its reclaim would unmap it (RssFile would drop with the workload's
/// THPs split). Pages past a file's end are not touched.
pub(crate) fn prefault_own_files() {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [range, perms, offset, _, _, path] = f[..] else {
            continue;
        };
        if !perms.starts_with('r') || !path.starts_with('/') || path.starts_with("/dev/") {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end), Ok(offset)) = (
            u64::from_str_radix(start, 16),
            u64::from_str_radix(end, 16),
            u64::from_str_radix(offset, 16),
        ) else {
            continue;
        };
        let Ok(len) = std::fs::metadata(path).map(|m| m.len()) else {
            continue;
        };
        let mut a = start;
        while a < end && offset + (a - start) < len {
            // SAFETY: `a` lies in a readable file mapping of this process
            // and inside its file (checked above), so the read cannot fault
            // fatally; nothing else refers to it as Rust data.
            unsafe { std::ptr::read_volatile(a as *const u8) };
            a += 4096;
        }
    }
}

/// Writes this process's pid (as text, no allocation) to `procs`.
pub(crate) fn join(procs: &CString) -> Result<(), i32> {
    let mut buf = [0u8; 20];
    let mut pid = std::process::id();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    write_file(procs, &buf[i..])
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::memcg_dir;

    #[test]
    fn a_cgroup_without_memory_is_not_taken() {
        assert!(memcg_dir("1:cpu:/\n2:pids:/a\n").is_none());
    }
}
