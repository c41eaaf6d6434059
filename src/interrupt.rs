//! SIGINT as a request to stop: the first Ctrl-C raises a flag that the
//! long loop polls (it then stops at its next check and reports what it
//! has, marked partial); a second one ends the process at once (exit
//! status 1), for a loop that does not get to its check.
//!
//! One module for every command that wants this, on signal-hook (the
//! handler only stores to an atomic, which is async-signal-safe).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Exit status of a command stopped by SIGINT (128 + the signal's number,
/// as a shell reports it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Installs the handlers; returns the flag the first SIGINT raises.
///
/// # Errors
/// The handler could not be installed.
pub fn on_sigint() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    // Registered first, so a second SIGINT (the flag already up) exits.
    signal_hook::flag::register_conditional_shutdown(
        signal_hook::consts::SIGINT,
        1,
        Arc::clone(&flag),
    )?;
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&flag))?;
    Ok(flag)
}
