//! `ptlab study`: the experiments that answer the seeds' questions on this
//! machine, on the model and on the kernel, with one finding per question.
//!
//! Each section (`sections`) states its question and method, runs its
//! experiments through [`Lab`] (which counts them for the progress bar and
//! keeps every result for `study.json`), and returns its findings as
//! sentences with their numbers, a table and charts. [`render`] lays the
//! sections out as one self-contained HTML page and a terminal summary.

pub mod render;
mod sections;

use crate::config::{self, RunConfig};
use crate::exec::{self, ConfigResult, ExecError, ExecOptions};
use serde::Serialize;
use serde_json::Value;
use std::time::{Duration, Instant};

/// How much to run.
#[derive(Debug, Clone, Copy)]
pub struct StudyOptions {
    /// The short version (under a minute).
    pub quick: bool,
}

impl StudyOptions {
    /// `quick` or `full` figure.
    pub(crate) fn pick<T>(&self, quick: T, full: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }
}

/// A table of a section, as plain text cells (for JSON and HTML alike).
#[derive(Debug, Clone, Serialize)]
pub struct TableData {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// A chart of a section: its SVG text (not in the JSON) and caption.
#[derive(Debug, Clone, Serialize)]
pub struct Chart {
    pub caption: String,
    #[serde(skip)]
    pub svg: String,
}

/// One answered question.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub question: String,
    pub method: String,
    /// The seed's own figure, to stand beside ours.
    pub seed: String,
    /// One sentence per finding, each with its number (and CI where repeated).
    pub findings: Vec<String>,
    pub tables: Vec<TableData>,
    pub charts: Vec<Chart>,
    /// The figures behind the findings, by name.
    pub figures: serde_json::Map<String, Value>,
    /// Why a part could not be run here (e.g. the kernel refused it).
    pub notes: Vec<String>,
}

impl Section {
    pub(crate) fn new(id: &str, title: &str, question: &str, method: &str, seed: &str) -> Section {
        Section {
            id: id.into(),
            title: title.into(),
            question: question.into(),
            method: method.into(),
            seed: seed.into(),
            findings: Vec::new(),
            tables: Vec::new(),
            charts: Vec::new(),
            figures: serde_json::Map::new(),
            notes: Vec::new(),
        }
    }

    pub(crate) fn figure(&mut self, name: &str, v: impl Serialize) {
        self.figures
            .insert(name.into(), serde_json::to_value(v).unwrap_or(Value::Null));
    }

    pub(crate) fn chart(&mut self, caption: &str, svg: Result<String, report::ReportError>) {
        match svg {
            Ok(svg) => self.charts.push(Chart {
                caption: caption.into(),
                svg,
            }),
            Err(e) => self
                .notes
                .push(format!("chart \"{caption}\" not drawn: {e}")),
        }
    }
}

/// The whole study.
#[derive(Debug, Clone, Serialize)]
pub struct Study {
    pub version: String,
    pub quick: bool,
    pub host: host::Fingerprint,
    pub elapsed_s: f64,
    pub runs: usize,
    pub sections: Vec<Section>,
}

/// Runs experiments for the sections, counting them for progress.
pub struct Lab<'a> {
    pub(crate) opts: StudyOptions,
    runs: usize,
    progress: &'a mut dyn FnMut(&str, usize),
}

impl Lab<'_> {
    /// Runs `toml` (a generated workload) under each configuration,
    /// `repeat` times, interleaved.
    pub(crate) fn measure(
        &mut self,
        what: &str,
        toml: &str,
        configs: &[RunConfig],
        repeat: usize,
    ) -> Result<Vec<ConfigResult>, ExecError> {
        let plans = configs
            .iter()
            .map(|c| {
                let w = workload::parse(toml, &format!("<study {what}>"), exec::va_bits_of(c))?;
                Ok((c.clone(), w))
            })
            .collect::<Result<Vec<_>, ExecError>>()?;
        let opts = ExecOptions {
            timeout: Duration::from_secs(120),
            repeat,
            warmup: None,
        };
        let r = exec::run_plans(&plans, &opts, &mut |_| {})?;
        self.runs += r.iter().map(|c| c.runs.len()).sum::<usize>();
        (self.progress)(what, self.runs);
        Ok(r)
    }
}

/// A model configuration from an inline list (the study's own, known good).
pub(crate) fn model(inline: &str) -> RunConfig {
    let mut c = config::parse_inline(inline).expect("the study's configurations are valid");
    if inline.is_empty() {
        c = RunConfig::model_default();
    }
    c
}

/// Runs every section. `progress(what, runs_done)` is called after each
/// experiment.
///
/// # Errors
/// Only for failures of the model (a bug); a kernel experiment that this
/// machine refuses becomes a note in its section.
pub fn run(opts: StudyOptions, progress: &mut dyn FnMut(&str, usize)) -> Result<Study, ExecError> {
    let start = Instant::now();
    let mut lab = Lab {
        opts,
        runs: 0,
        progress,
    };
    let sections = vec![
        sections::five_level(&mut lab)?,
        sections::riscv_64k(&mut lab)?,
        sections::split_pmd(&mut lab)?,
        sections::empty_tables(&mut lab)?,
        sections::hazards(&mut lab)?,
    ];
    Ok(Study {
        version: env!("CARGO_PKG_VERSION").into(),
        quick: opts.quick,
        host: host::Fingerprint::read(),
        elapsed_s: start.elapsed().as_secs_f64(),
        runs: lab.runs,
        sections,
    })
}

/// Runs expected by [`run`] (for a progress bar's length).
pub fn expected_runs(opts: StudyOptions) -> usize {
    sections::expected_runs(opts)
}
