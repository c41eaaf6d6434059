//! The one error type of this layer and the position it points at.
//!
//! Invariant: every [`WorkloadError`] displays as exactly one line. Text that
//! comes from the user (keys, values, region names, file names) is printed
//! with Rust's string escaping, so a newline inside a quoted TOML key cannot
//! break the line.

use std::fmt;
use std::sync::Arc;

/// A position in a workload file: the file name as given, then line and
/// column, both 1-based (the column counts characters, not bytes).
///
/// Kept small (the file name shared, line and column in 32 bits) so that
/// [`WorkloadError`] stays cheap to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: Arc<str>,
    pub line: u32,
    pub column: u32,
}

impl Location {
    /// The position of byte `offset` in `text` (clamped to the text).
    pub fn at(file: &str, text: &str, offset: usize) -> Location {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Location {
            file: one_line(file).into(),
            line: clamp(before.matches('\n').count() + 1),
            column: clamp(before[line_start..].chars().count() + 1),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// `s` with control characters escaped, so it prints on one line.
pub(crate) fn one_line(s: &str) -> String {
    if s.chars().any(char::is_control) {
        s.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect()
    } else {
        s.to_string()
    }
}

/// Everything that can be wrong with a workload, found before anything runs.
///
/// `context` fields read like `in op 2 of thread block 1` (ops and blocks are
/// counted from 1; `op 3.1` is the first op inside the `repeat` that is op 3).
/// `hint` fields are empty or start with `, ` or `; `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    /// The workload file could not be read.
    #[error("{path}: cannot read the workload: {message}")]
    Io { path: String, message: String },
    /// Neither a built-in workload nor an existing file; `hint` suggests
    /// the nearest built-in or validation-suite name.
    #[error("{name:?} is neither a built-in workload ({builtins}) nor a readable file{hint}")]
    NotFound {
        name: String,
        builtins: String,
        hint: String,
    },
    /// The address-space width given to placement is outside what it handles.
    #[error("address spaces of {va_bits} bits are not supported (expected 32 to 64 bits)")]
    VaBits { va_bits: u32 },
    /// The text is not TOML.
    #[error("{at}: TOML syntax error: {message}")]
    Syntax { at: Location, message: String },
    /// A key the format does not have here.
    #[error("{at}: unknown key {key:?} {context}{hint}")]
    UnknownKey {
        at: Location,
        key: String,
        context: String,
        hint: String,
    },
    /// A key that must be present is not.
    #[error("{at}: missing key {key:?} {context}: {why}")]
    MissingKey {
        at: Location,
        key: String,
        context: String,
        why: String,
    },
    /// A value of the wrong type, unit or range.
    #[error("{at}: bad value for {key:?} {context}: expected {expected}, found {found}")]
    BadValue {
        at: Location,
        key: String,
        context: String,
        expected: String,
        found: String,
    },
    /// An op without exactly one known verb.
    #[error("{at}: {problem} {context}{hint}")]
    Verb {
        at: Location,
        problem: String,
        context: String,
        hint: String,
    },
    /// A region used where it is not mapped, or not in the way the op needs.
    #[error("{at}: region {region:?} {problem} {context}{hint}")]
    Region {
        at: Location,
        region: String,
        problem: String,
        context: String,
        hint: String,
    },
    /// A rule about threads, barriers, repeats or limits.
    #[error("{at}: {problem}")]
    Structure { at: Location, problem: String },
    /// The placement rule cannot place a region.
    #[error("{at}: region {region:?} {problem}")]
    Placement {
        at: Location,
        region: String,
        problem: String,
    },
}
