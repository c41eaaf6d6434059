//! The second dimension of a nested machine at run time: the host's tables
//! (EPT / NPT), the modeled hypervisor that fills them on demand, and each
//! CPU's caches of the second dimension: a nested TLB (gPA -> hPA) and
//! host walk caches keyed by guest-physical address, as AMD NPT and Intel
//! EPT have.
//!
//! How a nested walk uses them ([`crate::Cpu`]'s walk, when the MMU has a
//! host): the guest walk runs as a native one, with the guest's walk caches;
//! before it reads a guest entry at guest-physical address `gpa`, and once
//! more for the data's `gpa`, [`translate`] turns `gpa` into a host-physical
//! address: a nested TLB hit costs no reference; a miss walks the host's
//! tables from the deepest host walk-cache hit and fills the nested TLB.
//! With neither cache a `g`-level guest over an `h`-level host makes
//! `(g + 1)(h + 1) - 1` references (24 for 4 on 4, 35 for 5 on 5).
//!
//! ## Invariants
//!
//! 1. The hypervisor only adds host mappings (never changes or removes one),
//!    so no cached gPA -> hPA translation or host walk-cache entry goes
//!    stale: nothing in the second dimension is ever invalidated. Guest
//!    flushes (INVLPG, a PCID flush, a full flush) leave it alone, as
//!    hardware does: Intel's INVLPG and INVVPID drop linear and combined
//!    mappings, never guest-physical ones, which only INVEPT drops (SDM
//!    vol. 3C, "Invalidation of Cached Mappings" under EPT); AMD's guest
//!    INVLPG/INVLPGA leave the nested TLB to the hypervisor's own flushes.
//! 2. Host mappings are made under [`Host::lock`]; walks read the host
//!    tables without it (the words are written atomically by `pt`, and a
//!    walk that reads a host entry as not present takes a violation, which
//!    re-checks under the lock).
//! 3. Every host leaf maps `page` bytes at host-physical = guest-physical +
//!    [`HOST_PHYS_OFFSET`].

use std::sync::Mutex;

use pt::{Attrs, PageTable, Perms, PhysAddr, PtError, VirtAddr};

use crate::cache::Cache;
use crate::config::Replacement;
use crate::host_config::{HostConfig, HostError, HOST_PHYS_OFFSET};
use crate::pwc::Pwc;
use crate::walk::{walk_with, Fault, GeomInfo, Request, WalkCount};

/// The host of a nested machine, shared by its CPUs.
pub(crate) struct Host {
    pub(crate) pt: PageTable,
    pub(crate) gi: GeomInfo,
    /// log2 of the host page.
    pub(crate) page_shift: u32,
    cfg: HostConfig,
    /// Serializes the hypervisor's mappings (invariant 2).
    lock: Mutex<()>,
}

impl Host {
    pub(crate) fn new(cfg: &HostConfig) -> Result<Host, HostError> {
        let g = cfg.check()?;
        let pt = PageTable::with_new_memory(g).map_err(|e| HostError::Geometry(e.to_string()))?;
        Ok(Host {
            gi: GeomInfo::new(pt.geometry()),
            pt,
            page_shift: cfg.page.trailing_zeros(),
            cfg: cfg.clone(),
            lock: Mutex::new(()),
        })
    }

    /// A CPU's caches of the second dimension, empty.
    pub(crate) fn new_state(&self, seed: u64) -> NestedState {
        let n = self.cfg.nested_tlb as usize;
        NestedState {
            ntlb: (n > 0).then(|| Cache::new(n, n, Replacement::Lru, seed)),
            pwc: Pwc::new(&self.cfg.pwc, self.gi.hw_shifts(), seed ^ 0x5a5a),
        }
    }

    /// The hypervisor's handling of an EPT violation / nested page fault
    /// at `gpa`: it backs the host page around `gpa` with host memory and
    /// maps it writable (KVM: arch/x86/kvm/mmu/mmu.c, `kvm_tdp_page_fault`
    /// -> `direct_map`, for a guest frame the host has already allocated).
    /// Returns whether it mapped anything (another CPU may have been
    /// first).
    ///
    /// # Panics
    /// If the host tables cannot map the page: [`HostConfig::check`] keeps
    /// every guest-physical address the model hands out inside the host's
    /// range, so this is a bug.
    pub(crate) fn handle_violation(&self, gpa: PhysAddr) -> bool {
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let base = gpa.get() & !(self.cfg.page - 1);
        match self.pt.map(
            VirtAddr::new(base),
            PhysAddr::new(base + HOST_PHYS_OFFSET),
            self.cfg.page,
            self.cfg.page,
            Attrs::new(Perms::USER_RW),
        ) {
            Ok(()) => true,
            Err(PtError::AlreadyMapped { .. }) => false,
            Err(e) => panic!("the modeled hypervisor cannot map guest-physical {base:#x}: {e}"),
        }
    }
}

/// One CPU's caches of the second dimension.
pub(crate) struct NestedState {
    /// gPA page number (host page) -> hPA of the page.
    ntlb: Option<Cache<u64>>,
    /// Host walk caches, keyed by guest-physical address (ASID 0: one VM).
    pwc: Pwc,
}

/// What the second dimension did during one nested walk.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NestedCount {
    /// Host entries read, over all host walks.
    pub host_refs: u32,
    pub ntlb_hits: u32,
    pub ntlb_misses: u32,
    pub host_pwc_hits: u32,
    /// Accessed/dirty bits the host walks wrote.
    pub ad_writes: u32,
}

/// Translates guest-physical `gpa` to host-physical for a read (or, for
/// the data of a write, a write): the nested TLB, else a host walk from the
/// host walk caches, which fills the nested TLB.
///
/// # Errors
/// The host walk's [`Fault`] (an EPT violation: the caller has the
/// hypervisor handle it and restarts the access).
#[inline]
pub(crate) fn translate(
    host: &Host,
    st: &mut NestedState,
    gpa: PhysAddr,
    write: bool,
    n: &mut NestedCount,
) -> Result<PhysAddr, Fault> {
    let page = gpa.get() >> host.page_shift;
    let offset = gpa.get() & ((1 << host.page_shift) - 1);
    if let Some(t) = &mut st.ntlb {
        if let Some(i) = t.probe(0, page) {
            n.ntlb_hits += 1;
            return Ok(PhysAddr::new(t.val(i) | offset));
        }
        n.ntlb_misses += 1;
    }
    let mut c = WalkCount::default();
    let pwc = if st.pwc.is_empty() {
        None
    } else {
        Some(&mut st.pwc)
    };
    // Host walks run in host (supervisor) mode over the guest-physical
    // address as their input. (`walk_with` with a closure of its own, not
    // `walk`: `walk` stays with the native walk as its one caller, so its
    // inlining there does not change.)
    let r = walk_with(
        &host.pt,
        &host.gi,
        pwc,
        0,
        Request::new(VirtAddr::new(gpa.get()), write, false),
        &mut c,
        |_| Ok(()),
    );
    n.host_refs += c.refs;
    n.ad_writes += c.ad_writes;
    if c.pwc_hit.is_some() {
        n.host_pwc_hits += 1;
    }
    let leaf = r?;
    if let Some(t) = &mut st.ntlb {
        t.insert_absent(0, page, !0, leaf.pa.get() & !offset);
    }
    Ok(leaf.pa)
}
