//! The kernel backend: runs a workload for real, in a child process, and
//! reports the counters of the workload format at every mark.
//!
//! # How a run goes
//!
//! 1. **Parent, before fork** ([`run`]): the plan becomes a `program` of
//!    resolved syscall arguments; the run is refused if it may make more than
//!    half of MemAvailable resident ([`KernelError::TooMuchMemory`]) or record
//!    too many marks; file regions get their files in a private temporary
//!    directory (`files`).
//! 2. **Fork** (`parent`): the parent starts no thread; it waits for the
//!    child's report with a deadline, kills the child with SIGKILL past it,
//!    and always reaps it.
//! 3. **Child** (`child`): preallocates and writes every buffer it will
//!    use, spawns one real thread per workload thread (parked at a start
//!    gate), makes its own memory fault-free (`quiesce`), takes the
//!    **baseline** just before the first op, opens the gate. Ops are real
//!    system calls at the placement addresses (MAP_FIXED_NOREPLACE) and real
//!    volatile loads and stores (`exec`). Marks read the counters with
//!    [`host::CounterReader`] (pread on open files into written buffers: no
//!    faults of its own). After every thread is done, the implicit `end`
//!    mark; then the report goes over a pipe (`wire`) and the child
//!    `_exit`s.
//! 4. **Parent**: decodes the report into a [`Run`] (every counter minus the
//!    baseline), or into the error the child reported; the temporary
//!    directory is removed on every path.
//!
//! # Counters
//!
//! `minor_faults`, `major_faults` (getrusage), `vmpte_kb`, `rss_anon_kb`,
//! `rss_file_kb`, `rss_shmem_kb` (/proc/self/status), `anon_huge_kb`
//! (/proc/self/smaps_rollup), `tlb_shootdowns` (/proc/interrupts, all CPUs,
//! so the whole system's), `elapsed_ns` (CLOCK_MONOTONIC). A counter the host
//! cannot read is absent from the mark. With several threads, each thread's
//! `mark` gives one mark, in the order they were reached. A touch with
//! `latency = true` times every access with the monotonic clock (the
//! clock's own cost included, tens of ns) and attaches the histogram to the
//! thread's next mark (or to `end`).

mod child;
mod error;
mod exec;
mod files;
mod fork;
mod parent;
mod program;
mod quiesce;
mod room;
mod sync;
mod thp_steps;
mod tmpfs;
mod wire;

use std::path::PathBuf;
use std::time::Duration;

use workload::plan::Workload;
use workload::result::Run;

pub use error::KernelError;

use crate::latency::HIST_WORDS;
use program::Program;
use wire::RECORD_WORDS;

/// Most mark records one run may hold (repeats multiply marks).
pub const MAX_MARKS: u64 = 1 << 20;

/// How to run on the kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelOptions {
    /// The child is killed past this (default 120 s).
    pub timeout: Duration,
    /// Where the private temporary directory for file regions is created.
    /// Default: the system's temporary directory, or /var/tmp when that is
    /// tmpfs (a file on tmpfs would count as shared memory, not as a file).
    pub temp_dir: Option<PathBuf>,
    /// Pins workload thread `i` to the `i`-th CPU this process may run on
    /// (modulo their number) for the whole run, so that the scheduler
    /// neither moves a thread between CPUs mid-measurement nor puts two on
    /// one CPU while another idles. A fork's child stays on its parent's.
    pub pin_threads: bool,
}

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions {
            timeout: Duration::from_secs(120),
            temp_dir: None,
            pin_threads: false,
        }
    }
}

/// The directory under which file regions' files are made by default (see
/// [`KernelOptions::temp_dir`]): the model reads its files' read-ahead
/// window and large-folio support from the filesystem there.
pub fn default_file_dir() -> PathBuf {
    files::default_base()
}

/// Runs `w` on this machine's kernel in a child process.
///
/// # Errors
///
/// - Refused before anything runs: [`KernelError::TooMuchMemory`] (the
///   workload may make more than half of MemAvailable resident),
///   [`KernelError::MemAvailableUnknown`], [`KernelError::TooManyMarks`].
/// - [`KernelError::Setup`]: the temporary files, the pipe, fork or the
///   threads could not be made.
/// - From the run: [`KernelError::AddressTaken`] (a region's range holds
///   the child's own memory or another mapping; checked before the first
///   op), [`KernelError::MapFailed`] (the kernel refused a region's mmap,
///   e.g. ENOMEM without `noreserve`), [`KernelError::Op`] (a system call failed, e.g. mlock over
///   RLIMIT_MEMLOCK), [`KernelError::Fault`] (an access the protection
///   forbids), [`KernelError::Timeout`], [`KernelError::ChildFailed`].
pub fn run(w: &Workload, opts: &KernelOptions) -> Result<Run, KernelError> {
    let mut prog = Program::build(w);
    prog.fork_timeout = opts.timeout;
    if opts.pin_threads {
        prog.pin_cpus = host::affinity::allowed_cpus();
    }
    if prog.mark_records > MAX_MARKS {
        return Err(KernelError::TooManyMarks {
            marks: prog.mark_records,
            limit: MAX_MARKS,
        });
    }
    check_memory(w, &prog)?;
    let _cgroup = if prog.needs_reclaim {
        let (cg, files) = thp_steps::ReclaimCgroup::create()?;
        prog.reclaim = Some(files);
        Some(cg)
    } else {
        None
    };
    if prog.has_khugepaged() {
        prog.khugepaged_limit = Some(thp_steps::khugepaged_limit().ok_or_else(|| {
            KernelError::Setup {
                what: "the khugepaged step reads /sys/kernel/mm/transparent_hugepage/khugepaged"
                    .into(),
                source: std::io::Error::from_raw_os_error(libc::ENOENT),
            }
        })?);
    }
    // On SIGINT or SIGTERM (crate interrupt) the child is killed, the run
    // returns through its error path, the files are dropped (their
    // directory removed), and then this section exits the process.
    let _section = interrupt::Section::enter(format!(
        "the kernel run of workload {}: its process ended{}{}",
        w.name,
        if prog.file_regions.contains(&true) {
            ", its region files removed"
        } else {
            ""
        },
        if prog.tmpfs.is_empty() {
            ""
        } else {
            ", its tmpfs mounts gone with it"
        }
    ));
    let _tmpfs = match prog.tmpfs_region() {
        None => None,
        Some(region) => {
            let base = opts.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
            let dirs = tmpfs::TmpfsDirs::create(&prog.tmpfs, region, &base)?;
            prog.tmpfs_paths.clone_from(&dirs.paths);
            Some(dirs)
        }
    };
    let files = files::RegionFiles::create(&prog, opts.temp_dir.as_deref())?;
    let words = parent::run_in_child(&prog, &files.fds(), opts.timeout);
    drop(files); // removes the temporary directory
    wire::decode(&words?, &prog)
}

/// The bound on resident memory the safety check uses, in bytes: the
/// workload's own bound (see `Workload::max_touched_bytes`; the THP-always
/// one when this host may give huge pages without being asked) plus the
/// child's buffers for marks and histograms.
pub fn max_resident_bytes(w: &Workload) -> u64 {
    let prog = Program::build(w);
    resident_bound(w, &prog)
}

fn resident_bound(w: &Workload, prog: &Program) -> u64 {
    let thp_always = host::fingerprint::thp_enabled().as_deref() == Some("always")
        || host::fingerprint::mthp_settings()
            .iter()
            .any(|m| m.enabled == "always");
    let touched = if thp_always {
        w.max_touched_bytes_thp_always()
    } else {
        w.max_touched_bytes()
    };
    let buffers = prog
        .mark_records
        .saturating_add(prog.fork_records)
        .saturating_mul(RECORD_WORDS as u64 * 8)
        .saturating_add(prog.latency_slots.saturating_mul(HIST_WORDS as u64 * 8));
    touched.saturating_add(buffers)
}

fn check_memory(w: &Workload, prog: &Program) -> Result<(), KernelError> {
    let available_kb = host::MemInfo::read()
        .and_then(|m| m.mem_available_kb())
        .ok_or(KernelError::MemAvailableUnknown)?;
    let available_bytes = available_kb.saturating_mul(1024);
    let needed_bytes = resident_bound(w, prog);
    if needed_bytes > available_bytes / 2 {
        return Err(KernelError::TooMuchMemory {
            needed_bytes,
            available_bytes,
        });
    }
    Ok(())
}
