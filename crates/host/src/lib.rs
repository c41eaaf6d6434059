//! What this host is and how it is set up for virtual memory, read from /proc
//! and /sys.
//!
//! - [`Fingerprint`]: the environment a result came from (kernel, CPU, paging
//!   levels, THP, hypervisor, memory).
//! - [`MachineKey`]: the part of the fingerprint a cost file is valid for
//!   (CPU, kernel, hypervisor, THP, page size), and its key in the cache.
//! - [`audit()`]: the latency hazards of `ptlab audit`, each with a status, a
//!   reason and a remedy.
//! - [`CounterReader`]: this process's memory counters (faults, VmPTE, RSS,
//!   AnonHugePages, TLB shootdowns), read without page faults of its own, for
//!   measuring inside a workload.
//! - [`MemInfo`], [`KernelConfig`], [`CpuInfo`]: the readers underneath.
//! - [`pagemap`]: a live process's VMAs, present pages (PAGEMAP_SCAN or
//!   pagemap entries) and VmPTE, for `ptlab inspect`.
//! - [`FileBacking`]: the read-ahead window and large-folio support of the
//!   filesystem under a directory; [`PvTlbFlush`]: whether KVM's
//!   paravirtual remote TLB flush is in use.
//! - [`advise_huge_pages`]: huge-page advice for the model's table arena.
//! - [`thread_cpu_ns`]: the calling thread's CPU time, for benchmarks.
//! - [`affinity`]: pinning a thread to one CPU (calibration's probes, the
//!   kernel backend's pinned threads).
//!
//! Invariant: nothing here panics or fails on an unreadable file; what cannot
//! be read is reported as unavailable (`None`, or an audit item with status
//! `unavailable`). Nothing needs root.

pub mod advise;
pub mod affinity;
pub mod audit;
pub mod clock;
pub mod counters;
pub mod cpu;
pub mod fingerprint;
pub mod kconfig;
pub mod machine;
pub mod meminfo;
pub mod pagemap;
pub mod procfs;
pub mod pvflush;
pub mod storage;
pub mod swap;

pub use advise::advise_huge_pages;
pub use audit::{audit, audit_with, Audit, AuditOptions, Item, Status};
pub use clock::thread_cpu_ns;
pub use counters::{CounterReader, Sample};
pub use cpu::CpuInfo;
pub use fingerprint::{Fingerprint, Hypervisor, MthpSetting};
pub use kconfig::KernelConfig;
pub use machine::MachineKey;
pub use meminfo::MemInfo;
pub use pvflush::PvTlbFlush;
pub use storage::FileBacking;
