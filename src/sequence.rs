//! A counterexample as a sequence diagram in SVG, drawn without Graphviz: one lifeline per
//! actor (in order of first appearance, as the swimlane's columns), each step a box on its
//! actor's line with the variables it changed beside it, the violated property named where it
//! breaks, a refinement failure's abstract state before and after, a liveness failure's loop
//! drawn back to where it starts.
//!
//! The shared-state models' steps are taken by one actor each and send nothing, so a step is a
//! box, not an arrow. Elements carry classes and `data-` attributes (`step`, `lifeline`,
//! `data-actor`, `data-step`) so a test can count them in a browser's DOM.

use std::fmt::Write as _;

use loadbearing_refinement::{Shown, ShownPath};

/// Pixels per character of the 12px monospace font (DejaVu Sans Mono's advance is 0.6 em).
const CHAR: f64 = 7.3;
const LINE: f64 = 16.0;
const GUTTER: f64 = 44.0;
const LANE_GAP: f64 = 24.0;
const TOP: f64 = 44.0;
const HEAD: f64 = 30.0;
const RED: &str = "#c0392b";
const INK: &str = "#222";
const SOFT: &str = "#666";

/// `text` with XML's five special characters escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn width_of(text: &str) -> f64 {
    text.chars().count() as f64 * CHAR
}

/// One lifeline: its actor and the x of its centre.
struct Lane {
    actor: String,
    centre: f64,
    width: f64,
}

/// The actors of the path's steps, in order of first appearance; a path of no steps has one
/// lane, `system`.
fn lanes(cx: &ShownPath) -> Vec<Lane> {
    let mut lanes: Vec<Lane> = Vec::new();
    for step in cx.steps.iter().skip(1) {
        let actor = step.actor.as_deref().unwrap_or("system");
        let action = step.action.as_deref().unwrap_or("");
        let wanted = width_of(action).max(width_of(actor)) + 20.0;
        match lanes.iter_mut().find(|l| l.actor == actor) {
            Some(lane) => lane.width = lane.width.max(wanted),
            None => lanes.push(Lane {
                actor: actor.to_string(),
                centre: 0.0,
                width: wanted.max(90.0),
            }),
        }
    }
    if lanes.is_empty() {
        lanes.push(Lane {
            actor: "system".into(),
            centre: 0.0,
            width: 90.0,
        });
    }
    let mut x = GUTTER;
    for lane in &mut lanes {
        lane.centre = x + lane.width / 2.0;
        x += lane.width + LANE_GAP;
    }
    lanes
}

/// What is written beside a step: `name=value` per changed variable (every variable for the
/// initial state).
fn beside(cx: &ShownPath, i: usize) -> Vec<String> {
    let step = &cx.steps[i];
    let vars = if i == 0 { &step.state } else { &step.changed };
    if i > 0 && vars.is_empty() {
        return vec!["(no change: a stutter)".into()];
    }
    vars.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// The notes beside step `i`, each line with its colour: what changed, and under the step the
/// property breaks on, the abstract images of a refinement failure in red; a line longer than
/// [`NOTE_CHARS`] is wrapped, so the drawing stays as wide as a page and no value is cut.
fn notes(cx: &ShownPath, i: usize, breaks_here: bool) -> Vec<(String, &'static str)> {
    let mut lines: Vec<(String, &'static str)> =
        beside(cx, i).into_iter().map(|l| (l, INK)).collect();
    if breaks_here {
        let abstract_lines = abstract_lines(cx);
        if !abstract_lines.is_empty() {
            lines.push((String::new(), INK));
            lines.extend(abstract_lines.into_iter().map(|l| (l, RED)));
        }
    }
    lines
        .into_iter()
        .flat_map(|(line, colour)| {
            wrap(&line, NOTE_CHARS)
                .into_iter()
                .map(move |l| (l, colour))
        })
        .collect()
}

/// The longest note line, in characters, before it wraps.
const NOTE_CHARS: usize = 84;
/// The longest line under the drawing (the violated property, a loop's note).
const FOOTER_CHARS: usize = 120;

/// `line` cut into lines of at most `width` characters at its spaces (a word longer than that
/// has a line of its own, whole); continuation lines are indented two more than the first.
fn wrap(line: &str, width: usize) -> Vec<String> {
    if line.chars().count() <= width {
        return vec![line.to_string()];
    }
    let indent = line.len() - line.trim_start().len();
    let continuation = " ".repeat(indent + 4);
    let mut out = Vec::new();
    let mut current = line[..indent].to_string();
    for word in line[indent..].split(' ') {
        let fresh = current.trim().is_empty();
        let fits = current.chars().count() + usize::from(!fresh) + word.chars().count() <= width;
        if !fits && !fresh {
            let full = std::mem::replace(&mut current, continuation.clone());
            out.push(full.trim_end().to_string());
        } else if !fresh {
            current.push(' ');
        }
        current.push_str(word);
    }
    out.push(current);
    out
}

/// Lines under the offending step: the abstract images a refinement failure breaks on.
fn abstract_lines(cx: &ShownPath) -> Vec<String> {
    let Some(abs) = &cx.abstract_step else {
        return Vec::new();
    };
    let vars = |side: &[(String, Shown)]| -> String {
        side.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    if abs.before.is_empty() {
        vec![
            format!("maps to no initial state of {}:", abs.model),
            format!("  abstract  {}", vars(&abs.after)),
        ]
    } else {
        vec![
            format!("maps to no step of {} and is no stutter:", abs.model),
            format!("  abstract before  {}", vars(&abs.before)),
            format!("  abstract after   {}", vars(&abs.after)),
        ]
    }
}

/// The SVG of a counterexample; `title` heads it (the config and what it violates).
pub fn svg(cx: &ShownPath, title: &str) -> String {
    let lanes = lanes(cx);
    let notes_x = lanes.last().map_or(GUTTER, |l| l.centre + l.width / 2.0) + LANE_GAP;
    let last = cx.steps.len().saturating_sub(1);
    // Where the property breaks: the last state for an invariant, the last step for a
    // refinement; a liveness failure breaks on the loop as a whole.
    let breaks_at = if cx.loop_start.is_none() {
        Some(last)
    } else {
        None
    };

    // Rows: each step's height is set by what is written beside it.
    let mut rows: Vec<(f64, f64)> = Vec::new();
    let mut y = TOP + HEAD + 16.0;
    let mut widest_note: f64 = 0.0;
    for i in 0..cx.steps.len() {
        let lines = notes(cx, i, breaks_at == Some(i));
        for (line, _) in &lines {
            widest_note = widest_note.max(width_of(line));
        }
        let height = (lines.len().max(1) as f64 * LINE + 12.0).max(34.0);
        rows.push((y, height));
        y += height + 10.0;
    }
    let loop_note = cx.loop_start.map(|start| {
        let note = cx.fairness_note.as_deref().unwrap_or("");
        if start == last {
            format!("step {start} stutters forever: {note}")
        } else {
            format!("step {last} is step {start} again: the loop repeats forever; {note}")
        }
    });
    let violated = match &cx.explanation {
        Some(why) => format!("✗ {} is violated: {why}", cx.property),
        None => format!("✗ {} is violated", cx.property),
    };
    // Under the drawing, from its left edge: the violated property, and a loop's note.
    let footer: Vec<(String, bool)> = wrap(&violated, FOOTER_CHARS)
        .into_iter()
        .map(|line| (line, true))
        .chain(
            loop_note
                .iter()
                .flat_map(|note| wrap(note, FOOTER_CHARS))
                .map(|line| (line, false)),
        )
        .collect();
    let widest_footer = footer
        .iter()
        .map(|(line, _)| width_of(line))
        .fold(0.0, f64::max);
    let bottom = y + 8.0;
    let width = (notes_x + widest_note + 24.0)
        .max(GUTTER + widest_footer + 24.0)
        .max(width_of(title) + 2.0 * GUTTER);
    let height = bottom + footer.len() as f64 * LINE + 8.0 + LINE;

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="sequence" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="DejaVu Sans Mono, monospace" font-size="12" data-steps="{}" data-lifelines="{}">"#,
        cx.len(),
        lanes.len()
    );
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    let _ = writeln!(
        out,
        r##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{RED}"/></marker></defs>"##
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{GUTTER}" y="22" font-size="14" font-weight="bold" fill="{INK}">{}</text>"#,
        escape(title)
    );

    // Lifelines with their heads.
    for lane in &lanes {
        let left = lane.centre - lane.width / 2.0;
        let _ = writeln!(
            out,
            r##"<g class="lifeline" data-actor="{actor}"><rect x="{left:.1}" y="{TOP}" width="{w:.1}" height="{HEAD}" rx="4" fill="#eef3f8" stroke="{INK}"/><text x="{c:.1}" y="{ty:.1}" text-anchor="middle" font-weight="bold" fill="{INK}">{actor}</text><line x1="{c:.1}" y1="{y1:.1}" x2="{c:.1}" y2="{bottom:.1}" stroke="{SOFT}" stroke-dasharray="4 4"/></g>"##,
            actor = escape(&lane.actor),
            w = lane.width,
            c = lane.centre,
            ty = TOP + HEAD / 2.0 + 4.0,
            y1 = TOP + HEAD,
        );
    }

    // The initial state spans every lifeline; each later step is a box on its actor's line.
    for (i, step) in cx.steps.iter().enumerate() {
        let (top, _) = rows[i];
        let bad = breaks_at == Some(i);
        let stroke = if bad { RED } else { INK };
        let ink = if bad { RED } else { INK };
        let _ = writeln!(
            out,
            r#"<text x="8" y="{:.1}" fill="{SOFT}">{i}</text>"#,
            top + 20.0
        );
        if i == 0 {
            let left = GUTTER;
            let right = notes_x - LANE_GAP;
            let _ = writeln!(
                out,
                r##"<g class="init" data-step="0"><rect x="{left:.1}" y="{top:.1}" width="{:.1}" height="30" rx="4" fill="#f4f4f4" stroke="{stroke}"/><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="{ink}">Init</text></g>"##,
                right - left,
                (left + right) / 2.0,
                top + 19.0
            );
        } else {
            let actor = step.actor.as_deref().unwrap_or("system");
            let lane = lanes
                .iter()
                .find(|l| l.actor == actor)
                .expect("every actor has a lane");
            let action = step.action.as_deref().unwrap_or("");
            let w = width_of(action) + 16.0;
            let fill = if bad { "#fdecea" } else { "#fffbe6" };
            let _ = writeln!(
                out,
                r#"<g class="step" data-step="{i}" data-actor="{a}"><rect x="{:.1}" y="{top:.1}" width="{w:.1}" height="30" rx="4" fill="{fill}" stroke="{stroke}" stroke-width="{}"/><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="{ink}">{}</text><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{SOFT}" stroke-width="0.8"/></g>"#,
                lane.centre - w / 2.0,
                if bad { 2 } else { 1 },
                lane.centre,
                top + 19.0,
                escape(action),
                lane.centre + w / 2.0,
                top + 15.0,
                notes_x - 6.0,
                top + 15.0,
                a = escape(actor),
            );
        }
        // What changed, beside the step.
        let _ = write!(out, r#"<g class="changed" data-step="{i}">"#);
        for (n, (line, colour)) in notes(cx, i, bad).iter().enumerate() {
            let _ = write!(
                out,
                r#"<text x="{notes_x:.1}" y="{:.1}" fill="{colour}" xml:space="preserve">{}</text>"#,
                top + 19.0 + n as f64 * LINE,
                escape(line)
            );
        }
        let _ = writeln!(out, "</g>");
    }

    // A liveness failure: the loop drawn back from its last step to where it starts.
    if let Some(start) = cx.loop_start {
        let (from_top, _) = rows[last];
        let (to_top, _) = rows[start];
        let x = GUTTER - 14.0;
        let _ = writeln!(
            out,
            r#"<path class="loop" d="M{:.1},{:.1} H{x:.1} V{:.1} H{:.1}" fill="none" stroke="{RED}" stroke-width="2" marker-end="url(#arrow)"/>"#,
            GUTTER,
            from_top + 15.0,
            to_top + 15.0,
            GUTTER - 2.0,
        );
    }
    for (n, (line, bold)) in footer.iter().enumerate() {
        let (class, weight) = if *bold {
            (r#" class="violated""#, r#" font-weight="bold""#)
        } else {
            ("", "")
        };
        let _ = writeln!(
            out,
            r#"<text{class} x="{GUTTER}" y="{:.1}"{weight} fill="{RED}" xml:space="preserve">{}</text>"#,
            bottom + (n + 1) as f64 * LINE,
            escape(line)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_long_note_wraps_at_spaces_and_keeps_every_word() {
        let line = "  abstract before  input=<1:k1/persist>  durable=[{present: true, offset: 2}]  hwm=[2]";
        let lines = super::wrap(line, 40);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert!(lines[1].starts_with("      "), "{lines:?}");
        let words = |t: &str| t.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(words(&lines.join(" ")), words(line));
        assert_eq!(super::wrap("short", 40), vec!["short"]);
    }
    use super::*;
    use loadbearing_refinement::shown::{ShownAbstractStep, ShownStep};

    fn step(action: Option<&str>, actor: Option<&str>, changed: &[(&str, &str)]) -> ShownStep {
        let vars: Vec<(String, Shown)> = changed
            .iter()
            .map(|(k, v)| (k.to_string(), Shown::name(v)))
            .collect();
        ShownStep {
            action: action.map(String::from),
            actor: actor.map(String::from),
            state: vars.clone(),
            changed: vars,
        }
    }

    fn path() -> ShownPath {
        ShownPath {
            property: "RefSafeSpec".into(),
            steps: vec![
                step(None, None, &[("x", "0")]),
                step(Some("Rebalance"), Some("coordinator"), &[("x", "1")]),
                step(Some("Write<1>"), Some("zombie & co"), &[("x", "2")]),
            ],
            loop_start: None,
            abstract_step: Some(ShownAbstractStep {
                model: "Store".into(),
                before: vec![("d".into(), Shown::from(1u8))],
                after: vec![("d".into(), Shown::from(0u8))],
            }),
            fairness_note: None,
            explanation: None,
        }
    }

    #[test]
    fn a_step_is_a_box_on_its_actors_lifeline() {
        let svg = svg(&path(), "demo: violates RefSafeSpec");
        assert_eq!(svg.matches(r#"class="lifeline""#).count(), 2);
        assert_eq!(svg.matches(r#"class="step""#).count(), 2);
        assert!(svg.contains(r#"data-actor="zombie &amp; co""#), "{svg}");
        assert!(svg.contains("Write&lt;1&gt;"), "{svg}");
        assert!(svg.contains("✗ RefSafeSpec is violated"));
        assert!(svg.contains("abstract before  d=1"), "{svg}");
        assert!(!svg.contains(r#"class="loop""#));
    }

    #[test]
    fn a_loop_is_drawn_back_to_where_it_starts() {
        let mut cx = path();
        cx.abstract_step = None;
        cx.loop_start = Some(1);
        cx.fairness_note = Some("weakly fair, never taken".into());
        let svg = svg(&cx, "demo");
        assert_eq!(svg.matches(r#"class="loop""#).count(), 1);
        assert!(svg.contains("step 2 is step 1 again"), "{svg}");
    }
}
