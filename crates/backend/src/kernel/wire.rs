//! The child's report to the parent: native-endian `u64` words over a pipe
//! (parent and child are the same binary, so no portable encoding is needed).
//!
//! ```text
//! header   MAGIC status a b c d                      (HEADER_WORDS)
//! status OK:        a = records, b = histograms, then
//!   baseline        SAMPLE_WORDS
//!   records         records x RECORD_WORDS   (name, hist, elapsed_ns, tid, mark_read_ns, cpu_ns, sample)
//!   histograms      histograms x HIST_WORDS
//! status OP_ERROR:  a = op id, b = call, c = errno
//! status FAULT:     a = signal number, b = address
//! status SETUP:     a = setup step, b = errno
//! status COLLISION: a = region id, b..c = the child's mapping in its way
//! ```
//!
//! A counter the child could not read is [`NONE`].

use host::Sample;
use workload::result::{Counters, Mark, Run};

use super::program::Program;
use super::KernelError;
use crate::latency::{FineHist, HIST_WORDS};

pub(crate) const MAGIC: u64 = u64::from_be_bytes(*b"ptlab_k1");
pub(crate) const HEADER_WORDS: usize = 6;
pub(crate) const SAMPLE_WORDS: usize = counters::KERNEL_SAMPLED.len();
pub(crate) const RECORD_WORDS: usize = 6 + SAMPLE_WORDS;
pub(crate) const NONE: u64 = u64::MAX;

pub(crate) const STATUS_OK: u64 = 0;
pub(crate) const STATUS_OP_ERROR: u64 = 1;
pub(crate) const STATUS_FAULT: u64 = 2;
pub(crate) const STATUS_SETUP: u64 = 3;
pub(crate) const STATUS_COLLISION: u64 = 4;

/// The system calls an op may fail in, by wire code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Call {
    Mmap,
    Munmap,
    Mprotect,
    Madvise,
    Mlock,
    Munlock,
    Msync,
    MemfdCreate,
    Ftruncate,
    Fdatasync,
    PosixFadvise,
    Pread,
    Fork,
    Mremap,
    /// mremap succeeded at another address than the plan's (errno EADDRINUSE).
    MremapMoved,
    GetMempolicy,
    /// The write that asks the run's memory cgroup to reclaim.
    CgroupReclaim,
    /// Reading khugepaged's `full_scans`.
    KhugepagedScans,
    /// Waiting for khugepaged's two full scans past the limit.
    KhugepagedWait,
    /// Making a `shmem_huge` region's file on its tmpfs.
    TmpfsFile,
}

const CALL_NAMES: &[&str] = &[
    "mmap",
    "munmap",
    "mprotect",
    "madvise",
    "mlock",
    "munlock",
    "msync",
    "memfd_create",
    "ftruncate",
    "fdatasync",
    "posix_fadvise",
    "pread",
    "fork",
    "mremap",
    "mremap (the kernel moved the mapping away from its region's address: the room after it is in use)",
    "get_mempolicy",
    "memory cgroup reclaim (deferred_split)",
    "reading /sys/kernel/mm/transparent_hugepage/khugepaged/full_scans",
    "waiting for two full scans of khugepaged (it runs at nice 19, so a busy host can starve it; the wait is limited to three scan_sleep_millisecs and 10 s)",
    "open (O_TMPFILE: a file on the region's tmpfs)",
];

/// Steps of the child's set-up that can fail, by wire code.
pub(crate) const SETUP_SPAWN: u64 = 0;
pub(crate) const SETUP_PANIC: u64 = 1;
pub(crate) const SETUP_FORK: u64 = 2;
pub(crate) const SETUP_CGROUP: u64 = 3;
pub(crate) const SETUP_TMPFS: u64 = 4;
const SETUP_NAMES: &[&str] = &[
    "spawning the workload's threads",
    "running the workload (a panic in the child; see its message above)",
    "running a fork's child (it was killed, died of a signal or passed the time limit)",
    "moving the workload process into its memory cgroup (for deferred_split)",
    "mounting the tmpfs of a shmem_huge region (in a mount namespace of the workload process's own)",
];

/// Counter names in sample-word order: the registry's kernel-sampled
/// counters, in registry order ([`sample_words`] writes them in that order).
pub(crate) const COUNTER_NAMES: &[&str] = counters::KERNEL_SAMPLED;

/// A sample's words, in [`COUNTER_NAMES`] order.
pub(crate) fn sample_words(s: &Sample) -> [u64; SAMPLE_WORDS] {
    let o = |v: Option<u64>| v.unwrap_or(NONE);
    [
        s.minor_faults,
        s.major_faults,
        o(s.vmpte_kb),
        o(s.rss_anon_kb),
        o(s.rss_file_kb),
        o(s.rss_shmem_kb),
        o(s.anon_huge_kb),
        o(s.shmem_pmd_kb),
        o(s.file_pmd_kb),
        o(s.vmswap_kb),
        o(s.tlb_shootdowns),
        o(s.thp_collapse_alloc),
    ]
}

/// Turns the report's words into a run, or into the error the child reported.
pub(crate) fn decode(words: &[u64], prog: &Program) -> Result<Run, KernelError> {
    let bad = |why: &str| KernelError::ChildFailed {
        status: format!("malformed report ({why})"),
    };
    if words.len() < HEADER_WORDS || words[0] != MAGIC {
        return Err(bad("no header"));
    }
    let (status, a, b, c) = (words[1], words[2], words[3], words[4]);
    match status {
        STATUS_OK => {}
        STATUS_OP_ERROR => return Err(op_error(prog, a, b, c)),
        STATUS_FAULT => return Err(fault(prog, a, b)),
        STATUS_SETUP => {
            return Err(KernelError::Setup {
                what: SETUP_NAMES.get(a as usize).unwrap_or(&"?").to_string(),
                source: std::io::Error::from_raw_os_error(b as i32),
            })
        }
        STATUS_COLLISION => return Err(collision(prog, a, b, c)),
        _ => return Err(bad("unknown status")),
    }
    let (n_records, n_hists) = (a as usize, b as usize);
    let body = &words[HEADER_WORDS..];
    let need = SAMPLE_WORDS + n_records * RECORD_WORDS + n_hists * HIST_WORDS;
    if body.len() != need || n_records == 0 {
        return Err(bad("wrong length"));
    }
    let (base, rest) = body.split_at(SAMPLE_WORDS);
    let (records, hists) = rest.split_at(n_records * RECORD_WORDS);
    let hists: Vec<Box<FineHist>> = hists
        .chunks_exact(HIST_WORDS)
        .map(FineHist::from_words)
        .collect();
    let mut marks = Vec::with_capacity(n_records);
    for r in records.chunks_exact(RECORD_WORDS) {
        let name = prog
            .mark_names
            .get(r[0] as usize)
            .ok_or_else(|| bad("mark name"))?
            .clone();
        let latency = match r[1] {
            NONE => None,
            i => Some(
                hists
                    .get(i as usize)
                    .ok_or_else(|| bad("histogram"))?
                    .to_result(),
            ),
        };
        let mut counters = Counters::default();
        for (k, name) in COUNTER_NAMES.iter().enumerate() {
            let (now, then) = (r[6 + k], base[k]);
            if now != NONE && then != NONE {
                counters.set(name, now as i64 - then as i64);
            }
        }
        counters.set(counters::ELAPSED_NS.name, r[2] as i64);
        counters.set(counters::MARK_READ_NS.name, r[4] as i64);
        if r[5] != NONE {
            counters.set(counters::CPU_NS.name, r[5] as i64);
        }
        marks.push(Mark {
            name,
            counters,
            latency,
        });
    }
    Ok(Run { marks })
}

fn op_error(prog: &Program, op: u64, call: u64, errno: u64) -> KernelError {
    let call_name = CALL_NAMES
        .get(call as usize)
        .copied()
        .unwrap_or("a system call");
    let desc = prog
        .op_desc
        .get(op as usize)
        .cloned()
        .unwrap_or_else(|| format!("op #{op}"));
    let errno = errno as i32;
    if call == Call::Mmap as u64 {
        if let Some((region, addr, len)) = prog.mmap_target(op as u32) {
            if errno == libc::EEXIST || errno == libc::ENOTSUP {
                return KernelError::AddressTaken {
                    region,
                    addr,
                    len,
                    by: "another mapping (MAP_FIXED_NOREPLACE refused it)".into(),
                };
            }
            return KernelError::MapFailed {
                region,
                addr,
                len,
                source: std::io::Error::from_raw_os_error(errno),
            };
        }
    }
    KernelError::Op {
        op: desc,
        call: call_name,
        source: std::io::Error::from_raw_os_error(errno),
    }
}

/// A region that overlaps the child's own mapping `[start, end)`, named
/// from this (the parent's) maps, which the child inherited.
fn collision(prog: &Program, region: u64, start: u64, end: u64) -> KernelError {
    let Some(r) = prog.regions.get(region as usize) else {
        return KernelError::ChildFailed {
            status: "malformed report (region)".into(),
        };
    };
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    KernelError::AddressTaken {
        region: r.name.clone(),
        addr: r.addr,
        len: r.size,
        by: super::room::describe(&maps, start, end),
    }
}

fn fault(prog: &Program, signo: u64, addr: u64) -> KernelError {
    let signal = match signo as i32 {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        _ => "a signal",
    };
    let place = prog
        .regions
        .iter()
        .find(|r| addr >= r.addr && addr - r.addr < r.size)
        .map(|r| format!(" (region {:?} + {:#x})", r.name, addr - r.addr))
        .unwrap_or_default();
    KernelError::Fault {
        signal,
        addr,
        place,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_words_follow_the_registry_order() {
        // Each field of a sample set to a distinct value lands in the word of
        // the counter of its own name.
        let s = Sample {
            minor_faults: 1,
            major_faults: 2,
            vmpte_kb: Some(3),
            rss_anon_kb: Some(4),
            rss_file_kb: Some(5),
            rss_shmem_kb: Some(6),
            anon_huge_kb: Some(7),
            shmem_pmd_kb: Some(10),
            file_pmd_kb: Some(11),
            vmswap_kb: Some(12),
            tlb_shootdowns: Some(8),
            thp_collapse_alloc: Some(13),
        };
        let by_name = serde_json::to_value(s).unwrap();
        let words = sample_words(&s);
        for (k, name) in COUNTER_NAMES.iter().enumerate() {
            assert_eq!(by_name[name].as_u64(), Some(words[k]), "{name}");
        }
    }

    #[test]
    fn call_names_cover_every_call() {
        assert_eq!(CALL_NAMES.len(), Call::TmpfsFile as usize + 1);
        assert!(CALL_NAMES[Call::TmpfsFile as usize].contains("O_TMPFILE"));
        assert_eq!(CALL_NAMES[Call::GetMempolicy as usize], "get_mempolicy");
        assert!(CALL_NAMES[Call::CgroupReclaim as usize].contains("deferred_split"));
        assert!(CALL_NAMES[Call::KhugepagedWait as usize].contains("khugepaged"));
        assert_eq!(CALL_NAMES[Call::Fork as usize], "fork");
        assert_eq!(CALL_NAMES[Call::Mremap as usize], "mremap");
        assert_eq!(CALL_NAMES[Call::Madvise as usize], "madvise");
    }
}
