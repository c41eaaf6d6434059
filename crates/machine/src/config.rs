//! What a machine is made of.

use mm::MmConfig;
use mmu::MmuConfig;
use pt::Geometry;
use std::sync::Arc;

/// The configuration of a [`crate::Machine`].
#[derive(Debug, Clone)]
pub struct MachineConfig {
    /// The page-table geometry every address space and MMU uses.
    pub geometry: Arc<Geometry>,
    /// The OS model's knobs, for every address space.
    pub mm: MmConfig,
    /// TLBs and walk caches of every CPU.
    pub mmu: MmuConfig,
    /// Modeled CPUs (at least 1).
    pub cpus: usize,
}
