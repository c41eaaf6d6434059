//! `import`: traces other tools write, as ptlab traces.
//!
//! - [`champsim`]: ChampSim's instruction traces (xz-compressed 64-byte
//!   `input_instr` records).
//! - [`lackey`]: the text valgrind's lackey tool prints with
//!   `--trace-mem=yes`.
//! - [`infer`]: neither carries address-space events, so regions are
//!   inferred from the pages touched: a gap of 2 MiB or more between
//!   touched pages starts a new region.
//!
//! Both are read twice (pages first, then accesses), streaming, so memory
//! grows with the pages touched, not with the accesses.
//!
//! ## Invariants
//! 1. A failed import leaves no output: it is written to a partial file
//!    and renamed into place only when complete.
//! 2. Every access of the input is in the output, in order (loads of an
//!    instruction before its stores), at the offset of its address in
//!    its inferred region.

pub mod champsim;
pub mod infer;
pub mod lackey;

use std::path::{Path, PathBuf};
use thiserror::Error;

/// The input's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Champsim,
    Lackey,
}

/// What an import wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub loads: u64,
    pub stores: u64,
    pub regions: u64,
    /// Instructions (ChampSim records, lackey `I` lines).
    pub instructions: u64,
}

#[derive(Debug, Error)]
pub enum ImportError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A binary input that is wrong at `offset` (bytes of decompressed
    /// records, or of the compressed file when it does not decompress).
    #[error("{}: byte {offset}: {what}", path.display())]
    Binary {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    /// A text input that is wrong at `line`.
    #[error("{}:{line}: {what}", path.display())]
    Text {
        path: PathBuf,
        line: u64,
        what: String,
    },
}

impl ImportError {
    /// Whether the input is at fault (exit status 2); writing the output
    /// failing is not.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ImportError::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::PermissionDenied
                    | std::io::ErrorKind::IsADirectory
            ),
            _ => true,
        }
    }
}

/// One access as an importer reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub addr: u64,
    pub write: bool,
}

/// Imports `input` of `format` into the trace `out`.
///
/// # Errors
/// [`ImportError`]; nothing is left at `out` (invariant 1).
pub fn import(format: Format, input: &Path, out: &Path) -> Result<Summary, ImportError> {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    let partial = out.with_file_name(name);
    let r = (|| {
        let s = match format {
            Format::Champsim => {
                let pages = infer::Pages::collect(|f| champsim::read(input, f))?;
                infer::write(&pages, &partial, "champsim", input, |f| {
                    champsim::read(input, f)
                })?
            }
            Format::Lackey => {
                let pages = infer::Pages::collect(|f| lackey::read(input, f))?;
                infer::write(&pages, &partial, "lackey", input, |f| {
                    lackey::read(input, f)
                })?
            }
        };
        std::fs::rename(&partial, out).map_err(|source| ImportError::Io {
            path: out.to_path_buf(),
            source,
        })?;
        Ok(s)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    r
}
