//! `ptlab run` and `ptlab compare`.
//!
//! Output: the terminal table, or `--json` / `--csv` on stdout instead (not
//! both: clap refuses the pair with a one-line error), and any of
//! `--export-json`, `--export-csv`, `--export-markdown` written to files beside
//! whatever stdout shows. JSON and CSV hold every run's raw values.

use super::print_json;
use crate::cli::{CompareArgs, ModelOpts, RepeatOpts, ReplayArgs, RunArgs};
use crate::fail::{bad, CmdResult, Failure};
use crate::out::{out, outln};
use crate::progress::Progress;
use experiment::config::{self, RunConfig};
use experiment::exec::{self, ConfigResult, ExecError, ExecOptions};
use experiment::validate::time::Load;
use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;
use workload::result::Run;

impl From<ExecError> for Failure {
    fn from(e: ExecError) -> Failure {
        if e.is_bad_input() {
            Failure::BadInput(e.to_string())
        } else {
            Failure::Error(anyhow::Error::new(e))
        }
    }
}

/// `e` as a failure that says which workload it is about. Errors of the
/// workload itself (its file, line and column, or "not found") name it
/// already; every other one (a refused option, the backend) gets the name
/// in front.
pub fn about_workload(workload: &str, e: ExecError) -> Failure {
    let message = experiment::document::error_message(workload, &e);
    if e.is_bad_input() {
        Failure::BadInput(message)
    } else {
        Failure::Error(anyhow::anyhow!(message))
    }
}

/// The configuration the model options (and `--backend`) describe.
pub fn config_from(backend: &str, m: &ModelOpts) -> Result<RunConfig, Failure> {
    let mut base = match &m.config {
        Some(path) => {
            crate::suggest::check_inline(path)?;
            config::parse_arg(path).map_err(bad)?
        }
        None => RunConfig::model_default(),
    };
    let cpus = m.cpus.map(|c| c.to_string());
    let pairs = [
        ("geometry", m.geometry.as_deref()),
        ("locking", m.locking.as_deref()),
        ("reclaim", m.reclaim.as_deref()),
        ("thp", m.thp.as_deref()),
        ("mthp", m.mthp.as_deref()),
        ("tlb", m.tlb.as_deref()),
        ("cpus", cpus.as_deref()),
        ("costs", m.costs.as_deref()),
        ("pv-flush", m.pv_flush.as_deref()),
    ];
    for (k, v) in pairs {
        if let Some(v) = v {
            crate::suggest::check_preset("", k, v)?;
            base = base.with(k, v).map_err(bad)?;
        }
    }
    if backend != "model" {
        base = base.with("backend", backend).map_err(bad)?;
    }
    Ok(base)
}

/// Makes the command line's default cost file (`PTLAB_COSTS`, or this
/// host's own, calibrated the first time; see `crate::host_costs`) the one
/// of every model configuration that names none. Nothing is resolved (or
/// calibrated) when every configuration names its file or runs on the
/// kernel.
pub fn with_host_costs(configs: &[RunConfig]) -> Result<(), Failure> {
    let needs = |c: &RunConfig| c.backend == config::BackendKind::Model && c.model.costs.is_none();
    crate::host_costs::install_default(configs.iter().any(needs))
}

/// The header lines of `configs`' cost files (each once): the file, the
/// machine it describes, and whether that is this host.
pub fn costs_lines(configs: &[RunConfig]) -> Vec<String> {
    let mut files: Vec<Option<&str>> = Vec::new();
    for c in configs {
        if c.backend == config::BackendKind::Model {
            let f = c.model.costs.as_deref();
            if !files.contains(&f) {
                files.push(f);
            }
        }
    }
    files
        .into_iter()
        .filter_map(crate::host_costs::label_line)
        .collect()
}

/// Whether any of `configs` runs on the kernel.
fn any_on_kernel(configs: &[RunConfig]) -> bool {
    configs
        .iter()
        .any(|c| c.backend == config::BackendKind::Kernel)
}

/// The host's load average before and after kernel runs, as one line
/// (`None` when no configuration ran on the kernel, or /proc is unreadable).
fn load_line(configs: &[RunConfig], before: &Option<Load>, after: &Option<Load>) -> Option<String> {
    let (Some(b), Some(a)) = (before, after) else {
        return None;
    };
    any_on_kernel(configs).then(|| {
        format!(
            "host load average (1, 5, 15 min) before {:.2} {:.2} {:.2}, after {:.2} {:.2} {:.2} \
             on {} CPUs (it counts these runs too): other processes' work on the same CPUs is \
             in the kernel's elapsed times, not in cpu_ns",
            b.avg[0],
            b.avg[1],
            b.avg[2],
            a.avg[0],
            a.avg[1],
            a.avg[2],
            host::cpu::online_cpus().unwrap_or(1)
        )
    })
}

/// How the kernel runs placed their threads, as one line (`None` when no
/// configuration ran on the kernel): pinning changes what some workloads
/// count (a page waits in its CPU's LRU batch), so a reader must know.
fn pin_line(configs: &[RunConfig], pinned: bool) -> Option<String> {
    any_on_kernel(configs).then(|| {
        if pinned {
            "kernel threads: pinned, thread i on the i-th CPU ptlab may run on (--pin-threads)"
                .to_string()
        } else {
            "kernel threads: not pinned, placed by the scheduler (--pin-threads pins them)"
                .to_string()
        }
    })
}

/// The load readings as the JSON documents carry them (`load`).
fn load_json(before: &Option<Load>, after: &Option<Load>) -> Value {
    serde_json::json!({ "before": before, "after": after })
}

/// Progress of `total` runs of `what` (a bar on a terminal, lines elsewhere).
pub fn progress(total: usize, what: &str, unit: &'static str) -> Progress {
    let template = format!("{{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit}s, ETA {{eta}}");
    Progress::new(total, what, unit, &template)
}

fn exec_options(r: &RepeatOpts) -> Result<ExecOptions, Failure> {
    if r.repeat == 0 {
        return Err(Failure::BadInput("--repeat must be at least 1".into()));
    }
    Ok(ExecOptions {
        timeout: Duration::from_secs(r.timeout),
        repeat: r.repeat,
        // The model warms up as the kernel does (its cold start once made
        // the first configuration of a compare 6 to 13 times slower).
        warmup: Some(exec::warmup_on_both(r.repeat, r.warmup)),
        pin_threads: r.pin_threads,
    })
}

fn execute(
    workload: &str,
    configs: &[RunConfig],
    r: &RepeatOpts,
) -> Result<Vec<ConfigResult>, Failure> {
    let opts = exec_options(r)?;
    let total = (opts.repeat + exec::warmup_runs(&opts)) * configs.len();
    let labels: Vec<&str> = configs.iter().map(|c| c.label.as_str()).collect();
    let mut pb = progress(
        total,
        &format!("{workload} ({})", labels.join(" | ")),
        "run",
    );
    let within = pb.within_run();
    let res = exec::run_all_watched(
        workload,
        configs,
        &opts,
        &mut |p: exec::Progress| {
            pb.set(p.done, p.total);
        },
        Some(within),
    );
    pb.finish();
    res.map_err(|e| about_workload(workload, e))
}

/// Whether a table shows counter `k` unless `--all`: the registry's main
/// counters (those the tables order) and the derived per-fault and per-access
/// times.
fn is_main_counter(k: &str) -> bool {
    counters::is_default_column(k)
}

/// `runs` with only the main counters, for the terminal tables.
fn main_counters(runs: &[Run], all: bool) -> Vec<Run> {
    let mut runs = runs.to_vec();
    if !all {
        for r in &mut runs {
            for m in &mut r.marks {
                m.counters.values.retain(|k, _| is_main_counter(k));
            }
        }
    }
    runs
}

/// The per-access histogram of a touch with `latency = true`. On the kernel
/// it is the machine's latency; on the model in virtual time it is each
/// access's predicted cost; on the model's real-thread executor it is
/// ptlab's own time per modeled access (its speed), and is headed so, never
/// as a latency of the modeled system.
fn print_latency(runs: &[Run], cfg: &RunConfig) -> Result<(), Failure> {
    let on_model = cfg.backend == config::BackendKind::Model;
    let threads = cfg.model.executor == Some(backend::model::Executor::Threads);
    if let Some(run) = runs.first() {
        for m in &run.marks {
            if let Some(l) = &m.latency {
                if on_model && !threads {
                    outln!(
                        "\npredicted time per access before mark \"{}\" (the cost model's, in virtual time):",
                        m.name
                    )?;
                } else if on_model {
                    outln!(
                        "\nptlab's own time per modeled access before mark \"{}\" (the model's speed, not a latency of the modeled system):",
                        m.name
                    )?;
                } else {
                    outln!("\nlatency per access before mark \"{}\":", m.name)?;
                }
                out!("{}", report::latency::render_log2(l, "nsecs"))?;
            }
        }
    }
    Ok(())
}

/// Every run's raw values as long-form CSV.
fn runs_csv(results: &[ConfigResult]) -> Result<String, Failure> {
    let configs: Vec<report::ConfigRuns<'_>> = results
        .iter()
        .map(|r| report::ConfigRuns {
            config: &r.config.label,
            workload: &r.workload,
            runs: &r.runs,
        })
        .collect();
    Ok(report::runs_to_csv(&configs).map_err(anyhow::Error::new)?)
}

/// Writes `text` to `path` (an export), saying which file failed.
fn write_export(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|e| {
        Failure::Error(anyhow::Error::new(e).context(format!("writing {}", path.display())))
    })
}

/// Writes the exports `r` asks for: `json` the document, every run's values
/// as CSV, `markdown` the tables.
fn write_exports(
    r: &RepeatOpts,
    json: &Value,
    results: &[ConfigResult],
    markdown: &str,
) -> Result<(), Failure> {
    if let Some(p) = &r.output.export_json {
        let text = serde_json::to_string_pretty(json).map_err(anyhow::Error::from)?;
        write_export(p, &format!("{text}\n"))?;
    }
    if let Some(p) = &r.output.export_csv {
        write_export(p, &runs_csv(results)?)?;
    }
    if let Some(p) = &r.output.export_markdown {
        write_export(p, markdown)?;
    }
    Ok(())
}

/// The model's predicted time of the whole run, with the interval the cost
/// file's figures give and the file they came from: labelled "predicted",
/// never shown as if measured like the kernel's elapsed time.
fn print_prediction(r: &ConfigResult) -> Result<(), Failure> {
    let Some(end) = r.runs.last().and_then(|run| run.marks.last()) else {
        return Ok(());
    };
    let get = |c: &counters::Counter| end.counters.get(c.name).map(|v| v as f64);
    let (Some(ns), Some(lo), Some(hi)) = (
        get(&counters::PREDICTED_NS),
        get(&counters::PREDICTED_LO_NS),
        get(&counters::PREDICTED_HI_NS),
    ) else {
        return Ok(());
    };
    let t = |v| report::human(v, report::Unit::Nanoseconds);
    let from = format!(
        "costs {}",
        r.config
            .model
            .costs
            .as_deref()
            .or(backend::model::default_costs())
            .unwrap_or(timing::SHIPPED)
    );
    outln!(
        "{}: predicted {} [{}, {}] from {from} (the modeled system's time, not measured)",
        r.config.label,
        t(ns),
        t(lo),
        t(hi)
    )?;
    Ok(())
}

/// ", TLB zen4" for a model configuration (the preset `--tlb` names or the
/// one its geometry implies), nothing for the kernel.
fn tlb_note(c: &RunConfig) -> String {
    exec::tlb_used(c).map_or(String::new(), |t| format!(", TLB {t}"))
}

pub fn run(args: RunArgs) -> CmdResult {
    let cfg = config_from(&args.backend, &args.model)?;
    // A workload whose need this system does not meet is skipped, with
    // the one line saying why (not a failure).
    let w = experiment::exec::load(&args.workload, &cfg)
        .and_then(|w| experiment::exec::unmet_need(&w, &cfg))
        .map_err(|e| about_workload(&args.workload, e))?;
    if let Some(why) = w {
        return print_skipped(&args.workload, &why, &args.repeat.output);
    }
    with_host_costs(std::slice::from_ref(&cfg))?;
    let before = Load::read();
    let results = execute(&args.workload, std::slice::from_ref(&cfg), &args.repeat)?;
    let after = Load::read();
    print_run(&results, &args.repeat, &before, &after)
}

/// Says that `workload` was skipped, and why, in the form the output asks
/// for: with `--json` (and in `--export-json`'s file) one document
/// `{"workload", "skipped": true, "reason"}`; with `--csv` the line on
/// stderr and no rows; else the line.
fn print_skipped(workload: &str, why: &str, output: &crate::cli::OutputOpts) -> CmdResult {
    let doc = experiment::document::skipped(workload, why);
    if let Some(path) = &output.export_json {
        let text = serde_json::to_string_pretty(&doc).map_err(anyhow::Error::from)?;
        write_export(path, &format!("{text}\n"))?;
    }
    if output.json {
        return print_json(&doc);
    }
    if output.csv {
        eprintln!("{why}");
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{why}")?;
    Ok(ExitCode::SUCCESS)
}

/// Prints one configuration's result as `run` does (the table, or JSON or
/// CSV, and the exports), with the cost file's machine and, for the kernel,
/// the host's load before and after. A partial result (a replay stopped
/// early) says so in its heading and on stderr, and exits 1 (130 when
/// interrupted).
fn print_run(
    results: &[ConfigResult],
    repeat: &RepeatOpts,
    before: &Option<Load>,
    after: &Option<Load>,
) -> CmdResult {
    let r = &results[0];
    let configs = std::slice::from_ref(&r.config);
    let mut v = experiment::document::run(r);
    if r.config.backend == config::BackendKind::Kernel {
        v["load"] = load_json(before, after);
        v["pin_threads"] = repeat.pin_threads.into();
    }
    let table = report::views::run_table(&main_counters(&r.runs, repeat.output.all));
    let partial = r.partial.as_deref().map_or(String::new(), |why| {
        format!(", PARTIAL ({why}): the counters so far")
    });
    let heading = format!(
        "{} on {} ({}{}), {} run(s){partial}",
        r.workload,
        r.config.backend,
        r.config.label,
        tlb_note(&r.config),
        r.runs.len()
    );
    let markdown = format!("## {heading}\n\n{}", table.to_markdown());
    write_exports(repeat, &v, results, &markdown)?;
    let status = match r.partial.as_deref() {
        None => ExitCode::SUCCESS,
        Some(why) => {
            eprintln!(
                "warning: {}: the replay stopped early ({why}); its counters are those so far (partial)",
                r.workload
            );
            if why == backend::replay::Stopped::Interrupted.to_string() {
                ExitCode::from(crate::interrupt::EXIT_INTERRUPTED)
            } else {
                ExitCode::from(1)
            }
        }
    };
    if repeat.output.json {
        print_json(&v)?;
        return Ok(status);
    }
    if repeat.output.csv {
        out!("{}", runs_csv(results)?)?;
        return Ok(status);
    }
    outln!("{heading}")?;
    for line in costs_lines(configs) {
        outln!("{line}")?;
    }
    if let Some(line) = load_line(configs, before, after) {
        outln!("{line}")?;
    }
    if let Some(line) = pin_line(configs, repeat.pin_threads) {
        outln!("{line}")?;
    }
    out!("{}", table.render())?;
    print_prediction(r)?;
    print_latency(&r.runs, &r.config)?;
    for w in &r.aggregate.warnings {
        eprintln!("warning: {w}");
    }
    Ok(status)
}

/// `ptlab replay TRACE`: a trace on the model, with its own options (the
/// window, `--prefault`, no time limit unless asked); SIGINT stops it with
/// the counters so far.
pub fn replay(args: ReplayArgs) -> CmdResult {
    let path = args.trace.display().to_string();
    if let Err(e) = std::fs::metadata(&args.trace) {
        return Err(Failure::BadInput(format!("{path}: {e}")));
    }
    if !experiment::replay::is_trace(&path) {
        return Err(Failure::BadInput(format!(
            "{path}: byte 0: not a ptlab trace (it does not start with \"PTLTRACE\")"
        )));
    }
    let cfg = config_from("model", &args.model)?;
    with_host_costs(std::slice::from_ref(&cfg))?;
    // Held until the counters so far are printed: a signal then exits
    // (crate interrupt) after them, not before.
    let _section = ::interrupt::Section::enter(format!(
        "the replay of {path}: its counters so far printed, marked partial"
    ));
    let repeat = RepeatOpts {
        repeat: args.repeat,
        warmup: args.warmup_runs,
        // No limit unless asked: `Duration::from_secs(u64::MAX)` is past
        // any representable instant, which the replay takes as none.
        timeout: args.timeout.unwrap_or(u64::MAX),
        pin_threads: false,
        output: args.output,
    };
    let opts = exec_options(&repeat)?;
    let interrupt = crate::interrupt::on_sigint().map_err(|e| {
        Failure::Error(anyhow::Error::new(e).context("installing the SIGINT handler"))
    })?;
    let trace = experiment::replay::TraceOptions {
        window: backend::replay::Window {
            skip: args.window.skip,
            warmup: args.window.warmup,
            limit: args.window.limit,
        },
        prefault: args.window.prefault,
        interrupt: Some(interrupt),
    };
    let total = opts.repeat + experiment::exec::warmup_runs(&opts);
    let mut pb = progress(total, &format!("{path} ({})", cfg.label), "run");
    let within = pb.within_run();
    let res = experiment::replay::run_trace_all(
        &args.trace,
        std::slice::from_ref(&cfg),
        &opts,
        &trace,
        &mut |p: exec::Progress| pb.set(p.done, p.total),
        Some(within),
    );
    pb.finish();
    let results = res.map_err(|e| about_workload(&path, e))?;
    let load = Load::read();
    print_run(&results, &repeat, &load, &load)
}

pub fn compare(args: CompareArgs) -> CmdResult {
    let configs = args
        .configs
        .iter()
        .map(|c| {
            crate::suggest::check_inline(c)?;
            let c = config::parse_arg(c).map_err(bad)?;
            match &args.costs {
                Some(f) if c.backend == config::BackendKind::Model => {
                    c.with("costs", f).map_err(bad)
                }
                _ => Ok(c),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    with_host_costs(&configs)?;
    let before = Load::read();
    let results = execute(&args.workload, &configs, &args.repeat)?;
    let after = Load::read();
    let mut v = experiment::document::compare(&results);
    if any_on_kernel(&configs) {
        v["load"] = load_json(&before, &after);
        v["pin_threads"] = args.repeat.pin_threads.into();
    }
    let shown: Vec<Vec<Run>> = results
        .iter()
        .map(|r| main_counters(&r.runs, args.repeat.output.all))
        .collect();
    let pairs: Vec<(&str, &[Run])> = results
        .iter()
        .zip(&shown)
        .map(|(r, runs)| (r.config.label.as_str(), runs.as_slice()))
        .collect();
    let marks = report::views::mark_names(&results[0].runs);
    let tables: Vec<report::Table> = marks
        .iter()
        .map(|m| report::views::compare_table(m, &pairs).with_title(format!("mark \"{m}\"")))
        .collect();
    let markdown = format!(
        "## {} compared\n\n{}",
        args.workload,
        tables
            .iter()
            .map(report::Table::to_markdown)
            .collect::<Vec<_>>()
            .join("\n")
    );
    write_exports(&args.repeat, &v, &results, &markdown)?;
    if args.repeat.output.json {
        return print_json(&v);
    }
    if args.repeat.output.csv {
        out!("{}", runs_csv(&results)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for line in costs_lines(&configs) {
        outln!("{line}")?;
    }
    if let Some(line) = load_line(&configs, &before, &after) {
        outln!("{line}")?;
    }
    if let Some(line) = pin_line(&configs, args.repeat.pin_threads) {
        outln!("{line}")?;
    }
    for t in &tables {
        outln!("{}", t.render())?;
    }
    for r in &results {
        if let Some(t) = exec::tlb_used(&r.config) {
            outln!("{}: TLB {t}", r.config.label)?;
        }
    }
    for r in &results {
        print_prediction(r)?;
    }
    for r in &results {
        for w in &r.aggregate.warnings {
            eprintln!("warning ({}): {w}", r.config.label);
        }
    }
    // A trace's replay past the time limit: its counters so far are in the
    // table, the configurations after it were not run.
    if let Some(r) = results.iter().find(|r| r.partial.is_some()) {
        eprintln!(
            "warning ({}): the replay stopped early ({}); its counters are those so far (partial), and the configurations after it were not run",
            r.config.label,
            r.partial.as_deref().unwrap_or_default()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
