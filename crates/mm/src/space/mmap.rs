//! mmap and munmap (Linux mm/mmap.c, mm/vma.c).

use super::populate::PopulateMode;
use super::AddressSpace;
use crate::cache::{MemObject, ObjectKind, ShmemHuge};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::{AnonVma, Backing, Prot, Vma, VmaFlags, Vmas};
use std::sync::Arc;

/// What backs a new mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    Anon,
    /// A file of its own, whose pages start in the page cache (`cached`) or
    /// not, mapped from byte `offset` of it (mmap's offset, page-aligned;
    /// the file is that much longer than the mapping).
    File {
        cached: bool,
        offset: u64,
    },
    /// tmpfs memory (always shared): a memfd, or shared anonymous memory.
    Shmem,
    /// A file of its own on a tmpfs mounted with `huge=` (always shared,
    /// as large as the mapping).
    Tmpfs(ShmemHuge),
}

/// The arguments of [`AddressSpace::mmap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmapArgs {
    /// The fixed address (placement is the caller's).
    pub addr: u64,
    pub len: u64,
    pub kind: MapKind,
    /// MAP_SHARED (forced for shmem).
    pub shared: bool,
    pub prot: Prot,
    /// MAP_POPULATE.
    pub populate: bool,
    /// MAP_LOCKED.
    pub locked: bool,
    /// MAP_NORESERVE (VM_NORESERVE: not charged to the commit limit; it
    /// matters to the model only because VMAs that differ in it do not
    /// merge).
    pub noreserve: bool,
    /// MAP_FIXED (replace what is there) instead of MAP_FIXED_NOREPLACE.
    pub replace: bool,
}

impl MmapArgs {
    /// A private read-write anonymous mapping at `addr`.
    pub fn anon(addr: u64, len: u64) -> MmapArgs {
        MmapArgs {
            addr,
            len,
            kind: MapKind::Anon,
            shared: false,
            prot: Prot::RW,
            populate: false,
            locked: false,
            noreserve: false,
            replace: false,
        }
    }
}

impl AddressSpace {
    /// Linux `mmap` with MAP_FIXED_NOREPLACE (or MAP_FIXED if `replace`).
    ///
    /// # Errors
    /// [`Errno::Inval`] for a zero length or a misaligned address;
    /// [`Errno::NoMem`] for a range past the user address space;
    /// [`Errno::Exist`] if the range overlaps a mapping and `replace` is off.
    pub fn mmap(&self, ctx: &mut ThreadCtx, args: MmapArgs) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.mmap_inner(ctx, args, &mut d);
        self.finish_op(r, d)
    }

    fn mmap_inner(
        &self,
        ctx: &mut ThreadCtx,
        args: MmapArgs,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if args.len == 0 {
            return Err(Errno::Inval("mmap of length 0"));
        }
        if !args.addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("mmap address not page-aligned"));
        }
        let len = self
            .page_align(args.len)
            .ok_or(Errno::NoMem("length overflows"))?;
        let end = args
            .addr
            .checked_add(len)
            .filter(|e| *e <= self.user_limit())
            .ok_or(Errno::NoMem("range past the user address space"))?;
        let start = args.addr;
        let shared = args.shared || matches!(args.kind, MapKind::Shmem | MapKind::Tmpfs(_));
        let backing = match (args.kind, shared) {
            (MapKind::Anon, false) => Backing::Anon,
            // Linux: MAP_SHARED|MAP_ANONYMOUS is shmem (shmem_zero_setup).
            // Both live on the internal mount (shmem_zero_setup, memfd_create),
            // as large as the mapping (the kernel backend's ftruncate).
            (MapKind::Anon, true) | (MapKind::Shmem, _) => {
                let obj = MemObject::new(ObjectKind::Shmem, false, self.mem().clone())
                    .with_huge(self.internal_mount_huge())
                    .sized(len >> self.page_shift);
                let obj = if args.kind == MapKind::Anon {
                    obj.anon_shmem()
                } else {
                    obj
                };
                Backing::Object {
                    obj: Arc::new(obj),
                    pgoff: 0,
                }
            }
            (MapKind::Tmpfs(huge), _) => Backing::Object {
                obj: Arc::new(
                    MemObject::new(ObjectKind::Shmem, false, self.mem().clone())
                        .with_huge(huge)
                        .sized(len >> self.page_shift),
                ),
                pgoff: 0,
            },
            (MapKind::File { cached, offset }, _) => {
                if !offset.is_multiple_of(self.page) {
                    return Err(Errno::Inval("mmap offset not page-aligned"));
                }
                let pgoff = offset >> self.page_shift;
                Backing::Object {
                    obj: Arc::new(
                        MemObject::new(ObjectKind::File, cached, self.mem().clone())
                            .sized(pgoff + (len >> self.page_shift)),
                    ),
                    pgoff,
                }
            }
        };
        {
            let mut vmas = self.mmap_write(ctx);
            if vmas.overlapping(start, end).next().is_some() {
                if !args.replace {
                    return Err(Errno::Exist);
                }
                let r = self.munmap_locked(ctx, &mut vmas, start, end, d);
                self.flush_unlinked_tables(ctx, d);
                r?;
            }
            // Linux: mm/vma.c, __mmap_region, which tries vma_merge_new_range first.
            vmas.insert_merging(
                Vma {
                    start,
                    end,
                    prot: args.prot,
                    shared,
                    backing,
                    flags: VmaFlags {
                        locked: args.locked,
                        // Linux: accountable_mapping
                        account: !shared && args.prot.write && !args.noreserve,
                        noreserve: args.noreserve,
                        ..VmaFlags::default()
                    },
                    anon_vma: AnonVma::default(),
                },
                self.page_shift,
            );
        }
        if args.populate || args.locked {
            // Linux: mm_populate after the write lock is dropped; errors ignored.
            let vmas = self.mmap_read(ctx);
            let _ = self.populate(ctx, &vmas, start, end, PopulateMode::PerVma, d);
        }
        Ok(())
    }

    /// Linux `munmap`: unmaps `[addr, addr + len)` (whole or part of VMAs,
    /// splitting them) and frees the tables no VMA needs (`free_pgtables`).
    /// Unmapping nothing succeeds, as on Linux.
    ///
    /// # Errors
    /// [`Errno::Inval`] for a misaligned address, a zero length or a range
    /// past the user address space.
    pub fn munmap(&self, ctx: &mut ThreadCtx, addr: u64, len: u64) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.munmap_inner(ctx, addr, len, &mut d);
        self.finish_op(r, d)
    }

    fn munmap_inner(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if !addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("munmap address not page-aligned"));
        }
        if len == 0 {
            return Err(Errno::Inval("munmap of length 0"));
        }
        let len = self
            .page_align(len)
            .ok_or(Errno::Inval("length overflows"))?;
        let end = addr
            .checked_add(len)
            .filter(|e| *e <= self.user_limit())
            .ok_or(Errno::Inval("range past the user address space"))?;
        let mut vmas = self.mmap_write(ctx);
        let r = self.munmap_locked(ctx, &mut vmas, addr, end, d);
        self.flush_unlinked_tables(ctx, d);
        drop(vmas);
        r
    }

    // Linux: mm/vma.c, do_vmi_align_munmap + vms_clear_ptes (unmap_vmas, free_pgtables)
    pub(super) fn munmap_locked(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &mut Vmas,
        start: u64,
        end: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        self.split_vma(ctx, vmas, start, d)?;
        self.split_vma(ctx, vmas, end, d)?;
        let starts = vmas.starts_in(start, end);
        if starts.is_empty() {
            return Ok(());
        }
        let removed: Vec<Vma> = starts.iter().filter_map(|s| vmas.remove(*s)).collect();
        for v in &removed {
            self.zap_range(ctx, v, v.start, v.end, false, d)?;
        }
        let first = removed.first().map_or(start, |v| v.start);
        let last = removed.last().map_or(end, |v| v.end);
        let floor = vmas.prev_end(first);
        let ceiling = vmas.next_start(last).unwrap_or(u64::MAX);
        self.free_pgtables(ctx, first, last, floor, ceiling, d)?;
        for v in removed {
            if let Backing::Object { obj, .. } = v.backing {
                d.objects.push(obj);
            }
        }
        Ok(())
    }
}
