//! Robust statistics for figures measured in rounds, and the rule that
//! says when to stop taking rounds.
//!
//! A figure that is a difference (a chase over 4 KiB pages less the same
//! chase over huge pages) is measured in short rounds that take the probe
//! and its baseline back to back, in alternating order, so a change of the
//! host between rounds (another process, a frequency step, stolen time)
//! lands on both halves of a pair and cancels in its difference. The
//! figure is the median of the paired differences, with the
//! distribution-free interval of a median (order statistics chosen by the
//! binomial distribution, the sign test's interval): one round a neighbour
//! preempted moves neither. A figure that is a floor (the time of a fixed
//! piece of work, which interference can only lengthen) takes the minimum
//! of each `k` consecutive samples first ([`min_of_k`]).
//!
//! Rounds go on until the interval's half-width is at most
//! [`TARGET_REL_HALFWIDTH`] of the point, or the round or time budget is
//! spent ([`StoppingRule`]); a figure whose interval stays wider than
//! [`UNSTABLE_REL_HALFWIDTH`] is marked unstable in the file.

use std::time::{Duration, Instant};

use costs::{Cost, Provenance, Stability};

use super::Scale;

/// The relative half-width at which rounds stop: the figure is narrow.
pub const TARGET_REL_HALFWIDTH: f64 = 0.05;

/// Past this relative half-width (three times the target) a figure is
/// marked unstable, and predictions priced with it carry its spread.
pub const UNSTABLE_REL_HALFWIDTH: f64 = 0.15;

/// The confidence of every interval here.
const CONFIDENCE: f64 = 0.95;

/// The median of `v` (`None` when empty).
pub fn median(v: &[f64]) -> Option<f64> {
    quantile(v, 0.5)
}

/// The `q` quantile of `v` by linear interpolation between order
/// statistics (`None` when empty).
pub fn quantile(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let at = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let (i, frac) = (at.floor() as usize, at.fract());
    Some(if i + 1 < s.len() {
        s[i] + frac * (s[i + 1] - s[i])
    } else {
        s[i]
    })
}

/// How many order statistics to cut from each end for a 95% interval of
/// the median of `n` values: the largest `k` with `P(B <= k - 1) <= 2.5%`,
/// `B ~ Binomial(n, 1/2)`. The interval is then `[x(k), x(n + 1 - k)]`
/// (1-based), covering the median with probability at least 95% whatever
/// the distribution. 0 (no interval) below six values.
pub fn median_rank(n: usize) -> usize {
    let tail = (1.0 - CONFIDENCE) / 2.0;
    // ln P(B = i), from ln P(B = 0) = -n ln 2, in log space so that large
    // n does not underflow.
    let mut ln_p = -(n as f64) * std::f64::consts::LN_2;
    let mut cdf = 0.0;
    let mut k = 0;
    for i in 0..n {
        cdf += ln_p.exp();
        if cdf > tail {
            break;
        }
        k = i + 1;
        ln_p += ((n - i) as f64 / (i + 1) as f64).ln();
    }
    k
}

/// A robust figure: the median of rounds and its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Robust {
    pub point: f64,
    pub lo: f64,
    pub hi: f64,
    /// Rounds behind it.
    pub n: usize,
}

impl Robust {
    /// The median of `v` with its distribution-free 95% interval (the
    /// range of the values when there are too few for one). `None` when
    /// empty or not finite.
    pub fn median_of(v: &[f64]) -> Option<Robust> {
        if v.is_empty() || v.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let k = median_rank(s.len());
        let (lo, hi) = if k == 0 {
            (s[0], s[s.len() - 1])
        } else {
            (s[k - 1], s[s.len() - k])
        };
        Some(Robust {
            point: median(&s)?,
            lo,
            hi,
            n: s.len(),
        })
    }

    /// The interval's half-width over the point's magnitude (over the
    /// upper end's when the point is 0; 0 when both are).
    pub fn rel_halfwidth(&self) -> f64 {
        rel(self.hi - self.lo, 2.0, self.point, self.hi)
    }
}

fn rel(width: f64, parts: f64, point: f64, fallback: f64) -> f64 {
    let base = if point.abs() > 0.0 {
        point.abs()
    } else {
        fallback.abs()
    };
    if base > 0.0 {
        width / parts / base
    } else {
        0.0
    }
}

/// `probe[i] - baseline[i]`, for the pairs both give.
pub fn paired_differences(probe: &[f64], baseline: &[f64]) -> Vec<f64> {
    probe.iter().zip(baseline).map(|(p, b)| p - b).collect()
}

/// The median of the paired differences `probe[i] - baseline[i]`, with
/// its interval.
pub fn paired_median(probe: &[f64], baseline: &[f64]) -> Option<Robust> {
    Robust::median_of(&paired_differences(probe, baseline))
}

/// The minimum of every `k` consecutive samples (a last, shorter group
/// too): the floor of a quantity interference can only add to.
pub fn min_of_k(samples: &[f64], k: usize) -> Vec<f64> {
    samples
        .chunks(k.max(1))
        .map(|c| c.iter().copied().fold(f64::INFINITY, f64::min))
        .collect()
}

/// The middle half of `v` over its median, `(q3 - q1) / |median|` (0 for
/// fewer than two values or a median of 0).
pub fn rel_spread(v: &[f64]) -> f64 {
    match (quantile(v, 0.25), quantile(v, 0.5), quantile(v, 0.75)) {
        (Some(q1), Some(m), Some(q3)) if v.len() > 1 => rel(q3 - q1, 1.0, m, 0.0),
        _ => 0.0,
    }
}

/// Why rounds stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The interval reached the target.
    Narrow,
    /// The time budget is spent.
    Budget,
    /// The most rounds allowed are taken.
    Rounds,
}

/// When to stop taking rounds of one figure.
#[derive(Debug, Clone, Copy)]
pub struct StoppingRule {
    /// The relative half-width that is narrow enough.
    pub target: f64,
    /// Rounds before the rule may stop (enough for a median's interval).
    pub min_rounds: usize,
    pub max_rounds: usize,
    pub budget: Duration,
}

impl StoppingRule {
    /// The rule at `scale`: the quick calibration gives a figure about a
    /// second, `--long` half a minute.
    pub fn at(scale: Scale) -> StoppingRule {
        let (min_rounds, max_rounds, secs) = match scale {
            Scale::Test => (6, 12, 1),
            Scale::Quick => (8, 40, 2),
            Scale::Long => (12, 400, 30),
        };
        StoppingRule {
            target: TARGET_REL_HALFWIDTH,
            min_rounds,
            max_rounds,
            budget: Duration::from_secs(secs),
        }
    }

    /// Whether to stop after `rounds` rounds that took `elapsed`, with the
    /// estimate `est` so far.
    pub fn stop(&self, est: Option<&Robust>, rounds: usize, elapsed: Duration) -> Option<Stop> {
        if rounds >= self.max_rounds {
            return Some(Stop::Rounds);
        }
        if rounds >= self.min_rounds && est.is_some_and(|e| e.rel_halfwidth() <= self.target) {
            return Some(Stop::Narrow);
        }
        // Two rounds at least, so that even a slow figure has a pair.
        if rounds >= 2 && elapsed >= self.budget {
            return Some(Stop::Budget);
        }
        None
    }
}

/// The rounds of one paired figure.
#[derive(Debug, Clone)]
pub struct Paired {
    pub probe: Vec<f64>,
    pub baseline: Vec<f64>,
    pub stop: Stop,
}

impl Paired {
    pub fn estimate(&self) -> Option<Robust> {
        paired_median(&self.probe, &self.baseline)
    }
}

/// Takes rounds of `measure(round, probe_first)`, which returns one
/// `(probe, baseline)` pair measured back to back (the probe first when
/// `probe_first`, alternating round by round), until `rule` stops them.
pub fn paired_rounds(
    rule: &StoppingRule,
    mut measure: impl FnMut(usize, bool) -> (f64, f64),
) -> Paired {
    let start = Instant::now();
    let (mut probe, mut baseline) = (Vec::new(), Vec::new());
    loop {
        let round = probe.len();
        let (p, b) = measure(round, round % 2 == 0);
        probe.push(p);
        baseline.push(b);
        let est = paired_median(&probe, &baseline);
        if let Some(stop) = rule.stop(est.as_ref(), probe.len(), start.elapsed()) {
            return Paired {
                probe,
                baseline,
                stop,
            };
        }
    }
}

/// A measured [`Cost`] from a robust estimate over `rounds` (the values
/// the median was taken of), with its stability. A median below 0 is a
/// cost of 0 within the noise (clamped, the method gives the figures
/// before), as in `estimate`.
pub fn cost(est: &Robust, rounds: &[f64], stop: Stop, method: &str) -> Cost {
    let ns = est.point.max(0.0);
    let mut method = format!(
        "{method}; median of {} rounds, 95% CI of the median (order statistics, sign test), {}",
        est.n,
        match stop {
            Stop::Narrow => format!(
                "stopped when its half-width reached {:.0}% of the median",
                TARGET_REL_HALFWIDTH * 100.0
            ),
            Stop::Budget => "stopped when its time budget was spent".into(),
            Stop::Rounds => "stopped at the most rounds allowed".into(),
        }
    );
    let hi = if est.point < 0.0 {
        est.hi.max((est.hi - est.lo) / 2.0)
    } else {
        est.hi
    };
    if est.point < 0.0 || est.lo < 0.0 {
        method.push_str(&format!(
            "; clamped at 0 (before: median {:.4}, interval {:.4} to {:.4})",
            est.point, est.lo, est.hi
        ));
    }
    let rel_halfwidth = est.rel_halfwidth();
    Cost {
        ns,
        lo: est.lo.clamp(0.0, ns),
        hi: hi.max(ns),
        n: est.n as u32,
        provenance: Provenance::Measured,
        method,
        source: String::new(),
        stability: Some(Stability {
            rounds: est.n as u32,
            rel_halfwidth,
            rel_spread: rel_spread(rounds),
            unstable: rel_halfwidth > UNSTABLE_REL_HALFWIDTH,
            drift: String::new(),
        }),
    }
}

#[cfg(test)]
mod tests;
