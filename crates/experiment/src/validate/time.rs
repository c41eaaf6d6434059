//! `validate --time`: the model's predicted time against the kernel's
//! measured time, workload by workload.
//!
//! Each case runs `repeat` times on the kernel and as many on the model,
//! alternating (kernel, model, kernel, model, ...) so that a change of the
//! host's load during the sitting falls on both sides' neighbourhood.
//!
//! - **measured**: a kernel run's `elapsed_ns` at its end mark minus its
//!   `mark_read_ns` (what its marks spent reading the counters: a mark reads
//!   before its clock, so that time is inside `elapsed_ns` but is not the
//!   workload's). The case's figure is the median over the runs with an
//!   order-statistic interval ([`stats::median_interval`], coverage named).
//! - **predicted**: the model run's `predicted_ns` at its end mark (the
//!   makespan in virtual time) with `[predicted_lo_ns, predicted_hi_ns]`,
//!   the cost file's intervals. The model is deterministic, so every model
//!   run of a case predicts the same; a difference is reported as a bug.
//! - **error**: `(predicted - measured) / measured`, in percent.
//!
//! A case whose time is dominated by what one calibrate probe measures
//! with (nearly) the same operations is **calibration-like**
//! ([`calibration_like`]): predicting it tests little, so it is shown but
//! left out of the held-out summary.
//!
//! Invariants: the summary counts only held-out cases; counts are integers;
//! nothing here depends on host time but the kernel's measurements.

use crate::config::RunConfig;
use crate::exec::{self, ExecError, ExecOptions};
use serde::Serialize;
use stats::MedianInterval;
use workload::plan::Workload;
use workload::result::Run;

/// One workload at one thread count, ready to run on either backend.
pub struct Case {
    /// The workload's name (`multi-fault`).
    pub workload: String,
    /// Workload threads.
    pub threads: usize,
    /// The text to parse (a built-in's, its thread count changed).
    text: String,
    origin: String,
}

impl Case {
    fn parse(&self, cfg: &RunConfig) -> Result<Workload, ExecError> {
        Ok(workload::parse(
            &self.text,
            &self.origin,
            exec::va_bits_of(cfg),
        )?)
    }
}

/// The cases of `validate --time`: every workload of the validation suite
/// as written, then every built-in: at 1 and 2 threads when it has one
/// kind of thread with a `count`, as written otherwise.
pub fn default_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (name, text) in workload::validate_suite() {
        out.push(case_of(name, text, None));
    }
    for (name, _, _) in workload::builtin::list() {
        let text = workload::builtin::get(name).expect("listed");
        // A built-in the suite also holds (dontneed-reclaim) is there
        // already at the suite's thread count.
        let in_suite = workload::builtin::get_validate(name).is_some();
        if scalable(text) {
            for t in [1, 2] {
                let c = case_of(name, text, Some(t));
                // A workload whose threads share a region it changes
                // (dontneed-reclaim) is not one the format lets run twice.
                if workload::parse(&c.text, &c.origin, 48).is_err() {
                    continue;
                }
                if !(in_suite
                    && out
                        .iter()
                        .any(|o: &Case| o.workload == name && o.threads == t))
                {
                    out.push(c);
                }
            }
        } else if !in_suite {
            out.push(case_of(name, text, None));
        }
    }
    out
}

/// The cases of the workloads `names` (built-in, suite or file), as
/// written.
///
/// # Errors
/// A name that is neither a known workload nor a readable file.
pub fn cases_of(names: &[String]) -> Result<Vec<Case>, ExecError> {
    names
        .iter()
        .map(|n| {
            let text =
                match workload::builtin::get(n).or_else(|| workload::builtin::get_validate(n)) {
                    Some(t) => t.to_string(),
                    None => {
                        // Checked by the loader first, for its message.
                        workload::load(n, 48)?;
                        std::fs::read_to_string(n)
                            .map_err(|e| ExecError::Model(format!("cannot read {n}: {e}")))?
                    }
                };
            let w = workload::parse(&text, n, 48)?;
            Ok(Case {
                workload: w.name.clone(),
                threads: w.threads.len(),
                text,
                origin: n.clone(),
            })
        })
        .collect()
}

/// Whether `text` has exactly one `[[thread]]` table and it has a `count`.
fn scalable(text: &str) -> bool {
    let tables = text.lines().filter(|l| l.trim() == "[[thread]]").count();
    tables == 1 && count_line(text).is_some()
}

fn count_line(text: &str) -> Option<usize> {
    text.lines().position(|l| {
        let l = l.trim();
        l.starts_with("count") && l["count".len()..].trim_start().starts_with('=')
    })
}

fn case_of(name: &str, text: &str, threads: Option<usize>) -> Case {
    let (text, origin) = match threads {
        Some(t) => {
            let at = count_line(text).expect("scalable");
            let lines: Vec<String> = text
                .lines()
                .enumerate()
                .map(|(i, l)| {
                    if i == at {
                        format!("count = {t}")
                    } else {
                        l.to_string()
                    }
                })
                .collect();
            (
                lines.join("\n"),
                format!("<built-in {name}, {t} thread(s)>"),
            )
        }
        None => (text.to_string(), format!("<built-in {name}>")),
    };
    let threads = threads
        .unwrap_or_else(|| workload::parse(&text, &origin, 48).map_or(1, |w| w.threads.len()));
    Case {
        workload: name.to_string(),
        threads,
        text,
        origin,
    }
}

/// The calibrate probe a workload repeats, if it does (see the module
/// documentation): `(workload, the figure it would test)`.
pub const CALIBRATION_LIKE: &[(&str, &str)] = &[
    (
        "anon-write",
        "fault.anon_write: writes to every page of fresh anonymous memory",
    ),
    (
        "pagefault",
        "fault.anon_write: writes to every page of fresh anonymous memory",
    ),
    (
        "anon-read-zero-page",
        "fault.zero_read: reads of every page of fresh anonymous memory",
    ),
    (
        "file-private",
        "fault.file_read and fault.cow: reads, then writes, of a private mapping of a cached file",
    ),
    ("shmem", "fault.shmem: writes to a fresh shmem mapping"),
    (
        "thp-fault",
        "fault.thp: writes to a region advised hugepage",
    ),
    (
        "tlb-shootdown",
        "shootdown.sender and .receiver: map, write, unmap one page while a second thread reads",
    ),
];

/// What calibrate probe `workload` repeats, if any.
pub fn calibration_like(workload: &str) -> Option<&'static str> {
    CALIBRATION_LIKE
        .iter()
        .find(|(w, _)| *w == workload)
        .map(|(_, why)| *why)
}

/// The predicted time of one model run: `(ns, lo, hi)` at its end mark.
pub fn predicted(run: &Run) -> Option<(f64, f64, f64)> {
    let end = run.marks.last()?;
    let g = |n: &str| end.counters.get(n).map(|v| v as f64);
    Some((
        g(counters::PREDICTED_NS.name)?,
        g(counters::PREDICTED_LO_NS.name)?,
        g(counters::PREDICTED_HI_NS.name)?,
    ))
}

/// The measured time of one kernel run: `elapsed_ns - mark_read_ns` at its
/// end mark (see the module documentation).
pub fn measured(run: &Run) -> Option<f64> {
    let end = run.marks.last()?;
    let elapsed = end.counters.get(counters::ELAPSED_NS.name)?;
    let read = end.counters.get(counters::MARK_READ_NS.name).unwrap_or(0);
    Some((elapsed - read).max(0) as f64)
}

/// A kernel run's CPU time: `cpu_ns` at its end mark (the process's CPU
/// time, every thread's, less the marks' counter reads; what other
/// processes took is not in it, so it means something on a busy host; for
/// several threads it is their sum, not the elapsed time).
pub fn measured_cpu(run: &Run) -> Option<f64> {
    let end = run.marks.last()?;
    end.counters
        .get(counters::CPU_NS.name)
        .map(|v| v.max(0) as f64)
}

/// The verdict on one case.
#[derive(Debug, Clone, Serialize)]
pub struct TimeCase {
    pub workload: String,
    pub threads: usize,
    /// Each kernel run's measured ns, in run order.
    pub measured_runs: Vec<f64>,
    /// Their median and its order-statistic interval.
    pub measured: MedianInterval,
    /// Each run's marks' counter reads taken out (ns, in run order).
    pub mark_read_runs: Vec<f64>,
    pub predicted_ns: f64,
    pub predicted_lo_ns: f64,
    pub predicted_hi_ns: f64,
    /// `(predicted - measured median) / measured median`, percent.
    pub error_pct: f64,
    /// The calibrate probe this case repeats, if it does (then it is not
    /// held out).
    pub calibration_like: Option<&'static str>,
    /// The kernel runs' CPU time ([`measured_cpu`]), its median and the
    /// prediction's error against it (one-thread cases that do not sleep:
    /// for several threads the CPU time is a sum, and a sleep is no CPU
    /// time, so neither compares).
    pub cpu: Option<CpuTime>,
}

/// The kernel's CPU time of a case, beside the prediction.
#[derive(Debug, Clone, Serialize)]
pub struct CpuTime {
    pub runs: Vec<f64>,
    pub median: MedianInterval,
    pub error_pct: f64,
}

impl TimeCase {
    /// The case from its kernel runs' measured times and the model's
    /// prediction `(ns, lo, hi)`.
    ///
    /// # Panics
    /// If `measured_runs` is empty or holds a non-finite value.
    pub fn new(
        workload: &str,
        threads: usize,
        measured_runs: Vec<f64>,
        mark_read_runs: Vec<f64>,
        predicted: (f64, f64, f64),
    ) -> TimeCase {
        let measured =
            stats::median_interval(&measured_runs).expect("at least one finite kernel run");
        let error_pct = if measured.median > 0.0 {
            (predicted.0 - measured.median) / measured.median * 100.0
        } else {
            f64::INFINITY
        };
        TimeCase {
            workload: workload.to_string(),
            threads,
            measured_runs,
            measured,
            mark_read_runs,
            predicted_ns: predicted.0,
            predicted_lo_ns: predicted.1,
            predicted_hi_ns: predicted.2,
            error_pct,
            calibration_like: calibration_like(workload),
            cpu: None,
        }
    }

    /// With the kernel runs' CPU times (one-thread cases only).
    pub fn with_cpu(mut self, runs: Vec<f64>) -> TimeCase {
        if self.threads == 1 && !runs.is_empty() {
            if let Ok(median) = stats::median_interval(&runs) {
                let error_pct = if median.median > 0.0 {
                    (self.predicted_ns - median.median) / median.median * 100.0
                } else {
                    f64::INFINITY
                };
                self.cpu = Some(CpuTime {
                    runs,
                    median,
                    error_pct,
                });
            }
        }
        self
    }

    /// Whether the measured interval and the predicted one overlap.
    pub fn intervals_overlap(&self) -> bool {
        self.predicted_lo_ns <= self.measured.hi && self.measured.lo <= self.predicted_hi_ns
    }
}

/// The held-out cases summarised.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HeldOut {
    /// Held-out cases (not calibration-like).
    pub cases: usize,
    /// The median of their |error|, percent (`None` without a case).
    pub median_abs_error_pct: Option<f64>,
    pub within_15: usize,
    pub within_30: usize,
    /// Cases whose measured and predicted intervals overlap.
    pub overlapping: usize,
}

/// The summary of `cases` (calibration-like ones left out).
pub fn held_out(cases: &[TimeCase]) -> HeldOut {
    let held: Vec<&TimeCase> = cases
        .iter()
        .filter(|c| c.calibration_like.is_none())
        .collect();
    let errs: Vec<f64> = held.iter().map(|c| c.error_pct.abs()).collect();
    summarise(&errs, held.iter().filter(|c| c.intervals_overlap()).count())
}

/// The same summary against the kernel's CPU time, over the held-out
/// cases that have it (one thread).
pub fn held_out_cpu(cases: &[TimeCase]) -> HeldOut {
    let errs: Vec<f64> = cases
        .iter()
        .filter(|c| c.calibration_like.is_none())
        .filter_map(|c| c.cpu.as_ref())
        .map(|c| c.error_pct.abs())
        .collect();
    summarise(&errs, 0)
}

fn summarise(errs: &[f64], overlapping: usize) -> HeldOut {
    let mut errs = errs.to_vec();
    errs.sort_by(f64::total_cmp);
    let median = (!errs.is_empty()).then(|| {
        let n = errs.len();
        if n % 2 == 1 {
            errs[n / 2]
        } else {
            (errs[n / 2 - 1] + errs[n / 2]) / 2.0
        }
    });
    HeldOut {
        cases: errs.len(),
        median_abs_error_pct: median,
        within_15: errs.iter().filter(|e| **e <= 15.0).count(),
        within_30: errs.iter().filter(|e| **e <= 30.0).count(),
        overlapping,
    }
}

/// The host's load as `/proc/loadavg` gives it (1, 5, 15 minutes), and the
/// runnable tasks it counts.
#[derive(Debug, Clone, Serialize)]
pub struct Load {
    pub avg: [f64; 3],
    pub runnable: Option<u32>,
}

impl Load {
    /// `/proc/loadavg` now; `None` where it cannot be read.
    pub fn read() -> Option<Load> {
        Load::parse(&std::fs::read_to_string("/proc/loadavg").ok()?)
    }

    /// The fields of a `/proc/loadavg` line ("0.52 0.58 0.59 2/345 1234").
    pub fn parse(text: &str) -> Option<Load> {
        let mut f = text.split_whitespace();
        let mut avg = [0.0; 3];
        for a in &mut avg {
            *a = f.next()?.parse().ok()?;
        }
        let runnable = f
            .next()
            .and_then(|s| s.split('/').next())
            .and_then(|s| s.parse().ok());
        Some(Load { avg, runnable })
    }
}

/// Everything `validate --time` found.
#[derive(Debug, Clone, Serialize)]
pub struct TimeOutcome {
    /// Kernel runs (and model runs) per case.
    pub repeat: usize,
    /// The cost file the model priced with.
    pub costs: String,
    /// Which machine that file describes, and whether it is this host.
    pub costs_label: Option<crate::host_costs::CostsLabel>,
    /// The interval method of the measured medians.
    pub measured_interval: String,
    pub cases: Vec<TimeCase>,
    pub held_out: HeldOut,
    /// The held-out one-thread cases against the kernel's CPU time.
    pub held_out_cpu: HeldOut,
    /// The host's load before the first run and after the last.
    pub load_before: Option<Load>,
    pub load_after: Option<Load>,
    /// Model runs of a case that predicted differently (a determinism bug).
    pub nondeterministic: Vec<String>,
    pub host: host::Fingerprint,
}

/// Runs every case `repeat` times on the kernel and on `model`,
/// alternating, reporting `(done, total)` runs to `progress`.
///
/// # Errors
/// The first run that fails, with the case it belongs to.
pub fn validate_time(
    cases: &[Case],
    model: &RunConfig,
    repeat: usize,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<TimeOutcome, (String, ExecError)> {
    let repeat = repeat.max(1);
    let kernel = RunConfig::kernel();
    let opts = ExecOptions {
        timeout: std::time::Duration::from_secs(300),
        ..ExecOptions::default()
    };
    let total = cases.len() * repeat * 2;
    let mut done = 0;
    let load_before = Load::read();
    let mut out = Vec::new();
    let mut nondeterministic = Vec::new();
    let mut costs = String::new();
    for c in cases {
        let label = format!("{} ({} thread(s))", c.workload, c.threads);
        let fail = |e| (label.clone(), e);
        let wk = c.parse(&kernel).map_err(fail)?;
        let wm = c.parse(model).map_err(fail)?;
        if costs.is_empty() {
            costs = exec::model_config(model)
                .map(|m| m.costs.origin.clone())
                .map_err(fail)?;
        }
        let mut meas = Vec::with_capacity(repeat);
        let mut reads = Vec::with_capacity(repeat);
        let mut cpu = Vec::with_capacity(repeat);
        let mut pred: Option<(f64, f64, f64)> = None;
        for _ in 0..repeat {
            progress(done, total, &label);
            let rk = exec::run_once(&wk, &kernel, &opts).map_err(fail)?;
            done += 1;
            progress(done, total, &label);
            let rm = exec::run_once(&wm, model, &opts).map_err(fail)?;
            done += 1;
            let m = measured(&rk)
                .ok_or_else(|| fail(ExecError::Model("the kernel run has no elapsed_ns".into())))?;
            meas.push(m);
            cpu.extend(measured_cpu(&rk));
            let end = rk.marks.last().expect("measured() found an end mark");
            reads.push(end.counters.get(counters::MARK_READ_NS.name).unwrap_or(0) as f64);
            let p = predicted(&rm)
                .ok_or_else(|| fail(ExecError::Model("the model run predicted no time".into())))?;
            match pred {
                Some(q) if q != p => nondeterministic.push(label.clone()),
                _ => pred = Some(p),
            }
        }
        out.push(
            TimeCase::new(
                &c.workload,
                c.threads,
                meas,
                reads,
                pred.expect("repeat >= 1"),
            )
            // CPU time leaves out sleeps: no comparison for a workload
            // that sleeps (the cold-file ones wait for their read-ahead).
            .with_cpu(if c.text.contains("sleep") {
                Vec::new()
            } else {
                cpu
            }),
        );
    }
    progress(done, total, "");
    nondeterministic.dedup();
    let measured_interval = out.first().map(|c| c.measured.method()).unwrap_or_default();
    Ok(TimeOutcome {
        repeat,
        costs,
        costs_label: crate::host_costs::CostsLabel::of(model.model.costs.as_deref()).ok(),
        measured_interval,
        held_out: held_out(&out),
        held_out_cpu: held_out_cpu(&out),
        cases: out,
        load_before,
        load_after: Load::read(),
        nondeterministic,
        host: host::Fingerprint::read(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::result::{Counters, Mark};

    fn run(pairs: &[(&str, i64)]) -> Run {
        let mut c = Counters::default();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        Run {
            marks: vec![Mark {
                name: "end".into(),
                counters: c,
                latency: None,
            }],
        }
    }

    #[test]
    fn measured_takes_out_the_marks_reads_and_predicted_reads_the_makespan() {
        let k = run(&[("elapsed_ns", 10_000), ("mark_read_ns", 1_500)]);
        assert_eq!(measured(&k), Some(8_500.0));
        let m = run(&[
            ("predicted_ns", 9_000),
            ("predicted_lo_ns", 8_000),
            ("predicted_hi_ns", 11_000),
        ]);
        assert_eq!(predicted(&m), Some((9_000.0, 8_000.0, 11_000.0)));
        assert_eq!(predicted(&k), None);
    }

    #[test]
    fn a_case_reports_its_median_interval_and_signed_error() {
        let c = TimeCase::new(
            "munmap-part",
            1,
            vec![110.0, 100.0, 90.0, 1000.0, 105.0],
            vec![0.0; 5],
            (120.0, 100.0, 130.0),
        );
        // The preempted run (1000) moves neither the median nor the error.
        assert_eq!(c.measured.median, 105.0);
        assert_eq!((c.measured.lo, c.measured.hi), (90.0, 1000.0));
        assert!((c.error_pct - (120.0 - 105.0) / 105.0 * 100.0).abs() < 1e-9);
        assert!(c.intervals_overlap());
        assert!(c.calibration_like.is_none());
        let under = TimeCase::new("x", 1, vec![200.0], vec![0.0], (100.0, 90.0, 110.0));
        assert_eq!(under.error_pct, -50.0);
        assert!(!under.intervals_overlap());
    }

    #[test]
    fn the_summary_leaves_out_calibration_like_cases_and_counts_integers() {
        let case = |w: &str, measured: f64, predicted: f64| {
            TimeCase::new(
                w,
                1,
                vec![measured],
                vec![0.0],
                (predicted, predicted, predicted),
            )
        };
        let cases = vec![
            case("a", 100.0, 110.0),          // +10%
            case("b", 100.0, 80.0),           // -20%
            case("c", 100.0, 140.0),          // +40%
            case("anon-write", 100.0, 500.0), // calibration-like: out
            case("d", 100.0, 95.0),           // -5%
        ];
        assert!(cases[3].calibration_like.is_some());
        let h = held_out(&cases);
        assert_eq!(h.cases, 4);
        assert_eq!(h.median_abs_error_pct, Some(15.0)); // |5|,|10|,|20|,|40|
        assert_eq!((h.within_15, h.within_30), (2, 3));
        assert_eq!(held_out(&[]).median_abs_error_pct, None);
    }

    #[test]
    fn built_ins_with_one_counted_thread_run_at_one_and_two_threads() {
        let cases = default_cases();
        let mf: Vec<usize> = cases
            .iter()
            .filter(|c| c.workload == "multi-fault")
            .map(|c| c.threads)
            .collect();
        assert_eq!(mf, vec![1, 2]);
        for c in cases.iter().filter(|c| c.workload == "multi-fault") {
            let w = c.parse(&RunConfig::model_default()).unwrap();
            assert_eq!(w.threads.len(), c.threads);
        }
        // Two kinds of thread: as written.
        let tlb: Vec<&Case> = cases
            .iter()
            .filter(|c| c.workload == "tlb-shootdown")
            .collect();
        assert_eq!(tlb.len(), 1);
        assert_eq!(tlb[0].threads, 2);
        // Every suite workload is there once per thread count, and every
        // calibration-like name is a workload that exists.
        for (name, _) in workload::validate_suite() {
            let mut t: Vec<usize> = cases
                .iter()
                .filter(|c| c.workload == name)
                .map(|c| c.threads)
                .collect();
            let n = t.len();
            t.dedup();
            assert_eq!(t.len(), n, "{name}");
        }
        for (name, _) in CALIBRATION_LIKE {
            assert!(cases.iter().any(|c| c.workload == *name), "{name}");
        }
    }

    #[test]
    fn loadavg_parses() {
        let l = Load::parse("3.50 2.25 1.00 4/512 999\n").unwrap();
        assert_eq!(l.avg, [3.5, 2.25, 1.0]);
        assert_eq!(l.runnable, Some(4));
        assert!(Load::parse("garbage").is_none());
    }
}
