//! Simulated physical memory: the arena that holds every table page, the
//! metadata beside each, and the frame allocators for table pages and data
//! frames.
//!
//! Physical addresses are split into two zones so that a walker can turn an
//! entry's output address into an arena slot with one subtraction:
//!
//! - the table zone starts at [`TABLE_ZONE_BASE`]; table page `n` of the arena
//!   lives at `TABLE_ZONE_BASE + n * table_bytes`;
//! - the data zone starts at [`DATA_ZONE_BASE`]; data frames are numbers only
//!   (their contents are never simulated), aligned to their size.
//!
//! One concept per file, each with the invariants it keeps at its top:
//!
//! - [`arena`]: the table pages' words, by physical address (with [`flat`],
//!   its contiguous part);
//! - [`compact`]: PTE tables whose host cost follows their entries, in
//!   the compact zone from [`COMPACT_ZONE_BASE`];
//! - [`ptdesc`]: [`TableMeta`], the lock and present count beside each
//!   table page (Linux's `ptdesc`);
//! - [`tables`]: the table-page allocator;
//! - [`data`]: the data-frame allocator and its frame bitmap;
//! - [`pcp`]: the per-thread lists of free base pages;
//! - [`inject`]: fault injection, for out-of-memory paths;
//! - [`leaks`]: the [`LeakReport`].
//!
//! This file holds what they share: the zones, [`PhysMem`] with its
//! construction, and the errors.

mod arena;
mod compact;
mod data;
mod flat;
mod inject;
mod leaks;
mod pcp;
mod ptdesc;
mod tables;

pub use compact::INLINE as COMPACT_INLINE;
pub use compact::PAIRS as COMPACT_PAIRS;
pub use flat::{set_arena_advisor, ArenaAdvisor};
pub use inject::FaultInjection;
pub use leaks::LeakReport;
pub use pcp::{PCP_BATCH, PCP_HIGH, PCP_LISTS};
pub use ptdesc::TableMeta;

use crate::sync::{AtomicBool, AtomicU64, Mutex, MutexGuard, SpinLock};
use data::{DataAlloc, FrameBits};
use pcp::{Pcp, PcpList};
use std::collections::HashMap;
use std::sync::atomic::AtomicPtr as StdAtomicPtr;
use std::sync::OnceLock;
use tables::TableAlloc;
use thiserror::Error;

/// First physical address of the table zone (4 GiB).
pub const TABLE_ZONE_BASE: u64 = 1 << 32;
/// First physical address of the compact zone (512 GiB), where PTE tables
/// live in compact form (see [`compact`]).
pub const COMPACT_ZONE_BASE: u64 = 1 << 39;
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
    metas: Box<[OnceLock<Box<[ptdesc::PaddedMeta]>>]>,
    /// The first meta of each created chunk of `metas` (null until then):
    /// [`PhysMem::meta`], on every entry write and table lock, is two loads.
    meta_firsts: Box<[StdAtomicPtr<ptdesc::PaddedMeta>]>,
    /// The compact zone (PTE tables), if this memory has one.
    compact: Option<compact::CompactZone>,
    /// Bytes of physical address space of `compact` (0 without it).
    compact_bytes: u64,
    /// The host address of `compact`'s first slot (0 without it; never
    /// read then, as `compact_bytes` is 0).
    compact_first: usize,
    /// The host address of `compact`'s first bias word (0 without it).
    compact_biases: usize,
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
        Self::with_flat_limit(page_shift, table_bytes, MAX_FLAT_BYTES)
    }

    /// As [`PhysMem::new`], with PTE tables in compact form (`compact`,
    /// the default where the table page allows it) or always full pages
    /// (the plain form the compact one must read as).
    pub fn with_compact(page_shift: u32, compact: bool) -> PhysMem {
        let mut m = Self::new(page_shift);
        if !compact {
            m.compact = None;
            m.compact_bytes = 0;
        }
        m
    }

    /// Whether PTE tables are allocated in compact form.
    pub fn has_compact(&self) -> bool {
        self.compact.is_some()
    }

    /// As [`PhysMem::with_capacity`] with at most `flat_max` bytes of the
    /// arena in its contiguous part (0: none, every chunk allocated apart,
    /// the plain path the contiguous part shortcuts).
    fn with_flat_limit(page_shift: u32, table_bytes: u64, flat_max: u64) -> PhysMem {
        assert!(
            (3..=CHUNK_SHIFT).contains(&page_shift),
            "a table page of 2^{page_shift} bytes does not fit an arena chunk"
        );
        let nchunks = table_bytes.div_ceil(CHUNK_BYTES).max(1) as usize;
        let pages_per_chunk = CHUNK_BYTES >> page_shift;
        let flat =
            flat::FlatWords::reserve((nchunks as u64 * CHUNK_BYTES).min(flat_max), CHUNK_BYTES);
        let compact = compact::CompactZone::reserve(page_shift);
        let m = PhysMem {
            compact_bytes: compact.as_ref().map_or(0, |c| c.bytes()),
            compact_first: compact.as_ref().map_or(0, |c| c.first() as usize),
            compact_biases: compact.as_ref().map_or(0, |c| c.first_bias() as usize),
            compact,
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
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding an allocator lock leaves consistent state (every
    // update is completed before the guard drops), so poisoning is ignored.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::Ordering;

    #[test]
    fn tables_are_zeroed_reused_and_double_frees_are_caught() {
        // Levels above 0: full arena pages (PTE tables are compact ones,
        // tested in `compact_tables_read_as_full_pages`).
        let m = PhysMem::with_capacity(12, 8 << 20);
        let a = m.alloc_table(2).unwrap();
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

    /// The contiguous part of the arena (an acceleration, see `pt::accel`)
    /// against the plain path it shortcuts: two memories, one with every
    /// chunk allocated apart, take the same allocations, writes,
    /// compare-and-swaps and frees, spread over more than one chunk and
    /// partly past the contiguous part of the first; every word then reads
    /// the same through `read`, `read_walk` and the walk's per-level reads, and the tables' metadata
    /// and the leak reports agree.
    #[test]
    fn the_contiguous_arena_reads_as_the_chunked_one() {
        let chunk_pages = CHUNK_BYTES >> 12;
        // Three chunks, one of them contiguous in `fast`; none in `plain`.
        let fast = PhysMem::with_flat_limit(12, 3 * CHUNK_BYTES, CHUNK_BYTES);
        let plain = PhysMem::with_flat_limit(12, 3 * CHUNK_BYTES, 0);
        assert_eq!((fast.flat_bytes, plain.flat_bytes), (CHUNK_BYTES, 0));
        let mems = [&fast, &plain];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut live = Vec::new();
        for i in 0..(chunk_pages + chunk_pages / 2) {
            let pas = mems.map(|m| m.alloc_table((i % 3) as usize).unwrap());
            assert_eq!(pas[0], pas[1]);
            live.push(pas[0]);
            let r = next();
            let pa = live[(r >> 32) as usize % live.len()] + (r & 0x1ff) * 8;
            let v = next();
            for m in mems {
                m.write(pa, v);
                m.meta(pa).present.fetch_add(1, Ordering::Relaxed);
            }
            let cas = mems.map(|m| m.compare_exchange(pa, v ^ (r & 1), v.rotate_left(7)));
            assert_eq!(cas[0], cas[1]);
            if r % 5 == 0 {
                let pa = live.swap_remove((r >> 8) as usize % live.len());
                assert_eq!(fast.free_table(pa), plain.free_table(pa));
            }
        }
        assert!(fast.live_tables() > chunk_pages, "past the contiguous part");
        for &t in &live {
            for w in 0..512 {
                let pa = t + w * 8;
                let v = fast.read_walk(pa);
                assert_eq!(v, plain.read_walk(pa), "{pa:#x}");
                assert_eq!(v, fast.read(pa));
                assert_eq!(v, plain.read(pa));
                // The walk's per-level reads answer for any address.
                for m in mems {
                    assert_eq!(v, m.read_walk_pte(pa), "{pa:#x}");
                    assert_eq!(v, m.read_walk_upper(pa), "{pa:#x}");
                }
            }
            let present = mems.map(|m| m.meta(t).present.load(Ordering::Relaxed));
            assert_eq!(present[0], present[1]);
            assert_eq!(fast.meta(t).level(), plain.meta(t).level());
        }
        for pa in [0, TABLE_ZONE_BASE - 8, TABLE_ZONE_BASE + 3 * CHUNK_BYTES] {
            for m in mems {
                assert_eq!(m.read_walk(pa), 0);
                assert_eq!(m.read_walk_pte(pa), 0);
                assert_eq!(m.read_walk_upper(pa), 0);
            }
        }
        assert_eq!(fast.leaks(), plain.leaks());
    }
}
