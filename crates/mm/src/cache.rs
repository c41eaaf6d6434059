//! A simulated page cache: file objects and shmem objects with per-page
//! state.
//!
//! A file starts either wholly cached (every page is a hit; its frame is
//! created on first use) or cold (every page misses until read in). Pages
//! evicted later are cold again. Shmem pages exist once touched (a shmem
//! read of a hole allocates: Linux `shmem_fault` has no zero page).
//!
//! ## Invariants
//! - Each cached page owns one data frame of the base page size, freed when
//!   the page is evicted or the object dropped (its last VMA went away and
//!   the TLBs were flushed: objects leave through `Deferred`).
//! - Lock order: a table lock may be held when the object's lock is taken,
//!   never the reverse.

use crate::error::Errno;
use pt::sync::{Mutex, MutexGuard};
use pt::PhysMem;
use std::collections::HashMap;
use std::sync::Arc;

/// What backs an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// A regular file (writeback, dirty tracking: Linux writenotify).
    File,
    /// tmpfs / shared anonymous memory (no writeback, no swap here).
    Shmem,
}

/// State of one page of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Cached {
        pa: u64,
        dirty: bool,
    },
    /// Evicted: the next use is a miss (a major fault).
    Evicted,
}

/// One file or shmem object.
pub struct MemObject {
    pub kind: ObjectKind,
    /// Whether pages never seen start in the page cache.
    initially_cached: bool,
    mem: Arc<PhysMem>,
    pages: Mutex<HashMap<u64, Slot>>,
}

impl std::fmt::Debug for MemObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemObject")
            .field("kind", &self.kind)
            .field("initially_cached", &self.initially_cached)
            .finish()
    }
}

/// The outcome of a lookup that may read the page in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lookup {
    pub pa: u64,
    /// The page had to be read in (Linux `VM_FAULT_MAJOR`).
    pub major: bool,
}

impl MemObject {
    pub(crate) fn new(kind: ObjectKind, initially_cached: bool, mem: Arc<PhysMem>) -> MemObject {
        MemObject {
            kind,
            initially_cached,
            mem,
            pages: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<u64, Slot>> {
        self.pages.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The frame of page `idx` if it is in the cache, without reading it in
    /// (Linux `filemap_map_pages` maps only such pages).
    pub(crate) fn cached(&self, pages: &mut HashMap<u64, Slot>, idx: u64) -> Option<u64> {
        match pages.get(&idx) {
            Some(Slot::Cached { pa, .. }) => Some(*pa),
            Some(Slot::Evicted) => None,
            None if self.initially_cached && self.kind == ObjectKind::File => {
                let pa = self.mem.alloc_data(1 << self.mem.page_shift()).ok()?;
                pages.insert(idx, Slot::Cached { pa, dirty: false });
                Some(pa)
            }
            None => None,
        }
    }

    /// The frame of page `idx`, reading it in (and `readaround` pages
    /// around it, Linux `do_sync_mmap_readahead`'s read-around) on a miss.
    /// A shmem hole is allocated (a minor fault).
    ///
    /// # Errors
    /// [`Errno::NoMem`] when no frame can be had.
    pub(crate) fn get(
        &self,
        pages: &mut HashMap<u64, Slot>,
        idx: u64,
        readaround: u64,
        limit: u64,
    ) -> Result<Lookup, Errno> {
        if let Some(pa) = self.cached(pages, idx) {
            return Ok(Lookup { pa, major: false });
        }
        let page = 1u64 << self.mem.page_shift();
        let pa = self.mem.alloc_data(page)?;
        pages.insert(idx, Slot::Cached { pa, dirty: false });
        if self.kind == ObjectKind::Shmem {
            return Ok(Lookup { pa, major: false });
        }
        // Read-around: a window of `readaround` pages centred on the miss.
        // Not verified against a kernel trace: Linux also adapts the window
        // to mmap_miss and sequential hints.
        let start = idx.saturating_sub(readaround / 2);
        for i in start..(start + readaround).min(limit) {
            if i != idx && self.cached(pages, i).is_none() {
                if let Ok(pa) = self.mem.alloc_data(page) {
                    pages.insert(i, Slot::Cached { pa, dirty: false });
                }
            }
        }
        Ok(Lookup { pa, major: true })
    }

    /// Reads pages `[first, first + n)` into the cache (MADV_WILLNEED).
    pub(crate) fn readahead(&self, first: u64, n: u64) {
        if self.kind != ObjectKind::File {
            return;
        }
        let mut pages = self.lock();
        let page = 1u64 << self.mem.page_shift();
        for i in first..first + n {
            if self.cached(&mut pages, i).is_none() {
                match self.mem.alloc_data(page) {
                    Ok(pa) => {
                        pages.insert(i, Slot::Cached { pa, dirty: false });
                    }
                    Err(_) => return,
                }
            }
        }
    }

    /// Marks page `idx` dirty (or clean).
    pub(crate) fn set_dirty(pages: &mut HashMap<u64, Slot>, idx: u64, d: bool) {
        if let Some(Slot::Cached { dirty, .. }) = pages.get_mut(&idx) {
            *dirty = d;
        }
    }

    /// Whether page `idx` is dirty in the cache.
    pub(crate) fn is_dirty(pages: &HashMap<u64, Slot>, idx: u64) -> bool {
        matches!(pages.get(&idx), Some(Slot::Cached { dirty: true, .. }))
    }

    /// Evicts page `idx` (it must be unmapped everywhere) and returns its
    /// frame, which the caller frees after the TLB flush.
    pub(crate) fn evict(pages: &mut HashMap<u64, Slot>, idx: u64) -> Option<u64> {
        match pages.insert(idx, Slot::Evicted) {
            Some(Slot::Cached { pa, .. }) => Some(pa),
            _ => None,
        }
    }

    /// Frames the object holds (for the leak check).
    pub(crate) fn frames(&self) -> u64 {
        self.lock()
            .values()
            .filter(|s| matches!(s, Slot::Cached { .. }))
            .count() as u64
    }
}

impl Drop for MemObject {
    fn drop(&mut self) {
        let page = 1u64 << self.mem.page_shift();
        let pages = std::mem::take(&mut *self.lock());
        for s in pages.into_values() {
            if let Slot::Cached { pa, .. } = s {
                let _ = self.mem.free_data(pa, page);
            }
        }
    }
}
