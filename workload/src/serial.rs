//! The serializability oracle: does some serial order of the committed transactions reproduce
//! every value each of them read and the final committed state?

use super::workload::{eval, Stmt, Workload};

/// What one serial run produced: each transaction's reads (indexed by statement) and the state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SerialRun {
    pub reads: Vec<Vec<Option<i8>>>,
    pub state: Vec<i8>,
}

/// Runs `order` one transaction at a time from the initial state.
pub fn run(workload: &Workload, order: &[usize]) -> SerialRun {
    let mut state = workload.initial.clone();
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
                    if only_if.is_none_or(|(k, v)| last(k) == v) {
                        state[*key] = eval(value, &last);
                    }
                }
            }
        }
        reads[t] = seen;
    }
    SerialRun { reads, state }
}

/// The value the transaction read for `key` most recently before statement `before`.
pub fn last_read(program: &[Stmt], seen: &[Option<i8>], before: usize, key: usize) -> i8 {
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

    #[test]
    fn permutations_are_complete_and_ordered() {
        assert_eq!(permutations(&[0, 1, 2]).len(), 6);
        assert_eq!(permutations(&[0, 1])[0], vec![0, 1]);
    }
}
