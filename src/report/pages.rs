//! The report's pages: the index and one page per config.

use std::fmt::Write as _;

use loadbearing_expected::run::Judged;
use loadbearing_expected::suite::Config;

use super::html::{escape, markdown, page};
use super::Inputs;
#[cfg(feature = "targets")]
use crate::conform_table;
use crate::mutate::Coverage;
use crate::{docs, mutate, render, sequence, trace};

/// How a row reads at a glance; the index lists them in this order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Standing {
    /// Could not run, or not the declared outcome.
    Red,
    /// A budget was spent: not known either way.
    Amber,
    AsExpected,
}

impl Standing {
    fn of(j: &Judged) -> Standing {
        if j.incomplete() {
            Standing::Amber
        } else if j.ok() {
            Standing::AsExpected
        } else {
            Standing::Red
        }
    }

    fn class(self) -> &'static str {
        match self {
            Standing::Red => "red",
            Standing::Amber => "amber",
            Standing::AsExpected => "",
        }
    }

    fn word(self) -> &'static str {
        match self {
            Standing::Red => "MISMATCH",
            Standing::Amber => "incomplete",
            Standing::AsExpected => "ok",
        }
    }
}

/// A file name part made only of characters every file system and URL takes as they are.
fn safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A config's page, relative to the site's root.
pub fn config_href(config: &Config) -> String {
    format!(
        "configs/{}/{}.html",
        safe(&config.suite),
        safe(&config.name)
    )
}

const INDEX_SCRIPT: &str = r#"(function () {
  var input = document.getElementById('filter');
  var redOnly = document.getElementById('red-only');
  var shown = document.getElementById('shown');
  // A filter can be given in the address: index.html#filter=epoch
  var given = /(?:^#|&)filter=([^&]*)/.exec(location.hash);
  if (given) { input.value = decodeURIComponent(given[1]); }
  function apply() {
    var words = input.value.toLowerCase().split(/\s+/).filter(function (w) { return w; });
    var count = 0;
    document.querySelectorAll('#configs tbody tr').forEach(function (row) {
      var text = row.getAttribute('data-search');
      var keep = words.every(function (w) { return text.indexOf(w) >= 0; }) &&
        (!redOnly.checked || row.classList.contains('red') || row.classList.contains('amber'));
      row.hidden = !keep;
      if (keep) { count += 1; }
    });
    shown.textContent = String(count);
  }
  input.addEventListener('input', apply);
  redOnly.addEventListener('change', apply);
  apply();
})();"#;

pub fn index(inputs: &Inputs) -> String {
    let judged = inputs.judged;
    let mut body = String::new();
    let red = judged
        .iter()
        .filter(|j| Standing::of(j) == Standing::Red)
        .count()
        + inputs.failures.len();
    let amber = judged
        .iter()
        .filter(|j| Standing::of(j) == Standing::Amber)
        .count();
    let ok = judged
        .iter()
        .filter(|j| Standing::of(j) == Standing::AsExpected)
        .count();
    let _ = writeln!(body, "<h1>loadbearing report</h1>");
    let _ = writeln!(
        body,
        "<p><code>{}</code> · loadbearing {}</p>",
        escape(inputs.command),
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        body,
        "<p class=\"summary\"><span class=\"{}\">{ok} of {} configs as expected</span><span>{red} not as expected</span><span>{amber} incomplete</span></p>",
        if red + amber == 0 { "good" } else { "bad" },
        judged.len() + inputs.failures.len()
    );
    body.push_str(
        "<nav><a href=\"#configs\">configs</a><a href=\"#tower\">tower</a><a href=\"#mutation\">guard mutation</a><a href=\"#conformance\">conformance</a></nav>\n",
    );
    configs_table(&mut body, inputs);
    body.push_str("<h2 id=\"tower\">The tower</h2>\n<p>Each model and the models it must refine; a box counts its configs that hold (✓) and that must fail (✗).</p>\n<div class=\"tower-frame\"><img class=\"tower\" src=\"tower.svg\" alt=\"the tower of models\"></div>\n<p><a href=\"tower.svg\">the tower on a page of its own</a></p>\n");
    mutation_section(&mut body, inputs.coverage);
    conformance_section(&mut body, inputs.conformance);
    page("loadbearing report", &body, INDEX_SCRIPT)
}

fn configs_table(body: &mut String, inputs: &Inputs) {
    body.push_str("<h2 id=\"configs\">Configs</h2>\n");
    body.push_str(
        "<p><label>filter <input id=\"filter\" type=\"search\" placeholder=\"suite, config, model, outcome\"></label> \
         <label><input id=\"red-only\" type=\"checkbox\"> only those not as expected</label> \
         · <span id=\"shown\"></span> shown</p>\n",
    );
    body.push_str("<table id=\"configs\">\n<thead><tr><th>suite</th><th>config</th><th>model</th><th>expected</th><th>actual</th><th>states</th><th>depth</th><th>time</th><th></th></tr></thead>\n<tbody>\n");
    for f in inputs.failures {
        let _ = writeln!(
            body,
            "<tr class=\"red\" data-search=\"{}\"><td>{}</td><td>{}</td><td></td><td></td><td colspan=\"4\">error: {}</td><td>ERROR</td></tr>",
            escape(&format!("{} {} error", f.suite, f.config).to_lowercase()),
            escape(&f.suite),
            escape(&f.config),
            escape(&f.error)
        );
    }
    let mut rows: Vec<&Judged> = inputs.judged.iter().collect();
    // Red rows first, then amber; the run's order within each (sort_by_key is stable).
    rows.sort_by_key(|j| Standing::of(j));
    for j in rows {
        let standing = Standing::of(j);
        let report = j.report.as_ref();
        let actual = render::actual(report.outcome());
        let search = format!(
            "{} {} {} {} {} {}",
            j.config.suite,
            j.config.name,
            j.config.model,
            j.config.expected,
            actual,
            standing.word()
        )
        .to_lowercase();
        let _ = writeln!(
            body,
            "<tr class=\"{}\" data-search=\"{}\"><td class=\"name\">{}</td><td class=\"name\"><a href=\"{}\">{}</a></td><td class=\"name\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.3}s</td><td>{}</td></tr>",
            standing.class(),
            escape(&search),
            escape(&j.config.suite),
            escape(&config_href(&j.config)),
            escape(&j.config.name),
            escape(j.config.model),
            escape(&j.config.expected.to_string()),
            escape(&actual),
            report.distinct_states(),
            report.depth(),
            report.seconds(),
            standing.word()
        );
    }
    body.push_str("</tbody>\n</table>\n");
}

fn mutation_section(body: &mut String, coverage: Option<&Coverage>) {
    body.push_str("<h2 id=\"mutation\">Guard mutation</h2>\n");
    let Some(coverage) = coverage else {
        body.push_str("<p>Not run for this report.</p>\n");
        return;
    };
    body.push_str("<p>Each guard of every holding config removed in turn: the properties that catch it.</p>\n<table>\n<thead><tr><th>model</th><th>guard</th><th>verdict</th><th>caught by</th><th>must-fail pair</th></tr></thead>\n<tbody>\n");
    for g in &coverage.guards {
        let (class, verdict) = if g.load_bearing() {
            ("", "load-bearing".to_string())
        } else if let Some(reason) = &g.explained {
            ("amber", format!("not load-bearing (explained: {reason})"))
        } else {
            ("red", "NOT LOAD-BEARING (unexplained)".to_string())
        };
        let _ = writeln!(
            body,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&g.model),
            escape(&g.guard),
            escape(&verdict),
            escape(&g.caught_by.join(", ")),
            escape(g.must_fail_pair.as_deref().unwrap_or("none in the suite"))
        );
    }
    body.push_str("</tbody>\n</table>\n");
    // The guard × property table of docs/mutation.md, without that page's own heading.
    let text = mutate::markdown(coverage);
    if let Some(at) = text.find("\n## ") {
        body.push_str(&vertical_headers(&markdown(&text[at..]), 2));
    }
}

/// `html`'s tables with their header cells after the first `keep` of each row set upright
/// (`th.vertical`): a guard × property matrix is as wide as its marks, not its property names.
fn vertical_headers(html: &str, keep: usize) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(start) = rest.find("<thead>") {
        let end = rest[start..]
            .find("</thead>")
            .map_or(rest.len(), |e| start + e);
        out.push_str(&rest[..start]);
        let mut seen = 0;
        for (i, piece) in rest[start..end].split("<th").enumerate() {
            if i > 0 {
                out.push_str("<th");
                // `<thead>` splits here too; a header cell is `<th>` or `<th style=…>`.
                if piece.starts_with(['>', ' ']) {
                    seen += 1;
                    if seen > keep && piece.starts_with('>') {
                        out.push_str(" class=\"vertical\"");
                    }
                }
            }
            out.push_str(piece);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(not(feature = "targets"))]
fn conformance_section(body: &mut String, _: &[super::Conformance]) {
    body.push_str("<h2 id=\"conformance\">Conformance</h2>\n");
    body.push_str("<p>Not in this build (the project's implementations are the feature <code>targets</code>).</p>\n");
}

#[cfg(feature = "targets")]
fn conformance_section(body: &mut String, results: &[super::Conformance]) {
    body.push_str("<h2 id=\"conformance\">Conformance</h2>\n");
    if results.is_empty() {
        body.push_str("<p>Not run for this report.</p>\n");
        return;
    }
    body.push_str("<p>Each implementation's traces checked against its model, and model paths replayed on the implementation.</p>\n<table>\n<thead><tr><th>target</th><th>model</th><th>backend</th><th>traces</th><th>events or steps</th><th>conforming</th><th>diverging</th><th>expected</th><th>time</th><th></th></tr></thead>\n<tbody>\n");
    for r in results {
        let _ = writeln!(
            body,
            "<tr class=\"{}\"><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{:.2}s</td><td>{}</td></tr>",
            if r.ok { "" } else { "red" },
            escape(r.target.name()),
            escape(r.model.name()),
            escape(r.backend),
            r.traces,
            r.events.max(r.steps),
            r.conforming,
            r.divergent_traces,
            escape(r.expected.name()),
            r.seconds,
            conform_table::verdict(r)
        );
        if let Some(error) = &r.error {
            let _ = writeln!(
                body,
                "<tr class=\"red\"><td colspan=\"10\"><pre>could not run: {}</pre></td></tr>",
                escape(&error.to_string())
            );
        }
        if let Some(d) = r.divergences.first() {
            let _ = writeln!(
                body,
                "<tr class=\"red\"><td colspan=\"10\"><pre>{}</pre></td></tr>",
                escape(&d.text())
            );
        } else if let Some(h) = r.histories.first() {
            let _ = writeln!(
                body,
                "<tr><td colspan=\"10\">{}<pre>{}</pre></td></tr>",
                history_timeline(h),
                escape(&h.text)
            );
        }
    }
    body.push_str("</tbody>\n</table>\n");
}

/// A failed history as a timeline (after Porcupine's visualizer): one row an operation, its
/// bar from call to return (to the right edge when it never returned); the longest order the
/// model allows numbered on its bars in green, the operations that could not come next in red,
/// the rest grey.
#[cfg(feature = "targets")]
fn history_timeline(h: &loadbearing_conform::FailedHistory) -> String {
    use loadbearing_trace::HistoryOutcome;
    let HistoryOutcome::NotLinearizable(why) = &h.verdict.outcome else {
        return String::new();
    };
    let (row, width, left) = (18.0, 560.0, 8.0);
    let end = h
        .operations
        .iter()
        .map(|op| op.ret.unwrap_or(op.call))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let x = |t: u64| left + width * t as f64 / end;
    let order: std::collections::HashMap<usize, usize> = why
        .placed
        .iter()
        .filter_map(|p| p.op)
        .enumerate()
        .map(|(n, op)| (op, n + 1))
        .collect();
    let refused: std::collections::HashSet<usize> = why.refused.iter().map(|r| r.op).collect();
    let mut rows: Vec<usize> = why.ops.clone();
    rows.sort_by_key(|&i| h.operations[i].call);
    let labels: Vec<String> = h
        .operations
        .iter()
        .map(|op| operation_label(&op.what))
        .collect();
    let widest = rows
        .iter()
        .map(|&i| labels[i].chars().count() + 10)
        .max()
        .unwrap_or(0);
    let mut svg = format!(
        "<svg class=\"timeline\" width=\"{:.0}\" height=\"{}\" role=\"img\" aria-label=\"the history's operations over time\" font-family=\"DejaVu Sans Mono, monospace\" font-size=\"11\">",
        width + 2.0 * left + widest as f64 * LABEL_CHAR + 8.0,
        row * rows.len() as f64 + 4.0
    );
    for (y, &i) in rows.iter().enumerate() {
        let op = &h.operations[i];
        let (from, to) = (x(op.call), op.ret.map_or(left + width, x));
        let (fill, label) = match (order.get(&i), refused.contains(&i)) {
            (Some(n), _) => ("#2e7d32", format!("{n}. ")),
            (None, true) => ("#c62828", "refused: ".to_string()),
            (None, false) => ("#9e9e9e", String::new()),
        };
        let top = y as f64 * row + 2.0;
        let _ = write!(
            svg,
            "<rect x=\"{from:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\"{}><title>{}</title></rect><text x=\"{:.1}\" y=\"{:.1}\">{}{}</text>",
            (to - from).max(2.0),
            row - 4.0,
            if op.ret.is_none() { " fill-opacity=\"0.4\"" } else { "" },
            escape(&op.what),
            width + 2.0 * left,
            top + row - 6.0,
            escape(&label),
            escape(&labels[i])
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The width of a character of the timeline's labels (DejaVu Sans Mono at 11 px: 0.602 em).
#[cfg_attr(not(feature = "targets"), allow(dead_code))]
const LABEL_CHAR: f64 = 6.7;

/// An operation as its timeline row names it: the event's action and its fields by name
/// (`Persist offset=4 outcome=applied value=w4@4 writer=w4`), without the envelope every line repeats
/// (version, vocabulary, call and return times); the whole line is the bar's tooltip and in
/// the text below. A line that is not a JSON object is shown as it is.
#[cfg_attr(not(feature = "targets"), allow(dead_code))]
fn operation_label(what: &str) -> String {
    const ENVELOPE: [&str; 5] = ["v", "vocabulary", "call", "ret", "action"];
    let Ok(serde_json::Value::Object(fields)) = serde_json::from_str::<serde_json::Value>(what)
    else {
        return what.to_string();
    };
    let mut label = fields
        .get("action")
        .and_then(|a| a.as_str())
        .unwrap_or("?")
        .to_string();
    for (name, value) in fields
        .iter()
        .filter(|(n, _)| !ENVELOPE.contains(&n.as_str()))
    {
        let value = match value {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        label.push_str(&format!(" {name}={value}"));
    }
    label
}

/// One config: what it checks, what it did, and its counterexample drawn.
pub fn config_page(j: &Judged) -> String {
    let config = &j.config;
    let report = j.report.as_ref();
    let standing = Standing::of(j);
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<p><a href=\"../../index.html\">← every config</a></p>\n<h1>{} <small>({})</small></h1>",
        escape(&config.name),
        escape(&config.suite)
    );
    let _ = writeln!(body, "<p>{}</p>", escape(&trace::config_line(config)));
    let _ = writeln!(
        body,
        "<table class=\"outcome\"><tr><th>expected</th><td>{}</td></tr><tr><th>actual</th><td class=\"{}\">{}</td></tr><tr><th>states</th><td>{}{}</td></tr><tr><th>depth</th><td>{}</td></tr><tr><th>time</th><td>{:.3}s</td></tr><tr><th>properties</th><td>{}</td></tr></table>",
        escape(&config.expected.to_string()),
        if standing == Standing::AsExpected { "good" } else { "bad" },
        escape(&render::actual(report.outcome())),
        report.distinct_states(),
        config
            .states
            .map(|s| format!(" (reference: {s})"))
            .unwrap_or_default(),
        report.depth(),
        report.seconds(),
        escape(&report.properties_checked().join(", "))
    );
    if let Some(why) = &j.mismatch {
        let _ = writeln!(body, "<p class=\"bad\">{}</p>", escape(&why.to_string()));
    }
    if let Some(cx) = report.counterexample() {
        let _ = writeln!(
            body,
            "<h2>The counterexample</h2>\n<div class=\"diagram\">{}</div>\n<h2>As the table prints it</h2>\n<pre>{}</pre>",
            sequence::svg(cx, &trace::judged_title(j)),
            escape(&render::swimlane(cx, ""))
        );
    }
    let (model_text, configs_text) = docs::split_description(config.entry.doc);
    let _ = writeln!(
        body,
        "<h2>What {} checks</h2>\n{}",
        escape(config.model),
        markdown(model_text)
    );
    if let Some(text) = configs_text {
        body.push_str(&markdown(text));
    }
    page(&format!("{} · loadbearing", config.name), &body, "")
}

#[cfg(test)]
mod tests {
    use super::{operation_label, safe, vertical_headers};

    #[test]
    fn names_become_safe_file_names() {
        assert_eq!(safe("kafka-flow-835"), "kafka-flow-835");
        assert_eq!(safe("a/b c"), "a_b_c");
    }

    #[test]
    fn a_matrix_keeps_its_first_headers_and_sets_the_rest_upright() {
        let html = "<table><thead><tr><th>config</th><th>guard</th><th>INV_A</th><th>RefB</th></tr></thead><tbody><tr><td>x</td></tr></tbody></table>";
        let out = vertical_headers(html, 2);
        assert!(
            out.contains("<tr><th>config</th><th>guard</th><th class=\"vertical\">INV_A</th><th class=\"vertical\">RefB</th>"),
            "{out}"
        );
        assert!(
            out.contains("<thead>") && out.contains("<td>x</td>"),
            "{out}"
        );
    }

    #[test]
    fn an_operation_is_named_by_its_action_and_fields_without_the_envelope() {
        let line = r#"{"v":2,"vocabulary":"first_write","call":3,"ret":null,"action":"Persist","writer":"w4","offset":4,"value":"w4@4"}"#;
        assert_eq!(
            operation_label(line),
            "Persist offset=4 value=w4@4 writer=w4"
        );
        assert_eq!(operation_label("not json"), "not json");
    }
}

#[cfg(all(test, feature = "targets"))]
mod timeline_tests {
    use loadbearing_conform::{targets, Backend, Settings};

    /// The last-write-wins store's racing writers: a history with no order the model allows,
    /// drawn with its longest allowed order numbered (green) and the refused operation (red).
    #[test]
    fn a_failed_history_is_drawn_as_a_timeline() {
        let settings = Settings {
            backend: Backend::SQLITE,
            traces: 20,
            writers: 8,
            seed: 3,
            save: None,
        };
        let result = loadbearing_conform::run(&targets::STORE_LWW, &settings).unwrap();
        let failed = result
            .histories
            .first()
            .expect("the mutant's histories fail");
        let svg = super::history_timeline(failed);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"), "{svg}");
        assert_eq!(
            svg.matches("<rect").count(),
            failed.operations.len(),
            "{svg}"
        );
        assert!(
            svg.contains("#c62828") && svg.contains("refused: "),
            "{svg}"
        );
        assert!(svg.contains(">1. "), "the allowed order is numbered: {svg}");
    }
}
