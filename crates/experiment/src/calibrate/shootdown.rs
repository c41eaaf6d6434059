//! TLB shootdowns: what one costs its sender and each receiver, on the
//! kernel backend.
//!
//! Two threads of one process, each pinned to a CPU of its own
//! (`runner::run_pinned`). The sender maps, writes and unmaps one page
//! K times ("churn"); each munmap must flush the page from every CPU that
//! may cache it, so while the other thread runs on the other CPU, each
//! munmap sends it an IPI. The bystander makes random reads over its own
//! memory. Each repetition has three phases, between barriers:
//!
//! 1. together: churn and reads at once;
//! 2. the churn alone (the bystander sleeps at the barrier: a sleeping CPU
//!    is lazy and gets no IPI);
//! 3. the reads alone.
//!
//! Both figures are priced **per flush request**, not per interrupt counted.
//! A munmap is a flush request to the other CPU only while the bystander
//! runs there: once its reads are done it sleeps at the barrier (lazy: no
//! request), and the rest of the churn costs what it costs alone. Both
//! phases start at the same barrier, so with `T` the churn's time and `B`
//! the reads' time when together, the requests are
//!
//! `requests = K x min(1, B / T)`
//!
//! `shootdown.sender = (T - T_alone) / requests`
//!
//! `shootdown.receiver = (B - B_alone) / requests`
//!
//! (Not divided by K, every munmap: only the requests pay it, and in
//! quiet takes 872 to 1,200 of 5,000 munmaps fell while the reads ran, so that
//! figure would be a sixth to a quarter of the per-request cost.)
//!
//! Why per request: under KVM's paravirtual TLB flush a request to a
//! preempted vCPU is deferred to its next entry instead of interrupting it,
//! so only some requests become IPIs (about a quarter on the development
//! machine); the sender's cost, waiting for the running CPUs' answers or
//! marking the others, is paid on every request. The model charges every
//! flush request that reached another CPU running the space, so the figure
//! it prices with must be per request too (dividing by the IPIs counted
//! made the sender's figure about four times too large).
//!
//! The receiver figure is an upper bound: besides the interrupts, the reads
//! share caches and memory bandwidth with the churn on the other CPU (and,
//! on a guest, maybe a physical core).
//!
//! Acceptance: the probe refuses its result when fewer than
//! [`MIN_REQUESTS_PER_MUNMAP`] of the munmaps were requests (the reads
//! overlapped too little of the churn for the difference to stand out of
//! the noise). The floor is on requests, what both figures are divided by,
//! not on the TLB IPIs counted: under a paravirtual flush a request to a
//! preempted vCPU is no interrupt, so IPIs can be rare while requests are
//! many and the figures sound (the 18:41 take was refused at 0.040 IPIs per
//! munmap). The IPIs (system-wide, /proc/interrupts) are reported in the
//! method, per request, as what share of the requests interrupted.

use super::estimate::measured;
use super::runner::{self, minus, per, Phases};
use super::{CalibrateError, Figures, Scale};

/// Fewer flush requests than this per munmap (`requests / K`) means the
/// bystander ran beside too little of the churn: the difference would be
/// noise (at the quick scale, fewer than 100 requests of 2,000 munmaps).
const MIN_REQUESTS_PER_MUNMAP: f64 = 0.05;

/// The flush requests of one repetition: the munmaps that fell while the
/// bystander's reads ran (`k x min(1, reads / churn)`, both starting at one
/// barrier); none when the churn took no time.
fn requests(k: f64, reads_ns: f64, churn_ns: f64) -> f64 {
    if churn_ns > 0.0 {
        k * (reads_ns / churn_ns).min(1.0)
    } else {
        0.0
    }
}

/// Whether `requests` per repetition of `k` munmaps are enough to measure.
fn enough_requests(k: f64, requests: f64) -> bool {
    k > 0.0 && requests / k >= MIN_REQUESTS_PER_MUNMAP
}

struct Plan {
    /// munmaps per churn phase.
    churn: u64,
    /// Random reads per bystander phase, and the bytes they range over.
    reads: u64,
    own: u64,
}

fn plan(scale: Scale) -> Plan {
    match scale {
        Scale::Test => Plan {
            churn: 500,
            reads: 20_000,
            own: 16 << 20,
        },
        Scale::Quick => Plan {
            churn: 2_000,
            reads: 100_000,
            own: 64 << 20,
        },
        Scale::Long => Plan {
            churn: 5_000,
            reads: 250_000,
            own: 64 << 20,
        },
    }
}

fn workload(reps: usize, p: &Plan) -> String {
    let Plan { churn, reads, own } = p;
    let churn_ops = format!(
        r#"{{ repeat = {churn}, op = [
        {{ mmap = "page", size = "4KiB" }},
        {{ touch = "page", access = "write" }},
        {{ munmap = "page" }},
      ] }}"#
    );
    let read_op =
        format!(r#"{{ touch = "own", access = "read", pattern = "random", count = {reads} }}"#);
    format!(
        r#"name = "calibrate-shootdown"
description = "ptlab calibrate: TLB shootdown, sender and receiver"

[[thread]]
op = [
  {{ barrier = true }},
  {{ repeat = {reps}, op = [
      {{ mark = "empty0" }},
      {{ mark = "empty" }},
      {{ barrier = true }},
      {{ mark = "x0" }},
      {churn_ops},
      {{ mark = "x1" }},
      {{ barrier = true }},
      {{ mark = "u0" }},
      {churn_ops},
      {{ mark = "u1" }},
      {{ barrier = true }},
      {{ barrier = true }},
  ] }},
]

[[thread]]
op = [
  {{ mmap = "own", size = {own} }},
  {{ touch = "own", access = "write" }},
  {{ barrier = true }},
  {{ repeat = {reps}, op = [
      {{ barrier = true }},
      {{ mark = "y0" }},
      {read_op},
      {{ mark = "y1" }},
      {{ barrier = true }},
      {{ barrier = true }},
      {{ mark = "v0" }},
      {read_op},
      {{ mark = "v1" }},
      {{ barrier = true }},
  ] }},
  {{ munmap = "own" }},
]
"#
    )
}

fn ipis(p: &Phases, from: &str, to: &str) -> Vec<f64> {
    p.count(from, to, "tlb_shootdowns")
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let plan = plan(scale);
    let p = runner::run_pinned(
        "shootdown",
        &workload(scale.reps(), &plan),
        scale.kernel_timeout(),
    )?;
    let k = plan.churn as f64;
    let churn_together = p.time("x0", "x1");
    let reads_together = p.time("y0", "y1");
    // The requests that fell while the reads ran, per repetition.
    let during: Vec<f64> = reads_together
        .iter()
        .zip(&churn_together)
        .map(|(r, c)| requests(k, *r, *c))
        .collect();
    let mean_requests = runner::mean(&during);
    let ipis_per_request = runner::mean(&ipis(&p, "x0", "x1")) / mean_requests.max(1.0);
    if !enough_requests(k, mean_requests) {
        return Err(CalibrateError::Probe {
            what: "shootdown.sender and shootdown.receiver".into(),
            message: format!(
                "not measured: the two threads were rarely running at the same time ({:.3} flush requests per munmap, at least {MIN_REQUESTS_PER_MUNMAP} needed; {ipis_per_request:.2} TLB IPIs per request; load average {}); run calibrate on a quieter host",
                mean_requests / k,
                super::host_info::load_average().unwrap_or_else(|| "unknown".into())
            ),
        });
    }
    let extra_time = minus(&churn_together, &p.time("u0", "u1"));
    figs.put(
        "shootdown.sender",
        measured(
            &per(&extra_time, &during),
            &format!(
                "kernel backend: {} x (mmap, write, munmap of one page) with a second thread reading on the other CPU (the two pinned to CPUs of their own) minus the same alone, per flush request (the munmaps that fell while the reads ran, {mean_requests:.0} per run; {ipis_per_request:.2} TLB IPIs per request counted)",
                plan.churn
            ),
        ),
    );
    let slowed = minus(&reads_together, &p.time("v0", "v1"));
    figs.put(
        "shootdown.receiver",
        measured(
            &per(&slowed, &during),
            &format!(
                "kernel backend: {} random reads over {} MiB while the other thread's munmaps shoot down this CPU's TLB minus the same reads alone, per flush request that fell while they ran ({:.0} per run); an upper bound (shared caches)",
                plan.reads,
                plan.own >> 20,
                runner::mean(&during)
            ),
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The requests are the munmaps the reads overlapped; the floor is on
    /// them, whatever share of them became IPIs.
    #[test]
    fn requests_are_the_overlapped_munmaps_and_the_floor_is_on_them() {
        assert_eq!(requests(5_000.0, 2.0e6, 8.0e6), 1_250.0);
        assert_eq!(
            requests(5_000.0, 9.0e6, 8.0e6),
            5_000.0,
            "at most every munmap"
        );
        assert_eq!(requests(5_000.0, 1.0e6, 0.0), 0.0);
        // The 17:56 take: 1,200 of 5,000 munmaps were requests (0.05 IPIs
        // per munmap): measurable, whatever the IPIs.
        assert!(enough_requests(5_000.0, 1_200.0));
        assert!(!enough_requests(5_000.0, 200.0));
        assert!(enough_requests(5_000.0, 250.0));
        assert!(!enough_requests(0.0, 0.0));
    }

    #[test]
    fn the_workloads_pass_the_format_checks_at_every_scale() {
        crate::calibrate::runner::assert_parses_at_every_scale("shootdown.toml", |scale| {
            workload(scale.reps(), &plan(scale))
        });
    }
}
