//! The counters of one address space of a machine, named as the workload
//! format's marks name them: what every driver of the model (the workload
//! interpreter, a trace replay) reports at a mark.

use machine::{Machine, MachineError, SpaceId};
use workload::result::Counters;

/// The process-wide counters of `space` now (absolute, not relative to a
/// baseline).
///
/// # Errors
/// [`MachineError::NoSuchSpace`].
pub fn counters(machine: &Machine, space: SpaceId) -> Result<Counters, MachineError> {
    let snap = machine.snapshot(space)?;
    let mut out = Counters::default();
    for (k, v) in snap.mm.to_pairs() {
        out.set(k, v);
    }
    for (k, v) in snap.mmu.to_counters() {
        out.set(k, v);
    }
    // The model's tlb_shootdowns is what /proc/interrupts would count: one
    // per IPI received.
    out.set(
        counters::TLB_SHOOTDOWNS.name,
        out.get(counters::IPIS.name).unwrap_or(0),
    );
    out.pt_pages = snap.mm.pt_pages().into_iter().collect();
    Ok(out)
}
