//! `import`: traces other tools write, as ptlab traces.
//!
//! - [`champsim`]: ChampSim's instruction traces (64-byte `input_instr`
//!   records, or CloudSuite's 96-byte ones).
//! - [`lackey`]: the text valgrind's lackey tool prints with
//!   `--trace-mem=yes`.
//! - [`source`]: either file xz-, gzip- or bzip2-compressed or not at all,
//!   told by its first bytes, decompressed on a thread of its own.
//! - [`infer`]: neither format carries address-space events, so regions
//!   are inferred from the pages touched: a gap of 2 MiB or more between
//!   touched pages starts a new region.
//!
//! - [`spill`]: the accesses kept while the input is read, encoded as
//!   the trace's records but for those whose region is not known yet.
//!
//! The input is read once, streaming: the parser runs beside the
//! decompressor and spills each access (a few bytes) while it keeps the
//! touched pages; once the input ends, the spill's parts are finished into
//! the trace's chunks on one thread per core and written in order (the
//! index built as they go). Memory grows with the pages touched, not with
//! the accesses.
//!
//! ## Invariants
//! 1. A failed import leaves no output: it is written to a partial file
//!    and renamed into place only when complete (the spill is an unnamed
//!    temporary file, gone with the process).
//! 2. Every access of the input is in the output, in order (an
//!    instruction's fetch, then its loads, then its stores), at the offset
//!    of its address in its inferred region; every instruction is one
//!    `Fetch` record.

pub mod champsim;
pub mod infer;
pub mod lackey;
pub mod source;
pub mod spill;

use std::path::{Path, PathBuf};
use thiserror::Error;

/// The input's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Champsim,
    /// ChampSim's CloudSuite records.
    Cloudsuite,
    Lackey,
}

/// What an import wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub loads: u64,
    pub stores: u64,
    pub regions: u64,
    /// Instructions (ChampSim records, lackey `I` lines), each a `Fetch`
    /// record of the trace.
    pub instructions: u64,
}

/// What an import read and wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    pub summary: Summary,
    /// How the input was compressed.
    pub compression: source::Compression,
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
    /// An input whose content is wrong as a whole (no one place to name).
    #[error("{}: {what}", path.display())]
    Input { path: PathBuf, what: String },
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

/// What an access of the input does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Load,
    Store,
    /// An instruction fetched at its ip (a ChampSim record's, a lackey
    /// `I` line's).
    Fetch,
}

/// One access as an importer reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub addr: u64,
    pub kind: Kind,
}

impl Access {
    pub fn load(addr: u64) -> Access {
        Access {
            addr,
            kind: Kind::Load,
        }
    }
    pub fn store(addr: u64) -> Access {
        Access {
            addr,
            kind: Kind::Store,
        }
    }
    pub fn fetch(addr: u64) -> Access {
        Access {
            addr,
            kind: Kind::Fetch,
        }
    }
}

/// Imports `input` of `format` into the trace `out`.
///
/// # Errors
/// [`ImportError`]; nothing is left at `out` (invariant 1).
pub fn import(format: Format, input: &Path, out: &Path) -> Result<Imported, ImportError> {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    let partial = out.with_file_name(name);
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let r = (|| {
        let io_in = |source| ImportError::Io {
            path: input.to_path_buf(),
            source,
        };
        let mut src = source::Input::open(input).map_err(io_in)?;
        let compression = src.compression;
        let spill = tempfile::tempfile_in(dir).map_err(|source| ImportError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut c = infer::Collector::new(spill);
        if format != Format::Lackey {
            // Decompressing xz is the slow part of a ChampSim import: the
            // parser finishes chunks while it waits for it.
            c = c.speculate(Some(src.waits()));
        }
        let read = match format {
            Format::Champsim => {
                champsim::read(&mut src, champsim::STANDARD, input, &mut |a| c.push(a))
            }
            Format::Cloudsuite => {
                champsim::read(&mut src, champsim::CLOUDSUITE, input, &mut |a| c.push(a))
            }
            Format::Lackey => lackey::read(&mut src, input, &mut |a| c.push(a)),
        };
        // A read error of the decompressor's is the input's fault, at its
        // offset in the compressed file.
        let instructions = match (read, src.failure()) {
            (Err(_), Some(f)) => {
                return Err(ImportError::Binary {
                    path: input.to_path_buf(),
                    offset: f.offset,
                    what: format!("not a valid {} stream ({})", compression.name(), f.error),
                })
            }
            (r, _) => r?,
        };
        drop(src);
        let source = match format {
            Format::Champsim => "champsim",
            Format::Cloudsuite => "champsim-cloudsuite",
            Format::Lackey => "lackey",
        };
        let summary = c.write(&partial, source, input, instructions)?;
        std::fs::rename(&partial, out).map_err(|source| ImportError::Io {
            path: out.to_path_buf(),
            source,
        })?;
        Ok(Imported {
            summary,
            compression,
        })
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    r
}
