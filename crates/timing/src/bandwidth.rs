//! [`SharedBandwidth`]: the machine's memory bandwidth, which every
//! modeled CPU that clears or copies pages at the same time shares.
//!
//! Every fault that allocates clears its new memory (Linux: mm/memory.c,
//! `do_anonymous_page` -> `clear_page` for 4 KiB; mm/huge_memory.c,
//! `__do_huge_pmd_anonymous_page` -> `clear_huge_page` for a THP's 2 MiB)
//! and a COW fault copies one (`wp_page_copy` -> `copy_user_highpage`).
//! The fault figures were measured by one CPU alone, so each holds its
//! clear at one CPU's speed (for a THP's 2 MiB almost the whole figure:
//! `fault.thp` on the development guest is 130 ns per KiB, its memset to
//! memory 112). With many CPUs clearing at once the machine's memory
//! system is the limit instead.
//!
//! A transfer of `kib` KiB that a CPU starts at `start`, which would take
//! `own` alone, takes `max(own, n x kib x per_kib)`: `per_kib` is the whole
//! machine's time per KiB (`mem.bandwidth_kib`) and `n` is one plus the
//! other CPUs whose transfers are still in flight at `start`: each of `n`
//! concurrent transfers gets `1/n` of the aggregate bandwidth (processor
//! sharing, decided when the transfer starts). What it adds to its event is
//! the difference with `own`, which the fault's figure already holds.
//!
//! ## Invariants
//! 1. A CPU alone (no other CPU's transfer in flight) is never slowed when
//!    its own speed is below the machine's (`own >= kib x per_kib`): the
//!    resource adds nothing to a one-CPU run.
//! 2. `n` is decided on the point figures (crate invariant 2); the low and
//!    high evaluations re-price the same sharing with their own figures.
//! 3. The share of a transfer is fixed when it starts; transfers already
//!    placed are not slowed by one that starts later (an event, once
//!    placed, keeps its end). In a steady state of `n` CPUs clearing, each
//!    sees `n - 1` others in flight, so the machine moves one KiB per
//!    `per_kib`; in a ramp (many CPUs starting at one instant) the first
//!    to start gets more than its share.
//! 4. Nothing here reads a host clock: the same calls in the same order
//!    give the same figures.

use crate::ns3::Ns3;

/// The machine's memory bandwidth in virtual time (module documentation).
#[derive(Debug, Default)]
pub struct SharedBandwidth {
    /// Transfers in flight: the CPU and the instant (point figure) its
    /// transfer ends. At most one per CPU.
    flight: Vec<(usize, f64)>,
    /// Transfers that found another CPU's in flight, so far.
    pub shared: u64,
}

/// What one transfer did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transferred {
    /// How long the transfer took.
    pub took: Ns3,
    /// `took - own`: what sharing the bandwidth added to the event.
    pub extra: Ns3,
    /// Transfers in flight, this one included (`n`).
    pub sharing: usize,
}

impl SharedBandwidth {
    pub fn new() -> SharedBandwidth {
        SharedBandwidth::default()
    }

    /// `cpu` starts moving `kib` KiB at `start`, which takes it `own` alone;
    /// the machine moves one KiB per `per_kib`.
    pub fn transfer(
        &mut self,
        cpu: usize,
        start: Ns3,
        kib: f64,
        own: Ns3,
        per_kib: Ns3,
    ) -> Transferred {
        // A CPU's earlier transfer has ended when its next event starts
        // (events of one CPU are placed one after the other), and those of
        // other CPUs that ended before `start` no longer share. One that
        // ends at `start` itself still counts: a CPU clearing back to back
        // (a THP fault is almost all clear) is transferring at that
        // instant, and its next transfer replaces the entry.
        if !self.flight.is_empty() {
            self.flight.retain(|&(c, end)| c != cpu && end >= start.ns);
        }
        let n = self.flight.len() + 1;
        if n > 1 {
            self.shared += 1;
        }
        let share = per_kib * (kib * n as f64);
        let took = own.max(share);
        self.flight.push((cpu, start.ns + took.ns));
        Transferred {
            took,
            extra: took.saturating_sub(own),
            sharing: n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU clears 2 MiB at 100 ns per KiB alone; the machine moves a
    /// KiB per 10 ns: ten CPUs saturate it.
    const KIB: f64 = 2048.0;
    const OWN: Ns3 = Ns3::same(204_800.0);
    const MACHINE: Ns3 = Ns3::same(10.0);

    #[test]
    fn one_cpu_alone_is_unchanged() {
        let mut b = SharedBandwidth::new();
        let mut t = Ns3::ZERO;
        for _ in 0..100 {
            let x = b.transfer(0, t, KIB, OWN, MACHINE);
            assert_eq!(x.took, OWN);
            assert_eq!(x.extra, Ns3::ZERO);
            assert_eq!(x.sharing, 1);
            t += x.took;
        }
        assert_eq!(b.shared, 0);
    }

    #[test]
    fn n_cpus_clearing_at_once_each_take_n_times_the_machines_time() {
        for n in [2usize, 10, 20, 40, 80] {
            let mut b = SharedBandwidth::new();
            let mut clock = vec![Ns3::ZERO; n];
            // Many rounds, each CPU starting its next clear when its last
            // one ends (the executor steps the CPU with the smallest clock).
            for _ in 0..50 * n {
                let cpu = (0..n)
                    .min_by(|&a, &c| clock[a].ns.total_cmp(&clock[c].ns))
                    .unwrap();
                let at = clock[cpu];
                clock[cpu] += b.transfer(cpu, at, KIB, OWN, MACHINE).took;
            }
            // The steady state: every CPU sees the n - 1 others in flight.
            let last = b.transfer(0, clock[0], KIB, OWN, MACHINE);
            assert_eq!(last.sharing, n);
            let expected = (KIB * MACHINE.ns * n as f64).max(OWN.ns);
            assert_eq!(last.took.ns, expected, "n = {n}");
            // Saturated (n x 20,480 ns >= 204,800 ns from n = 10): the
            // machine's throughput is its bandwidth, within the ramp.
            if n >= 10 {
                let makespan = clock.iter().fold(0.0f64, |m, c| m.max(c.ns));
                let moved = KIB * 50.0 * n as f64;
                let rate = makespan / moved;
                assert!(
                    (MACHINE.ns * 0.95..=MACHINE.ns * 1.05).contains(&rate),
                    "{rate}"
                );
            }
        }
    }

    #[test]
    fn below_saturation_each_cpu_keeps_its_own_speed() {
        let mut b = SharedBandwidth::new();
        for cpu in 0..5 {
            let x = b.transfer(cpu, Ns3::ZERO, KIB, OWN, MACHINE);
            assert_eq!(x.sharing, cpu + 1);
            assert_eq!(x.took, OWN);
        }
    }

    #[test]
    fn the_same_calls_give_the_same_figures() {
        let run = || {
            let mut b = SharedBandwidth::new();
            let per = Ns3 {
                ns: 10.0,
                lo: 7.0,
                hi: 15.0,
            };
            (0..1000)
                .map(|i| {
                    let start = Ns3::same((i * 7919 % 100_000) as f64);
                    b.transfer(i % 16, start, 4.0 + (i % 3) as f64, Ns3::same(400.0), per)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn low_and_high_figures_share_as_the_point_figure_decides() {
        let per = Ns3 {
            ns: 10.0,
            lo: 5.0,
            hi: 20.0,
        };
        let mut b = SharedBandwidth::new();
        for cpu in 0..19 {
            b.transfer(cpu, Ns3::ZERO, KIB, OWN, per);
        }
        let x = b.transfer(19, Ns3::ZERO, KIB, OWN, per);
        assert_eq!(x.sharing, 20);
        assert_eq!(x.took.lo, (KIB * 5.0 * 20.0).max(OWN.lo));
        assert_eq!(x.took.hi, KIB * 20.0 * 20.0);
    }
}
