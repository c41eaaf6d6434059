//! `timing`: the modeled system's time. What the model did (accesses with
//! where their translation was found, faults by kind, system calls with the
//! pages and tables they touched, shootdowns, lock acquisitions) becomes
//! nanoseconds through a cost file, on one virtual clock per modeled CPU.
//!
//! - [`ns3`]: [`Ns3`], a duration under three evaluations of the cost file
//!   (its point figures, the low and the high ends of their intervals).
//! - [`assumed`]: the built-in cost file, every figure assumed, used when no
//!   `--costs` file is given (a calibrated file replaces it).
//! - [`model`]: [`CostModel`], every cost name resolved once into plain
//!   fields, and the linear sums that price one event.
//! - [`locks`]: [`VirtualLocks`], each lock as "free at virtual time T", so
//!   waiting and contention happen in virtual time; a hand-off's cost
//!   grows with the waiters where the lock is a ticket lock.
//! - [`bandwidth`]: [`SharedBandwidth`], the memory bandwidth all CPUs
//!   share for clearing and copying pages (each of n CPUs transferring at
//!   once gets 1/n of the machine's).
//! - [`shared`]: [`SharedLock`], a lock or line every CPU shares (the zone
//!   lock, the LRU lock, the mmap_lock's count line).
//!
//! ## Invariants
//! 1. Nothing here reads a host clock: the same events in the same order
//!    give the same nanoseconds on any host, under any load.
//! 2. Every evaluation is computed on the one schedule the point figures
//!    give (the order in which CPUs take locks is decided once); the low and
//!    high figures re-price that schedule, an approximation that keeps the
//!    interleaving fixed.
//! 3. No string lookup after [`CostModel::new`]: the hot path adds plain
//!    `f64` fields.

pub mod assumed;
pub mod bandwidth;
pub mod locks;
pub mod model;
pub mod ns3;
pub mod shared;
pub mod table_lines;

pub use bandwidth::{SharedBandwidth, Transferred};
pub use locks::{Acquired, Handoff, VirtualLocks};
pub use model::{
    shipped_file, shipped_names, CostModel, SyscallKind, BARE_METAL, SHIPPED, SHIPPED_NAME,
};
pub use ns3::Ns3;
pub use shared::{SharedLock, Taken};
pub use table_lines::TableLines;
