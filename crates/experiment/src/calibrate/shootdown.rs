//! TLB shootdowns: what one costs its sender and each receiver, on the
//! kernel backend.
//!
//! Two threads of one process. The sender maps, writes and unmaps one page
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
//! With `t` the churn's time per munmap, priced **per flush request** (per
//! munmap), not per interrupt counted:
//!
//! `shootdown.sender = t_together - t_alone`
//!
//! and with `b` the bystander's reads' time, the requests that fell while
//! they ran (`K x min(1, reads' time / churn's time)`, both phases start at
//! the same barrier):
//!
//! `shootdown.receiver = (b_together - b_alone) / requests`
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
//! on a guest, maybe a physical core). The TLB IPIs counted (system-wide)
//! only check that the two threads ran at the same time.

use super::estimate::measured;
use super::runner::{self, minus, per, Phases};
use super::{CalibrateError, Figures, Scale};

/// Fewer IPIs than this per munmap means the bystander was seldom on the
/// other CPU while the sender ran (Linux sends none to a CPU not running
/// the process, and a guest's paravirtual flush none to a preempted vCPU):
/// the difference would be noise.
const MIN_IPIS_PER_MUNMAP: f64 = 0.05;

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
    let p = runner::run(
        "shootdown",
        &workload(scale.reps(), &plan),
        scale.kernel_timeout(),
    )?;
    let k = plan.churn as f64;
    let sent = runner::mean(&ipis(&p, "x0", "x1")) / k;
    if sent < MIN_IPIS_PER_MUNMAP {
        return Err(CalibrateError::Probe {
            what: "shootdown.sender and shootdown.receiver".into(),
            message: format!(
                "not measured: the two threads were rarely running at the same time ({sent:.3} TLB IPIs per munmap, at least {MIN_IPIS_PER_MUNMAP} needed; load average {}); run calibrate on a quieter host",
                super::host_info::load_average().unwrap_or_else(|| "unknown".into())
            ),
        });
    }
    let churn_together = p.time("x0", "x1");
    let extra_time = minus(&churn_together, &p.time("u0", "u1"));
    let requests = vec![k; extra_time.len()];
    figs.put(
        "shootdown.sender",
        measured(
            &per(&extra_time, &requests),
            &format!(
                "kernel backend: {} x (mmap, write, munmap of one page) with a second thread reading on the other CPU minus the same alone, per munmap (per flush request; {sent:.2} TLB IPIs per munmap counted together)",
                plan.churn
            ),
        ),
    );
    let reads_together = p.time("y0", "y1");
    let slowed = minus(&reads_together, &p.time("v0", "v1"));
    // The requests that fell while the reads ran.
    let during: Vec<f64> = reads_together
        .iter()
        .zip(&churn_together)
        .map(|(r, c)| if *c > 0.0 { k * (r / c).min(1.0) } else { 0.0 })
        .collect();
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

    #[test]
    fn the_workloads_pass_the_format_checks_at_every_scale() {
        for scale in [Scale::Test, Scale::Quick, Scale::Long] {
            workload::parse(
                &super::runner::doubled_marks(&workload(scale.reps(), &plan(scale))),
                "s.toml",
                48,
            )
            .unwrap();
        }
    }
}
