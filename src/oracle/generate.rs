//! Histories from any model: a random walk of its actions, each rendered as the event that
//! reports it, given times around the instant it took effect (so the walk's order explains
//! them: linearizable by construction); and one wrong answer planted in a history by changing
//! one observed field of one event.

use loadbearing_trace::{Conform, Key, Timed, TraceEvent};
use serde_json::{Map, Value};

/// Renders a model step as its event: `None` for a step no event reports (a silent one).
pub type Render<'a, M> = &'a dyn Fn(
    &M,
    &<M as loadbearing_refinement::Model>::State,
    &<M as loadbearing_refinement::Model>::Action,
    &<M as loadbearing_refinement::Model>::State,
) -> Option<<M as Conform>::Event>;

/// A step of a walk: the action, the state after it, and its event (none: a silent step).
type Step<M> = (
    <M as loadbearing_refinement::Model>::Action,
    <M as loadbearing_refinement::Model>::State,
    Option<<M as Conform>::Event>,
);

/// A walk of up to `steps` steps from a random initial state, rendered: each step's event at an
/// instant of its own, called up to two ticks before it and returning up to two ticks after.
/// With `keys`, two walks on two keys, interleaved in time.
pub fn walk<M: Conform>(
    model: &M,
    rng: &mut fastrand::Rng,
    steps: usize,
    render: Render<M>,
    keys: bool,
) -> Vec<Timed<M::Event>> {
    let names: Vec<Option<Key>> = if keys && rng.bool() {
        vec![Some("a".into()), Some(Key::Number(2))]
    } else {
        vec![None]
    };
    let mut ops = Vec::new();
    for key in names {
        let inits = model.init_states();
        let Some(mut state) = inits.get(rng.usize(0..inits.len().max(1))).cloned() else {
            continue;
        };
        let mut t = rng.u64(0..4);
        let mut actions = Vec::new();
        for _ in 0..steps {
            actions.clear();
            model.actions(&state, &mut actions);
            // A step no event reports, and that the model does not take silently, cannot be in
            // a trace.
            let mut choices: Vec<Step<M>> = actions
                .drain(..)
                .filter_map(|a| {
                    let next = model.next_state(&state, a.clone())?;
                    let event = render(model, &state, &a, &next);
                    (event.is_some() || model.is_silent(&a)).then_some((a, next, event))
                })
                .collect();
            if choices.is_empty() {
                break;
            }
            let (action, next, event) = choices.swap_remove(rng.usize(0..choices.len()));
            state = next;
            // A silent step is logged at times, and at times not.
            let event = event.filter(|_| !model.is_silent(&action) || rng.bool());
            if let Some(event) = event {
                t += 1 + rng.u64(0..3);
                let call = t.saturating_sub(rng.u64(0..3));
                let ret = t + rng.u64(0..3);
                ops.push(Timed {
                    call,
                    ret: event.has_outcome().then_some(ret),
                    key: key.clone(),
                    event,
                    line: 0,
                });
            }
        }
    }
    ops.sort_by_key(|op| op.call);
    for (i, op) in ops.iter_mut().enumerate() {
        op.line = i + 1;
    }
    ops
}

/// One wrong answer: one observed field of one event (a number moved by one, a flag flipped,
/// in the event's own fields or inside them) changed, when the event still reads as one; or one
/// event dropped. The history may still be linearizable: the oracle decides.
pub fn perturb<E: TraceEvent>(rng: &mut fastrand::Rng, history: &mut Vec<Timed<E>>) {
    if history.is_empty() {
        return;
    }
    let i = rng.usize(0..history.len());
    if rng.u8(0..5) == 0 {
        history.remove(i);
        return;
    }
    for _ in 0..8 {
        if let Some(changed) = changed_field(rng, &history[i].event) {
            history[i].event = changed;
            return;
        }
    }
}

fn changed_field<E: TraceEvent>(rng: &mut fastrand::Rng, event: &E) -> Option<E> {
    let mut fields: Map<String, Value> = serde_json::from_str(&event.to_line()).ok()?;
    let mut leaves = Vec::new();
    for (name, value) in &fields {
        if !matches!(name.as_str(), "v" | "vocabulary" | "action") {
            paths(value, vec![name.clone()], &mut leaves);
        }
    }
    let path = leaves.get(rng.usize(0..leaves.len().max(1)))?.clone();
    let mut at = fields.get_mut(&path[0])?;
    for step in &path[1..] {
        at = match at {
            Value::Object(map) => map.get_mut(step)?,
            Value::Array(items) => items.get_mut(step.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    *at = match at {
        Value::Bool(b) => Value::Bool(!*b),
        Value::Number(n) => {
            let n = n.as_u64()?;
            Value::from(if n > 0 && rng.bool() { n - 1 } else { n + 1 })
        }
        _ => return None,
    };
    E::from_fields(fields).ok()
}

/// The paths to every number and flag inside `value`.
fn paths(value: &Value, at: Vec<String>, out: &mut Vec<Vec<String>>) {
    match value {
        Value::Bool(_) | Value::Number(_) => out.push(at),
        Value::Object(map) => {
            for (name, inner) in map {
                let mut next = at.clone();
                next.push(name.clone());
                paths(inner, next, out);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                let mut next = at.clone();
                next.push(i.to_string());
                paths(inner, next, out);
            }
        }
        _ => {}
    }
}
