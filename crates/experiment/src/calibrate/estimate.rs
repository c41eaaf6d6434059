//! From repeated samples to a [`Cost`]: the point, its interval and the
//! method said in words; and the least-squares line `ns = a + b * x` that
//! splits a system call into its part per call and its part per page.
//!
//! Invariants of [`measured`] and [`derived`]:
//! - `0 <= lo <= ns <= hi`: a cost is never negative, even when a
//!   difference of two noisy figures is (the mean and the interval's lower
//!   end are clamped at 0, the method says "clamped" and gives the figures
//!   before; a negative mean keeps half its interval's width above 0, so a
//!   cost that is 0 within the noise is never `[0, 0]`).
//! - With at least [`stats::MIN_RUNS_FOR_INTERVAL`] samples, the interval
//!   is the 95% one of [`stats::Summary::of_quantity`] (bootstrap for
//!   non-negative samples, Student's t for differences that may take either
//!   sign); with fewer, it is the samples' range, and the method says so.
//! - Samples far from the others (modified Z-score above
//!   [`stats::OUTLIER_THRESHOLD`]: a run preempted by another process, on
//!   a busy host) are left out when enough remain for an interval, and the
//!   method says how many.

use costs::{Cost, Provenance, Stability};

use super::robust;
use stats::{Quantity, Summary};

/// The least-squares line through `(x, y)` points: intercept and slope.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// `a`: the value at `x = 0` (the part per call).
    pub intercept: f64,
    /// `b`: the increase per unit of `x` (the part per page).
    pub slope: f64,
}

/// Fits `y = a + b * x` by ordinary least squares. `None` with fewer than
/// two distinct `x`.
pub fn least_squares(points: &[(f64, f64)]) -> Option<Line> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    Some(Line {
        intercept: my - slope * mx,
        slope,
    })
}

/// Fits `y = a + b * x` by the Theil-Sen estimator: `b` the median of the
/// slopes between every two points of distinct `x`, `a` the median of
/// `y - b * x`. One point far off (a run preempted, a slow device read)
/// moves it little, where it would tilt a least-squares line. `None` with
/// fewer than two distinct `x`.
pub fn theil_sen(points: &[(f64, f64)]) -> Option<Line> {
    let mut slopes = Vec::new();
    for (i, p) in points.iter().enumerate() {
        for q in &points[i + 1..] {
            if q.0 != p.0 {
                slopes.push((q.1 - p.1) / (q.0 - p.0));
            }
        }
    }
    let slope = median_of(slopes)?;
    let intercept = median_of(points.iter().map(|p| p.1 - slope * p.0).collect())?;
    Some(Line { intercept, slope })
}

fn median_of(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// A measured cost from `samples` (one per repeated run, in the cost's
/// unit), with `method` saying how one sample was obtained.
pub fn measured(samples: &[f64], method: &str) -> Option<Cost> {
    summarize(samples, method, Provenance::Measured)
}

/// A cost computed from other figures, one value per repetition (the
/// method says from which).
pub fn derived(samples: &[f64], method: &str) -> Option<Cost> {
    summarize(samples, method, Provenance::Derived)
}

/// A derived cost from one figure's point and interval, scaled and shifted
/// (`k * x + c` with `k >= 0`), as `fault.mthp_64k` from the 4 KiB fault
/// and the clearing cost.
pub fn derived_from(parts: &[(&Cost, f64)], method: &str) -> Cost {
    let sum = |f: fn(&Cost) -> f64| parts.iter().map(|(c, k)| k * f(c)).sum::<f64>();
    let ns = sum(|c| c.ns).max(0.0);
    // Unstable when a part is, with the widest part's spread.
    let stability = parts
        .iter()
        .filter_map(|(c, _)| c.stability.as_ref())
        .filter(|s| s.unstable)
        .max_by(|a, b| a.rel_spread.total_cmp(&b.rel_spread))
        .cloned();
    Cost {
        ns,
        lo: sum(|c| c.lo).clamp(0.0, ns),
        hi: sum(|c| c.hi).max(ns),
        n: parts.iter().map(|(c, _)| c.n).min().unwrap_or(0),
        provenance: Provenance::Derived,
        method: method.to_string(),
        source: String::new(),
        stability,
    }
}

fn summarize(samples: &[f64], method: &str, provenance: Provenance) -> Option<Cost> {
    if samples.is_empty() || samples.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let outliers = stats::outlier_indices(samples).unwrap_or_default();
    let kept: Vec<f64> = samples
        .iter()
        .enumerate()
        .filter(|(i, _)| !outliers.contains(i))
        .map(|(_, &v)| v)
        .collect();
    let (samples, dropped) = if !outliers.is_empty() && kept.len() >= stats::MIN_RUNS_FOR_INTERVAL {
        (&kept[..], outliers.len())
    } else {
        (samples, 0)
    };
    let negative = samples.iter().any(|&v| v < 0.0);
    let quantity = if negative {
        Quantity::Signed
    } else {
        Quantity::Time
    };
    let s = Summary::of_quantity(samples, quantity).ok()?;
    let (low, high, how) = match s.interval.interval() {
        Some(ci) => (ci.low, ci.high, interval_name(&s)),
        None => (
            s.min,
            s.max,
            "range of the samples (too few for an interval)".into(),
        ),
    };
    let ns = s.mean.max(0.0);
    let clamped = s.mean < 0.0 || low < 0.0;
    let mut method = format!("{method}; mean of {}, {how}", s.n);
    if dropped > 0 {
        method.push_str(&format!(
            "; {dropped} outlier{} left out (modified Z-score > {})",
            if dropped == 1 { "" } else { "s" },
            stats::OUTLIER_THRESHOLD
        ));
    }
    if clamped {
        method.push_str(&format!(
            "; clamped at 0 (before: mean {:.4}, interval {:.4} to {:.4})",
            s.mean, low, high
        ));
    }
    // A mean below 0 is a cost of 0 within the noise: the interval keeps
    // its width above 0 (half of it, as around a mean of 0), not [0, 0].
    let hi = if s.mean < 0.0 {
        high.max((high - low) / 2.0)
    } else {
        high
    };
    let (lo, hi) = (low.clamp(0.0, ns), hi.max(ns));
    let base = if ns > 0.0 { ns } else { hi };
    let rel_halfwidth = if base > 0.0 {
        (hi - lo) / 2.0 / base
    } else {
        0.0
    };
    Some(Cost {
        ns,
        lo,
        hi,
        n: s.n as u32,
        provenance,
        method,
        source: String::new(),
        stability: Some(Stability {
            rounds: s.n as u32,
            rel_halfwidth,
            rel_spread: robust::rel_spread(samples),
            unstable: rel_halfwidth > robust::UNSTABLE_REL_HALFWIDTH,
            drift: String::new(),
        }),
    })
}

fn interval_name(s: &Summary) -> String {
    match s.interval.method() {
        Some(m) => format!("95% CI ({m})"),
        None => "all samples equal".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_squares_recovers_a_known_line() {
        // y = 700 + 95 x with a symmetric wobble that cancels out.
        let pts: Vec<(f64, f64)> = [1.0, 16.0, 128.0, 512.0]
            .iter()
            .flat_map(|&x| [(x, 700.0 + 95.0 * x + 3.0), (x, 700.0 + 95.0 * x - 3.0)])
            .collect();
        let l = least_squares(&pts).unwrap();
        assert!((l.intercept - 700.0).abs() < 1e-6, "{l:?}");
        assert!((l.slope - 95.0).abs() < 1e-9, "{l:?}");
    }

    #[test]
    fn theil_sen_recovers_a_line_and_shrugs_off_one_far_point() {
        let mut pts: Vec<(f64, f64)> = [16.0, 64.0, 256.0, 512.0, 1024.0]
            .iter()
            .map(|&x| (x, 30_000.0 + 500.0 * x))
            .collect();
        let l = theil_sen(&pts).unwrap();
        assert!((l.intercept - 30_000.0).abs() < 1e-6 && (l.slope - 500.0).abs() < 1e-9);
        // The 64-page point 5 ms late: least squares tilts, Theil-Sen not.
        pts[1].1 += 5_000_000.0;
        let l = theil_sen(&pts).unwrap();
        assert!((l.slope - 500.0).abs() < 1e-9, "{l:?}");
        assert!((l.intercept - 30_000.0).abs() < 1e-6, "{l:?}");
        let ls = least_squares(&pts).unwrap();
        assert!((ls.slope - 500.0).abs() > 100.0, "{ls:?}");
        assert!(theil_sen(&[(1.0, 2.0), (1.0, 3.0)]).is_none());
    }

    #[test]
    fn least_squares_needs_two_distinct_sizes() {
        assert_eq!(least_squares(&[(4.0, 1.0)]), None);
        assert_eq!(least_squares(&[(4.0, 1.0), (4.0, 2.0)]), None);
    }

    #[test]
    fn an_interval_contains_its_point_and_is_never_negative() {
        let sets: [&[f64]; 4] = [
            &[100.0, 102.0, 98.0, 101.0, 99.0, 100.5],
            &[-3.0, 2.0, 1.0, -1.0, 0.5, -2.0], // a noisy difference around 0
            &[-5.0, -6.0, -4.0, -5.5, -4.5],    // entirely negative
            &[7.0, 9.0],                        // too few for an interval
        ];
        for s in sets {
            let c = measured(s, "test").unwrap();
            assert!(0.0 <= c.lo && c.lo <= c.ns && c.ns <= c.hi, "{s:?}: {c:?}");
            assert_eq!(c.n as usize, s.len());
        }
        let few = measured(&[7.0, 9.0], "t").unwrap();
        assert_eq!((few.lo, few.ns, few.hi), (7.0, 8.0, 9.0));
        assert!(few.method.contains("range"), "{}", few.method);
        let neg = measured(&[-5.0, -6.0, -4.0, -5.5, -4.5], "t").unwrap();
        assert_eq!((neg.lo, neg.ns), (0.0, 0.0));
        assert!(neg.method.contains("clamped"), "{}", neg.method);
        // Not a degenerate [0, 0]: the noise is kept above 0 (the samples
        // spread over 2 ns, so their interval is about a nanosecond wide).
        assert!(neg.hi > 0.2 && neg.hi < 2.0, "{neg:?}");
        assert!(neg.method.contains("before: mean -5.0"), "{}", neg.method);
    }

    #[test]
    fn a_preempted_run_is_left_out_when_enough_remain() {
        let s = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 5000.0];
        let c = measured(&s, "t").unwrap();
        assert_eq!(c.n, 6);
        assert!(c.hi < 102.0, "{c:?}");
        assert!(c.method.contains("1 outlier left out"), "{}", c.method);
        // With too few left for an interval, nothing is dropped.
        let c = measured(&[100.0, 101.0, 99.0, 5000.0], "t").unwrap();
        assert_eq!(c.n, 4);
        assert_eq!(c.hi, 5000.0);
    }

    #[test]
    fn a_spread_sample_gets_a_proper_interval() {
        let c = measured(&[100.0, 110.0, 90.0, 105.0, 95.0, 100.0], "t").unwrap();
        assert!(
            c.lo > 90.0 && c.lo < 100.0 && c.hi > 100.0 && c.hi < 110.0,
            "{c:?}"
        );
        assert!(c.method.contains("95% CI"), "{}", c.method);
    }

    #[test]
    fn a_derived_figure_adds_its_parts_with_their_bounds() {
        let a = measured(&[10.0, 11.0, 9.0, 10.5, 9.5], "a").unwrap();
        let b = measured(&[2.0, 2.2, 1.8, 2.1, 1.9], "b").unwrap();
        let d = derived_from(&[(&a, 1.0), (&b, 15.0)], "a + 15 b");
        assert!((d.ns - (a.ns + 15.0 * b.ns)).abs() < 1e-9);
        assert!((d.lo - (a.lo + 15.0 * b.lo)).abs() < 1e-9);
        assert!((d.hi - (a.hi + 15.0 * b.hi)).abs() < 1e-9);
        assert_eq!(d.provenance, Provenance::Derived);
    }
}
