//! `loadbearing trace`: one config's shortest counterexample, as a swimlane, JSON, or a picture.

use crate::render;
use crate::trace::{self, Traced};
use crate::Verdict;
use clap::ValueEnum;
use loadbearing_refinement::Options;

use super::configs::Suite;
use super::format::pretty;
use super::BadInput;

#[derive(Clone, Copy, ValueEnum)]
enum TraceFormat {
    Text,
    Json,
    Dot,
    Svg,
}

#[derive(clap::Args)]
pub struct Args {
    /// The config whose shortest counterexample to print (`loadbearing list` names them; a
    /// bare name is the first suite's, `suite/name` one suite's).
    config: String,
    /// A swimlane for people, JSON, a DOT sequence diagram, or an SVG picture of it.
    #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
    format: TraceFormat,
    /// With dot or svg: the whole state graph of a small config, the counterexample in red.
    #[arg(long)]
    graph: bool,
    /// With --graph: refuse configs with more states than this.
    #[arg(long, default_value_t = 2000)]
    max_states: usize,
    /// Override a constant of the config: MaxOffset=5, Writers=3, Guarded=false.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    sets: Vec<String>,
}

pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    let config = suite.one(&args.config, &args.sets)?;
    let traced = trace::trace(&config, &Options::default())?;
    if traced.counterexample().is_none() && !args.graph {
        eprintln!(
            "{}: {} (expected {}): no counterexample to trace",
            config.name,
            render::actual(traced.judged.report.outcome()),
            config.expected
        );
    } else {
        print!("{}", drawn(&traced, &args)?);
    }
    Ok(if traced.judged.incomplete() {
        Verdict::Incomplete
    } else {
        Verdict::of(traced.judged.ok())
    })
}

/// The counterexample (or with --graph the state graph) in the format asked for.
fn drawn(traced: &Traced, args: &Args) -> Result<String, BadInput> {
    let dot = || {
        if args.graph {
            trace::graph_dot(traced, args.max_states)
        } else {
            trace::path_dot(traced)
        }
    };
    Ok(match args.format {
        TraceFormat::Text => trace::text(traced),
        TraceFormat::Json => format!("{}\n", pretty(&trace::json(traced))),
        TraceFormat::Dot => dot()?,
        // The path is a sequence diagram (no Graphviz); the state graph is Graphviz's.
        TraceFormat::Svg if !args.graph => trace::sequence_svg(traced)?,
        TraceFormat::Svg => trace::svg(&dot()?)?,
    })
}
