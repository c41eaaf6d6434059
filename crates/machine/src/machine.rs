//! The machine: the MMUs of N modeled CPUs, one physical memory, the address
//! spaces that run on it, and the counters each CPU publishes.
//!
//! ## Invariants
//!
//! 1. Each address space has its own ASID (1, 2, ... in creation order;
//!    ASID 0 is left unused, as Linux leaves PCID 0 to the kernel), fixed
//!    for its life, and its table flusher shoots down through the machine's
//!    MMU with that ASID.
//! 2. A CPU is run by at most one [`CpuHandle`] at a time (a modeled CPU is
//!    one hardware thread); the handle marks it attached from
//!    [`Machine::cpu`] until its drop has detached the MMU's CPU.
//! 3. Counters are kept per CPU by its handle and published into the
//!    CPU's slot (after every operation the driver chooses, and on drop);
//!    a [`Snapshot`] merges the published slots, so it sees each CPU as of
//!    its last publication (docs/design.md: counters per thread, merged at marks).
//!    A handle attached later to the same CPU resumes its counters.

use crate::config::MachineConfig;
use crate::cpu::CpuHandle;
use crate::error::MachineError;
use crate::order;
use mm::{AddressSpace, MmCounters, ThreadCounters, ThreadCtx};
use mmu::{Asid, Mmu, MmuStats};
use pt::PhysMem;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};

/// An address space of a machine (its index, in creation order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpaceId(pub(crate) usize);

impl SpaceId {
    /// The index of the space, in creation order (0 for the first).
    pub fn index(self) -> usize {
        self.0
    }
}

/// One address space and the ASID it runs under.
pub(crate) struct Space {
    pub(crate) asid: Asid,
    pub(crate) mm: AddressSpace,
}

impl mm::FamilyMember for Space {
    fn space(&self) -> &AddressSpace {
        &self.mm
    }
}

/// What a CPU has published for snapshots.
#[derive(Debug, Default, Clone)]
pub(crate) struct Published {
    /// The OS model's counters per address space the CPU ran (by space
    /// index): a fork child's faults are not its parent's.
    pub(crate) mm: Vec<ThreadCounters>,
    /// The CPU's MMU statistics (a TLB is the CPU's, whichever space).
    pub(crate) mmu: MmuStats,
}

/// One CPU's slot in the machine.
#[derive(Default)]
pub(crate) struct CpuSlot {
    pub(crate) attached: AtomicBool,
    pub(crate) published: Mutex<Published>,
}

/// Counters of one address space at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The OS model's counters: the space's own state (RSS, tables, VmPTE)
    /// and every CPU's published thread counters (faults, locks).
    pub mm: MmCounters,
    /// Every CPU's published MMU statistics, plus the shootdowns made
    /// without a CPU (the table flushers).
    pub mmu: MmuStats,
}

/// A modeled machine. `Sync`: driver threads share it by reference, each
/// running its own CPU through a [`CpuHandle`].
pub struct Machine {
    cfg: MachineConfig,
    pub(crate) mmu: Arc<Mmu>,
    mem: Arc<PhysMem>,
    spaces: Mutex<Vec<Arc<Space>>>,
    pub(crate) cpus: Box<[CpuSlot]>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Critical sections here leave their data consistent before anything
    // could panic, so a poisoned lock still guards consistent data.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine")
            .field("geometry", &self.cfg.geometry.name())
            .field("cpus", &self.cpus.len())
            .field("spaces", &lock(&self.spaces).len())
            .finish()
    }
}

impl Machine {
    /// A machine with `cfg.cpus` CPUs and one empty address space
    /// ([`Machine::first_space`]).
    ///
    /// # Errors
    /// [`MachineError::Config`] if the MMU configuration does not fit the
    /// geometry, the CPU count is 0 or too large, or the address space
    /// cannot be created (a geometry without a PMD level).
    pub fn new(cfg: MachineConfig) -> Result<Machine, MachineError> {
        let mmu = Mmu::new(cfg.mmu.clone(), &cfg.geometry, cfg.cpus)
            .map_err(|e| MachineError::Config(e.to_string()))?;
        let mem = Arc::new(PhysMem::new(cfg.geometry.page_shift()));
        let m = Machine {
            cpus: (0..cfg.cpus).map(|_| CpuSlot::default()).collect(),
            cfg,
            mmu,
            mem,
            spaces: Mutex::new(Vec::new()),
        };
        m.new_space()?;
        Ok(m)
    }

    /// The machine's configuration.
    pub fn config(&self) -> &MachineConfig {
        &self.cfg
    }

    /// Modeled CPUs.
    pub fn cpus(&self) -> usize {
        self.cpus.len()
    }

    /// The shared MMU state (for inspection: mailboxes, IPI counts).
    pub fn mmu(&self) -> &Arc<Mmu> {
        &self.mmu
    }

    /// The physical memory every address space's tables and frames live in.
    pub fn mem(&self) -> &Arc<PhysMem> {
        &self.mem
    }

    /// The address space made with the machine.
    pub fn first_space(&self) -> SpaceId {
        SpaceId(0)
    }

    /// Creates an empty address space with the next ASID.
    ///
    /// # Errors
    /// [`MachineError::NoAsid`] when every ASID is taken;
    /// [`MachineError::Config`] if the space cannot be created.
    pub fn new_space(&self) -> Result<SpaceId, MachineError> {
        self.add_space(|| {
            AddressSpace::with_memory(
                self.cfg.geometry.clone(),
                self.mem.clone(),
                self.cfg.mm.clone(),
            )
        })
    }

    /// Creates an empty child of address space `parent` (same memory, same
    /// share table) with the next ASID, for [`CpuHandle::fork`] to fill.
    pub(crate) fn new_child_space(&self, parent: &Space) -> Result<SpaceId, MachineError> {
        self.add_space(|| parent.mm.new_child())
    }

    fn add_space(
        &self,
        make: impl FnOnce() -> Result<AddressSpace, mm::Errno>,
    ) -> Result<SpaceId, MachineError> {
        let mut spaces = lock(&self.spaces);
        let id = spaces.len();
        let asid = Asid::try_from(id + 1)
            .ok()
            .filter(|a| usize::from(*a) < mmu::MAX_ASIDS)
            .ok_or(MachineError::NoAsid)?;
        let mm = make().map_err(|e| MachineError::Config(e.to_string()))?;
        order::install_table_flusher(&mm, &self.mmu, asid);
        let space = Arc::new(Space { asid, mm });
        let member: std::sync::Weak<dyn mm::FamilyMember> = Arc::downgrade(&space) as _;
        space.mm.join_rmap(member);
        spaces.push(space);
        Ok(SpaceId(id))
    }

    pub(crate) fn space_arc(&self, id: SpaceId) -> Result<Arc<Space>, MachineError> {
        lock(&self.spaces)
            .get(id.0)
            .cloned()
            .ok_or(MachineError::NoSuchSpace(id.0))
    }

    /// The OS model of address space `id` (for inspection and tests; drive
    /// it through a [`CpuHandle`], which keeps the deferred-work order).
    ///
    /// # Errors
    /// [`MachineError::NoSuchSpace`].
    pub fn space(&self, id: SpaceId) -> Result<SpaceRef, MachineError> {
        self.space_arc(id).map(SpaceRef)
    }

    /// The ASID address space `id` runs under.
    ///
    /// # Errors
    /// [`MachineError::NoSuchSpace`].
    pub fn asid(&self, id: SpaceId) -> Result<Asid, MachineError> {
        self.space_arc(id).map(|s| s.asid)
    }

    /// Attaches CPU `cpu`, running address space `space`, to the calling
    /// driver thread (Linux: `switch_mm` onto that CPU). The CPU's TLB
    /// contents and counters from an earlier handle are resumed.
    ///
    /// # Errors
    /// [`MachineError::NoSuchCpu`], [`MachineError::CpuBusy`] if another
    /// handle runs it, [`MachineError::NoSuchSpace`].
    pub fn cpu(&self, cpu: usize, space: SpaceId) -> Result<CpuHandle<'_>, MachineError> {
        CpuHandle::attach(self, cpu, space)
    }

    /// The counters of address space `space` now: its own state plus every
    /// CPU's published counters (see the module's invariant 3).
    ///
    /// # Errors
    /// [`MachineError::NoSuchSpace`].
    pub fn snapshot(&self, space: SpaceId) -> Result<Snapshot, MachineError> {
        let s = self.space_arc(space)?;
        let mut threads = ThreadCounters::default();
        // Every CPU publishes its own statistics, so of the MMU's totals
        // only the shootdowns made without a CPU (the table flushers) are
        // added.
        let mut mmu = self.mmu.unowned_stats();
        for c in self.cpus.iter() {
            let p = lock(&c.published);
            if let Some(t) = p.mm.get(space.0) {
                threads.merge(t);
            }
            mmu += p.mmu.clone();
        }
        let ctx = ThreadCtx {
            counters: threads,
            ..ThreadCtx::default()
        };
        Ok(Snapshot {
            mm: s.mm.counters(&[&ctx]),
            mmu,
        })
    }

    /// Frees the retired tables of every address space that no CPU can
    /// reach any more; returns how many table pages were freed.
    ///
    /// # Errors
    /// [`MachineError::Internal`] if a table was already free (a bug).
    pub fn reclaim_retired(&self) -> Result<usize, MachineError> {
        let spaces: Vec<Arc<Space>> = lock(&self.spaces).clone();
        let mut n = 0;
        for s in spaces {
            n += self
                .mmu
                .reclaim_retired(s.mm.page_table())
                .map_err(|e| MachineError::Internal(e.to_string()))?;
        }
        Ok(n)
    }

    /// Ends address space `space` (Linux `exit_mmap`): frees its retired
    /// tables, unmaps everything and frees its tables. Call once no CPU
    /// runs it; later calls do nothing.
    ///
    /// # Errors
    /// [`MachineError::NoSuchSpace`]; [`MachineError::Internal`] on an
    /// inconsistency found while freeing.
    pub fn exit_space(&self, space: SpaceId) -> Result<(), MachineError> {
        let s = self.space_arc(space)?;
        self.mmu
            .quiesce(s.mm.page_table())
            .map_err(|e| MachineError::Internal(e.to_string()))?;
        let mut ctx = ThreadCtx::new();
        s.mm.exit(&mut ctx)
            .map_err(|e| MachineError::Internal(e.to_string()))
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        // No handle is left (they borrow the machine): no CPU can reach a
        // retired table.
        for s in lock(&self.spaces).iter() {
            let _ = self.mmu.quiesce(s.mm.page_table());
        }
    }
}

/// A reference to an address space of a machine, for inspection.
pub struct SpaceRef(Arc<Space>);

impl std::ops::Deref for SpaceRef {
    type Target = AddressSpace;
    fn deref(&self) -> &AddressSpace {
        &self.0.mm
    }
}
