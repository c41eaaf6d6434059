//! Intervals that respect their quantity: never below 0 for counts and times, whole
//! numbers for counts, none from too few runs, the method named; and they cover.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use stats::{
    mean_interval, MeanInterval, Method, Quantity, StatsError, Summary, BOOTSTRAP_RESAMPLES,
    MIN_RUNS_FOR_INTERVAL,
};

/// Lock contention of the study: one run of five was contended, heavily.
const CONTENDED: [f64; 5] = [0.0, 0.0, 0.0, 0.0, 1610.0];

#[test]
fn a_count_never_gets_a_negative_bound() {
    // Student's t reaches below zero here (the defect of the issue) ...
    let t = Summary::of(&CONTENDED).unwrap().ci95.unwrap();
    assert!(t.low < 0.0, "{t:?}");
    // ... the count's interval does not, has whole-number bounds, contains the mean.
    let s = Summary::of_quantity(&CONTENDED, Quantity::Count).unwrap();
    let ci = s.ci95.unwrap();
    assert_eq!(s.mean, 322.0);
    assert!(ci.low >= 0.0 && ci.contains(322.0), "{ci:?}");
    assert_eq!((ci.low.fract(), ci.high.fract()), (0.0, 0.0), "{ci:?}");
    assert!(
        ci.high <= 1610.0,
        "a bootstrap mean cannot exceed the largest run"
    );
    assert_eq!(s.quantity, Quantity::Count);
    assert_eq!(
        s.interval.method(),
        Some(Method::BootstrapPercentile {
            resamples: BOOTSTRAP_RESAMPLES
        })
    );
    assert!(s
        .interval
        .to_string()
        .ends_with("(bootstrap percentile, 10,000 resamples)"));
}

#[test]
fn three_differing_runs_get_no_interval() {
    let s = Summary::of_quantity(&[4.0, 4.0, 5.0], Quantity::Count).unwrap();
    assert_eq!(s.ci95, None);
    assert_eq!(
        s.interval,
        MeanInterval::TooFewRuns {
            n: 3,
            needed: MIN_RUNS_FOR_INTERVAL
        }
    );
    assert_eq!(
        s.interval.to_string(),
        "no interval: 3 runs, at least 5 needed"
    );
}

#[test]
fn equal_runs_are_exact_whatever_their_number() {
    for n in [2, 3, 10] {
        let s = Summary::of_quantity(&vec![524_802.0; n], Quantity::Count).unwrap();
        assert_eq!(
            s.interval,
            MeanInterval::NoSpread {
                value: 524_802.0,
                n
            }
        );
        let ci = s.ci95.unwrap();
        assert_eq!((ci.low, ci.high), (524_802.0, 524_802.0));
        assert_eq!(s.interval.to_string(), format!("exact: all {n} runs equal"));
    }
}

#[test]
fn signed_quantities_keep_students_t() {
    let xs = [-3.0, 1.0, 2.0, -0.5, 4.0, 0.25];
    let t = Summary::of(&xs).unwrap();
    let s = Summary::of_quantity(&xs, Quantity::Signed).unwrap();
    assert_eq!(s.ci95, t.ci95);
    assert_eq!(s.interval.method(), Some(Method::StudentT));
    assert_eq!(t.interval.method(), Some(Method::StudentT));
}

#[test]
fn times_are_skewed_and_stay_positive() {
    // A writeback-like sample: mostly short, one long stall.
    let xs = [
        2.1e6, 2.0e6, 2.2e6, 1.9e6, 2.05e6, 2.3e6, 2.0e6, 180e6, 2.1e6, 2.0e6,
    ];
    let t = Summary::of(&xs).unwrap().ci95.unwrap();
    assert!(t.low < 0.0, "{t:?}");
    let a = mean_interval(&xs, Quantity::Time).unwrap();
    let ci = a.interval().unwrap();
    assert!(
        ci.low >= 1.9e6 && ci.contains(Summary::of(&xs).unwrap().mean),
        "{ci:?}"
    );
    // Seeded: the same sample gives the same interval.
    assert_eq!(a, mean_interval(&xs, Quantity::Time).unwrap());
}

#[test]
fn negative_values_of_a_non_negative_kind_are_refused() {
    assert!(matches!(
        Summary::of_quantity(&[1.0, -1.0], Quantity::Time),
        Err(StatsError::OutOfRange { index: 1, .. })
    ));
    assert_eq!(mean_interval(&[], Quantity::Count), Err(StatsError::Empty));
    assert!(Summary::of_quantity(&[1.0, -1.0], Quantity::Signed).is_ok());
}

fn kind() -> impl Strategy<Value = Quantity> {
    prop::sample::select(vec![Quantity::Count, Quantity::Time, Quantity::NonNegative])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn bounds_are_never_negative_and_contain_the_mean(
        xs in prop::collection::vec(prop_oneof![Just(0.0), 0f64..1e4], 1..30),
        q in kind(),
    ) {
        let xs: Vec<f64> = if q == Quantity::Count { xs.iter().map(|x| x.round()).collect() } else { xs };
        let s = Summary::of_quantity(&xs, q).unwrap();
        if let Some(ci) = s.ci95 {
            prop_assert!(ci.low >= 0.0, "{:?}", ci);
            prop_assert!(ci.contains(s.mean), "{:?} mean {}", ci, s.mean);
            if q == Quantity::Count {
                prop_assert_eq!((ci.low.fract(), ci.high.fract()), (0.0, 0.0));
            }
        }
        // One run is never exact; equal runs are, differing ones need enough of them.
        let expect = xs.len() >= MIN_RUNS_FOR_INTERVAL || (xs.len() >= 2 && s.min == s.max);
        prop_assert_eq!(s.ci95.is_some(), expect);
    }
}

/// The share of `trials` simulated samples whose interval holds the true mean, and
/// the mean ratio of the interval's width to Student's t width.
fn coverage(
    trials: usize,
    q: Quantity,
    truth: f64,
    mut draw: impl FnMut() -> Vec<f64>,
) -> (f64, f64) {
    let mut hits = 0;
    let mut width = 0.0;
    for _ in 0..trials {
        let xs = draw();
        let ci = mean_interval(&xs, q).unwrap().interval().unwrap();
        let t = Summary::of(&xs).unwrap().ci95.unwrap();
        hits += usize::from(ci.contains(truth));
        width += (ci.high - ci.low) / (t.high - t.low);
    }
    (hits as f64 / trials as f64, width / trials as f64)
}

#[test]
fn times_from_a_skewed_law_are_covered_about_95_percent() {
    // Exponential durations of mean 100 us, 10 runs a sample.
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let (cov, width) = coverage(300, Quantity::Time, 100e3, || {
        (0..10)
            .map(|_| -100e3 * (1.0 - rng.random::<f64>()).ln())
            .collect()
    });
    eprintln!("exponential times, n = 10: coverage {cov}, width / Student's t {width}");
    assert!(cov >= 0.85, "coverage {cov}");
    // Not bought by a useless interval: about as wide as Student's t.
    assert!(width > 0.7 && width < 1.3, "width ratio {width}");
}

#[test]
fn poisson_counts_are_covered_about_95_percent() {
    // Knuth's Poisson draw with mean 3, 8 runs a sample.
    let mut rng = Pcg64Mcg::seed_from_u64(2);
    let mut poisson = move || {
        let (l, mut k, mut p) = ((-3.0f64).exp(), 0.0, 1.0);
        loop {
            p *= rng.random::<f64>();
            if p <= l {
                return k;
            }
            k += 1.0;
        }
    };
    let (cov, width) = coverage(300, Quantity::Count, 3.0, || loop {
        let xs: Vec<f64> = (0..8).map(|_| poisson()).collect();
        if xs.iter().any(|&x| x != xs[0]) {
            return xs;
        }
    });
    eprintln!("Poisson counts, n = 8: coverage {cov}, width / Student's t {width}");
    assert!(cov >= 0.88, "coverage {cov}");
    assert!(width < 2.0, "width ratio {width}");
}
