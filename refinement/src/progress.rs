//! The progress line of a long exploration, on stderr: states, states/s, depth and the memory
//! the process holds. On a terminal it is one line redrawn in place a few times a second and
//! erased when the exploration ends, so a table printed after it reads as if it had never been
//! there; in a log (not a terminal, or under CI) it is a line every few seconds, so a long run
//! shows it is alive without flooding the log. Nothing is printed for a run shorter than the
//! first interval.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::budget::resident_bytes;

/// Where the line goes, and so how often and how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sink {
    /// Redrawn in place.
    Terminal,
    /// Appended, a line at a time.
    Log,
}

impl Sink {
    /// A terminal when stderr is one and CI is not set (CI systems that emulate a terminal
    /// still keep every redraw in their logs).
    pub fn detect() -> Sink {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        if std::io::stderr().is_terminal() && !ci {
            Sink::Terminal
        } else {
            Sink::Log
        }
    }

    /// The time between two lines: the first line also waits this long.
    fn interval(self) -> Duration {
        match self {
            Sink::Terminal => Duration::from_millis(250),
            Sink::Log => Duration::from_secs(5),
        }
    }
}

/// One exploration's progress line.
pub struct Progress {
    sink: Sink,
    started: Instant,
    last: Instant,
    /// A line is on the terminal that [`Progress::finish`] must erase.
    drawn: bool,
    /// Words after the figures (`2 workers`).
    suffix: String,
}

impl Progress {
    pub fn new(suffix: impl Into<String>) -> Progress {
        Progress::to(Sink::detect(), suffix)
    }

    /// The line of one phase of a check (`safety`, `liveness graph`, `liveness components`),
    /// naming the config it checks when there is a name (`kafka_refines, safety`).
    pub fn phase(config: &str, phase: &str) -> Progress {
        if config.is_empty() {
            Progress::new(phase)
        } else {
            Progress::new(format!("{config}, {phase}"))
        }
    }

    pub fn to(sink: Sink, suffix: impl Into<String>) -> Progress {
        let now = Instant::now();
        Progress {
            sink,
            started: now,
            last: now,
            drawn: false,
            suffix: suffix.into(),
        }
    }

    /// Draws the exploration's line if its interval has passed since the last one (cheap
    /// otherwise: one clock read).
    /// `queue`: the states found and not yet expanded.
    pub fn tick(&mut self, states: u64, queue: u64, depth: usize) {
        self.tick_with(|p| p.line(states, queue, depth, resident_bytes()));
    }

    /// Draws the line `text` makes, if its interval has passed (`text` is called only then).
    pub fn tick_with(&mut self, text: impl FnOnce(&Progress) -> String) {
        if self.last.elapsed() < self.sink.interval() {
            return;
        }
        self.last = Instant::now();
        let line = text(self);
        let mut err = std::io::stderr().lock();
        let _ = match self.sink {
            // Carriage return and erase-to-end-of-line: the line is redrawn where it was.
            Sink::Terminal => write!(err, "\r\x1b[K{line}"),
            Sink::Log => writeln!(err, "{line}"),
        };
        let _ = err.flush();
        self.drawn = self.sink == Sink::Terminal;
    }

    /// Seconds since the line was started.
    pub fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The line's text.
    pub fn line(&self, states: u64, queue: u64, depth: usize, resident: Option<u64>) -> String {
        let seconds = self.seconds().max(1e-9);
        let mut line = format!(
            "  … {} states, {} on queue, {} states/s, depth {depth}",
            grouped(states),
            grouped(queue),
            grouped((states as f64 / seconds) as u64)
        );
        if let Some(bytes) = resident {
            line.push_str(&format!(", {} held", size(bytes)));
        }
        line.push_str(&format!(", {seconds:.0}s"));
        if !self.suffix.is_empty() {
            line.push_str(&format!(" ({})", self.suffix));
        }
        line
    }

    /// Erases the terminal's line, if one is drawn.
    pub fn finish(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// 1234567 as `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes as people read them: `512 MiB`, `1.5 GiB`.
fn size(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let mib = bytes as f64 / MIB;
    if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_as_people_write_them() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(size(512 * 1024 * 1024), "512 MiB");
        assert_eq!(size(3 * 1024 * 1024 * 1024 / 2), "1.5 GiB");
    }

    #[test]
    fn the_line_names_states_queue_rate_depth_and_memory() {
        let p = Progress::to(Sink::Log, "2 workers");
        let line = p.line(1_000_000, 4_096, 12, Some(2 * 1024 * 1024 * 1024));
        assert!(
            line.starts_with("  … 1,000,000 states, 4,096 on queue, "),
            "{line}"
        );
        assert!(line.contains("states/s, depth 12, 2.0 GiB held"), "{line}");
        assert!(line.ends_with("(2 workers)"), "{line}");
    }

    #[test]
    fn nothing_is_drawn_before_the_first_interval() {
        let mut p = Progress::to(Sink::Terminal, "");
        p.tick(10, 0, 1);
        assert!(!p.drawn);
    }
}
