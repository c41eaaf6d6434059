//! Question: what does a TLB shootdown add to each munmap when another
//! thread of the process is running? One thread maps, writes and unmaps a
//! page over and over, alone and beside a second thread; the model predicts
//! the time per round in virtual time, the kernel measures it.

use super::experiments::{declared, Experiment, KernelRun, ModelRun, Plan, Results};
use super::figure::{row, FigUnit, Figure, TableCell};
use super::plot::named;
use super::read::{mean, per, samples, summary};
use super::text::{count, estimate, table, INTERVALS};
use super::time::{self, Predicted, TIME_METHOD};
use super::{model, Section, StudyOptions, Verdict};
use crate::exec::ConfigResult;
use report::chart::ChartSpec;
use report::Unit;
use stats::Quantity;

/// The churning thread: `rounds` of map, write, unmap one page, marked
/// before and after (before the closing barrier, so that the second
/// thread's end does not count). An anchor page mapped first keeps the
/// page's tables alive across rounds, as the kernel process's other
/// mappings (its libraries, stack, heap) do there: without it the model's
/// lone mapping freed and re-made three table pages a round when alone
/// and none beside the second thread (whose mapping shares them), which
/// hid half the shootdown's cost in the difference.
fn churner(rounds: usize) -> String {
    format!(
        r#"[[thread]]
op = [
  {{ mmap = "anchor", size = "4KiB" }},
  {{ touch = "anchor", access = "write" }},
  {{ barrier = true }},
  {{ mark = "start" }},
  {{ repeat = {rounds}, op = [
    {{ mmap = "page", size = "4KiB" }},
    {{ touch = "page", access = "write" }},
    {{ munmap = "page" }},
  ] }},
  {{ mark = "churned" }},
  {{ barrier = true }},
]
"#
    )
}

/// On the kernel, the second thread reads its own memory at random for
/// longer than the churn (a running thread of the process is sent the
/// shootdown; an idle one is not). On the model it reads one page of its
/// own and sleeps 20 us in virtual time, over and over, for longer than the
/// churn: it stays on its CPU and takes its interrupts (a thread that only
/// slept would leave them pending), while costing the model little.
fn workload(rounds: usize, second: Option<bool>) -> String {
    let mut t = format!("name = \"study-munmap-time\"\n{}", churner(rounds));
    match second {
        None => {}
        Some(true) => t.push_str(&format!(
            r#"
[[thread]]
op = [
  {{ mmap = "own", size = "16MiB" }},
  {{ touch = "own", access = "write" }},
  {{ barrier = true }},
  {{ repeat = {}, op = [
    {{ touch = "own", access = "read", pattern = "random", count = 60000 }},
  ] }},
  {{ barrier = true }},
  {{ munmap = "own" }},
]
"#,
            rounds.div_ceil(100)
        )),
        Some(false) => t.push_str(&format!(
            r#"
[[thread]]
op = [
  {{ mmap = "own", size = "4KiB" }},
  {{ touch = "own", access = "write" }},
  {{ barrier = true }},
  {{ repeat = {}, op = [
    {{ touch = "own", access = "read" }},
    {{ sleep = "20us" }},
  ] }},
  {{ barrier = true }},
  {{ munmap = "own" }},
]
"#,
            rounds * 10
        )),
    }
    t
}

fn model_rounds(o: StudyOptions) -> usize {
    o.pick(5_000, 20_000)
}

fn kernel_rounds(o: StudyOptions) -> usize {
    o.pick(2_000, 10_000)
}

const KERNEL_RUNS: usize = 5;

fn declare(o: StudyOptions, p: &mut Plan) -> Runs {
    let (m, k) = (model_rounds(o), kernel_rounds(o));
    Runs {
        model_alone: p.model(Experiment::model(
            "munmap alone (model)",
            workload(m, None),
            &[model("")],
            1,
        )),
        model_pair: p.model(Experiment::model(
            "munmap beside a second thread (model)",
            workload(m, Some(false)),
            &[model("")],
            1,
        )),
        kernel_alone: p.kernel(Experiment::kernel(
            "munmap alone (kernel)",
            workload(k, None),
            KERNEL_RUNS,
        )),
        kernel_pair: p.kernel(Experiment::kernel(
            "munmap beside a second thread (kernel)",
            workload(k, Some(true)),
            KERNEL_RUNS,
        )),
    }
}

/// The experiments' handles.
struct Runs {
    model_alone: ModelRun,
    model_pair: ModelRun,
    kernel_alone: KernelRun,
    kernel_pair: KernelRun,
}

pub(super) fn plan(o: StudyOptions) -> Plan {
    declared(o, declare).0
}

/// The kernel's measured time per round: per run, elapsed between the
/// marks over the rounds.
fn measured(r: &ConfigResult, rounds: usize) -> Option<stats::Summary> {
    let a = samples(r, "start", counters::ELAPSED_NS.name);
    let b = samples(r, "churned", counters::ELAPSED_NS.name);
    let v: Vec<f64> = a
        .iter()
        .zip(&b)
        .map(|(a, b)| (b - a) / rounds as f64)
        .collect();
    stats::Summary::of_quantity(&v, Quantity::Time).ok()
}

pub(super) fn section(o: StudyOptions, r: &Results) -> Section {
    let mut sec = header();
    sec.method = format!("{} {TIME_METHOD} {INTERVALS}", sec.method);
    let (mr, kr) = (model_rounds(o), kernel_rounds(o));
    let runs = declared(o, declare).1;
    let alone = &r.model(runs.model_alone)[0];
    let pair = &r.model(runs.model_pair)[0];
    let t_alone = time::between(alone, "start", "churned").per(mr as f64);
    let t_pair = time::between(pair, "start", "churned").per(mr as f64);
    let ipis = |r: &ConfigResult| {
        per(
            mean(r, "churned", counters::IPIS.name) - mean(r, "start", counters::IPIS.name),
            mr as f64,
        )
    };
    let k_alone = r.kernel(runs.kernel_alone).and_then(|k| measured(k, kr));
    let k_pair = r.kernel(runs.kernel_pair).and_then(|k| measured(k, kr));
    let k_shoot = r
        .kernel(runs.kernel_pair)
        .and_then(|k| summary(k, "churned", counters::TLB_SHOOTDOWNS.name, Quantity::Count));
    let kfig = |s: &Option<stats::Summary>| -> TableCell {
        s.as_ref().map_or("not run here".into(), |s| {
            Figure::summary(s, FigUnit::Ns).into()
        })
    };
    sec.tables.push(table(
        "Time per round (mmap, write fault, munmap)",
        &[
            "",
            "model: predicted",
            "IPIs per munmap (model)",
            "kernel: measured",
        ],
        vec![
            row![
                "alone",
                Figure::predicted(&t_alone),
                Figure::plain(ipis(alone)),
                kfig(&k_alone),
            ],
            row![
                "beside a running second thread",
                Figure::predicted(&t_pair),
                Figure::plain(ipis(pair)),
                kfig(&k_pair),
            ],
        ],
    ));
    let diff = Predicted {
        ns: t_pair.ns - t_alone.ns,
        lo: t_pair.lo - t_alone.lo,
        hi: t_pair.hi - t_alone.hi,
    };
    sec.findings.push(format!(
        "The model predicts {} per round alone and {} beside a running second thread: the \
         shootdown adds {} per munmap ({:+.1}%), over {} rounds (IPIs per munmap: {:.2}).",
        t_alone.short(),
        t_pair.short(),
        report::human(diff.ns, Unit::Nanoseconds),
        time::percent(&t_alone, &t_pair),
        count(mr as f64),
        ipis(pair)
    ));
    // How the shootdown is priced is method, not a finding (findings carry
    // the section's numbers).
    sec.method.push_str(PRICING);
    if let (Some(a), Some(b)) = (&k_alone, &k_pair) {
        sec.findings.push(format!(
            "This machine's kernel took {} per round alone and {} beside the reading thread \
             ({:+.2} us per munmap; {} rounds, {KERNEL_RUNS} runs each; shootdown interrupts \
             {}). The kernel's times are wall-clock on a shared 2-vCPU guest.",
            estimate(a, Unit::Nanoseconds),
            estimate(b, Unit::Nanoseconds),
            (b.mean - a.mean) / 1000.0,
            count(kr as f64),
            k_shoot
                .as_ref()
                .map_or("n/a".into(), |s| estimate(s, Unit::Count))
        ));
        sec.figure("kernel_ns_per_round", [a, b]);
    }
    sec.figure("model_ns_per_round", [t_alone, t_pair]);
    let v = Verdict::default()
        .fig("added", Figure::predicted(&diff))
        .fig("change", Figure::change(&t_alone, &t_pair))
        .fig("alone", Figure::ns(t_alone.ns));
    let tail = "It costs only while another thread of the process runs on another CPU; an \
                idle CPU's lazy TLB gets no interrupt.";
    sec.verdict = match (&k_alone, &k_pair) {
        (Some(a), Some(b)) => v
            .fig("kernel_added", Figure::ns(b.mean - a.mean))
            .say(&format!(
                "A TLB shootdown adds {{added}} to each munmap round ({{change}} over \
                 {{alone}} alone), predicted; this kernel measured {{kernel_added}}. {tail}"
            )),
        _ => v.say(&format!(
            "A TLB shootdown adds {{added}} to each munmap round ({{change}} over {{alone}} \
             alone), predicted. {tail}"
        )),
    };
    charts(&mut sec, &t_alone, &t_pair, &k_alone, &k_pair);
    sec
}

/// The section's title, question, method and the seed's figure.
fn header() -> Section {
    Section::new(
        "What a shootdown adds to munmap",
        "How long does a munmap take with and without another running thread of the process \
         (whose TLB must be shot down)?",
        "One thread maps, writes and unmaps one page in a loop, alone and beside a second thread \
         of the process that keeps running. The model predicts the time per round (mmap, one \
         write fault, munmap) in virtual time; the kernel of this machine runs the same loop \
         (the second thread reading its own memory) and its time per round is measured.",
        "100,000 munmaps gave 100,016 tlb:tlb_flush events (no time given).",
    )
}

/// How the model prices a shootdown, appended to the method.
const PRICING: &str = " How the model prices it: in Linux the sender waits for every receiver's \
         acknowledgement (flush_tlb_mm_range -> flush_tlb_multi -> on_each_cpu_cond_mask with \
         wait set -> smp_call_function_many_cond spins on each receiver's call-function lock \
         until its interrupt handler has flushed), so the sender's time holds the IPI's \
         delivery, the receiver's interrupt entry and flush, and the acknowledgement. The model \
         charges the sender shootdown.sender per flush request that reached another running \
         CPU, a figure calibrate measures as the sender's extra time per munmap (the wait \
         included), in place of tlb.flush_local, and the receiver shootdown.receiver on its own \
         clock; the difference per munmap is shootdown.sender - tlb.flush_local. Both runs \
         keep the churn's tables alive with an anchor page (as the kernel process's other \
         mappings do), so no table is freed and re-made in either.";

/// The chart of the time per round: the model's prediction and, when it
/// ran, the kernel's measurement.
fn charts(
    sec: &mut Section,
    t_alone: &Predicted,
    t_pair: &Predicted,
    k_alone: &Option<stats::Summary>,
    k_pair: &Option<stats::Summary>,
) {
    let cats = vec!["alone".to_string(), "beside a second thread".to_string()];
    let mut series = vec![(
        "model (predicted)".to_string(),
        vec![
            named("model_ns_per_round[0]", Figure::predicted(t_alone)),
            named("model_ns_per_round[1]", Figure::predicted(t_pair)),
        ],
    )];
    if let (Some(a), Some(b)) = (k_alone, k_pair) {
        series.push((
            "kernel (measured)".into(),
            vec![
                named("kernel_ns_per_round[0]", Figure::summary(a, FigUnit::Ns)),
                named("kernel_ns_per_round[1]", Figure::summary(b, FigUnit::Ns)),
            ],
        ));
    }
    sec.bars(
        "Time per round of mmap, write fault and munmap, alone and beside a second running \
         thread: the model's prediction (interval from the cost file) and this machine's kernel \
         (mean of runs with its 95% interval)",
        &ChartSpec::new(
            "Time per munmap round, with and without a shootdown",
            "",
            "time per round",
        )
        .unit(Unit::Nanoseconds),
        &cats,
        series,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_workloads_parse() {
        for second in [None, Some(true), Some(false)] {
            workload::parse(&workload(300, second), "t", 48).unwrap();
        }
    }
}
