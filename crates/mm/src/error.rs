//! The errors of the OS model, as the errno values Linux returns.

use thiserror::Error;

/// What an mm operation returns on failure: the errno Linux gives for the
/// same call, or an internal inconsistency (a bug in the model).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Errno {
    #[error("EINVAL: {0}")]
    Inval(&'static str),
    #[error("ENOMEM: {0}")]
    NoMem(&'static str),
    #[error("EEXIST: the range overlaps an existing mapping")]
    Exist,
    #[error("EFAULT: {0}")]
    Fault(&'static str),
    #[error("internal error in the mm model: {0}")]
    Internal(String),
}

impl Errno {
    /// The Linux errno number (x86-64), or -1 for an internal error.
    pub fn code(&self) -> i32 {
        match self {
            Errno::Inval(_) => 22,
            Errno::NoMem(_) => 12,
            Errno::Exist => 17,
            Errno::Fault(_) => 14,
            Errno::Internal(_) => -1,
        }
    }
}

impl From<pt::PtError> for Errno {
    fn from(e: pt::PtError) -> Errno {
        match e {
            pt::PtError::Mem(pt::MemError::OutOfMemory(_)) => Errno::NoMem("out of memory"),
            e => Errno::Internal(e.to_string()),
        }
    }
}

impl From<pt::MemError> for Errno {
    fn from(e: pt::MemError) -> Errno {
        match e {
            pt::MemError::OutOfMemory(_) => Errno::NoMem("out of memory"),
            e => Errno::Internal(e.to_string()),
        }
    }
}
