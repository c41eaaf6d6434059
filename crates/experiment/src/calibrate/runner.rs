//! Running a calibration workload on the kernel backend and reading phases
//! out of its marks.
//!
//! A phase is what happens between two marks. The kernel backend reads the
//! counters at a mark *before* its clock, so the `elapsed_ns` of a phase
//! includes one counter read: tens of microseconds, and more with more
//! mappings and pages (smaps_rollup walks every VMA's page tables). So
//! [`doubled_marks`] follows every mark `X` of a calibration workload with
//! a mark `X_again`, and [`Phases::time`] measures a phase from `A_again`
//! to `B` less the empty phase `B -> B_again`: the same counter read in
//! the same state, so what is left is the operations alone. For a workload
//! without the doubled marks, the mean of the empty phase
//! `empty0 -> empty` is subtracted instead.

use std::time::Duration;

use backend::kernel::{self, KernelOptions};
use workload::result::{Counters, Run};

use super::CalibrateError;

/// The address space the calibration workloads are placed in (x86-64 with
/// four levels; their regions lie far below any 57-bit difference).
const VA_BITS: u32 = 48;

/// Parses `toml` (a workload built by a probe), with its marks doubled
/// ([`doubled_marks`]), and runs it on the kernel, killed past `timeout`.
pub fn run(what: &str, toml: &str, timeout: Duration) -> Result<Phases, CalibrateError> {
    run_on(what, toml, timeout, false)
}

/// [`run`] with each of the workload's threads pinned to a CPU of its own
/// (`KernelOptions::pin_threads`): for the probes that need two CPUs at
/// once, so that the scheduler never puts both threads on one CPU (then no
/// flush request would reach another CPU) or moves one mid-phase.
pub fn run_pinned(what: &str, toml: &str, timeout: Duration) -> Result<Phases, CalibrateError> {
    run_on(what, toml, timeout, true)
}

fn run_on(
    what: &str,
    toml: &str,
    timeout: Duration,
    pin_threads: bool,
) -> Result<Phases, CalibrateError> {
    let toml = doubled_marks(toml);
    let w = workload::parse(&toml, &format!("<calibrate {what}>"), VA_BITS).map_err(|e| {
        CalibrateError::Workload {
            what: what.to_string(),
            message: e.to_string(),
        }
    })?;
    let opts = KernelOptions {
        timeout,
        temp_dir: None,
        pin_threads,
    };
    let run = kernel::run(&w, &opts).map_err(|e| CalibrateError::Kernel {
        what: what.to_string(),
        message: e.to_string(),
    })?;
    Ok(Phases::new(run))
}

/// The marks of one run, as phases between named marks.
pub struct Phases {
    run: Run,
    /// Mean elapsed time of the empty phase `("empty0", "empty")`, in ns.
    mark_cost: f64,
}

impl Phases {
    /// Wraps `run`; its workload marks `empty0` then `empty` back to back
    /// (or not at all, and then nothing is subtracted).
    pub fn new(run: Run) -> Phases {
        let mut p = Phases {
            run,
            mark_cost: 0.0,
        };
        let empty = p.raw("empty0", "empty", "elapsed_ns");
        if !empty.is_empty() {
            p.mark_cost = empty.iter().sum::<f64>() / empty.len() as f64;
        }
        p
    }

    fn occurrences(&self, name: &str) -> Vec<&Counters> {
        self.run
            .marks
            .iter()
            .filter(|m| m.name == name)
            .map(|m| &m.counters)
            .collect()
    }

    /// `counter` over every phase from mark `from` to mark `to`: the k-th
    /// `to` minus the k-th `from`.
    pub fn raw(&self, from: &str, to: &str, counter: &str) -> Vec<f64> {
        let a = self.occurrences(from);
        let b = self.occurrences(to);
        a.iter()
            .zip(&b)
            .map(|(a, b)| {
                let v = b.get(counter).unwrap_or(0) - a.get(counter).unwrap_or(0);
                v as f64
            })
            .collect()
    }

    /// Elapsed ns of the operations of every phase `from -> to`, without
    /// the marks' own counter reads (see the module documentation).
    pub fn time(&self, from: &str, to: &str) -> Vec<f64> {
        let from_again = again(from);
        let to_again = again(to);
        if self.occurrences(&to_again).is_empty() || self.occurrences(&from_again).is_empty() {
            return self
                .raw(from, to, "elapsed_ns")
                .into_iter()
                .map(|t| t - self.mark_cost)
                .collect();
        }
        minus(
            &self.raw(&from_again, to, "elapsed_ns"),
            &self.raw(to, &to_again, "elapsed_ns"),
        )
    }
    /// The process's CPU time over every phase `from -> to` (`cpu_ns`,
    /// which leaves out the marks' counter reads): what another process
    /// took while this one was preempted is not in it, so it holds on a
    /// busy host. For phases that do not block (minor faults, populating).
    pub fn cpu_time(&self, from: &str, to: &str) -> Vec<f64> {
        self.raw(from, to, "cpu_ns")
    }

    /// A counter over every phase `from -> to` (faults, `vmpte_kb`, ...).
    pub fn count(&self, from: &str, to: &str, counter: &str) -> Vec<f64> {
        self.raw(from, to, counter)
    }
}

fn again(mark: &str) -> String {
    format!("{mark}_again")
}

/// `toml` with every `{ mark = "X" }` followed by `{ mark = "X_again" }`.
pub fn doubled_marks(toml: &str) -> String {
    let mut out = String::with_capacity(toml.len() * 2);
    let mut rest = toml;
    while let Some(at) = rest.find("{ mark = \"") {
        let Some(len) = rest[at..].find(" }") else {
            break;
        };
        let op = &rest[at..at + len + 2];
        let name = &op["{ mark = \"".len()..op.len() - 3];
        out.push_str(&rest[..at]);
        out.push_str(&format!("{op}, {{ mark = \"{}\" }}", again(name)));
        rest = &rest[at + len + 2..];
    }
    out.push_str(rest);
    out
}

/// `num[i] / den[i]` for the pairs whose denominator is positive.
pub fn per(num: &[f64], den: &[f64]) -> Vec<f64> {
    num.iter()
        .zip(den)
        .filter(|(_, d)| **d > 0.0)
        .map(|(n, d)| n / d)
        .collect()
}

/// `a[i] - b[i]`.
pub fn minus(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(a, b)| a - b).collect()
}

/// The median of `v`, `None` if empty.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// The mean of `v` (0 for an empty slice).
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Test helper: a probe's workload, made by `make` at every scale, passes
/// the format's checks as [`run`] gives it to the kernel backend (marks
/// doubled).
#[cfg(test)]
pub fn assert_parses_at_every_scale(name: &str, make: impl Fn(super::Scale) -> String) {
    use super::Scale;
    for scale in [Scale::Test, Scale::Quick, Scale::Long] {
        if let Err(e) = workload::parse(&doubled_marks(&make(scale)), name, 48) {
            panic!("{name} at {scale:?}: {e:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::result::Mark;

    fn mark(name: &str, elapsed: i64, faults: i64) -> Mark {
        let mut c = Counters::default();
        c.set("elapsed_ns", elapsed);
        c.set("minor_faults", faults);
        Mark {
            name: name.into(),
            counters: c,
            latency: None,
        }
    }

    #[test]
    fn phases_pair_marks_in_order_and_subtract_the_mark_cost() {
        let run = Run {
            marks: vec![
                mark("empty0", 0, 0),
                mark("empty", 10, 0),
                mark("a", 110, 0),
                mark("b", 1110, 100),
                mark("empty0", 2000, 100),
                mark("empty", 2030, 100),
                mark("a", 2100, 100),
                mark("b", 2600, 150),
            ],
        };
        let p = Phases::new(run);
        assert_eq!(p.mark_cost, 20.0);
        assert_eq!(p.time("a", "b"), vec![980.0, 480.0]);
        assert_eq!(p.count("a", "b", "minor_faults"), vec![100.0, 50.0]);
        let per_fault = per(&p.time("a", "b"), &p.count("a", "b", "minor_faults"));
        assert_eq!(per_fault, vec![9.8, 9.6]);
    }

    #[test]
    fn doubled_marks_time_the_operations_alone() {
        let text = doubled_marks("op = [ { mark = \"a\" }, { touch = \"x\" }, { mark = \"b\" } ]");
        assert_eq!(
            text,
            "op = [ { mark = \"a\" }, { mark = \"a_again\" }, { touch = \"x\" }, { mark = \"b\" }, { mark = \"b_again\" } ]"
        );
        // Reads cost 30 ns at a, 70 ns at b (more mappings); the touch 500.
        let run = Run {
            marks: vec![
                mark("a", 0, 0),
                mark("a_again", 30, 0),
                mark("b", 600, 0),
                mark("b_again", 670, 0),
            ],
        };
        assert_eq!(Phases::new(run).time("a", "b"), vec![500.0]);
    }
}
