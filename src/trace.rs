//! `loadbearing trace`: the shortest counterexample of one config as a swimlane, JSON, or a
//! Graphviz picture of the path or of the whole state graph.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

use loadbearing_refinement::view::{ShownGraph, View, ViewError};
use loadbearing_refinement::{Options, Shown, ShownPath};
use petgraph::dot::{Config as DotConfig, Dot};
use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::{json, Value};

use crate::render;
use loadbearing_expected::run::{check_spec, run, Judged, RunError};
use loadbearing_expected::suite::{Config, Expected};

/// Why a config could not be traced.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error(transparent)]
    Run(#[from] RunError),
    /// The counterexample could not be placed in the explorer.
    #[error(transparent)]
    ExplorerPath(ViewError),
}

/// Why a traced config could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    #[error("no counterexample: nothing to draw")]
    NoCounterexample,
    /// The state graph could not be had (too many states, or a foreign report).
    #[error(transparent)]
    Graph(ViewError),
}

/// Why Graphviz could not render a picture.
#[derive(Debug, thiserror::Error)]
pub enum SvgError {
    #[error(
        "cannot run Graphviz `dot` ({0}): install graphviz (apt-get install graphviz), \
         or use --format dot and render it elsewhere"
    )]
    NoGraphviz(#[source] std::io::Error),
    #[error("writing to `dot`: {0}")]
    Write(#[source] std::io::Error),
    #[error("waiting for `dot`: {0}")]
    Wait(#[source] std::io::Error),
    /// `stderr`: what `dot` printed.
    #[error("`dot -Tsvg` failed: {stderr}")]
    Failed { stderr: String },
    #[error("`dot` wrote no UTF-8: {0}")]
    NotUtf8(#[source] std::string::FromUtf8Error),
}

/// A config run for its counterexample, with what the explorer and pictures need.
pub struct Traced {
    pub judged: Judged,
    pub view: Box<dyn View>,
    /// The counterexample as the explorer's `#/steps/…` path.
    pub explorer_path: Option<Vec<usize>>,
}

impl Traced {
    pub fn counterexample(&self) -> Option<&ShownPath> {
        self.judged.report.counterexample()
    }

    /// For a refinement failure: the model the refinement maps to.
    pub fn abstract_model(&self) -> Option<&str> {
        self.counterexample()?
            .abstract_step
            .as_ref()
            .map(|abs| abs.model.as_str())
    }
}

/// The config's model for people (explorer, paths, state graph).
pub fn view_of(config: &Config) -> Box<dyn View> {
    (config.entry.view)(&config.constants, &check_spec(config))
}

pub fn trace(config: &Config, options: &Options) -> Result<Traced, TraceError> {
    let judged = run(config, options)?;
    let view = view_of(config);
    let explorer_path = view
        .explorer_path(judged.report.as_ref())
        .map_err(TraceError::ExplorerPath)?;
    Ok(Traced {
        judged,
        view,
        explorer_path,
    })
}

/// The one-line description of a config: its model and constants.
pub fn config_line(config: &Config) -> String {
    let fairness = if config.fair {
        ""
    } else {
        ", no fairness (SafeSpec)"
    };
    format!(
        "{}: {} with {}{fairness}",
        config.name,
        config.model,
        render::constants_text(config)
    )
}

/// The text trace: what the config is, what it must do and did, then the swimlane. The
/// snapshots under `expected/snapshots/` are exactly this text.
pub fn text(t: &Traced) -> String {
    let config = &t.judged.config;
    let mut out = String::new();
    let _ = writeln!(out, "{}", config_line(config));
    let _ = writeln!(
        out,
        "expected: {}; actual: {}",
        config.expected,
        render::actual(t.judged.report.outcome())
    );
    match t.counterexample() {
        Some(cx) => {
            let _ = writeln!(
                out,
                "the shortest counterexample: {} step{}; properties checked: {}",
                cx.len(),
                if cx.len() == 1 { "" } else { "s" },
                config.properties.join(", ")
            );
            out.push('\n');
            out.push_str(&render::swimlane(cx, ""));
            out.push('\n');
        }
        None => {
            let _ = writeln!(out, "no counterexample: nothing to trace");
        }
    }
    out
}

pub fn json(t: &Traced) -> Value {
    let mut object = render::judged_json(&t.judged);
    if let Some(path) = &t.explorer_path {
        object["explorer_path"] = json!(explorer_fragment(path));
    }
    if let Some(model) = t.abstract_model() {
        object["abstract_model"] = json!(model);
    }
    object
}

/// The explorer's URL fragment that opens a path: `#/steps/0/5/0`.
pub fn explorer_fragment(path: &[usize]) -> String {
    let mut out = "#/steps".to_string();
    for i in path {
        let _ = write!(out, "/{i}");
    }
    out
}

/// A DOT string's body: quotes and backslashes escaped, each line break a `\n`.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn vars_label(vars: &[(String, Shown)]) -> String {
    vars.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

const RED: &str = "#c0392b";

/// The counterexample as a sequence diagram (SVG): one lifeline per actor.
pub fn sequence_svg(t: &Traced) -> Result<String, DrawError> {
    let cx = t.counterexample().ok_or(DrawError::NoCounterexample)?;
    Ok(crate::sequence::svg(cx, &diagram_title(t)))
}

/// A diagram's heading: the config and what it violates, in how many steps.
pub fn diagram_title(t: &Traced) -> String {
    judged_title(&t.judged)
}

/// The same heading from a judged run (the report draws from `check`'s results).
pub fn judged_title(j: &Judged) -> String {
    match j.report.counterexample() {
        Some(cx) => format!(
            "{}: violates {} ({} step{})",
            j.config.name,
            cx.property,
            cx.len(),
            if cx.len() == 1 { "" } else { "s" }
        ),
        None => j.config.name.clone(),
    }
}

/// The counterexample path as Graphviz DOT: one node per step (a lasso's last step is drawn
/// back into its loop start), the offending step or state in red.
pub fn path_dot(t: &Traced) -> Result<String, DrawError> {
    let cx = t.counterexample().ok_or(DrawError::NoCounterexample)?;
    let mut graph: DiGraph<(String, bool), (String, bool)> = DiGraph::new();
    let last = cx.steps.len() - 1;
    let closes_loop = matches!(cx.loop_start, Some(start) if start < last);
    let mut nodes: Vec<NodeIndex> = Vec::new();
    for (i, step) in cx.steps.iter().enumerate() {
        if closes_loop && i == last {
            nodes.push(nodes[cx.loop_start.unwrap_or(0)]);
            continue;
        }
        let vars = if i == 0 { &step.state } else { &step.changed };
        let mut label = format!("step {i}");
        if !vars.is_empty() {
            label.push('\n');
            label.push_str(&vars_label(vars));
        }
        let bad = i == last && cx.abstract_step.is_none() && cx.loop_start.is_none();
        nodes.push(graph.add_node((label, bad)));
    }
    for (i, step) in cx.steps.iter().enumerate().skip(1) {
        let action = step.action.as_deref().unwrap_or("");
        let actor = step.actor.as_deref().unwrap_or("");
        let bad = i == last && cx.abstract_step.is_some();
        let mut label = format!("{action}\n({actor})");
        if bad {
            label.push_str("\nmaps to no abstract step");
        }
        graph.add_edge(nodes[i - 1], nodes[i], (label, bad));
    }
    if let (Some(start), false) = (cx.loop_start, closes_loop) {
        graph.add_edge(
            nodes[start],
            nodes[start],
            ("stutters forever".to_string(), true),
        );
    }
    let title = format!(
        "{}: violates {} ({} step(s))",
        t.judged.config.name,
        cx.property,
        cx.len()
    );
    Ok(to_dot(&graph, &title))
}

fn to_dot(graph: &DiGraph<(String, bool), (String, bool)>, title: &str) -> String {
    let edge = |_: &DiGraph<_, _>, e: petgraph::graph::EdgeReference<'_, (String, bool)>| {
        let (label, bad) = e.weight();
        let colour = if *bad {
            format!(", color=\"{RED}\", fontcolor=\"{RED}\", penwidth=2")
        } else {
            String::new()
        };
        format!("label=\"{}\"{colour}", escape(label))
    };
    let node = |_: &DiGraph<_, _>, (_, (label, bad)): (NodeIndex, &(String, bool))| {
        let colour = if *bad {
            format!(", color=\"{RED}\", fontcolor=\"{RED}\", penwidth=2")
        } else {
            String::new()
        };
        format!("label=\"{}\", shape=box{colour}", escape(label))
    };
    let body = format!(
        "{:?}",
        Dot::with_attr_getters(
            graph,
            &[DotConfig::EdgeNoLabel, DotConfig::NodeNoLabel],
            &edge,
            &node
        )
    );
    let head = format!(
        "digraph {{\n    label=\"{}\"\n    labelloc=t\n    fontname=\"monospace\"\n    node [fontname=\"monospace\", fontsize=10]\n    edge [fontname=\"monospace\", fontsize=10]\n",
        escape(title)
    );
    body.replacen("digraph {\n", &head, 1)
}

/// The whole state graph of a small config as DOT, the counterexample's states and steps in
/// red. An error past `max_states` states.
pub fn graph_dot(t: &Traced, max_states: usize) -> Result<String, DrawError> {
    let cx = t.counterexample();
    let shown: ShownGraph = t
        .view
        .graph(Some(t.judged.report.as_ref()), max_states)
        .map_err(DrawError::Graph)?;
    let mut graph: DiGraph<(String, bool), (String, bool)> = DiGraph::new();
    let nodes: Vec<NodeIndex> = shown
        .states
        .iter()
        .enumerate()
        .map(|(i, vars)| {
            let mut label = vars_label(vars);
            if shown.inits.contains(&i) {
                label = format!("initial\n{label}");
            }
            let on_path = shown.path.contains(&i);
            graph.add_node((label, on_path))
        })
        .collect();
    let path_steps: Vec<(usize, usize)> = shown.path.windows(2).map(|w| (w[0], w[1])).collect();
    for e in &shown.edges {
        let label = e
            .actions
            .iter()
            .map(|(a, who)| format!("{a} ({who})"))
            .collect::<Vec<_>>()
            .join("\n");
        let on_path = path_steps.contains(&(e.from, e.to));
        graph.add_edge(nodes[e.from], nodes[e.to], (label, on_path));
    }
    let title = match cx {
        Some(cx) => format!(
            "{}: {} states; the counterexample to {} in red",
            t.judged.config.name,
            shown.states.len(),
            cx.property
        ),
        None => format!("{}: {} states", t.judged.config.name, shown.states.len()),
    };
    Ok(to_dot(&graph, &title))
}

/// Renders DOT to SVG with Graphviz's `dot`, or says how to get it.
pub fn svg(dot: &str) -> Result<String, SvgError> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(SvgError::NoGraphviz)?;
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(dot.as_bytes())
        .map_err(SvgError::Write)?;
    let out = child.wait_with_output().map_err(SvgError::Wait)?;
    if !out.status.success() {
        return Err(SvgError::Failed {
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    String::from_utf8(out.stdout).map_err(SvgError::NotUtf8)
}

/// Whether a config is expected to fail (and so has a counterexample to show).
pub fn expects_failure(config: &Config) -> bool {
    config.expected != Expected::Holds
}
