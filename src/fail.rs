//! How a command fails: bad input (exit 2, one line saying what and where), a
//! failed check (exit 1) or an internal error (exit 1 with the chain of causes).

use std::fmt::Display;
use std::process::ExitCode;

pub enum Failure {
    /// The user's input is wrong: exit 2.
    BadInput(String),
    /// Something went wrong while running: exit 1.
    Error(anyhow::Error),
}

impl Failure {
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
