//! `loadbearing bench`: the engine measured on larger constants (states per second, bytes a
//! state, peak memory, the speedup over threads), with --tlc against TLC.

use std::path::PathBuf;
use std::time::Duration;

use crate::bench;
use crate::bench_histories;
use crate::tlc::Tlc;
use crate::Verdict;

use super::configs::Suite;
use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// Only the runs whose label contains one of these (`cassandra`, `MaxOffset=400`).
    filters: Vec<String>,
    /// Thread counts to measure each run at (the speedup is over the first).
    #[arg(long, value_delimiter = ',', default_values_t = bench::THREADS.to_vec())]
    threads: Vec<usize>,
    /// Timely worker counts to measure each safety run at on the distributed engine, in
    /// this process (`--timely` alone: none).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = bench::TIMELY_WORKERS.to_vec())]
    timely: Vec<usize>,
    /// Measure each run this many times at each thread count, the counts taking turns; a
    /// row shows the median, and the fastest and slowest. TLC runs once.
    #[arg(long, default_value_t = bench::REPEAT, value_parser = clap::value_parser!(u64).range(1..))]
    repeat: u64,
    /// Stop each run after this many seconds, as `check --timeout-secs` does.
    #[arg(long)]
    timeout_secs: Option<u64>,
    /// A TLA+ models folder of a suite (named after the suite, or a `models` folder inside
    /// one): run TLC on each benchmark's config there too. Repeat for several suites.
    #[arg(long, requires = "tla2tools")]
    tlc: Vec<PathBuf>,
    /// TLC's jar (tla2tools.jar), for --tlc.
    #[arg(long)]
    tla2tools: Option<PathBuf>,
    /// TLC's worker threads.
    #[arg(long, default_value_t = 2)]
    tlc_workers: usize,
    /// Measure the history checker instead: generated first-write histories (10,000
    /// operations on one key, the same as a sequence, 100,000 over 1,000 keys) judged as
    /// `conform --trace FILE --model CasFirstWriteAtomic` judges them.
    #[arg(long, conflicts_with_all = ["filters", "tlc"])]
    histories: bool,
    /// With --histories: run Porcupine on the same files too (bench/porcupine, built with
    /// `go build` beside this binary when missing).
    #[arg(long, requires = "histories")]
    porcupine: bool,
    /// With --histories: instead of timing, hold the judge to the oracle: N generated histories
    /// of each model that reads them (2–5 clients, 3–14 operations, unknown outcomes, reads,
    /// deletes, values, up to two keys, half with one wrong answer), each judged as a history
    /// and as a sequence by `conform --trace` and by a naive checker; prints the agreements
    /// (exit 1 on any disagreement, each written to the histories folder).
    #[arg(long, requires = "histories", value_name = "N")]
    oracle: Option<usize>,
    /// With --oracle: the first history's seed (each next one's is one more).
    #[arg(long, requires = "oracle", default_value_t = 1)]
    seed: u64,
    /// With --histories: where the generated history files are written.
    #[arg(long, requires = "histories", value_name = "DIR")]
    histories_dir: Option<PathBuf>,
    /// Measure the real engines instead: interleavings driven per second on every engine this
    /// build has (PostgreSQL on a throwaway cluster when compiled in), over the workload files
    /// of DIR (expected/workloads: the five classic ones), as `isolation --matrix` drives them.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["filters", "tlc", "histories"])]
    engines: Option<PathBuf>,
    /// With --engines: at most this many interleavings of each workload (a seeded sample
    /// beyond it).
    #[arg(long, default_value_t = 1000, requires = "engines")]
    interleavings: usize,
}

/// A measurement, not a judgement: as expected once it has run.
pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    if let Some(dir) = &args.engines {
        return engines(dir, args.interleavings);
    }
    if args.histories {
        let dir = args
            .histories_dir
            .unwrap_or_else(|| std::env::temp_dir().join("loadbearing-histories"));
        if let Some(n) = args.oracle {
            return Ok(bench_histories::against_the_oracle(n, args.seed, &dir)?);
        }
        let porcupine = args
            .porcupine
            .then(bench_histories::porcupine_runner)
            .transpose()?;
        let rows = bench_histories::measure(&dir, porcupine.as_deref(), args.repeat as usize)?;
        print!("{}", bench_histories::table(&rows));
        println!("(files in {})", dir.display());
        return Ok(Verdict::AsExpected);
    }
    let configs = suite.load()?;
    let tlc = args.tla2tools.map(|jar| Tlc {
        jar,
        models: args.tlc,
        workers: args.tlc_workers,
    });
    let results = bench::measure(
        &configs,
        &args.filters,
        &args.threads,
        &args.timely,
        args.repeat,
        args.timeout_secs.map(Duration::from_secs),
        tlc.as_ref(),
    )?;
    print!("{}", bench::table(&results));
    if let Some(summary) = bench::tlc_summary(&results) {
        println!("{summary}");
    }
    // A filtered bench measures the runs it names; the whole bench, conformance too.
    if args.filters.is_empty() {
        let conformance = bench::measure_conformance()?;
        println!();
        print!("{}", bench::conformance_table(&conformance));
    }
    Ok(Verdict::AsExpected)
}

/// `bench --engines DIR`: interleavings driven a second on every engine of this build.
#[cfg(feature = "targets")]
fn engines(dir: &std::path::Path, interleavings: usize) -> Result<Verdict, BadInput> {
    let interleave = crate::isolation::Interleave {
        bound: interleavings,
        seed: 1,
        schedule: None,
    };
    let rows = crate::bench_engines::measure(dir, interleave)?;
    print!("{}", crate::bench_engines::table(&rows));
    Ok(Verdict::AsExpected)
}

/// A build without the real engines has none to measure.
#[cfg(not(feature = "targets"))]
fn engines(_: &std::path::Path, _: usize) -> Result<Verdict, BadInput> {
    Err(BadInput::NotBuiltIn {
        what: "bench --engines",
        feature: "targets",
    })
}
