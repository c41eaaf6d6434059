//! The model's configuration: geometry, the OS model's knobs and the MMU,
//! with defaults that mirror this host (shared/spec/cli.md, "Model options").

use mm::config::{Locking, MmConfig, MthpPolicy, Reclaim, ThpMode};
use mmu::MmuConfig;
use pt::Geometry;
use std::collections::BTreeMap;
use std::sync::Arc;
use thiserror::Error;

/// A model option that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("model option \"{key}\": {message}")]
pub struct OptionError {
    pub key: String,
    pub message: String,
}

/// Everything the model needs to run a workload.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub geometry: Arc<Geometry>,
    pub mm: MmConfig,
    pub mmu: MmuConfig,
    /// The TLB preset's name (or the file it came from).
    pub tlb: String,
    /// Modeled CPUs; a workload with more threads gets one CPU per thread.
    pub cpus: usize,
}

fn err(key: &str, message: impl Into<String>) -> OptionError {
    OptionError {
        key: key.into(),
        message: message.into(),
    }
}

/// This host's THP mode, or Linux's default build setting (madvise) when
/// it cannot be read.
fn host_thp() -> ThpMode {
    match host::fingerprint::thp_enabled().as_deref() {
        Some("always") => ThpMode::Always,
        Some("never") => ThpMode::Never,
        _ => ThpMode::Madvise,
    }
}

fn parse_policy(s: &str) -> Option<MthpPolicy> {
    Some(match s {
        "always" => MthpPolicy::Always,
        "madvise" => MthpPolicy::Madvise,
        "never" => MthpPolicy::Never,
        "inherit" => MthpPolicy::Inherit,
        _ => return None,
    })
}

/// Parses `16k` / `64K` / `2048kB` into bytes.
fn parse_kib(s: &str) -> Option<u64> {
    let t = s.trim().trim_end_matches("kB").trim_end_matches(['k', 'K']);
    t.parse::<u64>().ok().map(|k| k << 10)
}

/// This host's multi-size THP policies (sysfs hugepages-<size>kB).
fn host_mthp(into: &mut BTreeMap<u64, MthpPolicy>) {
    for s in host::fingerprint::mthp_settings() {
        let size = s.size_kb << 10;
        if let Some(p) = parse_policy(&s.enabled) {
            if into.contains_key(&size) {
                into.insert(size, p);
            }
        }
    }
}

/// The TLB preset closest to this host's processor.
pub fn host_tlb_preset() -> &'static str {
    let cpu = host::Fingerprint::read().cpu_model.unwrap_or_default();
    if cpu.contains("AMD") {
        "zen4"
    } else if std::env::consts::ARCH == "aarch64" {
        "neoverse-n1"
    } else {
        "icelake"
    }
}

impl ModelConfig {
    /// The model configured from checked options (see
    /// `experiment::config`); every option left out mirrors this host.
    ///
    /// # Errors
    /// [`OptionError`] for a value the model cannot use.
    pub fn from_options(opts: &BTreeMap<String, String>) -> Result<ModelConfig, OptionError> {
        let get = |k: &str| opts.get(k).map(String::as_str);
        let geometry = pt::geometry::load(get("geometry").unwrap_or("x86-64-4l"))
            .map_err(|e| err("geometry", e.to_string()))?;
        let mut mm = MmConfig::default();
        if let Some(l) = get("locking") {
            mm.locking = match l {
                "global" => Locking::Global,
                "split-pte" => Locking::SplitPte,
                "split-pmd" => Locking::SplitPmd,
                o => return Err(err("locking", format!("unknown scheme \"{o}\""))),
            };
        }
        if let Some(r) = get("reclaim") {
            mm.reclaim = match r {
                "off" => Reclaim::Off,
                "on" => Reclaim::On,
                "eager" => Reclaim::Eager,
                o => return Err(err("reclaim", format!("unknown mode \"{o}\""))),
            };
        }
        mm.thp = match get("thp") {
            None => host_thp(),
            Some("always") => ThpMode::Always,
            Some("madvise") => ThpMode::Madvise,
            Some("never") => ThpMode::Never,
            Some(o) => return Err(err("thp", format!("unknown mode \"{o}\""))),
        };
        host_mthp(&mut mm.mthp);
        if let Some(m) = get("mthp") {
            for part in m.split(',') {
                let (size, policy) = part
                    .split_once('=')
                    .ok_or_else(|| err("mthp", format!("\"{part}\" is not SIZE=POLICY")))?;
                let bytes = parse_kib(size)
                    .ok_or_else(|| err("mthp", format!("\"{size}\" is not a size in KiB")))?;
                let p = parse_policy(policy)
                    .ok_or_else(|| err("mthp", format!("unknown policy \"{policy}\"")))?;
                if bytes < 2 * geometry.page_size() || bytes >= 2 << 20 {
                    return Err(err(
                        "mthp",
                        format!(
                            "{size}: multi-size THP folios lie between two base pages ({} KiB) and 2 MiB",
                            geometry.page_size() >> 9
                        ),
                    ));
                }
                mm.mthp.insert(bytes, p);
            }
        }
        let tlb = get("tlb").unwrap_or_else(|| host_tlb_preset()).to_string();
        let mmu = if tlb.ends_with(".toml") {
            let text = std::fs::read_to_string(&tlb)
                .map_err(|e| err("tlb", format!("cannot read {tlb}: {e}")))?;
            MmuConfig::from_toml(&tlb, &text).map_err(|e| err("tlb", e.to_string()))?
        } else {
            MmuConfig::preset(&tlb)
                .map_err(|e| err("tlb", e.to_string()))?
                .fit_to(&geometry)
        };
        let cpus = match get("cpus") {
            Some(c) => c
                .parse::<usize>()
                .map_err(|_| err("cpus", format!("\"{c}\" is not a number")))?,
            None => host::cpu::online_cpus().unwrap_or(1),
        };
        Ok(ModelConfig {
            geometry: Arc::new(geometry),
            mm,
            mmu,
            tlb,
            cpus,
        })
    }
}
