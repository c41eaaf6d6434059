//! The command tables built from runs.

use report::views::{compare_table, run_table, samples_at, sort_counters, validate_table, DiffRow};
use report::Cell;
use workload::result::{Counters, Mark, Run};

fn run(faults: i64, vmpte: i64, elapsed: i64) -> Run {
    let mut c = Counters::default();
    c.set("minor_faults", faults);
    c.set("vmpte_kb", vmpte);
    c.set("elapsed_ns", elapsed);
    c.pt_pages.insert("PTE".into(), vmpte / 4);
    let mut touched = Counters::default();
    touched.set("minor_faults", faults / 2);
    Run {
        marks: vec![
            Mark {
                name: "touched".into(),
                counters: touched,
                latency: None,
            },
            Mark {
                name: "end".into(),
                counters: c,
                latency: None,
            },
        ],
    }
}

fn cell<'a>(t: &'a report::Table, row_key: &str, col: &str) -> &'a Cell {
    let c = t.columns().iter().position(|c| c.header == col).expect(col);
    let r = t
        .rows()
        .iter()
        .find(|r| r.iter().any(|x| *x == Cell::text(row_key)))
        .expect(row_key);
    &r[c]
}

#[test]
fn counters_sort_in_the_formats_order() {
    let keys = [
        "zeta",
        "pt_pages.PTE",
        "elapsed_ns",
        "minor_faults",
        "vmpte_kb",
        "ipis",
    ]
    .map(String::from);
    assert_eq!(
        sort_counters(keys),
        [
            "minor_faults",
            "vmpte_kb",
            "elapsed_ns",
            "ipis",
            "zeta",
            "pt_pages.PTE"
        ]
    );
}

#[test]
fn samples_follow_runs_and_flatten_pt_pages() {
    let runs = [run(16384, 128, 10), run(16386, 132, 12)];
    let s = samples_at(&runs, "end");
    assert_eq!(s["minor_faults"], vec![16384, 16386]);
    assert_eq!(s["pt_pages.PTE"], vec![32, 33]);
    assert_eq!(
        samples_at(&runs, "touched")["minor_faults"],
        vec![8192, 8193]
    );
    assert!(samples_at(&runs, "nowhere").is_empty());
}

#[test]
fn one_run_shows_values() {
    let t = run_table(&[run(16384, 128, 5_000_000)]);
    let headers: Vec<&str> = t.columns().iter().map(|c| c.header.as_str()).collect();
    assert_eq!(headers, ["mark", "counter", "value", "unit"]);
    // Marks in the order reached; "touched" has one counter, "end" four.
    assert_eq!(t.rows().len(), 5);
    assert_eq!(t.rows()[0][0], Cell::text("touched"));
    assert_eq!(t.rows()[1][1], Cell::text("minor_faults"));
    assert_eq!(t.rows()[1][2], Cell::int(16384));
    assert_eq!(t.rows()[2][3], Cell::text("kB"));
    assert!(t.render().contains("16,384"));
}

#[test]
fn repeated_runs_show_spread() {
    let runs = [run(100, 8, 10), run(102, 8, 14), run(104, 8, 12)];
    let t = run_table(&runs);
    let r = t
        .rows()
        .iter()
        .find(|r| r[0] == Cell::text("end") && r[1] == Cell::text("minor_faults"))
        .unwrap();
    // mean 102; three differing runs are too few for an interval (Student's
    // t once gave ± 4.968 here, and intervals below 0 for small counts).
    match r[2] {
        Cell::Estimate {
            mean,
            half_width: None,
            ..
        } => assert_eq!(mean, 102.0),
        ref other => panic!("{other:?}"),
    }
    assert_eq!((&r[4], &r[5]), (&Cell::int(100), &Cell::int(104)));
    assert!(t.notes()[0].starts_with("3 runs"));
}

#[test]
fn compare_has_a_column_per_configuration_ratio_and_p() {
    let a = [run(100, 8, 10), run(102, 8, 14), run(104, 8, 12)];
    let b = [run(200, 16, 10), run(204, 16, 14), run(208, 16, 12)];
    let t = compare_table("end", &[("4l", &a), ("5l", &b)]);
    let headers: Vec<&str> = t.columns().iter().map(|c| c.header.as_str()).collect();
    assert_eq!(
        headers,
        ["counter", "unit", "4l", "5l", "ratio to first", "p (Welch)"]
    );
    assert_eq!(
        *cell(&t, "minor_faults", "ratio to first"),
        Cell::ratio(2.0)
    );
    assert_eq!(*cell(&t, "vmpte_kb", "ratio to first"), Cell::ratio(2.0));
    // Identical runs: no test, and the table says why (it once said p = 1.000).
    assert_eq!(
        *cell(&t, "elapsed_ns", "p (Welch)"),
        Cell::text("n/a: identical")
    );
    // Exact, different counters: a certain difference, no p-value (once 0.000).
    assert_eq!(*cell(&t, "vmpte_kb", "p (Welch)"), Cell::text("n/a: exact"));
    match cell(&t, "minor_faults", "p (Welch)") {
        Cell::PValue(p) => assert!(*p < 0.001, "{p}"),
        other => panic!("{other:?}"),
    }
    let text = t.render();
    assert!(text.starts_with("at mark \"end\"\n"), "{text}");
    assert!(text.contains("runs per configuration: 4l: 3, 5l: 3"));
}

#[test]
fn compare_of_single_runs_has_no_p_and_names_ratios_for_three() {
    let a = [run(100, 8, 10)];
    let b = [run(150, 8, 10)];
    let c = [run(50, 8, 10)];
    let t = compare_table("end", &[("a", &a), ("b", &b), ("c", &c)]);
    let headers: Vec<&str> = t.columns().iter().map(|c| c.header.as_str()).collect();
    assert_eq!(
        headers,
        ["counter", "unit", "a", "b", "c", "b / a", "c / a"]
    );
    assert_eq!(*cell(&t, "minor_faults", "c / a"), Cell::ratio(0.5));
}

#[test]
fn compare_leaves_missing_counters_empty() {
    let a = [run(100, 8, 10)];
    let mut other = run(100, 8, 10);
    other.marks[1].counters.set("ipis", 3);
    let b = [other];
    let t = compare_table("end", &[("a", &a), ("b", &b)]);
    assert_eq!(*cell(&t, "ipis", "a"), Cell::Empty);
    assert_eq!(*cell(&t, "ipis", "ratio to first"), Cell::Empty);
}

#[test]
fn validate_shows_the_difference() {
    let t = validate_table(&[DiffRow {
        workload: "touch-64m",
        mark: "end",
        counter: "vmpte_kb",
        kernel: 128,
        model: 132,
    }]);
    assert_eq!(t.rows()[0][5], Cell::int(4));
    assert_eq!(t.rows()[0][6], Cell::text("kB"));
}

#[test]
fn repeated_counts_have_whole_intervals_never_below_zero() {
    // Ten runs of a rare event: Student's t reaches below 0 here.
    let runs: Vec<Run> = [0, 0, 0, 0, 0, 0, 0, 0, 0, 3]
        .into_iter()
        .map(|f| run(f, 8, 10))
        .collect();
    let t = run_table(&runs);
    let r = t
        .rows()
        .iter()
        .find(|r| r[0] == Cell::text("end") && r[1] == Cell::text("minor_faults"))
        .unwrap();
    match r[2] {
        Cell::Estimate {
            mean, ci: Some(ci), ..
        } => {
            assert!((mean - 0.3).abs() < 1e-12);
            assert!(ci.low >= 0.0 && ci.low.fract() == 0.0 && ci.high.fract() == 0.0);
            assert!(ci.contains(mean));
        }
        ref other => panic!("{other:?}"),
    }
    // A count is written whole: "0 (0 to 1)", not "0.3 ± 0.68".
    assert!(!r[2].display().contains('.'), "{}", r[2].display());
}

#[test]
fn zero_over_zero_is_undefined_and_ratios_have_intervals() {
    let a: Vec<Run> = (0..6).map(|i| run(100 + i, 8, 10)).collect();
    let b: Vec<Run> = (0..6).map(|i| run(200 + 2 * i, 8, 10)).collect();
    let mut a0 = a.clone();
    let mut b0 = b.clone();
    for r in a0.iter_mut().chain(b0.iter_mut()) {
        r.marks[1].counters.set("ipis", 0);
    }
    let t = compare_table("end", &[("a", &a0), ("b", &b0)]);
    assert_eq!(
        *cell(&t, "ipis", "ratio to first"),
        Cell::text("undefined (0 / 0)")
    );
    match cell(&t, "minor_faults", "ratio to first") {
        Cell::Estimate {
            mean, ci: Some(ci), ..
        } => {
            assert!((mean - 205.0 / 102.5).abs() < 1e-9);
            assert!(ci.low < *mean && *mean < ci.high);
        }
        other => panic!("{other:?}"),
    }
}
