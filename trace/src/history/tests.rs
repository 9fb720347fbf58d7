use super::*;

/// A register per key: writes set it, reads must see it; a write of unknown outcome may
/// land or not.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RegOp {
    Write { key: u8, value: u8 },
    Read { key: u8, value: u8 },
}

struct Register;

impl Sequential for Register {
    type Op = RegOp;
    type State = u8;
    type Key = u8;
    type Why = String;

    fn key(&self, op: &RegOp) -> u8 {
        match op {
            RegOp::Write { key, .. } | RegOp::Read { key, .. } => *key,
        }
    }

    fn init(&self, _key: &u8, _ops: &[&RegOp]) -> Vec<u8> {
        vec![0]
    }

    fn step(&self, state: &u8, op: &RegOp, after: &mut Vec<u8>) -> Result<(), String> {
        match op {
            RegOp::Write { value, .. } => {
                after.push(*value);
                Ok(())
            }
            RegOp::Read { value, .. } if value == state => {
                after.push(*state);
                Ok(())
            }
            RegOp::Read { value, .. } => Err(format!("read {value}, the register holds {state}")),
        }
    }

    fn step_unknown(&self, _state: &u8, op: &RegOp, after: &mut Vec<u8>) {
        if let RegOp::Write { value, .. } = op {
            after.push(*value);
        }
    }

    fn describe(&self, op: &RegOp) -> String {
        format!("{op:?}")
    }
}

/// A register that keeps the largest value written: a write of unknown outcome may be
/// taken any number of times, and one at or below the register never changes it again.
struct MaxRegister;

impl Sequential for MaxRegister {
    type Op = RegOp;
    type State = u8;
    type Key = u8;
    type Why = String;

    fn key(&self, op: &RegOp) -> u8 {
        Register.key(op)
    }

    fn init(&self, _key: &u8, _ops: &[&RegOp]) -> Vec<u8> {
        vec![0]
    }

    fn step(&self, state: &u8, op: &RegOp, after: &mut Vec<u8>) -> Result<(), String> {
        match op {
            RegOp::Write { value, .. } => {
                after.push(*value.max(state));
                Ok(())
            }
            read => Register.step(state, read, after),
        }
    }

    fn step_unknown(&self, state: &u8, op: &RegOp, after: &mut Vec<u8>) {
        if let RegOp::Write { value, .. } = op {
            after.push(*value.max(state));
        }
    }

    fn repeatable(&self, op: &RegOp) -> bool {
        matches!(op, RegOp::Write { .. })
    }

    fn settled(&self, state: &u8, op: &RegOp) -> bool {
        matches!(op, RegOp::Write { value, .. } if value <= state)
    }

    fn describe(&self, op: &RegOp) -> String {
        format!("{op:?}")
    }
}

fn op(call: u64, ret: Option<u64>, event: RegOp) -> Timed<RegOp> {
    Timed {
        call,
        ret,
        key: None,
        event,
        line: 0,
    }
}

fn w(value: u8) -> RegOp {
    RegOp::Write { key: 0, value }
}

fn r(value: u8) -> RegOp {
    RegOp::Read { key: 0, value }
}

fn verdict(history: &[Timed<RegOp>]) -> HistoryVerdict {
    check_history(&Register, history, Budget::default())
}

#[test]
fn overlapping_operations_may_take_effect_in_either_order() {
    // w1 and w2 overlap; a later read of 1 needs w2 before w1.
    let h = [
        op(0, Some(10), w(1)),
        op(1, Some(9), w(2)),
        op(11, Some(12), r(1)),
    ];
    assert!(verdict(&h).conforming());
}

#[test]
fn precedence_is_respected() {
    // w1 returns before w2 is called: a later read of 1 is stale.
    let h = [
        op(0, Some(1), w(1)),
        op(2, Some(3), w(2)),
        op(4, Some(5), r(1)),
    ];
    let v = verdict(&h);
    let HistoryOutcome::NotLinearizable(why) = &v.outcome else {
        panic!("{v:?}");
    };
    assert_eq!(why.placed.len(), 2, "{why:?}");
    assert_eq!(why.refused[0].op, 2);
    assert_eq!(why.refused[0].why, "read 1, the register holds 2");
    assert_eq!(why.unplaced, [2]);
}

#[test]
fn touching_intervals_overlap() {
    // A returns at 5, B is called at 5: closed intervals, so B may go first.
    let h = [op(0, Some(5), w(1)), op(5, Some(6), r(0))];
    assert!(verdict(&h).conforming());
}

#[test]
fn an_unknown_write_lands_after_its_call_or_never() {
    // Unknown write of 7 called at 4: a read at 5..6 may see it, a read before 4 may not.
    let lands = [op(4, None, w(7)), op(5, Some(6), r(7))];
    assert!(verdict(&lands).conforming());
    let never = [op(4, None, w(7)), op(5, Some(6), r(0))];
    assert!(verdict(&never).conforming());
    let before_its_call = [op(4, None, w(7)), op(1, Some(2), r(7))];
    assert!(!verdict(&before_its_call).conforming());
}

#[test]
fn keys_are_judged_apart() {
    let h = [
        op(0, Some(1), RegOp::Write { key: 1, value: 3 }),
        op(2, Some(3), RegOp::Read { key: 2, value: 0 }),
        op(4, Some(5), RegOp::Read { key: 1, value: 3 }),
    ];
    let v = verdict(&h);
    assert!(v.conforming());
    assert_eq!(v.parts, 2);
}

#[test]
fn a_budget_hit_is_unknown_never_a_verdict() {
    let h: Vec<Timed<RegOp>> = (0..40)
        .map(|i| op(0, Some(100), w(i as u8)))
        .chain([op(101, Some(102), r(200))])
        .collect();
    let v = check_history(
        &Register,
        &h,
        Budget {
            configurations: 1000,
            time: None,
            memory: None,
        },
    );
    assert!(
        matches!(
            v.outcome,
            HistoryOutcome::Unknown {
                spent: Spent::Configurations(1000),
                ..
            }
        ),
        "{v:?}"
    );
}

#[test]
fn keys_the_history_names_are_judged_apart() {
    // The model's key is one (0); the history's keys split it.
    let named = |key: &str, o: Timed<RegOp>| Timed {
        key: Some(key.into()),
        ..o
    };
    let h = [
        named("a", op(0, Some(1), w(1))),
        named("b", op(2, Some(3), r(0))),
        named("a", op(4, Some(5), r(1))),
    ];
    let v = verdict(&h);
    assert!(v.conforming(), "{v:?}");
    assert_eq!(v.parts, 2);
    let h = [
        named("a", op(0, Some(1), w(1))),
        named("a", op(2, Some(3), r(0))),
    ];
    let HistoryOutcome::NotLinearizable(why) = verdict(&h).outcome else {
        panic!("a stale read on one key");
    };
    // The history's key, then the model's own.
    assert_eq!(why.part.to_string(), "key \"a\" 0");
}

#[test]
fn a_part_the_model_cannot_start_is_no_behaviour() {
    struct NoStart;
    impl Sequential for NoStart {
        type Op = RegOp;
        type State = u8;
        type Key = u8;
        type Why = String;
        fn key(&self, op: &RegOp) -> u8 {
            Register.key(op)
        }
        fn init(&self, _key: &u8, _ops: &[&RegOp]) -> Vec<u8> {
            Vec::new()
        }
        fn step(&self, s: &u8, op: &RegOp, after: &mut Vec<u8>) -> Result<(), String> {
            Register.step(s, op, after)
        }
        fn step_unknown(&self, s: &u8, op: &RegOp, after: &mut Vec<u8>) {
            Register.step_unknown(s, op, after)
        }
        fn describe(&self, op: &RegOp) -> String {
            format!("{op:?}")
        }
    }
    let v = check_history(&NoStart, &[op(0, Some(1), w(1))], Budget::default());
    assert!(
        matches!(v.outcome, HistoryOutcome::NotLinearizable(_)),
        "{v:?}"
    );
    // With nothing known to place there is nothing to refuse.
    let v = check_history(&NoStart, &[op(0, None, w(1))], Budget::default());
    assert!(v.conforming(), "{v:?}");
}

/// Every order of a small history, tried by brute force, agrees with the search.
#[test]
fn the_search_agrees_with_brute_force_on_random_histories() {
    for max in [false, true] {
        agrees_with_brute_force(max);
    }
}

/// `max`: the register keeps the largest value, whose unknown writes are repeatable and
/// settle (the search's shortcuts for them are checked too).
fn agrees_with_brute_force(max: bool) {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut seen = [0; 2];
    for _ in 0..400 {
        let n = rng.usize(1..=6);
        let h: Vec<Timed<RegOp>> = (0..n)
            .map(|_| {
                let call = rng.u64(0..10);
                let ret = (!rng.bool() || rng.u8(0..4) > 0).then(|| call + rng.u64(0..6));
                let value = rng.u8(0..3);
                let event = if ret.is_some() && rng.bool() {
                    r(value)
                } else {
                    w(value)
                };
                op(call, ret, event)
            })
            .collect();
        let expected = brute_force(&h, max);
        let found = if max {
            check_history(&MaxRegister, &h, Budget::default())
        } else {
            verdict(&h)
        };
        assert_eq!(found.conforming(), expected, "max {max}: {h:?}");
        seen[expected as usize] += 1;
    }
    // Both verdicts were exercised, often.
    assert!(seen[0] > 50 && seen[1] > 50, "{seen:?}");
}

/// Some subset of the unknown operations and some order of it with every known operation,
/// respecting precedence and the register.
fn brute_force(h: &[Timed<RegOp>], max: bool) -> bool {
    let unknown: Vec<usize> = (0..h.len()).filter(|&i| h[i].ret.is_none()).collect();
    for mask in 0..(1u32 << unknown.len()) {
        let chosen: Vec<usize> = (0..h.len())
            .filter(|&i| {
                h[i].ret.is_some()
                    || unknown
                        .iter()
                        .position(|&u| u == i)
                        .is_some_and(|p| mask & (1 << p) != 0)
            })
            .collect();
        if permutations_fit(h, &chosen, &mut Vec::new(), 0, max) {
            return true;
        }
    }
    false
}

fn permutations_fit(
    h: &[Timed<RegOp>],
    left: &[usize],
    order: &mut Vec<usize>,
    state: u8,
    max: bool,
) -> bool {
    if left.is_empty() {
        return true;
    }
    for (p, &i) in left.iter().enumerate() {
        // i may go next only if no other remaining operation must precede it.
        if left.iter().any(|&j| j != i && h[j].precedes(&h[i])) {
            continue;
        }
        let next = match &h[i].event {
            RegOp::Write { value, .. } if max => *value.max(&state),
            RegOp::Write { value, .. } => *value,
            RegOp::Read { value, .. } if *value == state => state,
            RegOp::Read { .. } => continue,
        };
        let rest: Vec<usize> = left
            .iter()
            .enumerate()
            .filter(|(q, _)| *q != p)
            .map(|(_, &j)| j)
            .collect();
        order.push(i);
        if permutations_fit(h, &rest, order, next, max) {
            return true;
        }
        order.pop();
    }
    false
}
