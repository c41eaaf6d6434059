//! What the machine crate's test files share.

use machine::{Machine, MachineConfig, MmConfig, MmuConfig};
use std::sync::Arc;

/// A machine of `cpus` CPUs on x86-64 4-level tables, with the MMU preset
/// `preset` fitted to them and the OS model configured as `mm`.
pub fn machine(preset: &str, mm: MmConfig, cpus: usize) -> Machine {
    let geometry = Arc::new(pt::geometry::preset("x86-64-4l").unwrap());
    Machine::new(MachineConfig {
        mmu: MmuConfig::preset(preset).unwrap().fit_to(&geometry),
        geometry,
        mm,
        cpus,
    })
    .unwrap()
}
