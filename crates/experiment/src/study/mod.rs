//! `ptlab study`: the experiments that answer the seeds' questions on this
//! machine, on the model and on the kernel, with one finding per question.
//!
//! One question per file: each declares its experiments and the host facts
//! it reads (`declare`, into an [`experiments::Plan`] that returns a typed
//! handle for each) before anything runs, and turns their results into its
//! section (the question and method, findings as sentences with their
//! numbers, tables, and charts drawn from named figures by [`plot`]). The runner here counts the declared runs for the progress bar,
//! runs the experiments in order, and hands each question its results.
//! [`render`] lays the sections out as one self-contained HTML page and a
//! terminal summary.
//!
//! The questions: [`five_level`] (4-level vs 5-level, with
//! [`five_level_time`] and [`five_level_amd`]), [`riscv_64k`] (a
//! 64 KiB base page), [`split_pmd`] (split PMD locks), [`empty_tables`]
//! (empty PTE tables), [`multi_fault`] (PT reclaim's cost to a fault-heavy
//! threaded program), [`munmap_time`] (what a shootdown adds to munmap),
//! [`hazards`] (this host's latency hazards), [`broadcast`] (what broadcast
//! TLB invalidation buys a tlb_flush2-like program). Shared helpers: [`read`] (a
//! counter at a mark), [`time`] (predicted time at a mark) and [`text`]
//! (numbers in sentences and tables).

mod broadcast;
mod empty_tables;
mod experiments;
#[cfg(test)]
mod extra_question;
pub mod figure;
mod five_level;
mod five_level_amd;
mod five_level_time;
mod hazards;
pub mod load;
mod multi_fault;
mod munmap_time;
pub mod plot;
mod read;
pub mod render;
mod riscv_64k;
mod split_pmd;
mod text;
mod time;
mod yours;

use crate::config::{self, RunConfig};
use crate::exec::{self, ExecError};
use experiments::{Experiment, Plan, Results};
pub use figure::{Figure, TableCell, Verdict};
use serde::Serialize;
use serde_json::Value;
use std::time::Instant;

/// How much to run.
#[derive(Debug, Clone, Copy)]
pub struct StudyOptions {
    /// The short version (under a minute).
    pub quick: bool,
    /// Adds the production-scale cases (the reclaim slides' 55 TB process
    /// in the empty-tables section: minutes and gigabytes).
    pub production: bool,
    /// A program's recorded trace (`ptlab record`, `trace` or `import`):
    /// the questions that can answer for it replay it under their
    /// configurations and say what they predict for it ([`yours`]).
    pub trace: Option<&'static std::path::Path>,
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

/// A table of a section: text cells and figures (a number with its unit),
/// for JSON and HTML alike.
#[derive(Debug, Clone, Serialize)]
pub struct TableData {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<TableCell>>,
}

/// A chart of a section: its SVG text (not in the JSON), caption, and the
/// figures it was drawn from, each named after the section figure it is
/// ([`plot`]).
#[derive(Debug, Clone, Serialize)]
pub struct Chart {
    pub caption: String,
    #[serde(skip)]
    pub svg: String,
    pub data: Vec<plot::ChartSeries>,
}

/// One answered question.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub question: String,
    /// The answer for this host, first: at most 60 words, computed from
    /// the run's figures (which it holds, by name).
    pub verdict: Verdict,
    pub method: String,
    /// The seed's own figure, to stand beside ours.
    pub seed: String,
    /// The evidence behind the verdict: one sentence per finding, each
    /// with its number (and CI where repeated).
    pub findings: Vec<String>,
    pub tables: Vec<TableData>,
    pub charts: Vec<Chart>,
    /// The figures behind the findings, by name.
    pub figures: serde_json::Map<String, Value>,
    /// Why a part could not be run here (e.g. the kernel refused it).
    pub notes: Vec<String>,
}

impl Section {
    /// A section; its id is its question's ([`QUESTIONS`]), set by the
    /// runner, so that an id is written once.
    pub(crate) fn new(title: &str, question: &str, method: &str, seed: &str) -> Section {
        Section {
            id: String::new(),
            title: title.into(),
            question: question.into(),
            verdict: Verdict::default(),
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
}

/// The whole study.
#[derive(Debug, Clone, Serialize)]
pub struct Study {
    pub version: String,
    pub quick: bool,
    pub host: host::Fingerprint,
    /// Every cost file a model run priced with, and the machine each
    /// describes: first the study's own (`--costs`, or this host's), then
    /// any a section names itself (the 2013 bare-metal figures).
    pub costs: Vec<crate::host_costs::CostsLabel>,
    /// The host's load before and after, and whether the kernel's figures
    /// were taken on a busy host.
    pub load: load::StudyLoad,
    pub elapsed_s: f64,
    /// Measured runs (the figures' runs).
    pub runs: usize,
    /// Warm-up runs made before repeated measurements (discarded); the
    /// progress bar counts them too.
    pub warmup_runs: usize,
    pub sections: Vec<Section>,
}

/// One question of the study: its experiments and host facts, declared
/// before anything runs ([`Plan`]), and its section, made from their
/// results. Adding a question: its file (with `plan` and `section`), one
/// entry here and its id in docs/cli.md (docs/design.md, "How to add a
/// study question").
struct Question {
    /// The id of its section (`--only` selects by it): written here only.
    id: &'static str,
    plan: fn(StudyOptions) -> Plan,
    section: fn(StudyOptions, &Results) -> Section,
}

/// The questions, in the order of the report.
const QUESTIONS: [Question; 8] = [
    Question {
        id: "five-level",
        plan: five_level::plan,
        section: five_level::section,
    },
    Question {
        id: "riscv-64k",
        plan: riscv_64k::plan,
        section: riscv_64k::section,
    },
    Question {
        id: "split-pmd",
        plan: split_pmd::plan,
        section: split_pmd::section,
    },
    Question {
        id: "empty-tables",
        plan: empty_tables::plan,
        section: empty_tables::section,
    },
    Question {
        id: "multi-fault",
        plan: multi_fault::plan,
        section: multi_fault::section,
    },
    Question {
        id: "munmap-shootdown",
        plan: munmap_time::plan,
        section: munmap_time::section,
    },
    Question {
        id: "hazards",
        plan: hazards::plan,
        section: hazards::section,
    },
    Question {
        id: "broadcast-flush",
        plan: broadcast::plan,
        section: broadcast::section,
    },
];

impl Question {
    /// Its experiments, in declaration order.
    fn experiments(&self, o: StudyOptions) -> Vec<Experiment> {
        (self.plan)(o).experiments
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

/// Runs every question. `progress(what, runs_done)` is called after each
/// run (warm-up runs included, as in [`expected_runs`]).
///
/// # Errors
/// Only for failures of the model (a bug); a kernel experiment that this
/// machine refuses becomes a note in its section.
pub fn run(opts: StudyOptions, progress: &mut dyn FnMut(&str, usize)) -> Result<Study, ExecError> {
    run_with_costs(opts, None, progress)
}

/// As [`run`], every model run pricing its events with the cost file at
/// `costs` (checked by the caller) instead of the built-in figures.
///
/// # Errors
/// As [`run`].
pub fn run_with_costs(
    opts: StudyOptions,
    costs: Option<&str>,
    progress: &mut dyn FnMut(&str, usize),
) -> Result<Study, ExecError> {
    run_selected(opts, costs, &[], progress)
}

/// The ids of the study's sections, in the order of the report.
pub fn section_ids() -> Vec<&'static str> {
    QUESTIONS.iter().map(|q| q.id).collect()
}

/// The questions `only` names (every one when it is empty).
fn selected<'a>(only: &'a [String]) -> impl Iterator<Item = &'static Question> + 'a {
    QUESTIONS
        .iter()
        .filter(move |q| only.is_empty() || only.iter().any(|o| o == q.id))
}

/// As [`run_with_costs`], only the sections whose ids `only` names (all
/// when it is empty; the caller checks the ids against [`section_ids`]).
///
/// # Errors
/// As [`run`].
pub fn run_selected(
    opts: StudyOptions,
    costs: Option<&str>,
    only: &[String],
    progress: &mut dyn FnMut(&str, usize),
) -> Result<Study, ExecError> {
    let questions: Vec<&Question> = selected(only).collect();
    run_questions(opts, costs, &questions, progress)
}

/// The runner: `questions`' declared experiments run in turn, each
/// question's host facts read after them, and its section made from their
/// results, in the order given. [`run_selected`] runs the selected ones of
/// [`QUESTIONS`]; a test runs a question of its own through it.
///
/// # Errors
/// As [`run`].
fn run_questions(
    opts: StudyOptions,
    costs: Option<&str>,
    questions: &[&Question],
    progress: &mut dyn FnMut(&str, usize),
) -> Result<Study, ExecError> {
    let start = Instant::now();
    let costs_used = cost_files(opts, costs, questions);
    let before = load::read();
    let (mut done, mut measured, mut made) = (0, 0, 0);
    let mut sections = Vec::with_capacity(questions.len());
    for q in questions {
        let plan = (q.plan)(opts);
        let mut outcomes = Vec::new();
        let mut refused = Vec::new();
        for e in plan.experiments {
            let before = done;
            match measure(&e, costs, &mut |n| {
                done = before + n;
                progress(&e.what, done);
            }) {
                Ok(r) => {
                    measured += r.iter().map(|c| c.runs.len()).sum::<usize>();
                    made += e.runs();
                    outcomes.push(Ok(r));
                }
                Err(err @ ExecError::Model(_)) => return Err(err),
                Err(err) if e.on_kernel() => {
                    refused.push(format!(
                        "the kernel part \"{}\" was not run here: {err}",
                        e.what
                    ));
                    outcomes.push(Err(err.to_string()));
                }
                Err(err) => return Err(err),
            }
            // A refused experiment made none of its runs.
            done = before + e.runs();
            progress(&e.what, done);
        }
        // The host facts the section declared, read now (after its
        // experiments, before it is made): making a section reads nothing.
        let facts = plan
            .inputs
            .iter()
            .map(|i| i.read(costs))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ExecError::Model)?;
        let mut sec = (q.section)(opts, &Results { outcomes, facts });
        sec.id = q.id.to_string();
        refused.append(&mut sec.notes);
        sec.notes = refused;
        sections.push(sec);
    }
    let host = host::Fingerprint::read();
    let load = load::StudyLoad::judge(host.cpus.unwrap_or(1), before, load::read());
    Ok(Study {
        version: env!("CARGO_PKG_VERSION").into(),
        quick: opts.quick,
        host,
        costs: costs_used,
        elapsed_s: start.elapsed().as_secs_f64(),
        runs: measured,
        warmup_runs: made.saturating_sub(measured),
        sections,
        load,
    })
}

/// The labels of the cost files the selected sections' model runs price
/// with: `costs` (the library's default when `None`) for those that name
/// none, then each file a configuration names, once each.
fn cost_files(
    opts: StudyOptions,
    costs: Option<&str>,
    questions: &[&Question],
) -> Vec<crate::host_costs::CostsLabel> {
    let mut names: Vec<Option<String>> = vec![costs.map(str::to_string)];
    for q in questions {
        for e in q.experiments(opts) {
            for c in &e.configs {
                if c.backend == config::BackendKind::Model && c.model.costs.is_some() {
                    let n = c.model.costs.clone();
                    if !names.contains(&n) {
                        names.push(n);
                    }
                }
            }
        }
    }
    names
        .iter()
        .filter_map(|n| crate::host_costs::CostsLabel::of(n.as_deref()).ok())
        .collect()
}

/// Runs one experiment: its workload placed for each configuration, the
/// configurations interleaved. `progress(n)` after each of its `n` runs.
fn measure(
    e: &Experiment,
    costs: Option<&str>,
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<exec::ConfigResult>, ExecError> {
    // The study's cost file for every model configuration that names none
    // (not in the label: the same question under other figures); one that
    // names its own (a section comparing this host with the 2013
    // bare-metal figures) keeps it.
    let with_costs = |c: &RunConfig| {
        let mut c = c.clone();
        if c.backend == config::BackendKind::Model && c.model.costs.is_none() {
            c.model.costs = costs.map(str::to_string);
        }
        c
    };
    if let Some(t) = &e.trace {
        let configs: Vec<RunConfig> = e.configs.iter().map(with_costs).collect();
        return exec::run_all_watched(
            &t.to_string_lossy(),
            &configs,
            &e.options(),
            &mut |p| progress(p.done),
            None,
        );
    }
    let plans = e
        .configs
        .iter()
        .map(|c| {
            let w = workload::parse(&e.toml, &format!("<study {}>", e.what), exec::va_bits_of(c))?;
            Ok((with_costs(c), w))
        })
        .collect::<Result<Vec<_>, ExecError>>()?;
    exec::run_plans(&plans, &e.options(), &mut |p| progress(p.done))
}

/// Runs one experiment as the study does (tests of a question's figures).
#[cfg(test)]
pub(crate) fn run_one(e: &Experiment) -> Vec<exec::ConfigResult> {
    measure(e, None, &mut |_| {}).expect("the experiment runs")
}

/// Runs [`run`] makes, warm-up runs included (a progress bar's length):
/// the sum over every question's declared experiments.
pub fn expected_runs(opts: StudyOptions) -> usize {
    expected_runs_of(opts, &[])
}

/// As [`expected_runs`], for the sections `only` names (all when empty).
pub fn expected_runs_of(opts: StudyOptions, only: &[String]) -> usize {
    let questions: Vec<&Question> = selected(only).collect();
    expected_runs_over(opts, &questions)
}

/// As [`expected_runs`], for `questions`.
fn expected_runs_over(opts: StudyOptions, questions: &[&Question]) -> usize {
    questions
        .iter()
        .flat_map(|q| q.experiments(opts))
        .map(|e| e.runs())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_workload_is_valid_for_its_configurations() {
        // A bad generated workload is found here, before a study runs for
        // minutes and stops at it.
        for quick in [true, false] {
            let opts = StudyOptions {
                quick,
                production: false,
                trace: None,
            };
            for q in &QUESTIONS {
                for e in q.experiments(opts) {
                    assert!(e.repeat >= 1, "{}", e.what);
                    assert!(!e.configs.is_empty(), "{}", e.what);
                    for c in e
                        .configs
                        .iter()
                        .filter(|c| c.backend == config::BackendKind::Model)
                    {
                        workload::parse(&e.toml, &e.what, exec::va_bits_of(c))
                            .unwrap_or_else(|err| panic!("{} under {}: {err}", e.what, c.label));
                        exec::model_config(c)
                            .unwrap_or_else(|err| panic!("{} under {}: {err}", e.what, c.label));
                    }
                }
            }
        }
    }

    #[test]
    fn the_run_total_counts_warmups_of_repeated_experiments() {
        let opts = StudyOptions {
            quick: true,
            production: false,
            trace: None,
        };
        let one_model = Experiment::model("m", String::new(), &[model(""), model("")], 3);
        assert_eq!(one_model.runs(), 8, "one warm-up run of each configuration");
        let kernel = Experiment::kernel("k", String::new(), 3);
        assert_eq!(kernel.runs(), 4, "one warm-up run first");
        let once = Experiment::kernel("k", String::new(), 1);
        assert_eq!(once.runs(), 1, "no warm-up for a single run");
        assert!(
            expected_runs(StudyOptions {
                quick: false,
                production: false,
                trace: None,
            }) > expected_runs(opts)
        );
    }
}
