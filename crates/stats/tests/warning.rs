//! Warnings: when they fire and what they say.

use stats::{diagnose, diagnose_counter, Quantity, Warning};

#[test]
fn outlier_message_says_why_and_what_to_do() {
    let w = Warning::Outliers {
        outliers: 3,
        runs: 30,
    };
    assert_eq!(
        w.to_string(),
        "3 of 30 runs are statistical outliers (modified Z-score > 3.5); the machine may be busy: \
         rerun with more --repeat or on a quiet machine"
    );
    let one = Warning::Outliers {
        outliers: 1,
        runs: 10,
    };
    assert!(one
        .to_string()
        .starts_with("1 of 10 runs is a statistical outlier"));
}

#[test]
fn a_busy_run_is_reported() {
    let mut xs = vec![100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9];
    xs.push(180.0);
    let w = diagnose(&xs, Some(50e6));
    assert!(w.contains(&Warning::Outliers {
        outliers: 1,
        runs: 10
    }));
    assert!(!w.iter().any(|w| matches!(w, Warning::TooShort { .. })));
}

#[test]
fn short_runs_are_reported_with_their_duration() {
    let w = diagnose(&[1.0, 1.0, 1.0], Some(1_200_000.0));
    assert_eq!(
        w,
        vec![Warning::TooShort {
            mean_run_ns: 1_200_000.0
        }]
    );
    let text = w[0].to_string();
    assert!(
        text.contains("1.20 ms") && text.contains("5.00 ms"),
        "{text}"
    );
}

#[test]
fn a_wide_interval_is_reported() {
    // mean 10, s = √(40/3) = 3.651, n = 4: half-width t(0.975, 3) · s/2 = 3.1824 · 1.8257
    // = 5.810, i.e. ±58.1%.
    let w = diagnose(&[6.0, 8.0, 12.0, 14.0], None);
    match w.as_slice() {
        [Warning::WideCi { rel_half_width }] => {
            assert!((rel_half_width - 0.5810).abs() < 1e-3, "{rel_half_width}");
            assert!(w[0].to_string().contains("±58.1% of the mean"));
        }
        other => panic!("unexpected warnings {other:?}"),
    }
}

#[test]
fn exact_counters_are_not_doubtful() {
    assert!(diagnose(&[16384.0; 10], Some(20e6)).is_empty());
}

#[test]
fn one_run_has_no_spread() {
    assert_eq!(diagnose(&[5.0], None), vec![Warning::FewRuns { runs: 1 }]);
    assert_eq!(diagnose(&[], None), vec![Warning::FewRuns { runs: 0 }]);
    assert!(Warning::FewRuns { runs: 1 }
        .to_string()
        .starts_with("only 1 run:"));
}

#[test]
fn zero_mean_with_spread_is_explained() {
    let w = diagnose(&[-1.0, 1.0, -1.0, 1.0], None);
    assert_eq!(
        w,
        vec![Warning::WideCi {
            rel_half_width: f64::INFINITY
        }]
    );
    assert!(w[0].to_string().contains("mean is 0"));
}

#[test]
fn one_outlier_is_singular() {
    // The old text read "1 of 10 runs is a statistical outliers".
    assert_eq!(
        Warning::Outliers {
            outliers: 1,
            runs: 10
        }
        .to_string(),
        "1 of 10 runs is a statistical outlier (modified Z-score > 3.5); the machine may be \
         busy: rerun with more --repeat or on a quiet machine"
    );
}

#[test]
fn outlier_warning_names_the_counter_and_the_run() {
    let mut xs = vec![
        100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.0,
    ];
    xs[2] = 180.0;
    let w = diagnose_counter("minor_faults", Quantity::Count, &xs, Some(50e6));
    // The outlier also widens the interval: a WideCi warning follows.
    let [Warning::OutlierRuns {
        counter,
        runs,
        outliers,
    }, Warning::WideCi { .. }] = w.as_slice()
    else {
        panic!("{w:?}")
    };
    assert_eq!((counter.as_str(), *runs), ("minor_faults", 10));
    assert_eq!(outliers.len(), 1);
    assert_eq!((outliers[0].index, outliers[0].value), (2, 180.0));
    let text = w[0].to_string();
    assert!(
        text.starts_with("run 3 of 10 of minor_faults is an outlier (modified z = "),
        "{text}"
    );
    assert!(
        text.ends_with(
            "): rerun with --repeat 20 on a quiet machine, or look at what else ran at the time"
        ),
        "{text}"
    );
}

#[test]
fn several_outliers_are_listed() {
    let w = Warning::OutlierRuns {
        counter: "elapsed_ns".into(),
        runs: 30,
        outliers: vec![
            stats::Outlier {
                index: 0,
                value: 1.0,
                z: 4.04,
            },
            stats::Outlier {
                index: 6,
                value: 1.0,
                z: -5.0,
            },
        ],
    };
    assert_eq!(
        w.to_string(),
        "runs 1 and 7 of 30 of elapsed_ns are outliers (modified z = 4.0, -5.0): rerun with \
         --repeat 60 on a quiet machine, or look at what else ran at the time"
    );
}

#[test]
fn three_differing_runs_are_too_few_for_an_interval() {
    let w = diagnose_counter("lock_contended", Quantity::Count, &[4.0, 4.0, 5.0], None);
    assert_eq!(
        w,
        vec![Warning::TooFewForInterval {
            counter: "lock_contended".into(),
            runs: 3,
            needed: 5
        }]
    );
    assert!(w[0]
        .to_string()
        .starts_with("lock_contended varies over only 3 runs: no confidence interval"));
    // Exact counters over 3 runs are fine.
    assert!(diagnose_counter("minor_faults", Quantity::Count, &[7.0; 3], None).is_empty());
}
