//! `ptlab run` and `ptlab compare`.

use super::print_json;
use crate::cli::{CompareArgs, ModelOpts, RepeatOpts, RunArgs};
use crate::fail::{bad, CmdResult, Failure};
use crate::out::{out, outln};
use crate::progress::Progress;
use experiment::config::{self, RunConfig};
use experiment::exec::{self, ConfigResult, ExecError, ExecOptions};
use serde_json::{json, Value};
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
    if matches!(e, ExecError::Workload(_)) {
        return Failure::from(e);
    }
    match Failure::from(e) {
        Failure::BadInput(m) => Failure::BadInput(format!("workload {workload:?}: {m}")),
        Failure::Error(e) => Failure::Error(e.context(format!("workload {workload:?}"))),
        Failure::Closed => Failure::Closed,
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
        warmup: r.warmup,
    })
}

fn execute(
    workload: &str,
    configs: &[RunConfig],
    r: &RepeatOpts,
) -> Result<Vec<ConfigResult>, Failure> {
    let opts = exec_options(r)?;
    let total = (opts.repeat + opts.warmup.unwrap_or(0)) * configs.len();
    let labels: Vec<&str> = configs.iter().map(|c| c.label.as_str()).collect();
    let mut pb = progress(
        total,
        &format!("{workload} ({})", labels.join(" | ")),
        "run",
    );
    let res = exec::run_all(workload, configs, &opts, &mut |p: exec::Progress| {
        pb.set(p.done, p.total);
    });
    pb.finish();
    res.map_err(|e| about_workload(workload, e))
}

/// One configuration's result as JSON: the marks of its (first) run, with
/// the spread of every counter when repeated.
pub fn result_json(r: &ConfigResult) -> Value {
    let marks: Vec<Value> = r
        .aggregate
        .marks
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let first = r.runs.first().and_then(|run| run.marks.get(i));
            let mut mark = json!({
                "name": m.name,
                "counters": first.map(|f| serde_json::to_value(&f.counters).unwrap_or(Value::Null)),
            });
            if r.runs.len() > 1 {
                let stats: serde_json::Map<String, Value> = m
                    .counters
                    .iter()
                    .map(|(k, c)| {
                        (
                            k.clone(),
                            serde_json::to_value(&c.stats).unwrap_or(Value::Null),
                        )
                    })
                    .collect();
                mark["stats"] = Value::Object(stats);
            }
            if let Some(l) = first.and_then(|f| f.latency.as_ref()) {
                mark["latency"] = serde_json::to_value(l).unwrap_or(Value::Null);
            }
            mark
        })
        .collect();
    json!({
        "workload": r.workload,
        "backend": r.config.backend,
        "config": r.config,
        "marks": marks,
        "runs": r.runs.len(),
        "warnings": r.aggregate.warnings,
    })
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

fn host_json() -> Value {
    serde_json::to_value(host::Fingerprint::read()).unwrap_or(Value::Null)
}

fn print_latency(runs: &[Run]) -> Result<(), Failure> {
    if let Some(run) = runs.first() {
        for m in &run.marks {
            if let Some(l) = &m.latency {
                outln!("\nlatency per access before mark \"{}\":", m.name)?;
                out!("{}", report::latency::render_log2(l, "nsecs"))?;
            }
        }
    }
    Ok(())
}

pub fn run(args: RunArgs) -> CmdResult {
    let cfg = config_from(&args.backend, &args.model)?;
    let results = execute(&args.workload, std::slice::from_ref(&cfg), &args.repeat)?;
    let r = &results[0];
    if args.repeat.json {
        let mut v = result_json(r);
        v["host"] = host_json();
        return print_json(&v);
    }
    let table = if args.repeat.csv {
        report::views::run_table(&r.runs)
    } else {
        report::views::run_table(&main_counters(&r.runs, args.repeat.all))
    };
    if args.repeat.csv {
        out!("{}", table.to_csv().map_err(anyhow::Error::new)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} on {} ({}), {} run(s)",
        r.workload,
        r.config.backend,
        r.config.label,
        r.runs.len()
    )?;
    out!("{}", table.render())?;
    print_latency(&r.runs)?;
    for w in &r.aggregate.warnings {
        eprintln!("warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn compare(args: CompareArgs) -> CmdResult {
    let configs = args
        .configs
        .iter()
        .map(|c| {
            crate::suggest::check_inline(c)?;
            config::parse_arg(c).map_err(bad)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let results = execute(&args.workload, &configs, &args.repeat)?;
    if args.repeat.json {
        return print_json(&json!({
            "workload": results.first().map(|r| r.workload.clone()),
            "configs": results.iter().map(result_json).collect::<Vec<_>>(),
            "host": host_json(),
        }));
    }
    let shown: Vec<Vec<Run>> = results
        .iter()
        .map(|r| main_counters(&r.runs, args.repeat.all || args.repeat.csv))
        .collect();
    let pairs: Vec<(&str, &[Run])> = results
        .iter()
        .zip(&shown)
        .map(|(r, runs)| (r.config.label.as_str(), runs.as_slice()))
        .collect();
    let marks = report::views::mark_names(&results[0].runs);
    let mut csv = String::new();
    for m in &marks {
        let t = report::views::compare_table(m, &pairs).with_title(format!("mark \"{m}\""));
        if args.repeat.csv {
            csv.push_str(&t.to_csv().map_err(anyhow::Error::new)?);
        } else {
            outln!("{}", t.render())?;
        }
    }
    if args.repeat.csv {
        out!("{csv}")?;
    }
    for r in &results {
        for w in &r.aggregate.warnings {
            eprintln!("warning ({}): {w}", r.config.label);
        }
    }
    Ok(ExitCode::SUCCESS)
}
