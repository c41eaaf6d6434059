//! [`MemoryChannel`]: the memory bandwidth every modeled CPU shares.
//!
//! Clearing and copying pages (a fault's new page, a THP's 2 MiB, a COW
//! copy) is priced per CPU by the fault figures, which a single CPU
//! measures: a CPU alone has the machine's bandwidth to itself. With many
//! CPUs clearing at once the machine's memory system is the limit: 80 CPUs
//! each storing at 10 GB/s ask for more than a 2013 four-socket server's
//! memory delivers. The channel serves transfers first come, first served
//! at `mem.bandwidth_kib` nanoseconds per KiB for the whole machine; a
//! transfer that finds it busy queues, and the event that made it cannot
//! end before its transfer does.
//!
//! ## Invariants
//! 1. The channel's free instant only moves forward, so the machine never
//!    moves more than one KiB per `mem.bandwidth_kib` (its throughput).
//! 2. A transfer's queueing is decided on the point figures (crate
//!    invariant 2); the low and high figures re-price the same order.

use crate::ns3::Ns3;

/// The machine's memory bandwidth in virtual time (module documentation).
#[derive(Debug, Default)]
pub struct MemoryChannel {
    free: Ns3,
}

impl MemoryChannel {
    pub fn new() -> MemoryChannel {
        MemoryChannel::default()
    }

    /// A transfer of `kib` KiB that a CPU starts at `start`, the channel
    /// moving a KiB per `per_kib`: the instant it is done.
    pub fn transfer(&mut self, start: Ns3, kib: f64, per_kib: Ns3) -> Ns3 {
        let begin = start.max(self.free);
        self.free = begin + per_kib * kib;
        self.free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_at_once_queue_and_the_throughput_is_the_channels() {
        let mut c = MemoryChannel::new();
        let per = Ns3::same(10.0);
        // Eight CPUs start 2 KiB each at 0: the last is done after all
        // 16 KiB went through.
        let done: Vec<f64> = (0..8).map(|_| c.transfer(Ns3::ZERO, 2.0, per).ns).collect();
        assert_eq!(done[0], 20.0);
        assert_eq!(done[7], 160.0);
        // One that starts after the channel went idle does not wait.
        assert_eq!(c.transfer(Ns3::same(1000.0), 1.0, per).ns, 1010.0);
    }
}
