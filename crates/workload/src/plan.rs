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
    /// What the workload needs of the system it runs on (`requires`): a
    /// run on a system without it is skipped, with [`Need::unmet`]'s line.
    pub requires: Vec<Need>,
    /// Every distinct region name after `{tid}` expansion, indexed by [`RegionId`].
    pub regions: Vec<Region>,
    /// One entry per thread (blocks expanded), in thread-index order.
    pub threads: Vec<Thread>,
}

/// A need a workload states (`requires = ["swap"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Need {
    /// An active swap device: what reclaim does with anonymous and shmem
    /// pages differs with one.
    Swap,
    /// No swap device.
    NoSwap,
    /// Swap, with Linux's read-ahead by address (VMA read-ahead: no swap
    /// area on a rotational device and `vma_ra_enabled` true), whose
    /// windows a workload decides; cluster read-ahead keeps its window
    /// system-wide and reads by slot number, which a workload does not.
    SwapVmaReadahead,
    /// Swap on a rotational device (Linux's `nr_rotate_swap` nonzero; a
    /// swap file counts its filesystem's device).
    SwapRotational,
    /// Swap whose first area is a swap file: Linux 6.18 splits a large
    /// folio before it swaps it (no contiguous slots on a file).
    SwapFile,
    /// Swap whose first area is a block device with asynchronous I/O: a
    /// large folio is swapped whole and waits in the swap cache.
    SwapBlock,
    /// Swap whose first area is a block device with synchronous I/O
    /// (zram): written pages leave memory at once and come back by major
    /// faults.
    SwapSync,
}

/// The kind of the swap area Linux writes to first (see [`Need::SwapFile`]
/// and the two after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SwapArea {
    #[default]
    File,
    Block,
    Sync,
}

/// What a system offers that needs ask about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NeedSystem {
    /// An active swap device.
    pub swap: bool,
    /// Swap read-ahead by address (see [`Need::SwapVmaReadahead`]).
    pub vma_readahead: bool,
    /// An active swap area on a rotational device.
    pub rotational: bool,
    /// The kind of the first swap area (with `swap`).
    pub area: SwapArea,
}

impl Need {
    /// Every need, with its spelling in `requires`.
    pub const NAMES: &'static [(&'static str, Need)] = &[
        ("swap", Need::Swap),
        ("no-swap", Need::NoSwap),
        ("swap-vma-readahead", Need::SwapVmaReadahead),
        ("swap-rotational", Need::SwapRotational),
        ("swap-file", Need::SwapFile),
        ("swap-block", Need::SwapBlock),
        ("swap-sync", Need::SwapSync),
    ];

    pub fn parse(s: &str) -> Option<Need> {
        Need::NAMES.iter().find(|(n, _)| *n == s).map(|(_, v)| *v)
    }

    pub fn name(self) -> &'static str {
        Need::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("", |(n, _)| n)
    }

    /// Whether the need asks for swap (`Some(true)`), for none
    /// (`Some(false)`), or says nothing of it.
    pub fn wants_swap(self) -> Option<bool> {
        match self {
            Need::Swap
            | Need::SwapVmaReadahead
            | Need::SwapRotational
            | Need::SwapFile
            | Need::SwapBlock
            | Need::SwapSync => Some(true),
            Need::NoSwap => Some(false),
        }
    }

    /// Whether `sys` meets the need.
    pub fn met(self, sys: NeedSystem) -> bool {
        match self {
            Need::Swap => sys.swap,
            Need::NoSwap => !sys.swap,
            Need::SwapVmaReadahead => sys.swap && sys.vma_readahead,
            Need::SwapRotational => sys.swap && sys.rotational,
            Need::SwapFile => sys.swap && sys.area == SwapArea::File,
            Need::SwapBlock => sys.swap && sys.area == SwapArea::Block,
            Need::SwapSync => sys.swap && sys.area == SwapArea::Sync,
        }
    }

    /// The reason a run of `workload` on `system` ("this host's kernel",
    /// "the model") is skipped, when `sys` says what that system offers;
    /// `None` when every need of the workload is met.
    pub fn unmet(workload: &Workload, system: &str, sys: NeedSystem) -> Option<String> {
        let n = *workload.requires.iter().find(|n| !n.met(sys))?;
        let what = match n {
            Need::Swap => "swap",
            Need::NoSwap => "no swap",
            Need::SwapVmaReadahead => "swap with read-ahead by address",
            Need::SwapRotational => "swap on a rotational device",
            Need::SwapFile => "swap on a swap file",
            Need::SwapBlock => "swap on a block device with asynchronous I/O",
            Need::SwapSync => "swap on a block device with synchronous I/O (zram)",
        };
        let lacks = match n {
            Need::NoSwap => format!("{system} has a swap device"),
            _ if !sys.swap => format!("{system} has no swap device"),
            Need::SwapVmaReadahead => format!(
                "{system} reads ahead by swap slot (a rotational swap device, or vma_ra_enabled false)"
            ),
            Need::SwapRotational => format!("{system}'s swap is on a solid-state one"),
            Need::SwapFile | Need::SwapBlock | Need::SwapSync => format!(
                "{system}'s swap is on {}",
                match sys.area {
                    SwapArea::File => "a swap file",
                    SwapArea::Block => "a block device with asynchronous I/O",
                    SwapArea::Sync => "a block device with synchronous I/O",
                }
            ),
            Need::Swap => unreachable!("met by any swap device"),
        };
        Some(format!(
            "{}: skipped: it requires {what}, and {lacks}",
            workload.name
        ))
    }
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

/// The `huge=` option of the tmpfs a `kind = "shmem"` region's object is a
/// file of (`shmem_huge`): when Linux gives the file PMD-sized folios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShmemHuge {
    /// `huge=never`: base pages only.
    Never,
    /// `huge=always`: a PMD-sized folio wherever the mapping allows one.
    Always,
    /// `huge=within_size`: as `always` where the folio lies within the
    /// file's size; elsewhere as `advise`.
    WithinSize,
    /// `huge=advise`: as `always` in a range advised `hugepage`.
    Advise,
}

/// Whether a file region's pages start in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    Cached,
    Cold,
}

/// The madvise kinds: one vocabulary shared with the OS model and the
/// kernel backend (crates/advice).
pub use advice::Advice;

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
    /// Where in its file a file mapping starts (mmap's offset; a multiple
    /// of 4 KiB). The file is this much longer than the mapping.
    pub file_offset: u64,
    /// `kind = "shmem"` only: the object is a file on a tmpfs mounted with
    /// this `huge=` option instead of a memfd (None: a memfd, under the
    /// host's shmem_enabled).
    pub shmem_huge: Option<ShmemHuge>,
}

/// Accesses to a range of a region.
///
/// The range holds `positions() = ceil(range.len / stride)` access points,
/// `range.offset + k * stride` for `k` in `0..positions()`. Access `i` (of
/// `count`) goes to point `i mod positions()` (seq), to point
/// `positions() - 1 - (i mod positions())` (reverse), or to a point drawn
/// uniformly by a PCG generator seeded with `seed` (random; see
/// [`Touch::offsets`], which every backend uses so runs agree). Each access
/// reads or writes one byte at the start of its point.
#[derive(Debug, Clone, PartialEq)]
pub struct Touch {
    pub region: RegionId,
    /// Already narrowed to this thread's slice when `part = "split"`.
    pub range: Range,
    pub access: Access,
    pub pattern: Pattern,
    pub stride: u64,
    /// Number of accesses (for seq/reverse: one per stride over the range
    /// unless the workload said otherwise; with `part = "split"`, this
    /// thread's share).
    pub count: u64,
    pub seed: u64,
    pub latency: bool,
}

impl Touch {
    /// Number of access points in the range (at least 1).
    pub fn positions(&self) -> u64 {
        self.range.len.div_ceil(self.stride).max(1)
    }

    /// The byte offsets (from the region's start) of the `count` accesses,
    /// in order. Deterministic: the same touch gives the same offsets on
    /// every backend and every run.
    pub fn offsets(&self) -> impl Iterator<Item = u64> + '_ {
        use rand::{Rng, SeedableRng};
        let n = self.positions();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(self.seed);
        (0..self.count).map(move |i| {
            let k = match self.pattern {
                Pattern::Seq => i % n,
                Pattern::Reverse => n - 1 - i % n,
                Pattern::Random => rng.random_range(0..n),
            };
            self.range.offset + k * self.stride
        })
    }
}

/// `mremap` of a whole private anonymous region (Linux `mremap`): to
/// `new_size` in place (shrink, or grow into the room the placement rule
/// reserved for the region's largest size), or, with `to`, moved to that
/// region's address (MREMAP_MAYMOVE | MREMAP_FIXED) and resized there.
/// After a move `region` is unmapped and `to` is mapped.
#[derive(Debug, Clone, PartialEq)]
pub struct Mremap {
    pub region: RegionId,
    /// The mapping's size before the call (the whole region as mapped).
    pub old_size: u64,
    pub new_size: u64,
    /// MREMAP_MAYMOVE.
    pub maymove: bool,
    /// The destination region (MREMAP_FIXED at its address).
    pub to: Option<RegionId>,
    /// MREMAP_DONTUNMAP (with `to`, the same size): `region` stays mapped,
    /// empty.
    pub dontunmap: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Mmap(Mmap),
    Munmap {
        region: RegionId,
        range: Range,
    },
    Mprotect {
        region: RegionId,
        range: Range,
        prot: Prot,
    },
    Madvise {
        region: RegionId,
        range: Range,
        advice: Advice,
    },
    /// mlock, or with `onfault` mlock2(MLOCK_ONFAULT).
    Mlock {
        region: RegionId,
        range: Range,
        onfault: bool,
    },
    Munlock {
        region: RegionId,
        range: Range,
    },
    Touch(Touch),
    /// One get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) system call per access
    /// point of the (sequential, read) touch: the node of the page there
    /// (Linux: mm/mempolicy.c, do_get_mempolicy -> lookup_node).
    NodeOf(Touch),
    Sync {
        region: RegionId,
        range: Range,
    },
    Sleep(Duration),
    Barrier,
    Mark(String),
    Repeat {
        times: u64,
        ops: Vec<Op>,
    },
    /// A child process (Linux `fork`): the child, a copy of the address
    /// space, runs `ops` and exits; with `wait` the thread waits meanwhile,
    /// without it the thread goes on with its next ops until an
    /// [`Op::Waitpid`] of the child (or the end of its ops). The child's
    /// marks are reported as `name.LABEL`, with the child's own counters
    /// counted from just after the fork. Only in a workload of one thread,
    /// at the top level of its ops; the ops map no region and pass no
    /// barrier.
    Fork {
        name: String,
        ops: Vec<Op>,
        wait: bool,
    },
    /// Waits for the child a `wait = false` fork named so started, and
    /// reaps it (Linux `waitpid`). At the top level of the one thread's
    /// ops, after that fork, once per child.
    Waitpid(String),
    Mremap(Mremap),
    /// The THP deferred split shrinker runs over the process's memory
    /// (Linux: mm/huge_memory.c, deferred_split_scan, as reclaim of the
    /// process's memory cgroup runs it): partially mapped THPs are split,
    /// and underused ones (see docs/format.md).
    DeferredSplit,
    /// khugepaged passes over the range (Linux: mm/khugepaged.c,
    /// khugepaged_scan_mm_slot): the model collapses what its limits allow;
    /// the kernel backend waits for two full khugepaged scans.
    Khugepaged {
        region: RegionId,
        range: Range,
    },
}

/// Bytes of a huge page, the unit a THP fault may populate.
const HUGE_PAGE: u64 = 2 << 20;

/// Calls `f` on every op of `ops`, repeat bodies included (once each).
fn for_each_op(ops: &[Op], f: &mut impl FnMut(&Op)) {
    for op in ops {
        f(op);
        if let Op::Repeat { ops, .. } | Op::Fork { ops, .. } = op {
            for_each_op(ops, f);
        }
    }
}

impl Workload {
    /// The region called `name`, if there is one.
    pub fn region(&self, name: &str) -> Option<RegionId> {
        self.regions.iter().position(|r| r.name == name)
    }

    /// Calls `f` on every op of every thread (repeat bodies once each).
    pub fn for_each_op(&self, mut f: impl FnMut(&Thread, &Op)) {
        for t in &self.threads {
            for_each_op(&t.ops, &mut |op| f(t, op));
        }
    }

    /// Sum of the sizes of all regions: the most virtual memory the workload
    /// maps (each region counted once, at its largest size, even if it is
    /// never mapped at the same time as another).
    pub fn total_mapped_bytes(&self) -> u64 {
        self.regions.iter().fold(0, |n, r| n.saturating_add(r.size))
    }

    /// An upper bound of the memory the workload may make resident, under
    /// THP "madvise" or "never" (huge pages only where the workload
    /// advises `hugepage`).
    ///
    /// Per region: the bytes its ops may populate (a touch: `count` pages,
    /// at most its range; populate, lock, `populate_*`/`willneed` advice:
    /// their range; a file mapping: its whole size, as it lives in the page
    /// cache), capped at the region's size, and the part of a file before
    /// its `file_offset`; plus one 4 KiB PTE table per
    /// 2 MiB that may hold such a page. A touch counts 2 MiB per access in
    /// an anonymous or shmem region of 2 MiB or more advised `hugepage`.
    /// Loops do not multiply: a repeated op populates the same range.
    pub fn max_touched_bytes(&self) -> u64 {
        self.resident_bound(false)
    }

    /// [`Workload::max_touched_bytes`] under THP "always": every touch of an
    /// anonymous or shmem region of 2 MiB or more may populate a whole huge
    /// page (touching one byte per 2 MiB of 50 GiB then makes 50 GiB resident).
    pub fn max_touched_bytes_thp_always(&self) -> u64 {
        self.resident_bound(true)
    }

    fn resident_bound(&self, thp_always: bool) -> u64 {
        let n = self.regions.len();
        let mut file = vec![false; n];
        // The part of a file before its mapping lives in the page cache too.
        let mut file_before = vec![0u64; n];
        let mut advised_huge = vec![false; n];
        self.for_each_op(|_, op| match op {
            Op::Mmap(m) if m.kind == MapKind::File => {
                file[m.region] = true;
                file_before[m.region] = file_before[m.region].max(m.file_offset);
            }
            Op::Madvise {
                region,
                advice: Advice::HugePage,
                ..
            } => advised_huge[*region] = true,
            _ => {}
        });
        let mut bytes = vec![0u64; n];
        self.for_each_op(|_, op| {
            let (region, b) = match op {
                Op::Mmap(m) if m.populate || m.locked || m.kind == MapKind::File => {
                    (m.region, m.size)
                }
                Op::Madvise {
                    region,
                    range,
                    advice: Advice::PopulateRead | Advice::PopulateWrite | Advice::WillNeed,
                } => (*region, range.len),
                Op::Mlock {
                    region,
                    range,
                    onfault: false,
                } => (*region, range.len),
                // A lookup faults a page in for read as a read touch would.
                Op::Touch(t) | Op::NodeOf(t) => {
                    let r = t.region;
                    let huge = !file[r]
                        && self.regions[r].size >= HUGE_PAGE
                        && (thp_always || advised_huge[r]);
                    let unit = if huge { HUGE_PAGE } else { FORMAT_PAGE };
                    // A huge page may reach past the range on both sides.
                    let reach = if huge {
                        t.range.len.saturating_add(2 * HUGE_PAGE)
                    } else {
                        t.range.len
                    };
                    (r, t.count.saturating_mul(unit).min(reach))
                }
                _ => return,
            };
            bytes[region] = bytes[region].saturating_add(b);
        });
        let before = file_before.iter().fold(0u64, |t, b| t.saturating_add(*b));
        let one = self
            .regions
            .iter()
            .zip(bytes)
            .fold(before, |total, (r, b)| {
                let data = b.min(r.size);
                let tables = (data / FORMAT_PAGE).min(r.size / HUGE_PAGE + 2) * FORMAT_PAGE;
                total.saturating_add(data).saturating_add(tables)
            });
        // A fork's child (one at a time) may copy all of it once more.
        let mut forks = false;
        self.for_each_op(|_, op| forks |= matches!(op, Op::Fork { .. }));
        if forks {
            one.saturating_mul(2)
        } else {
            one
        }
    }
}
