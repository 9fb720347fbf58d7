//! The progress line of a long run, on stderr: states, states/s, depth and the memory the
//! process holds. On a terminal it is one line redrawn in place a few times a second and erased
//! when the phase ends, so a table printed after it reads as if it had never been there; in a
//! log (not a terminal, or under CI) it is a line every few seconds, so a long run shows it is
//! alive without flooding the log. Nothing is printed for a run shorter than the first interval.
//!
//! The engine does no I/O: it tells a [`Reporter`]; [`ProgressLine`] is the one the CLI hands it.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use loadbearing_refinement::progress::{Reporter, Reporting, Tick};

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
    pub fn interval(self) -> Duration {
        match self {
            Sink::Terminal => Duration::from_millis(250),
            Sink::Log => Duration::from_secs(5),
        }
    }
}

/// A line on stderr, drawn as its sink wants.
pub struct Line {
    sink: Sink,
    started: Instant,
    last: Instant,
    /// A line is on the terminal that [`Line::finish`] must erase.
    drawn: bool,
}

impl Line {
    /// A line to the sink [`Sink::detect`] finds.
    pub fn new() -> Line {
        Line::to(Sink::detect())
    }

    pub fn to(sink: Sink) -> Line {
        let now = Instant::now();
        Line {
            sink,
            started: now,
            last: now,
            drawn: false,
        }
    }

    /// Draws the line `text` makes if its interval has passed since the last one (`text` is
    /// called only then; cheap otherwise: one clock read).
    pub fn tick_with(&mut self, text: impl FnOnce(&Line) -> String) {
        if self.last.elapsed() < self.sink.interval() {
            return;
        }
        self.last = Instant::now();
        let line = text(self);
        self.draw(&line);
    }

    /// Draws `line` now.
    pub fn draw(&mut self, line: &str) {
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

impl Default for Line {
    fn default() -> Self {
        Line::new()
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The engine's reporter: a check's phases as a line on stderr, naming the config it checks
/// when there is a name (`kafka_refines, safety`).
pub struct ProgressLine {
    config: String,
    sink: Sink,
    line: Mutex<Option<Line>>,
}

impl ProgressLine {
    /// The line of `config`'s check (empty: the line names only the phase), to the sink
    /// [`Sink::detect`] finds.
    pub fn reporting(config: impl Into<String>) -> Reporting {
        Reporting::to(ProgressLine::to(Sink::detect(), config))
    }

    pub fn to(sink: Sink, config: impl Into<String>) -> ProgressLine {
        ProgressLine {
            config: config.into(),
            sink,
            line: Mutex::new(None),
        }
    }

    /// The line's text for `tick`.
    pub fn text(&self, tick: &Tick<'_>) -> String {
        let seconds = tick.elapsed.as_secs_f64().max(1e-9);
        let mut line = format!(
            "  … {} states, {} on queue, {} states/s, depth {}",
            grouped(tick.states),
            grouped(tick.queue),
            grouped((tick.states as f64 / seconds) as u64),
            tick.depth
        );
        if let Some(bytes) = tick.held {
            line.push_str(&format!(", {} held", size(bytes)));
        }
        line.push_str(&format!(", {seconds:.0}s"));
        let named = match (self.config.is_empty(), tick.phase.is_empty()) {
            (true, _) => tick.phase.to_string(),
            (false, true) => self.config.clone(),
            (false, false) => format!("{}, {}", self.config, tick.phase),
        };
        if !named.is_empty() {
            line.push_str(&format!(" ({named})"));
        }
        line
    }
}

impl Reporter for ProgressLine {
    fn interval(&self) -> Duration {
        self.sink.interval()
    }

    fn progress(&self, tick: &Tick<'_>) {
        let text = self.text(tick);
        let mut line = self.line.lock().unwrap_or_else(|e| e.into_inner());
        line.get_or_insert_with(|| Line::to(self.sink)).draw(&text);
    }

    fn done(&self, _phase: &str) {
        // Dropping the line erases it on a terminal.
        drop(self.line.lock().unwrap_or_else(|e| e.into_inner()).take());
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
    fn the_line_names_states_queue_rate_depth_memory_config_and_phase() {
        let line = ProgressLine::to(Sink::Log, "kafka_refines");
        let text = line.text(&Tick {
            phase: "safety",
            states: 1_000_000,
            queue: 4_096,
            depth: 12,
            elapsed: Duration::from_secs(2),
            held: Some(2 * 1024 * 1024 * 1024),
        });
        assert_eq!(
            text,
            "  … 1,000,000 states, 4,096 on queue, 500,000 states/s, depth 12, 2.0 GiB held, 2s \
             (kafka_refines, safety)"
        );
        let unnamed = ProgressLine::to(Sink::Log, "");
        let text = unnamed.text(&Tick {
            phase: "2 workers",
            states: 0,
            queue: 0,
            depth: 0,
            elapsed: Duration::from_secs(1),
            held: None,
        });
        assert!(text.ends_with(", 1s (2 workers)"), "{text}");
    }

    #[test]
    fn nothing_is_drawn_before_the_first_interval() {
        let mut line = Line::to(Sink::Terminal);
        line.tick_with(|_| "drawn".to_string());
        assert!(!line.drawn);
    }
}
