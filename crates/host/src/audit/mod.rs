//! `ptlab audit`: this host's virtual-memory latency hazards, each with its
//! value, a status, why it matters and how to change it.
//!
//! Invariants: the audit never fails and never needs root. A value that cannot
//! be read gives an item with status [`Status::Unavailable`] (and says which
//! file it wanted), never an error. Experiments that change memory counters
//! (the PT_RECLAIM probe) run in a forked child so this process's counters
//! are untouched.

mod checks;
mod pt_reclaim;
mod writable_maps;

use std::time::Duration;

use serde::Serialize;

use crate::cpu::CpuInfo;
use crate::fingerprint::Fingerprint;
use crate::kconfig::KernelConfig;
use crate::meminfo::MemInfo;

pub use pt_reclaim::probe_pt_reclaim;
pub use writable_maps::{scan_writable_file_mappings, WritableMappings};

/// The result of [`audit`].
#[derive(Debug, Clone, Serialize)]
pub struct Audit {
    pub host: Fingerprint,
    pub items: Vec<Item>,
}

/// One finding. `id` is stable (the CLI spec lists the required ones).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    pub id: String,
    /// What was found: a string, number, boolean, object, or `null` when
    /// unavailable.
    pub value: serde_json::Value,
    pub status: Status,
    /// Why it matters for page-table and memory latency.
    pub why: String,
    /// How to change it (or that nothing needs changing).
    pub fix: String,
}

/// How an item looks for latency-sensitive work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to do.
    Ok,
    /// A known source of latency spikes or memory cost is on.
    Warn,
    /// Worth knowing; not a hazard by itself.
    Info,
    /// Could not be read on this host.
    Unavailable,
}

/// Knobs for [`audit_with`].
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// How long to watch the TLB line of /proc/interrupts.
    pub tlb_sample: Duration,
    /// Run the experiments that fork a child (the PT_RECLAIM probe when the
    /// kernel config is unreadable).
    pub experiments: bool,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            tlb_sample: Duration::from_secs(1),
            experiments: true,
        }
    }
}

/// Audits this host with the default options (samples TLB shootdowns for one
/// second).
pub fn audit() -> Audit {
    audit_with(&AuditOptions::default())
}

/// Audits this host.
pub fn audit_with(opts: &AuditOptions) -> Audit {
    let cpuinfo = CpuInfo::read();
    let meminfo = MemInfo::read();
    let config = KernelConfig::read();
    let host = Fingerprint::from_parts(cpuinfo.as_ref(), meminfo.as_ref(), config.as_ref());
    let ctx = checks::Context {
        host: &host,
        meminfo: meminfo.as_ref(),
        config: config.as_ref(),
        opts,
    };
    let items = vec![
        checks::la57(&ctx),
        checks::thp(&ctx),
        checks::thp_defrag(&ctx),
        checks::mthp(&ctx),
        checks::ksm(),
        checks::numa_balancing(),
        checks::swap(&ctx),
        checks::pt_reclaim(&ctx),
        checks::split_ptlocks(&ctx),
        checks::hypervisor(&ctx),
        checks::tlb_shootdowns(&ctx),
        checks::pv_tlb_flush(),
        checks::writable_file_mappings(),
    ];
    Audit { host, items }
}

impl Item {
    fn new(
        id: &str,
        value: serde_json::Value,
        status: Status,
        why: impl Into<String>,
        fix: impl Into<String>,
    ) -> Item {
        Item {
            id: id.to_string(),
            value,
            status,
            why: why.into(),
            fix: fix.into(),
        }
    }

    /// An item whose source could not be read.
    fn unavailable(id: &str, what: &str, why: impl Into<String>) -> Item {
        Item::new(
            id,
            serde_json::Value::Null,
            Status::Unavailable,
            why,
            format!("{what} is not readable on this host (not Linux, or hidden by a container)."),
        )
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    const REQUIRED: &[&str] = &[
        "la57",
        "thp",
        "thp_defrag",
        "ksm",
        "numa_balancing",
        "swap",
        "pt_reclaim",
        "split_ptlocks",
        "hypervisor",
        "tlb_shootdowns",
        "pv_tlb_flush",
        "writable_file_mappings",
    ];

    #[test]
    fn audit_has_every_required_item_once() {
        let a = audit_with(&AuditOptions {
            tlb_sample: Duration::from_millis(50),
            experiments: true,
        });
        for id in REQUIRED {
            let n = a.items.iter().filter(|i| i.id == *id).count();
            assert_eq!(n, 1, "item {id}");
        }
        for item in &a.items {
            assert!(!item.why.is_empty() && !item.fix.is_empty(), "{}", item.id);
            assert_eq!(
                item.status == Status::Unavailable,
                item.value.is_null(),
                "{}: unavailable exactly when there is no value",
                item.id
            );
        }
        let json = serde_json::to_value(&a).unwrap();
        assert!(json["host"].is_object());
        assert!(json["items"][0]["status"].is_string());
    }

    #[test]
    fn swap_status_follows_meminfo() {
        let a = audit_with(&AuditOptions {
            tlb_sample: Duration::ZERO,
            experiments: false,
        });
        let swap = a.items.iter().find(|i| i.id == "swap").unwrap();
        match MemInfo::read().and_then(|m| m.swap_total_kb()) {
            Some(0) => assert_eq!(swap.status, Status::Ok),
            Some(_) => assert_eq!(swap.status, Status::Warn),
            None => assert_eq!(swap.status, Status::Unavailable),
        }
    }
}
