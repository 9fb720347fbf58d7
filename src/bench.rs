//! `loadbearing bench`: larger constants than the suite, to measure the engine.

use loadbearing_expected::progress::ProgressLine;
use std::time::Duration;

use loadbearing_refinement::{Options, Outcome};
use loadbearing_specs::infra::knobs::Value;

#[cfg(feature = "distributed")]
use loadbearing_expected::run::{distributable, run_distributed};
use loadbearing_expected::run::{run, Judged};
use loadbearing_expected::suite::{override_constants, Config};
#[cfg(feature = "distributed")]
use loadbearing_refinement::distributed::Cluster;

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("benchmark base config `{0}` is not in the suite")]
    MissingConfig(&'static str),
    /// The larger constants do not fit the config's model.
    #[error("{config}: {reason}")]
    Constants {
        config: &'static str,
        reason: String,
    },
    /// A check or a conformance run failed before it gave a result.
    #[error("{reason}")]
    Run { reason: String },
    #[error("{0}: its default backend is a server")]
    ServerBackend(&'static str),
    /// Two measurements of one run disagree on what they found: the engine is not
    /// deterministic there, and no time of it means anything.
    #[error(
        "{label}: the {count} measurements disagree ({first} and {other}); a run's outcome \
         and states must not depend on the run"
    )]
    Disagree {
        label: String,
        count: usize,
        first: String,
        other: String,
    },
    /// Filters that select no run: an empty table would read as a bench that measured
    /// nothing wrong.
    #[error("no bench run matches {filters:?}; the runs are:\n  {}", .runs.join("\n  "))]
    NoRunMatches {
        filters: Vec<String>,
        runs: Vec<String>,
    },
}

/// A benchmark: a suite config at larger constants, reduced by a symmetry or not.
pub struct Run {
    pub config: &'static str,
    pub sets: &'static [(&'static str, u64)],
    pub symmetry: Option<&'static str>,
    /// Every state visited where the engine would search one state an orbit of the model's
    /// symmetry (`check --every-state`): the search a user gets from an engine without that
    /// reduction, and TLC's without `SYMMETRY`.
    pub every_state: bool,
}

const fn run_of(config: &'static str, sets: &'static [(&'static str, u64)]) -> Run {
    Run {
        config,
        sets,
        symmetry: None,
        every_state: false,
    }
}

const fn every_state_of(config: &'static str, sets: &'static [(&'static str, u64)]) -> Run {
    Run {
        every_state: true,
        ..run_of(config, sets)
    }
}

/// The runs measured against TLC, then symmetry, the liveness graph at scale, a constant past
/// a byte, and the #835 suite's heaviest models.
pub const RUNS: &[Run] = &[
    run_of("kafka-flow-828/cassandra_refines", &[("MaxOffset", 10)]),
    run_of("casfw_reap", &[("Writers", 4), ("MaxOffset", 5)]),
    // The same search without the orbits: every one of its 1.24 million states visited.
    every_state_of("casfw_reap", &[("Writers", 4), ("MaxOffset", 5)]),
    run_of("gc_cap3", &[("N", 6), ("Cap", 3)]),
    run_of("sws_holds", &[("Keys", 2), ("MaxOffset", 6)]),
    run_of("kafka-flow-828/kafka_refines", &[("MaxOffset", 12)]),
    // TLC explores all 120 permutations of five writers; SYMMETRY brings it to orbits.
    Run {
        config: "casfw_3w",
        sets: &[("Writers", 5), ("MaxOffset", 3)],
        symmetry: Some("Writers"),
        every_state: false,
    },
    // Every property, `RefLive` included: the liveness graph's bytes a state.
    run_of("kafka-flow-828/cassandra_refines", &[("MaxOffset", 14)]),
    run_of("replay_fix_on", &[("MaxOffset", 400)]),
    // The #835 suite's heaviest models, one constant past the suite's (their configs share
    // their bare names with the 828 ones).
    run_of("kafka-flow-835/cassandra_refines", &[("MaxOffset", 7)]),
    run_of("kafka-flow-835/kafka_refines", &[("MaxOffset", 4)]),
    // CasFirstWrite refining CasFirstWriteAtomic at six writers: a refinement is never
    // searched by orbits, so all 26.2 million states are visited, each step mapped.
    run_of("kafka-flow-828/casfw_refines", &[("Writers", 6)]),
];

/// Thread counts each run is measured at: the speedup of the second over the first.
pub const THREADS: &[usize] = &[1, 2];

/// Times each run is measured at each thread count (`--repeat`): its row shows the median.
/// This machine's speed drifts from one second to the next, so one measurement of a run under
/// a second says little.
pub const REPEAT: u64 = 5;

/// Times the floor (`loadbearing_refinement::floor`) is measured for each run: its median is
/// the row's floor.
const FLOOR_REPEAT: usize = 3;

/// Timely worker counts each run the distributed engine can check is measured at, in one
/// process (docs/distributed.md).
pub const TIMELY_WORKERS: &[usize] = &[1, 2];

/// Which engine a measurement is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The single-process engine, on rayon threads.
    Local,
    /// The distributed engine, on timely workers.
    Timely,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Local => "local",
            Engine::Timely => "timely",
        }
    }
}

pub struct Measured {
    pub label: String,
    pub engine: Engine,
    /// Threads (local) or workers (timely).
    pub threads: usize,
    pub outcome: Outcome,
    pub states: u64,
    /// The median of `runs` measurements.
    pub seconds: f64,
    /// The fastest and the slowest of them.
    pub spread: (f64, f64),
    pub runs: usize,
    pub visited_bytes: usize,
    pub graph_bytes: usize,
    pub peak_rss: Option<u64>,
    /// For a search by orbits (a model's symmetry the config did not ask for): the orbits
    /// searched, which stand for `states`.
    pub orbits: Option<u64>,
    /// TLC on the same constants, when `--tlc` pointed at its models.
    pub tlc: Option<crate::tlc::TlcRun>,
    /// Nanoseconds this machine takes to insert one of as many fingerprints into a hash set
    /// grown from empty (`loadbearing_refinement::floor`), measured beside the run.
    pub floor_nanos: Option<f64>,
}

impl Measured {
    /// A run's figures, read from its report and the process's peak memory just after it.
    fn of(
        label: &str,
        engine: Engine,
        threads: usize,
        judged: &Judged,
        tlc: &Option<crate::tlc::TlcRun>,
    ) -> Measured {
        Measured {
            label: label.to_string(),
            engine,
            threads,
            outcome: judged.report.outcome().clone(),
            states: judged.report.distinct_states(),
            seconds: judged.report.seconds(),
            spread: (judged.report.seconds(), judged.report.seconds()),
            runs: 1,
            visited_bytes: judged.report.visited_bytes(),
            graph_bytes: judged.report.graph_bytes(),
            peak_rss: peak_rss(),
            orbits: judged.report.orbits(),
            tlc: tlc.clone(),
            floor_nanos: None,
        }
    }

    pub fn states_per_second(&self) -> f64 {
        self.states as f64 / self.seconds.max(1e-9)
    }

    /// States a second on each thread or worker: what one core does.
    pub fn states_per_core_second(&self) -> f64 {
        self.states_per_second() / self.threads.max(1) as f64
    }

    /// The states the search kept in its visited set: one an orbit in a search by orbits.
    pub fn inserted(&self) -> u64 {
        self.orbits.unwrap_or(self.states)
    }

    /// Nanoseconds of one core a state inserted costs, over the floor's insert: how many
    /// fingerprint inserts into a well-built set the search spends on each state it keeps.
    pub fn over_the_floor(&self) -> Option<f64> {
        let per_state =
            self.seconds * self.threads.max(1) as f64 * 1e9 / self.inserted().max(1) as f64;
        self.floor_nanos.map(|floor| per_state / floor)
    }
}

/// The process's peak resident set, in bytes, since the last reset.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Measures a run `repeat` times at each of `counts` (threads or workers), the counts taking
/// turns (1, 2, 1, 2, ...) so that a drift in the machine's speed reaches each alike: a row
/// per count, with the median time.
fn repeated(
    counts: &[usize],
    repeat: u64,
    mut once: impl FnMut(usize, u64) -> Result<Measured, BenchError>,
) -> Result<Vec<Measured>, BenchError> {
    let mut samples: Vec<Vec<Measured>> = counts.iter().map(|_| Vec::new()).collect();
    for round in 0..repeat {
        for (runs, &count) in samples.iter_mut().zip(counts) {
            runs.push(once(count, round)?);
        }
    }
    samples.into_iter().map(median_of).collect()
}

/// The middle of `sorted` values, or the mean of the middle two.
fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// One row for several measurements of a run at one count: the median time, the fastest and
/// slowest, the highest peak memory. Each must have found the same outcome and states.
fn median_of(runs: Vec<Measured>) -> Result<Measured, BenchError> {
    let mut seconds: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
    seconds.sort_by(f64::total_cmp);
    let peak_rss = runs.iter().filter_map(|r| r.peak_rss).max();
    let count = runs.len();
    let mut runs = runs.into_iter();
    let mut row = runs.next().expect("a run measured at least once");
    let found = |m: &Measured| {
        format!(
            "{} with {} states",
            crate::render::actual(&m.outcome),
            m.states
        )
    };
    if let Some(other) = runs.find(|r| r.outcome != row.outcome || r.states != row.states) {
        return Err(BenchError::Disagree {
            label: format!("{}, {} thread(s)", row.label, row.threads),
            count,
            first: found(&row),
            other: found(&other),
        });
    }
    row.seconds = median(&seconds);
    row.spread = (seconds[0], seconds[count - 1]);
    row.runs = count;
    row.peak_rss = peak_rss;
    Ok(row)
}

fn reset_peak_rss() {
    // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux only; ignored elsewhere).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// What makes two bench runs one TLC run: the config (suite and name), the constants set and
/// the symmetries declared (TLC's `SYMMETRY`).
type TlcKey = (String, String, Vec<(String, Value)>, Vec<String>);

/// The result kept for `key` in `done`, or else `run`'s, kept for the next.
fn once_per_key<K: PartialEq, R: Clone, E>(
    done: &mut Vec<(K, R)>,
    key: K,
    run: impl FnOnce() -> Result<R, E>,
) -> Result<R, E> {
    if let Some((_, result)) = done.iter().find(|(k, _)| *k == key) {
        return Ok(result.clone());
    }
    let result = run()?;
    done.push((key, result.clone()));
    Ok(result)
}

/// Every run a filter selects (all when none) at every thread count in `threads`, and once
/// on TLC when `tlc` is given.
pub fn measure(
    configs: &[Config],
    filters: &[String],
    threads: &[usize],
    timely_workers: &[usize],
    repeat: u64,
    timeout: Option<Duration>,
    tlc: Option<&crate::tlc::Tlc>,
) -> Result<Vec<Measured>, BenchError> {
    let mut results = Vec::new();
    let (mut labels, mut matched) = (Vec::new(), false);
    let mut tlc_runs: Vec<(TlcKey, crate::tlc::TlcRun)> = Vec::new();
    for bench in RUNS {
        let name = bench.config;
        let mut config = loadbearing_expected::suite::find(configs, name)
            .map_err(|_| BenchError::MissingConfig(name))?
            .clone();
        let sets: Vec<(String, Value)> = bench
            .sets
            .iter()
            .map(|(k, v)| (k.to_string(), Value::Nat(*v)))
            .collect();
        let label = format!(
            "{}{}{} {}",
            config.label,
            bench
                .symmetry
                .map(|s| format!(" sym({s})"))
                .unwrap_or_default(),
            if bench.every_state {
                " every-state"
            } else {
                ""
            },
            sets.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        labels.push(label.clone());
        if !filters.is_empty() && !filters.iter().any(|f| label.contains(f.as_str())) {
            continue;
        }
        matched = true;
        override_constants(&mut config, &sets).map_err(|e| BenchError::Constants {
            config: name,
            reason: e.to_string(),
        })?;
        config.symmetry.extend(bench.symmetry.map(str::to_string));
        // TLC searches the same states whether or not we search them by orbits: a run that
        // differs from an earlier one only in that reuses its TLC time.
        let tlc_key = (
            config.suite.clone(),
            config.name.clone(),
            sets.clone(),
            config.symmetry.clone(),
        );
        let tlc_run = match tlc {
            Some(tlc) => Some(once_per_key(&mut tlc_runs, tlc_key, || {
                eprintln!("bench: {label} on TLC");
                tlc.run(&config, &sets).map_err(|e| BenchError::Run {
                    reason: format!("{label}: {e}"),
                })
            })?),
            None => None,
        };
        let mut local = repeated(threads, repeat, |threads, round| {
            let options = Options {
                threads,
                timeout,
                progress: Some(ProgressLine::reporting(config.name.clone())),
                by_orbits: !bench.every_state,
                ..Options::default()
            };
            reset_peak_rss();
            eprintln!(
                "bench: {label}, {threads} thread(s), {} of {repeat}",
                round + 1
            );
            let judged = run(&config, &options).map_err(|e| BenchError::Run {
                reason: e.to_string(),
            })?;
            Ok(Measured::of(
                &label,
                Engine::Local,
                threads,
                &judged,
                &tlc_run,
            ))
        })?;
        // Measured after the run's own searches, on one core, as many inserts as it made.
        let inserted = local.first().map_or(0, Measured::inserted);
        eprintln!("bench: {label}: the floor, {inserted} fingerprint inserts");
        let floor = loadbearing_refinement::floor::nanos_an_insert(inserted, FLOOR_REPEAT);
        for m in &mut local {
            m.floor_nanos = Some(floor);
        }
        results.extend(local);
        // The distributed engine searches no orbits: its rows for the run searched by orbits
        // are already of every state.
        let timely_workers = if bench.every_state {
            &[][..]
        } else {
            timely_workers
        };
        results.extend(measure_timely(
            &config,
            &label,
            timely_workers,
            repeat,
            timeout,
            &tlc_run,
        )?);
    }
    if !matched {
        return Err(BenchError::NoRunMatches {
            filters: filters.to_vec(),
            runs: labels,
        });
    }
    Ok(results)
}

fn per_state(bytes: u64, states: u64) -> String {
    if bytes == 0 {
        "-".into()
    } else {
        format!("{:.1}", bytes as f64 / states.max(1) as f64)
    }
}

/// The fastest and slowest of a row's measurements, `-` for one.
fn spread(m: &Measured) -> String {
    if m.runs < 2 {
        "-".into()
    } else {
        format!("{:.2}-{:.2}", m.spread.0, m.spread.1)
    }
}

/// One row per run and thread count, the median of its measurements: throughput, bytes a
/// state (the visited set, the liveness graph, and the whole process at its peak), the speedup
/// over the run's first thread count, and TLC's time, count and our ratio when it ran.
pub fn table(results: &[Measured]) -> String {
    let mut out = format!(
        "{:<58} {:<6} {:>3} {:<12} {:>11} {:>8} {:>15} {:>11} {:>11} {:>7} {:>8} {:>8} {:>8} {:>10} {:>7} {:>8} {:>8}\n",
        "run",
        "engine",
        "thr",
        "outcome",
        "states",
        "seconds",
        "fastest-slowest",
        "states/s",
        "/s a core",
        "x floor",
        "visit B",
        "graph B",
        "peak B",
        "peak RSS",
        "speedup",
        "TLC s",
        "ratio"
    );
    for m in results {
        let first = results
            .iter()
            .find(|r| r.label == m.label && r.engine == m.engine)
            .expect("the run itself");
        let rss = m
            .peak_rss
            .map(|b| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)))
            .unwrap_or_else(|| "n/a".into());
        let (tlc_seconds, ratio) = match &m.tlc {
            Some(t) if t.states == m.states => (
                format!("{:.1}", t.seconds),
                format!("{:.0}x", t.seconds / m.seconds.max(1e-9)),
            ),
            Some(t) => (format!("{:.1}", t.seconds), format!("TLC {}!", t.states)),
            None => ("-".into(), "-".into()),
        };
        out.push_str(&format!(
            "{:<58} {:<6} {:>3} {:<12} {:>11} {:>8.2} {:>15} {:>11.0} {:>11.0} {:>7} {:>8} {:>8} {:>8} {:>10} {:>6.2}x {:>8} {:>8}\n",
            m.label,
            m.engine.name(),
            m.threads,
            crate::render::actual(&m.outcome),
            m.states,
            m.seconds,
            spread(m),
            m.states_per_second(),
            m.states_per_core_second(),
            m.over_the_floor()
                .map_or_else(|| "-".into(), |x| format!("{x:.1}x")),
            per_state(m.visited_bytes as u64, m.states),
            per_state(m.graph_bytes as u64, m.states),
            per_state(m.peak_rss.unwrap_or(0), m.states),
            rss,
            first.seconds / m.seconds.max(1e-9),
            tlc_seconds,
            ratio,
        ));
    }
    out.push_str(&orbit_notes(results));
    out.push_str(&floor_notes(results));
    out
}

/// A line under the table for each run's floor: what as many fingerprint inserts as it made
/// cost this machine on one core (`loadbearing_refinement::floor`), what `x floor` divides by.
fn floor_notes(results: &[Measured]) -> String {
    note_each_run(results, |m| {
        let floor = m.floor_nanos?;
        Some(format!(
            "{}: floor {floor:.1} ns a fingerprint insert ({:.1} M a second a core), {} \
             inserts into a hash set grown from empty",
            m.label,
            1e3 / floor,
            loadbearing_expected::progress::grouped(m.inserted()),
        ))
    })
}

/// A line under the table for each run searched by orbits: its states are counted, not each
/// visited, and its states/s is of the states counted.
fn orbit_notes(results: &[Measured]) -> String {
    note_each_run(results, |m| {
        Some(format!(
            "{}: searched by orbits of the model's symmetry, {} orbits for its {} states (check \
             --every-state visits each)",
            m.label,
            loadbearing_expected::progress::grouped(m.orbits?),
            loadbearing_expected::progress::grouped(m.states)
        ))
    })
}

/// `note`'s line for each run (label) once, from its first row that has one: a run has a row
/// per thread count and engine.
fn note_each_run(results: &[Measured], note: impl Fn(&Measured) -> Option<String>) -> String {
    let mut notes = String::new();
    let mut noted: Vec<&str> = Vec::new();
    for m in results {
        if noted.contains(&m.label.as_str()) {
            continue;
        }
        if let Some(line) = note(m) {
            noted.push(&m.label);
            notes.push_str(&line);
            notes.push('\n');
        }
    }
    notes
}

/// The engine's ratio to TLC over a bench: per run, the local engine on the most threads
/// measured against TLC's time for the same config and constants; `None` without TLC. A run
/// whose state count differs from TLC's is left out of the ratios and named.
pub fn tlc_summary(results: &[Measured]) -> Option<String> {
    let mut ratios: Vec<(f64, &str)> = Vec::new();
    let mut disagree = Vec::new();
    for m in results.iter().filter(|m| m.engine == Engine::Local) {
        let most_threads = results
            .iter()
            .filter(|r| r.label == m.label && r.engine == Engine::Local)
            .all(|r| r.threads <= m.threads);
        match &m.tlc {
            Some(t) if most_threads && t.states == m.states => {
                ratios.push((t.seconds / m.seconds.max(1e-9), &m.label));
            }
            Some(_) if most_threads => disagree.push(m.label.as_str()),
            _ => {}
        }
    }
    if ratios.is_empty() && disagree.is_empty() {
        return None;
    }
    ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut line = match ratios.as_slice() {
        [] => "ratio to TLC: no run agrees with TLC's state count".to_string(),
        _ => {
            let n = ratios.len();
            let median = median(&ratios.iter().map(|r| r.0).collect::<Vec<_>>());
            let (least, least_run) = ratios[0];
            let measured = results.iter().map(|m| m.runs).max().unwrap_or(1);
            let each = match measured {
                1 => String::new(),
                k => format!(" (ours the median of {k} measurements each, TLC measured once)"),
            };
            format!(
                "ratio to TLC (local engine, most threads), over {n} runs{each}: median \
                 {median:.0}x, least {least:.0}x ({least_run})"
            )
        }
    };
    if !disagree.is_empty() {
        line.push_str(&format!(
            "; left out, TLC's count differs: {}",
            disagree.join(", ")
        ));
    }
    Some(line)
}

/// `config` on the distributed engine at each count of `timely_workers`, `repeat` times each.
#[cfg(feature = "distributed")]
fn measure_timely(
    config: &Config,
    label: &str,
    timely_workers: &[usize],
    repeat: u64,
    timeout: Option<Duration>,
    tlc_run: &Option<crate::tlc::TlcRun>,
) -> Result<Vec<Measured>, BenchError> {
    if let Err(why) = distributable(config) {
        if !timely_workers.is_empty() {
            eprintln!("bench: {label} on timely: not measured ({why})");
        }
        return Ok(Vec::new());
    }
    let timely = repeated(timely_workers, repeat, |workers, round| {
        let options = Options {
            timeout,
            progress: Some(ProgressLine::reporting(config.name.clone())),
            ..Options::default()
        };
        reset_peak_rss();
        eprintln!(
            "bench: {label}, {workers} timely worker(s), {} of {repeat}",
            round + 1
        );
        let cluster = Cluster::new(workers, 1, 0, None).map_err(|e| BenchError::Run {
            reason: e.to_string(),
        })?;
        let shared = std::sync::Arc::new(config.clone());
        let mut reports = cluster
            .run(move |worker| {
                run_distributed(worker, &shared, &options).map_err(|e| e.to_string())
            })
            .map_err(|e| BenchError::Run {
                reason: e.to_string(),
            })?;
        let judged = reports
            .swap_remove(0)
            .map_err(|reason| BenchError::Run { reason })?;
        Ok(Measured::of(
            label,
            Engine::Timely,
            workers,
            &judged,
            tlc_run,
        ))
    })?;
    Ok(timely)
}

/// A build without the distributed engine measures no timely run, and says so when asked.
#[cfg(not(feature = "distributed"))]
fn measure_timely(
    _: &Config,
    label: &str,
    timely_workers: &[usize],
    _: u64,
    _: Option<Duration>,
    _: &Option<crate::tlc::TlcRun>,
) -> Result<Vec<Measured>, BenchError> {
    if !timely_workers.is_empty() {
        eprintln!(
            "bench: {label} on timely: not measured (built without the feature `distributed`)"
        );
    }
    Ok(Vec::new())
}

/// Conformance throughput: each target on its embedded backend with about 10,000 events of
/// traces (how many traces that takes depends on the model's trace length).
#[cfg(feature = "targets")]
pub const CONFORM_RUNS: &[(&dyn loadbearing_conform::Target, usize)] = &[
    (&loadbearing_conform::targets::STORE, 1250),
    (&loadbearing_conform::targets::FLOW, 700),
    (&loadbearing_conform::targets::GROUP_COMMIT, 250),
    (&loadbearing_conform::targets::KAFKA, 900),
    (&loadbearing_conform::targets::SSI, 70),
];

pub struct ConformMeasured {
    pub target: &'static str,
    pub backend: &'static str,
    pub traces: usize,
    pub events: usize,
    pub conforming: usize,
    pub seconds: f64,
    pub validation_seconds: f64,
    pub peak_rss: Option<u64>,
}

/// Each conformance target's throughput (none in a build without the targets).
#[cfg(not(feature = "targets"))]
pub fn measure_conformance() -> Result<Vec<ConformMeasured>, BenchError> {
    Ok(Vec::new())
}

/// Each conformance target's throughput.
#[cfg(feature = "targets")]
pub fn measure_conformance() -> Result<Vec<ConformMeasured>, BenchError> {
    let mut results = Vec::new();
    for &(target, traces) in CONFORM_RUNS {
        let backend = loadbearing_conform::Backend::embedded(target.backends()[0])
            .ok_or(BenchError::ServerBackend(target.name()))?;
        let settings = loadbearing_conform::Settings {
            backend,
            traces,
            writers: 8,
            seed: 1,
            save: None,
        };
        reset_peak_rss();
        eprintln!("bench: conform {}", target.name());
        let r = loadbearing_conform::run(target, &settings).map_err(|e| BenchError::Run {
            reason: e.to_string(),
        })?;
        results.push(ConformMeasured {
            target: r.target.name(),
            backend: r.backend,
            traces: r.traces,
            events: r.events,
            conforming: r.conforming,
            seconds: r.seconds,
            validation_seconds: r.validation_seconds,
            peak_rss: peak_rss(),
        });
    }
    Ok(results)
}

pub fn conformance_table(results: &[ConformMeasured]) -> String {
    let mut out = format!(
        "{:<14} {:<8} {:>7} {:>8} {:>10} {:>10} {:>14} {:>14} {:>10}\n",
        "conform",
        "backend",
        "traces",
        "events",
        "conforming",
        "seconds",
        "validated ev/s",
        "end-to-end ev/s",
        "peak RSS"
    );
    for m in results {
        let rss = m
            .peak_rss
            .map(|b| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)))
            .unwrap_or_else(|| "n/a".into());
        out.push_str(&format!(
            "{:<14} {:<8} {:>7} {:>8} {:>10} {:>10.2} {:>14.0} {:>14.0} {:>10}\n",
            m.target,
            m.backend,
            m.traces,
            m.events,
            m.conforming,
            m.seconds,
            m.events as f64 / m.validation_seconds.max(1e-9),
            m.events as f64 / m.seconds.max(1e-9),
            rss
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlc::TlcRun;

    fn measured(label: &str, threads: usize, seconds: f64, tlc: Option<(u64, f64)>) -> Measured {
        Measured {
            label: label.into(),
            engine: Engine::Local,
            threads,
            outcome: Outcome::Holds,
            states: 100,
            seconds,
            spread: (seconds, seconds),
            runs: 1,
            visited_bytes: 0,
            graph_bytes: 0,
            peak_rss: None,
            orbits: None,
            tlc: tlc.map(|(states, seconds)| TlcRun { states, seconds }),
            floor_nanos: None,
        }
    }

    #[test]
    fn thread_counts_take_turns_and_a_row_is_the_median_of_its_measurements() {
        let mut order = Vec::new();
        // Three rounds: threads 1 take 1.0, 3.0 and 2.0 s, threads 2 0.4, 0.9 and 0.5 s (a
        // fourth round for an even count below).
        let times = [[1.0, 0.4], [3.0, 0.9], [2.0, 0.5], [1.5, 0.6]];
        let rows = repeated(&[1, 2], 3, |threads, round| {
            order.push(threads);
            let mut m = measured("a", threads, times[round as usize][threads - 1], None);
            m.peak_rss = Some(10 * (round + 1));
            Ok(m)
        })
        .unwrap();
        assert_eq!(order, [1, 2, 1, 2, 1, 2]);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].seconds, rows[0].spread, rows[0].runs),
            (2.0, (1.0, 3.0), 3)
        );
        assert_eq!((rows[1].seconds, rows[1].spread), (0.5, (0.4, 0.9)));
        assert_eq!(rows[0].peak_rss, Some(30), "the highest peak of the three");
        let even = repeated(&[2], 4, |_, round| {
            Ok(measured("a", 2, times[round as usize][1], None))
        })
        .unwrap();
        assert_eq!(even[0].seconds, 0.55, "the mean of the middle two");
        assert_eq!(spread(&even[0]), "0.40-0.90");
        assert_eq!(spread(&measured("a", 2, 0.5, None)), "-");
    }

    #[test]
    fn a_row_is_measured_a_core_and_against_the_floor_of_what_it_inserted() {
        // 100 states in 0.5 s on two threads: 100 a second a core, 10 ms of a core a state.
        let mut row = measured("a", 2, 0.5, None);
        assert_eq!(row.states_per_core_second(), 100.0);
        assert_eq!(row.over_the_floor(), None, "no floor measured");
        row.floor_nanos = Some(1_000.0);
        assert_eq!(row.over_the_floor(), Some(10_000.0));
        let printed = table(std::slice::from_ref(&row));
        assert!(printed.contains(" 10000.0x "), "{printed}");
        assert!(
            printed.contains(
                "a: floor 1000.0 ns a fingerprint insert (1.0 M a second a core), 100 inserts"
            ),
            "{printed}"
        );
        // By orbits, 10 states inserted for the 100 counted: the floor is of the 10.
        row.orbits = Some(10);
        assert_eq!(row.over_the_floor(), Some(100_000.0));
        assert!(table(&[row]).contains(
            "a: floor 1000.0 ns a fingerprint insert (1.0 M a second a core), 10 inserts"
        ));
    }

    #[test]
    fn tlc_runs_once_for_a_config_and_constants_and_again_for_others() {
        let mut done = Vec::new();
        let mut runs = 0;
        let mut run = |key: &str| {
            once_per_key(&mut done, key.to_string(), || {
                runs += 1;
                Ok::<_, ()>(runs)
            })
        };
        assert_eq!(run("casfw_reap W=4"), Ok(1));
        assert_eq!(
            run("casfw_reap W=4"),
            Ok(1),
            "the every-state row reuses it"
        );
        assert_eq!(run("casfw_reap W=5"), Ok(2));
        let failed = once_per_key(&mut done, "x".to_string(), || Err::<i32, _>("no cfg"));
        assert_eq!(failed, Err("no cfg"));
        assert_eq!(done.len(), 2, "a failure is not kept");
    }

    #[test]
    fn measurements_that_disagree_on_the_states_are_an_error_not_a_median() {
        let err = repeated(&[1], 3, |threads, round| {
            let mut m = measured("a", threads, 1.0, None);
            m.states += u64::from(round == 2);
            Ok(m)
        })
        .err()
        .expect("a disagreement");
        assert_eq!(
            err.to_string(),
            "a, 1 thread(s): the 3 measurements disagree (holds with 100 states and holds with \
             101 states); a run's outcome and states must not depend on the run"
        );
    }

    #[test]
    fn the_tlc_summary_takes_each_runs_most_threads_and_names_the_least() {
        let results = [
            measured("a", 1, 1.0, Some((100, 100.0))),
            measured("a", 2, 0.5, Some((100, 100.0))),
            measured("b", 2, 1.0, Some((100, 40.0))),
            measured("c", 2, 0.1, Some((100, 50.0))),
            measured("d", 2, 0.1, Some((99, 50.0))),
        ];
        let line = tlc_summary(&results).unwrap();
        assert_eq!(
            line,
            "ratio to TLC (local engine, most threads), over 3 runs: median 200x, least 40x (b); \
             left out, TLC's count differs: d"
        );
        assert_eq!(tlc_summary(&[measured("a", 2, 1.0, None)]), None);
        let mut repeated = measured("a", 2, 0.5, Some((100, 100.0)));
        repeated.runs = 5;
        assert_eq!(
            tlc_summary(&[repeated]).unwrap(),
            "ratio to TLC (local engine, most threads), over 1 runs (ours the median of 5 \
             measurements each, TLC measured once): median 200x, least 200x (a)"
        );
    }
}
