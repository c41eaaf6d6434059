//! Question: what does reclaiming empty PTE tables cost a fault-heavy
//! threaded program, and how does that program scale? A multi-fault-like
//! workload (each thread writes every page of its own region, then drops
//! it with MADV_DONTNEED, over and over) at 1, 8 and 16 threads with PT
//! reclaim off, on (Linux's PT_RECLAIM) and eager (the slides' refcount
//! design), in virtual time: faults per minute, predicted.

use super::experiments::{declared, Experiment, ModelRun, Plan, Results};
use super::figure::{row, Figure};
use super::plot::{named, Named};
use super::read::{mean, per};
use super::text::{count, count_figure, table};
use super::time::{self, Predicted, TIME_METHOD};
use super::{model, Section, StudyOptions, Verdict};
use crate::exec::ConfigResult;
use report::chart::ChartSpec;
use report::Unit;

/// The thread counts of the slides.
const THREADS: [usize; 3] = [1, 8, 16];

/// Reclaim settings compared, as the slides' "before" and "after".
const RECLAIM: [(&str, &str); 3] = [
    ("reclaim off", "reclaim=off,thp=never"),
    ("PT_RECLAIM (Linux)", "reclaim=on,thp=never"),
    ("eager (slides)", "reclaim=eager,thp=never"),
];

/// The slides' faults per minute before and after, and the change.
const SLIDES: [(f64, f64, f64); 3] = [
    (32_085_255.0, 31_880_833.0, -0.64),
    (101_674_967.0, 100_588_311.0, -1.17),
    (113_207_000.0, 112_801_832.0, -0.36),
];

fn multi_fault_toml(threads: usize, rounds: usize) -> String {
    // The first thread marks; the others run the same loop unmarked (a
    // mark is one thread's). Each region is 4 MiB: two whole PTE tables,
    // so that DONTNEED over it may free them.
    let body = |marks: bool| {
        let m = |name: &str| {
            if marks {
                format!("  {{ mark = \"{name}\" }},\n")
            } else {
                String::new()
            }
        };
        format!(
            "op = [\n  {{ mmap = \"r{{tid}}\", size = \"4MiB\" }},\n  {{ barrier = true }},\n{}  \
             {{ repeat = {rounds}, op = [\n    {{ touch = \"r{{tid}}\", access = \"write\" }},\n    \
             {{ madvise = \"r{{tid}}\", advice = \"dontneed\" }},\n  ] }},\n  {{ barrier = true }},\n{}  \
             {{ munmap = \"r{{tid}}\" }},\n]\n",
            m("start"),
            m("done")
        )
    };
    let mut t = format!("name = \"study-multi-fault\"\n[[thread]]\n{}", body(true));
    if threads > 1 {
        t.push_str(&format!(
            "\n[[thread]]\ncount = {}\n{}",
            threads - 1,
            body(false)
        ));
    }
    t
}

fn rounds(o: StudyOptions) -> usize {
    o.pick(4, 16)
}

/// One experiment per thread count, each under the three reclaim settings.
/// One experiment per thread count of [`THREADS`], in its order.
fn declare(o: StudyOptions, p: &mut Plan) -> Vec<ModelRun> {
    let configs: Vec<_> = RECLAIM.iter().map(|(_, c)| model(c)).collect();
    THREADS
        .iter()
        .map(|&t| {
            p.model(Experiment::model(
                &format!("multi-fault {t} threads"),
                multi_fault_toml(t, rounds(o)),
                &configs,
                1,
            ))
        })
        .collect()
}

pub(super) fn plan(o: StudyOptions) -> Plan {
    declared(o, declare).0
}

/// Faults per minute of predicted time, from the first thread's marks.
fn per_minute(r: &ConfigResult) -> (f64, Predicted) {
    let faults = mean(r, "done", counters::MINOR_FAULTS.name)
        - mean(r, "start", counters::MINOR_FAULTS.name);
    let t = time::between(r, "start", "done");
    (60e9 * per(faults, t.ns), t)
}

/// What the CPUs share in the model, what it costs per fault, and what
/// the slides' flattening would need: `rate16` is the model's faults per
/// minute at 16 threads, `s8` and `s16` its scaling at 8 and 16.
fn shared_finding(rate16: f64, s8: f64, s16: f64) -> String {
    let c = timing::CostModel::shipped();
    // Per fault, serialised on a lock every CPU shares: a zone-lock hold
    // per 63 pages allocated and per 63 freed, an LRU-lock hold per 15
    // folios added and per 15 removed, the mmap_lock count line moved
    // twice (down_read, up_read).
    let zone = 2.0 * c.zone_batch.ns / 63.0;
    let lru = 2.0 * c.lru_batch.ns / 15.0;
    let line = 2.0 * c.handoff.ns;
    let per_fault = zone + lru + line;
    // The slides at 16 threads: 113.2 M faults a minute from the whole
    // machine is one fault per 530 ns; a resource every fault holds that
    // long, one CPU at a time, would flatten the curve there.
    let slides_ns = 60e9 / 113_207_000.0;
    format!(
        "Per fault the model serialises {:.0} ns on what every CPU shares (zone lock {:.0}, LRU \
         lock {:.0}, the mmap_lock's count line {:.0}; the zone and LRU holds assumed, not \
         measured), against the {:.0} ns per fault that would flatten the slides' curve at 16 \
         threads ({} faults per minute); its scaling: {s8:.1}x at 8 and {s16:.1}x at 16 threads \
         ({} faults per minute), the slides' 3.2x and 3.5x.",
        per_fault,
        zone,
        lru,
        line,
        slides_ns,
        count(113_207_000.0),
        count(rate16),
    )
}

/// The change of the fault rate from `a` to `b` in percent, its interval
/// from the cost file's ends (the faults are the same at both ends).
fn rate_change(a: &(f64, Predicted), b: &(f64, Predicted)) -> Figure {
    let pct = |x: f64, y: f64| 100.0 * (y / x - 1.0);
    // A rate's low end comes with the time's high end.
    let (fa, fb) = (a.0 * a.1.ns, b.0 * b.1.ns);
    Figure::percent(pct(a.0, b.0))
        .with_interval(pct(fa / a.1.hi, fb / b.1.hi), pct(fa / a.1.lo, fb / b.1.lo))
}

/// The section from the results of [`declare`]'s experiments.
pub(super) fn section(o: StudyOptions, r: &Results) -> Section {
    let mut sec = header();
    sec.method = format!("{} {TIME_METHOD}", sec.method);
    let mut rows = Vec::new();
    let mut series: Vec<Vec<(f64, Named)>> = RECLAIM.iter().map(|_| Vec::new()).collect();
    let mut rates = Vec::new();
    let mut changes: Vec<[Figure; 2]> = Vec::new();
    let runs = declared(o, declare).1;
    for (i, (&t, &run)) in THREADS.iter().zip(&runs).enumerate() {
        let res = r.model(run);
        let got: Vec<(f64, Predicted)> = res.iter().map(per_minute).collect();
        let (off, on) = (got[0].0, got[1].0);
        for (k, (rate, _)) in got.iter().enumerate() {
            let name = format!("faults_per_minute[{i}][{k}]");
            series[k].push((t as f64, named(name, Figure::count(*rate))));
        }
        let (before, after, change) = SLIDES[i];
        rows.push(row![
            Figure::count(t as f64),
            Figure::count(off),
            Figure::count(on),
            rate_change(&got[0], &got[1]),
            Figure::count(got[2].0),
            rate_change(&got[0], &got[2]),
            Figure::count(mean(&res[0], "done", counters::IPIS.name)),
            Figure::kib(mean(&res[0], "done", counters::VMPTE_KB.name)),
            Figure::kib(mean(&res[1], "done", counters::VMPTE_KB.name)),
            Figure::count(before),
            Figure::count(after),
            Figure::percent(change),
        ]);
        changes.push([rate_change(&got[0], &got[1]), rate_change(&got[0], &got[2])]);
        rates.push([off, on, got[2].0]);
    }
    sec.tables.push(table(
        &format!(
            "Model: faults per minute of predicted time, {} rounds of write + DONTNEED per thread \
             (one run each: virtual time is deterministic)",
            rounds(o)
        ),
        &[
            "threads",
            "reclaim off",
            "PT_RECLAIM",
            "change",
            "eager",
            "change",
            "IPIs (off)",
            "VmPTE at the end, off",
            "VmPTE at the end, on",
            "slides: before",
            "slides: after",
            "slides: change",
        ],
        rows,
    ));
    let scale = |k: usize, i: usize| rates[i][k] / rates[0][k];
    sec.findings.push(format!(
        "With reclaim off the model predicts {} faults per minute at 1 thread, {} at 8 and {} at \
         16: {:.1}x and {:.1}x the one-thread rate, against the slides' 3.2x and 3.5x \
         (32.1 M, 101.7 M, 113.2 M).",
        count(rates[0][0]),
        count(rates[1][0]),
        count(rates[2][0]),
        scale(0, 1),
        scale(0, 2)
    ));
    sec.findings.push(format!(
        "PT_RECLAIM changes the rate by {:+.2}% / {:+.2}% / {:+.2}% at 1 / 8 / 16 threads; the \
         eager design by {:+.2}% / {:+.2}% / {:+.2}%. The slides: -0.64% / -1.17% / -0.36%.",
        100.0 * (rates[0][1] / rates[0][0] - 1.0),
        100.0 * (rates[1][1] / rates[1][0] - 1.0),
        100.0 * (rates[2][1] / rates[2][0] - 1.0),
        100.0 * (rates[0][2] / rates[0][0] - 1.0),
        100.0 * (rates[1][2] / rates[1][0] - 1.0),
        100.0 * (rates[2][2] / rates[2][0] - 1.0),
    ));
    sec.findings
        .push(shared_finding(rates[2][0], scale(0, 1), scale(0, 2)));
    let last = THREADS.len() - 1;
    sec.verdict = Verdict::default()
        .fig("on_last", changes[last][0].clone())
        .fig("on_first", changes[0][0].clone())
        .fig("eager_last", changes[last][1].clone())
        .fig("rate_last", Figure::count(rates[last][0]))
        .say(&format!(
            "PT_RECLAIM changes a fault-heavy program's fault rate by {{on_last}} at {} threads \
             ({{on_first}} at {}; the eager design {{eager_last}}), predicted, from \
             {{rate_last}} faults per minute without reclaim. It costs most where each drop empties whole 2 MiB \
             tables that the next writes must allocate again.",
            THREADS[last], THREADS[0]
        ));
    sec.figure(
        "faults_per_minute",
        rates
            .iter()
            .map(|r| r.map(count_figure))
            .collect::<Vec<_>>(),
    );
    sec.figure("threads", THREADS);
    chart(&mut sec, series);
    sec
}

/// The section's title, question, method and the seed's figure.
fn header() -> Section {
    Section::new(
        "PT reclaim and a fault-heavy threaded program",
        "What does reclaiming empty PTE tables cost a program that faults and drops memory \
         from many threads, and how does it scale from 1 to 16 threads?",
        "A multi-fault-like workload on the model: each thread writes every page of its own \
         4 MiB region and drops it with MADV_DONTNEED, over and over, THP off; with reclaim off \
         (tables stay), on (Linux's PT_RECLAIM frees the PTE tables a DONTNEED empties) and \
         eager (the slides' refcount design), at 1, 8 and 16 threads, each on its own modeled \
         CPU. Faults per minute are faults over the predicted time between the threads' start \
         and end barriers.",
        "perf stat -e page-faults --repeat 5 ./multi-fault: 32,085,255 / 101,674,967 / \
         113,207,000 faults per minute at 1 / 8 / 16 threads before, 31,880,833 / 100,588,311 / \
         112,801,832 after (-0.64% / -1.17% / -0.36%).",
    )
}

/// The chart of faults per minute against threads: the model's series (one
/// per reclaim setting) and the slides' rate before reclaim.
fn chart(sec: &mut Section, series: Vec<Vec<(f64, Named)>>) {
    let mut s: Vec<(String, Vec<(f64, Named)>)> = RECLAIM
        .iter()
        .zip(series)
        .map(|((name, _), v)| (name.to_string(), v))
        .collect();
    let slides_before: Vec<f64> = SLIDES.iter().map(|(b, _, _)| *b).collect();
    sec.figure("slides_faults_per_minute_before", &slides_before);
    s.push((
        "slides, before".into(),
        THREADS
            .iter()
            .zip(&slides_before)
            .enumerate()
            .map(|(i, (&t, &b))| {
                let name = format!("slides_faults_per_minute_before[{i}]");
                (t as f64, named(name, Figure::count(b)))
            })
            .collect(),
    ));
    sec.lines(
        "Faults per minute against threads: the model's prediction under three reclaim settings \
         (one run each, deterministic) and the slides' measured rate before reclaim",
        &ChartSpec::new(
            "Faults per minute vs threads, multi-fault-like (model, predicted) and the slides",
            "threads",
            "faults per minute",
        )
        .unit(Unit::Count)
        .from_zero(),
        s,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_marks_on_one_thread_and_runs_the_rest_unmarked() {
        let one = multi_fault_toml(1, 2);
        assert_eq!(one.matches("[[thread]]").count(), 1);
        let many = multi_fault_toml(16, 2);
        assert!(many.contains("count = 15"));
        assert_eq!(many.matches("mark = \"start\"").count(), 1);
        workload::parse(&many, "t", 48).unwrap();
    }

    #[test]
    fn faults_per_minute_are_the_same_twice_and_reclaim_frees_the_tables() {
        let configs: Vec<_> = RECLAIM.iter().map(|(_, c)| model(c)).collect();
        let e = Experiment::model("tiny", multi_fault_toml(2, 2), &configs, 1);
        let (a, b) = (super::super::run_one(&e), super::super::run_one(&e));
        for (x, y) in a.iter().zip(&b) {
            let (p, q) = (per_minute(x), per_minute(y));
            assert!(p.0 > 0.0, "{}", x.config.label);
            assert_eq!(p.1, q.1, "{}", x.config.label);
        }
        // Reclaim on frees the PTE tables the last DONTNEED emptied.
        let vmpte = |c: &ConfigResult| mean(c, "done", counters::VMPTE_KB.name);
        assert!(
            vmpte(&a[1]) < vmpte(&a[0]),
            "{} {}",
            vmpte(&a[1]),
            vmpte(&a[0])
        );
    }
}
