//! The reverse map of page-cache pages across a fork family: which other
//! processes map a page of a file or shmem object, and acting on their
//! entries (Linux: `rmap_walk_file` over the object's `i_mmap` tree).
//!
//! Two operations need it:
//! - writeback (msync) write-protects and cleans a page in every process
//!   that maps it shared (`folio_mkclean`), so another process's next write
//!   to it faults (`page_mkwrite`) and dirties it again;
//! - MADV_PAGEOUT reclaims only pages no other process maps
//!   (`madvise_cold_or_pageout_pte_range` skips a folio whose map count is
//!   not its own), so it asks which pages of the range others map.
//!
//! A space joins its family's map once it is at its final place
//! ([`AddressSpace::join_rmap`], which the machine calls for every space it
//! makes; a space that never joined is seen by no one). The map holds weak
//! references: a member that is gone is skipped, and an exited one maps
//! nothing. Other spaces' VMAs are read under their mmap lock for reading
//! and their entries changed under their PTE locks; the caller holds its
//! own mmap lock for reading and no table or object lock.

use super::{lock_plain, AddressSpace, TableFlusher};
use crate::cache::{MemObject, Slot};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::gather::GatherFlush;
use crate::walk::PteOp;
use pt::table::FreedTables;
use pt::{Entry, Level, VirtAddr};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// What holds an address space in a fork family's reverse map (the
/// machine's space record, or the space itself in an `Arc`).
pub trait FamilyMember: Send + Sync {
    fn space(&self) -> &AddressSpace;
}

impl FamilyMember for AddressSpace {
    fn space(&self) -> &AddressSpace {
        self
    }
}

impl AddressSpace {
    /// Makes this space, held by `me`, visible to the reverse map of its
    /// family. `me` must hold this very space.
    pub fn join_rmap(&self, me: Weak<dyn FamilyMember>) {
        lock_plain(&self.shares.members.0).push(me);
    }

    /// The live spaces of the family other than this one.
    fn rmap_others(&self) -> Vec<Arc<dyn FamilyMember>> {
        if self.shares.alone() {
            return Vec::new();
        }
        let mut members = lock_plain(&self.shares.members.0);
        members.retain(|m| m.strong_count() > 0);
        members
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|m| {
                let s = m.space();
                s.id != self.id && !s.exited.load(Ordering::Acquire)
            })
            .collect()
    }

    /// The pages of `obj` in `[first, last)` that another space of the
    /// family maps (its page-cache page, not a private copy). Without a
    /// reverse map (spaces that never joined one) every page counts as
    /// mapped elsewhere while another space of the family lives: the safe
    /// side for reclaim.
    pub(crate) fn mapped_elsewhere(
        &self,
        ctx: &mut ThreadCtx,
        obj: &Arc<MemObject>,
        first: u64,
        last: u64,
    ) -> Elsewhere {
        if self.shares.alone() {
            return Elsewhere::Pages(HashSet::new());
        }
        let others = self.rmap_others();
        let joined = lock_plain(&self.shares.members.0).len();
        if joined == 0 {
            return Elsewhere::All;
        }
        let mut found = HashSet::new();
        for m in &others {
            let other = m.space();
            let vmas = other.mmap_read(ctx);
            for v in vmas.iter() {
                let Some(o) = v.object() else { continue };
                if !Arc::ptr_eq(o, obj) {
                    continue;
                }
                let (lo, hi) = (
                    v.pgoff(self.page_shift),
                    v.pgoff(self.page_shift) + v.pages(self.page_shift),
                );
                for idx in first.max(lo)..last.min(hi) {
                    let va = v.start + ((idx - lo) << self.page_shift);
                    if let Some(pa) = other.present_pa(VirtAddr::new(va)) {
                        let cache_page = v.shared
                            || matches!(obj.lock().get(&idx), Some(Slot::Cached { pa: c, .. }) if *c == pa);
                        if cache_page {
                            found.insert(idx);
                        }
                    }
                }
            }
        }
        Elsewhere::Pages(found)
    }

    /// The frame `va` maps, read without locks (a snapshot).
    fn present_pa(&self, va: VirtAddr) -> Option<u64> {
        let pmd_table = self.find_pmd_table(va).ok()?;
        match self.pt.read_entry(pmd_table, Level::PMD, va).ok()? {
            Entry::Leaf { pa, .. } => Some(pa + va.offset_in(self.pmd_size)),
            Entry::Table { pa } => match self
                .pt
                .read_entry(pt::TableAddr::new(pa), Level::PTE, va)
                .ok()?
            {
                Entry::Leaf { pa, .. } => Some(pa),
                _ => None,
            },
            Entry::Invalid | Entry::Swap { .. } => None,
        }
    }

    // Linux: mm/rmap.c, folio_mkclean (rmap_walk_file + page_mkclean_one)
    /// Writeback of `obj`'s pages `[first, last)` in the other spaces of
    /// the family: each shared mapping of a dirty page there is
    /// write-protected and cleaned, and their TLBs flushed.
    pub(crate) fn mkclean_others(
        &self,
        ctx: &mut ThreadCtx,
        obj: &Arc<MemObject>,
        first: u64,
        last: u64,
    ) -> Result<(), Errno> {
        for m in self.rmap_others() {
            let other = m.space();
            let vmas = other.mmap_read(ctx);
            let list: Vec<_> = vmas
                .iter()
                .filter(|v| v.writenotify() && v.object().is_some_and(|o| Arc::ptr_eq(o, obj)))
                .cloned()
                .collect();
            let mut d = Deferred::none();
            for v in &list {
                let lo = v.pgoff(self.page_shift);
                let hi = lo + v.pages(self.page_shift);
                let (a, b) = (first.max(lo), last.min(hi));
                if a >= b {
                    continue;
                }
                let s = v.start + ((a - lo) << self.page_shift);
                let e = v.start + ((b - lo) << self.page_shift);
                other.walk_ptes(ctx, v, s, e, PteOp::Writeback, &mut d)?;
            }
            other.flush_now(ctx, d)?;
            drop(vmas);
        }
        Ok(())
    }

    // Linux: mm/memory.c, unmap_mapping_range (even_cows = false)
    /// Unmaps `obj`'s pages `[first, last)` from the other spaces of the
    /// family (for a hole punched in it), and flushes their TLBs. Every
    /// mapping of an object in a family is shared or private alike (forks
    /// inherit them), and a shared one maps only the object's pages.
    pub(crate) fn zap_object_others(
        &self,
        ctx: &mut ThreadCtx,
        obj: &Arc<MemObject>,
        first: u64,
        last: u64,
    ) -> Result<(), Errno> {
        for m in self.rmap_others() {
            let other = m.space();
            let vmas = other.mmap_read(ctx);
            let list: Vec<_> = vmas
                .iter()
                .filter(|v| v.shared && v.object().is_some_and(|o| Arc::ptr_eq(o, obj)))
                .cloned()
                .collect();
            let mut d = Deferred::none();
            for v in &list {
                let lo = v.pgoff(self.page_shift);
                let hi = lo + v.pages(self.page_shift);
                let (a, b) = (first.max(lo), last.min(hi));
                if a >= b {
                    continue;
                }
                let s = v.start + ((a - lo) << self.page_shift);
                let e = v.start + ((b - lo) << self.page_shift);
                other.zap_range(ctx, v, s, e, false, &mut d)?;
            }
            other.flush_unlinked_tables(ctx, &mut d);
            other.flush_now(ctx, d)?;
            drop(vmas);
        }
        Ok(())
    }

    /// Flushes `d`'s changed translations on every CPU that may cache this
    /// space (through its table flusher) and completes it: for work done
    /// on another space than the caller's, whose own completion flushes
    /// only the caller's.
    fn flush_now(&self, ctx: &ThreadCtx, mut d: Deferred) -> Result<(), Errno> {
        let f: Option<&TableFlusher> = self.table_flusher.get();
        if let Some(f) = f {
            let (all, _) = d.take_flush();
            if !all.is_empty() {
                f(GatherFlush {
                    cpu: ctx.cpu,
                    flush: &all,
                    tables_too: false,
                    pt: &self.pt,
                    tables: FreedTables::default(),
                });
            }
            all.done();
        }
        d.complete(self)
    }
}

/// Which pages of a range another space maps.
pub(crate) enum Elsewhere {
    /// These (object page indices).
    Pages(HashSet<u64>),
    /// Unknown (no reverse map): take every page as mapped elsewhere.
    All,
}

impl Elsewhere {
    pub(crate) fn contains(&self, idx: u64) -> bool {
        match self {
            Elsewhere::Pages(p) => p.contains(&idx),
            Elsewhere::All => true,
        }
    }
}
