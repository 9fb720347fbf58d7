//! The cases of the issue "No wrong verdict and no run that dies", each as `conform --trace`
//! meets it: one semantics for a history and its sequence, identity by writer and offset, reads
//! that say only what they say, typed keys, writers of any name, values past a model's bound,
//! the easy histories that once took minutes, the budgets, and the linearization shown.
//! Assertions are on verdicts and on configurations explored, never on timings.

use crate::common::{conform_trace, trace_file};

const FW: &str = r#""v":2,"vocabulary":"first_write""#;

/// A first-write line from its fields (without the envelope).
fn fw(fields: &str) -> String {
    format!("{{{FW},{fields}}}")
}

/// The same lines without their times: the events as a sequence, in file order.
fn untimed(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| {
            let mut v: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(l).unwrap();
            v.remove("call");
            v.remove("ret");
            serde_json::to_string(&v).unwrap()
        })
        .collect()
}

/// The JSON object the output starts with (a progress line on stderr may follow it).
fn json(text: &str) -> serde_json::Value {
    let start = text.find('{').expect("a JSON object");
    serde_json::Deserializer::from_str(&text[start..])
        .into_iter::<serde_json::Value>()
        .next()
        .expect("a JSON value")
        .expect("JSON")
}

/// An unknown step is placed only where the model enables it: a retry needs its writer's
/// insert to have lost, and an unanswered insert after an applied UPDATE is no step of it.
#[test]
fn an_unknown_statement_takes_effect_only_where_the_model_enables_it() {
    let history = [
        fw(
            r#""call":0,"ret":1,"action":"Update1","writer":"w2","offset":5,"outcome":"row_absent""#,
        ),
        fw(r#""call":2,"ret":3,"action":"Insert","writer":"w2","offset":5,"outcome":"applied""#),
        fw(r#""call":4,"ret":5,"action":"Update1","writer":"w1","offset":7,"outcome":"applied""#),
        fw(r#""call":6,"ret":null,"action":"Insert","writer":"w1","offset":7"#),
        fw(
            r#""call":7,"ret":8,"action":"RetryUpdate","writer":"w1","offset":7,"outcome":"applied""#,
        ),
    ];
    let (code, text) = conform_trace(&trace_file("enabled", &history), "CasFirstWrite", &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("not linearizable") && text.contains("RetryUpdate"),
        "{text}"
    );
    let (code, text) = conform_trace(
        &trace_file("enabled-seq", &untimed(&history)),
        "CasFirstWrite",
        &[],
    );
    assert_eq!(code, Some(1), "as a sequence too: {text}");
}

/// An event reports a writer's step only if it names the writer's offset: a write whose
/// statements name two offsets diverges, naming the one that does not fit.
#[test]
fn an_event_reports_a_step_only_with_its_writers_offset() {
    let lines = [
        fw(r#""action":"Update1","writer":"w1","offset":5,"outcome":"row_absent""#),
        fw(r#""action":"Insert","writer":"w1","offset":9,"outcome":"applied""#),
        fw(r#""action":"Read","stored":9"#),
    ];
    let (code, text) = conform_trace(&trace_file("offset-identity", &lines), "CasFirstWrite", &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("persists offset"), "{text}");
}

/// One trace, one verdict: an insert's `guard_expired` is no answer of the atomic upsert, as
/// a sequence and as a history.
#[test]
fn a_sequence_and_its_history_get_one_verdict() {
    let lines = [
        fw(r#""action":"Persist","writer":"w1","offset":5,"outcome":"applied""#),
        fw(r#""action":"Persist","writer":"w2","offset":3,"outcome":"guard_expired""#),
    ];
    let path = trace_file("guard-expired", &lines);
    let (code, text) = conform_trace(&path, "CasFirstWriteAtomic", &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("guard_expired"), "{text}");
    let (code, text) = conform_trace(&path, "CasFirstWriteAtomic", &["--as-history"]);
    assert_eq!(code, Some(1), "{text}");
}

/// A read says what it says: `stored` alone is any row at that offset; a value is compared when
/// the read gives one.
#[test]
fn a_read_of_an_offset_alone_matches_any_row_there() {
    let write =
        fw(r#""action":"Persist","writer":"w1","offset":5,"value":"a","outcome":"applied""#);
    for (read, expected) in [
        (fw(r#""action":"Read","stored":5"#), 0),
        (fw(r#""action":"Read","stored":5,"value":"a""#), 0),
        (fw(r#""action":"Read","stored":5,"value":"b""#), 1),
        (fw(r#""action":"Read","stored":5,"tombstone":true"#), 1),
    ] {
        let (code, text) = conform_trace(
            &trace_file("bare-read", &[write.clone(), read.clone()]),
            "CasFirstWriteAtomic",
            &[],
        );
        assert_eq!(code, Some(expected), "{read}: {text}");
    }
}

/// Keys are typed as written: `17` and `"17"` are two keys, judged apart, and named so.
#[test]
fn keys_are_typed_as_written() {
    let put = |key: &str, call: u64, offset: u64| {
        fw(&format!(
            r#""call":{call},"ret":{},"key":{key},"action":"Persist","writer":"w1","offset":{offset},"outcome":"applied""#,
            call + 1
        ))
    };
    let two = [put("17", 0, 9), put("\"17\"", 2, 5)];
    let (code, text) = conform_trace(&trace_file("typed-keys", &two), "CasFirstWriteAtomic", &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("2 part(s)"), "{text}");
    let one = [put("17", 0, 9), put("17", 2, 5)];
    let (code, text) = conform_trace(&trace_file("one-key", &one), "CasFirstWriteAtomic", &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("key 17:"), "{text}");
    let named = [put("\"17\"", 0, 9), put("\"17\"", 2, 5)];
    let (_, text) = conform_trace(&trace_file("named-key", &named), "CasFirstWriteAtomic", &[]);
    assert!(text.contains("key \"17\":"), "{text}");
}

/// Writers are any names: a real store's owners, hosts or ids.
#[test]
fn writers_are_any_names() {
    let upserts = [
        fw(r#""action":"Persist","writer":"owner-7@host-b","offset":41000,"outcome":"applied""#),
        fw(
            r#""action":"Persist","writer":"7f3c","offset":40990,"outcome":"not_applied","stored":41000"#,
        ),
        fw(r#""action":"Read","stored":41000"#),
    ];
    let statements = [
        fw(r#""action":"Update1","writer":"owner-7@host-b","offset":41000,"outcome":"row_absent""#),
        fw(r#""action":"Insert","writer":"owner-7@host-b","offset":41000,"outcome":"applied""#),
        fw(
            r#""action":"Update1","writer":"7f3c","offset":40990,"outcome":"not_applied","stored":41000"#,
        ),
        fw(r#""action":"Read","stored":41000"#),
    ];
    for (model, lines) in [
        ("CasFirstWriteAtomic", &upserts[..]),
        ("CasFirstWrite", &statements[..]),
    ] {
        let (code, text) = conform_trace(&trace_file("any-writer", lines), model, &[]);
        assert_eq!(code, Some(0), "{model}: {text}");
    }
}

/// `n` unknown writes of one offset with different values, then a read of one of them (or of a
/// value none wrote).
fn same_offset(n: usize, read: &str) -> Vec<String> {
    let mut lines: Vec<String> = (0..n)
        .map(|i| {
            fw(&format!(
                r#""call":{i},"ret":null,"action":"Persist","writer":"w{}","offset":100,"value":"v{i}""#,
                i + 1
            ))
        })
        .collect();
    lines.push(fw(&format!(
        r#""call":1000,"ret":1001,"action":"Read","stored":100,"value":"{read}""#
    )));
    lines
}

fn configurations(text: &str) -> u64 {
    json(text)["configurations"]
        .as_u64()
        .expect("configurations")
}

/// The histories that once took minutes, or died: settled in a few configurations.
#[test]
fn the_easy_histories_are_settled_at_once() {
    for read in ["v0", "v7", "v31"] {
        let (code, text) = conform_trace(
            &trace_file("same-offset", &same_offset(32, read)),
            "CasFirstWriteAtomic",
            &["--format", "json"],
        );
        assert_eq!(code, Some(0), "{read}: {text}");
        assert!(
            configurations(&text) < 10_000,
            "{read}: {}",
            configurations(&text)
        );
    }
    let (code, text) = conform_trace(
        &trace_file("same-offset-none", &same_offset(32, "v99")),
        "CasFirstWriteAtomic",
        &["--format", "json"],
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(configurations(&text) < 10_000, "{}", configurations(&text));

    // 32 unknown writes of distinct offsets, last-write-wins, a read of one of them.
    let mut lww: Vec<String> = (0..32)
        .map(|i| {
            fw(&format!(
                r#""call":{i},"ret":null,"action":"Persist","writer":"w{}","offset":{}"#,
                i + 1,
                100 + i
            ))
        })
        .collect();
    lww.push(fw(r#""call":1000,"ret":1001,"action":"Read","stored":107"#));
    let (code, text) = conform_trace(
        &trace_file("lww-unknown", &lww),
        "CasFirstWriteAtomic",
        &["--set", "Guarded=false", "--format", "json"],
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(configurations(&text) < 10_000, "{}", configurations(&text));

    // 26 overlapping acknowledged writes called in descending offset order.
    let descending: Vec<String> = (0..26)
        .map(|i| {
            fw(&format!(
                r#""call":{i},"ret":{},"action":"Persist","writer":"w{}","offset":{},"outcome":"applied""#,
                1000 + i,
                i + 1,
                126 - i
            ))
        })
        .collect();
    let (code, text) = conform_trace(
        &trace_file("descending", &descending),
        "CasFirstWriteAtomic",
        &["--format", "json"],
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(configurations(&text) < 10_000, "{}", configurations(&text));
}

/// A last-write-wins history of 10,000 operations on one key, 8 clients, whose last read is
/// stale (with and without writes of unknown outcome): not linearizable, found.
fn long_last_write_wins(operations: usize, unknown_percent: u64, seed: u64) -> Vec<String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let clients = 8;
    let mut next: Vec<u64> = (0..clients).map(|_| rng.u64(0..20)).collect();
    struct Op {
        call: u64,
        effect: u64,
        ret: Option<u64>,
        read: bool,
        offset: u64,
        lands: bool,
        client: usize,
    }
    let mut ops: Vec<Op> = (0..operations - 1)
        .map(|i| {
            let client = i % clients;
            let call = next[client];
            let effect = call + rng.u64(1..40);
            let ret = effect + rng.u64(1..40);
            let unknown = rng.u64(0..100) < unknown_percent;
            next[client] = ret + if unknown { 40 } else { 0 } + rng.u64(0..20);
            Op {
                call,
                effect,
                ret: (!unknown).then_some(ret),
                read: !unknown && rng.u8(0..10) == 0,
                offset: 1000 + i as u64,
                lands: !unknown || rng.bool(),
                client,
            }
        })
        .collect();
    ops.sort_by_key(|o| o.effect);
    let mut row: Option<u64> = None;
    let mut lines: Vec<(u64, String)> = ops
        .iter()
        .map(|o| {
            let ret = o.ret.map_or("null".to_string(), |r| r.to_string());
            let line = if o.read {
                let stored = row.map_or(String::new(), |r| format!(r#","stored":{r}"#));
                fw(&format!(r#""call":{},"ret":{ret},"action":"Read"{stored}"#, o.call))
            } else {
                if o.lands {
                    row = Some(o.offset);
                }
                let outcome = if o.ret.is_some() { r#","outcome":"applied""# } else { "" };
                fw(&format!(
                    r#""call":{},"ret":{ret},"action":"Persist","writer":"c{}","offset":{}{outcome}"#,
                    o.call, o.client, o.offset
                ))
            };
            (o.call, line)
        })
        .collect();
    let end = ops
        .iter()
        .map(|o| o.ret.unwrap_or(o.call))
        .max()
        .unwrap_or(0)
        + 100;
    // Stale: the first write's offset, long overwritten.
    lines.push((
        end,
        fw(&format!(
            r#""call":{end},"ret":{},"action":"Read","stored":1000"#,
            end + 1
        )),
    ));
    lines.sort_by_key(|(call, _)| *call);
    lines.into_iter().map(|(_, l)| l).collect()
}

#[test]
fn a_long_last_write_wins_history_with_a_stale_last_read_is_found() {
    for unknown_percent in [0, 5] {
        let lines = long_last_write_wins(10_000, unknown_percent, 1);
        let (code, text) = conform_trace(
            &trace_file(&format!("lww-long-{unknown_percent}"), &lines),
            "CasFirstWriteAtomic",
            &["--set", "Guarded=false", "--format", "json"],
        );
        assert_eq!(code, Some(1), "{unknown_percent}% unknown");
        let report = json(&text);
        assert_eq!(report["outcome"], "not_linearizable");
        assert_eq!(report["due"], 9_999, "the stale read, the last operation");
    }
}

/// A search too large for its budget stops, naming the budget and the part, exit 2: never a
/// verdict, never a process the machine kills.
#[test]
fn a_search_past_its_budget_says_which_budget() {
    // 20 overlapping last-write-wins writes and a read of a value none wrote: every order of
    // every subset is a configuration.
    let mut lines: Vec<String> = (0..20)
        .map(|i| {
            fw(&format!(
                r#""call":0,"ret":100,"key":"k","action":"Persist","writer":"w{i}","offset":{i},"outcome":"applied""#
            ))
        })
        .collect();
    lines.push(fw(
        r#""call":50,"ret":60,"key":"k","action":"Read","stored":99"#,
    ));
    let path = trace_file("budget", &lines);
    for (args, budget) in [
        (vec!["--max-configurations", "1000"], "configurations"),
        (vec!["--max-memory", "1"], "memory"),
    ] {
        let mut args = args;
        args.extend(["--set", "Guarded=false"]);
        let (code, text) = conform_trace(&path, "CasFirstWriteAtomic", &args);
        assert_eq!(code, Some(2), "{budget}: {text}");
        assert!(
            text.contains(&format!("incomplete ({budget})")) && text.contains("in key \"k\""),
            "{budget}: {text}"
        );
    }
}

/// A linearizable verdict shows its order: each operation with its line, times and the row
/// after it, an unknown one marked where it took effect, those left out counted; a history of
/// one key is not called a key.
#[test]
fn a_linearizable_verdict_shows_its_linearization() {
    let lines = [
        fw(r#""call":0,"ret":10,"action":"Persist","writer":"a","offset":5,"outcome":"applied""#),
        fw(r#""call":1,"ret":null,"action":"Persist","writer":"b","offset":7"#),
        fw(r#""call":2,"ret":null,"action":"Persist","writer":"c","offset":3"#),
        fw(r#""call":11,"ret":12,"action":"Read","stored":7"#),
    ];
    let path = trace_file("linearization", &lines);
    let (code, text) = conform_trace(&path, "CasFirstWriteAtomic", &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("line     1  [0, 10]")
            && text.contains("line     2  [1, never returned: took effect here]")
            && text.contains("→ stored=Present(7)")
            && text.contains("1 operation(s) of unknown outcome never took effect"),
        "{text}"
    );
    assert!(!text.contains("key ()") && !text.contains("key:"), "{text}");
    let (_, text) = conform_trace(&path, "CasFirstWriteAtomic", &["--format", "json"]);
    let order = &json(&text)["orders"][0];
    assert_eq!(order["placed"][1]["unknown"], true, "{order}");
    assert_eq!(order["placed"][1]["line"], 2, "{order}");
    assert_eq!(order["left_out"], serde_json::json!([2]), "{order}");
}

/// A design's own model whose values are bounded by a constant: a history past the bound is an
/// error naming it and the `--set` that lifts it (the model declares its bounds), not a verdict.
mod a_bounded_register {
    use loadbearing_refinement::Model;
    use loadbearing_refinement::{Spec, Variables};
    use loadbearing_registry::trace::TraceProblem;
    use loadbearing_specs::infra::knobs::{Constants, Knob, KnobError, Nat, Params, Resolved};
    use loadbearing_specs::Configured;
    use loadbearing_trace::TraceOptions;
    use loadbearing_trace::{Beyond, Conform, Timed, Trace, TraceEvent};
    use serde::{Deserialize, Serialize};

    /// A register of values `0..=max`.
    #[derive(Clone, Debug)]
    struct Register {
        max: u8,
    }

    const MAX: Nat = Nat::new("Max", 1, 200, 4, "the largest value written");

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    struct Write(u8);

    impl Model for Register {
        type State = u8;
        type Action = Write;
        fn init_states(&self) -> Vec<u8> {
            vec![0]
        }
        fn actions(&self, _: &u8, actions: &mut Vec<Write>) {
            actions.extend((0..=self.max).map(Write));
        }
        fn next_state(&self, _: &u8, Write(v): Write) -> Option<u8> {
            Some(v)
        }
    }

    impl Spec for Register {
        fn variables(&self, s: &u8) -> Variables {
            vec![("value", s.into())]
        }
    }

    impl Params for Register {
        const KNOBS: &'static [Knob] = &[MAX.knob()];
        fn from_resolved(k: &Resolved) -> Result<Self, KnobError> {
            Ok(Register { max: k.get(MAX)? })
        }
    }

    impl Configured for Register {
        const NAME: &'static str = "BoundedRegister";
        const DOC: &'static str = "A register of values up to Max.";
        type Params = Register;
        fn build(params: Register) -> Self {
            params
        }
    }

    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(tag = "action", deny_unknown_fields)]
    enum Event {
        Write { value: u64 },
        Read { value: u64 },
    }

    impl TraceEvent for Event {
        const VOCABULARY: &'static str = "register";
        fn action(&self) -> &str {
            match self {
                Event::Write { .. } => "Write",
                Event::Read { .. } => "Read",
            }
        }
    }

    impl Conform for Register {
        type Event = Event;
        type Contradiction = String;
        fn reports(&self, Write(v): &Write, event: &Event) -> bool {
            matches!(event, Event::Write { value } if *value == *v as u64)
        }
        fn observe(&self, before: &u8, _: &u8, event: &Event) -> Result<(), String> {
            match event {
                Event::Read { value } if *value != *before as u64 => {
                    Err(format!("read {value}, the register holds {before}"))
                }
                _ => Ok(()),
            }
        }
        fn is_stutter(&self, event: &Event) -> bool {
            matches!(event, Event::Read { .. })
        }
        fn beyond(&self, events: &[Event]) -> Option<Beyond> {
            events.iter().enumerate().find_map(|(i, e)| {
                let (Event::Write { value } | Event::Read { value }) = e;
                MAX.passed_by(self.max as u64, *value, i, || format!("value {value}"))
            })
        }
    }

    fn judged(history: Vec<Timed<Event>>) -> Result<bool, TraceProblem> {
        let model = Register { max: 4 };
        let report =
            loadbearing_trace::judge(&model, Trace::History(history), &TraceOptions::default())?;
        Ok(report.decision() == loadbearing_trace::Decision::Conforms)
    }

    fn op(call: u64, event: Event) -> Timed<Event> {
        Timed {
            call,
            ret: Some(call + 1),
            key: None,
            event,
            line: call as usize / 2 + 1,
        }
    }

    #[test]
    fn a_value_past_the_bound_is_an_error_naming_it_and_its_set() {
        let within = vec![
            op(0, Event::Write { value: 3 }),
            op(2, Event::Read { value: 3 }),
        ];
        assert!(judged(within).unwrap());
        let past = vec![
            op(0, Event::Write { value: 7 }),
            op(2, Event::Read { value: 7 }),
        ];
        let err = judged(past).expect_err("7 is past Max = 4");
        let message = err.to_string();
        assert!(
            message.contains("line 1: value 7") && message.contains("--set Max=7"),
            "{message}"
        );
        // And no value of the knob holds one past its own range.
        let far = vec![op(0, Event::Write { value: 900 })];
        let message = judged(far).expect_err("past 200").to_string();
        assert!(message.contains("no value of Max holds it"), "{message}");
        // The registry's entry (what `conform --trace` runs) says the same.
        let entry = loadbearing_registry::conformance_entry::<Register>();
        let constants = (entry.resolve)(&Constants::new()).unwrap();
        let text = r#"{"v":2,"vocabulary":"register","call":0,"ret":1,"action":"Write","value":7}"#;
        let err = (entry.conform)(&constants, text, &TraceOptions::default())
            .expect_err("past the bound");
        assert!(err.to_string().contains("--set Max=7"), "{err}");
    }
}
