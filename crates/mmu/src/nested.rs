//! Nested (two-dimensional) walks: a guest's page tables over a host's,
//! as under KVM with EPT (Intel) or NPT (AMD). This machine is such a
//! guest, so this is how its TLB misses are served.
//!
//! The guest tree's table addresses (its root, and every table pointer in
//! it) are guest-physical. Before the hardware can read a guest entry at
//! guest-physical address `gpa`, it translates `gpa` with a walk of the host
//! tree; the guest leaf's output, a guest-physical address, needs one more
//! host walk. With `g` guest and `h` host levels and no caches, a walk makes
//! `g * (h + 1) + h = (g + 1)(h + 1) - 1` references: 24 for 4-level on
//! 4-level, 35 for 5-level on 5-level.
//!
//! The model stores a guest table's words in the guest tree's own
//! [`pt::PhysMem`] at their guest-physical addresses; the host walk decides
//! whether the read may happen and what it costs, as the hardware's does.
//! Guest accessed/dirty bits are set in the guest's entries as a native walk
//! sets them; host leaves get their accessed bit (and dirty on a data write).
//! This walker has no TLB or walk cache: every walk is cold.

use pt::{PageTable, PhysAddr, VirtAddr};
use thiserror::Error;

use crate::walk::{walk, walk_with, Fault, GeomInfo, Request, WalkCount};

/// A fault of a nested walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum NestedFault {
    /// The guest's own tables fault: the guest OS handles it.
    #[error("guest fault: {0}")]
    Guest(Fault),
    /// Guest-physical address `gpa` (a guest table page or the data page)
    /// is not mapped, or not so, by the host: an EPT violation / nested page
    /// fault the hypervisor handles.
    #[error("host fault translating guest-physical {gpa:#x}: {fault}")]
    Host { gpa: PhysAddr, fault: Fault },
}

/// A completed nested translation and what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NestedWalk {
    /// Guest-physical address of the accessed byte.
    pub gpa: PhysAddr,
    /// Host-physical address of the accessed byte.
    pub hpa: PhysAddr,
    /// All memory references: `guest_refs + host_refs`.
    pub refs: u32,
    /// Guest entries read.
    pub guest_refs: u32,
    /// Host entries read, over all host walks.
    pub host_refs: u32,
    /// Host walks made (one per guest entry read, plus one for the data).
    pub host_walks: u32,
    /// The size a combined TLB entry could have: the smaller of the guest
    /// and host translations.
    pub page_size: u64,
}

/// Walks a guest tree over a host tree.
pub struct NestedWalker<'a> {
    pub guest: &'a PageTable,
    pub host: &'a PageTable,
    gi: GeomInfo,
    hi: GeomInfo,
}

impl<'a> NestedWalker<'a> {
    pub fn new(guest: &'a PageTable, host: &'a PageTable) -> NestedWalker<'a> {
        NestedWalker {
            guest,
            host,
            gi: GeomInfo::new(guest.geometry()),
            hi: GeomInfo::new(host.geometry()),
        }
    }

    /// Translates guest-virtual `va` for a read or write (from guest user
    /// mode if `user`), counting every reference.
    ///
    /// # Errors
    /// [`NestedFault::Guest`] when the guest tables fault,
    /// [`NestedFault::Host`] when a guest-physical address they need is not
    /// mapped by the host.
    pub fn walk(&self, va: VirtAddr, write: bool, user: bool) -> Result<NestedWalk, NestedFault> {
        let mut host_refs = 0;
        let mut host_walks = 0;
        let mut host_fault = None;
        let mut gcount = WalkCount::default();
        // Host walks run in host (supervisor) mode: only presence and, for
        // the data, writability matter.
        let r = walk_with(
            self.guest,
            &self.gi,
            None,
            0,
            Request::new(va, write, user),
            &mut gcount,
            |gpa| {
                let mut hc = WalkCount::default();
                let res = walk(
                    self.host,
                    &self.hi,
                    None,
                    0,
                    Request::new(host_va(gpa), false, false),
                    &mut hc,
                );
                host_refs += hc.refs;
                host_walks += 1;
                res.map(|_| ())
                    .inspect_err(|&fault| host_fault = Some((gpa, fault)))
            },
        );
        let leaf = match (r, host_fault) {
            (Ok(l), _) => l,
            (Err(_), Some((gpa, fault))) => return Err(NestedFault::Host { gpa, fault }),
            (Err(f), None) => return Err(NestedFault::Guest(f)),
        };
        let mut hc = WalkCount::default();
        let data = walk(
            self.host,
            &self.hi,
            None,
            0,
            Request::new(host_va(leaf.pa), write, false),
            &mut hc,
        )
        .map_err(|fault| NestedFault::Host {
            gpa: leaf.pa,
            fault,
        })?;
        host_refs += hc.refs;
        host_walks += 1;
        Ok(NestedWalk {
            gpa: leaf.pa,
            hpa: data.pa,
            refs: gcount.refs + host_refs,
            guest_refs: gcount.refs,
            host_refs,
            host_walks,
            page_size: 1 << leaf.size_shift.min(data.size_shift),
        })
    }
}

/// A guest-physical address as the input of the host's tables: the one
/// place an address changes space without a table saying so, because here
/// the host's table is what says so.
#[inline(always)]
fn host_va(gpa: PhysAddr) -> VirtAddr {
    VirtAddr::new(gpa.get())
}
