//! The model's configuration: geometry, the OS model's knobs and the MMU,
//! with defaults that mirror this host (docs/cli.md, "Model options"),
//! built from the typed [`ModelOptions`] without parsing their text again.

use super::settings::{self as opt, Executor, ModelOptions, Named};
use mm::config::{Locking, MmConfig, MthpPolicy, Reclaim, ThpMode};
use mmu::MmuConfig;
use pt::Geometry;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use thiserror::Error;
use timing::CostModel;

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
    /// What events cost, for the virtual clocks (the configuration's cost
    /// file, else the process's default, [`set_default_costs`]: the
    /// command line's is this host's; else the shipped reference file).
    pub costs: Arc<CostModel>,
    /// How the run executes its threads.
    pub executor: Executor,
}

/// The name `--costs` and `costs=` take for this host's own cost file
/// (the cached one, [`this_host_costs_path`]).
pub const THIS_HOST: &str = "this-host";

/// Where this host's own cost file is kept: the per-user cache folder
/// (`costs::cache`) and this host's machine key (`host::MachineKey`);
/// `None` when no cache folder can be named (no `HOME`).
pub fn this_host_costs_path() -> Option<std::path::PathBuf> {
    costs::cache::path_for(&host::MachineKey::this_host().id())
}

/// The cost file of every model configuration that names none, for this
/// process: the command line sets it to this host's own file (or
/// `PTLAB_COSTS`); unset, such a configuration prices with the shipped
/// reference file ([`CostModel::shipped`]), so that the library (tests,
/// the Python bindings) prices alike on every host.
static DEFAULT_COSTS: OnceLock<String> = OnceLock::new();

/// Makes `costs` (a path or a name, as `--costs` takes it) the cost file of
/// every model configuration of this process that names none. Set once;
/// `Err` with the file already set if it was.
///
/// # Errors
/// The file already set.
pub fn set_default_costs(costs: String) -> Result<(), String> {
    DEFAULT_COSTS.set(costs)
}

/// The file [`set_default_costs`] set, if any.
pub fn default_costs() -> Option<&'static str> {
    DEFAULT_COSTS.get().map(String::as_str)
}

/// The cost model of the cost file at `path`, of a shipped file by its
/// short name (`xeon-kvm-2026`, `bare-metal-2013`), or of this host's own
/// cached file (`this-host`, which must have been calibrated: the command
/// line makes it the first time a command prices with it).
///
/// # Errors
/// The costs crate's message (the file, and the key or line at fault); for
/// a name that is neither a file nor a shipped file, the names there are.
pub fn load_costs(path: &str) -> Result<CostModel, String> {
    // A shipped file by its short name, unless a file of that name exists.
    if !std::path::Path::new(path).exists() {
        if let Some(m) = CostModel::named(path) {
            return Ok(m);
        }
        if path == THIS_HOST {
            return match this_host_costs_path() {
                Some(p) if p.exists() => load_costs(&p.display().to_string()),
                Some(p) => Err(format!(
                    "\"{THIS_HOST}\": this host has no cost file yet ({} does not exist): \
                     `ptlab calibrate --out {}` makes it (so does any command that prints \
                     predicted time without --costs), or name a shipped file ({})",
                    p.display(),
                    p.display(),
                    timing::shipped_names().join(", ")
                )),
                None => Err(format!(
                    "\"{THIS_HOST}\": no cache folder for this host's cost file (neither \
                     XDG_CACHE_HOME nor HOME is an absolute path); name a file or a shipped \
                     one ({})",
                    timing::shipped_names().join(", ")
                )),
            };
        }
        let looks_like_a_name = !path.contains('/') && !path.ends_with(".toml");
        if looks_like_a_name {
            return Err(format!(
                "\"{path}\": no such file, and not a shipped cost file's name (shipped: {}; \
                 `{THIS_HOST}`: this host's calibrated file)",
                timing::shipped_names().join(", ")
            ));
        }
    }
    let f = costs::CostFile::load(std::path::Path::new(path)).map_err(|e| e.to_string())?;
    Ok(CostModel::new(&f, path))
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

/// The OS model's shmem THP policy for an option value.
fn shmem_enabled(s: opt::ShmemEnabled) -> mm::ShmemEnabled {
    match s {
        opt::ShmemEnabled::Always => mm::ShmemEnabled::Always,
        opt::ShmemEnabled::WithinSize => mm::ShmemEnabled::WithinSize,
        opt::ShmemEnabled::Advise => mm::ShmemEnabled::Advise,
        opt::ShmemEnabled::Never => mm::ShmemEnabled::Never,
        opt::ShmemEnabled::Deny => mm::ShmemEnabled::Deny,
        opt::ShmemEnabled::Force => mm::ShmemEnabled::Force,
    }
}

/// This host's shmem THP policy
/// (/sys/kernel/mm/transparent_hugepage/shmem_enabled), Linux's default
/// (`never`) when it cannot be read.
fn host_shmem_enabled() -> mm::ShmemEnabled {
    host::fingerprint::thp_shmem_enabled()
        .as_deref()
        .and_then(<opt::ShmemEnabled as Named>::parse)
        .map_or(mm::ShmemEnabled::Never, shmem_enabled)
}

/// This host's PMD-size shmem policy
/// (.../hugepages-2048kB/shmem_enabled), Linux's default (`inherit`) when
/// it cannot be read.
fn host_shmem_pmd_policy() -> mm::ShmemOrderPolicy {
    use mm::ShmemOrderPolicy as P;
    match host::fingerprint::thp_shmem_pmd_enabled().as_deref() {
        Some("always") => P::Always,
        Some("within_size") => P::WithinSize,
        Some("advise") => P::Advise,
        Some("never") => P::Never,
        _ => P::Inherit,
    }
}

/// The read-ahead window and large-folio support of the files the kernel
/// backend maps (in its default directory), so that the model reads files
/// as this host does; Linux's defaults where they cannot be read.
fn host_files(mm: &mut MmConfig) {
    #[cfg(target_os = "linux")]
    {
        let b = host::FileBacking::of(&crate::kernel::default_file_dir());
        if let Some(kb) = b.read_ahead_kb {
            mm.readaround_bytes = kb << 10;
        }
        if let Some(large) = b.large_folios {
            mm.large_folios = large;
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = mm;
}

/// This host's khugepaged limits
/// (/sys/kernel/mm/transparent_hugepage/khugepaged/), Linux's defaults for
/// those it cannot read.
fn host_khugepaged(k: &mut mm::Khugepaged) {
    let read = |name: &str, into: &mut u32| {
        let path = format!("/sys/kernel/mm/transparent_hugepage/khugepaged/{name}");
        if let Some(v) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            *into = v;
        }
    };
    read("max_ptes_none", &mut k.max_ptes_none);
    read("max_ptes_swap", &mut k.max_ptes_swap);
    read("max_ptes_shared", &mut k.max_ptes_shared);
    read("pages_to_scan", &mut k.pages_to_scan);
}

/// The OS model's policy for an mTHP option.
fn mthp_policy(p: opt::MthpPolicy) -> MthpPolicy {
    match p {
        opt::MthpPolicy::Always => MthpPolicy::Always,
        opt::MthpPolicy::Madvise => MthpPolicy::Madvise,
        opt::MthpPolicy::Never => MthpPolicy::Never,
        opt::MthpPolicy::Inherit => MthpPolicy::Inherit,
    }
}

/// The policy sysfs spells `s` (host settings are read as text).
fn parse_policy(s: &str) -> Option<MthpPolicy> {
    <opt::MthpPolicy as Named>::parse(s).map(mthp_policy)
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

/// The TLB preset a geometry implies when `tlb` is left out: an x86-64
/// geometry gets the x86 preset closest to this host's processor (zen4 on
/// AMD, icelake otherwise), a RISC-V or ARM geometry the neoverse-n1 preset,
/// the only non-x86 one, whose entries also hold a 64 KiB contiguous run (a
/// RISC-V Svnapot or ARM contiguous-bit page). An x86 preset under a 64 KiB
/// page would hit nothing: its entries cover 4 KiB pages.
pub fn default_tlb_preset(arch: pt::layout::Arch) -> &'static str {
    match arch {
        pt::layout::Arch::X86_64 => {
            let cpu = host::Fingerprint::read().cpu_model.unwrap_or_default();
            if cpu.contains("AMD") {
                "zen4"
            } else {
                "icelake"
            }
        }
        pt::layout::Arch::RiscV | pt::layout::Arch::Arm64 => "neoverse-n1",
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
    /// The model configured from checked, typed options (parsed once by
    /// `experiment::config`); every option left out mirrors this host.
    ///
    /// # Errors
    /// [`OptionError`] for a value the model cannot use with the others (a
    /// geometry that does not load, an mTHP size outside this geometry's
    /// range, a TLB that does not fit).
    pub fn new(opts: &ModelOptions) -> Result<ModelConfig, OptionError> {
        let geometry = pt::geometry::load(opts.geometry.as_deref().unwrap_or("x86-64-4l"))
            .map_err(|e| err("geometry", e.to_string()))?;
        let mut mm = MmConfig::default();
        if let Some(l) = opts.locking {
            mm.locking = match l {
                opt::Locking::Global => Locking::Global,
                opt::Locking::SplitPte => Locking::SplitPte,
                opt::Locking::SplitPmd => Locking::SplitPmd,
            };
        }
        if let Some(g) = opts.gup {
            mm.gup = match g {
                opt::Gup::Fast => mm::Gup::Fast,
                opt::Gup::Slow => mm::Gup::Slow,
            };
        }
        if let Some(r) = opts.reclaim {
            mm.reclaim = match r {
                opt::Reclaim::Off => Reclaim::Off,
                opt::Reclaim::On => Reclaim::On,
                opt::Reclaim::Eager => Reclaim::Eager,
            };
        }
        mm.thp = match opts.thp {
            None => host_thp(),
            Some(opt::Thp::Always) => ThpMode::Always,
            Some(opt::Thp::Madvise) => ThpMode::Madvise,
            Some(opt::Thp::Never) => ThpMode::Never,
        };
        mm.shmem_enabled = match opts.shmem_enabled {
            None => host_shmem_enabled(),
            Some(s) => shmem_enabled(s),
        };
        mm.shmem_pmd_policy = host_shmem_pmd_policy();
        host_mthp(&mut mm.mthp);
        host_files(&mut mm);
        host_khugepaged(&mut mm.khugepaged);
        for &(size, policy) in opts.mthp.iter().flatten() {
            let bytes = size.bytes();
            if bytes < 2 * geometry.page_size() || bytes >= 2 << 20 {
                return Err(err(
                    "mthp",
                    format!(
                        "{size}: multi-size THP folios lie between two base pages ({} KiB) and 2 MiB",
                        geometry.page_size() >> 9
                    ),
                ));
            }
            mm.mthp.insert(bytes, mthp_policy(policy));
        }
        let tlb = opts
            .tlb
            .clone()
            .unwrap_or_else(|| default_tlb_preset(geometry.arch()).to_string());
        let mut mmu = if tlb.ends_with(".toml") {
            let text = std::fs::read_to_string(&tlb)
                .map_err(|e| err("tlb", format!("cannot read {tlb}: {e}")))?;
            MmuConfig::from_toml(&tlb, &text).map_err(|e| err("tlb", e.to_string()))?
        } else {
            MmuConfig::preset(&tlb)
                .map_err(|e| err("tlb", e.to_string()))?
                .fit_to(&geometry)
        };
        // KVM's paravirtual remote TLB flush, as this guest uses it.
        mmu.pv_tlb_flush = match opts.pv_flush {
            Some(opt::PvFlush::On) => true,
            Some(opt::PvFlush::Off) => false,
            None => host::PvTlbFlush::read().is_some_and(|p| p.in_use),
        };
        // Broadcast invalidation, and the LRU drain of unmapping calls.
        mmu.broadcast.kind = match opts.tlb_flush {
            None | Some(opt::TlbFlushKind::Ipi) => mmu::TlbFlush::Ipi,
            Some(opt::TlbFlushKind::Invlpgb) => mmu::TlbFlush::Invlpgb,
            Some(opt::TlbFlushKind::Rar) => mmu::TlbFlush::Rar,
        };
        mm.lru_drain = opts.lru_drain != Some(opt::LruDrain::Off);
        mm.swap = match opts.swap {
            None => host::meminfo::active_swap_bytes(),
            Some(opt::SwapSetting::Off) => None,
            Some(opt::SwapSetting::Bytes(b)) => Some(b),
        };
        // Swap read-ahead as this host's kernel picks it
        // (swap_use_vma_readahead), unless given.
        mm.swap_readahead = mm::SwapReadahead {
            kind: match opts.swap_readahead {
                Some(opt::SwapReadahead::Vma) => mm::SwapRaKind::Vma,
                Some(opt::SwapReadahead::Cluster) => mm::SwapRaKind::Cluster,
                None => {
                    let vma = host::swap::vma_ra_enabled().unwrap_or(true)
                        && host::swap::any_rotational() != Some(true);
                    if vma {
                        mm::SwapRaKind::Vma
                    } else {
                        mm::SwapRaKind::Cluster
                    }
                }
            },
            page_cluster: opts
                .page_cluster
                .or_else(host::swap::page_cluster)
                .unwrap_or(host::swap::DEFAULT_PAGE_CLUSTER),
        };
        // The kind of swap area Linux writes to first, unless given.
        mm.swap_device = match opts.swap_device {
            Some(opt::SwapDevice::File) => mm::SwapDeviceKind::File,
            Some(opt::SwapDevice::Block) => mm::SwapDeviceKind::Block,
            Some(opt::SwapDevice::Sync) => mm::SwapDeviceKind::Sync,
            None => match host::swap::swap_area_kind() {
                None | Some(host::swap::SwapAreaKind::File) => mm::SwapDeviceKind::File,
                Some(host::swap::SwapAreaKind::Block) => mm::SwapDeviceKind::Block,
                Some(host::swap::SwapAreaKind::Sync) => mm::SwapDeviceKind::Sync,
            },
        };
        // The second dimension: a host geometry makes every walk nested.
        if let Some(host) = opts.host() {
            let cfg = mmu::HostConfig::new(
                host,
                opts.host_page.map(opt::HostPage::bytes),
                opts.host_caches.as_deref(),
            )
            .and_then(|c| c.check().map(|_| c))
            .map_err(|e| err(e.key(), e.to_string()))?;
            mmu.host = Some(cfg);
        }
        let cpus = match opts.cpus {
            Some(c) => c as usize,
            None => host::cpu::online_cpus().unwrap_or(1),
        };
        let costs = match opts.costs.as_deref().or(default_costs()) {
            Some(path) => load_costs(path).map_err(|m| err("costs", m))?,
            None => CostModel::shipped(),
        };
        Ok(ModelConfig {
            geometry: Arc::new(geometry),
            mm,
            mmu,
            tlb,
            cpus,
            costs: Arc::new(costs),
            executor: opts.executor.unwrap_or(Executor::Virtual),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::settings::MthpSize;

    #[test]
    fn typed_options_reach_the_model_unchanged() {
        let opts = ModelOptions {
            geometry: Some("x86-64-5l".into()),
            locking: Some(opt::Locking::Global),
            gup: Some(opt::Gup::Slow),
            reclaim: Some(opt::Reclaim::Eager),
            thp: Some(opt::Thp::Never),
            shmem_enabled: Some(opt::ShmemEnabled::Force),
            mthp: Some(vec![
                (MthpSize::parse("64k").unwrap(), opt::MthpPolicy::Always),
                (MthpSize::parse("16k").unwrap(), opt::MthpPolicy::Inherit),
            ]),
            tlb: Some("zen4".into()),
            cpus: Some(3),
            costs: None,
            executor: Some(Executor::Threads),
            pv_flush: Some(opt::PvFlush::On),
            tlb_flush: Some(opt::TlbFlushKind::Invlpgb),
            lru_drain: Some(opt::LruDrain::Off),
            host_geometry: Some("x86-64-4l".into()),
            host_page: opt::HostPage::parse("2M"),
            host_caches: Some("off".into()),
            swap: Some(opt::SwapSetting::Bytes(3 << 30)),
            swap_readahead: Some(opt::SwapReadahead::Cluster),
            page_cluster: Some(5),
            swap_device: Some(opt::SwapDevice::Sync),
        };
        let c = ModelConfig::new(&opts).unwrap();
        assert_eq!(c.geometry.name(), "x86-64-5l");
        assert_eq!(c.mm.locking, Locking::Global);
        assert_eq!(c.mm.gup, mm::Gup::Slow);
        assert_eq!(c.mm.reclaim, Reclaim::Eager);
        assert_eq!(c.mm.thp, ThpMode::Never);
        assert_eq!(c.mm.shmem_enabled, mm::ShmemEnabled::Force);
        assert_eq!(c.mm.mthp[&(64 << 10)], MthpPolicy::Always);
        assert_eq!(c.mm.mthp[&(16 << 10)], MthpPolicy::Inherit);
        assert_eq!((c.tlb.as_str(), c.cpus), ("zen4", 3));
        assert_eq!(c.executor, Executor::Threads);
        assert_eq!(c.costs.origin, timing::SHIPPED);
        assert!(c.mmu.pv_tlb_flush);
        assert_eq!(c.mmu.broadcast.kind, mmu::TlbFlush::Invlpgb);
        assert!(!c.mm.lru_drain);
        assert_eq!(c.mm.swap, Some(3 << 30));
        assert_eq!(
            c.mm.swap_readahead,
            mm::SwapReadahead {
                kind: mm::SwapRaKind::Cluster,
                page_cluster: 5
            }
        );
        assert_eq!(c.mm.swap_device, mm::SwapDeviceKind::Sync);
        let host = c.mmu.host.as_ref().unwrap();
        assert_eq!((host.geometry.as_str(), host.page), ("x86-64-4l", 2 << 20));
        assert_eq!((host.nested_tlb, host.pwc.len()), (0, 0));
        // Another value of each goes through too: nothing is a constant.
        let other = ModelOptions {
            locking: Some(opt::Locking::SplitPte),
            reclaim: Some(opt::Reclaim::Off),
            thp: Some(opt::Thp::Always),
            shmem_enabled: Some(opt::ShmemEnabled::WithinSize),
            cpus: Some(1),
            executor: None,
            pv_flush: Some(opt::PvFlush::Off),
            tlb_flush: Some(opt::TlbFlushKind::Rar),
            lru_drain: Some(opt::LruDrain::On),
            host_geometry: Some("none".into()),
            host_page: None,
            host_caches: None,
            swap: Some(opt::SwapSetting::Off),
            swap_readahead: Some(opt::SwapReadahead::Vma),
            page_cluster: Some(0),
            swap_device: Some(opt::SwapDevice::Block),
            ..opts
        };
        let c = ModelConfig::new(&other).unwrap();
        assert_eq!(c.mm.locking, Locking::SplitPte);
        assert_eq!(c.mm.reclaim, Reclaim::Off);
        assert_eq!(c.mm.thp, ThpMode::Always);
        assert_eq!(c.mm.shmem_enabled, mm::ShmemEnabled::WithinSize);
        assert_eq!(c.cpus, 1);
        assert_eq!(c.executor, Executor::Virtual);
        assert_eq!(c.mmu.broadcast.kind, mmu::TlbFlush::Rar);
        assert!(c.mm.lru_drain);
        assert_eq!(c.mm.swap, None);
        assert_eq!(
            c.mm.swap_readahead,
            mm::SwapReadahead {
                kind: mm::SwapRaKind::Vma,
                page_cluster: 0
            }
        );
        assert_eq!(c.mm.swap_device, mm::SwapDeviceKind::Block);
        assert!(!c.mmu.pv_tlb_flush);
        assert_eq!(c.mmu.host, None, "host-geometry=none is a native machine");
    }

    #[test]
    fn shmem_enabled_left_out_is_this_hosts() {
        // The selected word of sysfs's "always within_size advise [never] deny force".
        let selected = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/shmem_enabled")
            .ok()
            .and_then(|t| {
                t.split_whitespace()
                    .find_map(|w| w.strip_prefix('[')?.strip_suffix(']').map(str::to_string))
            });
        let want = selected
            .as_deref()
            .and_then(<opt::ShmemEnabled as Named>::parse)
            .map_or(mm::ShmemEnabled::Never, shmem_enabled);
        let c = ModelConfig::new(&ModelOptions::default()).unwrap();
        assert_eq!(c.mm.shmem_enabled, want, "{selected:?}");
    }

    #[test]
    fn host_options_reach_the_mmu_with_their_defaults() {
        let opts = ModelOptions {
            geometry: Some("x86-64-5l".into()),
            host_geometry: Some("x86-64-5l".into()),
            tlb: Some("zen4".into()),
            ..ModelOptions::default()
        };
        let host = ModelConfig::new(&opts).unwrap().mmu.host.unwrap();
        assert_eq!(host.page, 4096, "the host geometry's base page");
        assert_eq!(host.nested_tlb, mmu::host_config::NESTED_TLB_ENTRIES);
        assert!(!host.pwc.is_empty(), "host-caches defaults to on");
        let bad = ModelOptions {
            host_page: opt::HostPage::parse("1G"),
            host_geometry: Some("arm64-64k-48".into()),
            ..opts.clone()
        };
        let e = ModelConfig::new(&bad).unwrap_err();
        assert_eq!(e.key, "host-page");
        assert!(e.message.contains("512 MiB"), "{}", e.message);
        let small = ModelOptions {
            host_geometry: Some("riscv-sv39".into()),
            ..opts
        };
        let e = ModelConfig::new(&small).unwrap_err();
        assert_eq!(e.key, "host-geometry");
    }

    #[test]
    fn a_bad_cost_file_is_refused_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "format = 1\n[costs.\"fault.anon_wrte\"]\nns = 1.0\nlo = 1.0\nhi = 1.0\nprovenance = \"measured\"\n").unwrap();
        let opts = ModelOptions {
            costs: Some(path.display().to_string()),
            tlb: Some("zen4".into()),
            ..ModelOptions::default()
        };
        let e = ModelConfig::new(&opts).unwrap_err();
        assert_eq!(e.key, "costs");
        assert!(
            e.message.contains("did you mean \"fault.anon_write\""),
            "{}",
            e.message
        );
        std::fs::write(&path, "format = 1\n[costs.\"fault.anon_write\"]\nns = 2.0\nlo = 1.0\nhi = 3.0\nprovenance = \"measured\"\n").unwrap();
        let c = ModelConfig::new(&opts).unwrap();
        assert_eq!(c.costs.faults[mm::FaultKind::AnonWrite as usize].ns, 2.0);
        assert_eq!(c.costs.origin, path.display().to_string());
    }

    #[test]
    fn an_mthp_size_the_geometry_cannot_hold_is_refused() {
        let opts = ModelOptions {
            mthp: Some(vec![(
                MthpSize::parse("2048k").unwrap(),
                opt::MthpPolicy::Always,
            )]),
            tlb: Some("zen4".into()),
            ..ModelOptions::default()
        };
        let e = ModelConfig::new(&opts).unwrap_err();
        assert_eq!(e.key, "mthp");
        assert!(e.message.starts_with("2048k:"), "{}", e.message);
    }
}
