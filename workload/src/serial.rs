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
        match run_txn(workload, t, &state) {
            Some((seen, after)) => {
                all[t] = seen;
                state = after;
            }
            // Refused: it saw nothing, and the state is as before it.
            None => {
                all[t] = vec![Seen::Nothing; workload.programs[t].len()];
                refused[t] = true;
            }
        }
    }
    RowsRun {
        seen: all,
        state,
        failed: refused,
    }
}

/// Runs transaction `t` alone from `state`: what each statement saw and the state after it,
/// or `None` where a store would refuse it (an insert of a present row, a value computed from
/// an absent one).
fn run_txn(
    workload: &Workload,
    t: usize,
    state: &[Option<Value>],
) -> Option<(Vec<Seen>, Vec<Option<Value>>)> {
    let program = &workload.programs[t];
    let mut state = state.to_vec();
    let mut seen: Vec<Seen> = vec![Seen::Nothing; program.len()];
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
                    return None;
                }
                state[*key] = Some(*value);
            }
            Stmt::Write {
                key,
                value,
                only_if,
            } => {
                let reads = known_reads(program, &seen, i)?;
                let last = |k: usize| last_read(program, &reads, i, k);
                if only_if.is_none_or(|(k, v)| last(k) == v) {
                    state[*key] = Some(eval(value, &last));
                }
            }
        }
    }
    Some((seen, state))
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
///
/// A search for such an order, one transaction at a time: a transaction goes next only if,
/// run alone on the state so far, it sees what it saw, and a set of transactions placed that
/// leaves a state already tried is not tried again. Each (set, state) pair is tried once, so
/// the search ends for any number of transactions, where trying every order (`n!`) does not
/// for a dozen; the tests hold it to trying every order on generated workloads.
pub fn serializable_rows(
    workload: &Workload,
    committed: &[usize],
    seen_of: &dyn Fn(usize) -> Vec<Seen>,
    final_state: &[Option<Value>],
) -> bool {
    let seen: Vec<(usize, Vec<Seen>)> = committed.iter().map(|&t| (t, seen_of(t))).collect();
    let mut tried = std::collections::HashSet::new();
    placeable(
        workload,
        &seen,
        &mut vec![false; seen.len()],
        &workload.initial,
        final_state,
        &mut tried,
    )
}

/// Whether the transactions of `seen` not yet `placed` go after `state` in some order that
/// ends in `final_state`.
fn placeable(
    workload: &Workload,
    seen: &[(usize, Vec<Seen>)],
    placed: &mut Vec<bool>,
    state: &[Option<Value>],
    final_state: &[Option<Value>],
    tried: &mut std::collections::HashSet<(Vec<bool>, Vec<Option<Value>>)>,
) -> bool {
    if placed.iter().all(|&p| p) {
        return state == final_state;
    }
    for i in 0..seen.len() {
        if placed[i] {
            continue;
        }
        let (t, saw) = &seen[i];
        let Some(after) = run_txn(workload, *t, state)
            .filter(|(alone, _)| alone == saw)
            .map(|(_, after)| after)
        else {
            continue;
        };
        placed[i] = true;
        if tried.insert((placed.clone(), after.clone()))
            && placeable(workload, seen, placed, &after, final_state, tried)
        {
            return true;
        }
        placed[i] = false;
    }
    false
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

    /// The obviously right judge: every order of the committed transactions, run whole.
    fn serializable_rows_naive(
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

    /// A small generator of workloads with every kind of statement.
    struct Gen(u64);

    impl Gen {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % n
        }

        fn pred(&mut self) -> crate::workload::Pred {
            use crate::workload::{Cmp, Pred};
            match self.below(3) {
                0 => Pred::All,
                1 => Pred::Compare(Cmp::ALL[self.below(6) as usize], self.below(4) as Value),
                _ => Pred::Mod {
                    modulus: 2,
                    remainder: self.below(2) as Value,
                },
            }
        }

        fn workload(&mut self) -> Workload {
            use crate::workload::{Ending, Expr, Set, Target};
            let keys = 2 + self.below(2) as usize;
            let txns = 1 + self.below(5) as usize;
            let initial = (0..keys)
                .map(|_| (self.below(5) > 0).then(|| self.below(4) as Value))
                .collect();
            let programs = (0..txns)
                .map(|_| {
                    let mut program = Vec::new();
                    let mut read: Vec<Key> = Vec::new();
                    for _ in 0..1 + self.below(3) {
                        let k = self.below(keys as u64) as usize;
                        let target = if self.below(2) == 0 {
                            Target::Key(k)
                        } else {
                            Target::Where(self.pred())
                        };
                        program.push(match self.below(6) {
                            0 => {
                                read.push(k);
                                Stmt::Read(k)
                            }
                            1 => {
                                let value = match read.first() {
                                    Some(&r) if self.below(2) == 0 => {
                                        Expr::Add(Box::new(Expr::Read(r)), Box::new(Expr::Const(1)))
                                    }
                                    _ => Expr::Const(self.below(4) as Value),
                                };
                                Stmt::Write {
                                    key: k,
                                    value,
                                    only_if: None,
                                }
                            }
                            2 => Stmt::Select(self.pred()),
                            3 => Stmt::Insert {
                                key: k,
                                value: self.below(4) as Value,
                            },
                            4 => Stmt::Update {
                                target,
                                set: if self.below(2) == 0 {
                                    Set::Add(1)
                                } else {
                                    Set::To(self.below(4) as Value)
                                },
                            },
                            _ => Stmt::Delete(target),
                        });
                    }
                    program
                })
                .collect();
            Workload {
                name: "generated".into(),
                keys: (0..keys).map(|k| format!("k{k}")).collect(),
                pages: (0..keys).collect(),
                initial,
                programs,
                endings: vec![Ending::Commit; txns],
            }
        }
    }

    /// The search for a serial order agrees with trying every order, on generated workloads
    /// and what two serial runs of them (mixed, and one value nudged) would have shown: both
    /// serializable and not, refusals included. (Planting a bug in the search, say trying
    /// each transaction only first, fails it.)
    #[test]
    fn the_search_for_a_serial_order_agrees_with_every_order() {
        let mut g = Gen(7);
        let (mut yes, mut no) = (0, 0);
        for _ in 0..3000 {
            let w = g.workload();
            let all: Vec<usize> = (0..w.programs.len()).collect();
            let committed: Vec<usize> = all.iter().copied().filter(|_| g.below(4) > 0).collect();
            let orders = permutations(&committed);
            let a = run_rows(&w, &orders[g.below(orders.len() as u64) as usize]);
            let b = run_rows(&w, &orders[g.below(orders.len() as u64) as usize]);
            let from_b: Vec<bool> = all.iter().map(|_| g.below(3) == 0).collect();
            let mut final_state = if g.below(4) == 0 { b.state } else { a.state };
            if g.below(8) == 0 {
                let k = g.below(final_state.len() as u64) as usize;
                final_state[k] = final_state[k].map(|v| v + 1);
            }
            let seen_of = |t: usize| {
                if from_b[t] {
                    b.seen[t].clone()
                } else {
                    a.seen[t].clone()
                }
            };
            let fast = serializable_rows(&w, &committed, &seen_of, &final_state);
            let naive = serializable_rows_naive(&w, &committed, &seen_of, &final_state);
            assert_eq!(
                fast, naive,
                "{w}committed {committed:?}, final {final_state:?}"
            );
            if fast {
                yes += 1
            } else {
                no += 1
            }
        }
        // Both answers are common: the comparison means something either way.
        assert!(yes > 500 && no > 500, "{yes} serializable, {no} not");
    }

    /// A dozen transactions, each seeing the one before: one order out of 12! fits, found
    /// without trying the others.
    #[test]
    fn a_dozen_transactions_are_judged_without_trying_every_order() {
        use crate::workload::{Ending, Expr};
        let n = 12;
        let bump = vec![
            Stmt::Read(0),
            Stmt::Write {
                key: 0,
                value: Expr::Add(Box::new(Expr::Read(0)), Box::new(Expr::Const(1))),
                only_if: None,
            },
        ];
        let w = Workload {
            name: "chain".into(),
            keys: vec!["x".into()],
            pages: vec![0],
            initial: vec![Some(0)],
            programs: vec![bump; n],
            endings: vec![Ending::Commit; n],
        };
        let committed: Vec<usize> = (0..n).collect();
        // Transaction t saw n - 1 - t: they ran in reverse.
        let seen = |t: usize| vec![Seen::Value(Some((n - 1 - t) as Value)), Seen::Nothing];
        assert!(serializable_rows(
            &w,
            &committed,
            &seen,
            &[Some(n as Value)]
        ));
        // Two saw the same value: a lost update, no order.
        let lost = |t: usize| {
            vec![
                Seen::Value(Some((n - 1 - t.max(1)) as Value)),
                Seen::Nothing,
            ]
        };
        assert!(!serializable_rows(
            &w,
            &committed,
            &lost,
            &[Some(n as Value - 1)]
        ));
    }

    #[test]
    fn permutations_are_complete_and_ordered() {
        assert_eq!(permutations(&[0, 1, 2]).len(), 6);
        assert_eq!(permutations(&[0, 1])[0], vec![0, 1]);
    }
}
