//! How a command fails: bad input (exit 2, one line saying what and where), a
//! failed check (exit 1), an internal error (exit 1 with the chain of
//! causes), or a reader of stdout that went away (exit 0, silently).

use std::fmt::Display;
use std::io;
use std::process::ExitCode;

pub enum Failure {
    /// The user's input is wrong: exit 2.
    BadInput(String),
    /// Something went wrong while running: exit 1.
    Error(anyhow::Error),
    /// Stdout was closed by its reader (`| head`): exit 0, no message.
    Closed,
}

impl Failure {
    /// An error writing to stdout (see `out`): a closed pipe is
    /// [`Failure::Closed`], anything else an error.
    pub fn from_stdout(e: io::Error) -> Failure {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::Closed
        } else {
            Failure::Error(anyhow::Error::new(e).context("cannot write to stdout"))
        }
    }

    pub fn report(self) -> ExitCode {
        match self {
            Failure::BadInput(m) => {
                eprintln!("error: {m}");
                ExitCode::from(2)
            }
            Failure::Error(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
            Failure::Closed => ExitCode::SUCCESS,
        }
    }
}

/// Converts any displayable error into bad input.
pub fn bad<E: Display>(e: E) -> Failure {
    Failure::BadInput(e.to_string())
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Error(e)
    }
}

pub type CmdResult = Result<ExitCode, Failure>;
