//! The host's load while the study measured on the kernel: its kernel
//! figures are times, and other processes on the same CPUs are in them.
//!
//! Read twice, in the second before the first run and in the second after
//! the last (when none of the study's own processes run): the CPU time
//! other processes used (`calibrate::busy::HostLoad`, this process left
//! out) and the load averages. The study is busy when either reading's
//! other work exceeds a quarter of the CPUs (`busy::MAX_OTHERS_SHARE`, the
//! limit calibrate refuses at: half a CPU on a 2-vCPU host). The load
//! averages are reported, not judged: they lag a minute behind and count
//! the study's own runs.

use serde::Serialize;

/// One reading of what else ran.
#[derive(Debug, Clone, Serialize)]
pub struct Reading {
    /// /proc/loadavg's 1, 5 and 15 minute averages.
    pub loadavg: [f64; 3],
    /// CPUs' worth of time other processes used over the second watched.
    pub others_cpu: f64,
    /// The commands that used most of it, `(command, CPUs' worth)`.
    pub top: Vec<(String, f64)>,
}

/// The load before and after the study, and the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct StudyLoad {
    /// CPUs online.
    pub cpus: usize,
    pub before: Option<Reading>,
    pub after: Option<Reading>,
    /// The most other work may use, in CPUs, before the study says busy.
    pub busy_limit_cpus: f64,
    /// Either reading's other work exceeded the limit.
    pub busy: bool,
    /// The warning the report and the terminal show when busy.
    pub warning: Option<String>,
}

/// Watches the host for a second (this thread sleeps meanwhile); `None`
/// where /proc cannot be read.
pub fn read() -> Option<Reading> {
    #[cfg(target_os = "linux")]
    {
        let l = crate::calibrate::busy::HostLoad::sample(crate::calibrate::busy::WINDOW)?;
        Some(Reading {
            loadavg: l.loadavg,
            others_cpu: l.others_cpu,
            top: l.top,
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        crate::validate::time::Load::read().map(|l| Reading {
            loadavg: l.avg,
            others_cpu: 0.0,
            top: Vec::new(),
        })
    }
}

/// The share of the CPUs other work may use before the study is busy.
#[cfg(target_os = "linux")]
const SHARE: f64 = crate::calibrate::busy::MAX_OTHERS_SHARE;
#[cfg(not(target_os = "linux"))]
const SHARE: f64 = 0.25;

impl StudyLoad {
    /// The verdict on two readings of a host of `cpus` CPUs.
    pub fn judge(cpus: usize, before: Option<Reading>, after: Option<Reading>) -> StudyLoad {
        let cpus = cpus.max(1);
        let limit = SHARE * cpus as f64;
        let over = |r: &Option<Reading>| r.as_ref().is_some_and(|r| r.others_cpu > limit);
        let busy = over(&before) || over(&after);
        let warning = busy.then(|| {
            let say = |what: &str, r: &Option<Reading>| match r {
                Some(r) => format!(
                    "{what} other processes used {:.2} CPUs (load average {:.2} {:.2} {:.2}{})",
                    r.others_cpu,
                    r.loadavg[0],
                    r.loadavg[1],
                    r.loadavg[2],
                    if r.top.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; most: {}",
                            r.top
                                .iter()
                                .map(|(c, n)| format!("{c} {n:.2}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                ),
                None => format!("{what} the load could not be read"),
            };
            format!(
                "the kernel's figures were measured on a busy host: {}; {}. More than {limit:.2} of \
                 its {cpus} CPUs is busy: other work's time is in every measured time, so the \
                 kernel's figures are slower and noisier than on a quiet host (the model's \
                 predicted times are not affected)",
                say("in the second before the first run", &before),
                say("in the second after the last", &after),
            )
        });
        StudyLoad {
            cpus,
            before,
            after,
            busy_limit_cpus: limit,
            busy,
            warning,
        }
    }

    /// The load in one line for the report's header.
    pub fn line(&self) -> String {
        let avg = |r: &Option<Reading>| {
            r.as_ref().map_or("unknown".to_string(), |r| {
                format!(
                    "{:.2} {:.2} {:.2} (others {:.2} CPUs)",
                    r.loadavg[0], r.loadavg[1], r.loadavg[2], r.others_cpu
                )
            })
        };
        format!(
            "Host load: before {}, after {}; busy above {:.2} CPUs of other work.",
            avg(&self.before),
            avg(&self.after),
            self.busy_limit_cpus
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(others: f64) -> Option<Reading> {
        Some(Reading {
            loadavg: [3.5, 2.0, 1.0],
            others_cpu: others,
            top: vec![("rustc".into(), others)],
        })
    }

    #[test]
    fn busy_is_a_quarter_of_the_cpus_of_other_work_before_or_after() {
        let quiet = StudyLoad::judge(2, reading(0.1), reading(0.4));
        assert!(!quiet.busy && quiet.warning.is_none());
        assert_eq!(quiet.busy_limit_cpus, 0.5);
        let after = StudyLoad::judge(2, reading(0.1), reading(0.9));
        assert!(after.busy);
        let w = after.warning.unwrap();
        assert!(w.contains("load average 3.50 2.00 1.00"), "{w}");
        assert!(w.contains("rustc 0.90"), "{w}");
        // The same other work on 8 CPUs is under the limit.
        assert!(!StudyLoad::judge(8, reading(0.9), reading(0.9)).busy);
        // Unreadable: not busy, and the line says unknown.
        let none = StudyLoad::judge(2, None, None);
        assert!(!none.busy);
        assert!(none.line().contains("before unknown"), "{}", none.line());
    }
}
