//! The one error type of the kernel backend.

use std::time::Duration;

/// Why a kernel run did not produce a result. Every variant says what to do
/// in its message; none leaves a process or a file behind.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// Refused before starting: the workload may make more memory resident
    /// than half of what the system has available (a bad-input error, exit 2
    /// style).
    #[error(
        "the workload may make up to {needed_mib} MiB resident, more than half of the {available_mib} MiB \
         this machine has available (MemAvailable); shrink its regions or touches, or run it on the model"
    , needed_mib = needed_bytes >> 20, available_mib = available_bytes >> 20)]
    TooMuchMemory {
        needed_bytes: u64,
        available_bytes: u64,
    },
    /// MemAvailable could not be read, so the memory limit cannot be checked.
    #[error(
        "cannot read MemAvailable from /proc/meminfo, so the memory safety limit cannot be checked"
    )]
    MemAvailableUnknown,
    /// The workload would record more marks than the backend preallocates.
    #[error("the workload records {marks} marks (repeats multiply them), more than the {limit} the kernel backend can hold; move the mark out of the loop")]
    TooManyMarks { marks: u64, limit: u64 },
    /// The run exceeded its time limit; the child was killed.
    #[error("the workload ran longer than the time limit of {limit:?} and was killed; raise the limit or shorten the workload")]
    Timeout { limit: Duration },
    /// The range of a region is already taken in the child: by the
    /// program's own memory (found before the first op) or by another
    /// mapping (MAP_FIXED_NOREPLACE refused). Bad input: the workload's
    /// `addr` or size has to change.
    #[error("cannot map region {region:?} at {addr:#x} (+{len:#x} bytes): the range holds {by}; give the region an `addr` clear of it, or make it smaller")]
    AddressTaken {
        region: String,
        addr: u64,
        len: u64,
        /// What holds the range, in words.
        by: String,
    },
    /// The kernel refused to map a region (ENOMEM: more address space than
    /// overcommit allows, EINVAL: arguments this kernel rejects). Bad input.
    #[error("cannot map region {region:?} at {addr:#x} (+{len:#x} bytes): mmap failed: {source}{hint}", hint = map_hint(source))]
    MapFailed {
        region: String,
        addr: u64,
        len: u64,
        #[source]
        source: std::io::Error,
    },
    /// A system call of an op failed.
    #[error("{op}: {call} failed: {source}")]
    Op {
        /// Which op: "thread 0, op 3.1 (madvise \"big\" PageOut)".
        op: String,
        call: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The child touched memory it may not (e.g. a write to a region mapped
    /// read-only) and died of the signal.
    #[error("the workload died of {signal} at address {addr:#x}{place}; check the protections of the regions it touches")]
    Fault {
        signal: &'static str,
        addr: u64,
        /// ` (region "big" + 0x1000)` when the address is in a region.
        place: String,
    },
    /// Setting up the run failed (temp dir, files, pipe, fork, threads).
    #[error("cannot set up the kernel run: {what}: {source}")]
    Setup {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A region is shmem on a tmpfs with its own `huge=` option
    /// (`shmem_huge`), and this process may not mount one.
    #[error("region {region:?} is shmem on a tmpfs mounted with huge={huge} (shmem_huge), and mounting a tmpfs needs root (CAP_SYS_ADMIN); run as root, or run it on the model")]
    NeedsRoot { region: String, huge: &'static str },
    /// The child ended without a valid report.
    #[error("the workload process ended unexpectedly: {status}")]
    ChildFailed { status: String },
}

impl KernelError {
    /// Whether the workload, not the run, is at fault (exit status 2): it
    /// was refused before starting, or asks for a mapping this machine
    /// cannot make.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            KernelError::TooMuchMemory { .. }
                | KernelError::TooManyMarks { .. }
                | KernelError::AddressTaken { .. }
                | KernelError::MapFailed { .. }
                | KernelError::NeedsRoot { .. }
        )
    }
}

/// What to do about a failed mmap, by its errno.
fn map_hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOMEM) => {
            "; the kernel would not commit that much memory: add `noreserve = true` for a sparse region, or make it smaller"
        }
        Some(libc::EINVAL) => "; this kernel rejects the mapping's arguments",
        _ => "",
    }
}
