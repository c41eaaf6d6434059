//! The PAGEMAP_SCAN ioctl (Linux 6.7+): page states of a whole address
//! range as runs of pages with equal categories, in one walk of the page
//! tables per call.
//!
//! The ABI structures are declared here from the kernel's uapi
//! `include/uapi/linux/fs.h` (`struct pm_scan_arg`, `struct page_region`).
//!
//! Invariants: a call asks for at most [`REGIONS_PER_CALL`] regions into a
//! buffer of exactly that length (the kernel writes no further); the scan
//! resumes at the kernel's `walk_end` and stops when it reaches `end`, when
//! the kernel makes no progress, or at the deadline.

use super::{PageFlags, PageRun};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;

// Categories of uapi fs.h (`PAGE_IS_*`).
const PAGE_IS_FILE: u64 = 1 << 2;
const PAGE_IS_PRESENT: u64 = 1 << 3;
const PAGE_IS_SWAPPED: u64 = 1 << 4;
const PAGE_IS_PFNZERO: u64 = 1 << 5;
const PAGE_IS_HUGE: u64 = 1 << 6;

/// `struct pm_scan_arg` of uapi fs.h: twelve u64 fields, 96 bytes.
#[repr(C)]
#[derive(Debug, Default)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

/// `struct page_region` of uapi fs.h.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct PageRegion {
    start: u64,
    end: u64,
    categories: u64,
}

/// `_IOWR('f', 16, struct pm_scan_arg)`: direction read|write (3) in bits
/// 30-31, the argument's size in bits 16-29, the type in 8-15, the number
/// in 0-7.
const PAGEMAP_SCAN: u64 =
    (3 << 30) | ((std::mem::size_of::<PmScanArg>() as u64) << 16) | ((b'f' as u64) << 8) | 16;

/// Regions asked for per call: 96 KiB of buffer.
pub const REGIONS_PER_CALL: usize = 4096;

/// How a scan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanEnd {
    /// Every page of the range was visited.
    Complete,
    /// The deadline passed; pages from this address on were not visited.
    Stopped(u64),
}

fn flags_of(categories: u64) -> PageFlags {
    let mut f = PageFlags::NONE;
    for (bit, flag) in [
        (PAGE_IS_PRESENT, PageFlags::PRESENT),
        (PAGE_IS_SWAPPED, PageFlags::SWAPPED),
        (PAGE_IS_FILE, PageFlags::FILE),
        (PAGE_IS_PFNZERO, PageFlags::ZERO),
        (PAGE_IS_HUGE, PageFlags::HUGE),
    ] {
        if categories & bit != 0 {
            f = f.with(flag);
        }
    }
    f
}

/// Appends to `runs` every present or swapped page of `[start, end)` of the
/// process whose `/proc/PID/pagemap` is `pagemap`, in address order.
///
/// # Errors
/// The ioctl's error: `ENOTTY` or `EINVAL` where the kernel has no
/// PAGEMAP_SCAN, `EPERM`/`EACCES` where it is refused.
pub fn scan(
    pagemap: &File,
    start: u64,
    end: u64,
    deadline: Instant,
    runs: &mut Vec<PageRun>,
) -> io::Result<ScanEnd> {
    let mut buf = vec![PageRegion::default(); REGIONS_PER_CALL];
    let mut at = start;
    while at < end {
        if Instant::now() > deadline {
            return Ok(ScanEnd::Stopped(at));
        }
        let mut arg = PmScanArg {
            size: std::mem::size_of::<PmScanArg>() as u64,
            start: at,
            end,
            vec: buf.as_mut_ptr() as u64,
            vec_len: buf.len() as u64,
            category_anyof_mask: PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
            return_mask: PAGE_IS_PRESENT
                | PAGE_IS_SWAPPED
                | PAGE_IS_FILE
                | PAGE_IS_PFNZERO
                | PAGE_IS_HUGE,
            ..PmScanArg::default()
        };
        // SAFETY: `arg` is a live, initialized `pm_scan_arg` whose `size`
        // field gives its true size; `vec`/`vec_len` describe `buf`, which
        // outlives the call and holds `vec_len` writable `page_region`s,
        // the most the kernel writes. The fd is open for the call's duration.
        let n = unsafe {
            libc::ioctl(
                pagemap.as_raw_fd(),
                PAGEMAP_SCAN as _,
                &mut arg as *mut PmScanArg,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        for r in &buf[..(n as usize).min(buf.len())] {
            push_run(runs, r.start, r.end, flags_of(r.categories));
        }
        if arg.walk_end <= at {
            // No progress: stop rather than loop (never seen; defensive).
            return Ok(ScanEnd::Stopped(at));
        }
        at = arg.walk_end;
    }
    Ok(ScanEnd::Complete)
}

/// Appends a run, merging it into the last one when they touch with equal
/// flags (a region cut by the buffer's end continues in the next call).
pub(crate) fn push_run(runs: &mut Vec<PageRun>, start: u64, end: u64, flags: PageFlags) {
    if end <= start {
        return;
    }
    if let Some(last) = runs.last_mut() {
        if last.end == start && last.flags == flags {
            last.end = end;
            return;
        }
    }
    runs.push(PageRun { start, end, flags });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_sizes_and_request_number_match_uapi() {
        assert_eq!(std::mem::size_of::<PmScanArg>(), 96);
        assert_eq!(std::mem::size_of::<PageRegion>(), 24);
        // _IOWR('f', 16, 96 bytes) as the kernel's headers expand it.
        assert_eq!(PAGEMAP_SCAN, 0xC060_6610);
    }

    #[test]
    fn adjacent_equal_runs_merge_and_different_ones_do_not() {
        let mut runs = Vec::new();
        push_run(&mut runs, 0x1000, 0x3000, PageFlags::PRESENT);
        push_run(&mut runs, 0x3000, 0x4000, PageFlags::PRESENT);
        push_run(&mut runs, 0x4000, 0x5000, PageFlags::SWAPPED);
        push_run(&mut runs, 0x6000, 0x7000, PageFlags::SWAPPED);
        push_run(&mut runs, 0x7000, 0x7000, PageFlags::SWAPPED);
        assert_eq!(runs.len(), 3);
        assert_eq!((runs[0].start, runs[0].end), (0x1000, 0x4000));
    }

    #[test]
    fn categories_translate_bit_for_bit() {
        let f = flags_of(PAGE_IS_PRESENT | PAGE_IS_HUGE | PAGE_IS_PFNZERO);
        assert!(f.has(PageFlags::PRESENT) && f.has(PageFlags::HUGE) && f.has(PageFlags::ZERO));
        assert!(!f.has(PageFlags::FILE) && !f.has(PageFlags::SWAPPED));
        assert_eq!(flags_of(PAGE_IS_FILE), PageFlags::FILE);
    }
}
