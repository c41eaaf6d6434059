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
    /// The fixed address of a region is already taken in the child (by the
    /// program's own mappings, or a workload `addr` that overlaps them).
    #[error("cannot map region {region:?} at {addr:#x} (+{len:#x} bytes): the address range is already in use (MAP_FIXED_NOREPLACE); choose another `addr`")]
    AddressTaken { region: String, addr: u64, len: u64 },
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
    /// The child ended without a valid report.
    #[error("the workload process ended unexpectedly: {status}")]
    ChildFailed { status: String },
}
