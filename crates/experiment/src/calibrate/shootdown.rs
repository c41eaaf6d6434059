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
//! With `t` the churn's time per munmap, `i` the IPIs per munmap (the
//! kernel's TLB line of /proc/interrupts, all CPUs):
//!
//! `shootdown.sender = (t_together - t_alone) / (i_together - i_alone)`
//!
//! and with `b` the bystander's reads' time and `j` the IPIs while they ran:
//!
//! `shootdown.receiver = (b_together - b_alone) / j_together`
//!
//! The receiver figure is an upper bound: besides the interrupts, the reads
//! share caches and memory bandwidth with the churn on the other CPU (and,
//! on a guest, maybe a physical core). The counter is system-wide, so other
//! processes' shootdowns add noise to both.

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
    let extra_time = minus(&p.time("x0", "x1"), &p.time("u0", "u1"));
    let extra_ipis = minus(&ipis(&p, "x0", "x1"), &ipis(&p, "u0", "u1"));
    figs.put(
        "shootdown.sender",
        measured(
            &per(&extra_time, &extra_ipis),
            &format!(
                "kernel backend: {} x (mmap, write, munmap of one page) with a second thread reading on the other CPU minus the same alone, over the extra TLB IPIs ({sent:.2} per munmap together)",
                plan.churn
            ),
        ),
    );
    let slowed = minus(&p.time("y0", "y1"), &p.time("v0", "v1"));
    let received = ipis(&p, "y0", "y1");
    figs.put(
        "shootdown.receiver",
        measured(
            &per(&slowed, &received),
            &format!(
                "kernel backend: {} random reads over {} MiB while the other thread's munmaps shoot down this CPU's TLB minus the same reads alone, over the IPIs received meanwhile ({:.0} per run); an upper bound (shared caches)",
                plan.reads,
                plan.own >> 20,
                runner::mean(&received)
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
