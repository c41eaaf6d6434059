//! The address space: VMAs over one page-table tree, and the system calls
//! that change them (mmap, munmap, mprotect, madvise, mlock, msync).

use crate::cache::{MemObject, ObjectKind};
use crate::config::{MmConfig, MthpPolicy, ThpMode};
use crate::counters::{MmCounters, ThreadCounters, ThreadCtx};
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::{Backing, Prot, Vma, VmaFlags, Vmas};
use pt::sync::{Mutex, MutexGuard, SpinLock};
use pt::{Attrs, Entry, Geometry, Level, PageTable, Perms, PhysMem, TableAddr};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// What backs a new mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    Anon,
    /// A file of its own, whose pages start in the page cache (`cached`) or not.
    File {
        cached: bool,
    },
    /// tmpfs memory (always shared).
    Shmem,
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
            replace: false,
        }
    }
}

/// madvise advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Advice {
    DontNeed,
    Free,
    HugePage,
    NoHugePage,
    PopulateRead,
    PopulateWrite,
    WillNeed,
    PageOut,
}

/// Which RSS counter a page counts in (Linux `MM_ANONPAGES`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rss {
    Anon = 0,
    File = 1,
    Shmem = 2,
}

/// What a present PTE maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageKind {
    /// The shared zero page (no RSS).
    Zero,
    /// A private anonymous page (freed when unmapped).
    Anon,
    /// A page of a memory object's cache.
    Cache(Rss),
}

/// A large anonymous folio (mTHP or THP): its size and how many of its
/// base pages are still mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Folio {
    pub size: u64,
    pub mapped: u64,
}

/// One simulated process address space (Linux `mm_struct`).
/// Invalidates `flush` (leaf and table translations) on every CPU where the
/// address space may be cached; the first argument is the CPU of the caller.
pub type TableFlusher = Box<dyn Fn(Option<usize>, &pt::table::Flush) + Send + Sync>;

pub struct AddressSpace {
    /// Shoots down the translations of unlinked tables while the mmap lock
    /// is still held (see [`AddressSpace::set_table_flusher`]).
    pub(crate) table_flusher: std::sync::OnceLock<TableFlusher>,
    pub(crate) cfg: MmConfig,
    pub(crate) pt: PageTable,
    /// The mmap lock over the VMAs.
    pub(crate) vmas: crate::mmap_lock::SlotRwLock<Vmas>,
    /// `mm->page_table_lock`.
    pub(crate) ptl: SpinLock,
    pub(crate) page: u64,
    pub(crate) page_shift: u32,
    /// Bytes one PMD entry maps (the PMD-sized THP).
    pub(crate) pmd_size: u64,
    /// The shared zero page.
    pub(crate) zero_pa: u64,
    /// The PTE of a dirty anonymous page (address 0) for each protection
    /// ([`Prot::index`]), from [`PageTable::leaf_bits`]: the 4 KiB write
    /// fault's entry without encoding its attributes per fault.
    pub(crate) anon_pte_bits: [Option<u64>; 8],
    /// The huge zero page, if the PMD level may hold leaves.
    pub(crate) huge_zero_pa: Option<u64>,
    /// mTHP sizes with their policies, largest first.
    pub(crate) mthp: Vec<(u64, MthpPolicy)>,
    /// Deposited PTE tables per huge-PMD address (Linux `pgtable_trans_huge_deposit`).
    pub(crate) deposits: Mutex<HashMap<u64, TableAddr>>,
    /// Large anonymous folios by head address.
    pub(crate) folios: Mutex<HashMap<u64, Folio>>,
    pub(crate) nr_folios: AtomicUsize,
    /// RSS pages per [`Rss`] kind, per thread (Linux `mm->rss_stat`).
    pub(crate) rss: crate::percpu::SplitCounters<3>,
    /// Base pages of PMD-mapped anonymous THP.
    pub(crate) anon_huge: AtomicI64,
    /// Work of operations that failed after changing something (Linux
    /// keeps what was done before the error): handed out with the next
    /// operation's [`Deferred`] or by [`AddressSpace::take_pending`].
    pending: Mutex<Deferred>,
    has_pending: AtomicBool,
    exited: AtomicBool,
    /// Unique among address spaces (keys the per-thread walk cache).
    pub(crate) id: u64,
    /// Bumped by `free_pgtables` (which alone unlinks tables above the PTE
    /// level, under the mmap write lock): a cached walk is valid while it
    /// is unchanged.
    pub(crate) upper_gen: AtomicU64,
}

/// Source of [`AddressSpace`] ids.
static NEXT_SPACE_ID: AtomicU64 = AtomicU64::new(1);

impl std::fmt::Debug for AddressSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressSpace")
            .field("geometry", &self.pt.geometry().name())
            .field("cfg", &self.cfg)
            .finish()
    }
}

pub(crate) fn lock_plain<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AddressSpace {
    /// An empty address space over fresh simulated memory.
    ///
    /// # Errors
    /// [`Errno::Inval`] for a geometry with a single level; [`Errno::NoMem`]
    /// if the root table or the zero pages cannot be allocated.
    pub fn new(geometry: Arc<Geometry>, cfg: MmConfig) -> Result<AddressSpace, Errno> {
        let mem = Arc::new(PhysMem::new(geometry.page_shift()));
        Self::with_memory(geometry, mem, cfg)
    }

    /// As [`AddressSpace::new`] over the given physical memory.
    ///
    /// # Errors
    /// As [`AddressSpace::new`].
    pub fn with_memory(
        geometry: Arc<Geometry>,
        mem: Arc<PhysMem>,
        cfg: MmConfig,
    ) -> Result<AddressSpace, Errno> {
        if geometry.num_levels() <= Level::PMD.get() {
            return Err(Errno::Inval(
                "the geometry needs a PMD level above the PTEs",
            ));
        }
        let page = geometry.page_size();
        let pmd_size = geometry.entry_size(Level::PMD.get());
        let thp_capable = geometry.level(Level::PMD.get()).leaf;
        let zero_pa = mem.alloc_data(page)?;
        let huge_zero_pa = if thp_capable {
            match mem.alloc_data(pmd_size) {
                Ok(pa) => Some(pa),
                Err(e) => {
                    let _ = mem.free_data(zero_pa, page);
                    return Err(e.into());
                }
            }
        } else {
            None
        };
        let mut mthp: Vec<(u64, MthpPolicy)> = cfg
            .mthp
            .iter()
            .filter(|(s, p)| {
                s.is_power_of_two() && **s > page && **s < pmd_size && **p != MthpPolicy::Never
            })
            .map(|(s, p)| (*s, *p))
            .collect();
        mthp.sort_by_key(|m| std::cmp::Reverse(m.0));
        let pt = match PageTable::new(geometry.clone(), mem.clone()) {
            Ok(pt) => pt,
            Err(e) => {
                let _ = mem.free_data(zero_pa, page);
                if let Some(h) = huge_zero_pa {
                    let _ = mem.free_data(h, pmd_size);
                }
                return Err(e.into());
            }
        };
        let anon_pte_bits = std::array::from_fn(|i| {
            pt.leaf_bits(Level::PTE, &anon_leaf_attrs(Prot::from_index(i), true))
        });
        Ok(AddressSpace {
            table_flusher: std::sync::OnceLock::new(),
            cfg,
            pt,
            vmas: crate::mmap_lock::SlotRwLock::new(Vmas::default()),
            ptl: SpinLock::new(()),
            page,
            page_shift: geometry.page_shift(),
            pmd_size,
            zero_pa,
            anon_pte_bits,
            huge_zero_pa,
            mthp,
            deposits: Mutex::new(HashMap::new()),
            folios: Mutex::new(HashMap::new()),
            nr_folios: AtomicUsize::new(0),
            rss: Default::default(),
            anon_huge: AtomicI64::new(0),
            pending: Mutex::new(Deferred::none()),
            has_pending: AtomicBool::new(false),
            exited: AtomicBool::new(false),
            id: NEXT_SPACE_ID.fetch_add(1, Ordering::Relaxed),
            upper_gen: AtomicU64::new(0),
        })
    }

    pub fn config(&self) -> &MmConfig {
        &self.cfg
    }
    /// The page-table tree (for the MMU model's walks).
    pub fn page_table(&self) -> &PageTable {
        &self.pt
    }
    pub fn geometry(&self) -> &Geometry {
        self.pt.geometry()
    }
    pub fn mem(&self) -> &Arc<PhysMem> {
        self.pt.mem_arc()
    }
    /// Physical address of the shared zero page.
    pub fn zero_page(&self) -> u64 {
        self.zero_pa
    }
    /// Physical address of the huge zero page, if the geometry has one.
    pub fn huge_zero_page(&self) -> Option<u64> {
        self.huge_zero_pa
    }
    /// A copy of the VMAs (for reports and tests).
    pub fn vmas(&self) -> Vec<Vma> {
        self.vmas.read().0.iter().cloned().collect()
    }

    // -----------------------------------------------------------------
    // Helpers shared by the fault handler and the range operations.

    pub(crate) fn rss_add(&self, k: Rss, pages: i64) {
        self.rss.add(k as usize, pages);
    }

    /// What the present PTE for `va` in `vma` mapping `pa` maps.
    pub(crate) fn classify(&self, vma: &Vma, va: u64, pa: u64) -> PageKind {
        if pa == self.zero_pa
            || self
                .huge_zero_pa
                .is_some_and(|h| pa >= h && pa < h + self.pmd_size)
        {
            return PageKind::Zero;
        }
        match &vma.backing {
            Backing::Anon => PageKind::Anon,
            Backing::Object { obj, .. } => {
                let rss = match obj.kind {
                    ObjectKind::File => Rss::File,
                    ObjectKind::Shmem => Rss::Shmem,
                };
                if vma.shared {
                    return PageKind::Cache(rss);
                }
                // A private file mapping: the page-cache page, or a COW copy.
                let idx = vma.pgoff_of(va, self.page_shift);
                match obj.lock().get(&idx) {
                    Some(crate::cache::Slot::Cached { pa: c, .. }) if *c == pa => {
                        PageKind::Cache(rss)
                    }
                    _ => PageKind::Anon,
                }
            }
        }
    }

    /// The attributes of a PTE mapping a page of `kind` in `vma` (Linux
    /// `vm_page_prot` plus `maybe_mkwrite` / `can_change_pte_writable`).
    /// PROT_NONE is modelled as a present kernel-only entry: the model's
    /// user accesses fault on it as Linux's `_PAGE_PROTNONE` entries do.
    pub(crate) fn leaf_attrs(&self, vma: &Vma, kind: PageKind, dirty: bool) -> Attrs {
        let writable = match kind {
            PageKind::Zero => false,
            PageKind::Anon => true,
            PageKind::Cache(_) => vma.shared && (!vma.writenotify() || dirty),
        };
        leaf_attrs_of(vma.prot, writable, dirty)
    }

    /// Drops one mapping of the anonymous page at `pa`; frees its folio
    /// (after the flush) when it was the last.
    pub(crate) fn put_anon_page(&self, pa: u64, d: &mut Deferred) {
        if self.nr_folios.load(Ordering::Acquire) > 0 {
            let mut f = lock_plain(&self.folios);
            let mut size = self.page << 1;
            while size <= self.pmd_size {
                let head = pa & !(size - 1);
                if let Some(folio) = f.get_mut(&head) {
                    if folio.size == size {
                        folio.mapped -= 1;
                        if folio.mapped == 0 {
                            f.remove(&head);
                            self.nr_folios.fetch_sub(1, Ordering::Release);
                            d.frames.push((head, size));
                        }
                        return;
                    }
                }
                size <<= 1;
            }
        }
        d.frames.push((pa, self.page));
    }

    pub(crate) fn add_folio(&self, head: u64, size: u64) {
        lock_plain(&self.folios).insert(
            head,
            Folio {
                size,
                mapped: size / self.page,
            },
        );
        self.nr_folios.fetch_add(1, Ordering::Release);
    }

    /// The PMD table for `va`, if the upper levels exist (a lockless walk:
    /// locking invariant 2; Linux `pgd_offset` ... `pmd_offset`).
    ///
    /// # Errors
    /// `Err(level)`: the walk stopped at an entry of `level` that is not a
    /// table.
    #[inline]
    pub(crate) fn find_pmd_table(&self, va: u64) -> Result<TableAddr, Level> {
        let mut table = self.pt.root_table();
        let mut level = self.pt.root_level();
        while level > Level::PMD {
            table = self.pt.next_table(table, level, va).ok_or(level)?;
            level = level.down();
        }
        Ok(table)
    }

    /// The PMD table for `va`, allocating missing upper tables (Linux
    /// `__pud_alloc` / `__pmd_alloc`: allocate, then link under
    /// `page_table_lock` if still empty). A repeat of this thread's last
    /// walk is answered by [`crate::accel::PmdWalkCache`].
    #[inline]
    pub(crate) fn alloc_pmd_table(&self, ctx: &mut ThreadCtx, va: u64) -> Result<TableAddr, Errno> {
        if self.pt.root_level() == Level::PMD {
            return Ok(self.pt.root_table());
        }
        let span = va & !(self.pt.entry_size(Level::PUD) - 1);
        // The mmap lock is held (read or write): `upper_gen` cannot move
        // under this walk.
        let gen = self.upper_gen.load(Ordering::Acquire);
        if let Some(table) = crate::accel::PmdWalkCache::get(self.id, gen, span) {
            return Ok(table);
        }
        let table = self.walk_alloc_pmd_table(ctx, va)?;
        crate::accel::PmdWalkCache::set(self.id, gen, span, table);
        Ok(table)
    }

    /// The walk [`AddressSpace::alloc_pmd_table`] caches.
    pub(crate) fn walk_alloc_pmd_table(
        &self,
        ctx: &mut ThreadCtx,
        va: u64,
    ) -> Result<TableAddr, Errno> {
        let mut table = self.pt.root_table();
        let mut level = self.pt.root_level();
        while level > Level::PMD {
            if self.pt.is_none(table, level, va) {
                let ptl = || self.lock_counted(ctx, &self.ptl, crate::LockClass::PageTableLock);
                self.pt.alloc_install(table, level, va, ptl)?;
            }
            table = match self.pt.read_entry(table, level, va)? {
                Entry::Table { pa } => TableAddr::new(pa),
                _ => {
                    return Err(Errno::Internal(format!(
                        "a leaf at {level} above the PMD for {va:#x}"
                    )))
                }
            };
            level = level.down();
        }
        Ok(table)
    }

    pub(crate) fn user_limit(&self) -> u64 {
        self.pt.geometry().user_limit()
    }

    fn page_align(&self, len: u64) -> Option<u64> {
        len.checked_add(self.page - 1).map(|l| l & !(self.page - 1))
    }

    // -----------------------------------------------------------------
    // System calls.

    /// Whether an operation holds the mmap lock for writing (for tests and
    /// assertions about the lock protocol).
    pub fn mmap_lock_is_write_locked(&self) -> bool {
        self.vmas.is_write_locked()
    }

    /// Installs the function that shoots down the translations of page
    /// tables an operation unlinked, called while the operation still holds
    /// the mmap lock (Linux: `free_pgtables` and `tlb_finish_mmu` both run
    /// before `mmap_write_unlock`, and PT_RECLAIM's flush before
    /// `mmap_read_unlock`). Without it, another thread could map and fault
    /// in the freed table's span while its CPU's walk cache still points at
    /// the unlinked table. Callers that model no TLB need none.
    /// Returns `false` if one was already installed.
    pub fn set_table_flusher(&self, f: TableFlusher) -> bool {
        self.table_flusher.set(f).is_ok()
    }

    /// If `d` unlinked tables, flushes everything it changed now, through
    /// the table flusher (the caller still holds the mmap lock), leaving
    /// only the freeing of tables and frames to [`Deferred::complete`].
    pub(crate) fn flush_unlinked_tables(&self, ctx: &ThreadCtx, d: &mut Deferred) {
        let Some(f) = self.table_flusher.get() else {
            return;
        };
        if d.tables.tables.is_empty() {
            return;
        }
        let (all, _) = d.take_flush();
        f(ctx.cpu, &all);
        all.done();
    }

    /// The work left by operations that failed midway (see the field doc).
    /// Complete it like any [`Deferred`].
    pub fn take_pending(&self) -> Deferred {
        if !self.has_pending.swap(false, Ordering::AcqRel) {
            return Deferred::none();
        }
        std::mem::take(&mut *lock_plain(&self.pending))
    }

    /// Ends an operation: its work on success (with any pending work), or
    /// the error with the work parked.
    fn finish_op(&self, r: Result<(), Errno>, mut d: Deferred) -> Result<Deferred, Errno> {
        match r {
            Ok(()) => {
                d.merge(self.take_pending());
                Ok(d)
            }
            Err(e) => {
                if !d.is_empty() {
                    lock_plain(&self.pending).merge(d);
                    self.has_pending.store(true, Ordering::Release);
                }
                Err(e)
            }
        }
    }

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
        let shared = args.shared || args.kind == MapKind::Shmem;
        let backing = match (args.kind, shared) {
            (MapKind::Anon, false) => Backing::Anon,
            // Linux: MAP_SHARED|MAP_ANONYMOUS is shmem (shmem_zero_setup).
            (MapKind::Anon, true) | (MapKind::Shmem, _) => Backing::Object {
                obj: Arc::new(MemObject::new(ObjectKind::Shmem, false, self.mem().clone())),
                pgoff: 0,
            },
            (MapKind::File { cached }, _) => Backing::Object {
                obj: Arc::new(MemObject::new(ObjectKind::File, cached, self.mem().clone())),
                pgoff: 0,
            },
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
            vmas.insert(Vma {
                start,
                end,
                prot: args.prot,
                shared,
                backing,
                flags: VmaFlags {
                    locked: args.locked,
                    ..VmaFlags::default()
                },
            });
        }
        if args.populate || args.locked {
            // Linux: mm_populate after the write lock is dropped; errors ignored.
            let vmas = self.mmap_read(ctx);
            let _ = self.populate(ctx, &vmas, start, end, PopulateMode::PerVma, false, d);
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
    fn munmap_locked(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &mut Vmas,
        start: u64,
        end: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let starts = vmas.isolate(start, end, self.page_shift);
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
        self.free_pgtables(first, last, floor, ceiling, d)?;
        for v in removed {
            if let Backing::Object { obj, .. } = v.backing {
                d.objects.push(obj);
            }
        }
        Ok(())
    }

    /// Linux `mprotect`: changes the protection of `[addr, addr + len)`,
    /// splitting VMAs, and of the entries already mapped.
    ///
    /// # Errors
    /// [`Errno::Inval`] for a misaligned address; [`Errno::NoMem`] if part
    /// of the range is not mapped (the VMAs before the hole are changed, as
    /// Linux does).
    pub fn mprotect(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        prot: Prot,
    ) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.mprotect_inner(ctx, addr, len, prot, &mut d);
        self.finish_op(r, d)
    }

    fn mprotect_inner(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        prot: Prot,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if !addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("mprotect address not page-aligned"));
        }
        if len == 0 {
            return Ok(());
        }
        let len = self
            .page_align(len)
            .ok_or(Errno::NoMem("length overflows"))?;
        let end = addr
            .checked_add(len)
            .filter(|e| *e <= self.user_limit())
            .ok_or(Errno::NoMem("range past the user address space"))?;
        let mut vmas = self.mmap_write(ctx);
        let mut protect = || -> Result<(), Errno> {
            if vmas.find(addr).is_none() {
                return Err(Errno::NoMem("mprotect of an unmapped address"));
            }
            let starts = vmas.isolate(addr, end, self.page_shift);
            let mut cur = addr;
            for s in starts {
                if s > cur {
                    return Err(Errno::NoMem("mprotect range has a hole"));
                }
                let v = {
                    let v = vmas.get_mut(s).expect("isolated");
                    v.prot = prot;
                    v.clone()
                };
                self.change_protection(ctx, &v, v.start, v.end, d)?;
                cur = v.end;
            }
            if cur < end {
                return Err(Errno::NoMem("mprotect range has a hole"));
            }
            Ok(())
        };
        let r = protect();
        self.flush_unlinked_tables(ctx, d);
        drop(vmas);
        r
    }

    /// Linux `madvise`.
    ///
    /// # Errors
    /// [`Errno::Inval`] for a misaligned address, DONTNEED or PAGEOUT on a
    /// locked VMA, FREE on a VMA that is not private anonymous;
    /// [`Errno::NoMem`] if part of the range is not mapped (the rest is
    /// advised); [`Errno::Fault`] when POPULATE_* meets a range it cannot
    /// fault in (PROT_NONE, or writing a read-only mapping).
    pub fn madvise(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        advice: Advice,
    ) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.madvise_inner(ctx, addr, len, advice, &mut d);
        self.finish_op(r, d)
    }

    fn madvise_inner(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        advice: Advice,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if !addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("madvise address not page-aligned"));
        }
        if len == 0 {
            return Ok(());
        }
        let len = self
            .page_align(len)
            .ok_or(Errno::Inval("length overflows"))?;
        let end = addr
            .checked_add(len)
            .ok_or(Errno::Inval("range wraps around"))?;
        match advice {
            Advice::HugePage | Advice::NoHugePage => {
                // Linux: hugepage_madvise, with VMA splits (madvise_update_vma).
                let mut vmas = self.mmap_write(ctx);
                let starts = vmas.isolate(addr, end, self.page_shift);
                let mut covered = 0;
                for s in starts {
                    let v = vmas.get_mut(s).expect("isolated");
                    covered += v.end - v.start;
                    if advice == Advice::HugePage {
                        v.flags.hugepage = true;
                        v.flags.nohugepage = false;
                    } else {
                        v.flags.nohugepage = true;
                        v.flags.hugepage = false;
                    }
                }
                if covered < end - addr {
                    return Err(Errno::NoMem("madvise range has a hole"));
                }
                Ok(())
            }
            _ => {
                let vmas = self.mmap_read(ctx);
                // Under the read lock, as Linux's madvise; tables that
                // PT_RECLAIM unlinked are shot down before it is released.
                let mut advise = || -> Result<(), Errno> {
                    let list: Vec<Vma> = vmas.overlapping(addr, end).cloned().collect();
                    let mut covered = 0;
                    for v in &list {
                        let s = v.start.max(addr);
                        let e = v.end.min(end);
                        covered += e - s;
                        match advice {
                            Advice::DontNeed => {
                                // Linux: madvise_dontneed_free_valid_vma
                                if v.flags.locked {
                                    return Err(Errno::Inval("MADV_DONTNEED on a locked VMA"));
                                }
                                self.zap_range(ctx, v, s, e, true, d)?;
                            }
                            Advice::Free => {
                                if !v.is_anon() || v.flags.locked {
                                    return Err(Errno::Inval(
                                        "MADV_FREE needs private anonymous memory",
                                    ));
                                }
                                self.madvise_free(ctx, v, s, e, d)?;
                            }
                            Advice::PageOut => {
                                // Linux: can_madv_lru_vma
                                if v.flags.locked {
                                    return Err(Errno::Inval("MADV_PAGEOUT on a locked VMA"));
                                }
                                self.pageout(ctx, v, s, e, d)?;
                            }
                            Advice::WillNeed => {
                                if let Some(obj) = v.object() {
                                    obj.readahead(
                                        v.pgoff_of(s, self.page_shift),
                                        (e - s) / self.page,
                                    );
                                }
                            }
                            Advice::PopulateRead | Advice::PopulateWrite => {
                                let mode = if advice == Advice::PopulateRead {
                                    PopulateMode::Read
                                } else {
                                    PopulateMode::Write
                                };
                                self.populate(ctx, &vmas, s, e, mode, true, d)?;
                            }
                            Advice::HugePage | Advice::NoHugePage => unreachable!("handled above"),
                        }
                    }
                    if covered < end - addr {
                        return Err(Errno::NoMem("madvise range has a hole"));
                    }
                    Ok(())
                };
                let r = advise();
                self.flush_unlinked_tables(ctx, d);
                drop(vmas);
                r
            }
        }
    }

    /// Linux `mlock`: marks the VMAs VM_LOCKED (splitting them) and faults
    /// the range in. The start is rounded down to a page, as Linux does.
    ///
    /// # Errors
    /// [`Errno::NoMem`] if part of the range is not mapped.
    pub fn mlock(&self, ctx: &mut ThreadCtx, addr: u64, len: u64) -> Result<Deferred, Errno> {
        self.set_locked(ctx, addr, len, true)
    }

    /// Linux `munlock`.
    ///
    /// # Errors
    /// [`Errno::NoMem`] if part of the range is not mapped.
    pub fn munlock(&self, ctx: &mut ThreadCtx, addr: u64, len: u64) -> Result<Deferred, Errno> {
        self.set_locked(ctx, addr, len, false)
    }

    // Linux: mm/mlock.c, do_mlock / apply_vma_lock_flags, then __mm_populate
    fn set_locked(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        on: bool,
    ) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.set_locked_inner(ctx, addr, len, on, &mut d);
        self.finish_op(r, d)
    }

    fn set_locked_inner(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        on: bool,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let start = addr & !(self.page - 1);
        let len = self
            .page_align(len + (addr - start))
            .ok_or(Errno::Inval("length overflows"))?;
        if len == 0 {
            return Ok(());
        }
        let end = start
            .checked_add(len)
            .ok_or(Errno::Inval("range wraps around"))?;
        {
            let mut vmas = self.mmap_write(ctx);
            if vmas.find(start).is_none() {
                return Err(Errno::NoMem("mlock of an unmapped address"));
            }
            let starts = vmas.isolate(start, end, self.page_shift);
            let mut cur = start;
            for s in starts {
                if s > cur {
                    return Err(Errno::NoMem("mlock range has a hole"));
                }
                let v = vmas.get_mut(s).expect("isolated");
                v.flags.locked = on;
                cur = v.end;
            }
            if cur < end {
                return Err(Errno::NoMem("mlock range has a hole"));
            }
        }
        if on {
            let vmas = self.mmap_read(ctx);
            let _ = self.populate(ctx, &vmas, start, end, PopulateMode::PerVma, false, d);
        }
        Ok(())
    }

    /// Linux `msync(MS_SYNC)`: writes back the dirty pages of shared file
    /// mappings, write-protecting their PTEs (`folio_mkclean`).
    ///
    /// # Errors
    /// [`Errno::Inval`] for a misaligned address; [`Errno::NoMem`] if part
    /// of the range is not mapped.
    pub fn msync(&self, ctx: &mut ThreadCtx, addr: u64, len: u64) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.msync_inner(ctx, addr, len, &mut d);
        self.finish_op(r, d)
    }

    fn msync_inner(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if !addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("msync address not page-aligned"));
        }
        let len = self
            .page_align(len)
            .ok_or(Errno::NoMem("length overflows"))?;
        let end = addr
            .checked_add(len)
            .ok_or(Errno::NoMem("range wraps around"))?;
        let vmas = self.mmap_read(ctx);
        let mut covered = 0;
        for v in vmas.overlapping(addr, end) {
            let s = v.start.max(addr);
            let e = v.end.min(end);
            covered += e - s;
            if v.writenotify() {
                self.writeback(ctx, v, s, e, d)?;
            }
        }
        if covered < end - addr {
            return Err(Errno::NoMem("msync range has a hole"));
        }
        Ok(())
    }

    /// Unmaps everything and frees every table, the zero pages and the
    /// cache (Linux `exit_mmap`). After this, [`PhysMem::leaks`] must be empty.
    ///
    /// # Errors
    /// [`Errno::Internal`] on an inconsistency found while freeing.
    pub fn exit(&self, ctx: &mut ThreadCtx) -> Result<(), Errno> {
        if self.exited.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let mut d = Deferred::none();
        {
            let mut vmas = self.mmap_write(ctx);
            self.munmap_locked(ctx, &mut vmas, 0, self.user_limit(), &mut d)?;
        }
        d.merge(self.take_pending());
        d.complete(self)?;
        self.pt.teardown()?;
        let mem = self.pt.mem();
        mem.free_data(self.zero_pa, self.page)?;
        if let Some(h) = self.huge_zero_pa {
            mem.free_data(h, self.pmd_size)?;
        }
        Ok(())
    }

    // -----------------------------------------------------------------
    // Counters.

    /// Every counter now: the address-space-wide values from state plus the
    /// given threads' counters merged.
    pub fn counters(&self, threads: &[&ThreadCtx]) -> MmCounters {
        let mut t = ThreadCounters::default();
        for c in threads {
            t.merge(&c.counters);
        }
        let g = self.pt.geometry();
        let kb = |pages: i64| pages * (self.page as i64) / 1024;
        // Linux mm_pgtables_bytes: nr_ptes + nr_pmds + nr_puds (the PGD and a
        // P4D are not counted): the lowest three levels below the root.
        let vmpte_kb = [Level::PTE, Level::PMD, Level::PUD]
            .into_iter()
            .filter(|l| *l < self.pt.root_level())
            .map(|l| self.pt.tables_at(l) as i64 * g.table_bytes() as i64 / 1024)
            .sum();
        let pt_pages = self
            .pt
            .root_level()
            .down_to_pte()
            .map(|l| {
                (
                    self.pt.level_name(l).to_string(),
                    self.pt.tables_at(l) as i64,
                )
            })
            .collect();
        MmCounters {
            minor_faults: t.minor_faults as i64,
            major_faults: t.major_faults as i64,
            vmpte_kb,
            rss_anon_kb: kb(self.rss.sum(0)),
            rss_file_kb: kb(self.rss.sum(1)),
            rss_shmem_kb: kb(self.rss.sum(2)),
            anon_huge_kb: kb(self.anon_huge.load(Ordering::Relaxed)),
            pt_pages,
            threads: t,
        }
    }

    /// Whether PMD-sized THP may serve a fault at `va` in `vma` (Linux
    /// `thp_vma_allowable_order` + `thp_vma_suitable_order`).
    pub(crate) fn thp_allowed(&self, vma: &Vma, va: u64) -> bool {
        if self.huge_zero_pa.is_none() || !vma.is_anon() || vma.flags.nohugepage {
            return false;
        }
        let on = match self.cfg.thp {
            ThpMode::Always => true,
            ThpMode::Madvise => vma.flags.hugepage,
            ThpMode::Never => false,
        };
        let haddr = va & !(self.pmd_size - 1);
        on && haddr >= vma.start && haddr + self.pmd_size <= vma.end
    }

    /// The mTHP sizes allowed at `va` in `vma`, largest first (Linux
    /// `thp_vma_allowable_orders` + `thp_vma_suitable_orders`).
    pub(crate) fn mthp_sizes<'a>(
        &'a self,
        vma: &'a Vma,
        va: u64,
    ) -> impl Iterator<Item = u64> + 'a {
        self.mthp
            .iter()
            .filter(move |(size, pol)| {
                if !vma.is_anon() || vma.flags.nohugepage {
                    return false;
                }
                let on = match pol {
                    MthpPolicy::Always => true,
                    MthpPolicy::Madvise => vma.flags.hugepage,
                    MthpPolicy::Never => false,
                    MthpPolicy::Inherit => match self.cfg.thp {
                        ThpMode::Always => true,
                        ThpMode::Madvise => vma.flags.hugepage,
                        ThpMode::Never => false,
                    },
                };
                let base = va & !(size - 1);
                on && base >= vma.start && base + size <= vma.end
            })
            .map(|(s, _)| *s)
    }
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        let mut ctx = ThreadCtx::new();
        let _ = self.exit(&mut ctx);
    }
}

/// How [`AddressSpace::populate`] faults pages in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PopulateMode {
    /// Linux `populate_vma_page_range`: write faults for private writable
    /// mappings, read faults otherwise.
    PerVma,
    Read,
    Write,
}

impl AddressSpace {
    /// Faults in `[start, end)` as GUP would (Linux `faultin_page_range` /
    /// `populate_vma_page_range`): one fault per unsatisfied page, counted
    /// like any fault. `strict`: errors are returned (MADV_POPULATE_*),
    /// else skipped (MAP_POPULATE, mlock).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn populate(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &Vmas,
        start: u64,
        end: u64,
        mode: PopulateMode,
        strict: bool,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let list: Vec<&Vma> = vmas.overlapping(start, end).collect();
        for v in list {
            if !v.prot.accessible() {
                if strict {
                    return Err(Errno::Fault("populate of a PROT_NONE mapping"));
                }
                continue;
            }
            let write = match mode {
                PopulateMode::PerVma => v.prot.write && !v.shared,
                PopulateMode::Read => false,
                PopulateMode::Write => true,
            };
            if write && !v.prot.write {
                if strict {
                    return Err(Errno::Fault("MADV_POPULATE_WRITE of a read-only mapping"));
                }
                continue;
            }
            let mut va = v.start.max(start);
            let e = v.end.min(end);
            let mut tries = 0;
            while va < e {
                if let Ok(t) = self.pt.translate(va) {
                    if !write || t.attrs.perms.write || tries >= 3 {
                        va = (va & !(t.size - 1)) + t.size;
                        tries = 0;
                        continue;
                    }
                }
                tries += 1;
                match self.handle_mm_fault(ctx, v, va, write) {
                    Ok((dd, major)) => {
                        if major {
                            ctx.counters.major_faults += 1;
                        } else {
                            ctx.counters.minor_faults += 1;
                        }
                        d.merge(dd);
                    }
                    Err(e) => {
                        if strict {
                            return Err(e);
                        }
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The attributes of a leaf under `prot`: writable if `prot` allows it and
/// `writable` (the page kind's rule, see `AddressSpace::leaf_attrs`).
/// PROT_NONE leaves are kernel-only and read-only, as Linux keeps them.
fn leaf_attrs_of(prot: Prot, writable: bool, dirty: bool) -> Attrs {
    let perms = if !prot.accessible() {
        Perms {
            read: true,
            write: false,
            exec: false,
            user: false,
        }
    } else {
        Perms {
            read: true,
            write: prot.write && writable,
            exec: prot.exec,
            user: true,
        }
    };
    Attrs {
        perms,
        global: false,
        accessed: true,
        dirty,
        mem_type: pt::MemType::Normal,
    }
}

/// [`AddressSpace::leaf_attrs`] of an anonymous page under `prot`.
pub(crate) fn anon_leaf_attrs(prot: Prot, dirty: bool) -> Attrs {
    leaf_attrs_of(prot, true, dirty)
}
