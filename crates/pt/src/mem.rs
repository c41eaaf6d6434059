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
//!   that out-of-memory paths can be tested.

use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Mutex, MutexGuard, Ordering};
use std::collections::HashMap;
use std::sync::OnceLock;
use thiserror::Error;

/// First physical address of the table zone (4 GiB).
pub const TABLE_ZONE_BASE: u64 = 1 << 32;
/// First physical address of the data zone (1 TiB).
pub const DATA_ZONE_BASE: u64 = 1 << 40;
/// Bytes of table memory one arena chunk holds.
const CHUNK_BYTES: u64 = 2 << 20;
/// Most table memory an arena can hold: 64 GiB, room for the page tables of
/// far more than this machine's memory.
const MAX_TABLE_BYTES: u64 = 64 << 30;

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
/// kinds) of `kind` fails.
pub type FaultInjection = Box<dyn Fn(AllocKind, u64) -> bool + Send + Sync>;

/// The bookkeeping beside a table page.
pub struct TableMeta {
    /// The table's own lock (Linux: the split PTE / PMD lock in `ptdesc`).
    pub lock: Mutex<()>,
    /// Present (software) entries in the table.
    pub present: AtomicU32,
    allocated: AtomicBool,
    level: AtomicU32,
}

impl TableMeta {
    fn new() -> TableMeta {
        TableMeta {
            lock: Mutex::new(()),
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
    pub fn lock(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct TableAlloc {
    next_slot: u64,
    free: Vec<u64>,
    live: u64,
}

struct DataAlloc {
    /// Next unallocated byte of the data zone (bump pointer).
    next: u64,
    free: HashMap<u64, Vec<u64>>,
    /// One bit per base page of the data zone: set at the head of every
    /// allocated frame.
    heads: Vec<u64>,
    /// Sizes of allocated frames larger than the base page.
    large: HashMap<u64, u64>,
    live_frames: u64,
    live_bytes: u64,
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
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    metas: Box<[OnceLock<Box<[TableMeta]>>]>,
    tables: Mutex<TableAlloc>,
    data: Mutex<DataAlloc>,
    allocations: AtomicU64,
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
        let chunk_bytes = CHUNK_BYTES.max(1 << page_shift);
        let nchunks = table_bytes.div_ceil(chunk_bytes).max(1) as usize;
        let pages_per_chunk = chunk_bytes >> page_shift;
        let m = PhysMem {
            page_shift,
            words_per_page: (1u64 << page_shift) / 8,
            pages_per_chunk_shift: pages_per_chunk.trailing_zeros(),
            chunks: (0..nchunks).map(|_| OnceLock::new()).collect(),
            metas: (0..nchunks).map(|_| OnceLock::new()).collect(),
            tables: Mutex::new(TableAlloc {
                next_slot: 0,
                free: Vec::new(),
                live: 0,
            }),
            data: Mutex::new(DataAlloc {
                next: DATA_ZONE_BASE,
                free: HashMap::new(),
                heads: Vec::new(),
                large: HashMap::new(),
                live_frames: 0,
                live_bytes: 0,
            }),
            allocations: AtomicU64::new(0),
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

    /// Installs (or with `None` removes) a rule that makes chosen allocations fail.
    pub fn set_fault_injection(&self, rule: Option<FaultInjection>) {
        *lock(&self.inject) = rule;
    }

    fn injected_failure(&self, kind: AllocKind) -> bool {
        let n = self.allocations.fetch_add(1, Ordering::Relaxed);
        match &*lock(&self.inject) {
            Some(rule) => rule(kind, n),
            None => false,
        }
    }

    fn chunk_init(&self, c: usize) -> &[AtomicU64] {
        self.metas[c].get_or_init(|| {
            (0..(1u64 << self.pages_per_chunk_shift))
                .map(|_| TableMeta::new())
                .collect()
        });
        self.chunks[c].get_or_init(|| {
            (0..(self.words_per_page << self.pages_per_chunk_shift))
                .map(|_| AtomicU64::new(0))
                .collect()
        })
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
        let mut t = lock(&self.tables);
        t.free.push(slot);
        t.live -= 1;
        Ok(())
    }

    fn slot_of(&self, pa: u64) -> Option<u64> {
        if pa < TABLE_ZONE_BASE || pa & ((1 << self.page_shift) - 1) != 0 {
            return None;
        }
        let slot = (pa - TABLE_ZONE_BASE) >> self.page_shift;
        let c = (slot >> self.pages_per_chunk_shift) as usize;
        (c < self.chunks.len() && self.chunks[c].get().is_some()).then_some(slot)
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
        self.chunk_init(c);
        let metas = self.metas[c].get().expect("initialized with its chunk");
        &metas[(slot & ((1 << self.pages_per_chunk_shift) - 1)) as usize]
    }

    /// The metadata (lock, present count) of the table page containing `pa`.
    ///
    /// # Panics
    /// If `pa` is not in the table zone: a bug in the caller.
    pub fn meta(&self, pa: u64) -> &TableMeta {
        let page = pa & !((1u64 << self.page_shift) - 1);
        let slot = self
            .slot_of(page)
            .unwrap_or_else(|| panic!("{pa:#x} is not a table page"));
        self.meta_of_slot(slot)
    }

    /// Whether `pa` lies in a table page that is currently allocated.
    pub fn is_live_table(&self, pa: u64) -> bool {
        let page = pa & !((1u64 << self.page_shift) - 1);
        self.slot_of(page)
            .is_some_and(|s| self.meta_of_slot(s).allocated.load(Ordering::Acquire))
    }

    #[inline]
    fn word(&self, pa: u64) -> Option<&AtomicU64> {
        let off = pa.checked_sub(TABLE_ZONE_BASE)?;
        let slot = off >> self.page_shift;
        let c = (slot >> self.pages_per_chunk_shift) as usize;
        let chunk = self.chunks.get(c)?.get()?;
        let idx = ((slot & ((1 << self.pages_per_chunk_shift) - 1)) * self.words_per_page)
            + ((off & ((1 << self.page_shift) - 1)) >> 3);
        chunk.get(idx as usize)
    }

    /// Reads the 8-byte word at physical address `pa` (0 outside the arena,
    /// as an unbacked bus read would give nothing useful).
    #[inline]
    pub fn read(&self, pa: u64) -> u64 {
        self.word(pa).map_or(0, |w| w.load(Ordering::Acquire))
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
    /// base page), aligned to its size.
    ///
    /// # Errors
    /// [`MemError::OutOfMemory`] when injection says so.
    pub fn alloc_data(&self, size: u64) -> Result<u64, MemError> {
        debug_assert!(size.is_power_of_two() && size >= 1 << self.page_shift);
        let kind = AllocKind::Data { size };
        if self.injected_failure(kind) {
            return Err(MemError::OutOfMemory(kind));
        }
        let mut d = lock(&self.data);
        let pa = match d.free.get_mut(&size).and_then(Vec::pop) {
            Some(pa) => pa,
            None => {
                let pa = d.next.next_multiple_of(size);
                // Frames skipped by the alignment are kept for smaller requests.
                let mut gap = d.next;
                while gap < pa {
                    let piece = 1u64 << gap.trailing_zeros().min((pa - gap).ilog2());
                    d.free.entry(piece).or_default().push(gap);
                    gap += piece;
                }
                d.next = pa + size;
                pa
            }
        };
        let bit = (pa - DATA_ZONE_BASE) >> self.page_shift;
        let word = (bit / 64) as usize;
        if d.heads.len() <= word {
            d.heads.resize(word + 1, 0);
        }
        d.heads[word] |= 1 << (bit % 64);
        if size > 1 << self.page_shift {
            d.large.insert(pa, size);
        }
        d.live_frames += 1;
        d.live_bytes += size;
        Ok(pa)
    }

    /// Returns a data frame.
    ///
    /// # Errors
    /// [`MemError::DoubleFree`], [`MemError::WrongSize`] or
    /// [`MemError::NotAFrame`]; nothing changes.
    pub fn free_data(&self, pa: u64, size: u64) -> Result<(), MemError> {
        if pa < DATA_ZONE_BASE || pa & ((1 << self.page_shift) - 1) != 0 {
            return Err(MemError::NotAFrame(pa));
        }
        let mut d = lock(&self.data);
        let bit = (pa - DATA_ZONE_BASE) >> self.page_shift;
        let word = (bit / 64) as usize;
        if d.heads.get(word).is_none_or(|w| w & (1 << (bit % 64)) == 0) {
            return Err(MemError::DoubleFree(pa));
        }
        let allocated = d.large.get(&pa).copied().unwrap_or(1 << self.page_shift);
        if allocated != size {
            return Err(MemError::WrongSize {
                pa,
                allocated,
                freed: size,
            });
        }
        d.heads[word] &= !(1 << (bit % 64));
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
        let d = lock(&self.data);
        (d.live_frames, d.live_bytes)
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
    fn reads_outside_the_arena_are_zero() {
        let m = PhysMem::with_capacity(16, 1);
        assert_eq!(m.read(0), 0);
        assert_eq!(m.read(TABLE_ZONE_BASE + (1 << 40)), 0);
        assert!(!m.is_live_table(TABLE_ZONE_BASE));
    }
}
