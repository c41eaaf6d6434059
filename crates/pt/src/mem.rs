//! Simulated physical memory: the arena that holds every table page, and the
//! frame allocator for table pages and data frames.
//!
//! Physical addresses are split into two zones so that a walker can turn an
//! entry's output address into an arena slot with one subtraction:
//!
//! - the table zone starts at [`TABLE_ZONE_BASE`]; table page `n` of the arena
//!   lives at `TABLE_ZONE_BASE + n * table_bytes`;
//! - the data zone starts at [`DATA_ZONE_BASE`]; data frames are numbers only
//!   (their contents are never simulated), aligned to their size.
//!
//! ## Invariants
//!
//! - A table page is zeroed when handed out, and stays in the arena at the
//!   same address for its whole life; its words are read and written
//!   atomically, so hardware walkers may read while the OS model writes.
//! - Every table page has a [`TableMeta`] beside it (like Linux's `ptdesc`):
//!   its lock and its count of present entries.
//! - A frame is either free or allocated exactly once: freeing a free frame,
//!   or a data frame with another size than it was allocated with, is
//!   reported as an error and changes nothing.
//! - The allocator may be told to fail ([`PhysMem::set_fault_injection`]), so
//!   that out-of-memory paths can be tested. With no rule installed the
//!   check is one relaxed load of a flag (no lock, no shared counter).
//! - Whether a data frame is allocated is one bit per base page (set at the
//!   frame's head), changed atomically: the double-free check of a base page
//!   takes no lock. A second bit marks the heads of large frames, whose
//!   sizes live in a map under the global lock.
//!
//! ## Per-thread lists of base pages
//!
//! Base-page data frames (the 4 KiB anonymous-fault path) come from a
//! per-thread free list, as Linux serves order-0 pages from per-CPU lists
//! (`struct per_cpu_pages`, mm/page_alloc.c `rmqueue_pcplist`): a list
//! takes [`PCP_BATCH`] frames from the global allocator when empty and
//! gives [`PCP_BATCH`] back when it holds more than [`PCP_HIGH`]. A thread
//! uses list `thread number % PCP_LISTS`, so threads running at the same
//! time take different (uncontended) list locks. A frame on a list is
//! free (its head bit is clear); a frame may be freed to another thread's
//! list than the one it came from.

mod flat;

pub use flat::{set_arena_advisor, ArenaAdvisor};

use crate::sync::{
    AtomicBool, AtomicU32, AtomicU64, Mutex, MutexGuard, Ordering, SpinGuard, SpinLock,
};
use std::collections::HashMap;
use std::sync::atomic::{
    AtomicPtr as StdAtomicPtr, AtomicU64 as StdAtomicU64, AtomicUsize as StdAtomicUsize,
    Ordering as StdOrdering,
};
use std::sync::OnceLock;
use thiserror::Error;

/// First physical address of the table zone (4 GiB).
pub const TABLE_ZONE_BASE: u64 = 1 << 32;
/// First physical address of the data zone (1 TiB).
pub const DATA_ZONE_BASE: u64 = 1 << 40;
/// log2 of the bytes of table memory one arena chunk holds (2 MiB, a
/// whole number of table pages for every base page the geometries allow).
const CHUNK_SHIFT: u32 = 21;
/// Bytes of table memory one arena chunk holds.
const CHUNK_BYTES: u64 = 1 << CHUNK_SHIFT;
/// Most table memory an arena can hold: 64 GiB, room for the page tables of
/// far more than this machine's memory.
const MAX_TABLE_BYTES: u64 = 64 << 30;
/// Most table memory held in the contiguous part of the arena (see
/// [`flat`]): 1 GiB of address space, the tables of 512 GiB mapped with
/// 4 KiB pages. Chunks past it are allocated one by one.
const MAX_FLAT_BYTES: u64 = 1 << 30;

/// Base-page frames a per-thread list takes from the global allocator at
/// once, and gives back at once (Linux `pcp->batch`). 512 frames fill whole
/// words of the frame bitmap, so two threads' fresh batches share no word.
pub const PCP_BATCH: usize = 512;
/// Frames a per-thread list keeps before it gives a batch back (Linux `pcp->high`).
pub const PCP_HIGH: usize = 8 * PCP_BATCH;
/// Per-thread lists (a thread uses `thread number % PCP_LISTS`). Under loom
/// one list, which keeps the model small.
#[cfg(not(loom))]
pub const PCP_LISTS: usize = 16;
#[cfg(loom)]
pub const PCP_LISTS: usize = 1;
/// Words of one chunk of the frame bitmap (2^20 base pages).
const BITS_CHUNK_WORDS: usize = 1 << 14;
/// Chunks of the frame bitmap: room for 2^32 base pages of data frames.
const BITS_CHUNKS: usize = 1 << 12;

/// What the allocator is asked for (passed to fault-injection rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocKind {
    /// A table page for `level` (0 = a PTE table).
    Table { level: usize },
    /// A data frame of `size` bytes.
    Data { size: u64 },
}

/// Why an allocation or a free failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MemError {
    #[error("out of memory allocating {0:?}")]
    OutOfMemory(AllocKind),
    #[error("double free of frame {0:#x}")]
    DoubleFree(u64),
    #[error("{0:#x} is not a frame of this memory")]
    NotAFrame(u64),
    #[error("frame {pa:#x} was allocated with {allocated} bytes, freed with {freed}")]
    WrongSize { pa: u64, allocated: u64, freed: u64 },
}

/// A rule deciding whether the n-th allocation (counted from 0 across all
/// kinds, since the rule was installed) of `kind` fails.
pub type FaultInjection = Box<dyn Fn(AllocKind, u64) -> bool + Send + Sync>;

/// The bookkeeping beside a table page. Each on its own cache lines: the
/// lock and the present count are written on every fault into the table,
/// and two threads faulting into neighbouring tables must not share a line.
#[repr(align(128))]
pub struct TableMeta {
    /// The table's own lock (Linux: the split PTE / PMD lock in `ptdesc`).
    pub lock: SpinLock,
    /// Present (software) entries in the table.
    pub present: AtomicU32,
    allocated: AtomicBool,
    level: AtomicU32,
}

impl TableMeta {
    fn new() -> TableMeta {
        TableMeta {
            lock: SpinLock::new(()),
            present: AtomicU32::new(0),
            allocated: AtomicBool::new(false),
            level: AtomicU32::new(0),
        }
    }
    /// The level this table page was allocated for.
    pub fn level(&self) -> usize {
        self.level.load(Ordering::Relaxed) as usize
    }
    /// Locks the table (the caller holds the guard for as long as it edits).
    pub fn lock(&self) -> SpinGuard<'_> {
        self.lock.lock()
    }
}

struct TableAlloc {
    next_slot: u64,
    free: Vec<u64>,
    live: u64,
}

/// The global data-frame allocator (under [`PhysMem`]'s `data` lock).
struct DataAlloc {
    /// Next unallocated byte of the data zone (bump pointer).
    next: u64,
    /// Free frames by size (base pages given back by per-thread lists,
    /// alignment gaps, freed large frames).
    free: HashMap<u64, Vec<u64>>,
    /// Sizes of allocated frames larger than the base page.
    large: HashMap<u64, u64>,
    /// Large frames (and their bytes) allocated.
    live_frames: u64,
    live_bytes: u64,
}

/// One per-thread list of free base pages (its own cache lines).
#[repr(align(128))]
struct Pcp {
    /// A spinlock, as Linux's `pcp->lock`.
    list: SpinLock<PcpList>,
}

struct PcpList {
    free: Vec<u64>,
    /// Base pages allocated through this list minus those freed through it
    /// (wrapping: a frame may be freed through another list; the sum over
    /// the lists is exact).
    live_frames: u64,
}

/// One bit per base page of the data zone, in chunks allocated on first
/// use; bits are set and cleared atomically.
struct FrameBits {
    chunks: Box<[OnceLock<Box<[StdAtomicU64]>>]>,
}

impl FrameBits {
    fn new() -> FrameBits {
        FrameBits {
            chunks: (0..BITS_CHUNKS).map(|_| OnceLock::new()).collect(),
        }
    }

    #[inline]
    fn locate(bit: u64) -> (usize, usize, u64) {
        let word = (bit / 64) as usize;
        (
            word / BITS_CHUNK_WORDS,
            word % BITS_CHUNK_WORDS,
            1 << (bit % 64),
        )
    }

    /// Whether `bit` can be represented (the data zone is not exhausted).
    fn holds(bit: u64) -> bool {
        bit / 64 < (BITS_CHUNKS * BITS_CHUNK_WORDS) as u64
    }

    #[inline]
    fn word(&self, bit: u64) -> Option<(&StdAtomicU64, u64)> {
        let (c, w, mask) = Self::locate(bit);
        Some((&self.chunks.get(c)?.get()?[w], mask))
    }

    #[inline]
    fn test(&self, bit: u64) -> bool {
        self.word(bit)
            .is_some_and(|(w, m)| w.load(Ordering::Acquire) & m != 0)
    }

    /// Sets `bit`; returns whether it was set before.
    #[inline]
    fn set(&self, bit: u64) -> bool {
        let (c, w, mask) = Self::locate(bit);
        let chunk = self.chunks[c].get_or_init(|| {
            (0..BITS_CHUNK_WORDS)
                .map(|_| StdAtomicU64::new(0))
                .collect()
        });
        chunk[w].fetch_or(mask, Ordering::AcqRel) & mask != 0
    }

    /// Clears `bit`; returns whether it was set before.
    #[inline]
    fn clear(&self, bit: u64) -> bool {
        self.word(bit)
            .is_some_and(|(w, m)| w.fetch_and(!m, Ordering::AcqRel) & m != 0)
    }
}

/// Element `i` of chunk `c`, through the pointer to its first element that
/// `PhysMem::chunk_init` published in `firsts[c]`; `None` if `c` is out of
/// range or the chunk was not created yet.
///
/// # Safety
/// `i` must be below the number of elements of a chunk. Published pointers
/// point into memory the `PhysMem` owns (its contiguous part, or a chunk it
/// keeps boxed) and never frees or moves before it is dropped, which the
/// returned borrow of `firsts` (a field of it) cannot outlive.
#[inline(always)]
unsafe fn published<T>(firsts: &[StdAtomicPtr<T>], c: usize, i: usize) -> Option<&T> {
    let first = firsts.get(c)?.load(StdOrdering::Acquire);
    if first.is_null() {
        return None;
    }
    // SAFETY: `first` points to a live chunk (above) and the caller keeps
    // `i` within it.
    Some(unsafe { &*first.add(i) })
}

/// Numbers threads for the choice of their per-thread list.
static NEXT_THREAD: StdAtomicUsize = StdAtomicUsize::new(0);

thread_local! {
    static THREAD_NUMBER: usize = NEXT_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// What [`PhysMem::leaks`] found still allocated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeakReport {
    /// Physical addresses of table pages still allocated.
    pub tables: Vec<u64>,
    pub data_frames: u64,
    pub data_bytes: u64,
}

impl LeakReport {
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.data_frames == 0
    }
}

/// Simulated physical memory for one address space's page tables and data.
pub struct PhysMem {
    page_shift: u32,
    words_per_page: u64,
    pages_per_chunk_shift: u32,
    /// The first chunks, contiguous: a word there is found with one
    /// subtraction (see [`flat`]).
    flat: Option<flat::FlatWords>,
    /// Bytes of `flat` (0 without it), the bound the read path checks.
    flat_bytes: u64,
    /// The address of `flat`'s first word minus [`TABLE_ZONE_BASE`]
    /// (wrapping): the host address of the word at physical address `pa`
    /// in `flat` is `flat_biased + pa`, one addition off the entry's own
    /// address (see [`PhysMem::read_walk`]).
    flat_biased: usize,
    /// Owners of the chunks past `flat`, allocated one by one.
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    /// The first word of each created chunk, in `flat` or `chunks` (null
    /// until it is created): the read path past `flat` is one load here and
    /// one there, with no initialization state to check.
    chunk_words: Box<[StdAtomicPtr<AtomicU64>]>,
    metas: Box<[OnceLock<Box<[TableMeta]>>]>,
    /// The first meta of each created chunk of `metas` (null until then):
    /// [`PhysMem::meta`], on every entry write and table lock, is two loads.
    meta_firsts: Box<[StdAtomicPtr<TableMeta>]>,
    tables: Mutex<TableAlloc>,
    data: Mutex<DataAlloc>,
    pcps: Box<[Pcp]>,
    /// Heads of allocated data frames.
    heads: FrameBits,
    /// Heads of allocated frames larger than the base page.
    large_heads: FrameBits,
    /// Allocations since the injection rule was installed.
    allocations: AtomicU64,
    /// Table pages above the leaf level freed so far (see
    /// [`PhysMem::upper_table_frees`]).
    upper_frees: AtomicU64,
    /// Whether a rule is installed (read without the lock on every allocation).
    inject_on: AtomicBool,
    inject: Mutex<Option<FaultInjection>>,
}

impl PhysMem {
    /// Memory whose table pages (and base data pages) are `2^page_shift` bytes.
    pub fn new(page_shift: u32) -> PhysMem {
        Self::with_capacity(page_shift, MAX_TABLE_BYTES)
    }

    /// As [`PhysMem::new`] with room for at most `table_bytes` of tables (at
    /// least one chunk). Under loom every chunk is created up front.
    pub fn with_capacity(page_shift: u32, table_bytes: u64) -> PhysMem {
        assert!(
            (3..=CHUNK_SHIFT).contains(&page_shift),
            "a table page of 2^{page_shift} bytes does not fit an arena chunk"
        );
        let nchunks = table_bytes.div_ceil(CHUNK_BYTES).max(1) as usize;
        let pages_per_chunk = CHUNK_BYTES >> page_shift;
        let flat = flat::FlatWords::reserve(
            (nchunks as u64 * CHUNK_BYTES).min(MAX_FLAT_BYTES),
            CHUNK_BYTES,
        );
        let m = PhysMem {
            flat_bytes: flat.as_ref().map_or(0, |f| f.bytes()),
            flat_biased: flat.as_ref().map_or(0, |f| {
                (f.word_ptr(0) as usize).wrapping_sub(TABLE_ZONE_BASE as usize)
            }),
            flat,
            page_shift,
            words_per_page: (1u64 << page_shift) / 8,
            pages_per_chunk_shift: pages_per_chunk.trailing_zeros(),
            chunks: (0..nchunks).map(|_| OnceLock::new()).collect(),
            chunk_words: (0..nchunks)
                .map(|_| StdAtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            metas: (0..nchunks).map(|_| OnceLock::new()).collect(),
            meta_firsts: (0..nchunks)
                .map(|_| StdAtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            tables: Mutex::new(TableAlloc {
                next_slot: 0,
                free: Vec::new(),
                live: 0,
            }),
            data: Mutex::new(DataAlloc {
                next: DATA_ZONE_BASE,
                free: HashMap::new(),
                large: HashMap::new(),
                live_frames: 0,
                live_bytes: 0,
            }),
            pcps: (0..PCP_LISTS)
                .map(|_| Pcp {
                    list: SpinLock::new(PcpList {
                        free: Vec::new(),
                        live_frames: 0,
                    }),
                })
                .collect(),
            heads: FrameBits::new(),
            large_heads: FrameBits::new(),
            allocations: AtomicU64::new(0),
            upper_frees: AtomicU64::new(0),
            inject_on: AtomicBool::new(false),
            inject: Mutex::new(None),
        };
        if cfg!(loom) {
            for c in 0..nchunks {
                m.chunk_init(c);
            }
        }
        m
    }

    pub fn page_shift(&self) -> u32 {
        self.page_shift
    }

    /// Installs (or with `None` removes) a rule that makes chosen
    /// allocations fail. The rule's allocation count starts at 0.
    pub fn set_fault_injection(&self, rule: Option<FaultInjection>) {
        let mut g = lock(&self.inject);
        self.allocations.store(0, Ordering::Relaxed);
        self.inject_on.store(rule.is_some(), Ordering::Release);
        *g = rule;
    }

    #[inline]
    fn injected_failure(&self, kind: AllocKind) -> bool {
        // The fast path: no rule, no lock and no shared counter.
        if !self.inject_on.load(Ordering::Acquire) {
            return false;
        }
        let g = lock(&self.inject);
        let n = self.allocations.fetch_add(1, Ordering::Relaxed);
        match &*g {
            Some(rule) => rule(kind, n),
            None => false,
        }
    }

    /// This thread's list of free base pages.
    #[inline]
    fn pcp(&self) -> &Pcp {
        if PCP_LISTS == 1 {
            return &self.pcps[0];
        }
        &self.pcps[THREAD_NUMBER.with(|n| *n) % PCP_LISTS]
    }

    #[inline]
    fn bit_of(&self, pa: u64) -> u64 {
        (pa - DATA_ZONE_BASE) >> self.page_shift
    }

    fn chunk_init(&self, c: usize) -> &[AtomicU64] {
        let metas = self.metas[c].get_or_init(|| {
            (0..(1u64 << self.pages_per_chunk_shift))
                .map(|_| TableMeta::new())
                .collect()
        });
        self.meta_firsts[c].store(metas.as_ptr().cast_mut(), StdOrdering::Release);
        const CHUNK_WORDS: usize = (CHUNK_BYTES / 8) as usize;
        let first = match &self.flat {
            Some(f) if (c as u64) < self.flat_bytes / CHUNK_BYTES => f.word_ptr(c * CHUNK_WORDS),
            _ => self.chunks[c]
                .get_or_init(|| (0..CHUNK_WORDS).map(|_| AtomicU64::new(0)).collect())
                .as_ptr()
                .cast_mut(),
        };
        // Published after the chunk exists; readers that see the pointer
        // (Acquire) see the zeroed words.
        self.chunk_words[c].store(first, StdOrdering::Release);
        // SAFETY: `first` is the first of the CHUNK_WORDS words of chunk `c`,
        // in `self.flat` or in the box `self.chunks[c]` owns; neither is
        // freed or moved before `self` is dropped.
        unsafe { std::slice::from_raw_parts(first, CHUNK_WORDS) }
    }

    /// Allocates a zeroed table page for `level`.
    ///
    /// # Errors
    /// [`MemError::OutOfMemory`] when the arena is full or injection says so.
    pub fn alloc_table(&self, level: usize) -> Result<u64, MemError> {
        let kind = AllocKind::Table { level };
        if self.injected_failure(kind) {
            return Err(MemError::OutOfMemory(kind));
        }
        let slot = {
            let mut t = lock(&self.tables);
            let slot = match t.free.pop() {
                Some(s) => s,
                None => {
                    let s = t.next_slot;
                    if (s >> self.pages_per_chunk_shift) as usize >= self.chunks.len() {
                        return Err(MemError::OutOfMemory(kind));
                    }
                    t.next_slot += 1;
                    s
                }
            };
            t.live += 1;
            slot
        };
        let pa = TABLE_ZONE_BASE + (slot << self.page_shift);
        let words = self.page_words(slot);
        for w in words {
            w.store(0, Ordering::Relaxed);
        }
        let meta = self.meta_of_slot(slot);
        meta.present.store(0, Ordering::Relaxed);
        meta.level.store(level as u32, Ordering::Relaxed);
        meta.allocated.store(true, Ordering::Release);
        Ok(pa)
    }

    /// Returns a table page to the allocator. The caller guarantees that no
    /// entry links to it and no walker can still reach it.
    ///
    /// # Errors
    /// [`MemError::DoubleFree`] or [`MemError::NotAFrame`]; nothing changes.
    pub fn free_table(&self, pa: u64) -> Result<(), MemError> {
        let slot = self.slot_of(pa).ok_or(MemError::NotAFrame(pa))?;
        let meta = self.meta_of_slot(slot);
        if meta
            .allocated
            .compare_exchange(true, false, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return Err(MemError::DoubleFree(pa));
        }
        if meta.level() > 0 {
            self.upper_frees.fetch_add(1, Ordering::Relaxed);
        }
        let mut t = lock(&self.tables);
        t.free.push(slot);
        t.live -= 1;
        Ok(())
    }

    /// How many table pages of levels above 0 have been freed: while it
    /// stays the same, every such table a walk met is still a table of the
    /// level it was found at (what [`crate::table::WalkMemo`] relies on).
    #[inline]
    pub fn upper_table_frees(&self) -> u64 {
        self.upper_frees.load(Ordering::Relaxed)
    }

    fn slot_of(&self, pa: u64) -> Option<u64> {
        if pa < TABLE_ZONE_BASE || pa & ((1 << self.page_shift) - 1) != 0 {
            return None;
        }
        let slot = (pa - TABLE_ZONE_BASE) >> self.page_shift;
        let c = (slot >> self.pages_per_chunk_shift) as usize;
        let created = self
            .chunk_words
            .get(c)
            .is_some_and(|w| !w.load(StdOrdering::Acquire).is_null());
        created.then_some(slot)
    }

    fn page_words(&self, slot: u64) -> &[AtomicU64] {
        let c = (slot >> self.pages_per_chunk_shift) as usize;
        let chunk = self.chunk_init(c);
        let first =
            ((slot & ((1 << self.pages_per_chunk_shift) - 1)) * self.words_per_page) as usize;
        &chunk[first..first + self.words_per_page as usize]
    }

    fn meta_of_slot(&self, slot: u64) -> &TableMeta {
        let c = (slot >> self.pages_per_chunk_shift) as usize;
        let metas = match self.metas[c].get() {
            Some(m) => m,
            None => {
                self.chunk_init(c);
                self.metas[c].get().expect("initialized with its chunk")
            }
        };
        &metas[(slot & ((1 << self.pages_per_chunk_shift) - 1)) as usize]
    }

    /// The metadata (lock, present count) of the table page containing `pa`.
    ///
    /// # Panics
    /// If `pa` is not in the table zone: a bug in the caller.
    #[inline]
    pub fn meta(&self, pa: u64) -> &TableMeta {
        // The fast path of every entry write and table lock: no
        // initialization check beyond the chunk's presence.
        let found = pa.checked_sub(TABLE_ZONE_BASE).and_then(|off| {
            let i = ((off & (CHUNK_BYTES - 1)) >> self.page_shift) as usize;
            // SAFETY: a chunk has `CHUNK_BYTES >> page_shift` pages, one
            // meta each, so `i` is in bounds.
            unsafe { published(&self.meta_firsts, (off >> CHUNK_SHIFT) as usize, i) }
        });
        found.unwrap_or_else(|| panic!("{pa:#x} is not a table page"))
    }

    /// Whether `pa` lies in a table page that is currently allocated.
    pub fn is_live_table(&self, pa: u64) -> bool {
        let page = pa & !((1u64 << self.page_shift) - 1);
        self.slot_of(page)
            .is_some_and(|s| self.meta_of_slot(s).allocated.load(Ordering::Acquire))
    }

    #[inline]
    fn word(&self, pa: u64) -> Option<&AtomicU64> {
        // The word holding byte `pa`, as the chunk path below finds it.
        if let Some(addr) = self.flat_addr(pa & !7) {
            // SAFETY: `flat_addr` gives the 8-aligned word at offset `pa -
            // TABLE_ZONE_BASE` of `flat`, which lives as long as `self`.
            return Some(unsafe { &*addr });
        }
        let off = pa.wrapping_sub(TABLE_ZONE_BASE);
        // A chunk holds the words of its pages in address order.
        let i = ((off & (CHUNK_BYTES - 1)) >> 3) as usize;
        // SAFETY: a chunk holds `CHUNK_BYTES / 8` words, so the masked index
        // `i` is in bounds.
        unsafe { published(&self.chunk_words, (off >> CHUNK_SHIFT) as usize, i) }
    }

    /// Reads the 8-byte word at physical address `pa` (0 outside the arena,
    /// as an unbacked bus read would give nothing useful).
    #[inline]
    pub fn read(&self, pa: u64) -> u64 {
        self.word(pa).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// The word at `pa`, for a read and a write of the same entry.
    ///
    /// # Panics
    /// If `pa` is outside the table arena (a bug in the caller).
    #[inline]
    pub fn word_at(&self, pa: u64) -> &AtomicU64 {
        self.word(pa)
            .unwrap_or_else(|| panic!("access outside the table arena at {pa:#x}"))
    }

    /// [`PhysMem::read`] for a hardware walk: the word at an entry address
    /// `pa` (8-byte aligned) with the fewest steps between the previous
    /// entry's value and this load, which is the walk's critical path.
    #[inline(always)]
    pub fn read_walk(&self, pa: u64) -> u64 {
        if let Some(addr) = self.flat_addr(pa) {
            // SAFETY: `flat_addr` gives the word at offset `pa -
            // TABLE_ZONE_BASE` of `flat` (8-aligned for an 8-aligned `pa`),
            // which lives as long as `self`.
            return unsafe { &*addr }.load(Ordering::Acquire);
        }
        self.read_outside_flat(pa)
    }

    /// The host address of the word at `pa` if it lies in the contiguous
    /// part of the arena: one addition (see `flat_biased`).
    #[inline(always)]
    fn flat_addr(&self, pa: u64) -> Option<*const AtomicU64> {
        // Below the zone, the offset wraps past `flat_bytes`: one check.
        (pa.wrapping_sub(TABLE_ZONE_BASE) < self.flat_bytes)
            .then(|| self.flat_biased.wrapping_add(pa as usize) as *const AtomicU64)
    }

    /// [`PhysMem::read`] past the contiguous part of the arena: out of line,
    /// so that a walk's loop carries none of its work.
    #[cold]
    #[inline(never)]
    fn read_outside_flat(&self, pa: u64) -> u64 {
        self.read(pa)
    }

    /// Hints the host CPU to bring the word at `pa` into its caches (a
    /// software prefetch; nothing happens outside the contiguous part of
    /// the arena or on hosts without one). Changes nothing.
    #[inline(always)]
    pub fn prefetch(&self, pa: u64) {
        if let Some(addr) = self.flat_addr(pa) {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch reads nothing the program can see and
            // cannot fault; `addr` lies inside `flat` anyway.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    addr.cast(),
                );
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = addr;
        }
    }

    /// Writes the word at `pa`.
    ///
    /// # Panics
    /// If `pa` is outside the table arena (a bug in the caller).
    #[inline]
    pub fn write(&self, pa: u64, value: u64) {
        self.word(pa)
            .unwrap_or_else(|| panic!("write outside the table arena at {pa:#x}"))
            .store(value, Ordering::Release);
    }

    /// Compare-and-swap on the word at `pa`; returns the previous value on failure.
    ///
    /// # Errors
    /// The word's current value when it is not `current`.
    #[inline]
    pub fn compare_exchange(&self, pa: u64, current: u64, new: u64) -> Result<u64, u64> {
        self.word(pa)
            .unwrap_or_else(|| panic!("cas outside the table arena at {pa:#x}"))
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
    }

    /// Allocates a data frame of `size` bytes (a power of two, at least the
    /// base page), aligned to its size. Base pages come from this thread's
    /// list (see the module documentation).
    ///
    /// # Errors
    /// [`MemError::OutOfMemory`] when injection says so, or when the data
    /// zone (2^32 base pages) is exhausted.
    pub fn alloc_data(&self, size: u64) -> Result<u64, MemError> {
        debug_assert!(size.is_power_of_two() && size >= 1 << self.page_shift);
        let kind = AllocKind::Data { size };
        if self.injected_failure(kind) {
            return Err(MemError::OutOfMemory(kind));
        }
        if size == 1 << self.page_shift {
            // Linux: mm/page_alloc.c, rmqueue_pcplist
            let pa = {
                let mut l = self.pcp().list.lock();
                let pa = match l.free.pop() {
                    Some(pa) => pa,
                    None => {
                        self.pcp_refill(&mut l.free)
                            .ok_or(MemError::OutOfMemory(kind))?;
                        l.free.pop().expect("a refill brings a batch")
                    }
                };
                l.live_frames = l.live_frames.wrapping_add(1);
                pa
            };
            let was = self.heads.set(self.bit_of(pa));
            debug_assert!(!was, "a free frame {pa:#x} had its head bit set");
            return Ok(pa);
        }
        let mut d = lock(&self.data);
        let pa = match d.free.get_mut(&size).and_then(Vec::pop) {
            Some(pa) => pa,
            None => self
                .carve(&mut d, size)
                .ok_or(MemError::OutOfMemory(kind))?,
        };
        let bit = self.bit_of(pa);
        self.heads.set(bit);
        self.large_heads.set(bit);
        d.large.insert(pa, size);
        d.live_frames += 1;
        d.live_bytes += size;
        Ok(pa)
    }

    /// A fresh frame of `size` from the bump pointer; the frames skipped by
    /// the alignment are kept for smaller requests. `None` when the data
    /// zone is exhausted.
    fn carve(&self, d: &mut DataAlloc, size: u64) -> Option<u64> {
        let pa = d.next.checked_next_multiple_of(size)?;
        let end = pa.checked_add(size)?;
        if !FrameBits::holds(self.bit_of(end - 1)) {
            return None;
        }
        let mut gap = d.next;
        while gap < pa {
            let piece = 1u64 << gap.trailing_zeros().min((pa - gap).ilog2());
            d.free.entry(piece).or_default().push(gap);
            gap += piece;
        }
        d.next = end;
        Some(pa)
    }

    /// Fills an empty per-thread list with a batch of base pages: frames
    /// given back to the global allocator first, else a fresh aligned run.
    fn pcp_refill(&self, list: &mut Vec<u64>) -> Option<()> {
        let page = 1u64 << self.page_shift;
        let mut d = lock(&self.data);
        if let Some(free) = d.free.get_mut(&page).filter(|f| !f.is_empty()) {
            let take = free.len().min(PCP_BATCH);
            let at = free.len() - take;
            list.extend(free.drain(at..));
            return Some(());
        }
        let run = page * PCP_BATCH as u64;
        let base = self.carve(&mut d, run)?;
        // Popped from the end: hand out ascending addresses.
        list.extend((0..PCP_BATCH as u64).rev().map(|i| base + i * page));
        Some(())
    }

    /// Returns a data frame.
    ///
    /// # Errors
    /// [`MemError::DoubleFree`], [`MemError::WrongSize`] or
    /// [`MemError::NotAFrame`]; nothing changes.
    pub fn free_data(&self, pa: u64, size: u64) -> Result<(), MemError> {
        let page = 1u64 << self.page_shift;
        if pa < DATA_ZONE_BASE || pa & (page - 1) != 0 {
            return Err(MemError::NotAFrame(pa));
        }
        let bit = self.bit_of(pa);
        if size == page && !self.large_heads.test(bit) {
            // Linux: mm/page_alloc.c, free_frozen_page_commit (to the pcp list)
            if !self.heads.clear(bit) {
                return Err(MemError::DoubleFree(pa));
            }
            let mut l = self.pcp().list.lock();
            l.free.push(pa);
            l.live_frames = l.live_frames.wrapping_sub(1);
            if l.free.len() > PCP_HIGH {
                let at = l.free.len() - PCP_BATCH;
                let mut d = lock(&self.data);
                d.free.entry(page).or_default().extend(l.free.drain(at..));
            }
            return Ok(());
        }
        let mut d = lock(&self.data);
        if !self.heads.test(bit) {
            return Err(MemError::DoubleFree(pa));
        }
        let allocated = d.large.get(&pa).copied().unwrap_or(page);
        if allocated != size {
            return Err(MemError::WrongSize {
                pa,
                allocated,
                freed: size,
            });
        }
        self.heads.clear(bit);
        self.large_heads.clear(bit);
        d.large.remove(&pa);
        d.free.entry(size).or_default().push(pa);
        d.live_frames -= 1;
        d.live_bytes -= size;
        Ok(())
    }

    /// Table pages currently allocated.
    pub fn live_tables(&self) -> u64 {
        lock(&self.tables).live
    }

    /// Data frames and bytes currently allocated.
    pub fn live_data(&self) -> (u64, u64) {
        let (large_frames, large_bytes) = {
            let d = lock(&self.data);
            (d.live_frames, d.live_bytes)
        };
        let small = self
            .pcps
            .iter()
            .fold(0u64, |n, p| n.wrapping_add(p.list.lock().live_frames));
        (
            large_frames + small,
            large_bytes + (small << self.page_shift),
        )
    }

    /// Everything still allocated: after an address space is torn down, a
    /// non-empty report is a leak.
    pub fn leaks(&self) -> LeakReport {
        let next = lock(&self.tables).next_slot;
        let tables = (0..next)
            .filter(|&s| self.meta_of_slot(s).allocated.load(Ordering::Acquire))
            .map(|s| TABLE_ZONE_BASE + (s << self.page_shift))
            .collect();
        let (data_frames, data_bytes) = self.live_data();
        LeakReport {
            tables,
            data_frames,
            data_bytes,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding an allocator lock leaves consistent state (every
    // update is completed before the guard drops), so poisoning is ignored.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tables_are_zeroed_reused_and_double_frees_are_caught() {
        let m = PhysMem::with_capacity(12, 8 << 20);
        let a = m.alloc_table(0).unwrap();
        m.write(a + 8, 0xdead);
        assert_eq!(m.read(a + 8), 0xdead);
        m.free_table(a).unwrap();
        assert_eq!(m.free_table(a), Err(MemError::DoubleFree(a)));
        let b = m.alloc_table(1).unwrap();
        assert_eq!(b, a, "a freed table page is reused");
        assert_eq!(m.read(b + 8), 0, "and handed out zeroed");
        assert_eq!(m.meta(b + 16).level(), 1);
        assert_eq!(m.leaks().tables, vec![b]);
    }

    #[test]
    fn data_frames_are_aligned_and_checked() {
        let m = PhysMem::new(12);
        let small = m.alloc_data(4096).unwrap();
        let huge = m.alloc_data(2 << 20).unwrap();
        assert_eq!(huge % (2 << 20), 0);
        assert_eq!(
            m.free_data(huge, 4096),
            Err(MemError::WrongSize {
                pa: huge,
                allocated: 2 << 20,
                freed: 4096
            })
        );
        m.free_data(huge, 2 << 20).unwrap();
        assert_eq!(m.free_data(huge, 2 << 20), Err(MemError::DoubleFree(huge)));
        // The alignment gap before the huge frame serves small requests.
        let again = m.alloc_data(4096).unwrap();
        assert!(again > small && again < huge);
        m.free_data(small, 4096).unwrap();
        m.free_data(again, 4096).unwrap();
        assert!(m.leaks().is_empty());
    }

    #[test]
    fn injected_failures_fail_only_what_they_name() {
        let m = PhysMem::new(12);
        m.set_fault_injection(Some(Box::new(|k, _| {
            matches!(k, AllocKind::Table { level: 1 })
        })));
        assert!(m.alloc_table(0).is_ok());
        assert_eq!(
            m.alloc_table(1),
            Err(MemError::OutOfMemory(AllocKind::Table { level: 1 }))
        );
        assert_eq!(m.live_tables(), 1);
    }

    #[test]
    fn injection_counts_allocations_from_the_rule_installation() {
        let m = PhysMem::new(12);
        for _ in 0..5 {
            m.alloc_data(4096).unwrap();
        }
        m.set_fault_injection(Some(Box::new(|_, n| n == 1)));
        assert!(m.alloc_data(4096).is_ok());
        assert!(
            m.alloc_table(0).is_err(),
            "the second allocation since install"
        );
        assert!(m.alloc_data(4096).is_ok());
        m.set_fault_injection(None);
        assert_eq!(m.live_data(), (7, 7 * 4096));
    }

    #[test]
    fn base_pages_move_between_threads_without_loss_or_duplication() {
        use std::collections::HashSet;
        let m = PhysMem::new(12);
        let n = 3 * PCP_HIGH;
        // Two threads allocate at once: every frame handed out once.
        let (a, b) = std::thread::scope(|sc| {
            let ha = sc.spawn(|| {
                (0..n)
                    .map(|_| m.alloc_data(4096).unwrap())
                    .collect::<Vec<_>>()
            });
            let hb = sc.spawn(|| {
                (0..n)
                    .map(|_| m.alloc_data(4096).unwrap())
                    .collect::<Vec<_>>()
            });
            (ha.join().unwrap(), hb.join().unwrap())
        });
        let all: HashSet<u64> = a.iter().chain(&b).copied().collect();
        assert_eq!(all.len(), 2 * n);
        assert!(all.iter().all(|pa| pa % 4096 == 0 && *pa >= DATA_ZONE_BASE));
        assert_eq!(m.live_data(), (2 * n as u64, 2 * n as u64 * 4096));
        // Thread B frees A's frames: its list overflows and gives batches back.
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for pa in &a {
                    m.free_data(*pa, 4096).unwrap();
                }
            });
        });
        assert_eq!(m.live_data(), (n as u64, n as u64 * 4096));
        // A frame freed elsewhere is still caught when freed twice.
        assert_eq!(m.free_data(a[0], 4096), Err(MemError::DoubleFree(a[0])));
        // A large frame freed as a base page is a size error, and changes nothing.
        let huge = m.alloc_data(2 << 20).unwrap();
        assert!(!all.contains(&huge));
        assert!(matches!(
            m.free_data(huge, 4096),
            Err(MemError::WrongSize { .. })
        ));
        m.free_data(huge, 2 << 20).unwrap();
        // Frames given back are handed out again before fresh ones.
        let again: HashSet<u64> = (0..n).map(|_| m.alloc_data(4096).unwrap()).collect();
        assert!(
            again.iter().all(|pa| !b.contains(pa)),
            "B's frames are still live"
        );
        assert!(
            again.iter().filter(|pa| a.contains(pa)).count() >= PCP_BATCH,
            "freed frames are reused"
        );
        for pa in again.iter().chain(&b) {
            m.free_data(*pa, 4096).unwrap();
        }
        assert!(m.leaks().is_empty());
    }

    #[test]
    fn reads_outside_the_arena_are_zero() {
        let m = PhysMem::with_capacity(16, 1);
        assert_eq!(m.read(0), 0);
        assert_eq!(m.read(TABLE_ZONE_BASE + (1 << 40)), 0);
        assert!(!m.is_live_table(TABLE_ZONE_BASE));
    }
}
