//! The per-CPU half of the MMU model: one [`Cpu`] per thread, modeling a
//! CPU's TLBs, walk caches, its lookup and walk, and its statistics. What
//! CPUs share (mailboxes, active masks, shootdowns) is [`crate::shootdown`].
//!
//! ## The hit path
//!
//! [`Cpu::access`] first loads its mailbox's `pending` flag (one relaxed
//! atomic load: the only shared memory it touches), then probes the
//! first-level arrays, the second level, the walk caches, and walks. No
//! lock, allocation or hashing happens unless it misses or has mail.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use pt::table::{PrefetchStage, WalkMemo};
use pt::{PageTable, VirtAddr};

use crate::hits::HitCache;
use crate::host::{self, NestedCount, NestedState};
use crate::pwc::Pwc;
use crate::shootdown::{apply, lock, Asid, CpuSlot, Mmu, MAX_ASIDS};
use crate::stats::{finish, MmuStats};
use crate::tlb::{self, flags, TlbEntry, TlbLevel};
use crate::walk::{self, needed_flags, permits, Fault, Request, WalkCount};

/// Which TLB level satisfied an access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HitLevel {
    L1,
    L2,
    /// Missed the TLBs: the hardware walked.
    Walk,
}

/// A completed translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Physical address of the accessed byte.
    pub pa: u64,
    pub hit: HitLevel,
    /// Memory references the access's walk made (0 on a clean TLB hit; a
    /// write hit on a clean page walks to set D).
    pub walk_refs: u32,
    /// Bytes of the TLB entry that holds the translation now.
    pub page_size: u64,
}

/// A TLB entry a lookup found: the level that held it, its slot there (for
/// setting its dirty bit) and the entry.
#[derive(Debug, Clone, Copy)]
struct EntryHit {
    level: HitLevel,
    slot: tlb::Slot,
    entry: TlbEntry,
}

/// The private state of one CPU.
pub(crate) struct CpuState {
    pub(crate) l1: TlbLevel,
    pub(crate) l2: TlbLevel,
    /// The instruction TLB's first level (the `fetch` module).
    pub(crate) l1i: TlbLevel,
    /// The instruction TLB's own second level, where the processor has one
    /// (AMD's L2 ITLB); empty: instruction misses go to `l2`, shared with
    /// data (Intel's STLB, Arm's L2 TLB).
    pub(crate) l2i: TlbLevel,
    pub(crate) pwc: Pwc,
    pub(crate) stats: MmuStats,
    /// Per ASID, the TLB generation this CPU's entries are fresh for.
    pub(crate) seen_gen: Box<[u64]>,
    /// The second dimension's caches, when the MMU has a host. No guest
    /// flush touches them (the `host` module's invariant 1).
    pub(crate) nested: Option<Box<NestedState>>,
}

/// One modeled CPU, owned by one thread.
pub struct Cpu {
    pub(crate) mmu: Arc<Mmu>,
    pub(crate) slot: Arc<CpuSlot>,
    pub(crate) id: usize,
    pub(crate) asid: Asid,
    pub(crate) st: Box<CpuState>,
    /// Recent first-level hits (see the `hits` module).
    pub(crate) hits: HitCache,
    /// Where the lowest tables are, for [`Cpu::prefetch`] (host-side: no
    /// part of the modeled CPU).
    pub(crate) memo: WalkMemo,
    /// `Cpu` moves between threads but is never shared.
    pub(crate) _not_sync: PhantomData<Cell<()>>,
}

impl Cpu {
    pub fn id(&self) -> usize {
        self.id
    }
    pub fn asid(&self) -> Asid {
        self.asid
    }
    pub fn mmu(&self) -> &Arc<Mmu> {
        &self.mmu
    }
    /// This CPU's statistics since it was first attached (or last taken).
    pub fn stats(&self) -> MmuStats {
        let mut s = self.st.stats.clone();
        self.hits.count_pending(&mut s);
        finish(&s, !self.st.l2.is_empty())
    }
    /// Returns the statistics and starts counting from zero.
    pub fn take_stats(&mut self) -> MmuStats {
        self.clear_hits();
        let raw = std::mem::take(&mut self.st.stats);
        self.st.stats.nested = raw.nested;
        finish(&raw, !self.st.l2.is_empty())
    }

    /// Brings the deferred work of the hit cache up to date and empties it:
    /// before anything changes the TLB arrays.
    #[inline]
    pub(crate) fn clear_hits(&mut self) {
        let st = &mut *self.st;
        self.hits.clear(&mut st.l1, &mut st.stats);
    }

    /// Valid entries in the (first, second) TLB level.
    pub fn tlb_occupancy(&self) -> (usize, usize) {
        (self.st.l1.occupancy(), self.st.l2.occupancy())
    }

    /// Valid entries in the walk cache of `level`.
    pub fn pwc_occupancy(&self, level: usize) -> usize {
        self.st.pwc.occupancy(level)
    }

    /// Marks `asid` active here, applying pending mail and flushing its
    /// entries if it was shot down while this CPU was away.
    pub(crate) fn enter(&mut self, asid: Asid) {
        self.clear_hits();
        assert!(usize::from(asid) < MAX_ASIDS, "ASID {asid} >= {MAX_ASIDS}");
        let mmu = Arc::clone(&self.mmu);
        let _g = mmu.stripe(asid);
        let (w, b) = mmu.mask_word(asid, self.id);
        w.fetch_or(b, Ordering::SeqCst);
        self.drain();
        let now = mmu.tlb_gen[usize::from(asid)].load(Ordering::SeqCst);
        let st = &mut *self.st;
        if st.seen_gen[usize::from(asid)] != now {
            // Linux: switch_mm_irqs_off, a stale tlb_gen means a full flush.
            let n = st.flush_asid(asid);
            st.stats.flushed_entries += n;
            st.stats.pwc_flushed += st.pwc.flush_asid(asid);
        }
        self.asid = asid;
    }

    /// Marks the current ASID inactive here (after applying pending mail).
    fn leave(&mut self) {
        self.clear_hits();
        let mmu = Arc::clone(&self.mmu);
        let asid = self.asid;
        let _g = mmu.stripe(asid);
        let (w, b) = mmu.mask_word(asid, self.id);
        w.fetch_and(!b, Ordering::SeqCst);
        self.drain();
        self.st.seen_gen[usize::from(asid)] = mmu.tlb_gen[usize::from(asid)].load(Ordering::SeqCst);
    }

    /// Switches this CPU to another address space (Linux: `switch_mm`).
    pub fn switch_to(&mut self, asid: Asid) {
        if asid != self.asid {
            self.leave();
            self.enter(asid);
        }
    }

    /// Empties this CPU's TLBs and walk caches (all ASIDs); returns the TLB
    /// entries removed.
    pub fn flush_all(&mut self) -> u64 {
        self.clear_hits();
        let st = &mut *self.st;
        let n = st.flush_all();
        st.stats.flushed_entries += n;
        st.stats.pwc_flushed += st.pwc.flush_all();
        n
    }

    /// Marks this CPU running or not (its thread waits at a barrier or
    /// sleeps: a preempted vCPU). Under `pv_tlb_flush` a shootdown defers
    /// its flush to a CPU that is not running instead of sending an IPI.
    /// Resuming applies what was deferred before anything else runs.
    pub fn set_running(&mut self, running: bool) {
        self.slot.running.store(running, Ordering::Release);
        if running {
            self.poll();
        }
    }

    /// Applies any pending invalidations now (an idle CPU taking its IPIs).
    pub fn poll(&mut self) {
        if self.slot.pending.load(Ordering::Relaxed) {
            self.drain();
        }
    }

    /// Detaches the CPU (drop does the same); its TLB state is kept for the
    /// next [`Mmu::attach`] of this CPU.
    pub fn detach(self) {}

    #[cold]
    #[inline(never)]
    pub(crate) fn drain(&mut self) {
        self.clear_hits();
        let mut mb = lock(&self.slot.mailbox);
        let st = &mut *self.st;
        let mut flush_all = false;
        for m in mb.drain(..) {
            if m.deferred {
                // The host flushes the whole TLB before the vCPU runs.
                flush_all = true;
            } else {
                apply(st, &self.mmu.gi, m.asid, &m.inval);
            }
            if m.ipi {
                st.stats.ipis_received += 1;
            }
        }
        if flush_all {
            let n = st.flush_all();
            st.stats.flushed_entries += n;
            st.stats.full_flushes += 1;
            st.stats.pwc_flushed += st.pwc.flush_all();
        }
        self.slot.pending.store(false, Ordering::Relaxed);
    }

    /// Hints the host to fetch the page-table word a walk for `va` would
    /// read last (see [`PageTable::prefetch_walk_memo`]; this CPU keeps the
    /// memo): for replays that know their addresses ahead. Changes no TLB,
    /// walk cache or statistic.
    #[inline]
    pub fn prefetch(&self, pt: &PageTable, va: u64) {
        pt.prefetch_walk_memo(&self.memo, VirtAddr::new(va));
    }

    /// One stage of a staged walk prefetch of `va` through this CPU's memo
    /// (see [`PageTable::prefetch_walk_stage`]): for drivers that know
    /// their addresses far enough ahead to run the three stages apart.
    /// Changes no TLB, walk cache or statistic.
    #[inline]
    pub fn prefetch_stage(&self, pt: &PageTable, va: u64, stage: PrefetchStage) {
        pt.prefetch_walk_stage(&self.memo, VirtAddr::new(va), stage);
    }

    /// Translates `va` for a read or write from user or supervisor mode, as
    /// the hardware does: first-level TLB, second level, walk caches, then
    /// the walk over `pt` (which sets accessed/dirty bits). `pt` is the
    /// tree of this CPU's current ASID.
    ///
    /// # Errors
    /// The [`Fault`] the hardware would raise; the OS model handles it and
    /// retries.
    #[inline(always)]
    pub fn access(
        &mut self,
        pt: &PageTable,
        va: u64,
        write: bool,
        user: bool,
    ) -> Result<Access, Fault> {
        if self.slot.pending.load(Ordering::Relaxed) {
            self.drain();
        }
        let need = needed_flags(write, user);
        if let Some(h) = self.hits.hit(va, need) {
            return Ok(Access {
                pa: h.pa,
                hit: HitLevel::L1,
                walk_refs: 0,
                page_size: 1 << h.shift,
            });
        }
        let asid = self.asid;
        let st = &mut *self.st;
        // The hit cache's deferred touches come before this lookup's.
        self.hits.sync(&mut st.l1, &mut st.stats);
        let key = tlb::key(va, asid);
        if let Some((slot, e)) = st.l1.lookup(va, key) {
            if e.flags() & need == need {
                // Only the per-size count: the totals are derived (`finish`).
                st.stats.l1_hits_by_size[usize::from(e.shift())] += 1;
                self.hits.fill(va, slot, e);
                return Ok(hit(e, va, HitLevel::L1, 0));
            }
            self.clear_hits();
            return self.hit_needs_walk(
                pt,
                va,
                write,
                user,
                EntryHit {
                    level: HitLevel::L1,
                    slot,
                    entry: e,
                },
            );
        }
        self.clear_hits();
        if self.st.nested.is_some() {
            return self.miss_l1_nested(pt, va, write, user, key);
        }
        self.miss_l1(pt, va, write, user, key)
    }

    /// [`Cpu::access`] of `va` when it is a clean first-level hit (from
    /// the hits it remembers, the `hits` module, or from the first-level
    /// arrays): log2 of the entry's size, counted, ordered and remembered
    /// exactly as that access does. `None` when the access takes any other
    /// path (mail pending, a first-level miss, an entry that does not
    /// permit the access or must be walked to set D): the caller must then
    /// call [`Cpu::access`] for the same `va` at once, which makes it. A
    /// `None` changes nothing that access does not redo: at most the
    /// lookup's replacement touch of the entry that access looks up and
    /// touches again (a second touch of the most recent entry changes no
    /// LRU order and no pseudo-LRU bit), and the hit cache's sync, which
    /// that access does first. It returns in a register what a caller
    /// that needs no physical address needs (a replay pricing the access),
    /// with nothing copied through memory.
    #[inline(always)]
    pub fn hit(&mut self, va: u64, write: bool, user: bool) -> Option<u8> {
        if self.slot.pending.load(Ordering::Relaxed) {
            return None;
        }
        let need = needed_flags(write, user);
        if let Some(h) = self.hits.hit(va, need) {
            return Some(h.shift);
        }
        self.hit_l1(va, need)
    }

    /// The first-level part of [`Cpu::hit`], as [`Cpu::access`] makes it.
    #[inline(never)]
    fn hit_l1(&mut self, va: u64, need: u8) -> Option<u8> {
        let st = &mut *self.st;
        self.hits.sync(&mut st.l1, &mut st.stats);
        let (slot, e) = st.l1.lookup(va, tlb::key(va, self.asid))?;
        if e.flags() & need != need {
            return None;
        }
        st.stats.l1_hits_by_size[usize::from(e.shift())] += 1;
        self.hits.fill(va, slot, e);
        Some(e.shift())
    }

    /// The access the hardware retries after the OS handled its fault, as
    /// [`Cpu::access`] would make it, without the TLB lookups whose outcome
    /// is known: the fault invalidated every TLB entry of `va` on this CPU
    /// ([`Cpu::access`]'s errors say so) and nothing since filled one (the
    /// OS model's completion only flushes), so both levels miss. The miss
    /// is counted as the lookups would count it, and the walk, its walk
    /// cache lookup, its references and both fills are made as after any
    /// miss. Nothing is walked twice that the hardware walks once: the
    /// faulting walk and this one are the hardware's two walks.
    ///
    /// Only valid right after [`Cpu::access`] (or this) returned a fault
    /// for `va` and the OS handled it on this CPU; a nested (guest) CPU
    /// takes [`Cpu::access`] itself. `crates/machine/tests/retry.rs` holds
    /// it equal, counter by counter, to [`Cpu::access`].
    ///
    /// # Errors
    /// As [`Cpu::access`].
    #[inline]
    pub fn retry_after_fault(
        &mut self,
        pt: &PageTable,
        va: u64,
        write: bool,
        user: bool,
    ) -> Result<Access, Fault> {
        if self.slot.pending.load(Ordering::Relaxed) {
            self.drain();
        }
        if self.st.nested.is_some() {
            return self.access(pt, va, write, user);
        }
        debug_assert!(
            {
                let key = tlb::key(va, self.asid);
                let st = &mut *self.st;
                self.hits.hit(va, 0).is_none()
                    && st.l1.lookup(va, key).is_none()
                    && st.l2.lookup(va, key).is_none()
            },
            "a TLB entry for {va:#x} after its fault"
        );
        self.retry_walk(pt, va, write, user)
    }

    /// The walk and fills of [`Cpu::retry_after_fault`]: [`Cpu::miss_l1_with`]
    /// past its second-level lookup.
    #[inline(never)]
    fn retry_walk(
        &mut self,
        pt: &PageTable,
        va: u64,
        write: bool,
        user: bool,
    ) -> Result<Access, Fault> {
        self.walk_fill::<false>(pt, va, write, user)
    }

    /// [`Cpu::miss_l1`] on a guest: the same steps with the nested walk,
    /// kept out of line so that the native miss path's code stays as it
    /// was (BENCHMARKS.md, "Nested walks").
    #[cold]
    #[inline(never)]
    fn miss_l1_nested(
        &mut self,
        pt: &PageTable,
        va: u64,
        write: bool,
        user: bool,
        key: u64,
    ) -> Result<Access, Fault> {
        self.miss_l1_with::<true>(pt, va, write, user, key)
    }

    #[inline(never)]
    fn miss_l1(
        &mut self,
        pt: &PageTable,
        va: u64,
        write: bool,
        user: bool,
        key: u64,
    ) -> Result<Access, Fault> {
        self.miss_l1_with::<false>(pt, va, write, user, key)
    }

    /// The L1 miss: the L2 TLB, else a walk (nested on a guest, chosen at
    /// compile time so each caller gets its own straight-line copy).
    #[inline(always)]
    fn miss_l1_with<const NESTED: bool>(
        &mut self,
        pt: &PageTable,
        va: u64,
        write: bool,
        user: bool,
        key: u64,
    ) -> Result<Access, Fault> {
        let asid = self.asid;
        let st = &mut *self.st;
        if let Some((slot, e)) = st.l2.lookup(va, key) {
            if e.flags() & needed_flags(write, user) == needed_flags(write, user) {
                st.stats.l2_hits_by_size[usize::from(e.shift() & 63)] += 1;
                let mut a = hit(e, va, HitLevel::L2, 0);
                let fs = st.l1.fill(va, asid, a.pa, u32::from(e.shift()), e.flags());
                if let Some(fs) = fs {
                    a.page_size = 1 << fs;
                }
                return Ok(a);
            }
            return self.hit_needs_walk(
                pt,
                va,
                write,
                user,
                EntryHit {
                    level: HitLevel::L2,
                    slot,
                    entry: e,
                },
            );
        }
        self.walk_fill::<NESTED>(pt, va, write, user)
    }

    /// A miss in both TLB levels: counted, walked (nested on a guest), and
    /// filled into both levels.
    #[inline(always)]
    fn walk_fill<const NESTED: bool>(
        &mut self,
        pt: &PageTable,
        va: u64,
        write: bool,
        user: bool,
    ) -> Result<Access, Fault> {
        let asid = self.asid;
        self.st.stats.tlb_misses += 1;
        let (leaf, refs) = if NESTED {
            self.walk_nested(pt, va, write, user, false)?
        } else {
            self.walk(pt, va, write, user, false)?
        };
        let st = &mut *self.st;
        st.stats.misses_by_size[leaf.size_shift as usize & 63] += 1;
        let pa = leaf.pa.get();
        let f1 = st.l1.fill(va, asid, pa, leaf.size_shift, leaf.flags);
        let f2 = st.l2.fill(va, asid, pa, leaf.size_shift, leaf.flags);
        let shift = f1.or(f2).map_or(leaf.size_shift, u32::from);
        Ok(Access {
            pa,
            hit: HitLevel::Walk,
            walk_refs: refs,
            page_size: 1 << shift,
        })
    }

    /// A TLB hit that cannot complete from the entry: the entry forbids the
    /// access (a page fault, which invalidates the TLB entries of `va`), or
    /// the access writes a page the entry does not know dirty (the hardware
    /// walks to set D, SDM §4.8).
    #[cold]
    #[inline(never)]
    fn hit_needs_walk(
        &mut self,
        pt: &PageTable,
        va: u64,
        write: bool,
        user: bool,
        found: EntryHit,
    ) -> Result<Access, Fault> {
        let EntryHit {
            level,
            slot,
            entry: e,
        } = found;
        let asid = self.asid;
        {
            // The TLB held a translation for `va`: a hit, whatever follows.
            let st = &mut *self.st;
            match level {
                HitLevel::L1 => st.stats.l1_hits_by_size[usize::from(e.shift())] += 1,
                _ => st.stats.l2_hits_by_size[usize::from(e.shift())] += 1,
            }
            if !permits(e.flags(), write, user) {
                st.invalidate_va(va, asid);
                st.stats.faults_permission += 1;
                return Err(Fault::Permission { va, write, user });
            }
            st.stats.dirty_assists += 1;
        }
        let (_, refs) = if self.st.nested.is_some() {
            self.walk_nested(pt, va, write, user, true)?
        } else {
            self.walk(pt, va, write, user, true)?
        };
        let st = &mut *self.st;
        let mut a = hit(e, va, level, refs);
        match level {
            HitLevel::L1 => st.l1.set_flags(slot, flags::DIRTY),
            _ => {
                st.l2.set_flags(slot, flags::DIRTY);
                let pa = a.pa;
                if let Some(fs) =
                    st.l1
                        .fill(va, asid, pa, u32::from(e.shift()), e.flags() | flags::DIRTY)
                {
                    a.page_size = 1 << fs;
                }
            }
        }
        Ok(a)
    }

    /// The hardware walk with this CPU's walk caches, counted; a fault
    /// invalidates the TLB entries of `va` (SDM §4.10.4.1). `cached` says
    /// whether the TLBs may hold an entry for `va`: after a lookup that
    /// missed both levels they hold none (a walk fills nothing before it
    /// returns), and the invalidation, which would find nothing, is skipped.
    #[inline(always)]
    pub(crate) fn walk(
        &mut self,
        pt: &PageTable,
        va: u64,
        write: bool,
        user: bool,
        cached: bool,
    ) -> Result<(walk::Leaf, u32), Fault> {
        debug_assert_eq!(
            pt.geometry().name(),
            self.mmu.geom.name(),
            "the table's geometry is not the MMU's"
        );
        let asid = self.asid;
        let st = &mut *self.st;
        let mut count = WalkCount::default();
        let pwc = if st.pwc.is_empty() {
            None
        } else {
            Some(&mut st.pwc)
        };
        // The TLBs are keyed by the bare word; the walk takes the typed address.
        let r = walk::walk(
            pt,
            &self.mmu.gi,
            pwc,
            asid,
            Request::new(VirtAddr::new(va), write, user),
            &mut count,
        );
        if count.refs > 0 {
            st.stats.record_walk(count.refs);
        }
        st.stats.ad_writes += u64::from(count.ad_writes);
        match count.pwc_hit {
            Some(l) => st.stats.pwc_hits[l] += 1,
            None if !st.pwc.is_empty() && count.refs > 0 => st.stats.pwc_misses += 1,
            None => {}
        }
        match r {
            Ok(leaf) => Ok((leaf, count.refs)),
            Err(f) => {
                match f {
                    Fault::NotPresent { .. } => st.stats.faults_not_present += 1,
                    Fault::Permission { .. } => st.stats.faults_permission += 1,
                    Fault::Reserved { .. } => st.stats.faults_reserved += 1,
                    Fault::NonCanonical { .. } => st.stats.faults_noncanonical += 1,
                }
                if cached {
                    st.invalidate_va(va, asid);
                } else {
                    // The data levels missed; the instruction TLB may
                    // hold the page (code read as data).
                    st.invalidate_code_va(va, asid);
                    debug_assert_eq!(
                        st.l1.invalidate_va(va, asid) + st.l2.invalidate_va(va, asid),
                        0,
                        "a TLB entry for a va both levels missed"
                    );
                }
                Err(f)
            }
        }
    }

    /// [`Cpu::walk`] on a guest: the guest walk with this CPU's walk caches,
    /// every guest-physical address it reads (and the data's) translated by
    /// the second dimension (`host` module). A host fault is an EPT
    /// violation: the hypervisor maps the page and the access restarts
    /// from the beginning, as the guest instruction does after the VM exit;
    /// the abandoned attempt counts as a walk with the references it made.
    /// The translation returned is the combined gVA -> hPA one, of the
    /// smaller of the guest and host pages.
    #[cold]
    #[inline(never)]
    pub(crate) fn walk_nested(
        &mut self,
        pt: &PageTable,
        va: u64,
        write: bool,
        user: bool,
        cached: bool,
    ) -> Result<(walk::Leaf, u32), Fault> {
        let host = self
            .mmu
            .host
            .as_ref()
            .expect("a nested CPU's MMU has a host");
        let asid = self.asid;
        let st = &mut *self.st;
        loop {
            let ns = st.nested.as_deref_mut().expect("checked by the caller");
            let mut count = WalkCount::default();
            let mut n = NestedCount::default();
            let mut violation = None;
            let pwc = if st.pwc.is_empty() {
                None
            } else {
                Some(&mut st.pwc)
            };
            let r = walk::walk_with(
                pt,
                &self.mmu.gi,
                pwc,
                asid,
                Request::new(VirtAddr::new(va), write, user),
                &mut count,
                |gpa| {
                    host::translate(host, ns, gpa, false, &mut n)
                        .map(|_| ())
                        .inspect_err(|_| violation = Some(gpa))
                },
            );
            let r = match r {
                Ok(leaf) if violation.is_none() => {
                    match host::translate(host, ns, leaf.pa, write, &mut n) {
                        Ok(hpa) => Ok(walk::Leaf {
                            pa: hpa,
                            size_shift: leaf.size_shift.min(host.page_shift),
                            flags: leaf.flags,
                        }),
                        Err(f) => {
                            violation = Some(leaf.pa);
                            Err(f)
                        }
                    }
                }
                other => other,
            };
            let refs = count.refs + n.host_refs;
            if refs > 0 {
                st.stats.record_walk(refs);
            }
            let s = &mut st.stats;
            s.guest_walk_refs += u64::from(count.refs);
            s.host_walk_refs += u64::from(n.host_refs);
            s.nested_tlb_hits += u64::from(n.ntlb_hits);
            s.nested_tlb_misses += u64::from(n.ntlb_misses);
            s.host_pwc_hits += u64::from(n.host_pwc_hits);
            s.ad_writes += u64::from(count.ad_writes + n.ad_writes);
            match count.pwc_hit {
                Some(l) => s.pwc_hits[l] += 1,
                None if !st.pwc.is_empty() && count.refs > 0 => s.pwc_misses += 1,
                None => {}
            }
            if let Some(gpa) = violation {
                s.ept_violations += 1;
                host.handle_violation(gpa);
                continue;
            }
            return match r {
                Ok(leaf) => Ok((leaf, refs)),
                Err(f) => Err(guest_fault(st, f, va, asid, cached)),
            };
        }
    }
}

/// Counts a guest fault and invalidates the TLB entries of `va`, as a
/// page fault does (SDM §4.10.4.1); returns the fault. `cached` as for
/// [`Cpu::walk`].
#[inline(always)]
fn guest_fault(st: &mut CpuState, f: Fault, va: u64, asid: Asid, cached: bool) -> Fault {
    match f {
        Fault::NotPresent { .. } => st.stats.faults_not_present += 1,
        Fault::Permission { .. } => st.stats.faults_permission += 1,
        Fault::Reserved { .. } => st.stats.faults_reserved += 1,
        Fault::NonCanonical { .. } => st.stats.faults_noncanonical += 1,
    }
    if cached {
        st.invalidate_va(va, asid);
    } else {
        st.invalidate_code_va(va, asid);
        debug_assert_eq!(
            st.l1.invalidate_va(va, asid) + st.l2.invalidate_va(va, asid),
            0,
            "a TLB entry for a va both levels missed"
        );
    }
    f
}

#[inline]
pub(crate) fn hit(e: TlbEntry, va: u64, level: HitLevel, walk_refs: u32) -> Access {
    let size = 1u64 << e.shift();
    Access {
        pa: e.pa_base() | (va & (size - 1)),
        hit: level,
        walk_refs,
        page_size: size,
    }
}

impl Drop for Cpu {
    fn drop(&mut self) {
        self.leave();
        self.clear_hits();
        let st = std::mem::replace(&mut self.st, CpuState::placeholder());
        *lock(&self.slot.parked) = Some(st);
        self.slot.attached.store(false, Ordering::Release);
    }
}

impl CpuState {
    /// An empty state to leave behind in a dropped [`Cpu`].
    fn placeholder() -> Box<CpuState> {
        Box::new(CpuState {
            l1: TlbLevel::new(&[], 12, 0),
            l2: TlbLevel::new(&[], 12, 0),
            l1i: TlbLevel::new(&[], 12, 0),
            l2i: TlbLevel::new(&[], 12, 0),
            pwc: Pwc::new(&[], &[], 0),
            stats: MmuStats::default(),
            seen_gen: Box::new([]),
            nested: None,
        })
    }
}
