//! Makes the forked child's own memory fault-free before the baseline.
//!
//! After `fork` the child would fault on its own memory for two reasons that
//! have nothing to do with the workload:
//!
//! - Linux does not copy the page-table entries of file mappings without
//!   anonymous pages (program text, read-only data, shared libraries, the
//!   vDSO) into the child; it refaults them on first use
//!   (// Linux: mm/memory.c, vma_needs_copy). Every code path the child runs
//!   for the first time after the baseline would count a minor fault.
//! - Private writable pages are shared copy-on-write with the parent; the
//!   child's first write to each (heap, stack, .data, TLS) is a fault.
//!
//! So, with every worker already spawned and parked:
//!
//! - read-only mappings are populated with MADV_POPULATE_READ;
//! - in private writable mappings every present page that is still shared
//!   (pagemap: not "exclusively mapped", or a page-cache page) is unshared
//!   with MADV_POPULATE_WRITE, which breaks copy-on-write in the kernel
//!   without writing a byte from user space (no data race with parked
//!   threads). Pages not present were never touched, and the child does not
//!   touch new pages of its own after the baseline.
//!
//! Both advices exist since Linux 5.14; on older kernels this does nothing
//! and the first marks may show a few faults of the child's own.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Larger mappings are left alone (populating them would cost more than it
/// could save; the child's own code and data are far smaller).
const MAX_POPULATE: u64 = 1 << 30;
const PAGEMAP_PRESENT: u64 = 1 << 63;
const PAGEMAP_FILE_OR_SHARED_ANON: u64 = 1 << 61;
const PAGEMAP_EXCLUSIVE: u64 = 1 << 56;
/// Pagemap entries read at once.
const CHUNK: usize = 4096;

/// Populates and unshares this process's existing mappings (see the module
/// documentation). Best effort: failures are ignored, the tests of the
/// backend check the outcome (an empty workload counts zero faults).
pub(crate) fn quiesce() {
    quiesce_except(&[], false);
}

/// As [`quiesce`], leaving alone every mapping that overlaps one of the
/// `skip` ranges (`(start, len)`: the workload's regions, in a fork's
/// child or its parent). With `all`, every present page of a private
/// writable mapping is written through MADV_POPULATE_WRITE, shared or not:
/// after a fork's child has exited, the parent's pages are its own again
/// but still write-protected, and the first write to each would fault.
pub(crate) fn quiesce_except(skip: &[(u64, u64)], all: bool) {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    let pagemap = File::open("/proc/self/pagemap").ok();
    let page = host::cpu::page_size().unwrap_or(4096);
    for line in maps.lines() {
        let Some(m) = Mapping::parse(line) else {
            continue;
        };
        if m.special || m.end - m.start > MAX_POPULATE {
            continue;
        }
        if skip
            .iter()
            .any(|&(s, len)| m.start < s.saturating_add(len) && s < m.end)
        {
            continue;
        }
        if m.read && !m.write {
            madvise(m.start, m.end - m.start, libc::MADV_POPULATE_READ);
        } else if m.write && !m.shared {
            if let Some(pm) = &pagemap {
                unshare_present(pm, &m, page, all);
            }
        }
    }
}

/// MADV_POPULATE_WRITE on every run of present pages that are still shared
/// (with `all`: every run of present pages).
fn unshare_present(pagemap: &File, m: &Mapping, page: u64, all: bool) {
    let first = m.start / page;
    let pages = (m.end - m.start) / page;
    let mut run_start: Option<u64> = None;
    let mut done = 0u64;
    let mut bytes = vec![0u8; CHUNK * 8];
    while done < pages {
        let n = (pages - done).min(CHUNK as u64) as usize;
        if pagemap
            .read_exact_at(&mut bytes[..n * 8], (first + done) * 8)
            .is_err()
        {
            return;
        }
        for (i, chunk) in bytes[..n * 8].chunks_exact(8).enumerate() {
            let e = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
            let shared = e & PAGEMAP_PRESENT != 0
                && (all || e & PAGEMAP_EXCLUSIVE == 0 || e & PAGEMAP_FILE_OR_SHARED_ANON != 0);
            let idx = done + i as u64;
            match (shared, run_start) {
                (true, None) => run_start = Some(idx),
                (false, Some(s)) => {
                    madvise(
                        m.start + s * page,
                        (idx - s) * page,
                        libc::MADV_POPULATE_WRITE,
                    );
                    run_start = None;
                }
                _ => {}
            }
        }
        done += n as u64;
    }
    if let Some(s) = run_start {
        madvise(
            m.start + s * page,
            (pages - s) * page,
            libc::MADV_POPULATE_WRITE,
        );
    }
}

fn madvise(addr: u64, len: u64, advice: libc::c_int) {
    // SAFETY: populate advices change no contents: they fault pages in as a
    // read or a write of the existing value would, on a range that is mapped
    // (taken from /proc/self/maps just before).
    unsafe { libc::madvise(addr as *mut libc::c_void, len as usize, advice) };
}

/// One line of /proc/self/maps.
struct Mapping {
    start: u64,
    end: u64,
    read: bool,
    write: bool,
    shared: bool,
    /// [vvar], [vsyscall] and the like: not populatable, or not ours.
    special: bool,
}

impl Mapping {
    fn parse(line: &str) -> Option<Mapping> {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let perms = fields.next()?.as_bytes();
        let path = fields.nth(3).unwrap_or("");
        Some(Mapping {
            start: u64::from_str_radix(start, 16).ok()?,
            end: u64::from_str_radix(end, 16).ok()?,
            read: perms.first() == Some(&b'r'),
            write: perms.get(1) == Some(&b'w'),
            shared: perms.get(3) == Some(&b's'),
            special: path.starts_with("[v") && path != "[vdso]",
        })
    }
}
