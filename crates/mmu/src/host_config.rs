//! The host of a guest: the configuration of the second dimension of a
//! nested (two-dimensional) walk, as under KVM with EPT (Intel) or NPT
//! (AMD). Not part of a TLB preset: the machine the guest runs under
//! decides, as for `pv_tlb_flush`.
//!
//! ## Rules ([`HostConfig::check`])
//!
//! - The host geometry loads (a preset or a geometry file).
//! - The host page (what backs guest memory) is one of the host geometry's
//!   leaf sizes and no smaller than its hardware page.
//! - The host geometry translates every guest-physical address the model
//!   hands out (table pages from 4 GiB, data frames from 1 TiB: the
//!   `pt::mem` zones) into a host-physical address: a lower half of at least
//!   [`GUEST_PHYS_BITS`] bits, and output addresses of at least
//!   [`GUEST_PHYS_BITS`] + 1 bits (host-physical = guest-physical +
//!   [`HOST_PHYS_OFFSET`]).

use crate::config::{MmuConfig, PwcConfig};
use pt::Geometry;
use thiserror::Error;

/// Entries of the nested TLB (gPA -> hPA). ASSUMED: neither AMD nor Intel
/// publish its size; 32 is a small fully associative structure like the
/// first-level DTLBs of the presets.
pub const NESTED_TLB_ENTRIES: u32 = 32;

/// Guest-physical addresses the model hands out lie below `2^47` (128 TiB:
/// the data zone starts at 1 TiB and the largest built-in workload writes
/// 55 TB).
pub const GUEST_PHYS_BITS: u32 = 47;

/// Where the modeled hypervisor backs guest memory: host-physical =
/// guest-physical + this (32 TiB), so that a host-physical address is never
/// mistaken for the guest-physical one in a test.
pub const HOST_PHYS_OFFSET: u64 = 1 << 45;

/// The second dimension of a nested machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// The host's geometry: a preset name or a geometry file.
    pub geometry: String,
    /// Bytes of each host page backing guest memory (the hypervisor maps
    /// guest-physical memory in pages of this size, on demand).
    pub page: u64,
    /// Entries of the nested TLB (gPA -> hPA, fully associative, LRU); 0:
    /// none.
    pub nested_tlb: u32,
    /// Walk caches of the host walks, keyed by guest-physical address.
    pub pwc: Vec<PwcConfig>,
}

/// Why a host cannot be used; [`HostError::key`] names the configuration
/// key at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HostError {
    #[error("{0}")]
    Geometry(String),
    #[error("host geometry {geometry} cannot back guest memory: {why}")]
    Range { geometry: String, why: String },
    #[error("a {page} host page is not one of host geometry {geometry}'s leaf sizes ({sizes})")]
    Page {
        page: String,
        geometry: String,
        sizes: String,
    },
    #[error("\"{0}\" is not on, off or a TLB preset")]
    Caches(String),
}

impl HostError {
    /// The configuration key whose value is at fault.
    pub fn key(&self) -> &'static str {
        match self {
            HostError::Geometry(_) | HostError::Range { .. } => "host-geometry",
            HostError::Page { .. } => "host-page",
            HostError::Caches(_) => "host-caches",
        }
    }
}

impl HostConfig {
    /// A host of `geometry` backing guest memory with `page`-byte pages
    /// (default: the host geometry's base page) and the second dimension's
    /// caches `caches`: `on` (default: a nested TLB of
    /// [`NESTED_TLB_ENTRIES`] and the presets' walk caches), `off` (none),
    /// or a TLB preset whose walk caches the host walks get, with the
    /// nested TLB (`none`: the nested TLB alone).
    ///
    /// # Errors
    /// [`HostError::Geometry`] if the geometry does not load,
    /// [`HostError::Caches`] for an unknown `caches`.
    pub fn new(
        geometry: &str,
        page: Option<u64>,
        caches: Option<&str>,
    ) -> Result<HostConfig, HostError> {
        let g = pt::geometry::load(geometry).map_err(|e| HostError::Geometry(e.to_string()))?;
        let (nested_tlb, pwc) = match caches.unwrap_or("on") {
            "off" => (0, Vec::new()),
            "on" => (
                NESTED_TLB_ENTRIES,
                MmuConfig::preset("zen4").expect("a preset").pwc,
            ),
            name => {
                let p = MmuConfig::preset(name).map_err(|_| HostError::Caches(name.into()))?;
                (NESTED_TLB_ENTRIES, p.pwc)
            }
        };
        Ok(HostConfig {
            geometry: geometry.to_string(),
            page: page.unwrap_or(g.page_size()),
            nested_tlb,
            pwc,
        })
    }

    /// Checks the rules of the module docs; returns the host geometry.
    ///
    /// # Errors
    /// The first rule broken.
    pub fn check(&self) -> Result<Geometry, HostError> {
        let g =
            pt::geometry::load(&self.geometry).map_err(|e| HostError::Geometry(e.to_string()))?;
        if g.va_bits() - 1 < GUEST_PHYS_BITS {
            return Err(HostError::Range {
                geometry: g.name().to_string(),
                why: format!(
                    "its {}-bit input range does not reach the model's {GUEST_PHYS_BITS}-bit guest-physical space (take a 48-bit or wider geometry)",
                    g.va_bits()
                ),
            });
        }
        if g.oa_bits() <= GUEST_PHYS_BITS {
            return Err(HostError::Range {
                geometry: g.name().to_string(),
                why: format!(
                    "its {}-bit output addresses cannot hold host memory past {} bits",
                    g.oa_bits(),
                    GUEST_PHYS_BITS
                ),
            });
        }
        let sizes = g.leaf_sizes();
        if !sizes.contains(&self.page) || self.page < 1 << g.hw_page_shift() {
            return Err(HostError::Page {
                page: pt::geometry::human_size(self.page),
                geometry: g.name().to_string(),
                sizes: sizes
                    .iter()
                    .map(|&s| pt::geometry::human_size(s))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_checked_against_their_geometry() {
        let h = HostConfig::new("x86-64-4l", None, None).unwrap();
        assert_eq!((h.page, h.nested_tlb), (4096, NESTED_TLB_ENTRIES));
        assert!(h.check().is_ok());
        let off = HostConfig::new("x86-64-5l", Some(1 << 30), Some("off")).unwrap();
        assert_eq!((off.nested_tlb, off.pwc.len()), (0, 0));
        assert!(off.check().is_ok());
        let e = HostConfig::new("x86-64-4l", Some(64 << 10), None)
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(e.key(), "host-page");
        assert!(e.to_string().contains("4 KiB, 2 MiB, 1 GiB"), "{e}");
        let e = HostConfig::new("riscv-sv39", None, None)
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(e.key(), "host-geometry");
        assert_eq!(
            HostConfig::new("x86-64-4l", None, Some("zen5"))
                .unwrap_err()
                .key(),
            "host-caches"
        );
        assert_eq!(
            HostConfig::new("x86-64-6l", None, None).unwrap_err().key(),
            "host-geometry"
        );
    }
}
