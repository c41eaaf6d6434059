//! The loom checks' geometry, written once: a PMD table of 4 entries over
//! PTE tables of 4 entries (4 KiB pages), small enough for loom to explore
//! every interleaving of a few operations.
#![allow(dead_code)]

use pt::geometry::{Arch, Geometry, LevelSpec};

pub const PAGE: u64 = 4096;
/// The range one PTE table maps.
pub const TABLE: u64 = 4 * PAGE;

pub fn tiny() -> std::sync::Arc<Geometry> {
    let lvl = |name: &str, leaf: bool| LevelSpec {
        name: name.into(),
        shift: 0,
        bits: 2,
        leaf,
        contig: 0,
    };
    std::sync::Arc::new(
        Geometry::new(
            "tiny",
            Arch::X86_64,
            12,
            12,
            52,
            vec![lvl("PTE", true), lvl("PMD", false)],
        )
        .unwrap(),
    )
}
