//! The validated plan a backend runs. Everything here has passed every check of
//! the workload format: regions are mapped before use, ranges lie inside their
//! region, sizes are multiples of 4 KiB, random touches have a count, and every
//! region has its address fixed by the placement rule.
//!
//! Backends only read this; nothing here can fail at run time except the
//! backend itself.

use std::time::Duration;

/// Bytes in the smallest page every backend supports; sizes and offsets of the
/// format are multiples of it.
pub const FORMAT_PAGE: u64 = 4096;

/// A checked workload: one address space, one or more threads.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub name: String,
    pub description: String,
    /// Every distinct region name after `{tid}` expansion, indexed by [`RegionId`].
    pub regions: Vec<Region>,
    /// One entry per thread (blocks expanded), in thread-index order.
    pub threads: Vec<Thread>,
}

/// Index into [`Workload::regions`].
pub type RegionId = usize;

/// A named region and where the placement rule put it.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    pub name: String,
    /// The largest size any `mmap` of this region asks for.
    pub size: u64,
    /// Fixed virtual address (placement rule, or the workload's `addr`).
    pub addr: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    /// 0-based across all blocks.
    pub tid: usize,
    /// Index of the `[[thread]]` block this thread came from (0-based).
    pub block: usize,
    /// How many threads that block has (for `part = "split"`).
    pub block_count: usize,
    /// This thread's index inside its block (for `part = "split"`).
    pub index_in_block: usize,
    pub ops: Vec<Op>,
}

/// A byte range inside a region: `offset` and `len` are multiples of 4 KiB
/// and `offset + len <= region size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub offset: u64,
    pub len: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    Anon,
    File,
    Shmem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prot {
    None,
    R,
    Rw,
    Rx,
    Rwx,
}

impl Prot {
    pub fn readable(self) -> bool {
        !matches!(self, Prot::None)
    }
    pub fn writable(self) -> bool {
        matches!(self, Prot::Rw | Prot::Rwx)
    }
    pub fn executable(self) -> bool {
        matches!(self, Prot::Rx | Prot::Rwx)
    }
}

/// Whether a file region's pages start in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    Cached,
    Cold,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    DontNeed,
    Free,
    HugePage,
    NoHugePage,
    PopulateRead,
    PopulateWrite,
    WillNeed,
    PageOut,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Seq,
    Reverse,
    Random,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Mmap {
    pub region: RegionId,
    pub size: u64,
    pub kind: MapKind,
    pub shared: bool,
    pub prot: Prot,
    pub populate: bool,
    pub locked: bool,
    pub noreserve: bool,
    pub file: FileState,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Touch {
    pub region: RegionId,
    /// Already narrowed to this thread's slice when `part = "split"`.
    pub range: Range,
    pub access: Access,
    pub pattern: Pattern,
    pub stride: u64,
    /// Number of accesses (for seq/reverse: one per stride over the range
    /// unless the workload said otherwise).
    pub count: u64,
    pub seed: u64,
    pub latency: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Mmap(Mmap),
    Munmap { region: RegionId, range: Range },
    Mprotect { region: RegionId, range: Range, prot: Prot },
    Madvise { region: RegionId, range: Range, advice: Advice },
    Mlock { region: RegionId, range: Range },
    Munlock { region: RegionId, range: Range },
    Touch(Touch),
    Sync { region: RegionId, range: Range },
    Sleep(Duration),
    Barrier,
    Mark(String),
    Repeat { times: u64, ops: Vec<Op> },
}
