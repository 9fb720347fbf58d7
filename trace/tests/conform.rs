//! Trace validation on a tiny model: partial observations, stutters, silent steps, and the
//! divergence report.

use loadbearing_refinement::Model;
use loadbearing_refinement::{Spec, Variables};
use loadbearing_trace::{
    parse_ndjson, to_ndjson, validate, validate_path, Conform, Limits, LineError, TraceEvent,
    Validated,
};
use serde::{Deserialize, Serialize};

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
            ("a", s.0[0].into()),
            ("b", s.0[1].into()),
            ("ticked", s.1.into()),
        ]
    }
}

/// What the counters' implementation reports: an increment, or a look at the counters (a
/// stutter); each may carry what it saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
enum Event {
    Inc {
        counter: u8,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        a: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        b: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ticked: Option<bool>,
    },
    Peek {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        a: Option<u64>,
    },
}

impl TraceEvent for Event {
    const VOCABULARY: &'static str = "counters";
    fn action(&self) -> &str {
        match self {
            Event::Inc { .. } => "Inc",
            Event::Peek { .. } => "Peek",
        }
    }
}

/// Why an event contradicts a step of `Counters`.
#[derive(Debug, thiserror::Error)]
enum Contradiction {
    #[error("{name} is {trace} in the trace, {model} in the model")]
    Counter {
        name: &'static str,
        trace: u64,
        model: u8,
    },
    #[error("the trace has ticked, the model has not")]
    Ticked,
}

impl Conform for Counters {
    type Event = Event;
    type Contradiction = Contradiction;

    fn reports(&self, action: &Action, event: &Event) -> bool {
        match (action, event) {
            (Action::Inc(i), Event::Inc { counter, .. }) => counter == i,
            (Action::Inc(_), Event::Peek { .. }) | (Action::Tick, _) => false,
        }
    }
    fn observe(
        &self,
        _before: &Self::State,
        after: &Self::State,
        event: &Event,
    ) -> Result<(), Contradiction> {
        let (a, b, ticked) = match event {
            Event::Inc { a, b, ticked, .. } => (*a, *b, *ticked),
            Event::Peek { a } => (*a, None, None),
        };
        for (name, i, got) in [("a", 0, a), ("b", 1, b)] {
            if let Some(v) = got {
                if v != after.0[i] as u64 {
                    return Err(Contradiction::Counter {
                        name,
                        trace: v,
                        model: after.0[i],
                    });
                }
            }
        }
        if ticked == Some(true) && !after.1 {
            return Err(Contradiction::Ticked);
        }
        Ok(())
    }
    fn is_stutter(&self, event: &Event) -> bool {
        matches!(event, Event::Peek { .. })
    }
    fn is_silent(&self, action: &Action) -> bool {
        *action == Action::Tick
    }
}

fn inc(counter: u8) -> Event {
    Event::Inc {
        counter,
        a: None,
        b: None,
        ticked: None,
    }
}

/// The increment with counter `name` seen at `value` afterwards.
fn saw(event: Event, name: &str, value: u64) -> Event {
    let Event::Inc { counter, a, b, .. } = event else {
        panic!("only increments are seen here");
    };
    let (a, b) = match name {
        "a" => (Some(value), b),
        "b" => (a, Some(value)),
        _ => panic!("no counter {name}"),
    };
    Event::Inc {
        counter,
        a,
        b,
        ticked: None,
    }
}

#[test]
fn a_fitting_trace_has_a_witness_and_missing_variables_are_searched() {
    // The first event does not say which initial state; the second pins it.
    let events = vec![inc(0), saw(inc(0), "a", 7), saw(inc(1), "b", 1)];
    let verdict = validate(&Counters, &events, Limits::default());
    assert!(verdict.conforming, "{:?}", verdict.divergence);
    assert_eq!(verdict.witness.unwrap(), vec!["Inc(0)", "Inc(0)", "Inc(1)"]);
    // Both initial states fit the first event, each with and without the silent tick.
    assert_eq!(verdict.max_candidates, 4);
}

#[test]
fn stutter_events_and_silent_steps_are_accepted() {
    let events = vec![
        Event::Peek { a: Some(0) },
        Event::Inc {
            counter: 1,
            a: None,
            b: None,
            ticked: Some(true),
        },
    ];
    let verdict = validate(&Counters, &events, Limits::default());
    assert!(verdict.conforming, "{:?}", verdict.divergence);
    assert_eq!(verdict.witness.unwrap(), vec!["Tick (silent)", "Inc(1)"]);
    // A silent step may come before the first event too: no initial state has ticked.
    let ticked_first = vec![Event::Inc {
        counter: 1,
        a: None,
        b: None,
        ticked: Some(true),
    }];
    let verdict = validate(&Counters, &ticked_first, Limits::default());
    assert_eq!(verdict.witness.unwrap(), vec!["Tick (silent)", "Inc(1)"]);
}

#[test]
fn a_fitting_trace_follows_a_typed_model_path_from_the_initial_state_it_pins() {
    // The second event pins the initial state with a = 5; the silent tick comes first.
    let events = vec![
        inc(0),
        saw(inc(0), "a", 7),
        Event::Inc {
            counter: 1,
            a: None,
            b: None,
            ticked: Some(true),
        },
    ];
    let Validated { verdict, path } = validate_path(&Counters, &events, Limits::default());
    assert!(verdict.conforming, "{:?}", verdict.divergence);
    let path = path.expect("a fitting trace has a typed witness");
    assert_eq!(*path.init(), ([5, 0], false));
    assert_eq!(*path.last_state(), ([7, 1], true));
    let actions: Vec<Action> = path.actions().copied().collect();
    let logged: Vec<Action> = actions
        .iter()
        .copied()
        .filter(|a| *a != Action::Tick)
        .collect();
    assert_eq!(logged, [Action::Inc(0), Action::Inc(0), Action::Inc(1)]);
    // The witness is the same path as people read it.
    let shown: Vec<String> = actions
        .iter()
        .map(|a| match a {
            Action::Tick => format!("{} (silent)", Counters.format_action(a)),
            _ => Counters.format_action(a),
        })
        .collect();
    assert_eq!(verdict.witness.unwrap(), shown);
    let diverging = validate_path(&Counters, &[saw(inc(0), "a", 3)], Limits::default());
    assert!(
        diverging.path.is_none(),
        "a trace that does not fit has no path"
    );
}

#[test]
fn a_divergence_names_the_prefix_the_event_and_why_each_action_fails() {
    let events = vec![saw(inc(0), "a", 1), saw(inc(0), "a", 3)];
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
    let events = vec![saw(inc(0), "a", 1), Event::Peek { a: None }];
    let text = to_ndjson(&events);
    assert_eq!(
        text.lines().next().unwrap(),
        r#"{"v":2,"vocabulary":"counters","action":"Inc","counter":0,"a":1}"#
    );
    assert_eq!(parse_ndjson::<Event>(&text).unwrap(), events);
    let bad = format!("{}\n\n{{\"v\":2,\"action\":", events[0].to_line());
    let err = parse_ndjson::<Event>(&bad).unwrap_err();
    assert_eq!(err.line, 3);
    assert!(matches!(err.error, LineError::NotJson(_)), "{err}");
    let line = |rest: &str| format!("{{\"v\":2,\"vocabulary\":\"counters\",{rest}}}");
    let err = parse_ndjson::<Event>(r#"{"vocabulary":"counters","action":"Peek"}"#).unwrap_err();
    assert_eq!(err.error, LineError::Version { found: None }, "{err}");
    let err =
        parse_ndjson::<Event>(r#"{"v":1,"vocabulary":"counters","action":"Peek"}"#).unwrap_err();
    assert_eq!(err.error, LineError::Version { found: Some(1) }, "{err}");
    assert!(err.to_string().contains("schema version 1"), "{err}");
    let err =
        parse_ndjson::<Event>(r#"{"v":2,"vocabulary":"clocks","action":"Peek"}"#).unwrap_err();
    assert!(
        matches!(err.error, LineError::Vocabulary { found: Some(ref v), .. } if v == "clocks"),
        "{err}"
    );
    let err = parse_ndjson::<Event>(&line(r#""action":"Dec","counter":0"#)).unwrap_err();
    assert!(err.to_string().contains("unknown variant `Dec`"), "{err}");
    let err = parse_ndjson::<Event>(&line(r#""action":"Inc""#)).unwrap_err();
    assert!(err.to_string().contains("missing field `counter`"), "{err}");
    let err = parse_ndjson::<Event>(&line(r#""action":"Peek","colour":1"#)).unwrap_err();
    assert!(err.to_string().contains("unknown field"), "{err}");
    assert!(parse_ndjson::<Event>("").unwrap().is_empty());
}
