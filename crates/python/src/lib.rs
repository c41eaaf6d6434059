//! `ptlab._native`: the model behind the Python package `ptlab`
//! (python/ptlab, docs/python.md). Every function takes and returns plain
//! values or JSON text; the package wraps them in classes and DataFrames.
//!
//! Invariants: the documents are `experiment::document`'s, the very bytes
//! of `ptlab run --json` / `compare --json` for the same runs; errors carry
//! the command line's messages (after its `error: `), as `BadInput` where
//! the command line exits 2 and `RunError` where it exits 1; the GIL is
//! released while the model runs, so Python threads (and Ray's workers)
//! are not held up.

use experiment::config::{self, RunConfig};
use experiment::exec::{self, ConfigResult, ExecError, ExecOptions};
use experiment::{document, sweep};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::time::Duration;

create_exception!(
    _native,
    BadInput,
    PyValueError,
    "The input is wrong (the command line exits 2 on it): the message says where and what."
);
create_exception!(
    _native,
    RunError,
    PyRuntimeError,
    "A run failed (the command line exits 1 on it)."
);

/// A configuration from `(key, value)` pairs, set one after the other on the
/// model's defaults as the command line's options are.
fn config_of(pairs: &[(String, String)]) -> PyResult<RunConfig> {
    let mut c = RunConfig::model_default();
    for (k, v) in pairs {
        c = c.with(k, v).map_err(|e| BadInput::new_err(e.to_string()))?;
    }
    Ok(c)
}

fn exec_error(workload: &str, e: &ExecError) -> PyErr {
    let m = document::error_message(workload, e);
    if e.is_bad_input() {
        BadInput::new_err(m)
    } else {
        RunError::new_err(m)
    }
}

fn options(repeat: usize, timeout: f64) -> PyResult<ExecOptions> {
    if repeat == 0 {
        return Err(BadInput::new_err("repeat must be at least 1"));
    }
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(BadInput::new_err(
            "timeout must be a positive number of seconds",
        ));
    }
    Ok(ExecOptions {
        timeout: Duration::from_secs_f64(timeout),
        repeat,
        warmup: Some(exec::warmup_on_both(repeat, None)),
        ..ExecOptions::default()
    })
}

/// Runs `workload` (a built-in name, a workload file or a trace; or, with
/// `text`, the workload TOML given) under every configuration.
fn execute(
    py: Python<'_>,
    workload: &str,
    text: Option<&str>,
    configs: Vec<RunConfig>,
    opts: ExecOptions,
) -> PyResult<Vec<ConfigResult>> {
    let name = workload.to_string();
    let text = text.map(str::to_string);
    let res = py.detach(move || match text {
        None => exec::run_all(&name, &configs, &opts, &mut |_| {}),
        Some(t) => configs
            .iter()
            .map(|c| Ok((c.clone(), workload::parse(&t, &name, exec::va_bits_of(c))?)))
            .collect::<Result<Vec<_>, ExecError>>()
            .and_then(|plans| exec::run_plans(&plans, &opts, &mut |_| {})),
    });
    res.map_err(|e| exec_error(workload, &e))
}

fn to_text(v: &serde_json::Value) -> PyResult<String> {
    serde_json::to_string_pretty(v).map_err(|e| RunError::new_err(e.to_string()))
}

/// The JSON document of `ptlab run WORKLOAD --json` with `config` set.
#[pyfunction]
#[pyo3(signature = (workload, config, text=None, repeat=1, timeout=120.0))]
fn run(
    py: Python<'_>,
    workload: &str,
    config: Vec<(String, String)>,
    text: Option<&str>,
    repeat: usize,
    timeout: f64,
) -> PyResult<String> {
    let cfg = config_of(&config)?;
    // A workload whose `requires` this configuration does not meet is
    // skipped, in the document `ptlab run --json` prints for it.
    if text.is_none() {
        let unmet = exec::load(workload, &cfg)
            .and_then(|w| exec::unmet_need(&w, &cfg))
            .map_err(|e| exec_error(workload, &e))?;
        if let Some(why) = unmet {
            return to_text(&document::skipped(workload, &why));
        }
    }
    let results = execute(py, workload, text, vec![cfg], options(repeat, timeout)?)?;
    to_text(&document::run(&results[0]))
}

/// The JSON document of `ptlab compare WORKLOAD --config ... --json`.
#[pyfunction]
#[pyo3(signature = (workload, configs, text=None, repeat=1, timeout=120.0))]
fn compare(
    py: Python<'_>,
    workload: &str,
    configs: Vec<Vec<(String, String)>>,
    text: Option<&str>,
    repeat: usize,
    timeout: f64,
) -> PyResult<String> {
    if configs.is_empty() {
        return Err(BadInput::new_err(
            "compare needs at least one configuration",
        ));
    }
    let cfgs = configs
        .iter()
        .map(|c| config_of(c))
        .collect::<PyResult<Vec<_>>>()?;
    let results = execute(py, workload, text, cfgs, options(repeat, timeout)?)?;
    to_text(&document::compare(&results))
}

/// The configuration keys (as `ptlab run --config` takes them).
#[pyfunction]
fn config_keys() -> Vec<&'static str> {
    config::KEYS.to_vec()
}

/// A sweep file's name and tasks (each a JSON text), checked as `ptlab
/// sweep` checks it.
#[pyfunction]
fn sweep_tasks(path: &str) -> PyResult<(String, Vec<String>)> {
    let f = sweep::read(path).map_err(|e| BadInput::new_err(e.to_string()))?;
    let tasks = sweep::expand(&f)
        .iter()
        .map(|t| serde_json::to_string(t).map_err(|e| RunError::new_err(e.to_string())))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((f.name, tasks))
}

/// Runs one task (JSON from `sweep_tasks`), retried once when it fails, as
/// `ptlab sweep` runs it; its outcome as JSON. Never raises for a failed
/// run: the outcome carries the message.
#[pyfunction]
fn sweep_run(py: Python<'_>, task: &str) -> PyResult<String> {
    let t: sweep::Task =
        serde_json::from_str(task).map_err(|e| BadInput::new_err(format!("task: {e}")))?;
    let o = py.detach(move || sweep::run_task(&t));
    serde_json::to_string(&o).map_err(|e| RunError::new_err(e.to_string()))
}

/// An outcome for a task that could not run at all (its worker died): the
/// table keeps it as failed, with `message` and `attempts`.
#[pyfunction]
fn sweep_failed(task: &str, message: String, attempts: u32) -> PyResult<String> {
    let t: sweep::Task =
        serde_json::from_str(task).map_err(|e| BadInput::new_err(format!("task: {e}")))?;
    let config = t
        .pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let o = sweep::Outcome {
        task: t,
        config,
        tlb: None,
        attempts,
        result: Err(message),
    };
    serde_json::to_string(&o).map_err(|e| RunError::new_err(e.to_string()))
}

/// The table of the outcomes (JSON texts), as `ptlab sweep --json` writes it.
#[pyfunction]
fn sweep_table(name: &str, outcomes: Vec<String>) -> PyResult<String> {
    let os = outcomes
        .iter()
        .map(|o| serde_json::from_str::<sweep::Outcome>(o))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BadInput::new_err(format!("outcome: {e}")))?;
    to_text(&sweep::Table::new(name, &os).to_json())
}

/// Every task of the sweep file on `jobs` local threads: the table's JSON.
#[pyfunction]
fn sweep_local(py: Python<'_>, path: &str, jobs: usize) -> PyResult<String> {
    let f = sweep::read(path).map_err(|e| BadInput::new_err(e.to_string()))?;
    let tasks = sweep::expand(&f);
    let outcomes = py.detach(move || sweep::run_local(&tasks, jobs.max(1), &mut |_, _, _| {}));
    to_text(&sweep::Table::new(&f.name, &outcomes).to_json())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("BadInput", m.py().get_type::<BadInput>())?;
    m.add("RunError", m.py().get_type::<RunError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(config_keys, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_tasks, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_failed, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_table, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
    Ok(())
}
