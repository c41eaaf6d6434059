//! `Summary`, t quantiles and harmonic means against hand computations and tables.

use proptest::prelude::*;
use stats::{harmonic_mean, harmonic_mean_ci95, t_quantile, StatsError, Summary};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn t_quantiles_match_printed_tables() {
    // Two-sided 95% critical values from any t table.
    assert!(close(t_quantile(0.975, 1.0), 12.7062, 1e-4));
    assert!(close(t_quantile(0.975, 7.0), 2.3646, 1e-4));
    assert!(close(t_quantile(0.975, 9.0), 2.2622, 1e-4));
    assert!(close(t_quantile(0.975, 29.0), 2.0452, 1e-4));
    assert!(close(t_quantile(0.975, f64::INFINITY), 1.95996, 1e-5));
    assert!(close(t_quantile(0.025, 29.0), -2.0452, 1e-4));
}

#[test]
fn summary_of_a_hand_computed_sample() {
    // Sum of squared deviations from the mean 5 is 32, so s² = 32/7.
    let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
    assert_eq!(s.n, 8);
    assert_eq!(s.mean, 5.0);
    assert_eq!(s.median, 4.5);
    assert_eq!((s.min, s.max), (2.0, 9.0));
    let sd = (32.0f64 / 7.0).sqrt();
    assert!(close(s.stddev.unwrap(), sd, 1e-12));
    // Half-width t(0.975, 7) · s / √8 = 2.364624 · 0.755929.
    let ci = s.ci95.unwrap();
    assert!(close(ci.half_width(), 1.787485, 1e-5));
    assert!(close(ci.low, 5.0 - 1.787485, 1e-5));
    assert!(close(s.rel_ci_half_width.unwrap(), 1.787485 / 5.0, 1e-6));
}

#[test]
fn odd_sample_median_is_the_middle_value() {
    let s = Summary::of(&[9.0, 1.0, 5.0]).unwrap();
    assert_eq!(s.median, 5.0);
}

#[test]
fn one_sample_has_no_spread() {
    let s = Summary::of(&[42.0]).unwrap();
    assert_eq!(
        (s.n, s.mean, s.median, s.min, s.max),
        (1, 42.0, 42.0, 42.0, 42.0)
    );
    assert_eq!(s.stddev, None);
    assert_eq!(s.ci95, None);
    assert_eq!(s.rel_ci_half_width, None);
}

#[test]
fn exact_counters_have_a_zero_width_interval() {
    let s = Summary::of_counts(&[16384; 10]).unwrap();
    assert_eq!(s.stddev, Some(0.0));
    let ci = s.ci95.unwrap();
    assert_eq!((ci.low, ci.high), (16384.0, 16384.0));
    assert_eq!(s.rel_ci_half_width, Some(0.0));
}

#[test]
fn zero_mean_with_spread_has_no_relative_width() {
    let s = Summary::of(&[-1.0, 1.0]).unwrap();
    assert_eq!(s.mean, 0.0);
    assert!(s.ci95.unwrap().half_width() > 0.0);
    assert_eq!(s.rel_ci_half_width, None);
}

#[test]
fn bad_input_is_rejected() {
    assert_eq!(Summary::of(&[]), Err(StatsError::Empty));
    assert!(matches!(
        Summary::of(&[1.0, f64::NAN]),
        Err(StatsError::NonFinite { index: 1, .. })
    ));
    assert!(matches!(
        Summary::of(&[f64::INFINITY]),
        Err(StatsError::NonFinite { index: 0, .. })
    ));
}

#[test]
fn harmonic_mean_of_rates() {
    // Driving 60 km at 60 km/h then 60 km at 20 km/h: 120 km in 4 h = 30 km/h.
    assert!(close(harmonic_mean(&[60.0, 20.0]).unwrap(), 30.0, 1e-12));
    assert!(close(
        harmonic_mean(&[1.0, 2.0, 4.0]).unwrap(),
        3.0 / 1.75,
        1e-12
    ));
    assert!(matches!(
        harmonic_mean(&[1.0, 0.0]),
        Err(StatsError::OutOfRange { index: 1, .. })
    ));
    assert_eq!(harmonic_mean(&[]), Err(StatsError::Empty));
}

#[test]
fn harmonic_interval_inverts_the_reciprocal_interval() {
    let x = [100.0, 110.0, 95.0, 105.0, 102.0];
    let r: Vec<f64> = x.iter().map(|v| 1.0 / v).collect();
    let rc = Summary::of(&r).unwrap().ci95.unwrap();
    let hc = harmonic_mean_ci95(&x).unwrap().unwrap();
    assert!(close(hc.low, 1.0 / rc.high, 1e-12));
    assert!(close(hc.high, 1.0 / rc.low, 1e-12));
    assert!(hc.contains(harmonic_mean(&x).unwrap()));
    assert_eq!(harmonic_mean_ci95(&[5.0]).unwrap(), None);
}

/// Reference: the textbook formulas written out independently (one-pass sums).
fn reference(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let sum: f64 = xs.iter().sum();
    let sumsq: f64 = xs.iter().map(|x| x * x).sum();
    let mean = sum / n;
    let var = (sumsq - sum * sum / n) / (n - 1.0);
    (mean, var.max(0.0).sqrt())
}

proptest! {
    #[test]
    fn interval_contains_the_mean_and_order_holds(xs in prop::collection::vec(-1e6f64..1e6, 2..60)) {
        let s = Summary::of(&xs).unwrap();
        let ci = s.ci95.unwrap();
        prop_assert!(ci.contains(s.mean));
        prop_assert!(s.min <= s.median && s.median <= s.max);
        prop_assert!(s.min <= s.mean + 1e-9 && s.mean <= s.max + 1e-9);
        let (m, sd) = reference(&xs);
        prop_assert!((s.mean - m).abs() <= 1e-6 * (1.0 + m.abs()));
        prop_assert!((s.stddev.unwrap() - sd).abs() <= 1e-5 * (1.0 + sd));
    }

    #[test]
    fn more_confidence_needs_no_more_than_the_interval(xs in prop::collection::vec(0f64..1e3, 3..40)) {
        // The 95% interval is t(0.975, n-1)·s/√n wide on each side, whatever the data.
        let s = Summary::of(&xs).unwrap();
        let n = xs.len() as f64;
        let expect = t_quantile(0.975, n - 1.0) * s.stddev.unwrap() / n.sqrt();
        prop_assert!((s.ci95.unwrap().half_width() - expect).abs() <= 1e-9 * (1.0 + expect));
    }

    #[test]
    fn harmonic_mean_is_at_most_the_arithmetic(xs in prop::collection::vec(0.001f64..1e6, 1..40)) {
        let h = harmonic_mean(&xs).unwrap();
        let s = Summary::of(&xs).unwrap();
        prop_assert!(h <= s.mean * (1.0 + 1e-12));
        prop_assert!(h >= s.min * (1.0 - 1e-12));
    }
}
