//! This process's memory counters, read without disturbing them.
//!
//! A measurement reads counters between the operations it measures, so the
//! reading itself must not add page faults, page-table pages or resident
//! memory. [`CounterReader`] keeps that promise by construction:
//!
//! - every file is opened once, in [`CounterReader::open`], and read later
//!   with `pread(2)` on the already-open descriptor (no path lookup, no
//!   allocation, safe to call from several threads in turn);
//! - every buffer is allocated in `open` and written once there
//!   ([`CounterReader::prefault`]), so the kernel's copy into it never faults;
//! - parsing works on byte slices ([`crate::procfs::field_kb`]) and allocates
//!   nothing; faults come from `getrusage(2)` into a stack value.
//!
//! Invariant: after `open` (and, in a forked child, after `prefault` again in
//! the child), [`CounterReader::read`] causes no page fault of its own. The
//! code pages it runs must be mapped too: call `read` once before the first
//! measured mark (the kernel backend warms every code page anyway).
//!
//! `/proc/self` is resolved when `open` runs: open the reader in the process
//! you measure, after `fork`.

use std::fs::File;
use std::os::fd::AsRawFd;

use serde::Serialize;

use crate::procfs::{field_kb, tlb_total, vmstat_value};

const STATUS_BUF: usize = 16 * 1024;
const SMAPS_BUF: usize = 16 * 1024;
const MIN_INTERRUPTS_BUF: usize = 64 * 1024;
const MIN_VMSTAT_BUF: usize = 16 * 1024;

/// The counters of one moment. Faults always come from getrusage; the others
/// are `None` when their file is unreadable or lacks the line (e.g. no `TLB:`
/// line off x86).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Sample {
    pub minor_faults: u64,
    pub major_faults: u64,
    /// VmPTE of /proc/self/status: PTE, PMD and PUD table pages of this mm.
    pub vmpte_kb: Option<u64>,
    pub rss_anon_kb: Option<u64>,
    pub rss_file_kb: Option<u64>,
    pub rss_shmem_kb: Option<u64>,
    /// AnonHugePages of /proc/self/smaps_rollup.
    pub anon_huge_kb: Option<u64>,
    /// ShmemPmdMapped of /proc/self/smaps_rollup.
    pub shmem_pmd_kb: Option<u64>,
    /// FilePmdMapped of /proc/self/smaps_rollup.
    pub file_pmd_kb: Option<u64>,
    /// VmSwap of /proc/self/status: swap entries in this mm's tables.
    pub vmswap_kb: Option<u64>,
    /// The TLB line of /proc/interrupts summed over CPUs (system-wide).
    pub tlb_shootdowns: Option<u64>,
    /// `thp_collapse_alloc` of /proc/vmstat (system-wide).
    pub thp_collapse_alloc: Option<u64>,
}

/// Open descriptors and pre-faulted buffers for [`Sample`]s of this process.
#[derive(Debug)]
pub struct CounterReader {
    status: Option<File>,
    smaps_rollup: Option<File>,
    interrupts: Option<File>,
    vmstat: Option<File>,
    status_buf: Box<[u8]>,
    smaps_buf: Box<[u8]>,
    interrupts_buf: Box<[u8]>,
    vmstat_buf: Box<[u8]>,
}

impl CounterReader {
    /// Opens /proc/self/status, /proc/self/smaps_rollup, /proc/interrupts
    /// and /proc/vmstat and prepares the buffers. Unreadable files give `None` counters later;
    /// this never fails.
    pub fn open() -> CounterReader {
        let interrupts = File::open("/proc/interrupts").ok();
        // /proc/interrupts grows with the CPU count; size its buffer from one
        // read now, with room for counters that gain digits.
        let interrupts_len = std::fs::read("/proc/interrupts").map_or(0, |v| v.len());
        let vmstat_len = std::fs::read("/proc/vmstat").map_or(0, |v| v.len());
        let mut reader = CounterReader {
            status: File::open("/proc/self/status").ok(),
            smaps_rollup: File::open("/proc/self/smaps_rollup").ok(),
            interrupts,
            vmstat: File::open("/proc/vmstat").ok(),
            status_buf: vec![0u8; STATUS_BUF].into_boxed_slice(),
            smaps_buf: vec![0u8; SMAPS_BUF].into_boxed_slice(),
            interrupts_buf: vec![0u8; (interrupts_len * 2).max(MIN_INTERRUPTS_BUF)]
                .into_boxed_slice(),
            vmstat_buf: vec![0u8; (vmstat_len * 2).max(MIN_VMSTAT_BUF)].into_boxed_slice(),
        };
        reader.prefault();
        reader
    }

    /// Writes every page of the buffers so that they are present and private
    /// to this process. `open` does it; a process that forked after `open`
    /// must do it again in the child (fork shares the pages copy-on-write).
    pub fn prefault(&mut self) {
        for buf in [
            &mut self.status_buf,
            &mut self.smaps_buf,
            &mut self.interrupts_buf,
            &mut self.vmstat_buf,
        ] {
            prefault_write(buf);
        }
    }

    /// Reads every counter. Allocation-free and fault-free (see the module
    /// documentation).
    pub fn read(&mut self) -> Sample {
        let (minor_faults, major_faults) = rusage_faults();
        let status = self
            .status
            .as_ref()
            .and_then(|f| pread_full(f, &mut self.status_buf));
        let smaps = self
            .smaps_rollup
            .as_ref()
            .and_then(|f| pread_full(f, &mut self.smaps_buf));
        let interrupts = self
            .interrupts
            .as_ref()
            .and_then(|f| pread_full(f, &mut self.interrupts_buf));
        let vmstat = self
            .vmstat
            .as_ref()
            .and_then(|f| pread_full(f, &mut self.vmstat_buf));
        Sample {
            minor_faults,
            major_faults,
            vmpte_kb: status.and_then(|s| field_kb(s, b"VmPTE")),
            rss_anon_kb: status.and_then(|s| field_kb(s, b"RssAnon")),
            rss_file_kb: status.and_then(|s| field_kb(s, b"RssFile")),
            rss_shmem_kb: status.and_then(|s| field_kb(s, b"RssShmem")),
            anon_huge_kb: smaps.and_then(|s| field_kb(s, b"AnonHugePages")),
            shmem_pmd_kb: smaps.and_then(|s| field_kb(s, b"ShmemPmdMapped")),
            file_pmd_kb: smaps.and_then(|s| field_kb(s, b"FilePmdMapped")),
            vmswap_kb: status.and_then(|s| field_kb(s, b"VmSwap")),
            tlb_shootdowns: interrupts.and_then(tlb_total),
            thp_collapse_alloc: vmstat.and_then(|s| vmstat_value(s, b"thp_collapse_alloc")),
        }
    }
}

/// Minor and major faults of the whole process (all threads, live and
/// exited), from `getrusage(RUSAGE_SELF)`.
pub fn rusage_faults() -> (u64, u64) {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_SELF is always valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (0, 0);
    }
    (ru.ru_minflt as u64, ru.ru_majflt as u64)
}

/// Writes each page of `buf` with the value it holds (a volatile read and
/// write, so the compiler keeps both), making every page present and private.
pub fn prefault_write(buf: &mut [u8]) {
    let page = crate::cpu::page_size().unwrap_or(4096) as usize;
    let base = buf.as_mut_ptr();
    for i in (0..buf.len()).step_by(page) {
        // SAFETY: `i < buf.len()`, so the pointer is inside `buf`, which we
        // borrow mutably.
        unsafe {
            let p = base.add(i);
            p.write_volatile(p.read_volatile());
        }
    }
}

/// Reads the whole file from offset 0 into `buf` with pread(2). `None` on an
/// error, or if the file does not fit (a truncated read would give wrong
/// counters, so it gives none).
fn pread_full<'a>(file: &File, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    let fd = file.as_raw_fd();
    let mut filled = 0usize;
    while filled < buf.len() {
        // SAFETY: the destination is the unfilled tail of `buf`, of exactly
        // the length passed; `fd` stays open while `file` is borrowed.
        let n = unsafe {
            libc::pread(
                fd,
                buf[filled..].as_mut_ptr().cast(),
                buf.len() - filled,
                filled as libc::off_t,
            )
        };
        match n {
            0 => return Some(&buf[..filled]),
            n if n > 0 => filled += n as usize,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return None,
        }
    }
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let mut r = CounterReader::open();
        let s = r.read();
        assert!(s.minor_faults > 0, "a running process has faulted");
        assert!(s.vmpte_kb.unwrap() > 0);
        assert!(s.rss_anon_kb.unwrap() > 0);
        assert!(s.anon_huge_kb.is_some());
    }
}
