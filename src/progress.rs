//! Progress of long commands, on stderr.
//!
//! On a terminal: indicatif's bar with an ETA, redrawn in place. Anywhere
//! else (a log file, CI, `2>&1 | tee`): plain lines, because a bar there is
//! either hidden or a mess of carriage returns. A line is printed when at
//! least [`INTERVAL`] has passed since the start or the last line, so a
//! command shorter than that prints none and a long one prints a few a
//! minute:
//!
//! ```text
//! run 3/10 pagefault (model): 30%, 4 s elapsed
//! ```
//!
//! Within one long model run, [`Progress::within_run`] reports the accesses
//! done against those planned (the bar's message, or throttled lines), so a
//! single huge touch does not sit at "0/1 runs".

use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Least time between two plain progress lines.
pub const INTERVAL: Duration = Duration::from_secs(2);

/// A progress report: a bar on a terminal, throttled lines elsewhere.
pub struct Progress {
    what: String,
    /// What is counted ("run", "workload").
    unit: &'static str,
    /// The current step, for study-like commands (shown after `what`).
    message: String,
    done: usize,
    total: usize,
    sink: Sink,
}

enum Sink {
    Bar(ProgressBar),
    // Shared with the reports from inside a run (see `within_run`).
    Lines(Arc<Mutex<Throttle>>),
}

/// Receives `(accesses done, accesses planned)` from inside a model run,
/// from any of its threads.
pub type WithinRun = Arc<dyn Fn(u64, u64) + Send + Sync>;

impl Progress {
    /// Counts `total` `unit`s of `what`; `template` is the bar's indicatif
    /// template (used on a terminal only).
    pub fn new(total: usize, what: &str, unit: &'static str, template: &str) -> Progress {
        let sink = if std::io::stderr().is_terminal() {
            let pb = ProgressBar::new(total as u64);
            pb.set_style(
                ProgressStyle::with_template(template)
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            pb.set_message(what.to_string());
            pb.enable_steady_tick(Duration::from_millis(200));
            Sink::Bar(pb)
        } else {
            Sink::Lines(Arc::new(Mutex::new(Throttle::new(
                Instant::now(),
                INTERVAL,
            ))))
        };
        Progress {
            what: what.to_string(),
            unit,
            message: String::new(),
            done: 0,
            total,
            sink,
        }
    }

    /// `done` of `total` are done.
    pub fn set(&mut self, done: usize, total: usize) {
        self.done = done;
        self.total = total;
        match &mut self.sink {
            Sink::Bar(pb) => {
                pb.set_length(total as u64);
                pb.set_position(done as u64);
            }
            Sink::Lines(t) => {
                let now = Instant::now();
                let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
                if t.due(now) {
                    let text = line(
                        self.unit,
                        self.done,
                        self.total,
                        &self.what,
                        &self.message,
                        t.elapsed(now),
                    );
                    // Progress is a courtesy: a closed stderr must not stop the work.
                    let _ = writeln!(std::io::stderr().lock(), "{text}");
                }
            }
        }
    }

    /// The step now under way (the bar's `{msg}`).
    pub fn set_message(&mut self, message: &str) {
        if message != self.message {
            self.message = message.to_string();
            if let Sink::Bar(pb) = &self.sink {
                pb.set_message(message.to_string());
            }
        }
    }

    /// Progress within the run under way: accesses done of those planned, as
    /// the bar's message (`gups (model): 1,048,576 of 4,194,304 accesses`) or
    /// as throttled lines.
    pub fn within_run(&self) -> WithinRun {
        let what = self.what.clone();
        match &self.sink {
            Sink::Bar(pb) => {
                let pb = pb.clone();
                Arc::new(move |done, planned| {
                    pb.set_message(accesses_text(&what, done, planned));
                })
            }
            Sink::Lines(t) => {
                let t = Arc::clone(t);
                Arc::new(move |done, planned| {
                    let now = Instant::now();
                    let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
                    if t.due(now) {
                        let text = format!(
                            "{}, {} s elapsed",
                            accesses_text(&what, done, planned),
                            t.elapsed(now).as_secs()
                        );
                        // Progress is a courtesy: a closed stderr must not stop the work.
                        let _ = writeln!(std::io::stderr().lock(), "{text}");
                    }
                })
            }
        }
    }

    /// Removes the bar (lines stay: they are a log).
    pub fn finish(self) {
        if let Sink::Bar(pb) = self.sink {
            pb.finish_and_clear();
        }
    }
}

/// Accesses done within a run: `what: done of planned accesses (p%)`.
fn accesses_text(what: &str, done: u64, planned: u64) -> String {
    let percent = (done.saturating_mul(100)).checked_div(planned).unwrap_or(0);
    format!(
        "{what}: {} of {} accesses ({percent}%)",
        grouped(done),
        grouped(planned)
    )
}

fn grouped(v: u64) -> String {
    report::group_thousands(i64::try_from(v).unwrap_or(i64::MAX))
}

/// One plain progress line.
fn line(
    unit: &str,
    done: usize,
    total: usize,
    what: &str,
    message: &str,
    elapsed: Duration,
) -> String {
    let percent = (done * 100).checked_div(total).unwrap_or(0);
    let step = if message.is_empty() {
        String::new()
    } else {
        format!(" ({message})")
    };
    format!(
        "{unit} {done}/{total} {what}{step}: {percent}%, {} s elapsed",
        elapsed.as_secs()
    )
}

/// Decides when the next line is due: `interval` after the start, then
/// `interval` after each line.
struct Throttle {
    start: Instant,
    last: Instant,
    interval: Duration,
}

impl Throttle {
    fn new(start: Instant, interval: Duration) -> Throttle {
        Throttle {
            start,
            last: start,
            interval,
        }
    }

    /// Whether a line is due at `now`; if so, the next is due an interval later.
    fn due(&mut self, now: Instant) -> bool {
        if now.saturating_duration_since(self.last) >= self.interval {
            self.last = now;
            true
        } else {
            false
        }
    }

    fn elapsed(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_due_once_per_interval() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut t = Throttle::new(t0, 2 * s);
        // Updates every half second for ten seconds: a line at 2, 4, 6, 8, 10 s.
        let due: Vec<u64> = (1..=20)
            .map(|i| t0 + s * i / 2)
            .filter(|&now| t.due(now))
            .map(|now| (now - t0).as_millis() as u64)
            .collect();
        assert_eq!(due, vec![2000, 4000, 6000, 8000, 10000]);
    }

    #[test]
    fn a_short_command_prints_nothing_and_a_late_update_prints_at_once() {
        let t0 = Instant::now();
        let mut t = Throttle::new(t0, Duration::from_secs(2));
        assert!(!t.due(t0 + Duration::from_millis(1999)));
        assert!(t.due(t0 + Duration::from_secs(7)));
        assert!(!t.due(t0 + Duration::from_secs(8)));
        assert!(t.due(t0 + Duration::from_secs(9)));
    }

    #[test]
    fn within_a_run_the_accesses_are_counted() {
        assert_eq!(
            accesses_text("huge (model)", 1_048_576, 4_194_304),
            "huge (model): 1,048,576 of 4,194,304 accesses (25%)"
        );
        assert_eq!(accesses_text("w", 0, 0), "w: 0 of 0 accesses (0%)");
    }

    #[test]
    fn a_line_says_what_how_far_and_since_when() {
        assert_eq!(
            line(
                "run",
                3,
                10,
                "pagefault (model)",
                "",
                Duration::from_millis(4900)
            ),
            "run 3/10 pagefault (model): 30%, 4 s elapsed"
        );
        assert_eq!(
            line(
                "run",
                5,
                80,
                "study",
                "4-level vs 5-level",
                Duration::from_secs(61)
            ),
            "run 5/80 study (4-level vs 5-level): 6%, 61 s elapsed"
        );
        assert_eq!(
            line("workload", 0, 0, "validate", "", Duration::ZERO),
            "workload 0/0 validate: 0%, 0 s elapsed"
        );
    }
}
