//! Run configurations: which backend, and for the model every option of
//! shared/spec/cli.md ("Model options").
//!
//! A configuration comes from command-line options, from an inline list
//! (`geometry=x86-64-5l,locking=global`) or from a TOML file holding the same
//! keys. Every key and value is checked here, before anything runs; the
//! model backend turns the checked strings into its own types.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use thiserror::Error;

/// The keys a configuration may set.
pub const KEYS: &[&str] = &[
    "backend", "geometry", "locking", "reclaim", "thp", "mthp", "tlb", "cpus",
];

/// Which backend runs the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Model,
    Kernel,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Model => "model",
            BackendKind::Kernel => "kernel",
        })
    }
}

/// A checked configuration. `options` holds only the model keys that were
/// set; unset ones take the model's defaults (which mirror this host).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunConfig {
    /// How tables and reports name this configuration (`geometry=x86-64-5l`).
    pub label: String,
    pub backend: BackendKind,
    pub options: BTreeMap<String, String>,
}

impl RunConfig {
    /// The model with every default.
    pub fn model_default() -> RunConfig {
        RunConfig {
            label: "model".into(),
            backend: BackendKind::Model,
            options: BTreeMap::new(),
        }
    }

    /// This machine's kernel.
    pub fn kernel() -> RunConfig {
        RunConfig {
            label: "kernel".into(),
            backend: BackendKind::Kernel,
            options: BTreeMap::new(),
        }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }

    /// A copy with `key` set (checked like any other value).
    ///
    /// # Errors
    /// [`ConfigError`] for an unknown key or a bad value.
    pub fn with(&self, key: &str, value: &str) -> Result<RunConfig, ConfigError> {
        let mut pairs: Vec<(String, String)> = self
            .options
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        pairs.push(("backend".into(), self.backend.to_string()));
        pairs.retain(|(k, _)| k != key);
        pairs.push((key.into(), value.into()));
        build("", pairs)
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
    #[error("{origin}{message}")]
    Syntax { origin: String, message: String },
}

/// Values accepted by the enumerated keys.
fn allowed(key: &str) -> Option<&'static [&'static str]> {
    Some(match key {
        "backend" => &["model", "kernel"],
        "locking" => &["global", "split-pte", "split-pmd"],
        "reclaim" => &["off", "on", "eager"],
        "thp" => &["always", "madvise", "never"],
        _ => return None,
    })
}

/// Sizes multi-size THP may have (anonymous large folios mapped by PTEs).
pub const MTHP_SIZES: &[&str] = &[
    "16k", "32k", "64k", "128k", "256k", "512k", "1024k", "2048k",
];

fn check_value(origin: &str, key: &str, value: &str) -> Result<(), ConfigError> {
    let bad = |message: String| ConfigError::BadValue {
        origin: origin.into(),
        key: key.into(),
        message,
    };
    if let Some(values) = allowed(key) {
        if !values.contains(&value) {
            return Err(bad(format!(
                "\"{value}\" is not one of {}",
                values.join(", ")
            )));
        }
        return Ok(());
    }
    match key {
        "geometry" => pt::geometry::load(value)
            .map(|_| ())
            .map_err(|e| bad(e.to_string())),
        "cpus" => match value.parse::<u32>() {
            Ok(n) if (1..=256).contains(&n) => Ok(()),
            _ => Err(bad(format!(
                "\"{value}\" is not a number of CPUs from 1 to 256"
            ))),
        },
        "tlb" => {
            if value.is_empty() {
                Err(bad("expected a TLB preset name or none".into()))
            } else {
                // The MMU model checks the name when it builds the TLBs.
                Ok(())
            }
        }
        "mthp" => {
            for part in value.split(',') {
                let (size, policy) = part.split_once('=').ok_or_else(|| {
                    bad(format!("\"{part}\": expected SIZE=POLICY, e.g. 64k=always"))
                })?;
                if !MTHP_SIZES.contains(&size) {
                    return Err(bad(format!(
                        "size \"{size}\" is not one of {}",
                        MTHP_SIZES.join(", ")
                    )));
                }
                if !["always", "madvise", "never", "inherit"].contains(&policy) {
                    return Err(bad(format!(
                        "policy \"{policy}\" for {size} is not always, madvise, never or inherit"
                    )));
                }
            }
            Ok(())
        }
        _ => unreachable!("keys are checked first"),
    }
}

fn unknown_key(origin: &str, key: &str) -> ConfigError {
    let best = KEYS
        .iter()
        .map(|k| (edit_distance(k, key), *k))
        .min()
        .filter(|(d, _)| *d <= 2);
    ConfigError::UnknownKey {
        origin: origin.into(),
        key: key.into(),
        hint: best
            .map(|(_, k)| format!(", did you mean \"{k}\"?"))
            .unwrap_or_default(),
        known: KEYS.join(", "),
    }
}

fn build(origin: &str, pairs: Vec<(String, String)>) -> Result<RunConfig, ConfigError> {
    let mut options = BTreeMap::new();
    let mut backend = BackendKind::Model;
    for (k, v) in pairs {
        if !KEYS.contains(&k.as_str()) {
            return Err(unknown_key(origin, &k));
        }
        check_value(origin, &k, &v)?;
        if k == "backend" {
            backend = if v == "kernel" {
                BackendKind::Kernel
            } else {
                BackendKind::Model
            };
        } else {
            options.insert(k, v);
        }
    }
    if backend == BackendKind::Kernel {
        if let Some(k) = options.keys().next() {
            return Err(ConfigError::BadValue {
                origin: origin.into(),
                key: k.clone(),
                message: "the kernel backend runs with this machine's own settings; model options do not apply to it".into(),
            });
        }
    }
    let mut label: Vec<String> = Vec::new();
    if backend == BackendKind::Kernel {
        label.push("kernel".into());
    }
    label.extend(options.iter().map(|(k, v)| format!("{k}={v}")));
    let label = if label.is_empty() {
        "model".to_string()
    } else {
        label.join(",")
    };
    Ok(RunConfig {
        label,
        backend,
        options,
    })
}

/// Parses an inline list `key=value,key=value`. The value of `mthp` may
/// itself hold `size=policy` pairs: `mthp=64k=always,16k=madvise`.
///
/// # Errors
/// [`ConfigError`] naming the key and what was expected.
pub fn parse_inline(text: &str) -> Result<RunConfig, ConfigError> {
    let origin = format!("--config \"{text}\": ");
    let mut pairs: Vec<(String, String)> = Vec::new();
    for piece in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = piece.split_once('=').ok_or_else(|| ConfigError::Syntax {
            origin: origin.clone(),
            message: format!("\"{piece}\" is not KEY=VALUE"),
        })?;
        let continues_mthp =
            MTHP_SIZES.contains(&k) && pairs.last().is_some_and(|(last, _)| last == "mthp");
        if continues_mthp {
            let last = pairs.last_mut().expect("checked above");
            last.1.push(',');
            last.1.push_str(piece);
        } else {
            pairs.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    build(&origin, pairs)
}

/// Parses a TOML configuration file's text (`path` names it in errors).
/// Values may be strings or, for `cpus`, integers; `mthp` may also be a
/// table (`[mthp]` with `64k = "always"`).
///
/// # Errors
/// [`ConfigError`] with the file and, for syntax errors, line and column.
pub fn parse_toml(path: &str, text: &str) -> Result<RunConfig, ConfigError> {
    let origin = format!("{path}: ");
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let (line, col) = pt::text::toml_error_at(text, &e);
        ConfigError::Syntax {
            origin: format!("{path}:{line}:{col}: "),
            message: e.message().lines().next().unwrap_or("invalid TOML").into(),
        }
    })?;
    let mut pairs = Vec::new();
    for (k, v) in table {
        let value = match (&*k, v) {
            (_, toml::Value::String(s)) => s,
            ("cpus", toml::Value::Integer(n)) => n.to_string(),
            ("mthp", toml::Value::Table(t)) => t
                .iter()
                .map(|(size, p)| format!("{size}={}", p.as_str().unwrap_or("?")))
                .collect::<Vec<_>>()
                .join(","),
            (_, other) if KEYS.contains(&k.as_str()) => {
                return Err(ConfigError::BadValue {
                    origin,
                    key: k,
                    message: format!("expected a string, found {}", other.type_str()),
                })
            }
            _ => return Err(unknown_key(&origin, &k)),
        };
        pairs.push((k, value));
    }
    build(&origin, pairs)
}

/// A `--config` argument: a TOML file if it names one, else an inline list.
///
/// # Errors
/// As [`parse_toml`] and [`parse_inline`]; an unreadable file names the path.
pub fn parse_arg(arg: &str) -> Result<RunConfig, ConfigError> {
    if arg.ends_with(".toml") {
        let text = std::fs::read_to_string(arg).map_err(|e| ConfigError::Syntax {
            origin: format!("{arg}: "),
            message: format!("cannot read the configuration file: {e}"),
        })?;
        parse_toml(arg, &text)
    } else {
        parse_inline(arg)
    }
}

/// Builds a configuration from individual options (`ptlab run --geometry ...`).
///
/// # Errors
/// As [`parse_inline`].
pub fn from_pairs(pairs: &[(&str, &str)]) -> Result<RunConfig, ConfigError> {
    build(
        "",
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// Levenshtein distance, for "did you mean" hints.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_lists_are_checked() {
        let c = parse_inline("geometry=x86-64-5l,locking=global").unwrap();
        assert_eq!(c.backend, BackendKind::Model);
        assert_eq!(c.get("geometry"), Some("x86-64-5l"));
        assert_eq!(c.label, "geometry=x86-64-5l,locking=global");
        let c = parse_inline("mthp=64k=always,16k=madvise,thp=never").unwrap();
        assert_eq!(c.get("mthp"), Some("64k=always,16k=madvise"));
        assert_eq!(c.get("thp"), Some("never"));
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
    fn toml_files_are_checked_with_positions() {
        let c = parse_toml(
            "c.toml",
            "geometry = \"riscv-sv39-64k\"\ncpus = 4\n[mthp]\n64k = \"always\"\n",
        )
        .unwrap();
        assert_eq!(c.get("cpus"), Some("4"));
        assert_eq!(c.get("mthp"), Some("64k=always"));
        let e = parse_toml("c.toml", "geometry = \n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml:1:"), "{e}");
        let e = parse_toml("c.toml", "thp = 3\n").unwrap_err().to_string();
        assert!(e.contains("key \"thp\": expected a string"), "{e}");
    }
}
