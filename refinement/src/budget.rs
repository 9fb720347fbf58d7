//! The budgets a check runs under (states, time, memory) and what running out of one says.
//!
//! A run that reaches a budget stops between steps of its search and reports which budget and
//! where; it never claims the property holds, and it never runs the machine out of memory.

use std::time::{Duration, Instant};

use serde::Serialize;

/// The budget that ran out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "limit", content = "value")]
pub enum Limit {
    /// Distinct states.
    States(u64),
    /// Wall-clock time, in whole milliseconds.
    Time(u64),
    /// Resident memory, in bytes.
    Memory(u64),
    /// What the engine's own representation can count (ids are 32-bit, say).
    Representation(&'static str),
}

impl Limit {
    /// The budget's one-word name, as `incomplete (memory)` shows it.
    pub fn kind(&self) -> &'static str {
        match self {
            Limit::States(_) => "states",
            Limit::Time(_) => "time",
            Limit::Memory(_) => "memory",
            Limit::Representation(_) => "representation",
        }
    }
}

/// A run stopped by a budget: which, at what depth, in which phase of the check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Exhausted {
    #[serde(flatten)]
    pub limit: Limit,
    pub depth: usize,
    pub phase: &'static str,
}

impl Exhausted {
    /// The engine cannot represent more (ids or offsets would overflow) in `phase`.
    pub fn representation(what: &'static str, depth: usize, phase: &'static str) -> Exhausted {
        Exhausted {
            limit: Limit::Representation(what),
            depth,
            phase,
        }
    }
}

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.limit {
            Limit::States(n) => write!(f, "states: limit of {n}")?,
            Limit::Time(ms) => write!(f, "time: limit of {:?}", Duration::from_millis(*ms))?,
            Limit::Memory(bytes) => write!(f, "memory: limit of {}", gib(*bytes))?,
            Limit::Representation(what) => {
                return write!(
                    f,
                    "representation: the engine counts at most {what}, {}",
                    self.phase
                )
            }
        }
        write!(f, " reached at depth {}, {}", self.depth, self.phase)
    }
}

fn gib(bytes: u64) -> String {
    let gib = bytes as f64 / (1u64 << 30) as f64;
    if gib >= 1.0 {
        format!("{gib:.1} GiB")
    } else {
        format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

/// The budgets of one check (by default none).
#[derive(Clone, Debug, Default)]
pub struct Limits {
    pub max_states: Option<u64>,
    pub deadline: Option<(Instant, Duration)>,
    pub max_memory: Option<u64>,
}

impl Limits {
    /// An error if any budget is spent: `states` found so far, the search at `depth`.
    pub fn check(&self, states: u64, depth: usize, phase: &'static str) -> Result<(), Exhausted> {
        let spent = |limit| Exhausted {
            limit,
            depth,
            phase,
        };
        if let Some(max) = self.max_states {
            if states >= max {
                return Err(spent(Limit::States(max)));
            }
        }
        match self.time_or_memory() {
            Some(limit) => Err(spent(limit)),
            None => Ok(()),
        }
    }

    /// The time or memory budget, if spent: asked once a step of a search, since reading the
    /// resident set is a system call (the chunks of a step ask through `ChunkStop`).
    pub fn time_or_memory(&self) -> Option<Limit> {
        self.time_spent().or_else(|| self.memory_spent())
    }

    /// The time budget, if spent: a clock read.
    pub fn time_spent(&self) -> Option<Limit> {
        let (deadline, total) = self.deadline?;
        (Instant::now() >= deadline).then_some(Limit::Time(total.as_millis() as u64))
    }

    /// The memory budget, if what the process holds has reached it.
    pub fn memory_spent(&self) -> Option<Limit> {
        let max = self.max_memory?;
        (resident_bytes()? >= max).then_some(Limit::Memory(max))
    }

    /// The memory budget, if `more` bytes on top of what the process holds would pass it: asked
    /// before a table doubles, since the old and the new are held at once while it grows.
    pub fn would_pass_memory(&self, more: usize) -> Option<Limit> {
        let max = self.max_memory?;
        (resident_bytes()? + more as u64 >= max).then_some(Limit::Memory(max))
    }
}

/// The time or memory budget as the chunks of one parallel step see it: the first chunk to
/// find it spent records which, and every chunk after that skips its work.
///
/// The clock is read by every chunk, the resident set by the step's first only: reading it is
/// a system call, which on a chunk of a thousand small states cost a twentieth of the search,
/// and a step's chunks add little to it (what they bring to the visited set is weighed against
/// the budget before the table grows, `Limits::would_pass_memory`).
#[derive(Default)]
pub struct ChunkStop {
    stopped: std::sync::atomic::AtomicBool,
    memory_read: std::sync::atomic::AtomicBool,
    spent: std::sync::Mutex<Option<Limit>>,
}

impl ChunkStop {
    /// Whether this chunk should skip its work: true once any chunk found a budget spent.
    pub fn skip(&self, limits: &Limits) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        if self.stopped.load(Relaxed) {
            return true;
        }
        let spent = limits.time_spent().or_else(|| {
            if self.memory_read.swap(true, Relaxed) {
                None
            } else {
                limits.memory_spent()
            }
        });
        match spent {
            Some(limit) => {
                self.stopped.store(true, Relaxed);
                self.spent
                    .lock()
                    .expect("no chunk panics holding it")
                    .get_or_insert(limit);
                true
            }
            None => false,
        }
    }

    /// The budget a chunk found spent, once the step is done.
    pub fn spent(self) -> Option<Limit> {
        self.spent.into_inner().expect("no chunk panics holding it")
    }
}

/// The process's resident set now (Linux; `None` elsewhere, where the memory budget is not
/// enforced).
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = status.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * PAGE)
}

/// Linux's page size on the machines we run on; `statm` counts in pages.
const PAGE: u64 = 4096;

/// The memory this process may use: the smaller of the machine's and its cgroup's.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let total_kb: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let machine = total_kb * 1024;
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .filter_map(|p| std::fs::read_to_string(p).ok())
    .filter_map(|s| s.trim().parse::<u64>().ok())
    .min();
    Some(cgroup.map_or(machine, |c| c.min(machine)))
}

/// The default memory budget: most of what the process may use, leaving room for the rest of
/// the machine and for the last allocation before the budget is looked at again.
pub fn default_max_memory() -> Option<u64> {
    available_memory().map(|m| m / 10 * 9)
}

/// Reads a size as people write it: `12G`, `512MiB`, `2.5GB`, or plain bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size (write 12G, 512M or a number of bytes)"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{text}` (use K, M, G or T)"
            ))
        }
    };
    Ok((number * scale as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(parse_size("12G"), Ok(12 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3 parsecs").is_err());
    }

    /// A memory budget of one byte, every process past it; no other budget.
    fn one_byte() -> Limits {
        Limits {
            max_states: None,
            deadline: None,
            max_memory: Some(1),
        }
    }

    #[test]
    fn a_memory_budget_below_what_the_process_holds_is_spent() {
        let tiny = one_byte();
        if resident_bytes().is_some() {
            let spent = tiny.check(0, 3, "exploring").unwrap_err();
            assert_eq!(spent.limit, Limit::Memory(1));
            assert!(spent.to_string().starts_with("memory: limit of"), "{spent}");
        }
        let roomy = Limits {
            max_memory: Some(u64::MAX / 2),
            ..tiny
        };
        assert!(roomy.check(0, 3, "exploring").is_ok());
    }

    #[test]
    fn a_step_whose_first_chunk_finds_memory_spent_stops_every_chunk() {
        let tiny = one_byte();
        if resident_bytes().is_some() {
            let stop = ChunkStop::default();
            assert!(stop.skip(&tiny) && stop.skip(&tiny));
            assert_eq!(stop.spent(), Some(Limit::Memory(1)));
        }
        let past = Limits {
            deadline: Some((Instant::now(), Duration::from_millis(5))),
            max_memory: None,
            ..tiny
        };
        let stop = ChunkStop::default();
        assert!(stop.skip(&past));
        assert_eq!(stop.spent(), Some(Limit::Time(5)));
    }
}
