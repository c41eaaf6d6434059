//! The sweep file (docs/sweep.md):
//!
//! ```toml
//! name = "geometries"                     # optional (default: the file's stem)
//! workloads = ["gups", "my.toml", "app.ptl"]
//! repeat = 1                              # runs per task (optional)
//! timeout = 120                           # seconds per run (optional)
//! [config]                                # keys every run has (optional)
//! reclaim = "on"
//! [axes]                                  # each key: the values to sweep
//! geometry = ["x86-64-4l", "x86-64-5l"]
//! cpus = [1, 2]
//! ```
//!
//! Invariant: a [`SweepFile`] holds only values each accepted alone by the
//! configuration parser (`RunConfig::with`), and only workloads that load;
//! whether a combination of them runs is the run's own outcome.

use crate::config::{RunConfig, KEYS};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;
use thiserror::Error;
use toml::Spanned;

/// What is wrong with a sweep file: one line saying where and what.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct SweepError(pub String);

/// One swept key and its values, in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

/// A checked sweep file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepFile {
    pub name: String,
    pub workloads: Vec<String>,
    /// Keys every run has, with their values.
    pub config: Vec<(String, String)>,
    /// Swept keys, sorted by key.
    pub axes: Vec<Axis>,
    pub repeat: usize,
    pub timeout_s: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Option<String>,
    workloads: Spanned<Vec<Spanned<String>>>,
    repeat: Option<Spanned<i64>>,
    timeout: Option<Spanned<i64>>,
    #[serde(default)]
    config: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    axes: BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>,
}

/// Reads and checks the sweep file at `path`.
///
/// # Errors
/// [`SweepError`] for an unreadable file or anything [`parse`] refuses.
pub fn read(path: &str) -> Result<SweepFile, SweepError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SweepError(format!("{path}: cannot read the sweep file: {e}")))?;
    parse(path, &text)
}

/// Parses and checks a sweep file's text (`path` names it in errors).
///
/// # Errors
/// [`SweepError`] with `path:line:col`, the key and what was expected.
pub fn parse(path: &str, text: &str) -> Result<SweepFile, SweepError> {
    let at = |span: Range<usize>, key: &str, message: String| {
        let (line, col) = pt::text::line_col(text, span.start);
        SweepError(format!("{path}:{line}:{col}: key \"{key}\": {message}"))
    };
    let raw: Raw = toml::from_str(text).map_err(|e| {
        let (line, col) = pt::text::toml_error_at(text, &e);
        let first = e.message().lines().next().unwrap_or("invalid TOML");
        SweepError(format!("{path}:{line}:{col}: {first}"))
    })?;
    let name = raw.name.unwrap_or_else(|| {
        std::path::Path::new(path)
            .file_stem()
            .map_or_else(|| path.to_string(), |s| s.to_string_lossy().into_owned())
    });
    let count = |v: Option<Spanned<i64>>, key: &str, default: u64, max: u64| match v {
        None => Ok(default),
        Some(s) => match u64::try_from(*s.get_ref()) {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(at(
                s.span(),
                key,
                format!("{} is not a whole number from 1 to {max}", s.get_ref()),
            )),
        },
    };
    let repeat = count(raw.repeat, "repeat", 1, 1000)? as usize;
    let timeout_s = count(raw.timeout, "timeout", 120, 86_400)?;

    if raw.workloads.get_ref().is_empty() {
        return Err(at(
            raw.workloads.span(),
            "workloads",
            "name at least one workload (a built-in name, a workload file or a trace)".into(),
        ));
    }
    let mut workloads = Vec::new();
    for w in raw.workloads.get_ref() {
        check_workload(w.get_ref()).map_err(|m| at(w.span(), "workloads", m))?;
        workloads.push(w.get_ref().clone());
    }

    let mut config = Vec::new();
    for (key, v) in &raw.config {
        let value = scalar(v.get_ref()).map_err(|m| at(v.span(), key, m))?;
        check_value(key, &value).map_err(|m| at(v.span(), key, m))?;
        config.push((key.clone(), value));
    }
    let mut axes = Vec::new();
    for (key, vs) in &raw.axes {
        if raw.config.contains_key(key) {
            return Err(at(
                vs.span(),
                key,
                "is both in [config] and in [axes]; give it in one".into(),
            ));
        }
        if vs.get_ref().is_empty() {
            return Err(at(
                vs.span(),
                key,
                "an axis needs at least one value".into(),
            ));
        }
        let mut values: Vec<String> = Vec::new();
        for v in vs.get_ref() {
            let value = scalar(v.get_ref()).map_err(|m| at(v.span(), key, m))?;
            check_value(key, &value).map_err(|m| at(v.span(), key, m))?;
            if values.contains(&value) {
                return Err(at(v.span(), key, format!("\"{value}\" is given twice")));
            }
            values.push(value);
        }
        axes.push(Axis {
            key: key.clone(),
            values,
        });
    }
    Ok(SweepFile {
        name,
        workloads,
        config,
        axes,
        repeat,
        timeout_s,
    })
}

/// A value as the configuration parser reads it: a string, or a whole
/// number (`cpus = [1, 2]`).
fn scalar(v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(n) => Ok(n.to_string()),
        other => Err(format!(
            "expected a string or a whole number, found {}",
            other.type_str()
        )),
    }
}

/// `value` for `key` alone, checked as `--config key=value` would be.
fn check_value(key: &str, value: &str) -> Result<(), String> {
    if key == "backend" {
        return Err("a sweep runs the model; the backend is not a key of a sweep".into());
    }
    if !KEYS.contains(&key) {
        return Err(format!(
            "unknown configuration key; known keys: {}",
            KEYS.iter()
                .filter(|k| **k != "backend")
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    RunConfig::model_default()
        .with(key, value)
        .map(|_| ())
        .map_err(|e| match e {
            crate::config::ConfigError::BadValue { message, .. } => message,
            e => e.to_string(),
        })
}

/// Whether `w` names a workload that loads (or a trace file that exists).
fn check_workload(w: &str) -> Result<(), String> {
    if crate::replay::is_trace(w) {
        return Ok(());
    }
    if std::path::Path::new(w)
        .extension()
        .is_some_and(|e| e == "ptl")
    {
        return std::fs::metadata(w)
            .map(|_| ())
            .map_err(|e| format!("{w}: {e}"));
    }
    workload::load(w, 48).map(|_| ()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "s"
workloads = ["anon-write"]
repeat = 2
[config]
reclaim = "on"
[axes]
geometry = ["x86-64-4l", "x86-64-5l"]
cpus = [1, 2, 4]
"#;

    #[test]
    fn a_good_file_reads_with_its_axes_sorted_by_key() {
        let f = parse("s.toml", GOOD).unwrap();
        assert_eq!(f.name, "s");
        assert_eq!(f.repeat, 2);
        assert_eq!(f.timeout_s, 120);
        assert_eq!(f.config, vec![("reclaim".into(), "on".into())]);
        let keys: Vec<&str> = f.axes.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, ["cpus", "geometry"]);
        assert_eq!(f.axes[0].values, ["1", "2", "4"]);
    }

    fn err(text: &str) -> String {
        parse("s.toml", text).unwrap_err().0
    }

    #[test]
    fn a_bad_value_names_file_line_column_and_key() {
        let e = err(
            "workloads = [\"anon-write\"]\n[axes]\ngeometry = [\"x86-64-4l\", \"x86-64-6l\"]\n",
        );
        assert!(e.starts_with("s.toml:3:26: key \"geometry\": "), "{e}");
        assert!(e.contains("unknown geometry"), "{e}");
        let e = err("workloads = [\"anon-write\"]\n[axes]\ncpus = [1, 0]\n");
        assert!(e.starts_with("s.toml:3:12: key \"cpus\": "), "{e}");
        let e = err("workloads = [\"anon-write\"]\n[config]\nlockng = \"global\"\n");
        assert!(
            e.starts_with("s.toml:3:10: key \"lockng\": unknown configuration key"),
            "{e}"
        );
        let e = err("workloads = [\"anon-write\"]\n[axes]\nbackend = [\"kernel\"]\n");
        assert!(e.contains("key \"backend\": a sweep runs the model"), "{e}");
    }

    #[test]
    fn structure_errors_have_positions_too() {
        let e = err("workloads = []\n");
        assert!(
            e.starts_with("s.toml:1:13: key \"workloads\": name at least one"),
            "{e}"
        );
        let e = err("workloads = [\"no-such-workload\"]\n");
        assert!(e.starts_with("s.toml:1:14: key \"workloads\": "), "{e}");
        let e = err("workload = [\"anon-write\"]\n");
        assert!(e.starts_with("s.toml:1:1: unknown field `workload`"), "{e}");
        let e = err("workloads = [\"anon-write\"]\nrepeat = 0\n");
        assert!(
            e.starts_with("s.toml:2:10: key \"repeat\": 0 is not"),
            "{e}"
        );
        let e = err("workloads = [\"anon-write\"]\n[axes]\nthp = \"always\"\n");
        assert!(e.starts_with("s.toml:3:7: "), "{e}");
        let e = err("workloads = [\"anon-write\"]\n[axes]\nthp = [\"never\", \"never\"]\n");
        assert!(e.contains("key \"thp\": \"never\" is given twice"), "{e}");
        let e = err(
            "workloads = [\"anon-write\"]\n[config]\nthp = \"never\"\n[axes]\nthp = [\"always\"]\n",
        );
        assert!(
            e.contains("key \"thp\": is both in [config] and in [axes]"),
            "{e}"
        );
        let e = err("workloads = [\"anon-write\"\n");
        assert!(e.starts_with("s.toml:1:"), "{e}");
    }
}
