//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use mmu::{Mmu, MmuConfig, PwcConfig, Replacement, TlbArrayConfig, TlbConfig};
use pt::{Attrs, PageTable, Perms, PhysAddr, VirtAddr};

pub const BASE: u64 = 0x2000_0000_0000; // 32 TiB, where workloads place regions
pub const DATA: u64 = 1 << 40; // pt's data zone

pub fn table(geom: &str) -> PageTable {
    PageTable::with_new_memory(pt::geometry::preset(geom).unwrap()).unwrap()
}

pub fn rw() -> Attrs {
    Attrs::new(Perms::USER_RW)
}

pub fn ro() -> Attrs {
    Attrs::new(Perms::USER_R)
}

/// Maps `pages` 4 KiB pages at `va` to consecutive frames from
/// `DATA + (va mod 64 GiB)` (so `BASE` maps to `DATA`).
pub fn map4k(pt: &PageTable, va: u64, pages: u64, attrs: Attrs) {
    pt.map(
        VirtAddr::new(va),
        PhysAddr::new(DATA + (va & ((1 << 36) - 1))),
        pages * 4096,
        4096,
        attrs,
    )
    .unwrap();
}

pub fn array(name: &str, entries: u32, ways: u32, sizes: &[&str]) -> TlbArrayConfig {
    let text = format!(
        "name = \"{name}\"\nentries = {entries}\nways = {ways}\nsizes = [{}]\n",
        sizes
            .iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    toml::from_str(&text).unwrap()
}

pub fn config(l1: Vec<TlbArrayConfig>, l2: Vec<TlbArrayConfig>, pwc: Vec<PwcConfig>) -> MmuConfig {
    MmuConfig {
        name: "test".into(),
        tlb: TlbConfig {
            l1,
            l2,
            ..TlbConfig::default()
        },
        pwc,
        flush_ceiling: 33,
        pv_tlb_flush: false,
        host: None,
        broadcast: Default::default(),
    }
}

pub fn pwc(level: usize, entries: u32, ways: u32) -> PwcConfig {
    PwcConfig {
        level,
        entries,
        ways,
        replacement: Replacement::Lru,
    }
}

pub fn mmu(cfg: MmuConfig, pt: &PageTable, cpus: usize) -> Arc<Mmu> {
    Mmu::new(cfg, pt.geometry(), cpus).unwrap()
}

/// The raw hardware words a walk of `va` reads, root first.
pub fn words(pt: &PageTable, va: u64) -> Vec<u64> {
    let t = pt.translate(VirtAddr::new(va)).unwrap();
    t.entry_pas()
        .iter()
        .map(|&pa| pt.mem().read(pa.get()))
        .collect()
}
