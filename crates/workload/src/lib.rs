//! Workloads: the format of `docs/format.md`, its checks, the
//! placement rule shared by every backend, the built-in workloads, and the
//! result types (counters at marks) that every backend produces.
//!
//! Data flow: TOML text -> `syntax` (syntax, keys, types, units, with
//! file/line/column in every error; rules in src/syntax.rs) -> `check`
//! (regions mapped before use, ranges inside regions, threads and barriers;
//! rules in src/check.rs) -> [`placement`] (one fixed address per region)
//! -> [`plan::Workload`], a validated plan that backends run without
//! further checks.
//!
//! Entry points: [`parse`] (text and a file name), [`load`] (a built-in
//! name, a validation-suite name, or a file path), [`builtin`] (the shipped
//! workloads and the validation suite).

pub mod builtin;
mod check;
pub mod error;
mod fork;
mod pages;
pub mod placement;
pub mod plan;
pub mod result;
pub mod suggest;
mod syntax;
pub mod units;

use std::path::Path;

pub use builtin::validate_suite;
pub use check::{MAX_BARRIERS, MAX_REGIONS, MAX_STEPS};
pub use error::{Location, WorkloadError};
pub use syntax::{MAX_REPEAT_DEPTH, MAX_THREADS};

/// The label of the implicit mark every run ends with; no op may use it.
pub const END_MARK: &str = "end";

/// Parses and checks a workload, placing its regions for a `va_bits`-bit
/// address space (48 for x86-64 with 4 levels, 57 with 5, 39 for Sv39...).
/// `file` names the text in error messages; a workload without `name` is
/// named after the file's stem.
///
/// # Errors
///
/// The first problem found, with file, line and column: TOML syntax,
/// unknown or missing keys, bad values, broken rules of the format (see the
/// `syntax` and `check` modules), a region that cannot be placed, or
/// `va_bits` outside 32..=64.
pub fn parse(text: &str, file: &str, va_bits: u32) -> Result<plan::Workload, WorkloadError> {
    if !placement::VA_BITS.contains(&va_bits) {
        return Err(WorkloadError::VaBits { va_bits });
    }
    let src = syntax::Source { file, text };
    let doc = syntax::Parser::parse(file, text)?;
    let name = doc.name.clone().unwrap_or_else(|| {
        Path::new(file)
            .file_stem()
            .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned())
    });
    check::check(src, &doc, name, va_bits)
}

/// Loads a workload by built-in name, validation-suite name, or file path
/// (a name is looked up first; anything else is read as a file).
///
/// # Errors
///
/// [`WorkloadError::NotFound`] if it is neither a known name nor an existing
/// file, [`WorkloadError::Io`] if the file cannot be read, and every error
/// of [`parse`].
pub fn load(name_or_path: &str, va_bits: u32) -> Result<plan::Workload, WorkloadError> {
    if let Some(text) = builtin::get(name_or_path).or_else(|| builtin::get_validate(name_or_path)) {
        return parse(text, &format!("<built-in {name_or_path}>"), va_bits);
    }
    let path = Path::new(name_or_path);
    if !path.exists() {
        return Err(WorkloadError::NotFound {
            name: name_or_path.to_string(),
            builtins: builtin::list()
                .iter()
                .map(|b| b.0)
                .collect::<Vec<_>>()
                .join(", "),
            hint: suggest::did_you_mean(name_or_path, &builtin::names()),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| WorkloadError::Io {
        path: error::one_line(name_or_path),
        message: e.to_string(),
    })?;
    parse(&text, name_or_path, va_bits)
}
