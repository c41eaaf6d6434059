//! Question: what does broadcast TLB invalidation (AMD's INVLPGB, Linux
//! 6.15) buy a program that unmaps from many threads, and what bounds it
//! once the IPIs are gone? will-it-scale's tlb_flush2 (each thread maps
//! 1 MiB, then page by page writes a page, gives it back with
//! MADV_DONTNEED and reads it again, one loop a page, and unmaps the
//! 1 MiB) at 1 to 36 modeled CPUs, with IPIs,
//! with INVLPGB, and each again without the LRU drain of the unmapping
//! calls: loops per second and the shootdowns' share of CPU time, in
//! virtual time, beside the series' published figures.

use super::experiments::{declared, Experiment, ModelRun, Plan, Results};
use super::figure::{row, Figure};
use super::plot::{named, Named};
use super::read::{mean, per};
use super::text::{count, table};
use super::time::{self, TIME_METHOD};
use super::{model, Section, StudyOptions, Verdict};
use crate::exec::ConfigResult;
use report::chart::ChartSpec;
use report::Unit;

/// Modeled CPUs (one thread each), quick and full.
fn cpus(o: StudyOptions) -> Vec<usize> {
    o.pick(vec![1, 4, 36], vec![1, 2, 4, 8, 16, 24, 36])
}

/// Rounds of [`PAGES`] loops per thread.
fn rounds(o: StudyOptions) -> usize {
    o.pick(1, 4)
}

/// Pages each round walks, one loop each, before it unmaps the region:
/// will-it-scale's 1 MiB. The region's size matters: every round ends in
/// a munmap (a full flush, the tables freed, the mmap lock taken for
/// writing), which at 64 KiB a round was a sixteenth of the loops' cost
/// and moved INVLPGB's gain at 36 CPUs from +2% to +21%.
const PAGES: usize = 256;

/// The four machines of the series' cover letter, in its order.
const CONFIGS: [(&str, &str); 4] = [
    ("IPIs", "tlb_flush=ipi,thp=never"),
    ("INVLPGB", "tlb_flush=invlpgb,thp=never"),
    (
        "IPIs, no LRU drain",
        "tlb_flush=ipi,lru_drain=off,thp=never",
    ),
    (
        "INVLPGB, no LRU drain",
        "tlb_flush=invlpgb,lru_drain=off,thp=never",
    ),
];

/// The cover letter's loops per second at 36 cores, in [`CONFIGS`]' order.
const PUBLISHED: [f64; 4] = [527_000.0, 527_000.0, 731_000.0, 1_157_000.0];

fn tlb_flush2_toml(threads: usize, rounds: usize) -> String {
    let mut round = format!(
        "    {{ mmap = \"r{{tid}}\", size = \"{}KiB\" }},\n",
        4 * PAGES
    );
    for p in 0..PAGES {
        let at = format!("offset = \"{}KiB\", len = \"4KiB\"", 4 * p);
        round.push_str(&format!(
            "    {{ touch = \"r{{tid}}\", access = \"write\", {at} }},\n    \
             {{ madvise = \"r{{tid}}\", advice = \"dontneed\", {at} }},\n    \
             {{ touch = \"r{{tid}}\", access = \"read\", {at} }},\n"
        ));
    }
    round.push_str("    { munmap = \"r{tid}\" },\n");
    let body = |marks: bool| {
        let m = |name: &str| {
            if marks {
                format!("  {{ mark = \"{name}\" }},\n")
            } else {
                String::new()
            }
        };
        format!(
            "op = [\n  {{ barrier = true }},\n{}  {{ repeat = {rounds}, op = [\n{round}  ] }},\n  \
             {{ barrier = true }},\n{}]\n",
            m("start"),
            m("done")
        )
    };
    let mut t = format!("name = \"study-tlb-flush2\"\n[[thread]]\n{}", body(true));
    if threads > 1 {
        t.push_str(&format!(
            "\n[[thread]]\ncount = {}\n{}",
            threads - 1,
            body(false)
        ));
    }
    t
}

/// The section's experiments: one per CPU count under the four machines
/// (in the order of [`cpus`]), priced with the study's costs; and the
/// largest count again priced with the shipped reference machine's
/// (`timing::model::SHIPPED_NAME`), whose IPIs are cheap against its LRU
/// lock: what the answer is when that ratio is the other way round.
struct Runs {
    by_cpus: Vec<ModelRun>,
    reference: ModelRun,
}

fn declare(o: StudyOptions, p: &mut Plan) -> Runs {
    let machines = |extra: &str| -> Vec<_> {
        CONFIGS
            .iter()
            .map(|(_, c)| model(&format!("{c}{extra}")))
            .collect()
    };
    let configs = machines("");
    let by_cpus = cpus(o)
        .iter()
        .map(|&n| {
            p.model(Experiment::model(
                &format!("tlb_flush2 {n} CPUs"),
                tlb_flush2_toml(n, rounds(o)),
                &configs,
                1,
            ))
        })
        .collect();
    let top = *cpus(o).last().expect("at least one CPU count");
    let reference = p.model(Experiment::model(
        &format!("tlb_flush2 {top} CPUs, reference costs"),
        tlb_flush2_toml(top, rounds(o)),
        &machines(&format!(",costs={}", timing::model::SHIPPED_NAME)),
        1,
    ));
    Runs { by_cpus, reference }
}

/// IPIs and INVLPGB on 36 modeled CPUs, for the user's trace (its
/// threads are the CPUs it is active on).
const YOURS: super::yours::Pair = super::yours::Pair {
    what: "broadcast invalidation",
    base: "tlb_flush=ipi,cpus=36",
    other: "tlb_flush=invlpgb,cpus=36",
    change: "INVLPGB instead of IPIs",
};

/// [`declare`], then the user's trace under [`YOURS`] (`study --trace`).
fn with_yours(o: StudyOptions, p: &mut Plan) -> (Runs, Option<ModelRun>) {
    (declare(o, p), super::yours::declare(o, p, &YOURS))
}

pub(super) fn plan(o: StudyOptions) -> Plan {
    declared(o, with_yours).0
}

/// Loops per second of predicted time, and the shootdowns' and the LRU
/// lock waits' shares of the CPUs' time, between the start and end marks.
struct Rate {
    loops_per_s: f64,
    flush_share: f64,
    lru_share: f64,
}

fn rate(r: &ConfigResult, threads: usize, rounds: usize) -> Rate {
    let t = time::between(r, "start", "done");
    let loops = (threads * rounds * PAGES) as f64;
    let since = |c: &str| {
        let v = |m: &str| {
            let x = mean(r, m, c);
            if x.is_nan() {
                0.0
            } else {
                x
            }
        };
        v("done") - v("start")
    };
    let busy = t.ns * threads as f64;
    Rate {
        loops_per_s: 1e9 * per(loops, t.ns),
        flush_share: per(since(counters::FLUSH_NS.name), busy),
        lru_share: per(since(counters::LRU_WAIT_NS.name), busy),
    }
}

/// The section from the results of [`declare`]'s experiments.
pub(super) fn section(o: StudyOptions, r: &Results) -> Section {
    let (
        Runs {
            by_cpus: runs,
            reference,
        },
        mine,
    ) = declared(o, with_yours).1;
    let mut sec = header();
    sec.method = format!("{} {TIME_METHOD}", sec.method);
    let ns = cpus(o);
    let k = rounds(o);
    let rates: Vec<Vec<Rate>> = runs
        .iter()
        .zip(&ns)
        .map(|(&h, &n)| r.model(h).iter().map(|c| rate(c, n, k)).collect())
        .collect();
    rates_table(&mut sec, &ns, k, &rates);
    let top = rates.last().expect("at least one CPU count");
    let refr: Vec<Rate> = r
        .model(reference)
        .iter()
        .map(|c| rate(c, ns[ns.len() - 1], k))
        .collect();
    answer(&mut sec, ns[ns.len() - 1], top, &refr);
    sec.figure(
        "loops_per_s",
        rates
            .iter()
            .map(|g| g.iter().map(|x| x.loops_per_s.round()).collect::<Vec<_>>())
            .collect::<Vec<_>>(),
    );
    sec.figure("cpus", ns.clone());
    chart(&mut sec, &ns, &rates);
    sec.findings
        .extend(super::yours::finding(o, r, mine, &YOURS));
    sec
}

/// The table of loops per second and shares by CPU count, the cover
/// letter's row last.
fn rates_table(sec: &mut Section, ns: &[usize], k: usize, rates: &[Vec<Rate>]) {
    let mut rows = Vec::new();
    for (i, &n) in ns.iter().enumerate() {
        let g = &rates[i];
        rows.push(row![
            Figure::count(n as f64),
            Figure::count(g[0].loops_per_s),
            Figure::count(g[1].loops_per_s),
            Figure::count(g[2].loops_per_s),
            Figure::count(g[3].loops_per_s),
            Figure::share(100.0 * g[0].flush_share),
            Figure::share(100.0 * g[1].flush_share),
            Figure::share(100.0 * g[1].lru_share),
        ]);
    }
    rows.push(row![
        Figure::count(36.0),
        Figure::count(PUBLISHED[0]),
        Figure::count(PUBLISHED[1]),
        Figure::count(PUBLISHED[2]),
        Figure::count(PUBLISHED[3]),
        Figure::share(40.0),
        Figure::share(4.0),
        // The letter gives no figure for the LRU lock's share: "n/a".
        Figure::share(f64::NAN),
    ]);
    sec.tables.push(table(
        &format!(
            "Model: loops per second of predicted time, {} loops per thread (one run each: virtual \
             time is deterministic); the last row is the cover letter's, measured",
            k * PAGES
        ),
        &[
            "CPUs",
            CONFIGS[0].0,
            CONFIGS[1].0,
            CONFIGS[2].0,
            CONFIGS[3].0,
            "flush share, IPIs",
            "flush share, INVLPGB",
            "LRU lock wait share, INVLPGB",
        ],
        rows,
    ));
}

/// The findings and the verdict at the largest CPU count `cpus`, from the
/// study's costs (`top`) and the reference machine's (`refr`), each in
/// [`CONFIGS`]' order.
fn answer(sec: &mut Section, cpus: usize, top: &[Rate], refr: &[Rate]) {
    let gain = |c: usize| top[c].loops_per_s / top[0].loops_per_s;
    sec.findings.push(format!(
        "At {} CPUs the model predicts {} loops/s with IPIs, {} with INVLPGB ({:.2}x), {} without \
         the LRU drain ({:.2}x) and {} with both ({:.2}x); the cover letter: 527 k, 527 k (1.00x), \
         731 k (1.39x), 1,157 k (2.20x).",
        cpus,
        count(top[0].loops_per_s),
        count(top[1].loops_per_s),
        gain(1),
        count(top[2].loops_per_s),
        gain(2),
        count(top[3].loops_per_s),
        gain(3),
    ));
    sec.findings.push(format!(
        "The shootdowns take {:.0}% of the CPUs' time with IPIs and {:.0}% with INVLPGB at {} \
         CPUs (published: 40% and about 4%); with INVLPGB the CPUs wait {:.0}% of their time for \
         the LRU lock, which the drain takes once per unmapping call.",
        100.0 * top[0].flush_share,
        100.0 * top[1].flush_share,
        cpus,
        100.0 * top[1].lru_share,
    ));
    // What bounds the IPI machine's loop decides what INVLPGB alone buys:
    // the LRU lock (the CPUs wait for it longer than they flush), or the
    // shootdowns themselves.
    let bound = if top[0].lru_share > top[0].flush_share {
        "the LRU lock bounds the loop"
    } else {
        "the shootdowns bound the loop"
    };
    sec.verdict = Verdict::default()
        .fig("alone", Figure::percent(100.0 * (gain(1) - 1.0)))
        .fig("both", Figure::percent(100.0 * (gain(3) - 1.0)))
        .fig("lru", Figure::share(100.0 * top[0].lru_share))
        .fig("flush", Figure::share(100.0 * top[0].flush_share))
        .say(&format!(
            "At {} CPUs INVLPGB alone changes tlb_flush2's loop rate by {{alone}}, predicted \
             (published +0%): with IPIs the CPUs wait {{lru}} of their time for the LRU lock and \
             spend {{flush}} in shootdowns, so {bound}. With the LRU drain removed too: {{both}} \
             (published +120%).",
            cpus
        ));
    let ref_gain = |c: usize| refr[c].loops_per_s / refr[0].loops_per_s;
    // Equal rates: the study itself priced with the reference machine.
    let same = refr
        .iter()
        .zip(top)
        .all(|(a, b)| a.loops_per_s == b.loops_per_s);
    sec.findings.push(if same {
        format!(
            "The answer turns on what an IPI costs against the LRU lock's hold; these are the \
             shipped reference machine's costs ({}), whose IPIs are cheap against its LRU lock.",
            timing::model::SHIPPED_NAME
        )
    } else {
        format!(
            "The answer turns on what an IPI costs against the LRU lock's hold. Priced with the \
         shipped reference machine's costs ({}) instead, the same {} CPUs wait {:.0}% of their \
         time for the LRU lock and spend {:.0}% in shootdowns with IPIs; INVLPGB alone then \
         changes the loop rate by {:+.0}%, the LRU drain's removal by {:+.0}%, both by {:+.0}% \
         (published: +0%, +39%, +120%).",
            timing::model::SHIPPED_NAME,
            cpus,
            100.0 * refr[0].lru_share,
            100.0 * refr[0].flush_share,
            100.0 * (ref_gain(1) - 1.0),
            100.0 * (ref_gain(2) - 1.0),
            100.0 * (ref_gain(3) - 1.0),
        )
    });
}

/// The section's title, question, method and the seed's figure.
fn header() -> Section {
    Section::new(
        "What broadcast invalidation buys",
        "What does broadcast TLB invalidation (AMD INVLPGB, Linux 6.15) buy a program that \
         unmaps memory from many threads, and what bounds it once the IPIs are gone?",
        "will-it-scale's tlb_flush2 on the model (as the built-in tlb-flush2): each thread, on \
         its own modeled CPU, maps 1 MiB and, page by page, writes a page, gives it back with \
         MADV_DONTNEED and reads it again (the zero page), one loop a page, then unmaps the \
         1 MiB, THP off. Four machines: IPIs; \
         INVLPGB (Linux's consider_global_asid: the space gets a global ASID once an IPI flush \
         finds it on more than three CPUs, then broadcast_tlb_flush issues one INVLPGB per 8 \
         pages and a TLBSYNC); and each without the LRU drain of munmap and DONTNEED. Loops per \
         second are loops over the predicted time between the threads' barriers; the flush \
         share is the predicted shootdown time (senders and receivers) over the CPUs' time. \
         The INVLPGB and TLBSYNC figures are assumed (no host here has the instruction; \
         docs/costs.md).",
        "The INVLPGB series' v5 cover letter (Rik van Riel, January 2025), will-it-scale \
         tlb_flush2_threads on a 36-core AMD Milan: 527 k loops/s at baseline, 527 k with \
         INVLPGB alone, 731 k with lru_add_drain removed, 1,157 k with both; TLB flushing \
         from 40% to about 4% of CPU time with INVLPGB, the contention moving to the LRU lock.",
    )
}

/// The chart of loops per second against CPUs, one line per machine.
fn chart(sec: &mut Section, ns: &[usize], rates: &[Vec<Rate>]) {
    // The chart's points are the section figure loops_per_s[cpus][machine].
    let series: Vec<(String, Vec<(f64, Named)>)> = CONFIGS
        .iter()
        .enumerate()
        .map(|(c, (name, _))| {
            let points = ns
                .iter()
                .zip(rates)
                .enumerate()
                .map(|(i, (&n, g))| {
                    let v = Figure::count(g[c].loops_per_s.round());
                    (n as f64, named(format!("loops_per_s[{i}][{c}]"), v))
                })
                .collect();
            (name.to_string(), points)
        })
        .collect();
    sec.lines(
        "Loops per second against modeled CPUs under the four machines (model, predicted, one \
         run each)",
        &ChartSpec::new(
            "tlb_flush2-like loops per second vs CPUs (model, predicted)",
            "CPUs",
            "loops per second",
        )
        .unit(Unit::Count)
        .from_zero(),
        series,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_parses_and_marks_on_one_thread() {
        let many = tlb_flush2_toml(6, 1);
        assert!(many.contains("count = 5"));
        assert_eq!(many.matches("mark = \"start\"").count(), 1);
        assert_eq!(many.matches("advice = \"dontneed\"").count(), 2 * PAGES);
        assert_eq!(many.matches("access = \"read\"").count(), 2 * PAGES);
        workload::parse(&many, "t", 48).unwrap();
    }

    /// The built-in tlb-flush2 is this section's loop on eight CPUs, four
    /// rounds: what a user runs by name is what the section measured.
    #[test]
    fn the_built_in_is_the_sections_loop() {
        let text = workload::builtin::get("tlb-flush2").unwrap();
        let built_in = workload::parse(text, "tlb-flush2", 48).unwrap();
        let ours = workload::parse(&tlb_flush2_toml(8, 4), "t", 48).unwrap();
        assert_eq!(built_in.regions, ours.regions);
        assert_eq!(built_in.threads, ours.threads);
    }

    #[test]
    fn invlpgb_removes_the_ipis_and_the_drain_removal_the_lru_waits() {
        let configs: Vec<_> = CONFIGS.iter().map(|(_, c)| model(c)).collect();
        let e = Experiment::model("tiny", tlb_flush2_toml(6, 1), &configs, 1);
        let res = super::super::run_one(&e);
        let ipis = |c: &ConfigResult| mean(c, "done", counters::IPIS.name);
        let bc = |c: &ConfigResult| mean(c, "done", counters::BROADCAST_FLUSHES.name);
        // The first IPI flush finds six CPUs: the space goes global, and
        // its later flushes send no IPI.
        assert!(
            ipis(&res[0]) > 5.0 * ipis(&res[1]),
            "{} {}",
            ipis(&res[0]),
            ipis(&res[1])
        );
        assert!(bc(&res[1]) > 0.0);
        assert!(bc(&res[0]).is_nan(), "an IPI machine counts no broadcast");
        let r: Vec<Rate> = res.iter().map(|c| rate(c, 6, 1)).collect();
        assert!(r[1].flush_share < r[0].flush_share);
        assert!(r[3].lru_share < r[1].lru_share);
        assert!(r[3].loops_per_s > r[1].loops_per_s);
    }
}
