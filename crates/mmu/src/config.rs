//! The MMU's configuration: TLB arrays per level, paging-structure (walk)
//! caches per table level, the shootdown ceiling; presets named after real
//! processors; checks that reject hardware that cannot exist.
//!
//! ## Shape
//!
//! ```toml
//! name = "my-cpu"
//! flush_ceiling = 33          # Linux x86: tlb_single_page_flush_ceiling
//!
//! [[tlb.l1]]                  # first level: arrays probed together
//! name = "dtlb-4k"
//! entries = 64
//! ways = 4
//! sizes = ["4KiB"]            # or "base": the geometry's hardware page
//! replacement = "lru"         # lru | plru | random
//!
//! [[tlb.l2]]                  # second level (unified)
//! name = "stlb"
//! entries = 2048
//! ways = 16
//! sizes = ["4KiB", "2MiB"]
//!
//! [[tlb.l1i]]                 # instruction TLB, for traces with fetches
//! name = "itlb-4k"
//! entries = 128
//! ways = 8
//! sizes = ["4KiB"]
//! # [[tlb.l2i]]: the instruction side's own second level (AMD's L2
//! # ITLB); without it instruction misses go to [[tlb.l2]], shared.
//!
//! [[pwc]]                     # one walk cache per table level
//! level = 1                   # 1 = entries of the level above the leaf (PMD / PDE)
//! entries = 32
//! ways = 8
//! ```
//!
//! ## Rules ([`MmuConfig::validate`])
//!
//! - `entries` and `ways` are at least 1, `ways` divides `entries`, and the
//!   number of sets `entries / ways` is a power of two (the set index is a
//!   bit field of the address, as in hardware).
//! - Every page size is a power of two of at least 4 KiB and at least the
//!   geometry's hardware page, and no larger than its address space.
//! - A walk cache names a level that can hold table pointers (1 to 5), at
//!   most once. A cache for a level the geometry lacks (the PML5E cache
//!   under 4-level paging) is kept but never used, as in hardware.
//!
//! ## Page sizes the hardware lacks
//!
//! A translation is cached in the array of a level that holds the largest
//! size not larger than the translation; a translation larger than that size
//! is *splintered*: the TLB caches only the piece around the accessed
//! address. So a RISC-V 64 KiB NAPOT page on a preset without 64 KiB entries
//! fills a 4 KiB entry (the contiguity hint ignored, as hardware without
//! Svnapot support in its TLB would), and a 1 GiB page on AMD's L2 TLB fills a
//! 2 MiB entry ("smashing", AMD's word for it).

use pt::geometry::MAX_LEVELS;
use pt::Geometry;
use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// Linux x86: arch/x86/mm/tlb.c, `tlb_single_page_flush_ceiling` (33).
pub const LINUX_FLUSH_CEILING: u32 = 33;

/// Most CPUs one [`crate::Mmu`] models.
pub const MAX_CPUS: usize = 1024;

/// How a set chooses the entry to evict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    /// Least recently used (exact, with per-way timestamps).
    #[default]
    Lru,
    /// Bit pseudo-LRU ("MRU bits"): each way has a bit set on use; when all
    /// are set the others are cleared; the victim is the first clear way.
    Plru,
    /// A pseudo-random way (xorshift, seeded per array: deterministic).
    Random,
}

/// A TLB page size: bytes, or the geometry's hardware base page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageSize {
    /// The hardware page of the geometry the MMU runs with (4 KiB on x86-64
    /// and RISC-V, the granule on ARM64).
    Base,
    Bytes(u64),
}

impl PageSize {
    /// The size in bytes for a geometry whose hardware page is `2^hw_shift`.
    pub fn bytes(self, hw_shift: u32) -> u64 {
        match self {
            PageSize::Base => 1 << hw_shift,
            PageSize::Bytes(b) => b,
        }
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PageSize::Base => f.write_str("base"),
            PageSize::Bytes(b) => f.write_str(&pt::geometry::human_size(*b)),
        }
    }
}

/// "4KiB", "2MiB", "1GiB", "base", or a number of bytes.
fn parse_size(s: &str) -> Option<PageSize> {
    if s == "base" {
        return Some(PageSize::Base);
    }
    let units = [("KiB", 10), ("MiB", 20), ("GiB", 30), ("TiB", 40)];
    for (u, shift) in units {
        if let Some(n) = s.strip_suffix(u) {
            let n: u64 = n.trim().parse().ok()?;
            return n.checked_mul(1 << shift).map(PageSize::Bytes);
        }
    }
    s.parse().ok().map(PageSize::Bytes)
}

impl Serialize for PageSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PageSize::Base => s.serialize_str("base"),
            PageSize::Bytes(b) => s.serialize_str(&pt::geometry::human_size(*b).replace(' ', "")),
        }
    }
}

impl<'de> Deserialize<'de> for PageSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PageSize, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = PageSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a page size such as \"4KiB\", \"2MiB\", \"1GiB\", \"base\" or a number of bytes")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<PageSize, E> {
                Ok(PageSize::Bytes(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<PageSize, E> {
                u64::try_from(v)
                    .map(PageSize::Bytes)
                    .map_err(|_| E::custom("a page size cannot be negative"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<PageSize, E> {
                parse_size(v).ok_or_else(|| {
                    E::custom(format!(
                        "\"{v}\" is not a page size; expected \"4KiB\", \"2MiB\", \"1GiB\", \"base\" or bytes"
                    ))
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// One TLB array: a set-associative structure holding some page sizes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbArrayConfig {
    pub name: String,
    pub entries: u32,
    /// `ways == entries` makes the array fully associative.
    pub ways: u32,
    pub sizes: Vec<PageSize>,
    #[serde(default)]
    pub replacement: Replacement,
}

impl TlbArrayConfig {
    fn new(name: &str, entries: u32, ways: u32, sizes: &[PageSize]) -> TlbArrayConfig {
        TlbArrayConfig {
            name: name.to_string(),
            entries,
            ways,
            sizes: sizes.to_vec(),
            replacement: Replacement::Lru,
        }
    }
    /// Sets per array (`entries / ways`; meaningful once validated).
    pub fn sets(&self) -> u32 {
        self.entries.checked_div(self.ways).unwrap_or(0)
    }
}

/// The TLB hierarchy of one CPU: first-level arrays (probed first), then the
/// second level. Either may be empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbConfig {
    #[serde(default)]
    pub l1: Vec<TlbArrayConfig>,
    #[serde(default)]
    pub l2: Vec<TlbArrayConfig>,
    /// The instruction TLB's first level: instruction fetches look here,
    /// then in `l2i` if it has arrays, else in `l2` (shared with data).
    /// Empty: no instruction TLB (fetches go straight to the second level).
    #[serde(default)]
    pub l1i: Vec<TlbArrayConfig>,
    /// The instruction TLB's own second level (AMD's L2 ITLB); empty: the
    /// second level `l2` is shared by instructions and data (Intel's STLB,
    /// Arm's L2 TLB).
    #[serde(default)]
    pub l2i: Vec<TlbArrayConfig>,
}

impl TlbConfig {
    /// Every array, data and instruction.
    pub fn arrays(&self) -> impl Iterator<Item = &TlbArrayConfig> {
        self.l1
            .iter()
            .chain(&self.l2)
            .chain(&self.l1i)
            .chain(&self.l2i)
    }
}

/// One paging-structure cache: it caches the table pointers read from
/// entries of `level` (indexed from the leaf: 1 = PMD/PDE, 2 = PUD/PDPTE,
/// 3 = PGD/PML4E on 4-level x86-64), so that a hit skips the reads of that
/// level and every level above it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PwcConfig {
    pub level: usize,
    pub entries: u32,
    pub ways: u32,
    #[serde(default)]
    pub replacement: Replacement,
}

impl PwcConfig {
    fn new(level: usize, entries: u32, ways: u32) -> PwcConfig {
        PwcConfig {
            level,
            entries,
            ways,
            replacement: Replacement::Lru,
        }
    }
}

fn default_ceiling() -> u32 {
    LINUX_FLUSH_CEILING
}

/// Everything the MMU model needs to know about the processor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MmuConfig {
    pub name: String,
    #[serde(default)]
    pub tlb: TlbConfig,
    #[serde(default)]
    pub pwc: Vec<PwcConfig>,
    /// A shootdown of more pages than this flushes the whole address space
    /// instead of page by page.
    #[serde(default = "default_ceiling")]
    pub flush_ceiling: u32,
    /// KVM's paravirtual remote TLB flush (a guest kernel that logs "KVM
    /// setup pv remote TLB flush"): a shootdown sends no IPI to a target CPU
    /// that is not running; its flush is deferred to when it runs again,
    /// and then flushes its whole TLB. Not part of a TLB preset: the
    /// machine it runs under decides.
    #[serde(default)]
    pub pv_tlb_flush: bool,
    /// The host this machine runs under as a guest (nested walks), or none
    /// (native). Like `pv_tlb_flush`, not part of a TLB file.
    #[serde(skip)]
    pub host: Option<crate::host_config::HostConfig>,
    /// Broadcast TLB invalidation (INVLPGB, RAR) or IPIs; like
    /// `pv_tlb_flush`, the machine's, not part of a TLB file.
    #[serde(skip)]
    pub broadcast: crate::broadcast::Broadcast,
}

/// Why a configuration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    #[error("unknown TLB preset \"{name}\"; known: {known}")]
    UnknownPreset { name: String, known: String },
    #[error("{path}: {line}:{column}: {message}")]
    Parse {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot read the TLB configuration file {path}: {message}")]
    Read { path: String, message: String },
    #[error("{what} \"{name}\": {entries} entries; at most {max} (real TLBs hold thousands)")]
    TooManyEntries {
        what: &'static str,
        name: String,
        entries: u32,
        max: u32,
    },
    #[error("TLB level with {arrays} arrays; at most {max}")]
    TooManyArrays { arrays: usize, max: usize },
    #[error("{what} \"{name}\": {ways} ways; an array needs at least one way")]
    ZeroWays {
        what: &'static str,
        name: String,
        ways: u32,
    },
    #[error("{what} \"{name}\": {entries} entries in {ways} ways make zero sets")]
    ZeroSets {
        what: &'static str,
        name: String,
        entries: u32,
        ways: u32,
    },
    #[error("{what} \"{name}\": {ways} ways do not divide {entries} entries")]
    WaysNotDividing {
        what: &'static str,
        name: String,
        entries: u32,
        ways: u32,
    },
    #[error(
        "{what} \"{name}\": {entries} entries / {ways} ways = {sets} sets, not a power of two"
    )]
    SetsNotPowerOfTwo {
        what: &'static str,
        name: String,
        entries: u32,
        ways: u32,
        sets: u32,
    },
    #[error("TLB array \"{name}\" holds no page size (list at least one in `sizes`)")]
    NoPageSizes { name: String },
    #[error("TLB array \"{name}\": {size:#x} bytes is not a page size (a power of two of at least 4 KiB)")]
    BadPageSize { name: String, size: u64 },
    #[error(
        "TLB array \"{name}\": page size {size} is unsupported for geometry {geometry} ({why})"
    )]
    UnsupportedPageSize {
        name: String,
        size: String,
        geometry: String,
        why: String,
    },
    #[error("walk cache for level {level}: table pointers live at levels 1 to {max} (0 is the leaf level)")]
    BadPwcLevel { level: usize, max: usize },
    #[error("walk cache for level {level} is configured twice")]
    DuplicatePwcLevel { level: usize },
    #[error("host: {0}")]
    Host(#[from] crate::host_config::HostError),
    #[error("{cpus} CPUs: the model supports 1 to {max}")]
    BadCpuCount { cpus: usize, max: usize },
}

/// Names of the presets.
pub const PRESET_NAMES: &[&str] = &["zen4", "icelake", "neoverse-n1", "none"];

/// The smallest entries of the x86 presets: 4 KiB on x86-64 and RISC-V. Under
/// a geometry with a larger hardware page (ARM64 16K/64K granules) they hold
/// that page: the question there is "a TLB of this size", not "x86 pages".
const K4: PageSize = PageSize::Base;
const K16: PageSize = PageSize::Bytes(16 << 10);
const K64: PageSize = PageSize::Bytes(64 << 10);
const M32: PageSize = PageSize::Bytes(32 << 20);
const M512: PageSize = PageSize::Bytes(512 << 20);
const M2: PageSize = PageSize::Bytes(2 << 20);
const G1: PageSize = PageSize::Bytes(1 << 30);

/// Walk caches of both presets. Neither Intel nor AMD publish the sizes of
/// their paging-structure caches (Intel SDM vol. 3A §4.10.3.1: a processor
/// "may support any or all" of them); these are ChampSim's defaults
/// (config/defaults.py, `default_ptw`: PSCL5 1x2, PSCL4 1x4, PSCL3 2x4,
/// PSCL2 4x8), the configuration most published walk-cache studies use.
/// ChampSim's PSCL2 caches the entries that point to page tables: level 1 here.
fn champsim_pwc() -> Vec<PwcConfig> {
    vec![
        PwcConfig::new(1, 32, 8),
        PwcConfig::new(2, 8, 4),
        PwcConfig::new(3, 4, 4),
        PwcConfig::new(4, 2, 2),
    ]
}

impl MmuConfig {
    /// A built-in configuration by name.
    ///
    /// # Errors
    /// [`ConfigError::UnknownPreset`] listing the known names.
    pub fn preset(name: &str) -> Result<MmuConfig, ConfigError> {
        let (tlb, pwc) = match name {
            // AMD Zen 4 (EPYC 9004 "Genoa", family 19h model 11h). Sizes from
            // CPUID as this machine reports them (Fn8000_0005 EBX/EAX: L1
            // DTLB 72 entries, fully associative, for 4K and 2M pages;
            // Fn8000_0006 EBX/EAX: L2 DTLB 3072 entries for 4K and 2M) and
            // AMD's Software Optimization Guide for Family 19h (pub. 56665,
            // §2.10: the L1 DTLB holds 4K, 2M and 1G pages; the L2 DTLB holds
            // 4K and 2M entries, 1G pages are "smashed" into 2M entries).
            // The L2 is skewed-associative with ways partitioned by page size
            // (CPUID reports 8 ways for 4K, 6 for 2M); modeled as one 24-way
            // array of 128 sets, which keeps its capacity.
            // Instruction side, the same guide (§2.10: "L1 ITLB: 64 entries,
            // fully associative, 4K/2M/1G"; "L2 ITLB: 512 entries, 8-way,
            // 4K/2M"; CPUID Fn8000_0005 EBX and Fn8000_0006 EBX report the
            // same): AMD's instruction TLB has its own second level.
            "zen4" => (
                TlbConfig {
                    l1: vec![TlbArrayConfig::new("dtlb", 72, 72, &[K4, M2, G1])],
                    l2: vec![TlbArrayConfig::new("l2-dtlb", 3072, 24, &[K4, M2])],
                    l1i: vec![TlbArrayConfig::new("itlb", 64, 64, &[K4, M2, G1])],
                    l2i: vec![TlbArrayConfig::new("l2-itlb", 512, 8, &[K4, M2])],
                },
                champsim_pwc(),
            ),
            // Intel Ice Lake (Sunny Cove). CPUID leaf 18h of a Core
            // i7-1068NG7 (Ice Lake client), as published in
            // github.com/urd00m/System-Projects cache_timer/i7_writeup.md,
            // and Intel's Optimization Reference Manual (Ice Lake client TLB
            // parameters): load DTLB 4K 64 entries 4-way, 2M/4M 32 entries
            // 4-way, 1G 8 entries fully associative; STLB 2048 entries for
            // 4K (two 8-way 1024-entry halves, one also holding 2M, the other
            // 1G). Modeled as a 16-way 2048-entry STLB for 4K and 2M plus an
            // 8-way 1024-entry STLB for 1G: the 4K capacity is exact, the 2M
            // capacity is doubled. The 16-entry store-only DTLB is not
            // modeled (accesses are not split into loads and stores).
            // Instruction side, the same sources: ITLB 4K 128 entries
            // 8-way, 2M/4M 16 entries (modeled fully associative); the STLB
            // is shared by instructions and data.
            "icelake" => (
                TlbConfig {
                    l1: vec![
                        TlbArrayConfig::new("dtlb-4k", 64, 4, &[K4]),
                        TlbArrayConfig::new("dtlb-2m", 32, 4, &[M2]),
                        TlbArrayConfig::new("dtlb-1g", 8, 8, &[G1]),
                    ],
                    l2: vec![
                        TlbArrayConfig::new("stlb", 2048, 16, &[K4, M2]),
                        TlbArrayConfig::new("stlb-1g", 1024, 8, &[G1]),
                    ],
                    l1i: vec![
                        TlbArrayConfig::new("itlb-4k", 128, 8, &[K4]),
                        TlbArrayConfig::new("itlb-2m", 16, 16, &[M2]),
                    ],
                    l2i: Vec::new(),
                },
                champsim_pwc(),
            ),
            // Arm Neoverse N1 (the core of the Ampere Altra the RISC-V 64K
            // RFC measured on), whose TLBs are those of the Cortex-A76:
            // Cortex-A76 TRM (100798), A5.2: data L1 TLB 48 entries, fully
            // associative, 4K/16K/64K/2M/512M; L2 TLB 1280 entries, 5-way,
            // 4K/16K/64K/2M/32M/512M/1G. Contiguous (and, for the RISC-V
            // geometries, Svnapot) 64 KiB runs fill one 64 KiB entry. Sizes
            // below a geometry's hardware page are dropped by `fit_to`.
            // Instruction L1 TLB, the same section: 48 entries, fully
            // associative, 4K/16K/64K/2M/32M; the L2 TLB is shared by
            // instructions and data.
            "neoverse-n1" => (
                TlbConfig {
                    l1: vec![TlbArrayConfig::new(
                        "l1-dtlb",
                        48,
                        48,
                        &[PageSize::Bytes(4 << 10), K16, K64, M2, M512],
                    )],
                    l2: vec![TlbArrayConfig::new(
                        "l2-tlb",
                        1280,
                        5,
                        &[PageSize::Bytes(4 << 10), K16, K64, M2, M32, M512, G1],
                    )],
                    l1i: vec![TlbArrayConfig::new(
                        "l1-itlb",
                        48,
                        48,
                        &[PageSize::Bytes(4 << 10), K16, K64, M2, M32],
                    )],
                    l2i: Vec::new(),
                },
                champsim_pwc(),
            ),
            // No TLB and no walk cache: every access walks the whole tree.
            "none" => (TlbConfig::default(), Vec::new()),
            _ => {
                return Err(ConfigError::UnknownPreset {
                    name: name.to_string(),
                    known: PRESET_NAMES.join(", "),
                })
            }
        };
        Ok(MmuConfig {
            name: name.to_string(),
            tlb,
            pwc,
            flush_ceiling: LINUX_FLUSH_CEILING,
            pv_tlb_flush: false,
            host: None,
            broadcast: Default::default(),
        })
    }

    /// Reads a configuration from TOML text (`path` only names it in
    /// errors) and checks its shape (not yet against a geometry).
    ///
    /// # Errors
    /// [`ConfigError::Parse`] with line and column, or the shape rule the
    /// configuration breaks.
    pub fn from_toml(path: &str, text: &str) -> Result<MmuConfig, ConfigError> {
        let c: MmuConfig = toml::from_str(text).map_err(|e| {
            let (line, column) = pt::text::toml_error_at(text, &e);
            ConfigError::Parse {
                path: path.to_string(),
                line,
                column,
                message: e
                    .message()
                    .lines()
                    .next()
                    .unwrap_or("invalid TOML")
                    .to_string(),
            }
        })?;
        c.validate_shape()?;
        Ok(c)
    }

    /// A preset name, or the path of a TOML file (ending in `.toml` or
    /// containing a `/`).
    ///
    /// # Errors
    /// As [`MmuConfig::preset`] and [`MmuConfig::from_toml`];
    /// [`ConfigError::Read`] for an unreadable file.
    pub fn load(name_or_path: &str) -> Result<MmuConfig, ConfigError> {
        if name_or_path.ends_with(".toml") || name_or_path.contains('/') {
            let text = std::fs::read_to_string(name_or_path).map_err(|e| ConfigError::Read {
                path: name_or_path.to_string(),
                message: e.to_string(),
            })?;
            MmuConfig::from_toml(name_or_path, &text)
        } else {
            MmuConfig::preset(name_or_path)
        }
    }

    /// Checks the rules that do not depend on a geometry.
    ///
    /// # Errors
    /// The first rule broken: [`ConfigError::TooManyArrays`],
    /// [`ConfigError::TooManyEntries`], [`ConfigError::ZeroWays`],
    /// [`ConfigError::ZeroSets`], [`ConfigError::WaysNotDividing`],
    /// [`ConfigError::SetsNotPowerOfTwo`], [`ConfigError::NoPageSizes`],
    /// [`ConfigError::BadPageSize`], [`ConfigError::BadPwcLevel`],
    /// [`ConfigError::DuplicatePwcLevel`].
    pub fn validate_shape(&self) -> Result<(), ConfigError> {
        for level in [&self.tlb.l1, &self.tlb.l2, &self.tlb.l1i, &self.tlb.l2i] {
            if level.len() > MAX_LEVEL_ARRAYS {
                return Err(ConfigError::TooManyArrays {
                    arrays: level.len(),
                    max: MAX_LEVEL_ARRAYS,
                });
            }
        }
        for a in self.tlb.arrays() {
            check_array("TLB array", &a.name, a.entries, a.ways)?;
            if a.sizes.is_empty() {
                return Err(ConfigError::NoPageSizes {
                    name: a.name.clone(),
                });
            }
            for s in &a.sizes {
                if let PageSize::Bytes(b) = *s {
                    if !b.is_power_of_two() || b < 4096 {
                        return Err(ConfigError::BadPageSize {
                            name: a.name.clone(),
                            size: b,
                        });
                    }
                }
            }
        }
        let mut seen = Vec::new();
        for p in &self.pwc {
            if p.level == 0 || p.level >= MAX_LEVELS {
                return Err(ConfigError::BadPwcLevel {
                    level: p.level,
                    max: MAX_LEVELS - 1,
                });
            }
            check_array(
                "walk cache",
                &format!("level {}", p.level),
                p.entries,
                p.ways,
            )?;
            if seen.contains(&p.level) {
                return Err(ConfigError::DuplicatePwcLevel { level: p.level });
            }
            seen.push(p.level);
        }
        Ok(())
    }

    /// Checks every rule, those of the geometry included.
    ///
    /// # Errors
    /// As [`MmuConfig::validate_shape`], plus
    /// [`ConfigError::UnsupportedPageSize`] (a page size below the
    /// geometry's hardware page or above its address space).
    /// A preset made to fit `geom`: page sizes smaller than the geometry's
    /// hardware page, or wider than its address space, are dropped (a
    /// 4 KiB-capable array of an ARM core simply never holds a 4 KiB entry
    /// under a 64 KiB granule). Configurations read from files are not
    /// fitted: there an impossible size is the user's error ([`Self::validate`]).
    pub fn fit_to(mut self, geom: &Geometry) -> MmuConfig {
        let hw = geom.hw_page_shift();
        for a in self
            .tlb
            .l1
            .iter_mut()
            .chain(self.tlb.l2.iter_mut())
            .chain(self.tlb.l1i.iter_mut())
            .chain(self.tlb.l2i.iter_mut())
        {
            a.sizes.retain(|s| {
                let b = s.bytes(hw);
                b >= 1 << hw && b.trailing_zeros() < geom.va_bits()
            });
            if a.sizes.is_empty() {
                a.sizes.push(PageSize::Base);
            }
        }
        self
    }

    pub fn validate(&self, geom: &Geometry) -> Result<(), ConfigError> {
        self.validate_shape()?;
        let hw = geom.hw_page_shift();
        for a in self.tlb.arrays() {
            for s in &a.sizes {
                let b = s.bytes(hw);
                let why = if b < 1 << hw {
                    Some(format!(
                        "smaller than its {} hardware page",
                        pt::geometry::human_size(1 << hw)
                    ))
                } else if b.trailing_zeros() >= geom.va_bits() {
                    Some(format!(
                        "larger than its {}-bit address space",
                        geom.va_bits()
                    ))
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(ConfigError::UnsupportedPageSize {
                        name: a.name.clone(),
                        size: s.to_string(),
                        geometry: geom.name().to_string(),
                        why,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Most entries of one array (the TLB's memo packs a way in 24 bits).
pub const MAX_ARRAY_ENTRIES: u32 = 1 << 20;
/// Most arrays of one TLB level.
pub const MAX_LEVEL_ARRAYS: usize = 16;

fn check_array(what: &'static str, name: &str, entries: u32, ways: u32) -> Result<(), ConfigError> {
    let name = name.to_string();
    if entries > MAX_ARRAY_ENTRIES {
        return Err(ConfigError::TooManyEntries {
            what,
            name,
            entries,
            max: MAX_ARRAY_ENTRIES,
        });
    }
    if ways == 0 {
        return Err(ConfigError::ZeroWays { what, name, ways });
    }
    let sets = entries / ways;
    if sets == 0 {
        return Err(ConfigError::ZeroSets {
            what,
            name,
            entries,
            ways,
        });
    }
    if !entries.is_multiple_of(ways) {
        return Err(ConfigError::WaysNotDividing {
            what,
            name,
            entries,
            ways,
        });
    }
    if !sets.is_power_of_two() {
        return Err(ConfigError::SetsNotPowerOfTwo {
            what,
            name,
            entries,
            ways,
            sets,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(name: &str) -> Geometry {
        pt::geometry::preset(name).unwrap()
    }

    #[test]
    fn presets_are_valid_on_every_4k_geometry() {
        for p in PRESET_NAMES {
            let c = MmuConfig::preset(p).unwrap();
            for g in ["x86-64-4l", "x86-64-5l", "riscv-sv48", "riscv-sv39-64k"] {
                c.validate(&geom(g))
                    .unwrap_or_else(|e| panic!("{p} on {g}: {e}"));
            }
        }
    }

    #[test]
    fn presets_have_their_documented_sizes() {
        let z = MmuConfig::preset("zen4").unwrap();
        assert_eq!(z.tlb.l1[0].entries, 72);
        assert_eq!(z.tlb.l1[0].sets(), 1, "fully associative");
        assert_eq!(z.tlb.l2[0].entries, 3072);
        let i = MmuConfig::preset("icelake").unwrap();
        let l1: Vec<u32> = i.tlb.l1.iter().map(|a| a.entries).collect();
        assert_eq!(l1, vec![64, 32, 8]);
        let n = MmuConfig::preset("none").unwrap();
        assert!(n.tlb.l1.is_empty() && n.tlb.l2.is_empty() && n.pwc.is_empty());
        let e = MmuConfig::preset("zen5").unwrap_err().to_string();
        assert!(e.contains("zen4") && e.contains("icelake"), "{e}");
    }

    #[test]
    fn impossible_arrays_are_rejected_with_their_name() {
        let base = "[[tlb.l1]]\nname = \"t\"\nentries = ENTRIES\nways = WAYS\nsizes = [\"4KiB\"]\n";
        let cfg = |e: &str, w: &str| {
            MmuConfig::from_toml(
                "c.toml",
                &format!(
                    "name = \"x\"\n{}",
                    base.replace("ENTRIES", e).replace("WAYS", w)
                ),
            )
        };
        assert!(matches!(cfg("64", "0"), Err(ConfigError::ZeroWays { .. })));
        assert!(matches!(cfg("4", "8"), Err(ConfigError::ZeroSets { .. })));
        assert!(matches!(cfg("0", "4"), Err(ConfigError::ZeroSets { .. })));
        assert!(matches!(
            cfg("48", "5"),
            Err(ConfigError::WaysNotDividing {
                entries: 48,
                ways: 5,
                ..
            })
        ));
        assert!(matches!(
            cfg("48", "4"),
            Err(ConfigError::SetsNotPowerOfTwo { sets: 12, .. })
        ));
        let ok = cfg("64", "4").unwrap();
        assert_eq!(ok.tlb.l1[0].sets(), 16);
        assert_eq!(ok.flush_ceiling, 33);
        let msg = cfg("48", "5").unwrap_err().to_string();
        assert!(msg.contains("\"t\"") && msg.contains("5 ways"), "{msg}");
    }

    #[test]
    fn page_sizes_are_checked_against_the_geometry() {
        let text = "name = \"x\"\n[[tlb.l1]]\nname = \"t\"\nentries = 8\nways = 8\nsizes = [\"4KiB\", \"base\"]\n";
        let c = MmuConfig::from_toml("c.toml", text).unwrap();
        c.validate(&geom("x86-64-4l")).unwrap();
        // 4 KiB entries on a 64 KiB granule cannot exist.
        let e = c.validate(&geom("arm64-64k-48")).unwrap_err();
        assert!(matches!(e, ConfigError::UnsupportedPageSize { .. }), "{e}");
        let bad = text.replace("\"base\"", "\"3KiB\"");
        assert!(matches!(
            MmuConfig::from_toml("c.toml", &bad),
            Err(ConfigError::BadPageSize { size: 3072, .. })
        ));
        let typo = text.replace("sizes", "sizs");
        let e = MmuConfig::from_toml("c.toml", &typo).unwrap_err();
        assert!(matches!(e, ConfigError::Parse { line: 6, .. }), "{e}");
    }

    #[test]
    fn walk_cache_levels_must_hold_pointers() {
        let text = "name = \"x\"\n[[pwc]]\nlevel = 4\nentries = 2\nways = 2\n";
        let c = MmuConfig::from_toml("c.toml", text).unwrap();
        c.validate(&geom("x86-64-5l")).unwrap();
        // Unused under 4-level paging, but not an error.
        c.validate(&geom("x86-64-4l")).unwrap();
        let leaf = text.replace("level = 4", "level = 0");
        assert!(matches!(
            MmuConfig::from_toml("c.toml", &leaf),
            Err(ConfigError::BadPwcLevel { level: 0, .. })
        ));
        let twice = format!("{text}[[pwc]]\nlevel = 4\nentries = 2\nways = 1\n");
        assert!(matches!(
            MmuConfig::from_toml("c.toml", &twice),
            Err(ConfigError::DuplicatePwcLevel { level: 4 })
        ));
    }

    #[test]
    fn presets_round_trip_through_toml() {
        for p in PRESET_NAMES {
            let c = MmuConfig::preset(p).unwrap();
            let text = toml::to_string(&c).unwrap();
            assert_eq!(MmuConfig::from_toml("rt.toml", &text).unwrap(), c, "{text}");
        }
    }
}
