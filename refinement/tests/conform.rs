//! Trace validation on a tiny model: partial observations, stutters, silent steps, and the
//! divergence report.

use loadbearing_refinement::conform::{parse_ndjson, to_ndjson, validate, Conform, Event, Limits};
use loadbearing_refinement::{Spec, Variables};
use stateright::Model;

/// Two counters; `Inc(i)` adds one to counter i; `Tick` (never logged) flips a hidden bit.
struct Counters;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Action {
    Inc(u8),
    Tick,
}

impl Model for Counters {
    type State = ([u8; 2], bool);
    type Action = Action;
    fn init_states(&self) -> Vec<Self::State> {
        vec![([0, 0], false), ([5, 0], false)]
    }
    fn actions(&self, s: &Self::State, actions: &mut Vec<Action>) {
        for i in 0..2 {
            if s.0[i] < 9 {
                actions.push(Action::Inc(i as u8));
            }
        }
        if !s.1 {
            actions.push(Action::Tick);
        }
    }
    fn next_state(&self, s: &Self::State, a: Action) -> Option<Self::State> {
        let mut n = *s;
        match a {
            Action::Inc(i) => n.0[i as usize] += 1,
            Action::Tick => n.1 = true,
        }
        Some(n)
    }
}

impl Spec for Counters {
    fn variables(&self, s: &Self::State) -> Variables {
        vec![
            ("a", s.0[0].to_string()),
            ("b", s.0[1].to_string()),
            ("ticked", s.1.to_string()),
        ]
    }
}

impl Conform for Counters {
    fn reports(&self, action: &Action, event: &Event) -> bool {
        match action {
            Action::Inc(i) => event.action == "Inc" && event.arg_u64("counter") == Some(*i as u64),
            Action::Tick => false,
        }
    }
    fn observe(
        &self,
        _before: &Self::State,
        after: &Self::State,
        event: &Event,
    ) -> Result<(), String> {
        for (name, i) in [("a", 0), ("b", 1)] {
            if let Some(v) = event.var_u64(name) {
                if v != after.0[i] as u64 {
                    return Err(format!(
                        "{name} is {v} in the trace, {} in the model",
                        after.0[i]
                    ));
                }
            }
        }
        if event.vars.get("ticked").and_then(|v| v.as_bool()) == Some(true) && !after.1 {
            return Err("the trace has ticked, the model has not".into());
        }
        Ok(())
    }
    fn is_stutter(&self, event: &Event) -> bool {
        event.action == "Peek"
    }
    fn is_silent(&self, action: &Action) -> bool {
        *action == Action::Tick
    }
}

fn inc(counter: u64) -> Event {
    Event::new(Some("p"), "Inc").arg("counter", counter)
}

#[test]
fn a_fitting_trace_has_a_witness_and_missing_variables_are_searched() {
    // The first event does not say which initial state; the second pins it.
    let events = vec![inc(0), inc(0).var("a", 7), inc(1).var("b", 1)];
    let verdict = validate(&Counters, &events, Limits::default());
    assert!(verdict.conforming, "{:?}", verdict.divergence);
    assert_eq!(verdict.witness.unwrap(), vec!["Inc(0)", "Inc(0)", "Inc(1)"]);
    // Both initial states fit the first event, each with and without the silent tick.
    assert_eq!(verdict.max_candidates, 4);
}

#[test]
fn stutter_events_and_silent_steps_are_accepted() {
    let events = vec![
        Event::new(Some("p"), "Peek").var("a", 0),
        inc(1).var("ticked", true),
    ];
    let verdict = validate(&Counters, &events, Limits::default());
    assert!(verdict.conforming, "{:?}", verdict.divergence);
    assert_eq!(verdict.witness.unwrap(), vec!["Tick (silent)", "Inc(1)"]);
    let none = Limits {
        silent_steps: 0,
        ..Limits::default()
    };
    assert!(
        !validate(&Counters, &events, none).conforming,
        "the silent step is needed"
    );
}

#[test]
fn a_divergence_names_the_prefix_the_event_and_why_each_action_fails() {
    let events = vec![inc(0).var("a", 1), inc(0).var("a", 3)];
    let verdict = validate(&Counters, &events, Limits::default());
    assert!(!verdict.conforming);
    let d = verdict.divergence.unwrap();
    assert_eq!(d.matched, 1);
    assert_eq!(d.line, 2);
    assert_eq!(d.prefix, vec!["Inc(0)"]);
    let text = d.text();
    assert!(text.contains("diverged at event 2"), "{text}");
    assert!(
        text.contains("Inc(0): a is 3 in the trace, 2 in the model"),
        "{text}"
    );
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["event"]["action"], "Inc");
}

#[test]
fn ndjson_round_trips_and_a_malformed_line_names_its_number() {
    let events = vec![inc(0).var("a", 1), Event::new(None, "Peek")];
    let text = to_ndjson(&events);
    assert_eq!(parse_ndjson(&text).unwrap(), events);
    let bad = format!("{}\n\n{{\"v\":1,\"action\":", events[0].to_line());
    let err = parse_ndjson(&bad).unwrap_err();
    assert_eq!(err.line, 3);
    let err = parse_ndjson("{\"v\":2,\"action\":\"Inc\"}").unwrap_err();
    assert!(err.message.contains("schema version 2"), "{err}");
    let err = parse_ndjson("{\"v\":1,\"action\":\"Inc\",\"colour\":1}").unwrap_err();
    assert!(err.message.contains("unknown field"), "{err}");
    assert!(parse_ndjson("").unwrap().is_empty());
}
