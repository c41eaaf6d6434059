//! A study question added as docs/design.md ("How to add a study question")
//! says, but outside [`QUESTIONS`](super::QUESTIONS): its own `declare`,
//! `plan` and `section`, run through the same runner as the real ones. The
//! runner must count its declared runs, run them, and put its section
//! (title, verdict, figures, table) into the report's text and study.json,
//! under the id its [`Question`] gives it.

use super::experiments::{declared, Experiment, ModelRun, Plan, Results};
use super::figure::{row, Figure};
use super::read::mean;
use super::text::table;
use super::{expected_runs_over, model, run_questions, Question, Section, StudyOptions, Verdict};

/// The question's experiments' handles.
struct Runs {
    faults: ModelRun,
}

/// One model experiment: a region written page by page, under two page
/// sizes, twice each (so the runner's repeat is seen).
fn declare(_o: StudyOptions, p: &mut Plan) -> Runs {
    let toml = r#"name = "extra-question"
[[thread]]
op = [
  { mmap = "r", size = "4MiB" },
  { touch = "r", access = "write" },
  { mark = "touched" },
  { munmap = "r" },
]
"#;
    Runs {
        faults: p.model(Experiment::model(
            "extra: 4 KiB pages vs THP",
            toml.to_string(),
            &[model("thp=never"), model("thp=always")],
            2,
        )),
    }
}

fn plan(o: StudyOptions) -> Plan {
    declared(o, declare).0
}

fn section(o: StudyOptions, r: &Results) -> Section {
    let mut sec = Section::new(
        "Extra: faults by page size",
        "How many faults does writing 4 MiB take with and without THP?",
        "The model writes every page of a 4 MiB region with THP off and on.",
        "No seed: a test's question.",
    );
    let runs = declared(o, declare).1;
    let res = r.model(runs.faults);
    let faults = |i: usize| mean(&res[i], "touched", counters::MINOR_FAULTS.name);
    sec.tables.push(table(
        "Model: faults to write 4 MiB",
        &["THP", "faults"],
        vec![
            row!["never", Figure::count(faults(0))],
            row!["always", Figure::count(faults(1))],
        ],
    ));
    sec.findings.push(format!(
        "Writing 4 MiB takes {} faults with 4 KiB pages.",
        faults(0)
    ));
    sec.figure("extra_faults", [faults(0), faults(1)]);
    sec.verdict = Verdict::default()
        .fig("small", Figure::count(faults(0)))
        .fig("huge", Figure::count(faults(1)))
        .say("Writing 4 MiB takes {small} faults with 4 KiB pages and {huge} with THP.");
    sec
}

const EXTRA: Question = Question {
    id: "extra-faults",
    plan,
    section,
};

#[test]
fn a_question_outside_the_list_runs_through_the_runner() {
    let opts = StudyOptions {
        quick: true,
        production: false,
        trace: None,
    };
    let questions = [&EXTRA];
    // Counted: one experiment, two configurations, two repeats each (plus
    // whatever warm-up the experiment declares).
    let expected = expected_runs_over(opts, &questions);
    let declared_runs: usize = plan(opts).experiments.iter().map(|e| e.runs()).sum();
    assert_eq!(expected, declared_runs);
    assert!(expected >= 4, "two configurations, two repeats: {expected}");

    // Run: the progress reaches the count, and the measured runs are the
    // repeats.
    let mut last = 0;
    let study =
        run_questions(opts, None, &questions, &mut |_, done| last = done).expect("the model runs");
    assert_eq!(last, expected);
    assert_eq!(study.runs, 4);
    assert_eq!(study.sections.len(), 1);
    let sec = &study.sections[0];
    assert_eq!(sec.id, "extra-faults");

    // The figures are the model's: 1024 faults of 4 KiB, 2 of 2 MiB.
    assert_eq!(sec.verdict.figures["small"].value, Some(1024.0));
    assert_eq!(sec.verdict.figures["huge"].value, Some(2.0));
    assert_eq!(
        sec.verdict.text,
        "Writing 4 MiB takes 1,024 faults with 4 KiB pages and 2 with THP."
    );

    // The report's text and study.json carry the section.
    let text = super::render::summary(&study);
    assert!(text.contains("Extra: faults by page size"), "{text}");
    assert!(text.contains(&sec.verdict.text), "{text}");
    let json: serde_json::Value = serde_json::to_value(&study).unwrap();
    let s = &json["sections"][0];
    assert_eq!(s["id"], "extra-faults");
    assert_eq!(s["verdict"]["text"], sec.verdict.text.as_str());
    assert_eq!(
        s["figures"]["extra_faults"],
        serde_json::json!([1024.0, 2.0])
    );
    assert_eq!(s["tables"].as_array().map(Vec::len), Some(1));
}
