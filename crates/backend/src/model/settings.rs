//! The model options of a run configuration as typed values: parsed once
//! from the spelling users write (by `experiment::config`), handed to
//! [`super::ModelConfig::new`] as they are, and printed back in the same
//! spelling for labels and JSON.
//!
//! Invariant: every value prints as the one spelling that parses to it
//! ([`Named`], [`MthpSize`]), so [`ModelOptions::to_options`] shows exactly
//! what was written.

use std::collections::BTreeMap;
use std::fmt;

/// An enumerated value: its spellings, parsed and printed through one table.
pub trait Named: Copy + PartialEq + Sized + 'static {
    /// Every value with its spelling, in the order errors list them.
    const NAMES: &'static [(&'static str, Self)];

    /// The value spelt `s`, if any.
    fn parse(s: &str) -> Option<Self> {
        Self::NAMES.iter().find(|(n, _)| *n == s).map(|(_, v)| *v)
    }

    /// The spelling of `self`.
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .map(|(n, _)| *n)
            .expect("every value has a name")
    }

    /// "a, b, c": the spellings, for errors.
    fn expected() -> String {
        Self::NAMES
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Declares an enumerated option with its spellings ([`Named`] and
/// `Display` through the one table).
#[macro_export]
macro_rules! named_option {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($variant),+
        }

        impl $crate::model::Named for $name {
            const NAMES: &'static [(&'static str, Self)] = &[$(($text, $name::$variant)),+];
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str($crate::model::Named::name(*self))
            }
        }
    };
}

named_option! {
    /// The page-table locking scheme.
    Locking { Global = "global", SplitPte = "split-pte", SplitPmd = "split-pmd" }
}

named_option! {
    /// How get_mempolicy's node lookup gets the page (`mm::Gup`): fast
    /// (get_user_pages_fast, this host's kernel) or slow (get_user_pages
    /// under the mmap lock and the page's table lock, Linux 3.12).
    Gup { Fast = "fast", Slow = "slow" }
}

named_option! {
    /// Reclaim of empty PTE tables.
    Reclaim { Off = "off", On = "on", Eager = "eager" }
}

named_option! {
    /// KVM's paravirtual remote TLB flush (a shootdown defers its flush to
    /// a target CPU that is not running instead of interrupting it).
    PvFlush { On = "on", Off = "off" }
}

named_option! {
    /// How a shootdown reaches other CPUs (`mmu::TlbFlush`): IPIs, AMD's
    /// INVLPGB or Intel's RAR (the last two for spaces with a global ASID,
    /// Linux 6.15's rule).
    TlbFlushKind { Ipi = "ipi", Invlpgb = "invlpgb", Rar = "rar" }
}

named_option! {
    /// Whether munmap and MADV_DONTNEED drain the CPU's LRU batch first
    /// (`mm::MmConfig::lru_drain`).
    LruDrain { On = "on", Off = "off" }
}

named_option! {
    /// Which swap read-ahead a major fault on a swap entry does
    /// (`mm::SwapRaKind`): around the address in its VMA, or an aligned
    /// block of swap slots.
    SwapReadahead { Vma = "vma", Cluster = "cluster" }
}

named_option! {
    /// What kind of swap area the swap device is (`mm::SwapDeviceKind`): a
    /// file, a block device, or one with synchronous I/O such as zram.
    SwapDevice { File = "file", Block = "block", Sync = "sync" }
}

named_option! {
    /// Transparent huge pages (PMD-sized).
    Thp { Always = "always", Madvise = "madvise", Never = "never" }
}

named_option! {
    /// THP of the kernel's internal shmem mount (memfds, shared anonymous
    /// memory), or an override of every shmem mount (`deny`, `force`):
    /// /sys/kernel/mm/transparent_hugepage/shmem_enabled.
    ShmemEnabled {
        Always = "always",
        WithinSize = "within_size",
        Advise = "advise",
        Never = "never",
        Deny = "deny",
        Force = "force",
    }
}

named_option! {
    /// The policy of one multi-size THP size.
    MthpPolicy { Always = "always", Madvise = "madvise", Never = "never", Inherit = "inherit" }
}

named_option! {
    /// How a model run executes its threads: in virtual time on one host
    /// thread (deterministic, with predicted time), or one real host thread
    /// per workload thread (the stress tests' executor).
    Executor { Virtual = "virtual", Threads = "threads" }
}

/// Sizes multi-size THP may have (anonymous large folios mapped by PTEs),
/// as users write them.
pub const MTHP_SIZES: &[&str] = &[
    "16k", "32k", "64k", "128k", "256k", "512k", "1024k", "2048k",
];

/// One multi-size THP size (one of [`MTHP_SIZES`]), printed as written
/// (`64k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MthpSize {
    kib: u32,
}

impl MthpSize {
    /// The size spelt `s`, if it is one of [`MTHP_SIZES`].
    pub fn parse(s: &str) -> Option<MthpSize> {
        if !MTHP_SIZES.contains(&s) {
            return None;
        }
        let kib = s.strip_suffix('k')?.parse().ok()?;
        Some(MthpSize { kib })
    }

    /// Its size in bytes.
    pub fn bytes(self) -> u64 {
        u64::from(self.kib) << 10
    }
}

impl fmt::Display for MthpSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}k", self.kib)
    }
}

/// The size of the host pages that back guest memory under a host
/// geometry (`host-page`), printed as written: `4K`, `2M`, `1G` (any power
/// of two from 4 KiB to 512 GiB with the suffix `K`, `M` or `G`; the host
/// geometry decides which it has).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPage {
    bytes: u64,
}

impl HostPage {
    /// The size spelt `s` (`4K`, `2M`, `1G`, ...), if it is a power of two
    /// of at least 4 KiB.
    pub fn parse(s: &str) -> Option<HostPage> {
        let (n, shift) = match s.as_bytes().last()? {
            b'K' => (&s[..s.len() - 1], 10),
            b'M' => (&s[..s.len() - 1], 20),
            b'G' => (&s[..s.len() - 1], 30),
            _ => return None,
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || n.starts_with('0') {
            return None;
        }
        let bytes = n.parse::<u64>().ok()?.checked_shl(shift)?;
        (bytes.is_power_of_two() && (4096..=1 << 39).contains(&bytes)).then_some(HostPage { bytes })
    }

    /// Its size in bytes.
    pub fn bytes(self) -> u64 {
        self.bytes
    }
}

impl fmt::Display for HostPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bytes;
        if b >= 1 << 30 && b.is_multiple_of(1 << 30) {
            write!(f, "{}G", b >> 30)
        } else if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
            write!(f, "{}M", b >> 20)
        } else {
            write!(f, "{}K", b >> 10)
        }
    }
}

/// The `swap` option: no swap device, or one of this many bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SwapSetting {
    Off,
    Bytes(u64),
}

impl SwapSetting {
    /// `off`, or a size as the workload format writes it (`1GiB`): a
    /// nonzero multiple of 4 KiB.
    pub fn parse(s: &str) -> Option<SwapSetting> {
        if s == "off" {
            return Some(SwapSetting::Off);
        }
        let b = workload::units::parse_size(s).ok()?;
        (b != 0 && b.is_multiple_of(4096)).then_some(SwapSetting::Bytes(b))
    }
}

impl fmt::Display for SwapSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwapSetting::Off => f.write_str("off"),
            SwapSetting::Bytes(b) => f.write_str(&workload::units::format_size(*b)),
        }
    }
}

/// The model options that were set; unset ones take the model's defaults
/// (which mirror this host).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelOptions {
    /// A geometry name `pt::geometry::load` accepts.
    pub geometry: Option<String>,
    pub locking: Option<Locking>,
    pub gup: Option<Gup>,
    pub reclaim: Option<Reclaim>,
    pub thp: Option<Thp>,
    /// The shmem THP policy (default: this host's `shmem_enabled`).
    pub shmem_enabled: Option<ShmemEnabled>,
    /// Multi-size THP policies by size, in the order given, each size once.
    pub mthp: Option<Vec<(MthpSize, MthpPolicy)>>,
    /// A TLB preset name, `none`, or a TOML file of one (the MMU model
    /// checks the name when it builds the TLBs).
    pub tlb: Option<String>,
    /// Modeled CPUs, 1 to 256.
    pub cpus: Option<u32>,
    /// A cost file (`ptlab calibrate` writes one); unset: the built-in
    /// assumed figures.
    pub costs: Option<String>,
    /// The executor (default: virtual).
    pub executor: Option<Executor>,
    /// KVM's paravirtual remote TLB flush (default: whether this host's
    /// kernel uses it).
    pub pv_flush: Option<PvFlush>,
    /// How shootdowns reach other CPUs (default: IPIs).
    pub tlb_flush: Option<TlbFlushKind>,
    /// Whether unmapping calls drain the LRU batch (default: on).
    pub lru_drain: Option<LruDrain>,
    /// The host's geometry for nested (two-dimensional) walks: a geometry
    /// `pt::geometry::load` accepts, or `none` (default: none, a native
    /// machine).
    pub host_geometry: Option<String>,
    /// The host pages backing guest memory (default: the host geometry's
    /// base page).
    pub host_page: Option<HostPage>,
    /// The second dimension's caches: `on`, `off`, or a TLB preset whose
    /// walk caches the host walks use (default: on).
    pub host_caches: Option<String>,
    /// A swap device (default: this host's active swap, /proc/swaps).
    pub swap: Option<SwapSetting>,
    /// The swap read-ahead kind (default: this host's, see
    /// `host::swap`).
    pub swap_readahead: Option<SwapReadahead>,
    /// `page-cluster`: swap read-ahead reads at most `1 << N` pages
    /// (default: this host's /proc/sys/vm/page-cluster).
    pub page_cluster: Option<u32>,
    /// The kind of swap area (default: this host's, see
    /// `host::swap::swap_area_kind`).
    pub swap_device: Option<SwapDevice>,
}

impl ModelOptions {
    /// The host geometry's name if a host is configured (`none` is none).
    pub fn host(&self) -> Option<&str> {
        self.host_geometry.as_deref().filter(|g| *g != "none")
    }
}

impl ModelOptions {
    /// The options as `key -> value` in the spelling users write: what JSON
    /// shows and what labels list.
    pub fn to_options(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        put("geometry", self.geometry.clone());
        put("locking", self.locking.map(|v| v.to_string()));
        put("gup", self.gup.map(|v| v.to_string()));
        put("reclaim", self.reclaim.map(|v| v.to_string()));
        put("thp", self.thp.map(|v| v.to_string()));
        put("shmem_enabled", self.shmem_enabled.map(|v| v.to_string()));
        put(
            "mthp",
            self.mthp.as_ref().map(|sizes| {
                sizes
                    .iter()
                    .map(|(size, p)| format!("{size}={p}"))
                    .collect::<Vec<_>>()
                    .join(",")
            }),
        );
        put("tlb", self.tlb.clone());
        put("cpus", self.cpus.map(|v| v.to_string()));
        put("costs", self.costs.clone());
        put("executor", self.executor.map(|v| v.to_string()));
        put("pv-flush", self.pv_flush.map(|v| v.to_string()));
        put("tlb_flush", self.tlb_flush.map(|v| v.to_string()));
        put("lru_drain", self.lru_drain.map(|v| v.to_string()));
        put("host-geometry", self.host_geometry.clone());
        put("host-page", self.host_page.map(|v| v.to_string()));
        put("host-caches", self.host_caches.clone());
        put("swap", self.swap.map(|v| v.to_string()));
        put("swap-readahead", self.swap_readahead.map(|v| v.to_string()));
        put("page-cluster", self.page_cluster.map(|v| v.to_string()));
        put("swap-device", self.swap_device.map(|v| v.to_string()));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for (n, v) in Locking::NAMES {
            assert_eq!(Locking::parse(n), Some(*v));
            assert_eq!(v.to_string(), *n);
        }
        assert_eq!(Thp::parse("Always"), None, "spellings are exact");
        assert_eq!(MthpPolicy::expected(), "always, madvise, never, inherit");
    }

    #[test]
    fn host_pages_print_as_written() {
        for s in ["4K", "2M", "1G", "16K", "64K", "512M"] {
            assert_eq!(HostPage::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(HostPage::parse("2M").unwrap().bytes(), 2 << 20);
        for bad in ["4k", "3K", "2K", "", "K", "02M", "2MiB", "1T"] {
            assert_eq!(HostPage::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn swap_settings_print_as_written() {
        assert_eq!(SwapSetting::parse("off"), Some(SwapSetting::Off));
        assert_eq!(
            SwapSetting::parse("1GiB"),
            Some(SwapSetting::Bytes(1 << 30))
        );
        for s in ["off", "1GiB", "512MiB", "4KiB"] {
            assert_eq!(SwapSetting::parse(s).unwrap().to_string(), s);
        }
        for bad in ["on", "0KiB", "1G", "", "-1GiB", "Off"] {
            assert_eq!(SwapSetting::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn mthp_sizes_print_as_written() {
        for s in MTHP_SIZES {
            let size = MthpSize::parse(s).unwrap();
            assert_eq!(size.to_string(), *s);
        }
        assert_eq!(MthpSize::parse("64k").unwrap().bytes(), 64 << 10);
        assert_eq!(MthpSize::parse("64K"), None);
        assert_eq!(MthpSize::parse("48k"), None);
    }
}
