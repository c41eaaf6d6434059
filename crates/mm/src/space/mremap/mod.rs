//! mremap (Linux mm/mremap.c): shrinking a mapping, growing it in place,
//! and moving it with its page tables (the table moves are in `tables`).
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

mod tables;

use super::populate::PopulateMode;
use super::AddressSpace;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::{AnonVma, Backing, Vma, Vmas};

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

/// A move checked by `mremap_inner` (Linux `struct vma_remap_struct`):
/// `[addr, addr + old_len)` goes to `[new_addr, new_addr + new_len)`.
///
/// Invariants: every address and length is page-aligned, both lengths are
/// non-zero; `mremap_to` checks that the destination is inside the user
/// address space and does not overlap the source before moving.
#[derive(Debug, Clone, Copy)]
struct Remap {
    addr: u64,
    old_len: u64,
    new_addr: u64,
    new_len: u64,
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
                let vrm = Remap {
                    addr,
                    old_len,
                    new_addr,
                    new_len,
                    dontunmap: args.dontunmap,
                };
                return self.mremap_to(ctx, &mut vmas, vrm, d);
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
            let _ = self.populate(ctx, vmas, start, end, PopulateMode::PerVma, d);
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
        vrm: Remap,
        d: &mut Deferred,
    ) -> Result<Remapped, Errno> {
        let Remap {
            addr,
            old_len,
            new_addr,
            new_len,
            ..
        } = vrm;
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
        let vrm = Remap { old_len, ..vrm };
        let out = self.move_vma(ctx, vmas, &vma, vrm, d)?;
        if vrm.dontunmap {
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
    /// Moves the source of `vrm` (inside `vma`) to a new VMA over its
    /// destination (merged with its neighbours there when Linux's
    /// `copy_vma` would) and moves its tables; the caller then unmaps the
    /// source (or keeps it, with MREMAP_DONTUNMAP). A locked mapping grown
    /// by the move has its new pages populated.
    fn move_vma(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &mut Vmas,
        vma: &Vma,
        vrm: Remap,
        d: &mut Deferred,
    ) -> Result<Remapped, Errno> {
        let Remap {
            addr,
            old_len,
            new_addr,
            new_len,
            ..
        } = vrm;
        // Linux: copy_vma -> vma_merge_new_range, else a new VMA (the
        // anon_vma shared with the source: anon_vma_clone).
        vmas.insert_merging(
            self.piece_at(vma, addr, new_addr, new_addr + new_len),
            self.page_shift,
        );
        let mut out = self.move_page_tables(ctx, vma, addr, new_addr, old_len, d)?;
        if vma.flags.locked && new_len > old_len {
            let (s, e) = (new_addr + old_len, new_addr + new_len);
            let _ = self.populate(ctx, vmas, s, e, PopulateMode::PerVma, d);
        }
        out.addr = new_addr;
        Ok(out)
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
