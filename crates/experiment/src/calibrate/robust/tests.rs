use super::*;
use proptest::prelude::*;

/// The median by the textbook rule, as the reference.
fn naive_median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The rank from exact binomial sums in integers: the largest `k` with
/// `sum_{i < k} C(n, i) <= 2.5% of 2^n`.
fn exact_rank(n: u32) -> usize {
    let total = 1u128 << n;
    let mut c: u128 = 1; // C(n, 0)
    let mut sum: u128 = 0;
    let mut k = 0;
    for i in 0..n {
        sum += c;
        // sum / total <= 1/40
        if sum * 40 > total {
            break;
        }
        k = i as usize + 1;
        c = c * u128::from(n - i) / u128::from(i + 1);
    }
    k
}

#[test]
fn the_median_rank_matches_exact_binomial_sums() {
    for n in 1..=100u32 {
        assert_eq!(median_rank(n as usize), exact_rank(n), "n = {n}");
    }
    // Known values of the sign test's interval: none below 6 values,
    // the extremes at 6, x(6)..x(15) at 20.
    assert_eq!(median_rank(5), 0);
    assert_eq!(median_rank(6), 1);
    assert_eq!(median_rank(20), 6);
}

#[test]
fn the_median_interval_covers_the_true_median_about_95_percent() {
    // 2,000 draws of 25 values from a skewed distribution (exponential,
    // median ln 2) by a fixed generator: the interval's exact coverage at
    // n = 25 is 1 - 2 P(B <= 7) = 95.7%, so about 1,913 of 2,000 (a
    // standard deviation of 9); the bounds are five of them away.
    use rand::{Rng, SeedableRng};
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let mut covered = 0;
    for _ in 0..2000 {
        let v: Vec<f64> = (0..25).map(|_| -(1.0 - rng.random::<f64>()).ln()).collect();
        let r = Robust::median_of(&v).unwrap();
        if r.lo <= std::f64::consts::LN_2 && std::f64::consts::LN_2 <= r.hi {
            covered += 1;
        }
    }
    assert!((1868..=1958).contains(&covered), "{covered} of 2000");
}

#[test]
fn a_preempted_round_moves_neither_the_median_nor_its_interval_much() {
    // Twelve rounds: the interval is x(3)..x(10), so one round far off
    // (a neighbour ran during its probe half) is outside it.
    let mut probe = vec![
        110.0, 111.0, 109.0, 110.5, 109.5, 110.2, 110.1, 109.8, 110.3, 109.9, 110.4,
    ];
    probe.push(5_000.0);
    let base = [10.0; 12];
    let r = paired_median(&probe, &base).unwrap();
    assert!((r.point - 100.15).abs() < 1e-9, "{r:?}");
    assert!(r.lo >= 99.5 && r.hi <= 101.0, "{r:?}");
}

#[test]
fn a_constant_figure_stops_narrow_at_the_fewest_rounds() {
    let rule = StoppingRule::at(Scale::Quick);
    let p = paired_rounds(&rule, |_, _| (150.0, 50.0));
    assert_eq!(p.stop, Stop::Narrow);
    assert_eq!(p.probe.len(), rule.min_rounds);
    let c = cost(
        &p.estimate().unwrap(),
        &paired_differences(&p.probe, &p.baseline),
        p.stop,
        "m",
    );
    assert_eq!((c.ns, c.lo, c.hi), (100.0, 100.0, 100.0));
    let st = c.stability.unwrap();
    assert!(!st.unstable && st.rel_spread == 0.0 && st.rounds == rule.min_rounds as u32);
}

#[test]
fn a_figure_that_never_settles_runs_to_the_round_limit_and_is_unstable() {
    let rule = StoppingRule {
        budget: Duration::from_secs(3600),
        ..StoppingRule::at(Scale::Quick)
    };
    // Differences alternate 10 and 1000: the median's interval spans both.
    let p = paired_rounds(&rule, |i, _| (if i % 2 == 0 { 10.0 } else { 1000.0 }, 0.0));
    assert_eq!(p.stop, Stop::Rounds);
    assert_eq!(p.probe.len(), rule.max_rounds);
    let c = cost(&p.estimate().unwrap(), &p.probe, p.stop, "m");
    assert!(c.is_unstable(), "{c:?}");
    assert!(c.method.contains("most rounds"), "{}", c.method);
}

#[test]
fn the_order_alternates_round_by_round() {
    let rule = StoppingRule::at(Scale::Test);
    let mut orders = Vec::new();
    paired_rounds(&rule, |i, probe_first| {
        orders.push(probe_first);
        (i as f64, 0.0)
    });
    assert!(orders.iter().enumerate().all(|(i, &f)| f == (i % 2 == 0)));
}

#[test]
fn a_negative_median_is_a_cost_of_zero_with_its_noise_above() {
    let r = Robust::median_of(&[-5.0, -6.0, -4.0, -5.5, -4.5, -5.2, -4.8]).unwrap();
    let c = cost(&r, &[-5.0], Stop::Budget, "m");
    assert_eq!((c.lo, c.ns), (0.0, 0.0));
    assert!(c.hi > 0.0 && c.method.contains("clamped"), "{c:?}");
}

proptest! {
    #[test]
    fn paired_median_is_the_median_of_the_differences(
        pairs in prop::collection::vec((0.0f64..1e6, 0.0f64..1e6), 1..80)
    ) {
        let (p, b): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let d: Vec<f64> = p.iter().zip(&b).map(|(x, y)| x - y).collect();
        let r = paired_median(&p, &b).unwrap();
        prop_assert!((r.point - naive_median(&d)).abs() <= 1e-9 * (1.0 + r.point.abs()));
        let (min, max) = d.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, z), &x| (a.min(x), z.max(x)));
        prop_assert!(min <= r.lo && r.lo <= r.point && r.point <= r.hi && r.hi <= max);
        prop_assert_eq!(r.n, d.len());
    }

    #[test]
    fn a_drift_shared_by_both_halves_of_a_round_cancels(
        rounds in prop::collection::vec((0.0f64..1e3, 0.0f64..1e3, -1e5f64..1e5), 1..60)
    ) {
        let plain = paired_median(
            &rounds.iter().map(|r| r.0).collect::<Vec<_>>(),
            &rounds.iter().map(|r| r.1).collect::<Vec<_>>(),
        ).unwrap();
        let drifted = paired_median(
            &rounds.iter().map(|r| r.0 + r.2).collect::<Vec<_>>(),
            &rounds.iter().map(|r| r.1 + r.2).collect::<Vec<_>>(),
        ).unwrap();
        prop_assert!((plain.point - drifted.point).abs() < 1e-6);
        prop_assert!((plain.lo - drifted.lo).abs() < 1e-6 && (plain.hi - drifted.hi).abs() < 1e-6);
    }

    #[test]
    fn min_of_k_is_the_minimum_of_each_group(v in prop::collection::vec(0.0f64..1e9, 0..100), k in 1usize..10) {
        let m = min_of_k(&v, k);
        prop_assert_eq!(m.len(), v.len().div_ceil(k));
        for (i, x) in m.iter().enumerate() {
            let group = &v[i * k..((i + 1) * k).min(v.len())];
            prop_assert!(group.contains(x));
            prop_assert!(group.iter().all(|g| x <= g));
        }
    }

    #[test]
    fn the_rule_stops_narrow_only_when_narrow_and_never_past_its_limit(
        point in 1.0f64..1e4, rel in 0.0f64..0.5, rounds in 0usize..100, secs in 0u64..100
    ) {
        let rule = StoppingRule::at(Scale::Quick);
        let est = Robust { point, lo: point * (1.0 - rel), hi: point * (1.0 + rel), n: rounds };
        match rule.stop(Some(&est), rounds, Duration::from_secs(secs)) {
            Some(Stop::Narrow) => prop_assert!(rel <= rule.target + 1e-12 && rounds >= rule.min_rounds),
            Some(Stop::Rounds) => prop_assert!(rounds >= rule.max_rounds),
            Some(Stop::Budget) => prop_assert!(Duration::from_secs(secs) >= rule.budget && rounds >= 2),
            None => prop_assert!(rounds < rule.max_rounds
                && (Duration::from_secs(secs) < rule.budget || rounds < 2)
                && (rel > rule.target || rounds < rule.min_rounds)),
        }
    }

    #[test]
    fn a_cost_from_rounds_keeps_its_bounds_in_order(v in prop::collection::vec(-1e4f64..1e4, 1..50)) {
        let r = Robust::median_of(&v).unwrap();
        let c = cost(&r, &v, Stop::Budget, "m");
        prop_assert!(0.0 <= c.lo && c.lo <= c.ns && c.ns <= c.hi);
        let st = c.stability.unwrap();
        prop_assert!(st.rel_halfwidth.is_finite() && st.rel_spread.is_finite() && st.rel_spread >= 0.0);
    }
}
