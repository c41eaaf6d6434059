//! The counters `validate` shows side by side without holding the model to
//! them: the ones the kernel backend reads but the registry does not mark
//! compared, because the kernel's value is not a function of the workload
//! alone (`tlb_shootdowns` is read from /proc/interrupts, the whole system's,
//! and depends on where the scheduler put each thread when a flush was sent).
//!
//! Invariants:
//! - the observed set is exactly the registry's single counters that the
//!   kernel samples at every mark and that are not compared
//!   ([`observed_counters`]); nothing is listed here by name;
//! - each is taken at the end mark of every run (the implicit `end`, the
//!   last mark), and the kernel's spread is the range `[min, max]` of its
//!   runs' values;
//! - a warning is given exactly when the model's value lies outside that
//!   range, and it always carries a reason;
//! - nothing here changes a verdict: warnings never make `validate` fail.

use counters::{Counter, Members, Source};
use serde::Serialize;
use stats::{Quantity, Summary};
use workload::result::Run;

/// Kernel runs `validate` makes of a workload whose observed counters are
/// not all zero: enough to show a spread, few enough to keep validate quick.
pub const KERNEL_RUNS: usize = 3;

/// The names of the counters observed side by side, in registry order.
pub fn observed_counters() -> Vec<&'static str> {
    counters::ALL
        .iter()
        .filter(|c| is_observed(c))
        .map(|c| c.name)
        .collect()
}

fn is_observed(c: &Counter) -> bool {
    !c.compared && c.source.kernel_sampled() && c.members == Members::One
}

/// The kernel's values of one counter over its runs, and their summary
/// (`n`, `mean`, `median`, `min`, `max`, `stddev`, `interval`, ...).
#[derive(Debug, Clone, Serialize)]
pub struct KernelSpread {
    /// One value per kernel run, in run order.
    pub samples: Vec<i64>,
    #[serde(flatten)]
    pub summary: Summary,
}

impl KernelSpread {
    /// The values of `samples`, summarised as counts.
    ///
    /// # Panics
    /// If `samples` is empty or holds a negative value (a counter read as a
    /// difference from the run's baseline cannot be negative).
    pub fn of(samples: Vec<i64>) -> KernelSpread {
        let v: Vec<f64> = samples.iter().map(|&x| x as f64).collect();
        let summary = Summary::of_quantity(&v, Quantity::Count)
            .expect("at least one run, and counts are not negative");
        KernelSpread { samples, summary }
    }

    /// The range of the runs' values.
    pub fn range(&self) -> (i64, i64) {
        let min = self.samples.iter().copied().min().unwrap_or(0);
        let max = self.samples.iter().copied().max().unwrap_or(0);
        (min, max)
    }
}

/// One observed counter of one workload: the kernel's runs beside the model.
#[derive(Debug, Clone, Serialize)]
pub struct Observed {
    pub counter: String,
    pub mark: String,
    pub kernel: KernelSpread,
    pub model: i64,
    /// Why the model lies outside the kernel's spread; `None` when it lies
    /// within.
    pub warning: Option<String>,
}

/// What validate knows of the machine, to give a reason for a difference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Machine {
    /// What says this kernel runs in a virtual machine (a DMI vendor, the
    /// hypervisor type, the CPU's hypervisor flag); `None` if nothing does.
    pub hypervisor: Option<String>,
}

impl Machine {
    /// The facts of `fp`.
    pub fn of(fp: &host::Fingerprint) -> Machine {
        let h = &fp.hypervisor;
        let hypervisor = (h.present == Some(true)).then(|| {
            h.dmi_vendor
                .clone()
                .or_else(|| h.sys_type.clone())
                .unwrap_or_else(|| "the CPU's hypervisor flag is set".into())
        });
        Machine { hypervisor }
    }
}

/// Whether any observed counter is nonzero at the end mark of `run`: the
/// kernel side is then worth running [`KERNEL_RUNS`] times.
pub fn any_nonzero(run: &Run) -> bool {
    let Some(end) = run.marks.last() else {
        return false;
    };
    observed_counters()
        .iter()
        .any(|c| end.counters.get(c).is_some_and(|v| v != 0))
}

/// The observed counters at the end mark of `model` beside their values in
/// the `kernel` runs. A counter the kernel could not read in some run (the
/// host hides /proc/interrupts) or the model does not have is left out.
pub fn observe(kernel: &[Run], model: &Run, machine: &Machine) -> Vec<Observed> {
    let Some(model_end) = model.marks.last() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for name in observed_counters() {
        let samples: Option<Vec<i64>> = kernel
            .iter()
            .map(|r| r.marks.last().and_then(|m| m.counters.get(name)))
            .collect();
        let (Some(samples), Some(m)) = (samples, model_end.counters.get(name)) else {
            continue;
        };
        if samples.is_empty() {
            continue;
        }
        let spread = KernelSpread::of(samples);
        let counter = counters::lookup(name).expect("observed counters are registered");
        out.push(Observed {
            counter: name.to_string(),
            mark: model_end.name.clone(),
            warning: warning(counter, m, &spread, machine),
            kernel: spread,
            model: m,
        });
    }
    out
}

/// The warning for `model` against the kernel's `spread`: `None` within it,
/// otherwise where the model lies and the likely causes.
pub fn warning(
    counter: &Counter,
    model: i64,
    spread: &KernelSpread,
    machine: &Machine,
) -> Option<String> {
    let (min, max) = spread.range();
    let runs = spread.samples.len();
    let range = if min == max {
        format!("{min} in {}", runs_text(runs))
    } else {
        format!("{min} to {max} over {}", runs_text(runs))
    };
    let (side, why) = if model > max {
        ("above", reason_above(counter, machine))
    } else if model < min {
        ("below", reason_below(counter))
    } else {
        return None;
    };
    Some(format!(
        "the model's {model} is {side} the kernel's {range}: {why}"
    ))
}

fn runs_text(n: usize) -> String {
    if n == 1 {
        "1 run".into()
    } else {
        format!("{n} runs")
    }
}

/// Why the model may count more than the kernel.
fn reason_above(counter: &Counter, machine: &Machine) -> String {
    if counter.name != counters::TLB_SHOOTDOWNS.name {
        return "the kernel's value depends on more than the workload (possible cause)".into();
    }
    // Linux: arch/x86/mm/tlb.c, native_flush_tlb_multi skips lazy CPUs.
    let mut why = String::from(
        "the model sends one IPI to every other CPU on which the address space is active, \
         at every flush; Linux sends none to a CPU that is idle in lazy TLB mode or runs \
         another process (a thread asleep at a barrier costs no interrupt)",
    );
    match &machine.hypervisor {
        Some(evidence) => why.push_str(&format!(
            "; and this kernel runs in a virtual machine ({evidence}), where a paravirtual \
             remote TLB flush (KVM's PV_TLB_FLUSH) marks a preempted vCPU to flush when it \
             runs again instead of interrupting it (possible causes)"
        )),
        None => why.push_str(" (possible cause)"),
    }
    why
}

/// Why the model may count less than the kernel.
fn reason_below(counter: &Counter) -> String {
    match counter.source {
        Source::Interrupts(line) => format!(
            "the kernel's count is the whole system's (/proc/interrupts, line {line}, all \
             CPUs), so other processes' flushes are counted with the workload's; rerun on a \
             quiet machine to see fewer of them"
        ),
        Source::Vmstat(line) => format!(
            "the kernel's count is the whole system's (/proc/vmstat, line {line}), so what \
             khugepaged or other processes did meanwhile is counted with the workload's"
        ),
        _ => "the kernel's value depends on more than the workload (possible cause)".into(),
    }
}
