//! t-tests against published examples and their invariances.

use proptest::prelude::*;
use stats::{student, student_from_moments, t_quantile, welch, Moments, StatsError};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

// R's `sleep` data set (Cushny and Peebles 1905): extra hours of sleep, two drugs.
const SLEEP_1: [f64; 10] = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
const SLEEP_2: [f64; 10] = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];

#[test]
fn welch_matches_r_on_the_sleep_data() {
    // R: t.test(extra ~ group, data = sleep)
    // t = -1.8608, df = 17.776, p-value = 0.07939,
    // 95 percent confidence interval: -3.3654832  0.2054832
    let r = welch(&SLEEP_1, &SLEEP_2).unwrap();
    assert!(close(r.t, -1.8608, 1e-4));
    assert!(close(r.df, 17.776, 1e-3));
    assert!(close(r.p, 0.07939, 1e-5));
    assert!(close(r.diff, 0.75 - 2.33, 1e-12));
    assert!(close(r.ci95.low, -3.3654832, 1e-6));
    assert!(close(r.ci95.high, 0.2054832, 1e-6));
    assert!(!r.equal_variance);
    assert!(!r.significant(0.05));
}

#[test]
fn student_matches_r_on_the_sleep_data() {
    // R: t.test(extra ~ group, data = sleep, var.equal = TRUE)
    // t = -1.8608, df = 18, p-value = 0.07919, CI -3.363874 0.203874
    let r = student(&SLEEP_1, &SLEEP_2).unwrap();
    assert!(close(r.t, -1.8608, 1e-4));
    assert_eq!(r.df, 18.0);
    assert!(close(r.p, 0.07919, 1e-5));
    assert!(close(r.ci95.low, -3.363874, 1e-6));
    assert!(close(r.ci95.high, 0.203874, 1e-6));
    assert!(r.equal_variance);
}

#[test]
fn student_reproduces_the_five_level_seed() {
    // The seed prints, for 30 runs each, the mean and 95% CI of lat_pagefault (us):
    //   4-level 0.1056367 [0.1055758, 0.1056975], 5-level 0.1058800 [0.1058097, 0.1059503]
    // and R's var.equal t-test: t = -5.3531, df = 58, p-value = 1.543e-06,
    //   95 percent confidence interval: -0.0003343242 -0.0001523425.
    // Recover each standard deviation from its CI half-width: s = hw·√n / t(0.975, 29).
    let n = 30usize;
    let sd = |low: f64, high: f64| (high - low) / 2.0 * (n as f64).sqrt() / t_quantile(0.975, 29.0);
    let four = Moments {
        n,
        mean: 0.1056367,
        variance: sd(0.1055758, 0.1056975).powi(2),
    };
    let five = Moments {
        n,
        mean: 0.1058800,
        variance: sd(0.1058097, 0.1059503).powi(2),
    };
    let r = student_from_moments(four, five);
    assert_eq!(r.df, 58.0);
    // The seed's figures carry 7 digits, so its t is matched to 0.5%.
    assert!(close(r.t, -5.3531, 5.3531 * 0.005), "t = {}", r.t);
    assert!(r.p > 1.3e-6 && r.p < 1.8e-6, "p = {}", r.p);
    assert!(close(r.ci95.low, -0.0003343242, 2e-7));
    assert!(close(r.ci95.high, -0.0001523425, 2e-7));
    assert!(r.significant(0.05));
}

#[test]
fn equal_variances_and_sizes_make_welch_equal_student() {
    let a = [1.0, 2.0, 3.0, 4.0, 5.0];
    let b = [3.0, 4.0, 5.0, 6.0, 7.0];
    let w = welch(&a, &b).unwrap();
    let s = student(&a, &b).unwrap();
    assert!(close(w.t, s.t, 1e-12));
    assert!(close(w.df, 8.0, 1e-12));
    assert!(close(w.p, s.p, 1e-12));
    // By hand: diff -2, s² = 2.5 each, se = √(2.5/5 + 2.5/5) = 1, t = -2.
    assert!(close(w.t, -2.0, 1e-12));
}

#[test]
fn identical_samples_give_no_evidence() {
    let a = [3.0, 1.0, 4.0, 1.0, 5.0];
    let r = welch(&a, &a).unwrap();
    assert_eq!((r.t, r.p, r.diff), (0.0, 1.0, 0.0));
    assert!(r.ci95.contains(0.0));
}

#[test]
fn exact_counters_equal_give_p_one() {
    let a = [16384.0; 5];
    for r in [welch(&a, &a).unwrap(), student(&a, &a).unwrap()] {
        assert_eq!((r.t, r.p), (0.0, 1.0));
        assert_eq!(r.df, 8.0);
        assert_eq!((r.ci95.low, r.ci95.high), (0.0, 0.0));
    }
}

#[test]
fn exact_counters_different_give_p_zero() {
    let r = welch(&[16384.0; 4], &[16400.0; 6]).unwrap();
    assert_eq!(r.t, f64::NEG_INFINITY);
    assert_eq!(r.p, 0.0);
    assert_eq!((r.ci95.low, r.ci95.high), (-16.0, -16.0));
    assert!(r.significant(0.05));
}

#[test]
fn too_few_or_bad_samples_are_errors() {
    assert_eq!(
        welch(&[1.0], &[1.0, 2.0]),
        Err(StatsError::TooFew { needed: 2, got: 1 })
    );
    assert!(matches!(
        student(&[1.0, 2.0], &[1.0, f64::NAN]),
        Err(StatsError::NonFinite { index: 1, .. })
    ));
}

fn sample() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(-1e3f64..1e3, 2..25)
}

proptest! {
    #[test]
    fn p_is_a_probability(a in sample(), b in sample()) {
        for r in [welch(&a, &b).unwrap(), student(&a, &b).unwrap()] {
            prop_assert!((0.0..=1.0).contains(&r.p), "p = {}", r.p);
            prop_assert!(r.ci95.contains(r.diff));
        }
    }

    #[test]
    fn shifting_both_leaves_t_unchanged(a in sample(), b in sample(), c in -1e3f64..1e3) {
        let sa: Vec<f64> = a.iter().map(|x| x + c).collect();
        let sb: Vec<f64> = b.iter().map(|x| x + c).collect();
        let r0 = welch(&a, &b).unwrap();
        let r1 = welch(&sa, &sb).unwrap();
        prop_assume!(r0.t.is_finite());
        prop_assert!((r0.t - r1.t).abs() <= 1e-6 * (1.0 + r0.t.abs()));
        prop_assert!((r0.df - r1.df).abs() <= 1e-6 * r0.df);
    }

    #[test]
    fn scaling_both_leaves_t_unchanged(a in sample(), b in sample(), k in 0.001f64..1e3) {
        let sa: Vec<f64> = a.iter().map(|x| x * k).collect();
        let sb: Vec<f64> = b.iter().map(|x| x * k).collect();
        let r0 = student(&a, &b).unwrap();
        let r1 = student(&sa, &sb).unwrap();
        prop_assume!(r0.t.is_finite());
        prop_assert!((r0.t - r1.t).abs() <= 1e-6 * (1.0 + r0.t.abs()));
    }

    #[test]
    fn swapping_flips_the_sign_only(a in sample(), b in sample()) {
        let ab = welch(&a, &b).unwrap();
        let ba = welch(&b, &a).unwrap();
        prop_assert!((ab.t + ba.t).abs() <= 1e-9 * (1.0 + ab.t.abs()));
        prop_assert!((ab.p - ba.p).abs() <= 1e-12);
    }

    #[test]
    fn welch_df_lies_between_its_bounds(a in sample(), b in sample()) {
        // Welch–Satterthwaite df is at least min(n)-1 and at most n_a + n_b - 2.
        let r = welch(&a, &b).unwrap();
        let lo = (a.len().min(b.len()) - 1) as f64;
        let hi = (a.len() + b.len() - 2) as f64;
        prop_assert!(r.df >= lo - 1e-9 && r.df <= hi + 1e-9, "df = {}", r.df);
    }

    #[test]
    fn interval_excludes_zero_exactly_when_significant(a in sample(), b in sample()) {
        let r = welch(&a, &b).unwrap();
        prop_assume!((r.p - 0.05).abs() > 1e-9);
        prop_assert_eq!(!r.ci95.contains(0.0), r.p < 0.05);
    }
}
