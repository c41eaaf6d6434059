//! Reading a configuration's text: an inline list (`geometry=x86-64-5l,
//! locking=global`), a TOML file with the same keys, or individual options.
//! Each turns its text into `(key, value)` pairs in the order written, and
//! [`Builder`] parses every value into its type once.

use super::values::MTHP_SIZES;
use super::{Builder, ConfigError, RunConfig, KEYS};

/// Parses an inline list `key=value,key=value`. The value of `mthp` may
/// itself hold `size=policy` pairs: `mthp=64k=always,16k=madvise`.
///
/// # Errors
/// [`ConfigError`] naming the key and what was expected; a key given twice
/// is [`ConfigError::Duplicate`].
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
    Builder::from_pairs(&origin, pairs)
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
    Builder::from_pairs(&origin, pairs)
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
    Builder::from_pairs(
        "",
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// An unknown key, with the closest known one when it is a likely typo.
pub(super) fn unknown_key(origin: &str, key: &str) -> ConfigError {
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
