//! SIGINT and SIGTERM as a request to stop a long loop: the flag the
//! replay polls (it stops at its next check and reports what it has,
//! marked partial). The process-wide handling (children ended, files
//! removed, the exit status and line, a second signal ending ptlab at once)
//! is the `interrupt` crate's, installed in `main`; a command that polls
//! this flag holds an `interrupt::Section` across its work and its printing,
//! so the process exits only after the partial counters are out.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Exit status of a command stopped by SIGINT (128 + the signal's number,
/// as a shell reports it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Registers a flag that SIGINT and SIGTERM raise, and returns it.
///
/// # Errors
/// The handler could not be installed.
pub fn on_sigint() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&flag))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&flag))?;
    Ok(flag)
}
