//! Modified Z-scores and outlier detection, by hand and by invariance.

use proptest::prelude::*;
use stats::{modified_z_scores, outlier_indices, StatsError};

#[test]
fn a_far_value_is_an_outlier() {
    // median 3, |x - 3| = [2, 1, 0, 1, 97], MAD = 1, M(100) = 0.6745 · 97 = 65.4.
    let z = modified_z_scores(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
    assert!((z[4] - 0.6745 * 97.0).abs() < 1e-9);
    assert!((z[0] + 0.6745 * 2.0).abs() < 1e-9);
    assert_eq!(
        outlier_indices(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap(),
        vec![4]
    );
}

#[test]
fn threshold_is_strictly_above_three_and_a_half() {
    // median 0, MAD 1 (values -1, 0, 1, ...): M = 0.6745·x, so x = 5.19 gives 3.5007.
    let xs = [-1.0, -1.0, 0.0, 1.0, 1.0, 0.0, 5.19];
    assert_eq!(outlier_indices(&xs).unwrap(), vec![6]);
    let xs = [-1.0, -1.0, 0.0, 1.0, 1.0, 0.0, 5.18];
    assert!(outlier_indices(&xs).unwrap().is_empty());
}

#[test]
fn zero_mad_falls_back_to_mean_absolute_deviation() {
    // median 5, MAD 0; MeanAD = 1/5, so M(6) = 1 / (1.253314 · 0.2) = 3.99 > 3.5.
    assert_eq!(
        outlier_indices(&[5.0, 5.0, 5.0, 5.0, 6.0]).unwrap(),
        vec![4]
    );
    // MeanAD = 2/5: M(6) = 1.99, not an outlier.
    assert!(outlier_indices(&[5.0, 5.0, 5.0, 6.0, 6.0])
        .unwrap()
        .is_empty());
}

#[test]
fn equal_values_have_no_outliers() {
    assert_eq!(modified_z_scores(&[7.0; 9]).unwrap(), vec![0.0; 9]);
    assert!(outlier_indices(&[7.0; 9]).unwrap().is_empty());
}

#[test]
fn bad_input_is_rejected() {
    assert_eq!(outlier_indices(&[]), Err(StatsError::Empty));
    assert!(outlier_indices(&[1.0, f64::NAN]).is_err());
}

proptest! {
    #[test]
    fn scores_ignore_shift_and_scale(
        xs in prop::collection::vec(0f64..100.0, 3..30),
        c in -1e3f64..1e3,
        k in 0.01f64..100.0,
    ) {
        let z0 = modified_z_scores(&xs).unwrap();
        let ys: Vec<f64> = xs.iter().map(|x| x * k + c).collect();
        let z1 = modified_z_scores(&ys).unwrap();
        for (a, b) in z0.iter().zip(&z1) {
            prop_assert!((a - b).abs() <= 1e-6 * (1.0 + a.abs()));
        }
    }

    #[test]
    fn a_planted_extreme_is_found(xs in prop::collection::vec(0f64..1.0, 5..30), at in 0usize..30) {
        let mut xs = xs;
        let at = at % (xs.len() + 1);
        xs.insert(at, 1e6);
        prop_assert!(outlier_indices(&xs).unwrap().contains(&at));
    }
}
