//! Whether the host is too busy to calibrate on: calibrate measures time,
//! and other processes on the same CPUs make every kernel-backend figure
//! slower and noisier (a write fault of 3 us on a quiet machine came out at
//! 7 to 18 us under a load of 10 to 16). Calibrate refuses a busy host
//! unless told `--allow-busy`.
//!
//! The reading ([`HostLoad`]) is taken over a short window: the CPU time
//! every other process used (from /proc/stat's totals less this process's
//! own, so short-lived compilers count too), the commands that used most
//! (from /proc/PID/stat, for the message), and the load average, which is
//! named but not judged (it lags a minute behind). The verdict
//! ([`HostLoad::refusal`]) is a pure function of the reading, so tests
//! inject readings instead of loading the machine.
//!
//! Invariant: a refusal message names the other work's CPU use, the load
//! average and the commands that ran most.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The most CPU other work may use while calibrating, as a share of the
/// host's CPUs (a quarter: half a CPU on this 2-vCPU machine).
pub const MAX_OTHERS_SHARE: f64 = 0.25;

/// How long [`HostLoad::sample`] watches by default.
pub const WINDOW: Duration = Duration::from_secs(1);

/// What else ran on the host during a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    /// /proc/loadavg's 1, 5 and 15 minute averages.
    pub loadavg: [f64; 3],
    /// CPUs online.
    pub cpus: usize,
    /// CPUs' worth of time other processes used during the window (1.0 is
    /// one CPU busy all the time).
    pub others_cpu: f64,
    /// The commands that used most of it: `(command, CPUs' worth)`, most
    /// first.
    pub top: Vec<(String, f64)>,
}

impl HostLoad {
    /// Watches the host for `window` (this thread sleeps meanwhile).
    /// `None` where /proc cannot be read.
    pub fn sample(window: Duration) -> Option<HostLoad> {
        let own = std::process::id();
        let tick = clock_tick()?;
        let (busy0, procs0) = (system_busy_ticks()?, process_ticks(own));
        let self0 = own_ticks(own).unwrap_or(0);
        let t0 = Instant::now();
        std::thread::sleep(window);
        let (busy1, procs1) = (system_busy_ticks()?, process_ticks(own));
        let self1 = own_ticks(own).unwrap_or(self0);
        let secs = t0.elapsed().as_secs_f64();
        let others = busy1.saturating_sub(busy0).saturating_sub(self1 - self0);
        let mut by_comm: HashMap<String, u64> = HashMap::new();
        for (pid, (comm, t1)) in &procs1 {
            let t0 = procs0.get(pid).map_or(0, |p| p.1);
            *by_comm.entry(comm.clone()).or_default() += t1.saturating_sub(t0);
        }
        let mut top: Vec<(String, f64)> = by_comm
            .into_iter()
            .filter(|(_, t)| *t > 0)
            .map(|(c, t)| (c, t as f64 / tick / secs))
            .collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        top.truncate(5);
        Some(HostLoad {
            loadavg: loadavg().unwrap_or([0.0; 3]),
            cpus: host::cpu::online_cpus().unwrap_or(1).max(1),
            others_cpu: others as f64 / tick / secs,
            top,
        })
    }

    /// Why calibrating now would measure the other work as much as this
    /// host's costs; `None` when the host is quiet enough.
    pub fn refusal(&self) -> Option<String> {
        let limit = MAX_OTHERS_SHARE * self.cpus as f64;
        (self.others_cpu > limit).then(|| {
            format!(
                "the host is busy: other processes used {:.2} of its {} CPUs over the last second \
                 (more than {limit:.2}), load average {:.2} {:.2} {:.2}; what ran most: {}. \
                 Calibrate measures time, so their work would be in every figure: run it on a \
                 quiet host, or pass --allow-busy to measure anyway (the file's description \
                 records the load)",
                self.others_cpu,
                self.cpus,
                self.loadavg[0],
                self.loadavg[1],
                self.loadavg[2],
                self.what_ran()
            )
        })
    }

    /// The load in a few words, for the cost file's description.
    pub fn describe(&self) -> String {
        format!(
            "other processes used {:.2} of {} CPUs at the start ({})",
            self.others_cpu,
            self.cpus,
            self.what_ran()
        )
    }

    fn what_ran(&self) -> String {
        if self.top.is_empty() {
            return "no process of its own (short-lived ones, or the kernel)".into();
        }
        self.top
            .iter()
            .map(|(c, n)| format!("{c} {n:.2} CPU"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn clock_tick() -> Option<f64> {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (t > 0).then_some(t as f64)
}

fn loadavg() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut f = text.split_whitespace().map(|s| s.parse::<f64>().ok());
    Some([f.next()??, f.next()??, f.next()??])
}

/// Busy ticks of every CPU (/proc/stat's `cpu` line: user, nice, system,
/// irq, softirq; idle, iowait and steal are not busy here).
fn system_busy_ticks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_line(text.lines().next()?)
}

/// The busy ticks of a /proc/stat `cpu` line.
fn parse_cpu_line(line: &str) -> Option<u64> {
    let mut f = line.split_whitespace();
    if f.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = f.filter_map(|s| s.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal ...
    (v.len() >= 7).then(|| v[0] + v[1] + v[2] + v[5] + v[6])
}

/// `(command, utime + stime)` of a /proc/PID/stat line.
fn parse_stat(text: &str) -> Option<(String, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((comm, utime + stime))
}

fn own_ticks(own: u32) -> Option<u64> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{own}/stat")).ok()?).map(|p| p.1)
}

/// Every other process's command and CPU ticks, by pid.
fn process_ticks(own: u32) -> HashMap<u32, (String, u64)> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == own {
            continue;
        }
        if let Some(p) = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
        {
            out.insert(pid, p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(others: f64, top: &[(&str, f64)]) -> HostLoad {
        HostLoad {
            loadavg: [12.5, 9.0, 4.25],
            cpus: 2,
            others_cpu: others,
            top: top.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
        }
    }

    #[test]
    fn a_busy_host_is_refused_with_the_load_and_what_ran() {
        let busy = load(1.6, &[("rustc", 1.1), ("cc1", 0.4)]);
        let msg = busy.refusal().expect("1.6 of 2 CPUs is busy");
        for part in [
            "1.60 of its 2 CPUs",
            "12.50 9.00 4.25",
            "rustc 1.10 CPU",
            "cc1 0.40 CPU",
            "--allow-busy",
        ] {
            assert!(msg.contains(part), "{part} not in: {msg}");
        }
    }

    #[test]
    fn a_quiet_host_passes_and_the_limit_scales_with_cpus() {
        assert_eq!(load(0.04, &[("sshd", 0.01)]).refusal(), None);
        assert_eq!(
            load(0.5, &[]).refusal(),
            None,
            "exactly a quarter of 2 CPUs"
        );
        assert!(load(0.51, &[]).refusal().is_some());
        let big = HostLoad {
            cpus: 64,
            ..load(8.0, &[])
        };
        assert_eq!(big.refusal(), None, "8 of 64 CPUs");
        assert!(load(0.9, &[])
            .refusal()
            .unwrap()
            .contains("no process of its own"));
    }

    #[test]
    fn proc_lines_parse() {
        assert_eq!(
            parse_cpu_line("cpu  100 5 50 9000 20 3 2 7 0 0"),
            Some(100 + 5 + 50 + 3 + 2)
        );
        assert_eq!(parse_cpu_line("cpu0 1 2 3 4 5 6 7"), None);
        let stat = "1234 (my (odd) prog) R 1 1234 1234 0 -1 4194304 10 0 0 0 250 75 0 0 20 0 1 0";
        assert_eq!(parse_stat(stat), Some(("my (odd) prog".into(), 325)));
    }

    #[test]
    fn the_reading_reads_this_host() {
        // Any host: the figures are in range, whatever the load.
        if let Some(l) = HostLoad::sample(Duration::from_millis(50)) {
            assert!(l.cpus >= 1 && l.others_cpu >= 0.0);
            assert!(l.top.len() <= 5);
        }
    }
}
