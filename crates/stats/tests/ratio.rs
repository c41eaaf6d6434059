//! Ratios of means with their own interval; 0 / 0 is undefined.

use proptest::prelude::*;
use stats::{ratio_of_means, Ratio, RatioInterval, StatsError};

#[test]
fn zero_over_zero_is_undefined_not_one() {
    let r = ratio_of_means(&[0.0; 5], &[0.0; 5]).unwrap();
    assert_eq!(r, Ratio::Undefined);
    assert_eq!(r.value(), None);
    assert_eq!(r.to_string(), "undefined (0 / 0)");
    assert_eq!(
        ratio_of_means(&[12.0; 3], &[0.0; 3]).unwrap(),
        Ratio::Infinite { numerator: 12.0 }
    );
}

#[test]
fn exact_counters_have_an_exact_ratio() {
    let r = ratio_of_means(&[1024.0; 4], &[512.0; 4]).unwrap();
    assert_eq!(
        r,
        Ratio::Defined {
            ratio: 2.0,
            interval: RatioInterval::Exact
        }
    );
    assert_eq!(r.to_string(), "2.000 times (exact)");
}

#[test]
fn a_noisy_ratio_gets_an_interval_around_it() {
    let b = [100.0, 102.0, 98.0, 101.0, 99.0, 100.5, 99.5, 100.0];
    let a: Vec<f64> = b.iter().rev().map(|x| x * 1.05).collect();
    let r = ratio_of_means(&a, &b).unwrap();
    let ci = r.interval().unwrap();
    assert!((r.value().unwrap() - 1.05).abs() < 1e-12);
    assert!(
        ci.contains(1.05) && ci.low > 1.02 && ci.high < 1.08,
        "{ci:?}"
    );
    assert!(r.to_string().starts_with("1.050 times (95% CI 1.0"), "{r}");
    assert!(r
        .to_string()
        .ends_with("bootstrap percentile, 10,000 resamples)"));
}

#[test]
fn too_few_runs_or_a_zero_denominator_give_no_interval() {
    let r = ratio_of_means(&[1.0, 2.0, 3.0], &[2.0, 2.0, 2.0]).unwrap();
    assert_eq!(
        r,
        Ratio::Defined {
            ratio: 1.0,
            interval: RatioInterval::TooFewRuns { n: 3, needed: 5 }
        }
    );
    // Some resamples of b are all zeros.
    let r = ratio_of_means(&[3.0; 5], &[0.0, 0.0, 0.0, 0.0, 1.0]).unwrap();
    assert!(matches!(
        r,
        Ratio::Defined {
            interval: RatioInterval::Unbounded,
            ..
        }
    ));
    assert_eq!(ratio_of_means(&[], &[1.0]), Err(StatsError::Empty));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn interval_contains_the_ratio_and_stays_positive(
        a in prop::collection::vec(1f64..1e3, 5..15),
        b in prop::collection::vec(1f64..1e3, 5..15),
    ) {
        let r = ratio_of_means(&a, &b).unwrap();
        let ci = r.interval().unwrap();
        prop_assert!(ci.low > 0.0);
        prop_assert!(ci.contains(r.value().unwrap()));
    }
}
