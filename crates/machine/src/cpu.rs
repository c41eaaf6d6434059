//! [`CpuHandle`]: one driver thread running one modeled CPU in one address
//! space. Every access and system call goes through it, and every one
//! leaves the machine in the state the [`crate::order`] invariants require
//! before it returns: no driver completes deferred work by itself.
//!
//! The handle owns the CPU's TLBs and walk caches ([`mmu::Cpu`]) and its
//! thread counters; it is `Send` (a driver may hand it to another thread)
//! but not `Sync`.

use crate::error::{AccessError, MachineError, SyscallError};
use crate::machine::{lock, Machine, Space, SpaceId};
use crate::order;
use mm::{Advice, Deferred, Errno, FaultAccess, FaultResult, MmapArgs, Prot, ThreadCtx};
use mm::{MremapArgs, Remapped};
use mmu::{Access, Cpu};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The kind of a memory access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessKind {
    Read,
    Write,
    /// An instruction fetch: translated through the instruction TLB (the
    /// second level shared with data, as the hardware's STLB is), and
    /// refused where the mapping is not executable (Linux: a fault with
    /// FAULT_FLAG_INSTRUCTION, VM_EXEC checked in access_error).
    Fetch,
}

/// What an access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessOutcome {
    /// The translation that finally completed the access (where it hit:
    /// [`mmu::HitLevel`]).
    pub translation: Access,
    /// Faults the OS model handled before it did (0: no fault).
    pub faults: u32,
}

/// How many faults one access may take before the model is declared stuck:
/// a handler that keeps failing to make progress is a bug in the model, not
/// an endless loop.
const MAX_FAULTS: u32 = 64;

/// Clears a CPU's attached mark when dropped: declared after the
/// [`mmu::Cpu`] in [`CpuHandle`], so that it runs once the CPU is detached.
struct Claim<'m>(&'m AtomicBool);

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// One modeled CPU running one address space, driven by one thread (see the
/// module documentation).
pub struct CpuHandle<'m> {
    machine: &'m Machine,
    space: Arc<Space>,
    id: SpaceId,
    ctx: ThreadCtx,
    /// Dropped before `_claim` (fields drop in declaration order).
    cpu: Cpu,
    /// Whether a retry after a fault looks the TLBs up again as a fresh
    /// access does (the reference [`CpuHandle::set_retry_by_lookup`]
    /// compares with) instead of [`mmu::Cpu::retry_after_fault`].
    retry_by_lookup: bool,
    /// The base page this CPU last noted written in a large folio
    /// ([`mm::AddressSpace::note_write`]), so a run of writes to one page
    /// notes it once; forgotten on every walk (the mapping may be new).
    last_written: u64,
    _claim: Claim<'m>,
}

impl std::fmt::Debug for CpuHandle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuHandle")
            .field("cpu", &self.cpu.id())
            .field("space", &self.id)
            .finish()
    }
}

impl<'m> CpuHandle<'m> {
    pub(crate) fn attach(
        machine: &'m Machine,
        cpu: usize,
        id: SpaceId,
    ) -> Result<CpuHandle<'m>, MachineError> {
        let slot = machine.cpus.get(cpu).ok_or(MachineError::NoSuchCpu {
            cpu,
            cpus: machine.cpus(),
        })?;
        let space = machine.space_arc(id)?;
        if slot.attached.swap(true, Ordering::AcqRel) {
            return Err(MachineError::CpuBusy(cpu));
        }
        let claim = Claim(&slot.attached);
        let mut ctx = ThreadCtx::new();
        ctx.cpu = Some(cpu);
        ctx.counters = lock(&slot.published)
            .mm
            .get(id.0)
            .cloned()
            .unwrap_or_default();
        Ok(CpuHandle {
            machine,
            cpu: machine.mmu.attach(cpu, space.asid),
            retry_by_lookup: false,
            last_written: u64::MAX,
            space,
            id,
            ctx,
            _claim: claim,
        })
    }

    /// This CPU's number.
    pub fn cpu_id(&self) -> usize {
        self.cpu.id()
    }

    /// The address space this CPU runs.
    pub fn space_id(&self) -> SpaceId {
        self.id
    }

    /// The modeled CPU (TLB occupancy, statistics), for inspection.
    pub fn mmu_cpu(&self) -> &Cpu {
        &self.cpu
    }

    /// Table pages of the address space this CPU runs, at every level
    /// (`mm::AddressSpace::table_pages`, read as one sum of the tree's
    /// per-level counts, without looking the space up in the machine).
    #[inline]
    pub fn table_pages(&self) -> u64 {
        self.space.mm.page_table().tables_total()
    }

    /// This CPU's OS-model counters so far (faults, locks).
    pub fn thread_counters(&self) -> &mm::ThreadCounters {
        &self.ctx.counters
    }

    /// Starts (`true`) or stops keeping this CPU's lock log: every lock
    /// the OS model takes for it, in order (see `mm::ThreadCtx::lock_log`).
    pub fn keep_lock_log(&mut self, on: bool) {
        self.ctx.lock_log = on.then(Vec::new);
    }

    /// Makes the retry after each handled fault a whole fresh access, TLB
    /// lookups included (`true`), instead of the retry that skips the
    /// lookups the fault makes sure miss (`false`, the default; see
    /// [`mmu::Cpu::retry_after_fault`]). Both give the same translation
    /// and counters: the first is the reference the tests hold the second
    /// to.
    pub fn set_retry_by_lookup(&mut self, on: bool) {
        self.retry_by_lookup = on;
    }

    /// Whether this CPU keeps a lock log.
    pub fn lock_log_kept(&self) -> bool {
        self.ctx.lock_log.is_some()
    }

    /// The locks taken since the last call (empty if no log is kept); the
    /// log is emptied. The two vectors trade storage (no copy): `into`'s
    /// cleared storage becomes the log's.
    #[inline]
    pub fn drain_lock_log(&mut self, into: &mut Vec<mm::LockEvent>) {
        into.clear();
        if let Some(log) = &mut self.ctx.lock_log {
            std::mem::swap(into, log);
        }
    }

    /// Switches this CPU to address space `space` (Linux: `switch_mm`):
    /// the old space is no longer active here, and the new one's stale
    /// translations are flushed if it was shot down meanwhile.
    ///
    /// # Errors
    /// [`MachineError::NoSuchSpace`].
    pub fn switch_to(&mut self, space: SpaceId) -> Result<(), MachineError> {
        let s = self.machine.space_arc(space)?;
        // The counters so far are the old space's; the new one's resume.
        self.publish();
        self.ctx.counters = lock(&self.machine.cpus[self.cpu.id()].published)
            .mm
            .get(space.0)
            .cloned()
            .unwrap_or_default();
        self.cpu.switch_to(s.asid);
        self.space = s;
        self.id = space;
        Ok(())
    }

    /// Linux `fork` (the address-space half: `dup_mm`): a new address
    /// space, a copy of this CPU's, sharing its private memory copy-on-write
    /// (see [`mm::AddressSpace::fork`]); this space's TLB is flushed for the
    /// entries fork write-protected before it returns. The child runs on
    /// any CPU through [`Machine::cpu`], and ends with
    /// [`Machine::exit_space`].
    ///
    /// # Errors
    /// [`SyscallError::Errno`] (`ENOMEM`: a table could not be allocated;
    /// the child made so far is exited) or [`SyscallError::Internal`];
    /// also `ENOMEM` when every ASID is taken.
    pub fn fork(&mut self) -> Result<SpaceId, SyscallError> {
        let child = self
            .machine
            .new_child_space(&self.space)
            .map_err(|e| match e {
                MachineError::NoAsid => {
                    SyscallError::Errno(Errno::NoMem("no ASID left for the child"))
                }
                e => SyscallError::Internal(e.to_string()),
            })?;
        let c = self
            .machine
            .space_arc(child)
            .map_err(|e| SyscallError::Internal(e.to_string()))?;
        let r = self.space.mm.fork(&mut self.ctx, &c.mm);
        let failed = r.is_err();
        let res = self.syscall(r);
        if failed {
            let _ = self.machine.exit_space(child);
        }
        res.map(|()| child)
    }

    /// One access, as the hardware and Linux do it: through the TLBs, the
    /// walk caches and the walk; on a fault into the OS model, whose
    /// deferred work is completed, and again, as the hardware retries the
    /// instruction.
    ///
    /// # Errors
    /// [`AccessError::Segv`] and [`AccessError::Oom`] as Linux would raise
    /// them; [`AccessError::Internal`] for an inconsistency in the model,
    /// among them an access still faulting after 64 handled faults.
    #[inline]
    pub fn access(&mut self, va: u64, kind: AccessKind) -> Result<AccessOutcome, AccessError> {
        if kind == AccessKind::Fetch {
            return self.fetch(va);
        }
        let write = kind == AccessKind::Write;
        match self.cpu.access(self.space.mm.page_table(), va, write, true) {
            Ok(translation) => {
                if write && self.space.mm.tracks_writes() {
                    self.note_write(&translation);
                }
                Ok(AccessOutcome {
                    translation,
                    faults: 0,
                })
            }
            Err(_) => self.fault_and_retry(va, kind),
        }
    }

    /// [`CpuHandle::access`] of an instruction fetch, through the
    /// instruction TLB ([`mmu::Cpu::fetch`]).
    #[inline(never)]
    fn fetch(&mut self, va: u64) -> Result<AccessOutcome, AccessError> {
        match self.cpu.fetch(self.space.mm.page_table(), va, true) {
            Ok(translation) => Ok(AccessOutcome {
                translation,
                faults: 0,
            }),
            Err(_) => self.fault_and_retry(va, AccessKind::Fetch),
        }
    }

    /// Tells the OS model that a write reached `t`'s page while the space
    /// has large folios (their split asks which subpages were written).
    #[inline(never)]
    fn note_write(&mut self, t: &mmu::Access) {
        let page = self.space.mm.geometry().page_size();
        let pa = t.pa & !(page - 1);
        if pa == self.last_written && t.hit != mmu::HitLevel::Walk {
            return;
        }
        self.last_written = pa;
        self.space.mm.note_write(pa);
    }

    /// [`CpuHandle::access`] when it would be a clean first-level hit from
    /// the MMU's recent hits ([`mmu::Cpu::hit`]): log2 of the entry's
    /// size, counted and ordered exactly as that access; `None`, changing
    /// nothing, otherwise (the caller then calls [`CpuHandle::access`]).
    /// A write while the space notes writes (it has large folios) is left
    /// to [`CpuHandle::access`], which notes it: a folio split must see
    /// every subpage a write reached.
    #[inline]
    pub fn hit(&mut self, va: u64, kind: AccessKind) -> Option<u8> {
        let write = kind == AccessKind::Write;
        if kind == AccessKind::Fetch || write && self.space.mm.tracks_writes() {
            return None;
        }
        self.cpu.hit(va, write, true)
    }

    /// The fault path of [`CpuHandle::access`], out of line so that the
    /// hit path stays small.
    #[inline(never)]
    fn fault_and_retry(&mut self, va: u64, kind: AccessKind) -> Result<AccessOutcome, AccessError> {
        let write = kind == AccessKind::Write;
        let access = match kind {
            AccessKind::Read => FaultAccess::READ,
            AccessKind::Write => FaultAccess::WRITE,
            AccessKind::Fetch => FaultAccess {
                exec: true,
                ..FaultAccess::READ
            },
        };
        let mut faults = 0;
        loop {
            match self.space.mm.fault(&mut self.ctx, va, access) {
                FaultResult::Handled { deferred, .. } => {
                    order::complete(&self.machine.mmu, &mut self.cpu, &self.space.mm, deferred)
                        .map_err(AccessError::Internal)?;
                }
                FaultResult::Segv(code) => return Err(AccessError::Segv { va, code }),
                FaultResult::Oom => return Err(AccessError::Oom { va }),
                FaultResult::Internal(e) => return Err(AccessError::Internal(e.to_string())),
            }
            faults += 1;
            if faults == MAX_FAULTS {
                return Err(AccessError::Internal(format!(
                    "the access to {va:#x} keeps faulting after the fault was handled"
                )));
            }
            let pt = self.space.mm.page_table();
            let retried = if kind == AccessKind::Fetch {
                self.cpu.fetch(pt, va, true)
            } else if self.retry_by_lookup {
                self.cpu.access(pt, va, write, true)
            } else {
                // The fault left no TLB entry of `va` here: the retry
                // walks without looking them up (as the hardware, which
                // misses, does after the same lookups).
                self.cpu.retry_after_fault(pt, va, write, true)
            };
            if let Ok(translation) = retried {
                if write && self.space.mm.tracks_writes() {
                    self.note_write(&translation);
                }
                return Ok(AccessOutcome {
                    translation,
                    faults,
                });
            }
        }
    }

    /// Hints the host to fetch what a walk of `va` would read (for drivers
    /// that know their addresses ahead). Changes no model state.
    #[inline]
    pub fn prefetch(&self, va: u64) {
        self.cpu.prefetch(self.space.mm.page_table(), va);
    }

    /// One stage of a staged prefetch of what a walk of `va` would read
    /// (see `pt::PageTable::prefetch_walk_stage`). Changes no model state.
    #[inline]
    pub fn prefetch_stage(&self, va: u64, stage: pt::table::PrefetchStage) {
        self.cpu
            .prefetch_stage(self.space.mm.page_table(), va, stage);
    }

    /// Marks this CPU as not running (`false`: its thread waits at a
    /// barrier or sleeps, as a preempted vCPU) or running again. With the
    /// MMU's `pv_tlb_flush`, shootdowns defer their flush to a CPU that is
    /// not running instead of sending it an IPI; resuming applies them.
    pub fn set_running(&mut self, running: bool) {
        self.cpu.set_running(running);
    }

    /// Applies this CPU's pending invalidations now: what a CPU that waits
    /// (at a barrier, idle) does when it takes its IPIs. The CPU stays
    /// attached, so it keeps receiving shootdowns while it waits.
    pub fn poll(&mut self) {
        self.cpu.poll();
    }

    /// Publishes this CPU's counters for [`Machine::snapshot`].
    pub fn publish(&mut self) {
        let mut p = lock(&self.machine.cpus[self.cpu.id()].published);
        let i = self.id.0;
        if p.mm.len() <= i {
            p.mm.resize(i + 1, Default::default());
        }
        p.mm[i] = self.ctx.counters.clone();
        p.mmu = self.cpu.stats();
    }

    /// Before counters are read: applies this CPU's pending invalidations,
    /// frees the tables every CPU has let go of, and publishes this CPU's
    /// counters.
    ///
    /// # Errors
    /// [`MachineError::Internal`] if a retired table was already free (a bug).
    pub fn checkpoint(&mut self) -> Result<(), MachineError> {
        let r = order::checkpoint(&self.machine.mmu, &mut self.cpu, &self.space.mm)
            .map_err(MachineError::Internal);
        self.publish();
        r
    }

    /// Frees the retired tables of this CPU's address space that no CPU
    /// can reach any more; returns how many table pages were freed.
    ///
    /// # Errors
    /// As [`CpuHandle::checkpoint`].
    pub fn reclaim_retired(&self) -> Result<usize, MachineError> {
        self.machine
            .mmu
            .reclaim_retired(self.space.mm.page_table())
            .map_err(|e| MachineError::Internal(e.to_string()))
    }

    /// Ends a system call: completes its work, or on error the work it
    /// left pending, then returns the error.
    fn syscall(&mut self, r: Result<Deferred, Errno>) -> Result<(), SyscallError> {
        let (d, err) = match r {
            Ok(d) => (d, None),
            Err(e) => (self.space.mm.take_pending(), Some(e)),
        };
        order::complete(&self.machine.mmu, &mut self.cpu, &self.space.mm, d)
            .map_err(SyscallError::Internal)?;
        err.map_or(Ok(()), |e| Err(SyscallError::Errno(e)))
    }

    /// Linux `mmap` (see [`mm::AddressSpace::mmap`]).
    ///
    /// # Errors
    /// [`SyscallError::Errno`] with Linux's errno; [`SyscallError::Internal`]
    /// for an inconsistency found completing its work. The same holds for
    /// every system call below.
    pub fn mmap(&mut self, args: MmapArgs) -> Result<(), SyscallError> {
        let r = self.space.mm.mmap(&mut self.ctx, args);
        self.syscall(r)
    }

    /// Linux `munmap`.
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn munmap(&mut self, addr: u64, len: u64) -> Result<(), SyscallError> {
        let r = self.space.mm.munmap(&mut self.ctx, addr, len);
        self.syscall(r)
    }

    /// Linux `mprotect`.
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn mprotect(&mut self, addr: u64, len: u64, prot: Prot) -> Result<(), SyscallError> {
        let r = self.space.mm.mprotect(&mut self.ctx, addr, len, prot);
        self.syscall(r)
    }

    /// Linux `madvise`.
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn madvise(&mut self, addr: u64, len: u64, advice: Advice) -> Result<(), SyscallError> {
        let r = self.space.mm.madvise(&mut self.ctx, addr, len, advice);
        self.syscall(r)
    }

    /// Linux `mlock`.
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn mlock(&mut self, addr: u64, len: u64) -> Result<(), SyscallError> {
        let r = self.space.mm.mlock(&mut self.ctx, addr, len);
        self.syscall(r)
    }

    /// Linux `mlock2(addr, len, MLOCK_ONFAULT)`.
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn mlock_onfault(&mut self, addr: u64, len: u64) -> Result<(), SyscallError> {
        let r = self.space.mm.mlock_onfault(&mut self.ctx, addr, len);
        self.syscall(r)
    }

    /// Linux `munlock`.
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn munlock(&mut self, addr: u64, len: u64) -> Result<(), SyscallError> {
        let r = self.space.mm.munlock(&mut self.ctx, addr, len);
        self.syscall(r)
    }

    /// Linux `mremap` (see [`mm::AddressSpace::mremap`]): what it did, or
    /// Linux's errno. Its moved extents were shot down while it held the
    /// mmap lock; this CPU applies its own invalidation before returning.
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn mremap(&mut self, args: MremapArgs) -> Result<Remapped, SyscallError> {
        let (r, out) = match self.space.mm.mremap(&mut self.ctx, args) {
            Ok((d, out)) => (Ok(d), out),
            Err(e) => (Err(e), Remapped::default()),
        };
        let done = self.syscall(r);
        self.cpu.poll();
        done.map(|()| out)
    }

    /// Linux `get_mempolicy(&node, NULL, 0, addr, MPOL_F_NODE |
    /// MPOL_F_ADDR)` (see [`mm::AddressSpace::lookup_node`]).
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn node_of(&mut self, addr: u64) -> Result<(), SyscallError> {
        let r = self.space.mm.lookup_node(&mut self.ctx, addr);
        self.syscall(r)
    }

    /// Linux `msync`.
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn msync(&mut self, addr: u64, len: u64) -> Result<(), SyscallError> {
        let r = self.space.mm.msync(&mut self.ctx, addr, len);
        self.syscall(r)
    }

    /// Runs the THP deferred split shrinker over this process's memory, as
    /// memory reclaim of its cgroup does (see
    /// [`mm::AddressSpace::deferred_split_scan`]). Returns the folios split.
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn deferred_split(&mut self) -> Result<u64, SyscallError> {
        let (r, n) = match self.space.mm.deferred_split_scan(&mut self.ctx) {
            Ok((d, n)) => (Ok(d), n),
            Err(e) => (Err(e), 0),
        };
        self.syscall(r).map(|()| n)
    }

    /// khugepaged's pass over `[addr, addr + len)` (see
    /// [`mm::AddressSpace::khugepaged_scan`]). Returns the ranges collapsed.
    ///
    /// # Errors
    /// As [`CpuHandle::mmap`].
    pub fn khugepaged(&mut self, addr: u64, len: u64) -> Result<u64, SyscallError> {
        let (r, n) = match self.space.mm.khugepaged_scan(&mut self.ctx, addr, len) {
            Ok((d, n)) => (Ok(d), n),
            Err(e) => (Err(e), 0),
        };
        self.syscall(r).map(|()| n)
    }
}

impl Drop for CpuHandle<'_> {
    /// Publishes the counters and frees what retired tables it can; then
    /// the fields detach the CPU (which applies its last mail) and release
    /// the claim on it.
    fn drop(&mut self) {
        self.publish();
        let _ = self.reclaim_retired();
    }
}
