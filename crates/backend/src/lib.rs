//! The backends that run a workload: `kernel` (Linux only, real system calls
//! in a child process) and `model` (the page-table, MMU and mm models in
//! this process), behind one result type ([`workload::result::Run`]).

pub mod abi;
#[cfg(target_os = "linux")]
pub mod kernel;
mod latency;
pub mod model;
pub mod replay;
pub mod touch;
