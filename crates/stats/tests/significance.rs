//! No p-value where a test means nothing.

use stats::{compare_means, welch, NotApplicable, Significance};

#[test]
fn exact_counters_get_no_p_value() {
    let a = [524_802.0; 5];
    let b = [524_803.0; 5];
    // The raw test prints p = 0.000 here, the defect of the issue.
    assert_eq!(welch(&a, &b).unwrap().p, 0.0);
    let s = compare_means(&a, &b).unwrap();
    assert_eq!(s.p(), None);
    let Significance::NotApplicable { why } = s else {
        panic!("{s:?}")
    };
    assert_eq!(
        why,
        NotApplicable::NoSpread {
            a_value: 524_802.0,
            b_value: 524_803.0
        }
    );
    assert_eq!(
        why.to_string(),
        "not applicable: every run gave 524802 against 524803, so the difference of 1 is exact"
    );
}

#[test]
fn identical_samples_get_no_p_value() {
    let a = [3.0, 1.0, 4.0, 1.0, 5.0];
    let b = [1.0, 1.0, 3.0, 4.0, 5.0];
    assert_eq!(
        compare_means(&a, &b).unwrap(),
        Significance::NotApplicable {
            why: NotApplicable::IdenticalSamples
        }
    );
}

#[test]
fn too_few_runs_get_no_p_value() {
    let s = compare_means(&[1.0], &[1.0, 2.0]).unwrap();
    assert_eq!(
        s,
        Significance::NotApplicable {
            why: NotApplicable::TooFewRuns { a: 1, b: 2 }
        }
    );
    assert!(compare_means(&[f64::NAN], &[1.0, 2.0]).is_err());
}

#[test]
fn a_meaningful_test_is_welchs() {
    // R's sleep data: p = 0.07939.
    let a = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
    let b = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];
    let s = compare_means(&a, &b).unwrap();
    assert!((s.p().unwrap() - 0.07939).abs() < 1e-5);
    assert_eq!(
        s,
        Significance::Tested {
            test: welch(&a, &b).unwrap()
        }
    );
    // One side exact, the other varying: the test is meaningful.
    assert!(compare_means(&[5.0; 4], &[5.0, 6.0, 7.0, 6.0])
        .unwrap()
        .p()
        .is_some());
}
