//! A live process's page state, for `ptlab inspect`: its VMAs (maps, and
//! smaps' huge-page sizes), the runs of present or swapped pages with what
//! each is (file, zero page, PMD-mapped huge page), and the kernel's VmPTE.
//!
//! - [`maps`]: the maps and smaps parsers.
//! - [`scan`]: the PAGEMAP_SCAN ioctl (Linux 6.7+), the preferred source:
//!   it reports huge and zero-page mappings, with or without privilege.
//! - [`folios`]: the folios mapping each VMA (their sizes, PMD- or
//!   PTE-mapped) and the runs contpte or Svnapot would fold; needs root.
//! - [`entries`]: the fallback, 8-byte pagemap entries, where the ioctl is
//!   missing or refused (no huge or zero-page flags; smaps fills in how many
//!   huge pages each VMA has).
//!
//! Invariants: [`read`] works on any process the caller may read and needs
//! no root (PFNs are never used); it reads in bounded chunks and honours
//! [`ReadOptions::time_limit`], saying so in [`Snapshot::complete`]; it writes
//! nothing anywhere. Runs are in address order, do not overlap, and hold
//! only present or swapped pages.

pub mod entries;
pub mod folios;
pub mod maps;
pub mod scan;

pub use maps::Vma;

use serde::Serialize;
use std::fmt;
use std::fs::File;
use std::io;
use std::time::{Duration, Instant};

/// What a run of pages is. A small bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PageFlags(u8);

impl PageFlags {
    pub const NONE: PageFlags = PageFlags(0);
    /// Mapped by a present entry.
    pub const PRESENT: PageFlags = PageFlags(1);
    /// A swap (or migration) entry: not present, but the entry keeps its table.
    pub const SWAPPED: PageFlags = PageFlags(2);
    /// A file page, or shared anonymous memory (shmem).
    pub const FILE: PageFlags = PageFlags(4);
    /// The shared zero page (or the huge zero page with [`Self::HUGE`]).
    pub const ZERO: PageFlags = PageFlags(8);
    /// Mapped by a PMD leaf (transparent huge page or hugetlb).
    pub const HUGE: PageFlags = PageFlags(16);

    pub fn with(self, other: PageFlags) -> PageFlags {
        PageFlags(self.0 | other.0)
    }
    pub fn has(self, other: PageFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl Serialize for PageFlags {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let names: Vec<&str> = [
            (Self::PRESENT, "present"),
            (Self::SWAPPED, "swapped"),
            (Self::FILE, "file"),
            (Self::ZERO, "zero"),
            (Self::HUGE, "huge"),
        ]
        .iter()
        .filter(|(f, _)| self.has(*f))
        .map(|(_, n)| *n)
        .collect();
        names.serialize(s)
    }
}

/// Pages `[start, end)` sharing their flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PageRun {
    pub start: u64,
    pub end: u64,
    pub flags: PageFlags,
}

/// Where the page states came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The PAGEMAP_SCAN ioctl: huge and zero-page flags exact.
    PagemapScan,
    /// 8-byte pagemap entries: no zero-page flag, huge pages placed from smaps.
    Pagemap,
}

/// How to read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Stop reading page states after this long (the snapshot is then partial).
    pub time_limit: Duration,
    /// Read pagemap entries even where PAGEMAP_SCAN works (to test the fallback).
    pub force_entries: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            time_limit: Duration::from_secs(20),
            force_entries: false,
        }
    }
}

/// One process's page state at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    pub pid: u32,
    /// The host's base page.
    pub page_size: u64,
    pub vmas: Vec<Vma>,
    /// maps lines that could not be parsed.
    pub unparsed_lines: usize,
    pub runs: Vec<PageRun>,
    pub source: Source,
    /// Why the fallback was used, when it was.
    pub fallback_reason: Option<String>,
    /// Whether zero-page mappings are known (PAGEMAP_SCAN's PAGE_IS_PFNZERO).
    pub zero_known: bool,
    /// Whether huge mappings are located exactly (PAGEMAP_SCAN's PAGE_IS_HUGE)
    /// or placed from smaps' counts.
    pub huge_exact: bool,
    /// False when the time limit stopped the read; pages from
    /// `stopped_at` on were not read.
    pub complete: bool,
    pub stopped_at: Option<u64>,
    /// VmPTE of /proc/PID/status read before the page states, kB.
    pub vm_pte_kb: Option<u64>,
    /// VmPTE read after them: a difference means the process changed its
    /// tables while being read.
    pub vm_pte_kb_after: Option<u64>,
    /// Wall time of the read, milliseconds.
    pub read_ms: f64,
}

impl Snapshot {
    /// Whether the page at `va` is mapped by a PMD leaf, as read.
    pub fn pmd_mapped(&self, va: u64) -> bool {
        let i = self.runs.partition_point(|r| r.end <= va);
        self.runs
            .get(i)
            .is_some_and(|r| r.start <= va && r.flags.has(PageFlags::HUGE))
    }
}

/// Why a process could not be read. Each names the PID and the file.
#[derive(Debug)]
pub enum ReadError {
    /// No such process (never existed, or exited).
    NoProcess { pid: u32 },
    /// The caller may not read this process's memory map.
    NotPermitted { pid: u32, path: String },
    /// Any other failure reading a file.
    Io {
        pid: u32,
        path: String,
        error: io::Error,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NoProcess { pid } => {
                write!(f, "process {pid}: no such process (/proc/{pid} does not exist)")
            }
            ReadError::NotPermitted { pid, path } => write!(
                f,
                "process {pid}: permission denied reading {path} (another user's process needs root or CAP_SYS_PTRACE)"
            ),
            ReadError::Io { pid, path, error } => {
                write!(f, "process {pid}: cannot read {path}: {error}")
            }
        }
    }
}

impl std::error::Error for ReadError {}

fn classify(pid: u32, path: &str, e: io::Error) -> ReadError {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ESRCH) => ReadError::NoProcess { pid },
        Some(libc::EACCES) | Some(libc::EPERM) => ReadError::NotPermitted {
            pid,
            path: path.to_string(),
        },
        _ => ReadError::Io {
            pid,
            path: path.to_string(),
            error: e,
        },
    }
}

fn read_text(pid: u32, name: &str) -> Result<String, ReadError> {
    let path = format!("/proc/{pid}/{name}");
    std::fs::read_to_string(&path).map_err(|e| classify(pid, &path, e))
}

fn read_vm_pte(pid: u32) -> Result<Option<u64>, ReadError> {
    let status = read_text(pid, "status")?;
    Ok(crate::procfs::field_kb(status.as_bytes(), b"VmPTE"))
}

/// The host's base page size.
pub fn host_page_size() -> u64 {
    // SAFETY: sysconf has no preconditions; it only reads a constant.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u64
    } else {
        4096
    }
}

/// Addresses at or above this are not user memory (`[vsyscall]`).
const USER_TOP: u64 = 1 << 63;

/// Reads process `pid`.
///
/// # Errors
/// [`ReadError::NoProcess`] if it does not exist (or exits while read),
/// [`ReadError::NotPermitted`] if the caller may not read its maps or
/// pagemap, [`ReadError::Io`] otherwise.
pub fn read(pid: u32, opts: &ReadOptions) -> Result<Snapshot, ReadError> {
    let t0 = Instant::now();
    let deadline = t0 + opts.time_limit;
    let page_size = host_page_size();
    let (mut vmas, unparsed_lines) = maps::parse_maps(&read_text(pid, "maps")?);
    vmas.retain(|v| v.end <= USER_TOP && !v.is_empty());
    let vm_pte_kb = read_vm_pte(pid)?;
    let pagemap_path = format!("/proc/{pid}/pagemap");
    let pagemap = File::open(&pagemap_path).map_err(|e| classify(pid, &pagemap_path, e))?;

    let mut runs = Vec::new();
    let mut stopped_at = None;
    let mut fallback_reason = None;
    let mut source = Source::PagemapScan;
    if opts.force_entries {
        fallback_reason = Some("asked for (--pagemap-entries)".to_string());
    } else if let (Some(first), Some(last)) = (vmas.first(), vmas.last()) {
        match scan::scan(&pagemap, first.start, last.end, deadline, &mut runs) {
            Ok(scan::ScanEnd::Complete) => {}
            Ok(scan::ScanEnd::Stopped(at)) => stopped_at = Some(at),
            Err(e) => {
                runs.clear();
                fallback_reason = Some(match e.raw_os_error() {
                    Some(libc::ENOTTY) | Some(libc::EINVAL) => {
                        format!("PAGEMAP_SCAN not supported by this kernel ({e})")
                    }
                    Some(libc::ESRCH) => return Err(ReadError::NoProcess { pid }),
                    _ => format!("PAGEMAP_SCAN refused ({e})"),
                });
            }
        }
    }
    if fallback_reason.is_some() {
        source = Source::Pagemap;
        // smaps tells how many PMD-mapped pages each VMA has.
        if let Ok(smaps) = read_text(pid, "smaps") {
            maps::apply_smaps(&mut vmas, &smaps);
        }
        for v in &vmas {
            match entries::read_range(&pagemap, page_size, v.start, v.end, deadline, &mut runs) {
                Ok(None) => {}
                Ok(Some(at)) => {
                    stopped_at = Some(at);
                    break;
                }
                Err(e) => return Err(classify(pid, &pagemap_path, e)),
            }
        }
        entries::mark_pmd_blocks(&vmas, &mut runs, page_size << (page_size.ilog2() - 3));
    }
    let vm_pte_kb_after = read_vm_pte(pid)?;
    Ok(Snapshot {
        pid,
        page_size,
        vmas,
        unparsed_lines,
        runs,
        source,
        zero_known: source == Source::PagemapScan,
        huge_exact: source == Source::PagemapScan,
        complete: stopped_at.is_none(),
        fallback_reason,
        stopped_at,
        vm_pte_kb,
        vm_pte_kb_after,
        read_ms: t0.elapsed().as_secs_f64() * 1e3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Maps `len` bytes of private anonymous memory in this process.
    fn anon(len: usize) -> *mut u8 {
        // SAFETY: a fresh anonymous private mapping; no existing memory is
        // touched, and the result is checked before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        p.cast()
    }

    fn present_in(s: &Snapshot, start: u64, end: u64) -> u64 {
        s.runs
            .iter()
            .filter(|r| r.flags.has(PageFlags::PRESENT))
            .map(|r| r.end.min(end).saturating_sub(r.start.max(start)))
            .sum::<u64>()
            / s.page_size
    }

    #[test]
    fn both_readers_see_the_pages_this_process_touched() {
        let ps = host_page_size() as usize;
        let len = 64 * ps;
        let p = anon(len);
        for i in (0..64).step_by(3) {
            // SAFETY: inside the mapping made above, which is writable.
            unsafe { p.add(i * ps).write_volatile(1) };
        }
        // One page only read: the zero page.
        // SAFETY: inside the mapping; a read of an untouched page.
        let _ = unsafe { p.add(ps).read_volatile() };
        let start = p as u64;
        let me = std::process::id();
        let fast = read(me, &ReadOptions::default()).unwrap();
        let slow = read(
            me,
            &ReadOptions {
                force_entries: true,
                ..ReadOptions::default()
            },
        )
        .unwrap();
        // 22 written pages plus the zero page read.
        assert_eq!(present_in(&slow, start, start + len as u64), 23);
        assert_eq!(slow.source, Source::Pagemap);
        if fast.source == Source::PagemapScan {
            assert_eq!(present_in(&fast, start, start + len as u64), 23);
            let zero: Vec<_> = fast
                .runs
                .iter()
                .filter(|r| {
                    r.flags.has(PageFlags::ZERO) && r.start >= start && r.end <= start + len as u64
                })
                .collect();
            assert_eq!(zero.len(), 1, "the one page only read is the zero page");
            assert_eq!(zero[0].start, start + ps as u64);
        } else {
            eprintln!("PAGEMAP_SCAN unavailable: {:?}", fast.fallback_reason);
        }
        // SAFETY: unmaps exactly the mapping made above, no longer used.
        unsafe { libc::munmap(p.cast(), len) };
    }

    #[test]
    fn a_missing_process_is_named() {
        // PID numbers stop well below this (pid_max is at most 2^22).
        let e = read(1 << 30, &ReadOptions::default()).unwrap_err();
        assert!(matches!(e, ReadError::NoProcess { pid } if pid == 1 << 30));
        assert!(e.to_string().contains("1073741824"));
    }
}
