//! mremap (Linux mm/mremap.c): shrinking a mapping, growing it in place,
//! and moving it with its page tables.
//!
//! ## Invariants
//! - A move copies no page: every present entry of the source reaches the
//!   destination with the same frame and attributes, so RSS, folios and
//!   AnonHugePages do not change; only the tables holding the entries may.
//! - A whole table moves when its entry's span is the extent being moved
//!   on both sides (source and destination aligned to it, the range
//!   covering it) and the destination entry is empty: a PTE table
//!   (`move_normal_pmd`), a PMD table (`move_normal_pud`), a huge PMD with
//!   its deposited table (`move_huge_pmd`). Otherwise a huge PMD is split
//!   and the PTEs move one by one into the destination's table
//!   (`move_ptes`), allocated if missing.
//! - Each moved extent is flushed from every TLB and walk cache before the
//!   mmap write lock is dropped (Linux: `flush_tlb_range` inside the loop),
//!   so no CPU reaches a moved table or page through the old address.
//! - The source range is unmapped last (`do_vmi_munmap`): the tables no
//!   longer covered by a VMA are freed by `free_pgtables` as for munmap.
//!
//! Not modelled: MREMAP_DONTUNMAP, a destination the kernel picks
//! (MREMAP_MAYMOVE without MREMAP_FIXED when the mapping cannot grow in
//! place: the model has no `get_unmapped_area` and answers ENOMEM), the
//! re-alignment of mutually misaligned starts (`try_realign_addr`), the
//! moved anonymous VMA's page offset (the model derives it from the start,
//! see [`crate::vma`]), and the PTE batching of large folios (entries move
//! one at a time; the result is the same).

use super::populate::PopulateMode;
use super::{lock_plain, AddressSpace};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::{AnonVma, Backing, Vma, Vmas};
use pt::table::Flush;
use pt::{Entry, Level, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;

/// The arguments of [`AddressSpace::mremap`]: Linux's `mremap(addr,
/// old_len, new_len, flags, new_addr)` with the flags as fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MremapArgs {
    pub addr: u64,
    pub old_len: u64,
    pub new_len: u64,
    /// MREMAP_MAYMOVE.
    pub maymove: bool,
    /// MREMAP_FIXED with this destination (needs `maymove`).
    pub fixed: Option<u64>,
    /// MREMAP_DONTUNMAP (needs `maymove`, equal lengths and, in the model,
    /// `fixed`): the source stays mapped, empty.
    pub dontunmap: bool,
}

/// Where an MREMAP_FIXED move goes.
#[derive(Debug, Clone, Copy)]
struct Dest {
    addr: u64,
    len: u64,
    /// MREMAP_DONTUNMAP: keep the source mapped.
    dontunmap: bool,
}

/// What a successful mremap did: where the mapping is now, and how its
/// page tables moved (all zero for a resize in place).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Remapped {
    /// The mapping's address after the call (Linux's return value).
    pub addr: u64,
    /// PTE tables moved whole (`move_normal_pmd`).
    pub pte_tables_moved: u64,
    /// PMD tables moved whole (`move_normal_pud`).
    pub pmd_tables_moved: u64,
    /// Huge PMD leaves moved with their deposited tables (`move_huge_pmd`).
    pub huge_pmds_moved: u64,
    /// Entries moved one by one (`move_ptes`).
    pub ptes_moved: u64,
}

/// Linux `get_extent`: how much of `[old, old_end)` to move in one step
/// so that neither side crosses a boundary of `size`.
fn get_extent(size: u64, old: u64, old_end: u64, new: u64) -> u64 {
    let mask = !(size - 1);
    // Wrapping: at the top of the address space `next` overflows to 0,
    // and the difference is still the distance to the boundary.
    let mut extent = (old.wrapping_add(size) & mask).wrapping_sub(old);
    extent = extent.min(old_end - old);
    extent.min((new.wrapping_add(size) & mask).wrapping_sub(new))
}

impl AddressSpace {
    // Linux: mm/mremap.c, SYSCALL_DEFINE5(mremap) -> do_mremap
    /// Linux `mremap`: shrinks `[addr, addr + old_len)` to `new_len`, grows
    /// it in place when the addresses after it are free (merging with the
    /// VMA after it when Linux would), or moves it to `fixed` (unmapping
    /// what was there first) with its page tables.
    ///
    /// # Errors
    /// [`Errno::Inval`] for MREMAP_FIXED without MREMAP_MAYMOVE, an
    /// unaligned address, a zero new length (or a zero old length: the
    /// model has no shared-mapping duplicate), a destination overlapping
    /// the source or past the user address space; [`Errno::Fault`] if
    /// `addr` is not mapped, or the range to grow or move is not inside one
    /// VMA; [`Errno::NoMem`] if it cannot grow in place and may not move
    /// (or may move but has no fixed destination).
    pub fn mremap(
        &self,
        ctx: &mut ThreadCtx,
        args: MremapArgs,
    ) -> Result<(Deferred, Remapped), Errno> {
        let mut d = Deferred::none();
        match self.mremap_inner(ctx, args, &mut d) {
            Ok(out) => self.finish_op(Ok(()), d).map(|d| (d, out)),
            Err(e) => self.finish_op(Err(e), d).map(|d| (d, Remapped::default())),
        }
    }

    fn mremap_inner(
        &self,
        ctx: &mut ThreadCtx,
        args: MremapArgs,
        d: &mut Deferred,
    ) -> Result<Remapped, Errno> {
        // Linux: check_mremap_params
        if args.fixed.is_some() && !args.maymove {
            return Err(Errno::Inval("MREMAP_FIXED without MREMAP_MAYMOVE"));
        }
        if args.dontunmap && (!args.maymove || args.old_len != args.new_len) {
            return Err(Errno::Inval(
                "MREMAP_DONTUNMAP needs MREMAP_MAYMOVE and equal lengths",
            ));
        }
        if args.dontunmap && args.fixed.is_none() {
            return Err(Errno::NoMem(
                "mremap would move the mapping to an address of the kernel's choosing, which the model does not pick (give MREMAP_FIXED)",
            ));
        }
        if !args.addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("mremap address not page-aligned"));
        }
        let old_len = self
            .page_align(args.old_len)
            .ok_or(Errno::Inval("old length overflows"))?;
        let new_len = self
            .page_align(args.new_len)
            .ok_or(Errno::Inval("new length overflows"))?;
        if new_len == 0 {
            return Err(Errno::Inval("mremap to length 0"));
        }
        if old_len == 0 {
            return Err(Errno::Inval(
                "mremap of length 0 (duplicating a shared mapping is not modelled)",
            ));
        }
        let addr = args.addr;
        let mut vmas = self.mmap_write(ctx);
        let r = (|| {
            if vmas.find(addr).is_none() {
                return Err(Errno::Fault("mremap of an unmapped address"));
            }
            if let Some(new_addr) = args.fixed {
                let to = Dest {
                    addr: new_addr,
                    len: new_len,
                    dontunmap: args.dontunmap,
                };
                return self.mremap_to(ctx, &mut vmas, addr, old_len, to, d);
            }
            if old_len >= new_len {
                // Linux: shrink_vma
                if old_len > new_len {
                    self.munmap_locked(ctx, &mut vmas, addr + new_len, addr + old_len, d)?;
                }
                return Ok(Remapped {
                    addr,
                    ..Remapped::default()
                });
            }
            let vma = vma_to_resize(&vmas, addr, old_len)?;
            let delta = new_len - old_len;
            if addr + old_len == vma.end && self.vma_expandable(&vmas, &vma, delta) {
                self.expand_in_place(ctx, &mut vmas, &vma, delta, d)?;
                return Ok(Remapped {
                    addr,
                    ..Remapped::default()
                });
            }
            if !args.maymove {
                return Err(Errno::NoMem(
                    "mremap cannot grow the mapping in place without MREMAP_MAYMOVE",
                ));
            }
            Err(Errno::NoMem(
                "mremap would move the mapping to an address of the kernel's choosing, which the model does not pick (give MREMAP_FIXED)",
            ))
        })();
        self.flush_unlinked_tables(ctx, d);
        drop(vmas);
        r
    }

    // Linux: mm/mremap.c, vma_expandable
    /// Whether `vma` can grow by `delta` bytes in place: nothing is mapped
    /// there and it stays inside the user address space.
    fn vma_expandable(&self, vmas: &Vmas, vma: &Vma, delta: u64) -> bool {
        let Some(end) = vma.end.checked_add(delta) else {
            return false;
        };
        end <= self.user_limit() && vmas.overlapping(vma.end, end).next().is_none()
    }

    // Linux: mm/mremap.c, expand_vma_in_place -> mm/vma.c, vma_merge_extend
    /// Grows `vma` by `delta` bytes: the new range merges into it, and with
    /// the VMA after it when they are compatible (`vma_merge_new_range`
    /// with the VMA's own flags and anon_vma); a locked VMA's new pages
    /// are populated (`mm_populate`).
    fn expand_in_place(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &mut Vmas,
        vma: &Vma,
        delta: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let (start, end) = (vma.end, vma.end + delta);
        vmas.insert_merging(self.piece_at(vma, vma.end, start, end), self.page_shift);
        if vma.flags.locked {
            let _ = self.populate(ctx, vmas, start, end, PopulateMode::PerVma, false, d);
        }
        Ok(())
    }

    /// A VMA like `vma` over `[start, end)`, mapping what `vma` maps from
    /// `from` onwards (its object offset advanced accordingly).
    fn piece_at(&self, vma: &Vma, from: u64, start: u64, end: u64) -> Vma {
        let mut p = vma.clone();
        p.start = start;
        p.end = end;
        if let Backing::Object { pgoff, .. } = &mut p.backing {
            *pgoff = vma.pgoff_of(from, self.page_shift);
        }
        p
    }

    // Linux: mm/mremap.c, mremap_to
    /// The MREMAP_FIXED path: unmaps the destination, shrinks the source
    /// first if the new length is smaller, then moves it.
    fn mremap_to(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &mut Vmas,
        addr: u64,
        old_len: u64,
        to: Dest,
        d: &mut Deferred,
    ) -> Result<Remapped, Errno> {
        let (new_addr, new_len) = (to.addr, to.len);
        if !new_addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("mremap destination not page-aligned"));
        }
        let limit = self.user_limit();
        if new_len > limit || new_addr > limit - new_len {
            return Err(Errno::Inval(
                "mremap destination past the user address space",
            ));
        }
        // Linux: vrm_overlaps
        if addr < new_addr + new_len && new_addr < addr + old_len {
            return Err(Errno::Inval("mremap destination overlaps the source"));
        }
        // Linux: do_munmap of the destination first.
        self.munmap_locked(ctx, vmas, new_addr, new_addr + new_len, d)?;
        let mut old_len = old_len;
        if old_len > new_len {
            // Linux: shrink_vma, then move what is left.
            self.munmap_locked(ctx, vmas, addr + new_len, addr + old_len, d)?;
            old_len = new_len;
        }
        let vma = vma_to_resize(vmas, addr, old_len)?;
        let out = self.move_vma(ctx, vmas, &vma, addr, old_len, new_addr, new_len, d)?;
        if to.dontunmap {
            self.dontunmap_complete(ctx, vmas, addr, old_len, d)?;
        } else {
            // Linux: unmap_source_vma -> do_vmi_munmap
            self.munmap_locked(ctx, vmas, addr, addr + old_len, d)?;
        }
        Ok(out)
    }

    // Linux: mm/mremap.c, dontunmap_complete
    /// After a move with MREMAP_DONTUNMAP the source range stays mapped,
    /// empty (its tables moved), with VM_LOCKED, VM_LOCKONFAULT and
    /// VM_ACCOUNT cleared; a source VMA moved whole drops its anon_vma
    /// (`unlink_anon_vmas`), so its next fault starts a new one.
    fn dontunmap_complete(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &mut Vmas,
        addr: u64,
        len: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let whole = vmas
            .find(addr)
            .is_some_and(|v| v.start == addr && v.end == addr + len);
        let clear = |v: &mut Vma| {
            v.flags.locked = false;
            v.flags.lockonfault = false;
            v.flags.account = false;
            if whole {
                v.anon_vma = AnonVma::default();
            }
        };
        self.vma_modify(ctx, vmas, addr, addr + len, clear, d)
            .map(|_| ())
    }

    // Linux: mm/mremap.c, move_vma (copy_vma_and_data, then unmap_source_vma)
    /// Moves `[addr, addr + old_len)` of `vma` to a new VMA over
    /// `[new_addr, new_addr + new_len)` (merged with its neighbours there
    /// when Linux's `copy_vma` would) and moves its tables; the caller then
    /// unmaps the source (or keeps it, with MREMAP_DONTUNMAP). A locked
    /// mapping grown by the move has its new pages populated.
    #[allow(clippy::too_many_arguments)]
    fn move_vma(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &mut Vmas,
        vma: &Vma,
        addr: u64,
        old_len: u64,
        new_addr: u64,
        new_len: u64,
        d: &mut Deferred,
    ) -> Result<Remapped, Errno> {
        // Linux: copy_vma -> vma_merge_new_range, else a new VMA (the
        // anon_vma shared with the source: anon_vma_clone).
        vmas.insert_merging(
            self.piece_at(vma, addr, new_addr, new_addr + new_len),
            self.page_shift,
        );
        let mut out = self.move_page_tables(ctx, vma, addr, new_addr, old_len, d)?;
        if vma.flags.locked && new_len > old_len {
            let (s, e) = (new_addr + old_len, new_addr + new_len);
            let _ = self.populate(ctx, vmas, s, e, PopulateMode::PerVma, false, d);
        }
        out.addr = new_addr;
        Ok(out)
    }

    // Linux: mm/mremap.c, move_page_tables
    /// Moves the entries of `[old, old + len)` to `[new, new + len)`,
    /// extent by extent (see the module invariants).
    fn move_page_tables(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        old: u64,
        new: u64,
        len: u64,
        d: &mut Deferred,
    ) -> Result<Remapped, Errno> {
        let mut out = Remapped::default();
        let old_end = old + len;
        let (mut o, mut n) = (old, new);
        // PUD-level moves need a PUD table to move a PMD table out of.
        let pud = self.pt.has_level(Level::PUD);
        while o < old_end {
            let extent = self.move_extent(ctx, vma, o, old_end, n, pud, &mut out, d)?;
            o += extent;
            n += extent;
        }
        Ok(out)
    }

    /// One step of [`AddressSpace::move_page_tables`] from `o` (moving to
    /// `n`); returns the bytes it covered.
    #[allow(clippy::too_many_arguments)]
    fn move_extent(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        o: u64,
        old_end: u64,
        n: u64,
        pud: bool,
        out: &mut Remapped,
        d: &mut Deferred,
    ) -> Result<u64, Errno> {
        let (ov, nv) = (VirtAddr::new(o), VirtAddr::new(n));
        if pud {
            let size = self.pt.entry_size(Level::PUD);
            let extent = get_extent(size, o, old_end, n);
            // Linux: get_old_pud (nothing there: nothing to move).
            let Some(old_pud) = self.table_for(ov, Level::PUD) else {
                return Ok(extent);
            };
            if self.pt.is_none(old_pud, Level::PUD, ov) {
                return Ok(extent);
            }
            // Linux: alloc_new_pud
            let new_pud = self.alloc_table_for(ctx, nv, Level::PUD)?;
            if extent == size && self.move_normal_pud(ctx, old_pud, new_pud, ov, nv, d)? {
                out.pmd_tables_moved += 1;
                return Ok(extent);
            }
        }
        let extent = get_extent(self.pmd_size, o, old_end, n);
        // Linux: get_old_pmd
        let Some(old_pmd) = self.table_for(ov, Level::PMD) else {
            return Ok(extent);
        };
        if self.pt.is_none(old_pmd, Level::PMD, ov) {
            return Ok(extent);
        }
        // Linux: alloc_new_pmd
        let new_pmd = self.alloc_table_for(ctx, nv, Level::PMD)?;
        let whole = extent == self.pmd_size;
        match self.pt.read_entry(old_pmd, Level::PMD, ov)? {
            Entry::Leaf { .. } => {
                if whole && self.move_huge_pmd(ctx, vma, old_pmd, new_pmd, ov, nv, d)? {
                    out.huge_pmds_moved += 1;
                    return Ok(extent);
                }
                // Linux: split_huge_pmd
                let g = self.pmd_lock(ctx, old_pmd);
                let r = self.split_huge_pmd_locked(vma, old_pmd, ov, d);
                drop(g);
                r?;
            }
            Entry::Table { .. } => {
                if whole && self.move_normal_pmd(ctx, old_pmd, new_pmd, ov, nv, d)? {
                    out.pte_tables_moved += 1;
                    return Ok(extent);
                }
            }
            Entry::Invalid => return Ok(extent),
        }
        // A file folio's split leaves nothing mapped here.
        if self.pt.is_none(old_pmd, Level::PMD, ov) {
            return Ok(extent);
        }
        // Linux: pte_alloc of the destination, then move_ptes.
        if self.pt.is_none(new_pmd, Level::PMD, nv) {
            let lock = || self.pmd_lock(ctx, new_pmd);
            self.pt.alloc_install(new_pmd, Level::PMD, nv, lock)?;
        }
        out.ptes_moved += self.move_ptes(ctx, old_pmd, new_pmd, ov, nv, extent, d)?;
        Ok(extent)
    }

    /// The table holding the entries of `level` for `va`, if the levels
    /// above it exist (a walk that allocates nothing).
    fn table_for(&self, va: VirtAddr, level: Level) -> Option<TableAddr> {
        let mut table = self.pt.root_table();
        let mut l = self.pt.root_level();
        while l > level {
            table = self.pt.next_table(table, l, va)?;
            l = l.down();
        }
        Some(table)
    }

    /// [`AddressSpace::table_for`], allocating the missing tables above
    /// `level` (Linux `alloc_new_pud` / `alloc_new_pmd`: `pud_alloc`,
    /// `pmd_alloc` under `page_table_lock`).
    fn alloc_table_for(
        &self,
        ctx: &mut ThreadCtx,
        va: VirtAddr,
        level: Level,
    ) -> Result<TableAddr, Errno> {
        let mut table = self.pt.root_table();
        let mut l = self.pt.root_level();
        while l > level {
            if self.pt.is_none(table, l, va) {
                let ptl = || self.lock_counted(ctx, &self.ptl, crate::LockClass::PageTableLock);
                self.pt.alloc_install(table, l, va, ptl)?;
            }
            table = self.pt.next_table(table, l, va).ok_or_else(|| {
                Errno::Internal(format!("a leaf at {l} above the {level} for {va:#x}"))
            })?;
            l = l.down();
        }
        Ok(table)
    }

    // Linux: mm/mremap.c, move_normal_pud
    /// Moves the PMD table under the PUD entry for `o` to the empty entry
    /// for `n`; `false` if the destination entry is in use.
    fn move_normal_pud(
        &self,
        ctx: &mut ThreadCtx,
        old_pud: TableAddr,
        new_pud: TableAddr,
        o: VirtAddr,
        n: VirtAddr,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        if !self.pt.is_none(new_pud, Level::PUD, n) {
            return Ok(false);
        }
        // Linux: pud_lock is mm->page_table_lock.
        let g = self.lock_counted(ctx, &self.ptl, crate::LockClass::PageTableLock);
        let Some(pmd_table) = self.pt.next_table(old_pud, Level::PUD, o) else {
            return Ok(false);
        };
        self.pt.pte_clear(old_pud, Level::PUD, o);
        self.pt
            .set_entry(new_pud, Level::PUD, n, &Entry::Table { pa: pmd_table.pa() });
        drop(g);
        let size = self.pt.entry_size(Level::PUD);
        // The deposits of the huge PMDs under it are keyed by address.
        {
            let mut deps = lock_plain(&self.deposits);
            let keys: Vec<u64> = deps
                .keys()
                .copied()
                .filter(|a| (o.get()..o.get() + size).contains(a))
                .collect();
            for a in keys {
                let t = deps.remove(&a).expect("listed above");
                deps.insert(a - o.get() + n.get(), t);
            }
        }
        // A PMD table moved: every thread's cached walk to one is stale.
        self.upper_gen.fetch_add(1, Ordering::Release);
        self.flush_moved(ctx, o.get(), size, d);
        Ok(true)
    }

    // Linux: mm/mremap.c, move_normal_pmd
    /// Moves the PTE table under the PMD entry for `o` to the empty entry
    /// for `n`; `false` if the destination entry is in use.
    fn move_normal_pmd(
        &self,
        ctx: &mut ThreadCtx,
        old_pmd: TableAddr,
        new_pmd: TableAddr,
        o: VirtAddr,
        n: VirtAddr,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        if !self.pt.is_none(new_pmd, Level::PMD, n) {
            return Ok(false);
        }
        let (g_old, g_new) = self.pmd_lock_pair(ctx, old_pmd, new_pmd);
        let Some(pte_table) = self.pt.next_table(old_pmd, Level::PMD, o) else {
            return Ok(false);
        };
        self.pt.pte_clear(old_pmd, Level::PMD, o);
        self.pt
            .set_entry(new_pmd, Level::PMD, n, &Entry::Table { pa: pte_table.pa() });
        drop(g_new);
        drop(g_old);
        self.flush_moved(ctx, o.get(), self.pmd_size, d);
        Ok(true)
    }

    // Linux: mm/huge_memory.c, move_huge_pmd
    /// Moves the huge PMD leaf for `o` to the empty entry for `n`, with its
    /// deposited table (`pgtable_trans_huge_withdraw` / `_deposit`; a
    /// page-cache folio has none); `false` if the destination is in use.
    #[allow(clippy::too_many_arguments)]
    fn move_huge_pmd(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        old_pmd: TableAddr,
        new_pmd: TableAddr,
        o: VirtAddr,
        n: VirtAddr,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        if !self.pt.is_none(new_pmd, Level::PMD, n) {
            return Ok(false);
        }
        let (g_old, g_new) = self.pmd_lock_pair(ctx, old_pmd, new_pmd);
        let e = self.pt.ptep_get_and_clear(old_pmd, Level::PMD, o)?;
        self.pt.set_entry(new_pmd, Level::PMD, n, &e);
        if self.file_pmd_rss(vma).is_none() {
            let mut deps = lock_plain(&self.deposits);
            let t = deps
                .remove(&o.get())
                .ok_or_else(|| Errno::Internal(format!("no deposited table for {o:#x}")))?;
            deps.insert(n.get(), t);
        }
        drop(g_new);
        drop(g_old);
        self.flush_moved(ctx, o.get(), self.pmd_size, d);
        Ok(true)
    }

    // Linux: mm/mremap.c, move_ptes
    /// Moves the PTEs of `[o, o + len)` (inside one PTE table) to the PTE
    /// table for `n`; returns how many it moved. Contiguous runs are
    /// unfolded first (Linux arm64 `get_and_clear_full_ptes`).
    #[allow(clippy::too_many_arguments)]
    fn move_ptes(
        &self,
        ctx: &mut ThreadCtx,
        old_pmd: TableAddr,
        new_pmd: TableAddr,
        o: VirtAddr,
        n: VirtAddr,
        len: u64,
        d: &mut Deferred,
    ) -> Result<u64, Errno> {
        let missing = || Errno::Internal(format!("move_ptes without a PTE table at {o:#x}"));
        let old_t = self
            .pt
            .next_table(old_pmd, Level::PMD, o)
            .ok_or_else(missing)?;
        let new_t = self
            .pt
            .next_table(new_pmd, Level::PMD, n)
            .ok_or_else(missing)?;
        let (m_old, c_old) = self.pte_lockptr(old_t);
        let g_old = self.lock_counted(ctx, m_old, c_old);
        let (m_new, c_new) = self.pte_lockptr(new_t);
        let g_new = (!std::ptr::eq(m_old, m_new)).then(|| self.lock_counted(ctx, m_new, c_new));
        let mut moved = 0;
        let mut off = 0;
        while off < len {
            let (a, b) = (o + off, n + off);
            off += self.page;
            let e = match self.pt.read_entry(old_t, Level::PTE, a)? {
                Entry::Invalid => continue,
                Entry::Leaf {
                    contiguous: true, ..
                } => {
                    self.pt.contpte_try_unfold(old_t, Level::PTE, a)?;
                    self.pt.read_entry(old_t, Level::PTE, a)?
                }
                e => e,
            };
            self.pt.pte_clear(old_t, Level::PTE, a);
            let e = match e {
                Entry::Leaf { pa, attrs, .. } => Entry::Leaf {
                    pa,
                    attrs,
                    contiguous: false,
                },
                e => e,
            };
            self.pt.set_entry(new_t, Level::PTE, b, &e);
            moved += 1;
        }
        drop(g_new);
        drop(g_old);
        if moved > 0 {
            self.flush_moved(ctx, o.get(), len, d);
        }
        Ok(moved)
    }

    /// The PMD locks of two PMD tables, the second only if it is another
    /// lock (Linux: `pmd_lock`, then `spin_lock_nested` if they differ).
    fn pmd_lock_pair(
        &self,
        ctx: &mut ThreadCtx,
        old_pmd: TableAddr,
        new_pmd: TableAddr,
    ) -> (pt::sync::SpinGuard<'_>, Option<pt::sync::SpinGuard<'_>>) {
        let (m_old, c) = self.pmd_lockptr(old_pmd);
        let g_old = self.lock_counted(ctx, m_old, c);
        let (m_new, c) = self.pmd_lockptr(new_pmd);
        let g_new = (!std::ptr::eq(m_old, m_new)).then(|| self.lock_counted(ctx, m_new, c));
        (g_old, g_new)
    }

    /// Linux `flush_tlb_range` after moving `[va, va + len)`: through the
    /// table flusher while the mmap lock is held (a moved table must not be
    /// reached through the old address once the lock is dropped), or left
    /// to the caller's shootdown when none is installed.
    fn flush_moved(&self, ctx: &ThreadCtx, va: u64, len: u64, d: &mut Deferred) {
        match self.table_flusher.get() {
            Some(f) => {
                let flush = Flush {
                    ranges: vec![(va, len)],
                };
                f(crate::gather::GatherFlush {
                    cpu: ctx.cpu,
                    flush: &flush,
                    tables_too: true,
                    pt: &self.pt,
                    tables: pt::table::FreedTables::default(),
                });
                flush.done();
            }
            None => {
                d.add_flush(va, len);
                d.flush_tables = true;
            }
        }
    }
}

// Linux: mm/mremap.c, vma_to_resize (check_prep_vma)
/// The VMA at `addr`, which must hold all of `[addr, addr + old_len)`.
fn vma_to_resize(vmas: &Vmas, addr: u64, old_len: u64) -> Result<Vma, Errno> {
    let vma = vmas
        .find(addr)
        .ok_or(Errno::Fault("mremap of an unmapped address"))?;
    if old_len > vma.end - addr {
        return Err(Errno::Fault("mremap range is not inside one VMA"));
    }
    Ok(vma.clone())
}

#[cfg(test)]
mod tests {
    use super::get_extent;

    const M2: u64 = 2 << 20;

    #[test]
    fn extents_stop_at_either_sides_boundary() {
        // Both aligned: a whole PMD span.
        assert_eq!(get_extent(M2, 4 * M2, 10 * M2, 8 * M2), M2);
        // The end of the range comes first.
        assert_eq!(get_extent(M2, 4 * M2, 4 * M2 + 4096, 8 * M2), 4096);
        // The source is 4 KiB into a span: up to its boundary.
        assert_eq!(get_extent(M2, M2 + 4096, 10 * M2, 8 * M2), M2 - 4096);
        // The destination's boundary comes first.
        assert_eq!(get_extent(M2, M2, 10 * M2, 3 * M2 - 8192), 8192);
        // At the top of the address space the next boundary wraps to 0.
        let top = u64::MAX - M2 + 1;
        assert_eq!(get_extent(M2, top, u64::MAX, 0), M2 - 1);
    }
}
