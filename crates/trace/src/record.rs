//! The records of a trace: address-space events, accesses and faults, by
//! region identity and offset rather than by address, so that a replay may
//! lay the regions out anew under any geometry.

use serde::{Deserialize, Serialize};

/// A region's identity in one trace: assigned by the writer, never reused
/// for another region of the same trace.
pub type RegionId = u32;

/// What backs a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RegionKind {
    /// Private or shared anonymous memory from mmap.
    Anon,
    /// A file mapping.
    File,
    /// Shared memory (memfd, /dev/shm, MAP_SHARED|MAP_ANONYMOUS).
    Shmem,
    /// The brk heap.
    Heap,
    /// A thread's stack.
    Stack,
    /// Anything else (the vDSO, a device).
    Other,
}

impl RegionKind {
    pub(crate) fn code(self) -> u8 {
        match self {
            RegionKind::Anon => 0,
            RegionKind::File => 1,
            RegionKind::Shmem => 2,
            RegionKind::Heap => 3,
            RegionKind::Stack => 4,
            RegionKind::Other => 5,
        }
    }

    pub(crate) fn from_code(c: u8) -> Option<RegionKind> {
        Some(match c {
            0 => RegionKind::Anon,
            1 => RegionKind::File,
            2 => RegionKind::Shmem,
            3 => RegionKind::Heap,
            4 => RegionKind::Stack,
            5 => RegionKind::Other,
            _ => return None,
        })
    }
}

/// Protection bits, as Linux's PROT_* (read 1, write 2, exec 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prot(pub u8);

impl Prot {
    pub const READ: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const EXEC: u8 = 4;
    pub fn readable(self) -> bool {
        self.0 & Prot::READ != 0
    }
    pub fn writable(self) -> bool {
        self.0 & Prot::WRITE != 0
    }
    pub fn executable(self) -> bool {
        self.0 & Prot::EXEC != 0
    }
}

/// Flags of a mapping that change what the OS does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MapFlags(pub u8);

impl MapFlags {
    pub const SHARED: u8 = 1;
    pub const NORESERVE: u8 = 2;
    pub const POPULATE: u8 = 4;
    pub const LOCKED: u8 = 8;
    /// The program asked for this address (MAP_FIXED or a hint it got).
    pub const FIXED: u8 = 16;
    pub fn has(self, f: u8) -> bool {
        self.0 & f != 0
    }
}

/// A new region: an mmap, the heap or a stack found at the start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEvent {
    pub id: RegionId,
    /// Bytes, a multiple of 4 KiB.
    pub size: u64,
    /// Where the program had it (0: unknown, e.g. an imported trace).
    pub native: u64,
    pub kind: RegionKind,
    pub prot: Prot,
    pub flags: MapFlags,
    /// The file's path or the region's name (`[heap]`); may be empty.
    pub name: String,
}

/// One record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Map(MapEvent),
    /// munmap of `[offset, offset + len)` of the region.
    Unmap {
        id: RegionId,
        offset: u64,
        len: u64,
    },
    Protect {
        id: RegionId,
        offset: u64,
        len: u64,
        prot: Prot,
    },
    /// madvise with Linux's MADV_* number.
    Advise {
        id: RegionId,
        offset: u64,
        len: u64,
        advice: u8,
    },
    Lock {
        id: RegionId,
        offset: u64,
        len: u64,
    },
    Unlock {
        id: RegionId,
        offset: u64,
        len: u64,
    },
    /// The region grows or shrinks in place (brk, mremap without a move).
    Resize {
        id: RegionId,
        size: u64,
    },
    /// mremap that moved the region: its pages now belong to region
    /// `new_id`, of `size` bytes, at `native` in the program; `id` ends.
    Move {
        id: RegionId,
        new_id: RegionId,
        size: u64,
        native: u64,
    },
    /// A load or store at `offset` in the region.
    Access {
        id: RegionId,
        offset: u64,
        write: bool,
    },
    /// An instruction fetched at `offset` in the region (its ip): one
    /// instruction of the program, translated through the instruction
    /// TLB. A trace that has them counts its instructions by them.
    Fetch {
        id: RegionId,
        offset: u64,
    },
    /// `count` accesses the tracer left out because each fell in the same
    /// page as the previous access of the same kind by the same thread:
    /// such an access can only hit the TLB, so a replay counts them as
    /// hits without translating them.
    Hits {
        count: u64,
    },
    /// A page fault the recording saw (address and kind, from the kernel).
    Fault {
        id: RegionId,
        offset: u64,
        write: bool,
    },
    /// The records that follow are thread `tid`'s (0 = the first thread).
    Thread {
        tid: u32,
    },
    /// A named point where a replay takes counters, as the workload
    /// format's `mark`.
    Mark {
        name: String,
    },
}
