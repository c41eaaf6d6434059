//! The address space: VMAs over one page-table tree (Linux `mm_struct`),
//! its life (creation, exit) and its accessors. The rest of it lives in one
//! file per concept:
//!
//! - `mmap`, `mprotect`, `madvise`, `mlock`, `msync`, `mremap`: the system
//!   calls;
//! - `finish`: how every system call ends (table shootdown, parked work);
//! - `populate`: faulting a range in ahead of access;
//! - `pages`: page kinds, RSS, folios and leaf attributes;
//! - `thp`: where huge pages may serve a fault;
//! - `vma_change`: splitting and merging VMAs (with the huge PMDs a split
//!   straddles);
//! - `anon_vma`: which VMAs have an anon_vma (it decides merges);
//! - `fork`: a child address space from this one (`dup_mmap`), COW both ways;
//! - `share`: anonymous frames shared by fork (holders, `PageAnonExclusive`);
//! - `rmap`: which other processes of a fork family map a page-cache page
//!   (writeback's write-protection everywhere, pageout's map count);
//! - `deferred_split`: the deferred split queue of large folios and its
//!   shrinker (partially mapped and underused THPs);
//! - `khugepaged`: MADV_COLLAPSE and khugepaged's scan, PTE-mapped ranges
//!   collapsed into PMD-mapped THPs;
//! - `swap`: swap entries (reclaim to a swap device, the fault back in,
//!   their zap and fork);
//! - `reclaim`: MADV_COLD / MADV_PAGEOUT / lazy-free discard of anonymous
//!   memory and the split of large folios (zero subpages to the zero page);
//! - `upper`: the walk to the PMD table;
//! - `usage`: the counters read from state.
//!
//! The range operations over the tables (zap, change_protection,
//! free_pgtables) are in [`crate::walk`], the fault handler in
//! [`crate::fault`], the lock protocol in [`crate::locking`].

mod anon_vma;
mod collapse_file;
mod deferred_split;
mod finish;
mod fork;
mod khugepaged;
mod lookup_node;
mod madvise;
mod mlock;
mod mmap;
mod mprotect;
mod mremap;
mod msync;
mod pages;
mod populate;
mod reclaim;
mod reclaim_huge_object;
mod reclaim_object_folio;
mod rmap;
mod share;
mod swap;
mod swap_ra;
mod thp;
mod upper;
mod usage;
mod vma_change;

pub use madvise::Advice;
pub use mmap::{MapKind, MmapArgs};
pub use mremap::{MremapArgs, Remapped};
pub(crate) use pages::{anon_leaf_attrs, Folio, PageKind, Rss};
pub(crate) use reclaim::{HugeStep, PageAdvice};
pub(crate) use rmap::Elsewhere;
pub use rmap::FamilyMember;

use crate::config::{MmConfig, MthpPolicy};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::gather::{GatherFlush, GatherLimits};
use crate::vma::{Prot, Vma, Vmas};
use pt::sync::{Mutex, MutexGuard, SpinLock};
use pt::{Geometry, Level, PageTable, PhysMem, TableAddr};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Invalidates [`GatherFlush::flush`] (leaf translations, and table ones when
/// `tables_too`) on every CPU where the address space may be cached, then
/// takes [`GatherFlush::tables`] to free once no CPU can reach them.
pub type TableFlusher = Box<dyn Fn(GatherFlush<'_>) + Send + Sync>;

/// One simulated process address space (Linux `mm_struct`).
pub struct AddressSpace {
    /// Shoots down the translations of unlinked tables while the mmap lock
    /// is still held (see [`AddressSpace::set_table_flusher`]).
    pub(crate) table_flusher: std::sync::OnceLock<TableFlusher>,
    pub(crate) cfg: MmConfig,
    /// The bounds of a zap's gather (Linux's, for this page size).
    pub(crate) gather: GatherLimits,
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
    /// Swap entries in the tables (Linux `MM_SWAPENTS`).
    pub(crate) swapents: AtomicI64,
    /// The swap read-ahead state of each VMA that faulted on swap, by the
    /// VMA's start (Linux `vma->swap_readahead_info`; see `swap_ra`).
    pub(crate) swap_ra: Mutex<HashMap<u64, crate::swap_ra::VmaRa>>,
    /// Anonymous frames held by more than one space of this family (see
    /// `share`): shared with the parent and children of a fork.
    pub(crate) shares: Arc<share::AnonShares>,
    /// This space's anonymous pages that are not `PageAnonExclusive`.
    pub(crate) not_exclusive: share::NotExclusive,
    /// Base pages MADV_FREE made lazily free (Linux: the folio's
    /// swap-backed flag cleared) that reclaim has not seen since; kept
    /// only with a swap device, where a lazily freed page written again
    /// differs from any other written page.
    pub(crate) lazyfree_pages: share::NotExclusive,
    /// Work of operations that failed after changing something (Linux
    /// keeps what was done before the error): handed out with the next
    /// operation's [`Deferred`] or by [`AddressSpace::take_pending`].
    pending: Mutex<Deferred>,
    has_pending: AtomicBool,
    pub(crate) exited: AtomicBool,
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
            gather: {
                let linux = GatherLimits::for_page_size(page);
                let or = |knob: u32, v: u32| if knob == 0 { v } else { knob };
                GatherLimits {
                    pages: or(cfg.debug.gather_pages, linux.pages),
                    tables: or(cfg.debug.gather_tables, linux.tables),
                }
            },
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
            swapents: AtomicI64::new(0),
            swap_ra: Mutex::new(HashMap::new()),
            shares: Arc::new(share::AnonShares::new_family()),
            not_exclusive: share::NotExclusive::default(),
            lazyfree_pages: share::NotExclusive::default(),
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

    pub(crate) fn user_limit(&self) -> u64 {
        self.pt.geometry().user_limit()
    }

    pub(super) fn page_align(&self, len: u64) -> Option<u64> {
        len.checked_add(self.page - 1).map(|l| l & !(self.page - 1))
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
        self.shares.leave();
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
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        let mut ctx = ThreadCtx::new();
        let _ = self.exit(&mut ctx);
    }
}
