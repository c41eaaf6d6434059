//! A simulated page cache: file objects and shmem objects with per-page
//! state.
//!
//! A file starts either wholly cached (every page is a hit; its frame is
//! created on first use, as a base-page folio) or cold (every page misses
//! until read in: [`crate::readahead`] decides how much is read and in
//! which folio sizes). Pages evicted later are cold again. Shmem pages exist
//! once touched (a shmem read of a hole allocates: Linux `shmem_fault` has
//! no zero page).
//!
//! ## Invariants
//! - Each cached page belongs to one folio, naturally aligned in the file
//!   (its head index is a multiple of its size), and every page of a folio
//!   is cached with the same [`CacheFolio`].
//! - A folio of less than the PMD size owns one data frame of the base page
//!   size per page; a PMD-sized folio (`block`) owns one contiguous frame
//!   of the PMD size, so a PMD entry can map it: it is freed whole, when the
//!   object is dropped or a hole covers it, and never evicted page by page;
//!   a hole that cuts it (a shmem object's `punch_hole`) splits it first,
//!   and its pieces own a frame per page from then on.
//! - Shmem pages exist once touched; a shmem object on a tmpfs with a
//!   `huge=` option (`ShmemHuge`) may take a PMD-sized folio at a fault.
//! - Frames are freed when the page is evicted or the object dropped (its
//!   last VMA went away and the TLBs were flushed: objects leave through
//!   `Deferred`).
//! - The read-ahead mark (Linux `PG_readahead`) is kept on the head page of
//!   a folio only.
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

/// The `huge=` option of the tmpfs a shmem object lives on (Linux
/// `sbinfo->huge`): when a fault allocates a PMD-sized folio. A memfd or a
/// shared anonymous mapping lives on the kernel's internal mount, whose
/// policy is `shmem_enabled` (`MmConfig::shmem_enabled`, the host's by
/// default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ShmemHuge {
    #[default]
    Never,
    Always,
    /// As `Always` where the folio lies within the file's size, else as
    /// `Advise`.
    WithinSize,
    /// As `Always` in a VMA with `MADV_HUGEPAGE`.
    Advise,
}

/// The folio a cached page belongs to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheFolio {
    /// log2 of the folio's pages.
    pub order: u8,
    /// One contiguous frame for the whole folio (PMD-sized folios).
    pub block: bool,
    /// Linux `PG_readahead` (on the head page): a fault that finds this
    /// folio starts the next asynchronous read-ahead.
    pub readahead: bool,
    /// A shmem page (on the head page: its folio) written to a swap device
    /// with synchronous I/O, which freed it from memory: the fault on it
    /// reads it back, a major fault. The model keeps its frame.
    pub swapped: bool,
}

/// State of one page of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Cached {
        pa: u64,
        dirty: bool,
        folio: CacheFolio,
    },
    /// Evicted: the next use is a miss (a major fault).
    Evicted,
}

/// One file or shmem object.
pub struct MemObject {
    pub kind: ObjectKind,
    /// A shmem object's tmpfs `huge=` option (`Never` for files; for an
    /// object on the internal mount, the mount's when it was made).
    pub(crate) huge: ShmemHuge,
    /// Anonymous shmem (MAP_SHARED|MAP_ANONYMOUS; Linux
    /// `vma_is_anon_shmem`), whose PMD-sized folios the per-size policy
    /// decides too.
    pub(crate) anon_shmem: bool,
    /// Whether pages never seen start in the page cache.
    initially_cached: bool,
    pub(crate) mem: Arc<PhysMem>,
    pages: Mutex<HashMap<u64, Slot>>,
    /// Pages in the file (Linux `i_size`), if known: read-ahead stops there.
    size_pages: std::sync::OnceLock<u64>,
    /// The read-ahead state of the open file (Linux `file->f_ra`).
    pub(crate) ra: Mutex<crate::readahead::RaState>,
    /// Pages of a file read in from its backing store so far (folios the
    /// read-ahead added, in pages). Changed only under the pages lock, so
    /// [`MemObject::get`] can tell what one lookup read.
    read_in: std::sync::atomic::AtomicU64,
    /// Of those, the pages read in PMD-sized folios (`CacheFolio::block`):
    /// a fault waits for the whole folio's read, not for its own page's
    /// (see [`Lookup::read_pmd`]). Changed with `read_in`.
    read_in_pmd: std::sync::atomic::AtomicU64,
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
    /// Pages the lookup's read-ahead read in from the backing store: the
    /// window of a miss (`do_sync_mmap_readahead`) or the next window a
    /// marked folio started (`do_async_mmap_readahead`); 0 for a plain hit.
    pub read: u64,
    /// Of `read`, the pages read in PMD-sized folios. Linux marks a folio
    /// uptodate and unlocks it when its last block is read
    /// (`folio_end_read`), and `filemap_fault` waits on the folio's lock
    /// (`lock_folio_maybe_drop_mmap`): a fault on a page of a 2 MiB folio
    /// waits for all 2 MiB, one on a base-page folio for its own request.
    pub read_pmd: u64,
    /// A hit on a folio carrying the read-ahead mark: `filemap_fault` drops
    /// the mmap lock to read on (`do_async_mmap_readahead`) and returns
    /// VM_FAULT_RETRY without VM_FAULT_MAJOR. How the retry is counted is
    /// the caller's: a user fault under the VMA lock retries under the
    /// mmap lock without FAULT_FLAG_TRIED (minor), MADV_POPULATE_* with it
    /// (major, see `space::populate`).
    pub retry: bool,
}

impl Slot {
    /// A clean page of a base-page folio.
    pub(crate) fn cached(pa: u64) -> Slot {
        Slot::Cached {
            pa,
            dirty: false,
            folio: CacheFolio::default(),
        }
    }
}

impl MemObject {
    pub(crate) fn new(kind: ObjectKind, initially_cached: bool, mem: Arc<PhysMem>) -> MemObject {
        MemObject {
            kind,
            huge: ShmemHuge::Never,
            anon_shmem: false,
            initially_cached,
            mem,
            pages: Mutex::new(HashMap::new()),
            size_pages: std::sync::OnceLock::new(),
            ra: Mutex::new(crate::readahead::RaState::default()),
            read_in: std::sync::atomic::AtomicU64::new(0),
            read_in_pmd: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Pages read in from the backing store so far.
    fn read_in(&self) -> u64 {
        self.read_in.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Of those, pages read in PMD-sized folios.
    fn read_in_pmd(&self) -> u64 {
        self.read_in_pmd.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The object with its size in pages (a file as large as its mapping).
    pub(crate) fn sized(self, pages: u64) -> MemObject {
        let _ = self.size_pages.set(pages);
        self
    }

    /// The shmem object with its tmpfs `huge=` option.
    pub(crate) fn with_huge(mut self, huge: ShmemHuge) -> MemObject {
        self.huge = huge;
        self
    }

    /// The object as anonymous shmem.
    pub(crate) fn anon_shmem(mut self) -> MemObject {
        self.anon_shmem = true;
        self
    }

    /// Pages in the file, if known.
    pub(crate) fn size_pages(&self) -> Option<u64> {
        self.size_pages.get().copied()
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
                pages.insert(idx, Slot::cached(pa));
                Some(pa)
            }
            None => None,
        }
    }

    /// The folio of page `idx` if it is cached (after [`MemObject::cached`]).
    pub(crate) fn folio_of(pages: &HashMap<u64, Slot>, idx: u64) -> Option<CacheFolio> {
        match pages.get(&idx) {
            Some(Slot::Cached { folio, .. }) => Some(*folio),
            _ => None,
        }
    }

    /// The frame of page `idx`, reading it in on a miss with the read-ahead
    /// that `ra` asks for (Linux `filemap_fault`: `do_sync_mmap_readahead`
    /// on a miss, `do_async_mmap_readahead` on a hit of a marked folio). A
    /// shmem hole is allocated (a minor fault).
    ///
    /// # Errors
    /// [`Errno::NoMem`] when no frame can be had.
    pub(crate) fn get(
        &self,
        pages: &mut HashMap<u64, Slot>,
        idx: u64,
        ra: &crate::readahead::RaRequest,
    ) -> Result<Lookup, Errno> {
        // Under the pages lock nothing else reads in, so the difference is
        // this lookup's.
        let before = self.read_in();
        let before_pmd = self.read_in_pmd();
        if let Some(pa) = self.cached(pages, idx) {
            let retry =
                self.kind == ObjectKind::File && self.async_mmap_readahead(pages, idx, ra)?;
            return Ok(Lookup {
                pa,
                major: false,
                read: self.read_in() - before,
                read_pmd: self.read_in_pmd() - before_pmd,
                retry,
            });
        }
        if self.kind == ObjectKind::Shmem {
            let pa = self.mem.alloc_data(1 << self.mem.page_shift())?;
            pages.insert(idx, Slot::cached(pa));
            return Ok(Lookup {
                pa,
                major: false,
                read: 0,
                read_pmd: 0,
                retry: false,
            });
        }
        self.sync_mmap_readahead(pages, idx, ra)?;
        match self.cached(pages, idx) {
            Some(pa) => Ok(Lookup {
                pa,
                major: true,
                read: self.read_in() - before,
                read_pmd: self.read_in_pmd() - before_pmd,
                retry: false,
            }),
            None => Err(Errno::NoMem("no frame for a page-cache page")),
        }
    }

    /// Adds a folio of `1 << order` pages at `index` (naturally aligned,
    /// every page absent), marked for read-ahead if `mark`. `Ok(false)` if a
    /// page is already there (Linux `filemap_add_folio` fails with EEXIST).
    ///
    /// # Errors
    /// [`Errno::NoMem`] when no frame can be had.
    pub(crate) fn add_folio(
        &self,
        pages: &mut HashMap<u64, Slot>,
        index: u64,
        order: u8,
        mark: bool,
        pmd_order: u8,
    ) -> Result<bool, Errno> {
        let n = 1u64 << order;
        if (index..index + n).any(|i| matches!(pages.get(&i), Some(Slot::Cached { .. }))) {
            return Ok(false);
        }
        let page = 1u64 << self.mem.page_shift();
        let block = order >= pmd_order && order > 0;
        let folio = CacheFolio {
            order,
            block,
            ..CacheFolio::default()
        };
        let mut frames = Vec::with_capacity(if block { 1 } else { n as usize });
        if block {
            frames.push(self.mem.alloc_data(page << order)?);
        } else {
            for _ in 0..n {
                match self.mem.alloc_data(page) {
                    Ok(pa) => frames.push(pa),
                    Err(e) => {
                        for pa in frames {
                            let _ = self.mem.free_data(pa, page);
                        }
                        return Err(e.into());
                    }
                }
            }
        }
        for i in 0..n {
            let pa = if block {
                frames[0] + i * page
            } else {
                frames[i as usize]
            };
            let folio = CacheFolio {
                readahead: mark && i == 0,
                ..folio
            };
            pages.insert(
                index + i,
                Slot::Cached {
                    pa,
                    dirty: false,
                    folio,
                },
            );
        }
        if self.kind == ObjectKind::File {
            self.read_in
                .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            if block {
                self.read_in_pmd
                    .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            }
        }
        Ok(true)
    }

    /// Adds a PMD-sized folio (`1 << pmd_order` pages) at the naturally
    /// aligned index holding `idx`, if no page of that range is there
    /// (Linux `shmem_alloc_and_add_folio` with the PMD order, after
    /// `shmem_suitable_orders` found the range empty). Whether the mount's
    /// policy and the VMA allow it is the caller's. Returns whether it
    /// added one.
    ///
    /// # Errors
    /// [`Errno::NoMem`] when no frame can be had.
    pub(crate) fn shmem_add_pmd_folio(
        &self,
        pages: &mut HashMap<u64, Slot>,
        idx: u64,
        pmd_order: u8,
    ) -> Result<bool, Errno> {
        let head = idx & !((1u64 << pmd_order) - 1);
        self.add_folio(pages, head, pmd_order, false, pmd_order)
    }

    /// Punches the hole `[first, last)` in a shmem object and returns the
    /// frames to free (address, size) once no TLB maps them. Linux 6.18
    /// (mm/shmem.c `shmem_undo_range`, mm/truncate.c
    /// `truncate_inode_partial_folio`): folios wholly inside go; a large
    /// folio the hole's start cuts is split where the hole starts, and the
    /// folio then holding the hole's end is split there, each by a
    /// non-uniform split (`try_folio_split`: halved again and again around
    /// the page, so the pieces keep the largest aligned orders, and the
    /// page itself ends as a base page); a large folio only the hole's end
    /// cuts is split from its head the same way. The pieces inside the
    /// hole then go. The caller has unmapped the range everywhere.
    pub(crate) fn punch_hole(
        &self,
        pages: &mut HashMap<u64, Slot>,
        first: u64,
        last: u64,
    ) -> Result<Vec<(u64, u64)>, Errno> {
        if first >= last {
            return Ok(Vec::new());
        }
        let folio_at = |pages: &HashMap<u64, Slot>, i: u64| {
            Self::folio_of(pages, i).map(|f| (i & !((1u64 << f.order) - 1), f.order))
        };
        // The partial folio at the start (truncate_inode_partial_folio).
        if let Some((head, order)) = folio_at(pages, first) {
            let end = head + (1u64 << order);
            if order > 0 && !(head >= first && end <= last) {
                self.split_folio_at(pages, head, order, first)?;
                if last < end {
                    if let Some((h2, o2)) = folio_at(pages, last) {
                        if o2 > 0 {
                            self.split_folio_at(pages, h2, o2, last)?;
                        }
                    }
                }
            }
        }
        // A different large folio the hole's end cuts.
        if let Some((head, order)) = folio_at(pages, last - 1) {
            let end = head + (1u64 << order);
            if order > 0 && head > first && end > last {
                self.split_folio_at(pages, head, order, head)?;
                if let Some((h2, o2)) = folio_at(pages, last) {
                    if o2 > 0 {
                        self.split_folio_at(pages, h2, o2, last)?;
                    }
                }
            }
        }
        // Every folio now in the hole lies wholly inside it.
        let mut freed = Vec::new();
        let mut i = first;
        while i < last {
            let Some((head, order)) = folio_at(pages, i) else {
                i += 1;
                continue;
            };
            let n = 1u64 << order;
            debug_assert!(head >= first && head + n <= last, "split above");
            freed.extend(self.evict_folio(pages, head));
            i = head + n;
        }
        Ok(freed)
    }

    /// Splits the folio of `1 << order` pages at `head` around page `at`
    /// (Linux `folio_split`, the non-uniform split): the half without `at`
    /// stays one folio, the half with it is halved again, down to `at`
    /// alone. A PMD-sized folio's one frame becomes a frame per page.
    fn split_folio_at(
        &self,
        pages: &mut HashMap<u64, Slot>,
        head: u64,
        order: u8,
        at: u64,
    ) -> Result<(), Errno> {
        let page = 1u64 << self.mem.page_shift();
        let Some(Slot::Cached { pa, folio, .. }) = pages.get(&head).copied() else {
            return Ok(());
        };
        if folio.block {
            self.mem.split_data(pa, page << order)?;
        }
        let (mut h, mut k) = (head, order);
        let mut pieces = Vec::with_capacity(order as usize + 1);
        while k > 0 {
            k -= 1;
            let half = 1u64 << k;
            if at < h + half {
                pieces.push((h + half, k));
            } else {
                pieces.push((h, k));
                h += half;
            }
        }
        pieces.push((h, 0));
        for (ph, pk) in pieces {
            for j in ph..ph + (1u64 << pk) {
                if let Some(Slot::Cached { folio: f, .. }) = pages.get_mut(&j) {
                    *f = CacheFolio {
                        order: pk,
                        ..CacheFolio::default()
                    };
                }
            }
        }
        Ok(())
    }

    /// Splits the large folio holding page `idx` into base pages (Linux
    /// `split_folio`, the uniform split to order 0): each page keeps its
    /// frame (a PMD-sized folio's one frame becomes a frame per page) and
    /// its dirty state. Nothing happens to a base page.
    ///
    /// # Errors
    /// From splitting the frame.
    pub(crate) fn split_folio_uniform(
        &self,
        pages: &mut HashMap<u64, Slot>,
        idx: u64,
    ) -> Result<(), Errno> {
        let page = 1u64 << self.mem.page_shift();
        let Some(folio) = Self::folio_of(pages, idx) else {
            return Ok(());
        };
        if folio.order == 0 {
            return Ok(());
        }
        let head = idx & !((1u64 << folio.order) - 1);
        if folio.block {
            if let Some(Slot::Cached { pa, .. }) = pages.get(&head).copied() {
                self.mem.split_data(pa, page << folio.order)?;
            }
        }
        for j in head..head + (1u64 << folio.order) {
            if let Some(Slot::Cached { folio: f, .. }) = pages.get_mut(&j) {
                *f = CacheFolio::default();
            }
        }
        Ok(())
    }

    /// Removes the whole folio holding page `idx` from the object (it must
    /// be unmapped everywhere) and returns its frames (address, size),
    /// which the caller frees after the TLB flush (Linux
    /// `__remove_mapping` of a clean folio reclaim isolated).
    pub(crate) fn evict_folio(&self, pages: &mut HashMap<u64, Slot>, idx: u64) -> Vec<(u64, u64)> {
        let page = 1u64 << self.mem.page_shift();
        let Some(folio) = Self::folio_of(pages, idx) else {
            return Vec::new();
        };
        let head = idx & !((1u64 << folio.order) - 1);
        let mut freed = Vec::new();
        for j in head..head + (1u64 << folio.order) {
            if let Some(Slot::Cached { pa, folio: f, .. }) = pages.insert(j, Slot::Evicted) {
                if !f.block {
                    freed.push((pa, page));
                } else if j == head {
                    freed.push((pa, page << f.order));
                }
            }
        }
        freed
    }

    /// Clears the read-ahead mark of the folio whose head is `head`.
    pub(crate) fn clear_readahead(pages: &mut HashMap<u64, Slot>, head: u64) {
        if let Some(Slot::Cached { folio, .. }) = pages.get_mut(&head) {
            folio.readahead = false;
        }
    }

    /// Sets `PG_reclaim` on the folio of page `idx`: the bit is
    /// `PG_readahead`'s, so it reads as the read-ahead mark (Linux
    /// `folio_set_reclaim` on a dirty folio reclaim could not write).
    pub(crate) fn mark_reclaim(pages: &mut HashMap<u64, Slot>, idx: u64) {
        if let Some(folio) = Self::head_folio_mut(pages, idx) {
            folio.readahead = true;
        }
    }

    /// The folio of page `idx` as its head page holds it (where the
    /// folio's own flags live), if the page is cached.
    fn head_folio_mut(pages: &mut HashMap<u64, Slot>, idx: u64) -> Option<&mut CacheFolio> {
        let order = Self::folio_of(pages, idx)?.order;
        match pages.get_mut(&(idx & !((1u64 << order) - 1))) {
            Some(Slot::Cached { folio, .. }) => Some(folio),
            _ => None,
        }
    }

    // Linux: mm/shmem.c, shmem_writeout (to swap) and shmem_swapin_folio
    /// A dirty shmem page `idx` (its whole folio, on the head page) goes to
    /// swap: the shmem mapping holds a swap entry for it, so fault-around
    /// (filemap_map_pages) skips it as it skips a marked folio, and the
    /// fault on it brings it back ([`MemObject::shmem_swap_in`]). With
    /// asynchronous I/O it stays in memory, in the swap cache; a device with
    /// synchronous I/O (`sync`) frees it once written, so the fault reads
    /// it. The model keeps the frame in the object, marked.
    pub(crate) fn shmem_swap_out(pages: &mut HashMap<u64, Slot>, idx: u64, sync: bool) {
        if let Some(folio) = Self::head_folio_mut(pages, idx) {
            folio.readahead = true; // PG_reclaim, see mark_reclaim
            folio.swapped = sync;
        }
    }

    /// A fault on shmem page `idx`: a page in the swap cache is back in the
    /// page cache (`shmem_swapin_folio`: found in the swap cache, a minor
    /// fault; the folio is dirty and the swap slot freed). Returns whether
    /// it was read from the device instead (a major fault:
    /// `shmem_swapin_folio` counts `PGMAJFAULT`).
    pub(crate) fn shmem_swap_in(pages: &mut HashMap<u64, Slot>, idx: u64) -> bool {
        let Some(folio) = Self::head_folio_mut(pages, idx) else {
            return false;
        };
        folio.readahead = false;
        std::mem::take(&mut folio.swapped)
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
                        pages.insert(i, Slot::cached(pa));
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
    /// frame, which the caller frees after the TLB flush. A page of a
    /// PMD-sized folio stays (its frame is one block; Linux would have to
    /// split the folio first, which the model does not do).
    pub(crate) fn evict(pages: &mut HashMap<u64, Slot>, idx: u64) -> Option<u64> {
        if matches!(pages.get(&idx), Some(Slot::Cached { folio, .. }) if folio.block) {
            return None;
        }
        match pages.insert(idx, Slot::Evicted) {
            Some(Slot::Cached { pa, .. }) => Some(pa),
            _ => None,
        }
    }

    /// Frames the object holds (for the leak check): one per page, one per
    /// PMD-sized folio.
    pub(crate) fn frames(&self) -> u64 {
        self.lock()
            .iter()
            .filter(|(idx, s)| match s {
                Slot::Cached { folio, .. } if folio.block => {
                    *idx & ((1u64 << folio.order) - 1) == 0
                }
                Slot::Cached { .. } => true,
                Slot::Evicted => false,
            })
            .count() as u64
    }
}

impl Drop for MemObject {
    fn drop(&mut self) {
        let page = 1u64 << self.mem.page_shift();
        let pages = std::mem::take(&mut *self.lock());
        for (idx, s) in pages {
            match s {
                Slot::Cached { pa, folio, .. } if folio.block => {
                    // The head frees the folio's one frame.
                    if idx & ((1u64 << folio.order) - 1) == 0 {
                        let _ = self.mem.free_data(pa, page << folio.order);
                    }
                }
                Slot::Cached { pa, .. } => {
                    let _ = self.mem.free_data(pa, page);
                }
                Slot::Evicted => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shmem object holding one PMD-sized folio (512 pages at 0).
    fn with_thp() -> (MemObject, HashMap<u64, Slot>) {
        let obj = MemObject::new(ObjectKind::Shmem, false, Arc::new(PhysMem::new(12)));
        let mut pages = HashMap::new();
        assert!(obj.shmem_add_pmd_folio(&mut pages, 7, 9).unwrap());
        (obj, pages)
    }

    /// The folios left, as (head, order), in index order.
    fn folios(pages: &HashMap<u64, Slot>) -> Vec<(u64, u8)> {
        let mut v: Vec<(u64, u8)> = pages
            .iter()
            .filter_map(|(i, s)| match s {
                Slot::Cached { folio, .. } if i & ((1 << folio.order) - 1) == 0 => {
                    Some((*i, folio.order))
                }
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn a_hole_in_the_middle_leaves_halving_folios_on_its_far_side() {
        let (obj, mut pages) = with_thp();
        let freed = obj.punch_hole(&mut pages, 256, 257).unwrap();
        assert_eq!(freed, vec![(pages_pa(&obj, &pages, 255) + 4096, 4096)]);
        assert_eq!(
            folios(&pages),
            vec![
                (0, 8),
                (257, 0),
                (258, 1),
                (260, 2),
                (264, 3),
                (272, 4),
                (288, 5),
                (320, 6),
                (384, 7)
            ]
        );
        for (pa, size) in freed {
            obj.mem.free_data(pa, size).unwrap();
        }
    }

    fn pages_pa(_obj: &MemObject, pages: &HashMap<u64, Slot>, idx: u64) -> u64 {
        match pages.get(&idx) {
            Some(Slot::Cached { pa, .. }) => *pa,
            _ => panic!("page {idx} not cached"),
        }
    }

    #[test]
    fn a_hole_is_cut_at_both_ends_and_only_its_pages_go() {
        let (obj, mut pages) = with_thp();
        let freed = obj.punch_hole(&mut pages, 256, 272).unwrap();
        assert_eq!(freed.len(), 16);
        assert!(freed.iter().all(|&(_, s)| s == 4096));
        let f = folios(&pages);
        // The folio holding the hole's end is split from its first page.
        assert_eq!(
            f[..6],
            [(0, 8), (272, 0), (273, 0), (274, 1), (276, 2), (280, 3)]
        );
        assert!((256..272).all(|i| matches!(pages.get(&i), Some(Slot::Evicted))));
        let left: u64 = f.iter().map(|(_, o)| 1u64 << o).sum();
        assert_eq!(left, 512 - 16);
    }

    #[test]
    fn a_hole_over_the_whole_folio_frees_its_one_frame() {
        let (obj, mut pages) = with_thp();
        let head = pages_pa(&obj, &pages, 0);
        let freed = obj.punch_hole(&mut pages, 0, 512).unwrap();
        assert_eq!(freed, vec![(head, 2 << 20)]);
        assert!(folios(&pages).is_empty());
        obj.mem.free_data(head, 2 << 20).unwrap();
    }
}
