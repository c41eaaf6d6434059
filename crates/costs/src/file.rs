//! [`CostFile`]: the TOML document `ptlab calibrate` writes and `--costs`
//! reads.
//!
//! ```toml
//! format = 1
//!
//! [host]
//! kernel_release = "6.18.0"
//! cpu_model = "AMD EPYC 9B14"
//! cpus = 2
//! hypervisor = "KVM"
//! taken = "2026-11-24T02:40:00Z"
//! mode = "quick"
//!
//! [costs."fault.anon_write"]
//! ns = 1650.0
//! lo = 1610.0
//! hi = 1702.0
//! n = 10
//! provenance = "measured"
//! method = "kernel backend: 65,536 write faults, mean of 10 runs, bootstrap 95%"
//! ```

use crate::catalog;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The version of the format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Where a figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// Measured on the host by `ptlab calibrate`.
    Measured,
    /// Computed from measured figures (the method says how).
    Derived,
    /// Not measured here: taken from a named source, or a stated guess.
    Assumed,
}

/// One cost: a point estimate and its interval, in the unit of its
/// catalog entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    pub ns: f64,
    pub lo: f64,
    pub hi: f64,
    /// Runs (or samples) behind the figure; 0 for an assumed one.
    #[serde(default)]
    pub n: u32,
    pub provenance: Provenance,
    /// How it was measured or derived.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub method: String,
    /// For an assumed figure: where it comes from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// How still the figure held while it was measured (calibrate writes
    /// it for measured figures; a file of an older build has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stability: Option<Stability>,
}

/// How still a measured figure held: the rounds behind it, how wide its
/// interval and how spread its rounds are relative to its point, and
/// whether the host moved (steal time, clock rate) while it was taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stability {
    /// Rounds (or samples) taken before the stopping rule stopped.
    pub rounds: u32,
    /// The interval's half-width over the point, `(hi - lo) / 2 / ns`.
    pub rel_halfwidth: f64,
    /// The middle half of the rounds' values over their median,
    /// `(q3 - q1) / median`: how much one round differs from the next.
    pub rel_spread: f64,
    /// The figure did not hold still: its interval stayed wider than the
    /// unstable bound, or the host moved during every take of it.
    #[serde(default)]
    pub unstable: bool,
    /// What moved on the host while the figure was measured (steal time,
    /// the CPU's clock rate), and whether it was re-measured.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub drift: String,
}

impl Cost {
    /// An assumed figure with no spread of its own beyond `lo..hi`.
    pub fn assumed(ns: f64, lo: f64, hi: f64, source: &str) -> Cost {
        Cost {
            ns,
            lo,
            hi,
            n: 0,
            provenance: Provenance::Assumed,
            method: String::new(),
            source: source.to_string(),
            stability: None,
        }
    }

    /// Whether the file marks the figure unstable.
    pub fn is_unstable(&self) -> bool {
        self.stability.as_ref().is_some_and(|s| s.unstable)
    }

    /// The interval predictions priced with this figure use: `lo..hi`,
    /// widened for a figure marked unstable to at least its rounds'
    /// relative spread either side of the point (`ns * (1 -+ rel_spread)`,
    /// floored at 0), since its interval alone understates how far the
    /// next take may land.
    pub fn pricing_bounds(&self) -> (f64, f64) {
        match &self.stability {
            Some(s) if s.unstable => {
                let w = self.ns * s.rel_spread;
                (
                    (self.ns - w).max(0.0).min(self.lo),
                    (self.ns + w).max(self.hi),
                )
            }
            _ => (self.lo, self.hi),
        }
    }
}

/// The host the figures describe.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_release: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<usize>,
    /// The hypervisor the host runs under, "none" on bare metal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypervisor: Option<String>,
    /// When the figures were taken (UTC, RFC 3339), or what era an assumed
    /// file describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken: Option<String>,
    /// "quick", "long", "test" or "assumed".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Free text: what the file is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The THP policies the figures were taken under (`enabled=madvise
    /// defrag=madvise shmem=never 64K=never ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp: Option<String>,
    /// The base page size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u64>,
    /// The key of the machine the figures describe (`host::MachineKey`'s
    /// id: the CPU model's words and a hash of CPU, kernel, hypervisor,
    /// THP and page size); a command uses a file by default only when it
    /// is this host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

impl HostInfo {
    /// The machine in a few words, for every label of a figure priced with
    /// the file: `Intel(R) Xeon(R) Processor, 2 CPUs, hypervisor KVM, Linux
    /// 6.18.44; calibrate long mode, 2026-11-27T23:31:55Z`. Fields the file
    /// does not give are left out; a file that gives none is "a machine the
    /// file does not describe".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = &self.cpu_model {
            parts.push(c.clone());
        }
        if let Some(n) = self.cpus {
            parts.push(format!("{n} CPUs"));
        }
        if let Some(h) = &self.hypervisor {
            parts.push(if h == "none" {
                "bare metal".to_string()
            } else {
                format!("hypervisor {h}")
            });
        }
        if let Some(k) = &self.kernel_release {
            parts.push(format!("Linux {k}"));
        }
        if parts.is_empty() {
            parts.push("a machine the file does not describe".into());
        }
        let mut s = parts.join(", ");
        let how = match self.mode.as_deref() {
            Some("assumed") => Some("assumed figures".to_string()),
            Some(m) => Some(format!("calibrate {m} mode")),
            None => None,
        };
        let when = self.taken.clone();
        match (how, when) {
            (Some(h), Some(w)) => s.push_str(&format!("; {h}, {w}")),
            (Some(h), None) => s.push_str(&format!("; {h}")),
            (None, Some(w)) => s.push_str(&format!("; taken {w}")),
            (None, None) => {}
        }
        s
    }
}

/// A whole cost file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostFile {
    pub format: u32,
    #[serde(default)]
    pub host: HostInfo,
    #[serde(default)]
    pub costs: BTreeMap<String, Cost>,
}

/// Why a cost file could not be read.
#[derive(Debug, Error)]
pub enum CostsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// TOML syntax or a key of the wrong type; the message has the line and
    /// column.
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A value that parses but cannot be right.
    #[error("{path}: {key}: {message}")]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
}

impl CostFile {
    /// An empty file for this format version.
    pub fn new(host: HostInfo) -> CostFile {
        CostFile {
            format: FORMAT_VERSION,
            host,
            costs: BTreeMap::new(),
        }
    }

    /// The cost named `name`, if the file gives it.
    pub fn get(&self, name: &str) -> Option<&Cost> {
        self.costs.get(name)
    }

    /// Parses `text` (read from `path`, which only names it in errors) and
    /// validates it.
    ///
    /// # Errors
    /// [`CostsError::Parse`] or [`CostsError::Invalid`].
    pub fn parse(text: &str, path: &Path) -> Result<CostFile, CostsError> {
        // One line, as every error of the project: the line and column
        // from the error's span, its message with control characters
        // escaped (toml's own rendering is a multi-line snippet; found by
        // fuzz/fuzz_targets/parse_costs.rs).
        let f: CostFile = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start).min(text.len());
            let before = text.get(..at).unwrap_or("");
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            let message: String = e
                .message()
                .trim_end()
                .chars()
                .map(|c| {
                    if c.is_control() {
                        c.escape_default().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect();
            CostsError::Parse {
                path: path.to_path_buf(),
                message: format!("line {line}, column {column}: {message}"),
            }
        })?;
        f.validate(path)?;
        Ok(f)
    }

    /// Reads and validates the file at `path`.
    ///
    /// # Errors
    /// As [`CostFile::parse`], and [`CostsError::Io`].
    pub fn load(path: &Path) -> Result<CostFile, CostsError> {
        let text = std::fs::read_to_string(path).map_err(|source| CostsError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        CostFile::parse(&text, path)
    }

    /// The file as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("a cost file always serializes")
    }

    /// Writes the file to `path`.
    ///
    /// # Errors
    /// [`CostsError::Io`].
    pub fn save(&self, path: &Path) -> Result<(), CostsError> {
        std::fs::write(path, self.to_toml()).map_err(|source| CostsError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Checks invariant 1 of the crate: known names, `0 <= lo <= ns <= hi`,
    /// finite figures, and the format version.
    ///
    /// # Errors
    /// [`CostsError::Invalid`] naming the key.
    pub fn validate(&self, path: &Path) -> Result<(), CostsError> {
        let invalid = |key: String, message: String| CostsError::Invalid {
            path: path.to_path_buf(),
            key,
            message,
        };
        if self.format != FORMAT_VERSION {
            return Err(invalid(
                "format".into(),
                format!(
                    "format {} is not one this build reads (expected {FORMAT_VERSION})",
                    self.format
                ),
            ));
        }
        for (name, c) in &self.costs {
            let key = format!("costs.\"{name}\"");
            if catalog::lookup(name).is_none() {
                let hint = catalog::suggest(name)
                    .map(|s| format!("; did you mean \"{s}\"?"))
                    .unwrap_or_default();
                return Err(invalid(key, format!("unknown cost name{hint}")));
            }
            for (field, v) in [("ns", c.ns), ("lo", c.lo), ("hi", c.hi)] {
                if !v.is_finite() || v < 0.0 {
                    return Err(invalid(
                        format!("{key}.{field}"),
                        format!("expected a finite number of nanoseconds >= 0, found {v}"),
                    ));
                }
            }
            if !(c.lo <= c.ns && c.ns <= c.hi) {
                return Err(invalid(
                    key,
                    format!(
                        "expected lo <= ns <= hi, found lo = {}, ns = {}, hi = {}",
                        c.lo, c.ns, c.hi
                    ),
                ));
            }
            if let Some(st) = &c.stability {
                for (field, v) in [
                    ("rel_halfwidth", st.rel_halfwidth),
                    ("rel_spread", st.rel_spread),
                ] {
                    if !v.is_finite() || v < 0.0 {
                        return Err(invalid(
                            format!("{key}.stability.{field}"),
                            format!("expected a finite ratio >= 0, found {v}"),
                        ));
                    }
                }
            }
            if c.provenance == Provenance::Assumed && c.source.is_empty() {
                return Err(invalid(
                    format!("{key}.source"),
                    "an assumed cost must name its source".into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CostFile {
        let mut f = CostFile::new(HostInfo {
            cpus: Some(2),
            mode: Some("quick".into()),
            ..HostInfo::default()
        });
        f.costs.insert(
            "fault.anon_write".into(),
            Cost {
                ns: 1650.0,
                lo: 1600.0,
                hi: 1700.0,
                n: 10,
                provenance: Provenance::Measured,
                method: "mean of 10 runs".into(),
                source: String::new(),
                stability: None,
            },
        );
        f
    }

    #[test]
    fn a_file_round_trips_through_toml() {
        let f = sample();
        let back = CostFile::parse(&f.to_toml(), Path::new("x.toml")).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn an_unknown_name_is_refused_with_a_hint() {
        let text = sample()
            .to_toml()
            .replace("fault.anon_write", "fault.anon_wrte");
        let e = CostFile::parse(&text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.toml"), "{e}");
        assert!(e.contains("fault.anon_wrte"), "{e}");
        assert!(e.contains("did you mean \"fault.anon_write\""), "{e}");
    }

    #[test]
    fn an_interval_that_excludes_its_point_is_refused() {
        let text = sample().to_toml().replace("lo = 1600.0", "lo = 1660.0");
        let e = CostFile::parse(&text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("lo <= ns <= hi"), "{e}");
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let e = CostFile::parse("format = 1\n[costs\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn a_newer_format_is_refused() {
        let text = sample().to_toml().replace("format = 1", "format = 2");
        let e = CostFile::parse(&text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("format 2"), "{e}");
    }

    fn with_stability(unstable: bool) -> CostFile {
        let mut f = sample();
        f.costs.get_mut("fault.anon_write").unwrap().stability = Some(Stability {
            rounds: 24,
            rel_halfwidth: 0.03,
            rel_spread: 0.2,
            unstable,
            drift: if unstable {
                "steal 6.0% of CPU time during every take".into()
            } else {
                String::new()
            },
        });
        f
    }

    #[test]
    fn stability_round_trips_and_a_file_without_it_still_loads() {
        let f = with_stability(true);
        let text = f.to_toml();
        assert!(text.contains("rel_spread = 0.2"), "{text}");
        let back = CostFile::parse(&text, Path::new("x.toml")).unwrap();
        assert_eq!(back, f);
        assert!(back.get("fault.anon_write").unwrap().is_unstable());
        // The old format: no stability table at all.
        let old = CostFile::parse(&sample().to_toml(), Path::new("x.toml")).unwrap();
        assert_eq!(old.get("fault.anon_write").unwrap().stability, None);
    }

    #[test]
    fn a_negative_spread_is_refused_by_key() {
        let text = with_stability(false)
            .to_toml()
            .replace("rel_spread = 0.2", "rel_spread = -0.2");
        let e = CostFile::parse(&text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("stability.rel_spread"), "{e}");
    }

    #[test]
    fn only_an_unstable_figure_is_priced_wider() {
        let stable = with_stability(false);
        let c = stable.get("fault.anon_write").unwrap();
        assert_eq!(c.pricing_bounds(), (c.lo, c.hi));
        let unstable = with_stability(true);
        let c = unstable.get("fault.anon_write").unwrap();
        let (lo, hi) = c.pricing_bounds();
        // 20% of 1650 either side: wider than the interval [1600, 1700].
        assert!(
            (lo - 1320.0).abs() < 1e-9 && (hi - 1980.0).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert!(lo <= c.lo && hi >= c.hi);
    }

    #[test]
    fn an_assumed_cost_without_a_source_is_refused() {
        let mut f = sample();
        f.costs
            .insert("pt.alloc".into(), Cost::assumed(200.0, 100.0, 400.0, ""));
        let e = f.validate(Path::new("c.toml")).unwrap_err().to_string();
        assert!(e.contains("source"), "{e}");
    }
}
