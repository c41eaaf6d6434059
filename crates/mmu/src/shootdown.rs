//! The machine-wide half of the MMU model: one [`Mmu`] shared by every
//! modeled CPU, holding what CPUs share and the TLB shootdown machinery.
//! The per-CPU half (lookup, walk, statistics) is [`crate::cpu`].
//!
//! ## Ownership
//!
//! - [`Mmu`] (`Sync`, behind an `Arc`) holds what CPUs share: the
//!   configuration, a mailbox per CPU for remote invalidations, the mask of
//!   CPUs on which each address space (ASID) is active, the IPI counters,
//!   the flush generations and the queue of page-table pages waiting to be
//!   freed.
//! - [`Cpu`] (`Send`, not `Sync`) is owned by exactly one thread, from
//!   [`Mmu::attach`] (which marks its ASID active on that CPU, Linux's
//!   `switch_mm`) to [`Cpu::detach`] or drop (which marks it inactive). Its
//!   TLB contents and statistics survive a detach: the next attach of the
//!   same CPU resumes them, as a PCID-tagged TLB keeps entries across
//!   context switches.
//!
//! ## Shootdowns (Linux: arch/x86/mm/tlb.c, `flush_tlb_mm_range`)
//!
//! [`Mmu::shootdown`] invalidates the initiator's TLB at once, and posts one
//! message (a modeled IPI) to every other CPU on which the ASID is active.
//! A flush spanning at most `flush_ceiling` pages (Linux:
//! `tlb_single_page_flush_ceiling` = 33) invalidates page by page, a larger
//! one flushes the ASID. A CPU applies its messages at its next access (or
//! [`Cpu::poll`], or detach).
//!
//! With `pv_tlb_flush` (Linux: arch/x86/kernel/kvm.c, `kvm_flush_tlb_multi`)
//! a target CPU that is not running ([`Cpu::set_running`]: its thread
//! waits at a barrier or sleeps, as a preempted vCPU) gets its message
//! without an IPI, marked deferred: when it applies it, it flushes its whole
//! TLB and walk caches, as KVM flushes a vCPU's TLB before it runs again
//! (`record_steal_time` with `KVM_VCPU_FLUSH_TLB`). The message is posted
//! and `pending` set exactly as for an IPI, so invariant 3 holds and the
//! CPU cannot use a stale translation when it resumes.
//!
//! ## Invariants
//!
//! 1. Membership (the active mask of an ASID) changes, and shootdowns read
//!    it and bump the ASID's TLB generation, under that ASID's stripe lock:
//!    a CPU is either in the mask when a shootdown reads it (and gets a
//!    message) or it attaches later and sees the bumped generation.
//! 2. A CPU that attaches to an ASID whose generation moved since it last
//!    left flushes that ASID's entries first (Linux: `switch_mm_irqs_off`
//!    compares `tlb_gen`s), so a detached CPU needs no messages.
//! 3. Mail is posted and applied under the mailbox lock, and `pending` is
//!    set and cleared under it: a CPU with no mail queued has applied every
//!    invalidation posted to it.
//! 4. Retired table pages carry the flush generation current when they
//!    were retired; they are released once no mailbox holds a message of
//!    that generation or older (Linux: `tlb_remove_table` with
//!    MMU_GATHER_RCU_TABLE_FREE). A detached CPU holds no mail (detach
//!    drains it, and nothing is posted to an inactive CPU) and flushes on
//!    attach (2): it counts as acknowledged. Nothing waits or spins.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pt::table::{Flush, FreedTables, WalkMemo};
use pt::{Geometry, MemError, PageTable};

use crate::broadcast::TlbFlush;
use crate::config::{ConfigError, MmuConfig, MAX_CPUS};
use crate::cpu::{Cpu, CpuState};
use crate::hits::HitCache;
use crate::host::Host;
use crate::pwc::Pwc;
use crate::stats::finish;
use crate::stats::MmuStats;
use crate::tlb::TlbLevel;
use crate::walk::GeomInfo;

/// An address-space identifier (x86 PCID, ARM and RISC-V ASID).
pub type Asid = u16;

/// ASIDs range over `0..MAX_ASIDS` (x86's 12-bit PCID).
pub const MAX_ASIDS: usize = 4096;

/// Stripes of the membership locks.
const STRIPES: usize = 64;

/// What a shootdown invalidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushKind {
    /// Leaf entries changed (unmap, protect, a THP split or collapse that
    /// kept the tables): TLB entries go. Walk caches stay, except on
    /// x86-64, whose INVLPG also drops every walk-cache entry of the PCID
    /// (SDM §4.10.4.1).
    Leaves,
    /// Page-table pages were unlinked too: walk-cache entries covering the
    /// ranges go as well (ARM's TLBI VAE1 rather than VALE1).
    LeavesAndTables,
}

/// What one shootdown did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShootdownStats {
    /// CPUs that were sent an IPI, ascending.
    pub targets: Vec<usize>,
    /// IPIs sent (`targets.len()`).
    pub ipis: u32,
    /// Flushes deferred to targets that were not running (no IPI).
    pub deferred: u32,
    /// Whether the flush was a whole-ASID flush (past the ceiling).
    pub full_flush: bool,
    /// Base pages the flush spans.
    pub pages: u64,
    /// TLB entries removed from the initiator's own TLB.
    pub local_flushed: u64,
    /// The flush generation of this shootdown.
    pub generation: u64,
    /// Whether it reached the other CPUs by broadcast (INVLPGB or RAR,
    /// the space holding a global ASID) instead of IPIs.
    pub broadcast: bool,
    /// INVLPGB instructions or RAR requests issued (0 under IPIs).
    pub instructions: u32,
    /// Other CPUs a broadcast reached (no IPI each).
    pub broadcast_targets: u32,
}

/// An invalidation, shared by the messages of one shootdown.
#[derive(Debug)]
pub(crate) struct Invalidation {
    full: bool,
    tables: bool,
    ranges: Vec<(u64, u64)>,
}

pub(crate) struct Message {
    generation: u64,
    pub(crate) asid: Asid,
    pub(crate) inval: Arc<Invalidation>,
    pub(crate) ipi: bool,
    /// Deferred to a CPU that was not running (paravirtual flush).
    pub(crate) deferred: bool,
}

/// What `Mmu` keeps per CPU. Aligned so that CPUs' flags share no line.
#[repr(align(128))]
pub(crate) struct CpuSlot {
    pub(crate) pending: AtomicBool,
    pub(crate) mailbox: Mutex<Vec<Message>>,
    pub(crate) attached: AtomicBool,
    /// Whether the CPU runs (false: preempted, its flushes are deferred
    /// under `pv_tlb_flush`).
    pub(crate) running: AtomicBool,
    pub(crate) parked: Mutex<Option<Box<CpuState>>>,
    ipis_received: AtomicU64,
    /// RAR requests this CPU's microcode handled (no interrupt).
    rar_received: AtomicU64,
}

struct Retired {
    mem: usize,
    root: u64,
    generation: u64,
    freed: FreedTables,
}

/// The MMUs of one modeled machine.
pub struct Mmu {
    config: MmuConfig,
    pub(crate) geom: Arc<Geometry>,
    pub(crate) gi: GeomInfo,
    slots: Box<[Arc<CpuSlot>]>,
    /// Active-CPU masks: `words` u64 per ASID.
    words: usize,
    active: Box<[AtomicU64]>,
    /// Per ASID, bumped by every shootdown of it (Linux: `mm->context.tlb_gen`).
    pub(crate) tlb_gen: Box<[AtomicU64]>,
    stripes: Box<[Mutex<()>]>,
    flush_gen: AtomicU64,
    /// Per ASID, whether it holds a global ASID (Linux:
    /// `mm->context.global_asid`): its flushes are broadcast.
    global: Box<[AtomicBool]>,
    /// Broadcast flushes and their instructions, machine-wide.
    broadcasts: AtomicU64,
    broadcast_insns: AtomicU64,
    retired: Mutex<Vec<Retired>>,
    /// Statistics of shootdowns without an initiating [`Cpu`].
    shared: Mutex<MmuStats>,
    /// The host, when this machine is a guest: every walk is nested.
    pub(crate) host: Option<Host>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent before it could
    // panic, so a poisoned lock still guards consistent data.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Mmu {
    /// The MMUs of a machine with `cpus` CPUs running tables of `geom`.
    ///
    /// # Errors
    /// Any [`ConfigError`] of [`MmuConfig::validate`];
    /// [`ConfigError::BadCpuCount`] for 0 or more than [`MAX_CPUS`] CPUs.
    pub fn new(config: MmuConfig, geom: &Geometry, cpus: usize) -> Result<Arc<Mmu>, ConfigError> {
        config.validate(geom)?;
        if cpus == 0 || cpus > MAX_CPUS {
            return Err(ConfigError::BadCpuCount {
                cpus,
                max: MAX_CPUS,
            });
        }
        let words = cpus.div_ceil(64);
        let host = config.host.as_ref().map(Host::new).transpose()?;
        Ok(Arc::new(Mmu {
            host,
            gi: GeomInfo::new(geom),
            geom: Arc::new(geom.clone()),
            config,
            slots: (0..cpus)
                .map(|_| {
                    Arc::new(CpuSlot {
                        pending: AtomicBool::new(false),
                        mailbox: Mutex::new(Vec::new()),
                        attached: AtomicBool::new(false),
                        running: AtomicBool::new(true),
                        parked: Mutex::new(None),
                        ipis_received: AtomicU64::new(0),
                        rar_received: AtomicU64::new(0),
                    })
                })
                .collect(),
            words,
            active: (0..MAX_ASIDS * words).map(|_| AtomicU64::new(0)).collect(),
            tlb_gen: (0..MAX_ASIDS).map(|_| AtomicU64::new(0)).collect(),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            flush_gen: AtomicU64::new(0),
            global: (0..MAX_ASIDS).map(|_| AtomicBool::new(false)).collect(),
            broadcasts: AtomicU64::new(0),
            broadcast_insns: AtomicU64::new(0),
            retired: Mutex::new(Vec::new()),
            shared: Mutex::new(MmuStats::default()),
        }))
    }

    pub fn config(&self) -> &MmuConfig {
        &self.config
    }
    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }
    pub fn cpus(&self) -> usize {
        self.slots.len()
    }

    fn new_state(&self, cpu: usize) -> Box<CpuState> {
        let hw = self.gi.hw_page_shift;
        let seed = cpu as u64 + 1;
        Box::new(CpuState {
            l1: TlbLevel::new(&self.config.tlb.l1, hw, seed * 2),
            l2: TlbLevel::new(&self.config.tlb.l2, hw, seed * 2 + 1),
            // Seeds of their own (the data levels' are 2n and 2n + 1).
            l1i: TlbLevel::new(
                &self.config.tlb.l1i,
                hw,
                seed.wrapping_mul(0x51ed) | 1 << 40,
            ),
            l2i: TlbLevel::new(
                &self.config.tlb.l2i,
                hw,
                seed.wrapping_mul(0x51ed) | 1 << 41,
            ),
            pwc: Pwc::new(&self.config.pwc, self.gi.hw_shifts(), seed),
            stats: MmuStats {
                nested: self.host.is_some(),
                ..MmuStats::default()
            },
            seen_gen: vec![0; MAX_ASIDS].into_boxed_slice(),
            nested: self
                .host
                .as_ref()
                .map(|h| Box::new(h.new_state(seed.wrapping_mul(0x9e37)))),
        })
    }

    /// Attaches the calling thread as CPU `cpu`, running address space
    /// `asid` (marked active there). The CPU's TLB contents and statistics
    /// from its previous attachment are resumed.
    ///
    /// # Panics
    /// If `cpu` is out of range or already attached, or `asid >= MAX_ASIDS`
    /// (bugs in the caller).
    pub fn attach(self: &Arc<Self>, cpu: usize, asid: Asid) -> Cpu {
        assert!(cpu < self.slots.len(), "CPU {cpu} of {}", self.slots.len());
        let slot = Arc::clone(&self.slots[cpu]);
        assert!(
            !slot.attached.swap(true, Ordering::AcqRel),
            "CPU {cpu} is already attached"
        );
        let st = lock(&slot.parked)
            .take()
            .unwrap_or_else(|| self.new_state(cpu));
        let hits = HitCache::new(&st.l1);
        let mut c = Cpu {
            mmu: Arc::clone(self),
            slot,
            id: cpu,
            asid,
            st,
            hits,
            memo: WalkMemo::new(),
            _not_sync: PhantomData,
        };
        c.enter(asid);
        c
    }

    #[inline]
    pub(crate) fn stripe(&self, asid: Asid) -> MutexGuard<'_, ()> {
        lock(&self.stripes[usize::from(asid) % STRIPES])
    }

    #[inline]
    pub(crate) fn mask_word(&self, asid: Asid, cpu: usize) -> (&AtomicU64, u64) {
        (
            &self.active[usize::from(asid) * self.words + cpu / 64],
            1u64 << (cpu % 64),
        )
    }

    /// Whether `asid` is active on `cpu`.
    pub fn is_active(&self, asid: Asid, cpu: usize) -> bool {
        let (w, b) = self.mask_word(asid, cpu);
        w.load(Ordering::Acquire) & b != 0
    }

    /// The CPUs on which `asid` is active, ascending.
    pub fn active_cpus(&self, asid: Asid) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|&c| self.is_active(asid, c))
            .collect()
    }

    /// IPIs each CPU has received, indexed by CPU.
    pub fn ipis_received(&self) -> Vec<u64> {
        self.slots
            .iter()
            .map(|s| s.ipis_received.load(Ordering::Relaxed))
            .collect()
    }

    /// RAR requests each CPU handled, indexed by CPU.
    pub fn rar_received(&self) -> Vec<u64> {
        self.slots
            .iter()
            .map(|s| s.rar_received.load(Ordering::Relaxed))
            .collect()
    }

    /// Broadcast flushes so far and the INVLPGB instructions (or RAR
    /// requests) they issued, machine-wide.
    pub fn broadcast_counts(&self) -> (u64, u64) {
        (
            self.broadcasts.load(Ordering::SeqCst),
            self.broadcast_insns.load(Ordering::SeqCst),
        )
    }

    /// Whether `asid` holds a global ASID (its flushes are broadcast).
    pub fn has_global_asid(&self, asid: Asid) -> bool {
        self.global[usize::from(asid)].load(Ordering::Acquire)
    }

    /// The current flush generation (bumped by every shootdown).
    pub fn flush_generation(&self) -> u64 {
        self.flush_gen.load(Ordering::SeqCst)
    }

    /// Statistics of shootdowns made through [`Mmu::shootdown_from`], plus
    /// those of every CPU currently detached (attached CPUs' statistics are
    /// their threads': [`Cpu::stats`]).
    /// Only the shootdowns made through [`Mmu::shootdown_from`] (by callers
    /// that own no [`Cpu`]): what a caller that collects every attached
    /// CPU's own statistics must add to them.
    pub fn unowned_stats(&self) -> MmuStats {
        lock(&self.shared).clone()
    }

    pub fn detached_stats(&self) -> MmuStats {
        let mut s = lock(&self.shared).clone();
        for slot in self.slots.iter() {
            if let Some(st) = lock(&slot.parked).as_ref() {
                s += &finish(&st.stats, !st.l2.is_empty());
            }
        }
        s
    }

    /// Invalidates `flush` for `asid` everywhere: in `initiator`'s TLB now,
    /// and on every other CPU where `asid` is active by one modeled IPI each.
    /// Page by page up to the configured ceiling (Linux x86's 33), the
    /// whole ASID past it.
    ///
    /// # Panics
    /// If `initiator` belongs to another `Mmu`.
    pub fn shootdown(
        &self,
        initiator: &mut Cpu,
        asid: Asid,
        flush: &Flush,
        kind: FlushKind,
    ) -> ShootdownStats {
        assert!(
            std::ptr::eq(&*initiator.mmu, self),
            "the initiating CPU belongs to another Mmu"
        );
        let id = initiator.id;
        initiator.clear_hits();
        let out = self.post(Some(id), true, asid, flush, kind, |inval| {
            let st = &mut *initiator.st;
            apply(st, &self.gi, asid, inval)
        });
        let st = &mut initiator.st.stats;
        if out.generation != 0 {
            st.shootdowns += 1;
            st.ipis += u64::from(out.ipis);
            st.deferred_flushes += u64::from(out.deferred);
            st.broadcast_flushes += u64::from(out.broadcast);
            st.broadcast_instructions += u64::from(out.instructions);
        }
        out
    }

    /// As [`Mmu::shootdown`] for a caller that owns no [`Cpu`] (reclaim,
    /// khugepaged): every CPU where `asid` is active gets an IPI, except
    /// `cpu` (the CPU the caller runs on, if any), whose invalidation is
    /// posted without one. Counted in [`Mmu::detached_stats`].
    pub fn shootdown_from(
        &self,
        cpu: Option<usize>,
        asid: Asid,
        flush: &Flush,
        kind: FlushKind,
    ) -> ShootdownStats {
        let out = self.post(cpu, false, asid, flush, kind, |_| 0);
        if out.generation != 0 {
            let mut s = lock(&self.shared);
            s.shootdowns += 1;
            s.ipis += u64::from(out.ipis);
            s.deferred_flushes += u64::from(out.deferred);
            s.broadcast_flushes += u64::from(out.broadcast);
            s.broadcast_instructions += u64::from(out.instructions);
        }
        out
    }

    /// Builds the invalidation, posts it (under the ASID's stripe lock) and
    /// applies it locally with `local`. The initiator's CPU gets no IPI; it
    /// gets a message only if `local` does not apply it (`applied_here`).
    fn post(
        &self,
        initiator: Option<usize>,
        applied_here: bool,
        asid: Asid,
        flush: &Flush,
        kind: FlushKind,
        local: impl FnOnce(&Invalidation) -> u64,
    ) -> ShootdownStats {
        let Some(first) = flush.ranges.iter().map(|r| r.0).min() else {
            return ShootdownStats::default();
        };
        let end = flush
            .ranges
            .iter()
            .map(|r| r.0.saturating_add(r.1))
            .max()
            .unwrap_or(first);
        // Linux flushes the gather's whole span [start, end).
        let pages = (end - first) >> self.gi.hw_page_shift;
        let full = pages > u64::from(self.config.flush_ceiling);
        let inval = Arc::new(Invalidation {
            full,
            tables: kind == FlushKind::LeavesAndTables,
            // A full flush reads no ranges: not copying them keeps a
            // mailbox of full flushes small (a huge munmap posts many).
            ranges: if full {
                Vec::new()
            } else {
                flush.ranges.clone()
            },
        });
        let mut out = ShootdownStats {
            full_flush: full,
            pages,
            ..ShootdownStats::default()
        };
        let bc = self.config.broadcast;
        {
            let _g = self.stripe(asid);
            out.generation = self.flush_gen.fetch_add(1, Ordering::SeqCst) + 1;
            self.tlb_gen[usize::from(asid)].fetch_add(1, Ordering::SeqCst);
            // Linux: flush_tlb_mm_range, a space with a global ASID is
            // flushed by broadcast_tlb_flush, any other by IPIs.
            out.broadcast = self.has_global_asid(asid);
            let mut remote_active = 0;
            for cpu in 0..self.slots.len() {
                if !self.is_active(asid, cpu) {
                    continue;
                }
                let remote = Some(cpu) != initiator;
                if !remote && applied_here {
                    continue;
                }
                let slot = &self.slots[cpu];
                remote_active += usize::from(remote);
                // kvm_flush_tlb_multi: a preempted vCPU is not interrupted.
                let deferred = remote
                    && !out.broadcast
                    && self.config.pv_tlb_flush
                    && !slot.running.load(Ordering::Acquire);
                let ipi = remote && !deferred && !out.broadcast;
                if remote && out.broadcast {
                    out.broadcast_targets += 1;
                    if bc.kind == TlbFlush::Rar {
                        slot.rar_received.fetch_add(1, Ordering::Relaxed);
                    }
                }
                {
                    let mut mb = lock(&slot.mailbox);
                    mb.push(Message {
                        generation: out.generation,
                        asid,
                        inval: Arc::clone(&inval),
                        ipi,
                        deferred,
                    });
                    slot.pending.store(true, Ordering::Release);
                }
                if deferred {
                    out.deferred += 1;
                }
                if ipi {
                    slot.ipis_received.fetch_add(1, Ordering::Relaxed);
                    out.targets.push(cpu);
                }
            }
            // Linux: consider_global_asid, after an IPI flush that had
            // another CPU in the mask: more than three CPUs active at once.
            let active =
                remote_active + usize::from(initiator.is_some_and(|c| self.is_active(asid, c)));
            if !out.broadcast && remote_active > 0 && bc.wants_global_asid(active) {
                self.global[usize::from(asid)].store(true, Ordering::Release);
            }
        }
        if out.broadcast {
            out.instructions = bc.instructions(full, pages);
            self.broadcasts.fetch_add(1, Ordering::SeqCst);
            self.broadcast_insns
                .fetch_add(u64::from(out.instructions), Ordering::SeqCst);
        }
        out.ipis = out.targets.len() as u32;
        out.local_flushed = local(&inval);
        out
    }

    /// Queues page-table pages unlinked from `pt` to be returned once every
    /// CPU has applied the shootdowns made so far. Call it after the
    /// shootdown ([`FlushKind::LeavesAndTables`]) that covers them.
    pub fn retire_tables(&self, pt: &PageTable, freed: FreedTables) {
        if freed.tables.is_empty() {
            return;
        }
        let generation = self.flush_gen.load(Ordering::SeqCst);
        lock(&self.retired).push(Retired {
            mem: Arc::as_ptr(pt.mem_arc()) as usize,
            root: pt.root(),
            generation,
            freed,
        });
    }

    /// Table pages retired and not yet released.
    pub fn retired_tables(&self) -> usize {
        lock(&self.retired)
            .iter()
            .map(|r| r.freed.tables.len())
            .sum()
    }

    /// Releases the retired tables of `pt` that no CPU can reach any more
    /// (every CPU has applied the shootdowns up to their generation).
    /// Returns how many table pages were freed. Never waits.
    ///
    /// # Errors
    /// A [`MemError`] if a table was already free (a bug in the caller).
    pub fn reclaim_retired(&self, pt: &PageTable) -> Result<usize, MemError> {
        // The retired lock first, then the mailboxes: a message posted
        // before a table was retired is visible once we see that table.
        let mut retired = lock(&self.retired);
        let oldest_mail = self
            .slots
            .iter()
            .filter_map(|s| lock(&s.mailbox).iter().map(|m| m.generation).min())
            .min()
            .unwrap_or(u64::MAX);
        self.release(&mut retired, pt, |g| g < oldest_mail)
    }

    /// Releases every retired table of `pt`, acknowledged or not: for
    /// teardown, when no CPU runs it any more.
    ///
    /// # Errors
    /// As [`Mmu::reclaim_retired`].
    pub fn quiesce(&self, pt: &PageTable) -> Result<usize, MemError> {
        let mut retired = lock(&self.retired);
        self.release(&mut retired, pt, |_| true)
    }

    fn release(
        &self,
        retired: &mut Vec<Retired>,
        pt: &PageTable,
        ready: impl Fn(u64) -> bool,
    ) -> Result<usize, MemError> {
        let mem = Arc::as_ptr(pt.mem_arc()) as usize;
        let mut n = 0;
        let mut i = 0;
        while i < retired.len() {
            let r = &retired[i];
            if r.mem == mem && r.root == pt.root() && ready(r.generation) {
                n += retired.swap_remove(i).freed.release(pt)?;
            } else {
                i += 1;
            }
        }
        Ok(n)
    }
}

/// Applies an invalidation of `asid` to a CPU's state; returns the TLB
/// entries removed.
pub(crate) fn apply(st: &mut CpuState, gi: &GeomInfo, asid: Asid, inval: &Invalidation) -> u64 {
    let mut n = 0;
    if inval.full {
        n += st.flush_asid(asid);
        st.stats.pwc_flushed += st.pwc.flush_asid(asid);
        st.stats.full_flushes += 1;
    } else {
        let page = 1u64 << gi.hw_page_shift;
        for &(va, len) in &inval.ranges {
            let mut a = va;
            while a < va.saturating_add(len) {
                n += st.invalidate_va(a, asid);
                st.stats.page_invalidations += 1;
                a += page;
            }
            if inval.tables {
                st.stats.pwc_flushed += st.pwc.invalidate_range(asid, va, len);
            }
        }
        // x86, SDM §4.10.4.1: INVLPG invalidates all paging-structure-cache
        // entries of the current PCID, whatever their addresses.
        if gi.page_invalidation_flushes_pwc {
            st.stats.pwc_flushed += st.pwc.flush_asid(asid);
        }
    }
    st.stats.flushed_entries += n;
    n
}
