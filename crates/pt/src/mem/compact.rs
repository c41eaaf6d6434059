//! Compact PTE tables: a leaf table whose host cost follows the entries it
//! holds, not the table page it stands for.
//!
//! A PTE table is allocated in the compact zone (physical addresses from
//! [`COMPACT_ZONE_BASE`]): its slot is a [`CompactSlot`] of about 100
//! bytes holding the table's metadata and up to [`INLINE`] (index, word)
//! pairs. A ninth distinct word index takes an overflow block of [`MORE`]
//! pairs more (160 bytes, from a pool of its own); when that is full too,
//! the table is promoted: a full table page is taken from a pool of large
//! zeroed host reservations (1 GiB, backed by huge pages where the host
//! allows), the pairs are copied into it, and from then on every word of
//! the table lives there. The overflow step keeps the cost of a table
//! following its entries whatever order they were written in: pages an
//! allocator scatters give tables a few entries more or less than their
//! mean (about 13% of the tables of 5.8 random pages each hold more than
//! eight), and a page for each of those cost as much as all the slots. The table keeps its physical address for its whole life,
//! so entries that point to it, walk caches and memos never change: a
//! walker still reads a hardware word by physical address, and only the
//! way that address becomes a host word differs (an index search, or one
//! more load than the contiguous arena).
//!
//! ## Invariants
//!
//! - The slots are one zeroed reservation (address space until touched);
//!   an all-zero [`CompactSlot`] is a free, empty, unpromoted table, and a
//!   slot never moves: references into it live as long as the owner.
//! - A pair is assigned at most once per table life: its index goes from
//!   0 (free) to `word index + 1` while its word is 0, before the word is
//!   written, and stays until the table is freed. Pairs are assigned in
//!   order (the inline ones, then the overflow block's), so a search stops
//!   at the first free one. A reader that finds the index therefore reads
//!   that entry's word (0 or its value), never another entry's.
//! - `full` is null (compact), an overflow block's address tagged
//!   [`OVERFLOW`] (compact, with [`MORE`] pairs more), either of those
//!   tagged [`PROMOTING`] (being promoted by the table's lock holder: the
//!   pairs are still the table's words), or the host address of the
//!   table's full page (the pairs are stale). It goes null -> overflow ->
//!   promoting -> page (a step may be skipped) once per table life, and is
//!   reset only when the table is freed, when no walker can reach it.
//! - An overflow block is published (zeroed) before its first pair is
//!   assigned, and lives until its table is freed, even after a promotion
//!   (a reader that saw it may still be searching it): a promoted table's
//!   block waits in the pool's `retired` map, keyed by slot, until then.
//!   Freed blocks are zeroed and reused.
//! - `biases[s]` is 0 unless table `s` is promoted; then it is the page's
//!   host address minus the table's physical address (wrapping), so the
//!   host address of the word at `pa` is `biases[s] + pa`: the read path of
//!   a promoted table is one load more than the contiguous arena. It is set
//!   after `full` is published (Release) and cleared before the table is
//!   freed; a bias that would be 0 is not set (the slow path then serves).
//! - A hardware update (compare-and-swap of A/D bits) that lands on a pair
//!   while a promotion copies it is redone on the page: the promoter marks
//!   PROMOTING before it copies, and the walker checks `full` after its
//!   swap (both sequentially consistent), so either the copy sees the new
//!   word or the walker sees the mark and repeats the swap on the page.
//! - Writers (set, clear, promote) hold the table's lock, as for a full
//!   page (the table module's contract).
//! - A pool page is zeroed when its table is freed, so pages handed out are
//!   zero; blocks are never returned to the host before the owner drops:
//!   in steady state a promotion costs no host page fault.
//! - Pool blocks are large zeroed reservations ([`POOL_BLOCK`], address
//!   space until a page is first written, shown to the arena advisor as the
//!   contiguous arena is): the host backs the promoted pages of dense
//!   tables with huge pages, so a walk over many of them does not miss the
//!   host's TLB on every table (2 MiB blocks were never 2 MiB aligned, and
//!   no huge page could back them).

use super::flat::FlatWords;
use super::{lock, MemError, PhysMem, TableMeta, COMPACT_ZONE_BASE, DATA_ZONE_BASE};
use crate::sync::{AtomicU64, Mutex, Ordering};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU16, Ordering as StdOrdering};

/// Pairs a compact table holds in its slot.
pub const INLINE: usize = 8;
/// Pairs an overflow block adds to a compact table that needs more than
/// [`INLINE`]: the tables of scattered writes hold a Poisson-like number
/// of entries, and 24 in all keeps all but about 1 in 10^8 of the tables
/// of 5.8 entries each compact.
pub const MORE: usize = 16;
/// Pairs a compact table holds before it is promoted to a full page.
pub const PAIRS: usize = INLINE + MORE;
/// Tag bit of `full`: the lock holder copies the pairs into a new page.
const PROMOTING: usize = 1;
/// Tag bit of `full`: the rest is the table's overflow block.
const OVERFLOW: usize = 2;
/// Bytes of one block of overflow pairs reserved at once (taken block by
/// block, so only what is used is touched).
const OVERFLOW_RESERVE: u64 = 64 << 20;
/// Most compact tables one memory can hold: 2^25, the PTE tables of 64 TiB
/// mapped with 4 KiB pages (the slots reserve about 3.5 GB of address
/// space, touched as tables are allocated).
const MAX_SLOTS: u64 = 1 << 25;
/// Bytes of one pool block of full pages: address space reserved at once
/// (halved while the host refuses it, down to [`POOL_BLOCK_MIN`]), taken
/// page by page.
const POOL_BLOCK: u64 = 1 << 30;
/// The smallest pool block asked for.
const POOL_BLOCK_MIN: u64 = 2 << 20;
/// Largest table page whose word indices fit a pair's 16-bit index.
pub(super) const MAX_PAGE_SHIFT: u32 = 16;

/// One compact table: its full page once promoted, its metadata, its pairs.
#[repr(C)]
pub(super) struct CompactSlot {
    full: AtomicPtr<AtomicU64>,
    pub(super) meta: TableMeta,
    idx: [AtomicU16; INLINE],
    words: [AtomicU64; INLINE],
}

/// The pairs a compact table holds past its slot's (all-zero: free).
#[repr(C)]
struct Overflow {
    idx: [AtomicU16; MORE],
    words: [AtomicU64; MORE],
}

/// Where overflow blocks come from: bump allocation in large zeroed
/// reservations, and the zeroed blocks given back.
struct OverflowPool {
    blocks: Vec<FlatWords>,
    /// Bytes of the last reservation handed out.
    used: u64,
    /// Bytes handed out over every reservation (in use or in `free`).
    taken: u64,
    /// Host addresses of zeroed blocks given back.
    free: Vec<usize>,
    /// The blocks of promoted tables, by slot: freed with their table.
    retired: std::collections::HashMap<u64, usize>,
}

/// What `full` says about a compact table (see the invariants).
#[derive(Clone, Copy)]
enum Full {
    /// Its pairs are its words; `more` is its overflow block, if any.
    Compact {
        more: Option<*const Overflow>,
        promoting: bool,
    },
    /// Its words are in the page.
    Page(*const AtomicU64),
}

impl Full {
    #[inline(always)]
    fn of(p: *mut AtomicU64) -> Full {
        let a = p as usize;
        if a != 0 && a & (PROMOTING | OVERFLOW) == 0 {
            return Full::Page(p.cast_const());
        }
        Full::Compact {
            more: (a & OVERFLOW != 0).then_some((a & !(PROMOTING | OVERFLOW)) as *const Overflow),
            promoting: a & PROMOTING != 0,
        }
    }
}

struct SlotAlloc {
    next: u64,
    free: Vec<u64>,
    live: u64,
}

struct Pool {
    blocks: Vec<FlatWords>,
    /// Pages of the last block handed out.
    used: u64,
    /// Pages handed out over every block (each is in use or in `free`).
    taken: u64,
    /// Host addresses of zeroed pages given back.
    free: Vec<usize>,
}

/// The compact zone: its slots and the pool promoted tables take pages from.
pub(super) struct CompactZone {
    slots: NonNull<CompactSlot>,
    /// One word per slot: see the invariants.
    biases: FlatWords,
    nslots: u64,
    alloc: Mutex<SlotAlloc>,
    pool: Mutex<Pool>,
    overflow: Mutex<OverflowPool>,
    page_shift: u32,
}

// SAFETY: the slots hold only atomics (and the spinlock of their meta),
// shared through `&` only; the owner frees the reservation once, in drop.
unsafe impl Send for CompactZone {}
// SAFETY: as above.
unsafe impl Sync for CompactZone {}

impl CompactZone {
    /// The zone for tables of `2^page_shift` bytes, or `None` under loom,
    /// for pages too large for a pair's index, or when the host refuses
    /// even a small reservation.
    pub(super) fn reserve(page_shift: u32) -> Option<CompactZone> {
        if cfg!(loom) || page_shift > MAX_PAGE_SHIFT {
            return None;
        }
        let mut n = MAX_SLOTS.min((DATA_ZONE_BASE - COMPACT_ZONE_BASE) >> page_shift);
        while n >= 1024 {
            let layout = Layout::array::<CompactSlot>(n as usize).ok()?;
            // SAFETY: non-zero size. All-zero bytes are a valid slot: null
            // pointer, zero atomics, an unlocked spinlock (a false bool).
            let raw = unsafe { alloc_zeroed(layout) }.cast::<CompactSlot>();
            if let Some(slots) = NonNull::new(raw) {
                let Some(biases) = FlatWords::reserve(n * 8, n * 8) else {
                    // SAFETY: allocated just above with this layout.
                    unsafe { dealloc(raw.cast(), layout) };
                    n /= 2;
                    continue;
                };
                return Some(CompactZone {
                    biases,
                    slots,
                    nslots: n,
                    alloc: Mutex::new(SlotAlloc {
                        next: 0,
                        free: Vec::new(),
                        live: 0,
                    }),
                    pool: Mutex::new(Pool {
                        blocks: Vec::new(),
                        used: 0,
                        taken: 0,
                        free: Vec::new(),
                    }),
                    overflow: Mutex::new(OverflowPool {
                        blocks: Vec::new(),
                        used: 0,
                        taken: 0,
                        free: Vec::new(),
                        retired: std::collections::HashMap::new(),
                    }),
                    page_shift,
                });
            }
            n /= 2;
        }
        None
    }

    /// Bytes of physical address space the zone covers.
    pub(super) fn bytes(&self) -> u64 {
        self.nslots << self.page_shift
    }

    /// Host address of slot 0 (the read path indexes it directly).
    pub(super) fn first(&self) -> *const CompactSlot {
        self.slots.as_ptr()
    }

    /// Host address of the first bias word (the read path indexes it).
    pub(super) fn first_bias(&self) -> *const AtomicU64 {
        self.biases.word_ptr(0)
    }

    fn bias(&self, s: u64) -> &AtomicU64 {
        assert!(s < self.nslots);
        // SAFETY: one word per slot, in bounds (checked), living as long as self.
        unsafe { &*self.biases.word_ptr(s as usize) }
    }

    fn slot(&self, s: u64) -> &CompactSlot {
        assert!(s < self.nslots);
        // SAFETY: in bounds (checked); the reservation lives as long as self.
        unsafe { &*self.slots.as_ptr().add(s as usize) }
    }

    /// Compact tables handed out and not freed.
    pub(super) fn live(&self) -> u64 {
        lock(&self.alloc).live
    }

    /// Physical addresses of the allocated compact tables.
    pub(super) fn allocated(&self) -> Vec<u64> {
        let next = lock(&self.alloc).next;
        (0..next)
            .filter(|&s| self.slot(s).meta.allocated.load(Ordering::Acquire))
            .map(|s| COMPACT_ZONE_BASE + (s << self.page_shift))
            .collect()
    }

    /// Host bytes of the pages promoted tables took from the pool (in use
    /// or free in it; the rest of a block is address space only).
    pub(super) fn pool_bytes(&self) -> u64 {
        lock(&self.pool).taken << self.page_shift
    }

    /// Host bytes of the overflow blocks compact tables took (in use or
    /// free in their pool).
    pub(super) fn overflow_bytes(&self) -> u64 {
        lock(&self.overflow).taken
    }

    /// A zeroed overflow block.
    fn overflow_take(&self) -> Option<*const Overflow> {
        let size = size_of::<Overflow>() as u64;
        let mut p = lock(&self.overflow);
        if let Some(a) = p.free.pop() {
            return Some(a as *const Overflow);
        }
        let full = p.blocks.last().is_none_or(|b| p.used + size > b.bytes());
        if full {
            p.blocks
                .push(FlatWords::reserve(OVERFLOW_RESERVE, POOL_BLOCK_MIN)?);
            p.used = 0;
        }
        let at = (p.used / 8) as usize;
        p.used += size;
        p.taken += size;
        Some(
            p.blocks
                .last()
                .expect("pushed above")
                .word_ptr(at)
                .cast_const()
                .cast(),
        )
    }

    /// Zeroes `block` and keeps it for another table. Only once no reader
    /// can reach it (its table is being freed).
    fn overflow_give(&self, block: *const Overflow) {
        // SAFETY: a block handed out by `overflow_take`, alive as long as self.
        let b = unsafe { &*block };
        for k in 0..MORE {
            b.idx[k].store(0, StdOrdering::Relaxed);
            b.words[k].store(0, Ordering::Relaxed);
        }
        lock(&self.overflow).free.push(block as usize);
    }

    fn pool_take(&self) -> Option<*const AtomicU64> {
        let page = 1u64 << self.page_shift;
        let mut p = lock(&self.pool);
        if let Some(a) = p.free.pop() {
            return Some(a as *const AtomicU64);
        }
        let full = p.blocks.last().is_none_or(|b| p.used == b.bytes() / page);
        if full {
            p.blocks
                .push(FlatWords::reserve(POOL_BLOCK, POOL_BLOCK_MIN)?);
            p.used = 0;
        }
        let words = (p.used * page / 8) as usize;
        p.used += 1;
        p.taken += 1;
        Some(p.blocks.last().expect("pushed above").word_ptr(words))
    }
}

impl Drop for CompactZone {
    fn drop(&mut self) {
        let layout = Layout::array::<CompactSlot>(self.nslots as usize).expect("as reserved");
        // SAFETY: allocated in `reserve` with this layout, freed once.
        unsafe { dealloc(self.slots.as_ptr().cast(), layout) }
    }
}

impl CompactSlot {
    #[inline(always)]
    fn state(&self) -> Full {
        Full::of(self.full.load(StdOrdering::Acquire))
    }

    /// The table's full page, if promoted.
    #[inline(always)]
    fn page(&self) -> Option<*const AtomicU64> {
        match self.state() {
            Full::Page(p) => Some(p),
            Full::Compact { .. } => None,
        }
    }

    /// The pair holding word `i`, if assigned (`more`: the overflow block
    /// `full` named when the caller read it).
    #[inline]
    fn pair_in(&self, more: Option<*const Overflow>, i: usize) -> Option<&AtomicU64> {
        let key = i as u16 + 1;
        for k in 0..INLINE {
            match self.idx[k].load(StdOrdering::Acquire) {
                0 => return None,
                x if x == key => return Some(&self.words[k]),
                _ => {}
            }
        }
        // SAFETY: a published overflow block lives until the table is
        // freed (the invariants), and so does `self`.
        let more = unsafe { &*more? };
        for k in 0..MORE {
            match more.idx[k].load(StdOrdering::Acquire) {
                0 => return None,
                x if x == key => return Some(&more.words[k]),
                _ => {}
            }
        }
        None
    }

    /// Word `i` as it is now (0 when never written).
    #[inline(always)]
    pub(super) fn read(&self, i: usize) -> u64 {
        match self.state() {
            // SAFETY: a published page has a word per index of the table.
            Full::Page(p) => unsafe { &*p.add(i) }.load(Ordering::Acquire),
            Full::Compact { more, .. } => self
                .pair_in(more, i)
                .map_or(0, |w| w.load(Ordering::Acquire)),
        }
    }

    /// Word `i`, if it has storage (a pair or the page).
    #[inline]
    fn existing(&self, i: usize) -> Option<&AtomicU64> {
        match self.state() {
            // SAFETY: as in `read`; the page lives until the table is freed.
            Full::Page(p) => Some(unsafe { &*p.add(i) }),
            Full::Compact { more, .. } => self.pair_in(more, i),
        }
    }

    /// The assigned pairs, in assignment order: (word index, word).
    fn pairs(&self, more: Option<*const Overflow>) -> impl Iterator<Item = (usize, &AtomicU64)> {
        // SAFETY: as in `pair_in`.
        let more = more.map(|m| unsafe { &*m });
        let inline = (0..INLINE).map(|k| (&self.idx[k], &self.words[k]));
        let over = more
            .into_iter()
            .flat_map(|m| (0..MORE).map(move |k| (&m.idx[k], &m.words[k])));
        inline
            .chain(over)
            .map(|(i, w)| (i.load(StdOrdering::Acquire) as usize, w))
            .take_while(|(key, _)| *key != 0)
            .map(|(key, w)| (key - 1, w))
    }
}

impl PhysMem {
    /// The compact table containing `pa` and the word index of `pa` in it.
    #[inline(always)]
    pub(super) fn compact_at(&self, pa: u64) -> Option<(&CompactSlot, usize)> {
        let off = pa.wrapping_sub(COMPACT_ZONE_BASE);
        if off >= self.compact_bytes {
            return None;
        }
        let s = (off >> self.page_shift) as usize;
        let i = ((off & ((1 << self.page_shift) - 1)) >> 3) as usize;
        // SAFETY: `off < compact_bytes` puts slot `s` inside the zone's
        // reservation, which lives as long as `self`.
        Some((
            unsafe { &*(self.compact_first as *const CompactSlot).add(s) },
            i,
        ))
    }

    /// Word `i` of `slot` with storage made for it (a free pair, else the
    /// promoted page). The caller holds the table's lock.
    pub(super) fn compact_word_mut<'a>(&'a self, slot: &'a CompactSlot, i: usize) -> &'a AtomicU64 {
        let more = match slot.state() {
            // SAFETY: as in `CompactSlot::read`.
            Full::Page(p) => return unsafe { &*p.add(i) },
            Full::Compact { more, .. } => more,
        };
        let key = i as u16 + 1;
        let claim = |idx: &[AtomicU16], words: &'a [AtomicU64]| -> Option<&'a AtomicU64> {
            for (k, x) in idx.iter().enumerate() {
                match x.load(StdOrdering::Acquire) {
                    0 => {
                        // A free pair's word is 0: assigning the index first
                        // keeps every reader's view an entry's own word.
                        x.store(key, StdOrdering::Release);
                        return Some(&words[k]);
                    }
                    x if x == key => return Some(&words[k]),
                    _ => {}
                }
            }
            None
        };
        if let Some(w) = claim(&slot.idx, &slot.words) {
            return w;
        }
        let more = match more {
            Some(m) => m,
            None => self.overflow(slot),
        };
        // SAFETY: as in `CompactSlot::pair_in`.
        let m = unsafe { &*more };
        if let Some(w) = claim(&m.idx, &m.words) {
            return w;
        }
        let p = self.promote(slot);
        // SAFETY: as in `CompactSlot::read`.
        unsafe { &*p.add(i) }
    }

    /// Gives `slot` a zeroed overflow block, published before any pair in
    /// it is assigned. The caller holds the table's lock. Promotes the
    /// table instead when the host refuses memory for the block.
    #[cold]
    #[inline(never)]
    fn overflow(&self, slot: &CompactSlot) -> *const Overflow {
        let zone = self.compact.as_ref().expect("a compact slot has a zone");
        let block = zone
            .overflow_take()
            .unwrap_or_else(|| panic!("out of host memory for a compact table's overflow pairs"));
        slot.full.store(
            (block as usize | OVERFLOW) as *mut AtomicU64,
            StdOrdering::Release,
        );
        block
    }

    /// Copies `slot`'s pairs into a full page and publishes it. The caller
    /// holds the table's lock.
    #[cold]
    #[inline(never)]
    fn promote(&self, slot: &CompactSlot) -> *const AtomicU64 {
        let zone = self.compact.as_ref().expect("a compact slot has a zone");
        let page = zone
            .pool_take()
            .unwrap_or_else(|| panic!("out of host memory promoting a compact table"));
        let before = slot.full.load(StdOrdering::Acquire);
        let Full::Compact { more, .. } = Full::of(before) else {
            unreachable!("a promoted table is not promoted again")
        };
        slot.full.store(
            (before as usize | PROMOTING) as *mut AtomicU64,
            StdOrdering::SeqCst,
        );
        for (i, w) in slot.pairs(more) {
            // SAFETY: `i` is a word index of the table (assigned by
            // `compact_word_mut`), inside the page.
            unsafe { &*page.add(i) }.store(w.load(Ordering::SeqCst), Ordering::SeqCst);
        }
        slot.full.store(page.cast_mut(), StdOrdering::SeqCst);
        let s = (std::ptr::from_ref(slot) as usize - self.compact_first) / size_of::<CompactSlot>();
        if let Some(m) = more {
            // Readers that saw the block may still search it: it goes with
            // the table.
            lock(&zone.overflow).retired.insert(s as u64, m as usize);
        }
        let table = COMPACT_ZONE_BASE + ((s as u64) << self.page_shift);
        let bias = (page as u64).wrapping_sub(table);
        if bias != 0 {
            zone.bias(s as u64).store(bias, Ordering::Release);
        }
        page
    }

    /// The word at `pa` in a promoted compact table, through its bias, or
    /// `None` (not in the zone, or not promoted).
    #[inline(always)]
    pub(super) fn promoted_word(&self, pa: u64) -> Option<&AtomicU64> {
        let off = pa.wrapping_sub(COMPACT_ZONE_BASE);
        if off >= self.compact_bytes {
            return None;
        }
        // SAFETY: `off < compact_bytes` puts the slot inside the zone, which
        // has one bias word per slot and lives as long as `self`.
        let b = unsafe {
            &*(self.compact_biases as *const AtomicU64).add((off >> self.page_shift) as usize)
        }
        .load(Ordering::Acquire);
        // SAFETY: a non-zero bias plus an address of its table is the host
        // address of that word in the table's page (the invariants), which
        // lives until the table is freed.
        (b != 0).then(|| unsafe { &*(b.wrapping_add(pa & !7) as *const AtomicU64) })
    }

    /// Hints the host CPU to fetch the bias word of the compact table
    /// holding `pa` (what [`PhysMem::promoted_word`] reads first); nothing
    /// outside the compact zone. Changes nothing.
    #[inline(always)]
    pub fn prefetch_bias(&self, pa: u64) {
        let off = pa.wrapping_sub(COMPACT_ZONE_BASE);
        if off >= self.compact_bytes {
            return;
        }
        let at = self
            .compact_biases
            .wrapping_add(((off >> self.page_shift) as usize) * size_of::<AtomicU64>());
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch reads nothing the program can see and cannot
        // fault; `at` is the slot's bias word, inside the zone's biases.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                at as *const i8,
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = at;
    }

    /// `PhysMem::compare_exchange` on a compact table's word (see the
    /// module's invariants for the race with a promotion).
    pub(super) fn compact_cas(
        &self,
        slot: &CompactSlot,
        i: usize,
        current: u64,
        new: u64,
    ) -> Result<u64, u64> {
        let cas =
            |w: &AtomicU64| w.compare_exchange(current, new, Ordering::SeqCst, Ordering::SeqCst);
        let more = match slot.state() {
            // SAFETY: as in `CompactSlot::read`.
            Full::Page(p) => return cas(unsafe { &*p.add(i) }),
            Full::Compact { more, .. } => more,
        };
        let w = match slot.pair_in(more, i) {
            Some(w) => w,
            None if current == 0 => return cas(self.compact_word_mut(slot, i)),
            None => return Err(0),
        };
        let r = cas(w);
        let not_promoting = matches!(
            Full::of(slot.full.load(StdOrdering::SeqCst)),
            Full::Compact {
                promoting: false,
                ..
            }
        );
        if r.is_err() || not_promoting {
            return r;
        }
        // A promotion began: the copy may have missed this swap, so repeat
        // it on the page (it fails if the copy saw it; the walker retries).
        let p = loop {
            if let Some(p) = slot.page() {
                break p;
            }
            std::hint::spin_loop();
        };
        // SAFETY: as in `CompactSlot::read`.
        cas(unsafe { &*p.add(i) })
    }

    /// Sets word `i` of `slot` to `value` and returns what it was; a zero
    /// written where nothing is stored stores nothing. The caller holds
    /// the table's lock.
    #[inline]
    pub(super) fn compact_replace(&self, slot: &CompactSlot, i: usize, value: u64) -> u64 {
        let w = if value == 0 {
            match slot.existing(i) {
                Some(w) => w,
                None => return 0,
            }
        } else {
            self.compact_word_mut(slot, i)
        };
        let old = w.load(Ordering::Acquire);
        w.store(value, Ordering::Release);
        old
    }

    /// A zeroed compact PTE table, or `None` when the zone is full (the
    /// caller falls back to a full arena page).
    pub(super) fn alloc_compact(&self) -> Option<u64> {
        let zone = self.compact.as_ref()?;
        let s = {
            let mut a = lock(&zone.alloc);
            let s = match a.free.pop() {
                Some(s) => s,
                None if a.next < zone.nslots => {
                    a.next += 1;
                    a.next - 1
                }
                None => return None,
            };
            a.live += 1;
            s
        };
        let slot = zone.slot(s);
        debug_assert!(slot.full.load(StdOrdering::Relaxed).is_null());
        for k in 0..INLINE {
            slot.idx[k].store(0, StdOrdering::Relaxed);
            slot.words[k].store(0, Ordering::Relaxed);
        }
        slot.meta.present.store(0, Ordering::Relaxed);
        slot.meta.level.store(0, Ordering::Relaxed);
        slot.meta.allocated.store(true, Ordering::Release);
        Some(COMPACT_ZONE_BASE + (s << self.page_shift))
    }

    /// Frees the compact table at `pa` (its page, if promoted, is zeroed
    /// and kept in the pool). Same contract as `free_table`.
    pub(super) fn free_compact(&self, slot: &CompactSlot, pa: u64) -> Result<(), MemError> {
        let zone = self.compact.as_ref().expect("a compact slot has a zone");
        if pa & ((1 << self.page_shift) - 1) != 0 {
            return Err(MemError::NotAFrame(pa));
        }
        if slot
            .meta
            .allocated
            .compare_exchange(true, false, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return Err(MemError::DoubleFree(pa));
        }
        let s = (pa - COMPACT_ZONE_BASE) >> self.page_shift;
        match slot.state() {
            Full::Page(p) => {
                zone.bias(s).store(0, Ordering::Release);
                for i in 0..(1usize << self.page_shift) / 8 {
                    // SAFETY: as in `CompactSlot::read`.
                    unsafe { &*p.add(i) }.store(0, Ordering::Relaxed);
                }
                lock(&zone.pool).free.push(p as usize);
                let retired = lock(&zone.overflow).retired.remove(&s);
                if let Some(m) = retired {
                    zone.overflow_give(m as *const Overflow);
                }
            }
            Full::Compact { more, .. } => {
                if let Some(m) = more {
                    zone.overflow_give(m);
                }
            }
        }
        slot.full.store(std::ptr::null_mut(), StdOrdering::Release);
        let mut a = lock(&zone.alloc);
        a.free.push(s);
        a.live -= 1;
        Ok(())
    }

    /// The first address from `pa` (8-aligned) up to `end` (exclusive, in
    /// the same table page) whose word may be non-zero: in an unpromoted
    /// compact table, the lowest stored non-zero word at or after `pa`, or
    /// `end`; anywhere else `pa` itself (nothing is skipped). For scans that
    /// visit only present entries (zap), so a table's cost follows its
    /// entries.
    #[inline]
    pub fn next_stored(&self, pa: u64, end: u64) -> u64 {
        if self.promoted_word(pa).is_some() {
            return pa;
        }
        let Some((slot, i)) = self.compact_at(pa) else {
            return pa;
        };
        let more = match slot.state() {
            Full::Page(_) => return pa,
            Full::Compact { more, .. } => more,
        };
        let table = pa & !((1u64 << self.page_shift) - 1);
        let mut best = end;
        for (j, w) in slot.pairs(more) {
            let at = table + ((j as u64) << 3);
            if j >= i && at < best && w.load(Ordering::Acquire) != 0 {
                best = at;
            }
        }
        best
    }

    /// Host bytes the compact zone holds for promoted tables (pool blocks).
    pub fn compact_pool_bytes(&self) -> u64 {
        self.compact.as_ref().map_or(0, CompactZone::pool_bytes)
    }

    /// Host bytes the compact zone holds for overflow pairs (blocks of
    /// [`MORE`] pairs, in use or free for reuse).
    pub fn compact_overflow_bytes(&self) -> u64 {
        self.compact.as_ref().map_or(0, CompactZone::overflow_bytes)
    }
}
