//! Read-ahead of a file read through a mapping, as Linux 6.18 does it
//! (mm/filemap.c `do_sync_mmap_readahead`, `do_async_mmap_readahead`;
//! mm/readahead.c `page_cache_ra_order`, `page_cache_async_ra`,
//! `do_page_cache_ra`, `get_next_ra_size`).
//!
//! A miss reads a window around the faulting page: `ra_pages` pages (the
//! backing device's `read_ahead_kb`) starting `ra_pages / 2` before it, in
//! base-page folios, with the last quarter's first folio marked. A fault that
//! finds a marked folio reads the next window (as large as the device
//! allows) and grows the folio order by two, up to the PMD order: a file read
//! sequentially through a mapping ends up in 2 MiB folios. In a VMA with
//! `MADV_HUGEPAGE` a miss reads two PMD-sized folios at once, aligned to the
//! PMD. A mapping whose filesystem has no large folios gets base pages only.
//! After `MMAP_LOTSAMISS` misses not paid back by hits, read-around stops.
//!
//! ## Invariants
//! - Folios are naturally aligned in the file and never pass the end of
//!   the file (`RaRequest::eof`).
//! - A page already cached is never read again: a window that meets one
//!   goes on in base pages around it (Linux falls back to
//!   `do_page_cache_ra` when `filemap_add_folio` fails).
//! - The state (`RaState`) belongs to the object, as Linux's `file->f_ra`
//!   belongs to the open file; it is changed under the object's page lock.

use crate::cache::{MemObject, Slot};
use crate::error::Errno;
use std::collections::HashMap;

/// Misses past which read-around stops (Linux `MMAP_LOTSAMISS`).
const MMAP_LOTSAMISS: u32 = 100;

/// The read-ahead window of an open file (Linux `struct file_ra_state`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RaState {
    /// First page of the last window read.
    pub start: u64,
    /// Pages in it.
    pub size: u64,
    /// Pages at its end whose first is marked (Linux `async_size`).
    pub async_size: u64,
    /// The folio order of the last window.
    pub order: u8,
    /// Misses not paid back by hits (Linux `mmap_miss`).
    pub mmap_miss: u32,
}

/// What one fault's read-ahead may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaRequest {
    /// The device's read-ahead window in pages (Linux `ra->ra_pages`).
    pub ra_pages: u64,
    /// Whether the filesystem gives large folios
    /// (`mapping_large_folio_support`).
    pub large_folios: bool,
    /// The largest folio order (Linux `MAX_PAGECACHE_ORDER`: the PMD's).
    pub max_order: u8,
    /// Pages in the file (the model's files end where their mapping does).
    pub eof: u64,
    /// The VMA has `MADV_HUGEPAGE` (`VM_HUGEPAGE`).
    pub hugepage: bool,
}

/// Linux `get_next_ra_size`: how the window grows.
fn next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

fn ilog2(n: u64) -> u8 {
    (63 - n.max(1).leading_zeros()) as u8
}

impl MemObject {
    /// A miss at `idx`: read the window Linux's fault path reads.
    // Linux: mm/filemap.c, do_sync_mmap_readahead
    pub(crate) fn sync_mmap_readahead(
        &self,
        pages: &mut HashMap<u64, Slot>,
        idx: u64,
        r: &RaRequest,
    ) -> Result<(), Errno> {
        let mut ra = *crate::space::lock_plain(&self.ra);
        let pmd_pages = 1u64 << r.max_order;
        if r.hugepage && r.max_order > 0 {
            // Two PMD folios, aligned, even with read-ahead off.
            ra.start = idx & !(pmd_pages - 1);
            ra.size = 2 * pmd_pages;
            ra.async_size = pmd_pages;
            ra.order = r.max_order;
        } else {
            if ra.mmap_miss < MMAP_LOTSAMISS * 10 {
                ra.mmap_miss += 1;
            }
            if r.ra_pages == 0 || ra.mmap_miss > MMAP_LOTSAMISS {
                // No read-ahead: filemap_fault creates the one folio.
                *crate::space::lock_plain(&self.ra) = ra;
                self.add_folio(pages, idx, 0, false, r.max_order)?;
                return Ok(());
            }
            // mmap read-around
            ra.start = idx.saturating_sub(r.ra_pages / 2);
            ra.size = r.ra_pages;
            ra.async_size = r.ra_pages / 4;
            ra.order = 0;
        }
        let r2 = self.ra_order(pages, &mut ra, r);
        *crate::space::lock_plain(&self.ra) = ra;
        r2?;
        if self.cached(pages, idx).is_none() {
            // The window did not reach it (a file shorter than the window's
            // start cannot happen here; kept for an allocation failure).
            self.add_folio(pages, idx, 0, false, r.max_order)?;
        }
        Ok(())
    }

    /// A hit at `idx` (a fault that reached the page cache): pays back a
    /// miss, and if the page's folio carries the read-ahead mark, reads the
    /// next window, in larger folios. Whether the folio was marked (the
    /// fault then drops the mmap lock and retries, see [`crate::cache::Lookup::retry`]).
    // Linux: mm/filemap.c, do_async_mmap_readahead → page_cache_async_ra
    pub(crate) fn async_mmap_readahead(
        &self,
        pages: &mut HashMap<u64, Slot>,
        idx: u64,
        r: &RaRequest,
    ) -> Result<bool, Errno> {
        if r.ra_pages == 0 {
            return Ok(false);
        }
        let mut ra = *crate::space::lock_plain(&self.ra);
        ra.mmap_miss = ra.mmap_miss.saturating_sub(1);
        *crate::space::lock_plain(&self.ra) = ra;
        let Some(folio) = Self::folio_of(pages, idx) else {
            return Ok(false);
        };
        let n = 1u64 << folio.order;
        let head = idx & !(n - 1);
        if !Self::folio_of(pages, head).is_some_and(|f| f.readahead) {
            return Ok(false);
        }
        Self::clear_readahead(pages, head);
        let max = r.ra_pages;
        let expected = (ra.start + ra.size - ra.async_size) & !(n - 1);
        if head == expected {
            // Sequential: push the window forward and ramp it up.
            ra.start += ra.size;
            ra.size = ra.size.max(next_ra_size(ra.size, max));
            ra.async_size = ra.size;
        } else {
            // A marked folio out of sequence (interleaved reads): size the
            // window from the cached run after it.
            let mut start = head + n;
            while start - head <= max && self.cached(pages, start).is_some() {
                start += 1;
            }
            if start - head > max {
                *crate::space::lock_plain(&self.ra) = ra;
                return Ok(true);
            }
            ra.start = start;
            ra.size = next_ra_size(start - head + max, max);
            ra.async_size = ra.size;
        }
        ra.order = ra.order.saturating_add(2);
        let r2 = self.ra_order(pages, &mut ra, r);
        *crate::space::lock_plain(&self.ra) = ra;
        r2.map(|()| true)
    }

    /// Reads the window `ra` describes in folios of `ra.order` (as aligned
    /// as the index allows, smaller at the end of the file), marking the
    /// folio at `start + size - async_size`.
    // Linux: mm/readahead.c, page_cache_ra_order
    fn ra_order(
        &self,
        pages: &mut HashMap<u64, Slot>,
        ra: &mut RaState,
        r: &RaRequest,
    ) -> Result<(), Errno> {
        // An empty window reads nothing (Linux reads nr_to_read = 0 pages).
        if r.eof == 0 || ra.size == 0 || ra.start >= r.eof {
            return Ok(());
        }
        let limit = (r.eof - 1).min(ra.start + ra.size - 1);
        let mark = ra.start + ra.size - ra.async_size;
        if !r.large_folios {
            ra.order = 0;
        }
        let new_order = ra.order.min(r.max_order).min(ilog2(ra.size));
        ra.order = new_order;
        let mut index = ra.start;
        while index <= limit {
            let mut order = new_order;
            if index & ((1u64 << order) - 1) != 0 {
                order = index.trailing_zeros() as u8;
            }
            while order > 0 && index + (1u64 << order) - 1 > limit {
                order -= 1;
            }
            let marked = index == mark & !((1u64 << order) - 1);
            if !self.add_folio(pages, index, order, marked, r.max_order)? {
                return self.page_cache_ra(pages, index, limit, mark, r.max_order);
            }
            index += 1u64 << order;
        }
        Ok(())
    }

    /// Reads the absent pages of `[index, limit]` as base-page folios,
    /// marking the one at `mark`.
    // Linux: mm/readahead.c, do_page_cache_ra → page_cache_ra_unbounded
    fn page_cache_ra(
        &self,
        pages: &mut HashMap<u64, Slot>,
        index: u64,
        limit: u64,
        mark: u64,
        max_order: u8,
    ) -> Result<(), Errno> {
        for i in index..=limit {
            if self.cached(pages, i).is_none() {
                self.add_folio(pages, i, 0, i == mark, max_order)?;
            }
        }
        Ok(())
    }

    /// Pages mapped by fault-around pay back misses (Linux
    /// `filemap_map_pages` lowering `mmap_miss`).
    pub(crate) fn mmap_hits(&self, n: u64) {
        let mut ra = crate::space::lock_plain(&self.ra);
        ra.mmap_miss = ra
            .mmap_miss
            .saturating_sub(n.min(u64::from(u32::MAX)) as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::ObjectKind;
    use pt::PhysMem;
    use std::sync::Arc;

    fn cold_file() -> MemObject {
        MemObject::new(ObjectKind::File, false, Arc::new(PhysMem::new(12)))
    }

    fn req(ra_pages: u64, eof: u64) -> RaRequest {
        RaRequest {
            ra_pages,
            large_folios: true,
            max_order: 9,
            eof,
            hugepage: false,
        }
    }

    /// (first page, order, marked) of each cached folio, in file order.
    fn folios(o: &MemObject) -> Vec<(u64, u8, bool)> {
        let pages = o.lock();
        let mut v: Vec<_> = pages
            .iter()
            .filter_map(|(i, s)| match s {
                Slot::Cached { folio, .. } if i & ((1 << folio.order) - 1) == 0 => {
                    Some((*i, folio.order, folio.readahead))
                }
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn a_miss_reads_the_device_window_around_the_page() {
        for ra_pages in [32, 2048] {
            let o = cold_file();
            let r = req(ra_pages, 8192);
            let l = o.get(&mut o.lock(), 4000, &r).unwrap();
            assert!(l.major);
            let f = folios(&o);
            assert_eq!(f.len() as u64, ra_pages, "base pages only at first");
            assert_eq!(f[0].0, 4000 - ra_pages / 2);
            assert!(f.iter().all(|x| x.1 == 0));
            let marked: Vec<u64> = f.iter().filter(|x| x.2).map(|x| x.0).collect();
            assert_eq!(marked, vec![4000 - ra_pages / 2 + ra_pages * 3 / 4]);
            // Within the window: a hit; just past it: a miss.
            let end = 4000 - ra_pages / 2 + ra_pages;
            assert!(!o.get(&mut o.lock(), end - 1, &r).unwrap().major);
            assert!(o.get(&mut o.lock(), end + 1, &r).unwrap().major);
        }
    }

    #[test]
    fn marked_hits_read_on_in_growing_folios_up_to_the_pmd_order() {
        let o = cold_file();
        let r = req(2048, 16384);
        assert!(o.get(&mut o.lock(), 0, &r).unwrap().major);
        // Sequential hits of each mark: orders 2, 4, 6, 8, then 9.
        let mut mark = 1536;
        for want in [2u8, 4, 6, 8, 9, 9] {
            let l = o.get(&mut o.lock(), mark, &r).unwrap();
            assert!(!l.major);
            // Only the PMD-sized folios' pages count as read in PMD folios.
            let pmd = if want == 9 { l.read } else { 0 };
            assert_eq!(l.read_pmd, pmd, "order {want}");
            let next = (mark / 2048 + 1) * 2048;
            let f = folios(&o);
            let win: Vec<_> = f
                .iter()
                .filter(|x| x.0 >= next && x.0 < next + 2048)
                .collect();
            assert!(!win.is_empty(), "window at {next} read");
            assert!(
                win.iter().all(|x| x.1 == want),
                "order {want} at {next}: {win:?}"
            );
            assert!(win[0].2, "the new window's first folio is marked");
            mark = next;
        }
        let huge = folios(&o).iter().filter(|x| x.1 == 9).count();
        assert_eq!(huge, 8, "pages 10240..14336 in 2 MiB folios");
    }

    #[test]
    fn a_lookup_says_how_many_pages_its_read_ahead_read_in() {
        // A file shorter than the window: a miss at its start reads it all.
        for eof in [1u64, 16, 100, 1024] {
            let o = cold_file();
            let l = o.get(&mut o.lock(), 0, &req(2048, eof)).unwrap();
            assert!(l.major);
            assert_eq!(l.read, eof, "file of {eof} pages");
            // Every page now cached: a hit reads nothing.
            let again = o.get(&mut o.lock(), eof - 1, &req(2048, eof)).unwrap();
            assert_eq!((again.major, again.read), (false, 0));
        }
        // A long file: the window centred on the miss, clipped at page 0.
        let o = cold_file();
        let r = req(2048, 1 << 20);
        assert_eq!(o.get(&mut o.lock(), 300, &r).unwrap().read, 2048);
        assert_eq!(o.get(&mut o.lock(), 100_000, &r).unwrap().read, 2048);
        // The marked folio of the first window starts the next one: a
        // minor fault that reads (async read-ahead).
        let hit = o.get(&mut o.lock(), 1536, &r).unwrap();
        assert!(!hit.major);
        assert_eq!(hit.read, 2048);
        // MADV_HUGEPAGE: two PMD folios.
        let o = cold_file();
        let r = RaRequest {
            hugepage: true,
            ..req(2048, 1 << 20)
        };
        let l = o.get(&mut o.lock(), 700, &r).unwrap();
        assert_eq!((l.read, l.read_pmd), (1024, 1024));
        // Without the advice, read-ahead's folios grow only on later
        // windows: the first window has no PMD folio.
        let o = cold_file();
        let l = o.get(&mut o.lock(), 0, &req(2048, 1 << 20)).unwrap();
        assert_eq!((l.read, l.read_pmd), (2048, 0));
    }

    #[test]
    fn without_large_folios_every_folio_is_a_base_page() {
        let o = cold_file();
        let r = RaRequest {
            large_folios: false,
            ..req(2048, 16384)
        };
        o.get(&mut o.lock(), 0, &r).unwrap();
        o.get(&mut o.lock(), 1536, &r).unwrap();
        o.get(&mut o.lock(), 2048, &r).unwrap();
        assert!(folios(&o).iter().all(|x| x.1 == 0));
        assert_eq!(folios(&o).len(), 6144);
    }

    #[test]
    fn a_hugepage_miss_reads_two_aligned_pmd_folios() {
        let o = cold_file();
        let r = RaRequest {
            hugepage: true,
            ..req(32, 4096)
        };
        assert!(o.get(&mut o.lock(), 700, &r).unwrap().major);
        assert_eq!(folios(&o), vec![(512, 9, false), (1024, 9, true)]);
        // The second is marked: reaching it reads two more.
        assert!(!o.get(&mut o.lock(), 1024, &r).unwrap().major);
        assert_eq!(folios(&o).len(), 4);
    }

    #[test]
    fn a_window_stops_at_the_end_of_the_file_and_around_cached_pages() {
        let o = cold_file();
        let r = req(2048, 100);
        o.get(&mut o.lock(), 50, &r).unwrap();
        assert_eq!(folios(&o).len(), 100);
        // A cached page inside a window is kept, not read again.
        let o = cold_file();
        let r = req(64, 1000);
        o.readahead(40, 1);
        let pa = o.cached(&mut o.lock(), 40).unwrap();
        o.get(&mut o.lock(), 30, &r).unwrap();
        assert_eq!(o.cached(&mut o.lock(), 40), Some(pa));
        assert_eq!(folios(&o).len(), 64);
    }

    #[test]
    fn many_misses_stop_read_around() {
        let o = cold_file();
        let r = req(32, 1 << 20);
        for i in 0..=u64::from(MMAP_LOTSAMISS) {
            // Far apart: each is a miss.
            assert!(o.get(&mut o.lock(), i * 1000, &r).unwrap().major);
        }
        let before = folios(&o).len();
        o.get(&mut o.lock(), 500_000, &r).unwrap();
        assert_eq!(folios(&o).len(), before + 1, "just the page");
        // Hits pay the misses back.
        o.mmap_hits(1000);
        o.get(&mut o.lock(), 700_000, &r).unwrap();
        assert_eq!(folios(&o).len(), before + 1 + 32);
    }
}
