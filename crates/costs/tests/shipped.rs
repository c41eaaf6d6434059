//! The cost files shipped in `costs/` load, validate, and keep the promises
//! docs/costs.md makes about them.

use costs::{CostFile, Provenance, CATALOG};
use std::path::PathBuf;

fn shipped(name: &str) -> CostFile {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../costs")
        .join(name);
    CostFile::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_bare_metal_file_assumes_every_figure_with_a_source() {
    let f = shipped("bare-metal-2013.toml");
    assert_eq!(f.host.mode.as_deref(), Some("assumed"));
    assert_eq!(f.host.hypervisor.as_deref(), Some("none"));
    for c in CATALOG {
        let cost = f
            .get(c.name)
            .unwrap_or_else(|| panic!("{} is missing", c.name));
        assert_eq!(cost.provenance, Provenance::Assumed, "{}", c.name);
        assert!(!cost.source.is_empty(), "{} has no source", c.name);
    }
}

#[test]
fn the_reference_machines_file_is_calibrates_long_output() {
    let f = shipped("xeon-kvm-2026.toml");
    // Named for the machine it was measured on, which its host table says.
    assert_eq!(
        f.host.cpu_model.as_deref(),
        Some("Intel(R) Xeon(R) Processor")
    );
    assert_eq!(f.host.hypervisor.as_deref(), Some("KVM"));
    assert_eq!(f.host.page_size, Some(4096));
    assert_eq!(f.host.mode.as_deref(), Some("long"));
    assert!(f.host.kernel_release.is_some() && f.host.taken.is_some());
    assert!(f.costs.len() >= 25, "only {} figures", f.costs.len());
    for (name, c) in &f.costs {
        assert_ne!(c.provenance, Provenance::Assumed, "{name}");
        assert!(!c.method.is_empty(), "{name} has no method");
        assert!(c.n >= 5, "{name}: {} repetitions", c.n);
    }
}
