//! The serializability oracle: does some serial order of the committed transactions reproduce
//! every value each of them read and the final committed state?

use super::workload::{eval, Key, Number, Stmt, Target, Value, Workload};

/// What one statement of a serial run saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Not a read.
    Nothing,
    /// A read of a key: its value (`None`: absent).
    Value(Option<Value>),
    /// A predicate read: each matching row, by key.
    Rows(Vec<(Key, Value)>),
    /// An update or delete: each row it changed, by key, with its new value (`None`: deleted).
    Changed(Vec<(Key, Option<Value>)>),
}

/// What one serial run of the model's workload produced: each transaction's reads (indexed by
/// statement) and the state, in the model's values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SerialRun {
    pub reads: Vec<Vec<Option<i8>>>,
    pub state: Vec<i8>,
}

/// What one serial run of any workload produced: what each statement saw, and each key's
/// final value (`None`: absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowsRun {
    pub seen: Vec<Vec<Seen>>,
    pub state: Vec<Option<Value>>,
    /// The transactions a store would have refused (a duplicate insert, a value from no row).
    pub failed: Vec<bool>,
}

/// Runs `order` one transaction at a time from the initial state: the model's workloads, whose
/// keys all hold values and which read and write keys only. The model's `Serializable`
/// property runs this on every state, so it stays a plain loop over values ([`run_rows`] runs
/// every statement, at the cost of rows and refusals the model never has).
pub fn run(workload: &Workload, order: &[usize]) -> SerialRun {
    let mut state: Vec<i8> = workload
        .initial
        .iter()
        .map(|v| i8::of(v.expect("the model's keys are never absent")))
        .collect();
    let mut reads = vec![Vec::new(); workload.programs.len()];
    for &t in order {
        let program = &workload.programs[t];
        let mut seen: Vec<Option<i8>> = vec![None; program.len()];
        for (i, stmt) in program.iter().enumerate() {
            match stmt {
                Stmt::Read(k) => seen[i] = Some(state[*k]),
                Stmt::Write {
                    key,
                    value,
                    only_if,
                } => {
                    let last = |k: usize| last_read(program, &seen, i, k);
                    if only_if.is_none_or(|(k, v)| Value::from(last(k)) == v) {
                        state[*key] = eval(value, &last);
                    }
                }
                Stmt::Select(_) | Stmt::Insert { .. } | Stmt::Update { .. } | Stmt::Delete(_) => {
                    unreachable!("the model's workloads read and write keys only")
                }
            }
        }
        reads[t] = seen;
    }
    SerialRun { reads, state }
}

/// Runs `order` one transaction at a time from the initial state, predicate reads and inserts
/// too. An insert of a present key fails its transaction, as a store refuses it, and so does a
/// write whose value comes from an absent row: a run where that happens has
/// `state`/`seen` as far as it got, and such a transaction cannot have committed.
pub fn run_rows(workload: &Workload, order: &[usize]) -> RowsRun {
    let mut state = workload.initial.clone();
    let mut all = vec![Vec::new(); workload.programs.len()];
    let mut refused = vec![false; workload.programs.len()];
    for &t in order {
        let program = &workload.programs[t];
        let before = state.clone();
        let mut seen: Vec<Seen> = vec![Seen::Nothing; program.len()];
        let mut failed = false;
        for (i, stmt) in program.iter().enumerate() {
            match stmt {
                Stmt::Read(k) => seen[i] = Seen::Value(state[*k]),
                Stmt::Select(p) => {
                    seen[i] = Seen::Rows(
                        state
                            .iter()
                            .enumerate()
                            .filter_map(|(k, v)| v.filter(|v| p.matches(Some(*v))).map(|v| (k, v)))
                            .collect(),
                    )
                }
                Stmt::Update { target, set } => {
                    let rows = targeted(&state, *target);
                    for &k in &rows {
                        state[k] = state[k].map(|v| set.apply(v));
                    }
                    seen[i] = Seen::Changed(rows.into_iter().map(|k| (k, state[k])).collect());
                }
                Stmt::Delete(target) => {
                    let rows = targeted(&state, *target);
                    for &k in &rows {
                        state[k] = None;
                    }
                    seen[i] = Seen::Changed(rows.into_iter().map(|k| (k, None)).collect());
                }
                Stmt::Insert { key, value } => {
                    if state[*key].is_some() {
                        failed = true;
                        break;
                    }
                    state[*key] = Some(*value);
                }
                Stmt::Write {
                    key,
                    value,
                    only_if,
                } => {
                    let Some(reads) = known_reads(program, &seen, i) else {
                        failed = true;
                        break;
                    };
                    let last = |k: usize| last_read(program, &reads, i, k);
                    if only_if.is_none_or(|(k, v)| last(k) == v) {
                        state[*key] = Some(eval(value, &last));
                    }
                }
            }
        }
        if failed {
            state = before;
            seen.iter_mut().for_each(|s| *s = Seen::Nothing);
        }
        all[t] = seen;
        refused[t] = failed;
    }
    RowsRun {
        seen: all,
        state,
        failed: refused,
    }
}

/// The rows an update or delete changes in `state`: its key if present, or every present row
/// its predicate matches, in key order.
fn targeted(state: &[Option<Value>], target: Target) -> Vec<Key> {
    (0..state.len())
        .filter(|&k| {
            let present = state[k].is_some();
            match target {
                Target::Key(key) => present && k == key,
                Target::Where(p) => p.matches(state[k]),
            }
        })
        .collect()
}

/// The values a transaction's reads returned before statement `before`, as [`last_read`]
/// takes them; `None` when one it reads there found the row absent (nothing to compute from).
fn known_reads(program: &[Stmt], seen: &[Seen], before: usize) -> Option<Vec<Option<Value>>> {
    (0..before)
        .map(|i| match (&program[i], &seen[i]) {
            (Stmt::Read(_), Seen::Value(None)) => None,
            (_, Seen::Value(v)) => Some(*v),
            _ => Some(None),
        })
        .collect()
}

/// The value the transaction read for `key` most recently before statement `before`.
pub fn last_read<N: Copy>(program: &[Stmt], seen: &[Option<N>], before: usize, key: usize) -> N {
    (0..before)
        .rev()
        .find_map(|i| match program[i] {
            Stmt::Read(k) if k == key => seen[i],
            _ => None,
        })
        .expect("workloads read a key before they use its value")
}

/// Every ordering of `items`, in lexicographic order.
pub fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for (i, &first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, first);
            all.push(tail);
        }
    }
    all
}

/// True iff some serial order of `committed` reproduces their reads and `final_state`.
pub fn serializable<R: AsRef<[Option<i8>]>>(
    workload: &Workload,
    committed: &[usize],
    reads_of: &dyn Fn(usize) -> R,
    final_state: &[i8],
) -> bool {
    permutations(committed).iter().any(|order| {
        let run = run(workload, order);
        run.state == final_state
            && committed
                .iter()
                .all(|&t| run.reads[t].as_slice() == reads_of(t).as_ref())
    })
}

/// True iff some serial order of `committed` reproduces what each statement of theirs saw
/// (every statement: `Seen::Nothing` where it read nothing) and `final_state`, predicate reads
/// and absent rows included.
pub fn serializable_rows(
    workload: &Workload,
    committed: &[usize],
    seen_of: &dyn Fn(usize) -> Vec<Seen>,
    final_state: &[Option<Value>],
) -> bool {
    permutations(committed).iter().any(|order| {
        let run = run_rows(workload, order);
        run.state == final_state
            && committed
                .iter()
                .all(|&t| !run.failed[t] && run.seen[t] == seen_of(t))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::named;

    #[test]
    fn write_skew_serial_orders_leave_one_doctor_on_call() {
        let w = named("write_skew").unwrap();
        assert_eq!(run(&w, &[0, 1]).state, vec![0, 1]);
        assert_eq!(run(&w, &[1, 0]).state, vec![1, 0]);
        // Both read the other on call (1) and both went off call.
        let both_saw_one = |_t: usize| vec![Some(1), None];
        assert!(!serializable(&w, &[0, 1], &both_saw_one, &[0, 0]));
        assert!(serializable(&w, &[0], &both_saw_one, &[0, 1]));
    }

    #[test]
    fn the_read_only_anomaly_has_no_serial_order() {
        let w = named("read_only").unwrap();
        // T3 saw the deposit but not the withdrawal; the withdrawal did not see the deposit.
        let reads = |t: usize| match t {
            0 => vec![Some(0), None],
            1 => vec![Some(0), Some(0), None],
            _ => vec![Some(0), Some(20)],
        };
        assert!(!serializable(&w, &[0, 1, 2], &reads, &[-11, 20]));
        assert!(serializable(&w, &[0, 1], &reads, &[-11, 20]));
    }

    /// Predicate reads see the serial state's matching rows; an insert of a present key fails
    /// its transaction, which then cannot have committed.
    #[test]
    fn predicate_reads_and_inserts_run_serially() {
        use crate::workload::{Cmp, Ending, Pred};
        let mod3 = Pred::Mod {
            modulus: 3,
            remainder: 0,
        };
        let w = Workload {
            name: "pmp".into(),
            keys: vec!["x".into(), "z".into()],
            pages: vec![0, 1],
            initial: vec![Some(10), None],
            programs: vec![
                vec![Stmt::Select(Pred::Compare(Cmp::Eq, 30)), Stmt::Select(mod3)],
                vec![Stmt::Insert { key: 1, value: 30 }],
                vec![Stmt::Insert { key: 1, value: 33 }],
            ],
            endings: vec![Ending::Commit; 3],
        };
        let after = run_rows(&w, &[1, 0]);
        assert_eq!(
            after.seen[0],
            [Seen::Rows(vec![(1, 30)]), Seen::Rows(vec![(1, 30)])]
        );
        assert_eq!(after.state, [Some(10), Some(30)]);
        // Missing the insert, then seeing it: no serial order.
        let pmp = |t: usize| match t {
            0 => vec![Seen::Rows(vec![]), Seen::Rows(vec![(1, 30)])],
            _ => vec![Seen::Nothing],
        };
        assert!(!serializable_rows(&w, &[0, 1], &pmp, &[Some(10), Some(30)]));
        let before = |t: usize| match t {
            0 => vec![Seen::Rows(vec![]), Seen::Rows(vec![])],
            _ => vec![Seen::Nothing],
        };
        assert!(serializable_rows(
            &w,
            &[0, 1],
            &before,
            &[Some(10), Some(30)]
        ));
        // Two inserts of z: the second fails, so both cannot have committed.
        assert_eq!(run_rows(&w, &[1, 2]).state, [Some(10), Some(30)]);
        let nothing = |_: usize| vec![Seen::Nothing];
        assert!(!serializable_rows(
            &w,
            &[1, 2],
            &nothing,
            &[Some(10), Some(33)]
        ));
        assert!(!serializable_rows(
            &w,
            &[1, 2],
            &nothing,
            &[Some(10), Some(30)]
        ));
    }

    /// An update changes the rows present that its target includes, a delete removes them;
    /// each says which rows it changed and to what.
    #[test]
    fn updates_and_deletes_run_serially() {
        use crate::workload::{Cmp, Ending, Pred, Set, Target};
        let w = Workload {
            name: "pmp_write".into(),
            keys: vec!["x".into(), "y".into(), "z".into()],
            pages: vec![0, 1, 2],
            initial: vec![Some(10), Some(20), None],
            programs: vec![
                vec![Stmt::Update {
                    target: Target::Where(Pred::All),
                    set: Set::Add(10),
                }],
                vec![
                    Stmt::Delete(Target::Where(Pred::Compare(Cmp::Eq, 20))),
                    Stmt::Select(Pred::Compare(Cmp::Eq, 20)),
                    Stmt::Update {
                        target: Target::Key(2),
                        set: Set::To(1),
                    },
                ],
            ],
            endings: vec![Ending::Commit; 2],
        };
        let run = run_rows(&w, &[0, 1]);
        assert_eq!(
            run.seen[0],
            [Seen::Changed(vec![(0, Some(20)), (1, Some(30))])]
        );
        // T1's x is 20 by then: deleted; the absent z is not updated.
        assert_eq!(
            run.seen[1],
            [
                Seen::Changed(vec![(0, None)]),
                Seen::Rows(vec![]),
                Seen::Changed(vec![])
            ]
        );
        assert_eq!(run.state, [None, Some(30), None]);
        let other = run_rows(&w, &[1, 0]);
        assert_eq!(other.state, [Some(20), None, None]);
    }

    #[test]
    fn permutations_are_complete_and_ordered() {
        assert_eq!(permutations(&[0, 1, 2]).len(), 6);
        assert_eq!(permutations(&[0, 1])[0], vec![0, 1]);
    }
}
