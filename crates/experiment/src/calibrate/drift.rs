//! Whether the host moved while a probe ran: time the hypervisor gave to
//! other guests (steal, /proc/stat), and the CPU's clock rate (cpufreq's
//! current frequency where the host exposes it; a guest rarely does, so
//! also the rate of a fixed spin loop, timed on the thread's CPU clock,
//! before and after the probe).
//!
//! A figure taken while either moved is not the host's quiet figure: the
//! calibration measures its family again, and marks the figures when the
//! second take moved too.

use std::hint::black_box;
use std::time::Instant;

use super::clock::CpuTimer;

/// Stolen time above this share of the CPUs' time is drift.
pub const STEAL_LIMIT: f64 = 0.02;

/// A clock rate (cpufreq or the spin loop's) that moved by more than this
/// share is drift.
pub const RATE_LIMIT: f64 = 0.05;

/// Iterations of one timing of the spin loop (about a millisecond).
const SPIN_ITERATIONS: u64 = 1_000_000;

/// Timings of the spin loop per reading; the fastest is kept (a floor:
/// an interrupt only slows one).
const SPIN_TAKES: usize = 5;

/// The host's clocks at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    at: Instant,
    /// The `cpu` line of /proc/stat: steal and all ticks.
    steal_ticks: Option<u64>,
    total_ticks: Option<u64>,
    /// Mean current frequency over the CPUs, kHz (cpufreq).
    freq_khz: Option<f64>,
    /// Spin-loop iterations per ns of thread CPU time.
    spin_rate: f64,
}

/// Reads the host's clocks now (a few milliseconds).
pub fn read() -> Reading {
    let (steal_ticks, total_ticks) = match proc_stat() {
        Some((s, t)) => (Some(s), Some(t)),
        None => (None, None),
    };
    Reading {
        at: Instant::now(),
        steal_ticks,
        total_ticks,
        freq_khz: cpufreq_khz(),
        spin_rate: spin_rate(),
    }
}

/// What moved between `before` and `after`, in words; `None` when the
/// host held still.
pub fn between(before: &Reading, after: &Reading) -> Option<String> {
    let mut moved = Vec::new();
    if let (Some(s0), Some(s1), Some(t0), Some(t1)) = (
        before.steal_ticks,
        after.steal_ticks,
        before.total_ticks,
        after.total_ticks,
    ) {
        let share = steal_share(s1.saturating_sub(s0), t1.saturating_sub(t0));
        if share > STEAL_LIMIT {
            moved.push(format!("steal {:.1}% of CPU time", share * 100.0));
        }
    }
    if let (Some(f0), Some(f1)) = (before.freq_khz, after.freq_khz) {
        if let Some(r) = moved_by(f0, f1) {
            moved.push(format!(
                "CPU frequency {:.0} -> {:.0} MHz ({:+.0}%)",
                f0 / 1e3,
                f1 / 1e3,
                r * 100.0
            ));
        }
    }
    if let Some(r) = moved_by(before.spin_rate, after.spin_rate) {
        moved.push(format!("spin-loop rate {:+.0}%", r * 100.0));
    }
    if moved.is_empty() {
        None
    } else {
        let secs = after.at.duration_since(before.at).as_secs_f64();
        Some(format!("{} over {secs:.1} s", moved.join(", ")))
    }
}

/// Stolen ticks over all ticks (0 when no tick passed).
pub fn steal_share(steal: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        steal as f64 / total as f64
    }
}

/// `after / before - 1` when it is beyond [`RATE_LIMIT`] either way.
pub fn moved_by(before: f64, after: f64) -> Option<f64> {
    if before <= 0.0 || !before.is_finite() || !after.is_finite() {
        return None;
    }
    let r = after / before - 1.0;
    (r.abs() > RATE_LIMIT).then_some(r)
}

/// Steal and total ticks of /proc/stat's `cpu` line.
fn proc_stat() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_line(text.lines().next()?)
}

/// `cpu user nice system idle iowait irq softirq steal guest guest_nice`:
/// steal is the eighth number; guest time is already inside user, so the
/// total is the first eight.
pub fn parse_cpu_line(line: &str) -> Option<(u64, u64)> {
    let mut words = line.split_whitespace();
    if words.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = words
        .take(8)
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 8 {
        return None;
    }
    Some((v[7], v.iter().sum()))
}

/// The mean of every CPU's `scaling_cur_freq`, when cpufreq is there.
fn cpufreq_khz() -> Option<f64> {
    let mut sum = 0.0;
    let mut n = 0;
    for cpu in super::pin::allowed_cpus() {
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq");
        if let Some(f) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse::<f64>().ok())
        {
            sum += f;
            n += 1;
        }
    }
    (n > 0).then(|| sum / n as f64)
}

/// Iterations per ns of a fixed dependent integer loop, the fastest of a
/// few timings.
fn spin_rate() -> f64 {
    let mut best = 0.0f64;
    for _ in 0..SPIN_TAKES {
        let t = CpuTimer::start();
        black_box(spin(SPIN_ITERATIONS));
        let ns = t.ns();
        if ns > 0.0 {
            best = best.max(SPIN_ITERATIONS as f64 / ns);
        }
    }
    best
}

/// A chain of dependent multiply-adds the compiler cannot fold away.
fn spin(n: u64) -> u64 {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
    for _ in 0..n {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_line_gives_steal_and_the_total_without_guest_time() {
        let line = "cpu  1640829 51670 195607 299465 14682 0 1785 127009 500 0";
        let (steal, total) = parse_cpu_line(line).unwrap();
        assert_eq!(steal, 127_009);
        assert_eq!(
            total,
            1640829 + 51670 + 195607 + 299465 + 14682 + 1785 + 127009
        );
        assert_eq!(parse_cpu_line("cpu0 1 2 3 4 5 6 7 8"), None);
        assert_eq!(parse_cpu_line("cpu 1 2 3"), None);
    }

    #[test]
    fn drift_is_named_only_past_its_limits() {
        let r = |steal, total, freq, spin| Reading {
            at: Instant::now(),
            steal_ticks: Some(steal),
            total_ticks: Some(total),
            freq_khz: freq,
            spin_rate: spin,
        };
        let a = r(100, 10_000, None, 1.0);
        assert_eq!(between(&a, &r(110, 11_000, None, 1.03)), None);
        let moved = between(&a, &r(160, 11_000, Some(2.0e6), 1.2)).unwrap();
        assert!(moved.contains("steal 6.0%"), "{moved}");
        assert!(moved.contains("spin-loop rate +20%"), "{moved}");
        let freq = between(&r(0, 0, Some(3.0e6), 1.0), &r(0, 100, Some(2.4e6), 1.0)).unwrap();
        assert!(freq.contains("3000 -> 2400 MHz (-20%)"), "{freq}");
    }

    #[test]
    fn the_spin_loop_has_a_rate_on_this_host() {
        let r = read();
        assert!(r.spin_rate > 0.0 && r.spin_rate.is_finite());
    }
}
