//! The backends that run a workload: `kernel` (Linux only, real system calls
//! in a child process) and the model, behind one result type
//! ([`workload::result::Run`]).

#[cfg(target_os = "linux")]
pub mod kernel;
pub mod touch;
