//! Run configurations: which backend, and for the model every option of
//! docs/cli.md ("Model options"), as typed fields.
//!
//! A configuration comes from command-line options, from an inline list
//! (`geometry=x86-64-5l,locking=global`) or from a TOML file holding the same
//! keys ([`parse`]). Each source yields `(key, value)` pairs; [`Builder`]
//! parses every value into its type once, before anything runs, and refuses
//! an unknown key, a bad value, a key given twice, and model options on the
//! kernel backend, naming the key and what was expected.
//!
//! Invariant: a [`RunConfig`] holds only checked values, and its `label`
//! lists exactly the model options that were set, by key.

mod parse;
mod values;

pub use backend::model::ModelOptions;
pub use parse::{from_pairs, parse_arg, parse_inline, parse_toml};
pub use values::{
    BackendKind, Gup, HostPage, Locking, MthpPolicy, MthpSize, Named, PvFlush, Reclaim, Thp,
    MTHP_SIZES,
};

use serde::Serialize;
use thiserror::Error;

/// The keys a configuration may set.
pub const KEYS: &[&str] = &[
    "backend",
    "geometry",
    "locking",
    "gup",
    "reclaim",
    "thp",
    "shmem_enabled",
    "mthp",
    "tlb",
    "cpus",
    "costs",
    "executor",
    "pv-flush",
    "tlb_flush",
    "lru_drain",
    "host-geometry",
    "host-page",
    "host-caches",
    "swap",
    "swap-readahead",
    "page-cluster",
    "swap-device",
];

/// What `host-caches` accepts besides a TLB preset's name.
pub const HOST_CACHES_SWITCHES: &[&str] = &["on", "off"];

/// JSON shows the model options as `options`, a map of the written strings.
fn serialize_options<S: serde::Serializer>(m: &ModelOptions, s: S) -> Result<S::Ok, S::Error> {
    m.to_options().serialize(s)
}

/// A checked configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunConfig {
    /// How tables and reports name this configuration (`geometry=x86-64-5l`).
    pub label: String,
    pub backend: BackendKind,
    /// The model options that were set (JSON: `options`, a map of strings).
    #[serde(rename = "options", serialize_with = "serialize_options")]
    pub model: ModelOptions,
}

impl RunConfig {
    /// The model with every default.
    pub fn model_default() -> RunConfig {
        RunConfig {
            label: "model".into(),
            backend: BackendKind::Model,
            model: ModelOptions::default(),
        }
    }

    /// This machine's kernel.
    pub fn kernel() -> RunConfig {
        RunConfig {
            label: "kernel".into(),
            backend: BackendKind::Kernel,
            model: ModelOptions::default(),
        }
    }

    /// A copy with `key` set (checked like any other value), replacing the
    /// value it had.
    ///
    /// # Errors
    /// [`ConfigError`] for an unknown key or a bad value.
    pub fn with(&self, key: &str, value: &str) -> Result<RunConfig, ConfigError> {
        let mut b = Builder {
            origin: String::new(),
            backend: self.backend,
            model: self.model.clone(),
            given: Vec::new(),
        };
        b.set(key, value)?;
        b.finish()
    }
}

/// What is wrong with a configuration.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    #[error("{origin}unknown configuration key \"{key}\"{hint}; known keys: {known}")]
    UnknownKey {
        origin: String,
        key: String,
        hint: String,
        known: String,
    },
    #[error("{origin}key \"{key}\": {message}")]
    BadValue {
        origin: String,
        key: String,
        message: String,
    },
    #[error("{origin}key \"{key}\" is given twice (\"{first}\", then \"{second}\"); give it once")]
    Duplicate {
        origin: String,
        key: String,
        first: String,
        second: String,
    },
    #[error("{origin}{message}")]
    Syntax { origin: String, message: String },
}

/// Parses `(key, value)` pairs into a [`RunConfig`], each value once.
pub(crate) struct Builder {
    /// Where the pairs come from, as errors start (`--config "...": `).
    origin: String,
    backend: BackendKind,
    model: ModelOptions,
    /// Keys set so far with their text, to refuse a second value.
    given: Vec<(String, String)>,
}

impl Builder {
    /// Every pair in order, then the checks across keys.
    pub(crate) fn from_pairs(
        origin: &str,
        pairs: Vec<(String, String)>,
    ) -> Result<RunConfig, ConfigError> {
        let mut b = Builder {
            origin: origin.into(),
            backend: BackendKind::Model,
            model: ModelOptions::default(),
            given: Vec::new(),
        };
        for (k, v) in pairs {
            b.set(&k, &v)?;
        }
        b.finish()
    }

    fn bad(&self, key: &str, message: String) -> ConfigError {
        ConfigError::BadValue {
            origin: self.origin.clone(),
            key: key.into(),
            message,
        }
    }

    /// An enumerated value, or an error listing the accepted ones.
    fn named<T: Named>(&self, key: &str, value: &str) -> Result<T, ConfigError> {
        T::parse(value)
            .ok_or_else(|| self.bad(key, format!("\"{value}\" is not one of {}", T::expected())))
    }

    /// Parses `value` into the field of `key`.
    fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        // The keys grew in two spellings (`pv-flush`, `tlb_flush`): either
        // separator names the same key, which is then written as listed.
        let wanted = key.replace('_', "-");
        let Some(&key) = KEYS.iter().find(|k| k.replace('_', "-") == wanted) else {
            return Err(parse::unknown_key(&self.origin, key));
        };
        if let Some((_, first)) = self.given.iter().find(|(k, _)| k == key) {
            return Err(ConfigError::Duplicate {
                origin: self.origin.clone(),
                key: key.into(),
                first: first.clone(),
                second: value.into(),
            });
        }
        self.given.push((key.into(), value.into()));
        match key {
            "backend" => self.backend = self.named(key, value)?,
            "locking" => self.model.locking = Some(self.named(key, value)?),
            "gup" => self.model.gup = Some(self.named(key, value)?),
            "reclaim" => self.model.reclaim = Some(self.named(key, value)?),
            "thp" => self.model.thp = Some(self.named(key, value)?),
            "shmem_enabled" => self.model.shmem_enabled = Some(self.named(key, value)?),
            "pv-flush" => self.model.pv_flush = Some(self.named(key, value)?),
            "tlb_flush" => self.model.tlb_flush = Some(self.named(key, value)?),
            "lru_drain" => self.model.lru_drain = Some(self.named(key, value)?),
            "geometry" => {
                pt::geometry::load(value).map_err(|e| self.bad(key, e.to_string()))?;
                self.model.geometry = Some(value.into());
            }
            "cpus" => match value.parse::<u32>() {
                Ok(n) if (1..=256).contains(&n) => self.model.cpus = Some(n),
                _ => {
                    return Err(self.bad(
                        key,
                        format!("\"{value}\" is not a number of CPUs from 1 to 256"),
                    ))
                }
            },
            "tlb" => {
                if value.is_empty() {
                    return Err(self.bad(key, "expected a TLB preset name or none".into()));
                }
                self.model.tlb = Some(value.into());
            }
            "mthp" => self.model.mthp = Some(self.mthp(value)?),
            "costs" => {
                // Read now, so that a missing or bad file stops before any
                // run, with the costs crate's message.
                backend::model::load_costs(value).map_err(|m| self.bad(key, m))?;
                self.model.costs = Some(value.into());
            }
            "host-geometry" => {
                if value != "none" {
                    pt::geometry::load(value).map_err(|e| self.bad(key, e.to_string()))?;
                }
                self.model.host_geometry = Some(value.into());
            }
            "host-page" => {
                let page = HostPage::parse(value).ok_or_else(|| {
                    self.bad(
                        key,
                        format!("\"{value}\" is not a page size; expected 4K, 2M or 1G (a power of two with K, M or G)"),
                    )
                })?;
                self.model.host_page = Some(page);
            }
            "host-caches" => {
                let known = HOST_CACHES_SWITCHES
                    .iter()
                    .chain(mmu::config::PRESET_NAMES)
                    .copied()
                    .collect::<Vec<_>>();
                if !known.contains(&value) {
                    return Err(self.bad(
                        key,
                        format!(
                            "\"{value}\" is not one of {} (a TLB preset lends its walk caches to the host walks)",
                            known.join(", ")
                        ),
                    ));
                }
                self.model.host_caches = Some(value.into());
            }
            "swap" => {
                let s = backend::model::SwapSetting::parse(value).ok_or_else(|| {
                    self.bad(
                        key,
                        format!("\"{value}\" is not \"off\" or a size such as \"1GiB\" (a nonzero multiple of 4 KiB)"),
                    )
                })?;
                self.model.swap = Some(s);
            }
            "swap-readahead" => self.model.swap_readahead = Some(self.named(key, value)?),
            "swap-device" => self.model.swap_device = Some(self.named(key, value)?),
            "page-cluster" => match value.parse::<u32>() {
                // Linux's sysctl takes 0 to 31 (page_cluster_max).
                Ok(n) if n <= 31 => self.model.page_cluster = Some(n),
                _ => {
                    return Err(self.bad(
                        key,
                        format!("\"{value}\" is not a number from 0 to 31 (read-ahead of at most 2^N pages)"),
                    ))
                }
            },
            "executor" => {
                self.model.executor = Some(self.named::<backend::model::Executor>(key, value)?)
            }
            _ => unreachable!("every key of KEYS is handled"),
        }
        Ok(())
    }

    /// `SIZE=POLICY[,SIZE=POLICY...]`, each size once.
    fn mthp(&self, value: &str) -> Result<Vec<(MthpSize, MthpPolicy)>, ConfigError> {
        let key = "mthp";
        let mut sizes: Vec<(MthpSize, MthpPolicy)> = Vec::new();
        for part in value.split(',') {
            let (size, policy) = part.split_once('=').ok_or_else(|| {
                self.bad(
                    key,
                    format!("\"{part}\": expected SIZE=POLICY, e.g. 64k=always"),
                )
            })?;
            let Some(bytes) = MthpSize::parse(size) else {
                return Err(self.bad(
                    key,
                    format!("size \"{size}\" is not one of {}", MTHP_SIZES.join(", ")),
                ));
            };
            let p = MthpPolicy::parse(policy).ok_or_else(|| {
                self.bad(
                    key,
                    format!(
                        "policy \"{policy}\" for {size} is not always, madvise, never or inherit"
                    ),
                )
            })?;
            if sizes.iter().any(|(s, _)| *s == bytes) {
                return Err(self.bad(key, format!("size {size} is given twice")));
            }
            sizes.push((bytes, p));
        }
        Ok(sizes)
    }

    /// `host-page` and `host-caches` need a host, and the host page must be
    /// one the host geometry maps (the mmu crate's rule, asked here so the
    /// error names the key before anything runs).
    fn check_host(&self) -> Result<(), ConfigError> {
        let m = &self.model;
        let Some(host) = m.host() else {
            for (key, set) in [
                ("host-page", m.host_page.is_some()),
                ("host-caches", m.host_caches.is_some()),
            ] {
                if set {
                    return Err(self.bad(
                        key,
                        "needs a host: set host-geometry too (e.g. host-geometry=x86-64-4l)".into(),
                    ));
                }
            }
            return Ok(());
        };
        let cfg = mmu::HostConfig::new(
            host,
            m.host_page.map(HostPage::bytes),
            m.host_caches.as_deref(),
        );
        cfg.and_then(|c| c.check().map(|_| ()))
            .map_err(|e| self.bad(e.key(), e.to_string()))
    }

    /// The checks across keys, and the label.
    fn finish(self) -> Result<RunConfig, ConfigError> {
        let options = self.model.to_options();
        if self.backend == BackendKind::Kernel {
            if let Some(k) = options.keys().next() {
                return Err(self.bad(k, "the kernel backend runs with this machine's own settings; model options do not apply to it".into()));
            }
        }
        self.check_host()?;
        let mut label: Vec<String> = Vec::new();
        if self.backend == BackendKind::Kernel {
            label.push(BackendKind::Kernel.to_string());
        }
        label.extend(options.iter().map(|(k, v)| format!("{k}={v}")));
        let label = if label.is_empty() {
            BackendKind::Model.to_string()
        } else {
            label.join(",")
        };
        Ok(RunConfig {
            label,
            backend: self.backend,
            model: self.model,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_lists_are_checked() {
        let c = parse_inline("geometry=x86-64-5l,locking=global").unwrap();
        assert_eq!(c.backend, BackendKind::Model);
        assert_eq!(c.model.geometry.as_deref(), Some("x86-64-5l"));
        assert_eq!(c.model.locking, Some(Locking::Global));
        assert_eq!(c.label, "geometry=x86-64-5l,locking=global");
        let c = parse_inline("mthp=64k=always,16k=madvise,thp=never").unwrap();
        assert_eq!(c.model.to_options()["mthp"], "64k=always,16k=madvise");
        assert_eq!(
            c.model.mthp,
            Some(vec![
                (MthpSize::parse("64k").unwrap(), MthpPolicy::Always),
                (MthpSize::parse("16k").unwrap(), MthpPolicy::Madvise)
            ])
        );
        assert_eq!(c.model.thp, Some(Thp::Never));
    }

    #[test]
    fn shmem_enabled_takes_the_six_sysfs_values() {
        for v in ["always", "within_size", "advise", "never", "deny", "force"] {
            let c = parse_inline(&format!("shmem_enabled={v}")).unwrap();
            assert_eq!(
                c.model.shmem_enabled.map(|s| s.to_string()).as_deref(),
                Some(v)
            );
            assert_eq!(c.model.to_options()["shmem_enabled"], v);
        }
        let e = parse_inline("shmem_enabled=within-size")
            .unwrap_err()
            .to_string();
        assert!(e.contains("within_size"), "{e}");
    }

    #[test]
    fn misspelt_keys_get_a_suggestion() {
        let e = parse_inline("lockng=global").unwrap_err().to_string();
        assert!(
            e.contains("unknown configuration key \"lockng\", did you mean \"locking\"?"),
            "{e}"
        );
        let e = parse_inline("locking=fine").unwrap_err().to_string();
        assert!(
            e.contains("\"fine\" is not one of global, split-pte, split-pmd"),
            "{e}"
        );
        let e = parse_inline("geometry=x86-64-6l").unwrap_err().to_string();
        assert!(e.contains("unknown geometry"), "{e}");
        let e = parse_inline("backend=kernel,geometry=x86-64-5l")
            .unwrap_err()
            .to_string();
        assert!(e.contains("model options do not apply"), "{e}");
        let e = parse_inline("cpus=0").unwrap_err().to_string();
        assert!(e.contains("from 1 to 256"), "{e}");
    }

    #[test]
    fn either_separator_names_the_same_key() {
        let a =
            parse_inline("pv_flush=off,tlb-flush=invlpgb,lru-drain=off,host_geometry=x86-64-4l")
                .unwrap();
        let b =
            parse_inline("pv-flush=off,tlb_flush=invlpgb,lru_drain=off,host-geometry=x86-64-4l")
                .unwrap();
        assert_eq!(a.model, b.model);
        assert_eq!(a.label, b.label);
        let e = parse_inline("pv-flush=on,pv_flush=off")
            .unwrap_err()
            .to_string();
        assert!(e.contains("pv-flush"), "{e}");
    }

    #[test]
    fn toml_files_are_checked_with_positions() {
        let c = parse_toml(
            "c.toml",
            "geometry = \"riscv-sv39-64k\"\ncpus = 4\n[mthp]\n64k = \"always\"\n",
        )
        .unwrap();
        assert_eq!(c.model.cpus, Some(4));
        assert_eq!(c.model.to_options()["mthp"], "64k=always");
        let e = parse_toml("c.toml", "geometry = \n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml:1:"), "{e}");
        let e = parse_toml("c.toml", "thp = 3\n").unwrap_err().to_string();
        assert!(e.contains("key \"thp\": expected a string"), "{e}");
    }

    #[test]
    fn a_key_given_twice_is_an_error_naming_it() {
        let e = parse_inline("thp=always,thp=never").unwrap_err();
        assert_eq!(
            e,
            ConfigError::Duplicate {
                origin: "--config \"thp=always,thp=never\": ".into(),
                key: "thp".into(),
                first: "always".into(),
                second: "never".into(),
            }
        );
        assert!(e.to_string().contains("key \"thp\" is given twice"), "{e}");
        let e = parse_inline("geometry=x86-64-4l,locking=global,geometry=x86-64-4l")
            .unwrap_err()
            .to_string();
        assert!(e.contains("key \"geometry\" is given twice"), "{e}");
        let e = parse_inline("mthp=64k=always,64k=never")
            .unwrap_err()
            .to_string();
        assert!(e.contains("key \"mthp\": size 64k is given twice"), "{e}");
        // Replacing a value on purpose is not a duplicate.
        let c = parse_inline("thp=always")
            .unwrap()
            .with("thp", "never")
            .unwrap();
        assert_eq!(c.model.thp, Some(Thp::Never));
        assert_eq!(c.label, "thp=never");
    }

    #[test]
    fn json_and_labels_keep_the_written_spelling() {
        let c = parse_inline("reclaim=eager,cpus=4,locking=split-pmd").unwrap();
        assert_eq!(c.label, "cpus=4,locking=split-pmd,reclaim=eager");
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["backend"], "model");
        assert_eq!(v["options"]["locking"], "split-pmd");
        assert_eq!(v["options"]["cpus"], "4");
        let k = parse_inline("backend=kernel").unwrap();
        assert_eq!(
            (k.label.as_str(), k.backend),
            ("kernel", BackendKind::Kernel)
        );
    }
}
