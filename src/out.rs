//! Standard output, in one place.
//!
//! Every command prints through [`write`] (or the `out!` / `outln!` macros),
//! never with `print!`: Rust ignores SIGPIPE, so a reader that goes away
//! (`ptlab workloads list | head -1`) makes the next write fail with
//! `BrokenPipe`, and `print!` would panic on it. Here that error becomes
//! [`Failure::Closed`], which ends the command through the normal return path
//! (so kernel-backend children and temporary files are already cleaned up by
//! the time it is seen) and exits 0 without a message: the reader had what it
//! wanted.

use crate::fail::Failure;
use std::io::{self, Write};

/// Writes `text` to stdout and flushes it, so that a closed pipe is noticed
/// here and not in a flush at exit.
///
/// # Errors
/// [`Failure::Closed`] when the reader has gone, [`Failure::Error`] for any
/// other write error.
pub fn write(text: &str) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(Failure::from_stdout)
}

/// `print!` through [`write`]: evaluates to `Result<(), Failure>`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(&format!($($arg)*))
    };
}

/// `println!` through [`write`]: evaluates to `Result<(), Failure>`.
macro_rules! outln {
    () => {
        $crate::out::write("\n")
    };
    ($($arg:tt)*) => {
        $crate::out::write(&format!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {out, outln};
