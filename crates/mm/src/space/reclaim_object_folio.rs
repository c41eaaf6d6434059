//! MADV_COLD and MADV_PAGEOUT of a large page-cache folio (shmem or a
//! regular file) mapped by PTEs, as Linux 6.18 does them with no swap
//! device (mm/madvise.c, the `folio_test_large` part of
//! `madvise_cold_or_pageout_pte_range` with `madvise_folio_pte_batch`;
//! mm/huge_memory.c `split_folio`, whose `unmap_folio` unmaps a page-cache
//! folio everywhere and does not map it again; mm/vmscan.c
//! `shrink_folio_list`), as measured on a 6.18 host (the
//! shmem-huge-pte-* and file-thp-pte-* validation workloads). A folio gets
//! mapped by PTEs after a partial `mprotect`, `mlock` or `munmap` split its
//! PMD mapping, when a PTE table already covers its range (a private
//! copy-on-write there, an `mprotect` undone), when fault-around maps a
//! regular file's last folio a window at a time, or for every folio smaller
//! than the PMD (a file read on in growing folios). The folio mapped by one
//! PMD entry is `reclaim_huge_object.rs`'s.
//!
//! The walk meets a present PTE mapping a page of a large folio and counts
//! the PTEs from there on that map the folio's following pages, within the
//! advised range, the VMA and the PTE table (the batch):
//! - A folio another process of the family maps (a fork child that mapped
//!   it too) is left alone, whatever the batch (`folio_maybe_mapped_shared`
//!   when the batch is short; the mapcount differing from the folio's pages
//!   when it is whole).
//! - A batch shorter than the folio (the range covers it in part, starts
//!   inside it, the VMA was split by `mprotect` or `mlock`, or pages of it
//!   are unmapped or copied on write): the folio is split into base pages,
//!   under either advice. The split unmaps every page of it from every VMA
//!   of the process, locked ones too (`TTU_IGNORE_MLOCK`), and private
//!   copies stay; its pages stay in the object, dirty or clean as the folio
//!   was, and nothing is reclaimed (the walk goes on past them). The next
//!   reads map them back by fault-around, 16 pages a fault.
//! - A whole batch under `cold`: nothing a counter sees changes.
//! - A whole batch under `pageout`: the folio is unmapped. A clean one is
//!   dropped from the object whole (the next read of a file page is a major
//!   fault with read-ahead; the next access of shmem allocates a new folio);
//!   a dirty one stays whole, dirty (no swap to write shmem to, and reclaim
//!   on request does not write file pages back; a file folio is marked
//!   `PG_reclaim`, as a base page is).

use super::{AddressSpace, Rss};
use crate::cache::{MemObject, Slot};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::reclaim::PageAdvice;
use crate::space::rmap::Elsewhere;
use crate::vma::{Vma, Vmas};
use crate::walk::PmdExtent;
use pt::{Entry, Level, TableAddr, VirtAddr};
use std::ops::Range;
use std::sync::Arc;

/// A large folio of an object: its head page index and its pages.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ObjFolio {
    head: u64,
    pages: u64,
}

/// One advice's pass over an object's PTE-mapped folios.
struct Pass<'a> {
    obj: &'a Arc<MemObject>,
    how: PageAdvice,
    /// The object's pages other processes of the family map, asked when
    /// the first PTE table mapping a large folio is met.
    elsewhere: Option<Elsewhere>,
    /// Folios to split once the PTE lock is dropped.
    splits: Vec<ObjFolio>,
}

impl AddressSpace {
    /// MADV_COLD or MADV_PAGEOUT (`how`) of `span` of `vma`, before the
    /// page walk: the large page-cache folios mapped there by PTEs are
    /// split, reclaimed whole or left, as the module documentation says.
    /// The walk that follows ([`AddressSpace::pageout_cache_pte`]) leaves
    /// the pages of large folios alone. `vmas` is the space's VMA list
    /// (mmap lock held), through which a split unmaps the folio from every
    /// VMA of the space.
    pub(crate) fn object_folios_reclaim(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &Vmas,
        vma: &Vma,
        span: Range<u64>,
        how: PageAdvice,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let Some(obj) = vma.object() else {
            return Ok(());
        };
        let pmd_pages = self.pmd_size >> self.page_shift;
        // Folios are naturally aligned in the object and at most PMD-sized:
        // the reverse map is asked over the PMD-aligned indices around the
        // range, while no lock of ours is held.
        let first = vma.pgoff_of(span.start, self.page_shift) & !(pmd_pages - 1);
        let last = vma
            .pgoff_of(span.end, self.page_shift)
            .next_multiple_of(pmd_pages);
        if !Self::holds_large_folio(obj, first..last) {
            return Ok(());
        }
        let mut pass = Pass {
            obj,
            how,
            elsewhere: None,
            splits: Vec::new(),
        };
        let (start, end) = (VirtAddr::new(span.start), VirtAddr::new(span.end));
        self.for_each_pmd(vma, start, end, &mut |ext| {
            let Entry::Table { pa } = self.pt.read_entry(ext.pmd_table, Level::PMD, ext.start)?
            else {
                return Ok(());
            };
            let table = TableAddr::new(pa);
            // A table mapping no large folio is left to the page walk
            // (read without its lock: what the locked pass reads decides).
            if !self.maps_large_folio(ext, table, obj) {
                return Ok(());
            }
            if pass.elsewhere.is_none() {
                pass.elsewhere = Some(self.mapped_elsewhere(ctx, obj, first, last));
            }
            let Some(g) = self.pte_offset_map_lock(ctx, ext.pmd_table, ext.start, table) else {
                return Ok(());
            };
            let r = self.object_folios_in_table(ext, table, &mut pass, d);
            drop(g);
            r
        })?;
        for f in pass.splits {
            self.split_object_folio(ctx, vmas, obj, f, d)?;
        }
        Ok(())
    }

    /// Whether `obj` caches a large folio in the page indices `range`: if
    /// not, the pass has nothing to do, and takes no lock of the reverse
    /// map or of a PTE table (the page walk that follows takes its own).
    fn holds_large_folio(obj: &MemObject, range: Range<u64>) -> bool {
        let pages = obj.lock();
        let large = |i: &u64| MemObject::folio_of(&pages, *i).is_some_and(|f| f.order > 0);
        if range.end - range.start <= pages.len() as u64 {
            range.into_iter().any(|i| large(&i))
        } else {
            pages.keys().any(|i| range.contains(i) && large(i))
        }
    }

    /// Whether a PTE of `table` in `ext` maps a page of a large folio of
    /// `obj` (a snapshot, read without the table's lock).
    fn maps_large_folio(&self, ext: PmdExtent, table: TableAddr, obj: &MemObject) -> bool {
        let pages = obj.lock();
        let mut va = ext.start;
        while va < ext.end {
            // A table freed under us (a concurrent zap's PT reclaim) reads
            // as an error here: nothing to do in it.
            if let Ok(Entry::Leaf { pa, .. }) = self.pt.read_entry(table, Level::PTE, va) {
                let idx = ext.vma.pgoff_of(va.get(), self.page_shift);
                if matches!(pages.get(&idx), Some(Slot::Cached { pa: c, folio, .. }) if *c == pa && folio.order > 0)
                {
                    return true;
                }
            }
            va += self.page;
        }
        false
    }

    /// The large folios mapped by PTEs of `table` in `ext` (PTE lock held):
    /// whole batches `pageout` reclaims are unmapped and reclaimed here;
    /// folios to split are added to `splits` (split after the lock is
    /// dropped, as Linux drops it for `split_folio`).
    fn object_folios_in_table(
        &self,
        ext: PmdExtent,
        table: TableAddr,
        pass: &mut Pass,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let PmdExtent {
            vma,
            start: a,
            end: next,
            ..
        } = ext;
        let mut va = a;
        while va < next {
            let Some((folio, nr)) = self.folio_batch(vma, table, pass.obj, va, next)? else {
                va += self.page;
                continue;
            };
            let after = va.add(nr * self.page);
            let range = folio.head..folio.head + folio.pages;
            let shared = pass
                .elsewhere
                .as_ref()
                .is_none_or(|e| range.clone().any(|i| e.contains(i)));
            if shared {
                va = after;
                continue;
            }
            if nr < folio.pages {
                if !pass.splits.contains(&folio) {
                    pass.splits.push(folio);
                }
            } else if pass.how == PageAdvice::PageOut {
                self.pageout_object_folio(table, va, pass.obj, folio, d)?;
            }
            va = after;
        }
        Ok(())
    }

    /// If the PTE for `va` maps a page of a large folio of `obj` (not a
    /// private copy), that folio and the batch: how many PTEs from `va`
    /// on, before `next`, map its consecutive pages (Linux
    /// `madvise_folio_pte_batch`).
    fn folio_batch(
        &self,
        vma: &Vma,
        table: TableAddr,
        obj: &Arc<MemObject>,
        va: VirtAddr,
        next: VirtAddr,
    ) -> Result<Option<(ObjFolio, u64)>, Errno> {
        let idx = vma.pgoff_of(va.get(), self.page_shift);
        let pages = obj.lock();
        let maps_cache = |at: VirtAddr, i: u64| -> Result<Option<u8>, Errno> {
            let Entry::Leaf { pa, .. } = self.pt.read_entry(table, Level::PTE, at)? else {
                return Ok(None);
            };
            Ok(match pages.get(&i) {
                Some(Slot::Cached { pa: c, folio, .. }) if *c == pa => Some(folio.order),
                _ => None,
            })
        };
        let Some(order) = maps_cache(va, idx)? else {
            return Ok(None);
        };
        if order == 0 {
            return Ok(None);
        }
        let n = 1u64 << order;
        let folio = ObjFolio {
            head: idx & !(n - 1),
            pages: n,
        };
        let mut nr = 1;
        while idx + nr < folio.head + n {
            let at = va.add(nr * self.page);
            if at >= next || maps_cache(at, idx + nr)? != Some(order) {
                break;
            }
            nr += 1;
        }
        Ok(Some((folio, nr)))
    }

    /// MADV_PAGEOUT of the large folio `folio` of `obj`, mapped whole by
    /// the PTEs of `table` from `va` (PTE lock held; Linux `try_to_unmap`
    /// then `shrink_folio_list`): unmapped; dropped whole if clean, kept
    /// whole and dirty (a file folio marked `PG_reclaim`) if not.
    fn pageout_object_folio(
        &self,
        table: TableAddr,
        va: VirtAddr,
        obj: &Arc<MemObject>,
        folio: ObjFolio,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let end = va.add(folio.pages * self.page);
        self.pt.contpte_try_unfold(table, Level::PTE, va)?;
        if !end.is_aligned(self.pmd_size) {
            self.pt.contpte_try_unfold(table, Level::PTE, end)?;
        }
        let mut pte_dirty = false;
        for i in 0..folio.pages {
            let at = va.add(i * self.page);
            if let Entry::Leaf { attrs, .. } = self.pt.read_entry(table, Level::PTE, at)? {
                pte_dirty |= attrs.dirty;
            }
            self.pt.pte_clear(table, Level::PTE, at);
        }
        d.add_flush(va.get(), folio.pages * self.page);
        self.rss_add(Rss::of_cache(obj.kind), -(folio.pages as i64));
        let mut pages = obj.lock();
        let range = folio.head..folio.head + folio.pages;
        let dirty = pte_dirty || range.clone().any(|i| MemObject::is_dirty(&pages, i));
        if !dirty {
            d.frames.extend(obj.evict_folio(&mut pages, folio.head));
            return Ok(());
        }
        for i in range {
            MemObject::set_dirty(&mut pages, i, true);
        }
        if obj.kind == crate::cache::ObjectKind::File {
            MemObject::mark_reclaim(&mut pages, folio.head);
        }
        Ok(())
    }

    // Linux: mm/huge_memory.c, split_folio -> __folio_split: unmap_folio
    // (try_to_unmap with TTU_IGNORE_MLOCK for a page-cache folio), the
    // split, and no remap_page for a folio that is not anonymous.
    /// Splits `folio` of `obj` into base pages after unmapping every page
    /// of it from every VMA of this space that maps it (private copies
    /// stay). A folio is dirty as a whole: a dirty PTE or page makes every
    /// base page dirty. A mapping of it here by a PMD entry is left to the
    /// PMD path.
    fn split_object_folio(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &Vmas,
        obj: &Arc<MemObject>,
        folio: ObjFolio,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let list: Vec<Vma> = vmas
            .iter()
            .filter(|v| v.object().is_some_and(|o| Arc::ptr_eq(o, obj)))
            .cloned()
            .collect();
        let mut pte_dirty = false;
        for v in &list {
            let lo = v.pgoff(self.page_shift);
            let hi = lo + v.pages(self.page_shift);
            let (a, b) = (folio.head.max(lo), (folio.head + folio.pages).min(hi));
            if a >= b {
                continue;
            }
            let s = VirtAddr::new(v.start + ((a - lo) << self.page_shift));
            let e = VirtAddr::new(v.start + ((b - lo) << self.page_shift));
            self.for_each_pmd(v, s, e, &mut |ext| {
                let Entry::Table { pa } =
                    self.pt.read_entry(ext.pmd_table, Level::PMD, ext.start)?
                else {
                    return Ok(());
                };
                let table = TableAddr::new(pa);
                let Some(g) = self.pte_offset_map_lock(ctx, ext.pmd_table, ext.start, table) else {
                    return Ok(());
                };
                let r = self.unmap_object_pages(ext, table, obj, d);
                drop(g);
                pte_dirty |= r?;
                Ok(())
            })?;
        }
        let mut pages = obj.lock();
        let range = folio.head..folio.head + folio.pages;
        if pte_dirty || range.clone().any(|i| MemObject::is_dirty(&pages, i)) {
            for i in range {
                MemObject::set_dirty(&mut pages, i, true);
            }
        }
        obj.split_folio_uniform(&mut pages, folio.head)
    }

    /// Clears the PTEs of `table` in `ext` that map `obj`'s own pages (PTE
    /// lock held); whether one of them was dirty.
    fn unmap_object_pages(
        &self,
        ext: PmdExtent,
        table: TableAddr,
        obj: &Arc<MemObject>,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        let PmdExtent {
            vma,
            start: a,
            end: next,
            ..
        } = ext;
        self.pt.contpte_try_unfold(table, Level::PTE, a)?;
        if !next.is_aligned(self.pmd_size) {
            self.pt.contpte_try_unfold(table, Level::PTE, next)?;
        }
        let mut dirty = false;
        let pages = obj.lock();
        let mut va = a;
        while va < next {
            if let Entry::Leaf { pa, attrs, .. } = self.pt.read_entry(table, Level::PTE, va)? {
                let idx = vma.pgoff_of(va.get(), self.page_shift);
                if matches!(pages.get(&idx), Some(Slot::Cached { pa: c, .. }) if *c == pa) {
                    self.pt.pte_clear(table, Level::PTE, va);
                    d.add_flush(va.get(), self.page);
                    self.rss_add(Rss::of_cache(obj.kind), -1);
                    dirty |= attrs.dirty;
                }
            }
            va += self.page;
        }
        Ok(dirty)
    }
}
