//! Question 5: what on this machine can make page tables change under a
//! latency-sensitive program, and what do TLB shootdowns and writeback cost
//! here? The host audit, then munmap churn beside a reader (model and
//! kernel) and writes to a shared file mapping with and without msync
//! (kernel).

use super::experiments::{declared, Audit, Experiment, KernelRun, ModelRun, Plan, Results};
use super::figure::{row, Figure};
use super::plot::{ChartPoint, ChartSeries};
use super::read::{mean, summary};
use super::text::{count, count_figure, estimate, table, INTERVALS};
use super::{model, Section, StudyOptions, Verdict};
use crate::exec::ConfigResult;
use report::chart::{self, ChartSpec};
use report::Unit;
use stats::Quantity;

/// A latency in ns for people ("11.3 us").
fn ns(v: f64) -> String {
    report::human(v, Unit::Nanoseconds)
}

fn shootdown_toml(churn: usize) -> String {
    // The reader must still be running while the other thread churns: an
    // idle CPU (lazy TLB) gets no shootdown. About 600 reads per munmap
    // keep it busy on both backends.
    let rounds = churn / 100;
    format!(
        r#"name = "study-tlb-shootdown"
[[thread]]
op = [
  {{ barrier = true }},
  {{ repeat = {churn}, op = [
    {{ mmap = "page", size = "4KiB" }},
    {{ touch = "page", access = "write" }},
    {{ munmap = "page" }},
  ] }},
  {{ barrier = true }},
  {{ mark = "churned" }},
]

[[thread]]
op = [
  {{ mmap = "own", size = "16MiB" }},
  {{ touch = "own", access = "write" }},
  {{ barrier = true }},
  {{ repeat = {rounds}, op = [
    {{ touch = "own", access = "read", pattern = "random", count = 60000 }},
  ] }},
  {{ barrier = true }},
  {{ munmap = "own" }},
]
"#
    )
}

fn writeback_toml(rounds: usize, sync: bool) -> String {
    let syncer = if sync {
        format!(
            r#"
[[thread]]
op = [
  {{ barrier = true }},
  {{ repeat = {}, op = [
    {{ sync = "log" }},
    {{ sleep = "5ms" }},
  ] }},
  {{ barrier = true }},
]
"#,
            rounds / 5
        )
    } else {
        r#"
[[thread]]
op = [
  { barrier = true },
  { barrier = true },
]
"#
        .to_string()
    };
    format!(
        r#"name = "study-writeback"
[[thread]]
op = [
  {{ mmap = "log", size = "4MiB", kind = "file", shared = true }},
  {{ touch = "log", access = "write" }},
  {{ barrier = true }},
  {{ repeat = {rounds}, op = [
    {{ touch = "log", access = "write", stride = "64KiB", latency = true }},
    {{ sleep = "1ms" }},
  ] }},
  {{ barrier = true }},
  {{ mark = "written" }},
  {{ munmap = "log" }},
]
{syncer}"#
    )
}

/// munmaps of the shootdown workload.
fn churn(o: StudyOptions) -> usize {
    o.pick(2000, 20000)
}

/// Shootdowns on the model and the kernel, then writeback with and without
/// msync on the kernel.
fn declare(o: StudyOptions, p: &mut Plan) -> Runs {
    let rounds = o.pick(100, 500);
    Runs {
        shootdown_model: p.model(Experiment::model(
            "tlb-shootdown model",
            shootdown_toml(churn(o)),
            &[model("")],
            1,
        )),
        shootdown_kernel: p.kernel(Experiment::kernel(
            "tlb-shootdown kernel",
            shootdown_toml(churn(o)),
            5,
        )),
        writeback: p.kernel(Experiment::kernel(
            "writeback kernel",
            writeback_toml(rounds, true),
            1,
        )),
        no_writeback: p.kernel(Experiment::kernel(
            "no writeback kernel",
            writeback_toml(rounds, false),
            1,
        )),
        // Read after the experiments, as every declared input.
        audit: p.audit(if o.quick {
            host::AuditOptions {
                tlb_sample: std::time::Duration::from_millis(250),
                experiments: false,
            }
        } else {
            host::AuditOptions::default()
        }),
    }
}

/// The experiments' and the audit's handles.
struct Runs {
    shootdown_model: ModelRun,
    shootdown_kernel: KernelRun,
    writeback: KernelRun,
    no_writeback: KernelRun,
    audit: Audit,
}

pub(super) fn plan(o: StudyOptions) -> Plan {
    declared(o, declare).0
}

/// The section from the results of [`declare`]'s experiments (and of the audit, which
/// reads this host here).
pub(super) fn section(o: StudyOptions, r: &Results) -> Section {
    let mut sec = header();
    sec.method = format!(
        "{} The writeback workloads run once each; their latencies are percentiles of every \
         write of that run. {INTERVALS}",
        sec.method
    );
    let runs = declared(o, declare).1;
    let audit = r.audit(runs.audit);
    let warn: Vec<&host::Item> = audit
        .items
        .iter()
        .filter(|i| i.status == host::Status::Warn)
        .collect();
    sec.tables.push(table(
        "Audit",
        &["id", "status", "value", "why", "fix"],
        audit
            .items
            .iter()
            .map(|i| {
                row![
                    i.id.clone(),
                    serde_json::to_value(i.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    match &i.value {
                        serde_json::Value::String(s) => s.clone(),
                        v => v.to_string(),
                    },
                    i.why.clone(),
                    i.fix.clone(),
                ]
            })
            .collect(),
    ));
    sec.findings.push(format!(
        "The audit flags {} of {} items on this host{}.",
        warn.len(),
        audit.items.len(),
        if warn.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                warn.iter()
                    .map(|i| i.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    sec.figure("audit", &audit.items);
    let mut verdict = Verdict::default()
        .fig("warned", Figure::count(warn.len() as f64))
        .fig("items", Figure::count(audit.items.len() as f64));
    let mut audit_part = "The audit flags {warned} of {items} settings here.".to_string();
    let mut writes = false;

    if let Some(per_munmap) = shootdowns(&mut sec, o, r, &runs) {
        verdict = verdict.fig("shootdowns_per_munmap", Figure::plain(per_munmap));
        audit_part = "The audit flags {warned} of {items} settings; munmaps beside a \
                      running thread raise {shootdowns_per_munmap} shootdown interrupts per \
                      munmap. \
                      Both matter to threads that write file mappings or share a process \
                      with munmapping threads."
            .to_string();
    }
    if let Some([p999_msync, p999_no_msync, max_msync]) = writeback(&mut sec, r, &runs) {
        verdict = verdict
            .fig("p999_msync", Figure::ns(p999_msync))
            .fig("p999_no_msync", Figure::ns(p999_no_msync))
            .fig("max_msync", Figure::ns(max_msync));
        writes = true;
    }
    sec.verdict = if writes {
        verdict.say(&format!(
            "Writes to a shared file mapping reach p99.9 {{p999_msync}} (max {{max_msync}}) \
             while another thread msyncs it, against {{p999_no_msync}} without writeback, \
             measured. {audit_part}"
        ))
    } else {
        verdict.say(&format!(
            "The writeback experiment did not run here (see the notes). {audit_part}"
        ))
    };
    sec
}

/// The section's title, question, method and the seed's figure.
fn header() -> Section {
    Section::new(
        "This host's latency hazards",
        "What on this machine can make page tables change under a latency-sensitive program, and what \
         do TLB shootdowns and writeback cost here?",
        "The audit reads this host's settings (5-level paging, THP, KSM, NUMA balancing, swap, \
         PT_RECLAIM, split locks, hypervisor, shootdown rate, writable file mappings). Then, on the \
         kernel: one thread maps, touches and unmaps a page in a loop while another reads its own \
         memory (shootdowns per munmap), and a thread writes to a shared file mapping every \
         millisecond while another msyncs it (write latency with and without writeback).",
        "100,000 munmaps gave 100,016 tlb:tlb_flush events; writeback write-protects PTEs and causes \
         jitter of hundreds of microseconds; fixes: prefault, mlock, MAP_POPULATE, huge pages, no swap, \
         no writable file mappings.",
    )
}

/// The shootdowns of munmaps beside a running thread, on the kernel and
/// the model; the kernel's shootdowns per munmap when it ran.
fn shootdowns(sec: &mut Section, o: StudyOptions, r: &Results, runs: &Runs) -> Option<f64> {
    let churn = churn(o);
    let model_sd = r.model(runs.shootdown_model);
    let ipis_model = mean(&model_sd[0], "churned", counters::IPIS.name);
    if let Some(k) = r.kernel(runs.shootdown_kernel) {
        if let Some(s) = summary(k, "churned", counters::TLB_SHOOTDOWNS.name, Quantity::Count) {
            sec.findings.push(format!(
                "{} munmaps while a second thread of the process reads its own memory raised {} TLB-shootdown \
                 interrupts on this machine ({:.2} per munmap; the model, with each thread on its own \
                 CPU, sends {} IPIs, {:.2} per munmap). The seed: 100,000 munmaps, 100,016 flushes.",
                count(churn as f64),
                estimate(&s, Unit::Count),
                s.mean / churn as f64,
                count(ipis_model),
                ipis_model / churn as f64
            ));
            sec.figure("kernel_shootdowns", &s);
            sec.figure("model_ipis", count_figure(ipis_model));
            return Some(s.mean / churn as f64);
        }
    }
    None
}

/// Write latency to a shared file mapping with and without msync (kernel):
/// the finding, the percentile chart and its figures; the p99.9 with and
/// without msync and the maximum with it, when both ran.
fn writeback(sec: &mut Section, r: &Results, runs: &Runs) -> Option<[f64; 3]> {
    let (with_sync, without) = (r.kernel(runs.writeback), r.kernel(runs.no_writeback));
    let lat = |r: Option<&ConfigResult>| {
        r.and_then(|r| r.runs.first())
            .and_then(|run| run.marks.iter().find_map(|m| m.latency.clone()))
    };
    // The tail of each run's writes, read once: the text, the chart and
    // study.json all show these values.
    let tail = |h: &Option<workload::result::LatencyHistogram>| {
        h.as_ref().and_then(report::chart::tail_values)
    };
    if let (Some(a), Some(b), Some(ta), Some(tb)) = (
        lat(with_sync),
        lat(without),
        tail(&lat(with_sync)),
        tail(&lat(without)),
    ) {
        // Indices into tail_values: p50, p90, p99, p99.9, p99.99, max.
        let (p99, p999, max) = (2, 3, 5);
        // Each percentile a figure of its own, and the chart's data the
        // same figures by those names.
        let mut named = |series: &str, prefix: &str, t: &[f64]| {
            let names = ["p50", "p90", "p99", "p99_9", "p99_99", "max"];
            let axis = report::chart::TAIL_PERCENTILES
                .iter()
                .map(|(_, l)| *l)
                .chain(["max"]);
            let mut points = Vec::new();
            for ((n, x), v) in names.iter().zip(axis).zip(t) {
                let name = format!("{prefix}_{n}_ns");
                sec.figure(&name, Figure::ns(*v));
                points.push(ChartPoint {
                    x: x.into(),
                    figure: Figure::ns(*v),
                    name,
                    label: None,
                });
            }
            ChartSeries {
                name: series.into(),
                points,
            }
        };
        let data = vec![
            named("with msync", "write_msync", &ta),
            named("without msync", "write_no_msync", &tb),
        ];
        sec.findings.push(format!(
            "Writes to a shared file mapping take p99 {}, p99.9 {} and at most {} while another \
             thread msyncs it, against p99 {}, p99.9 {} and at most {} without writeback ({} writes \
             each, one run): each msync write-protects the dirty PTEs and the next write faults.",
            ns(ta[p99]),
            ns(ta[p999]),
            ns(ta[max]),
            ns(tb[p99]),
            ns(tb[p999]),
            ns(tb[max]),
            count(a.count as f64)
        ));
        // percentile_chart draws each line through tail_values, the
        // function that made `data`.
        sec.push_chart(
            "Write latency to a shared file mapping by percentile, p50 to the maximum, with and \
             without msync (kernel, one run each; log scale so that the tail shows)",
            chart::percentile_chart(
                &ChartSpec::new(
                    "Write latency percentiles to a shared file mapping, with and without msync (kernel)",
                    "percentile of writes",
                    "write latency (log scale)",
                )
                .unit(Unit::Nanoseconds),
                &[("with msync", &a), ("without msync", &b)],
            ),
            data,
        );
        sec.figure("writeback_latency", [&a, &b]);
        return Some([ta[p999], tb[p999], ta[max]]);
    }
    None
}
