//! One interleaving of a workload's transactions pinned by name, as Hermitage writes its tests
//! (`T1.begin T2.begin T1.1 T2.1 T1.commit T2.commit`), and the values its steps are expected
//! to show (`T2.1 = 10`, `T1.2 = absent`).
//!
//! A step is `T<n>.begin`, `T<n>.<k>` (the k-th statement, from 1) or the transaction's end as
//! its program says it (`T<n>.commit`, `T<n>.abort`). A schedule names every step of every
//! transaction exactly once, each transaction's in its own order.

use std::fmt;

use super::workload::Workload;

/// Where a transaction is in its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    Begin,
    /// The statement at this index (0-based; `T1.1` is `Stmt(0)`).
    Stmt(usize),
    /// Its commit or abort.
    End,
}

/// A pinned interleaving: each step as (transaction index, where).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub steps: Vec<(usize, At)>,
}

impl Schedule {
    /// The transaction of each step, in order (the shape every interleaving is driven from).
    pub fn order(&self) -> Vec<usize> {
        self.steps.iter().map(|&(t, _)| t).collect()
    }

    /// The schedule as a person writes it (`T1.begin T1.1 T1.commit`).
    pub fn text(&self, w: &Workload) -> String {
        self.steps
            .iter()
            .map(|&(t, at)| step_name(w, t, at))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The schedule of an interleaving given as the transaction of each step.
    pub fn of_order(order: &[usize], w: &Workload) -> Schedule {
        let mut next = vec![0usize; w.programs.len()];
        let steps = order
            .iter()
            .map(|&t| {
                let i = next[t];
                next[t] += 1;
                let n = w.programs[t].len();
                let at = match i {
                    0 => At::Begin,
                    i if i <= n => At::Stmt(i - 1),
                    _ => At::End,
                };
                (t, at)
            })
            .collect();
        Schedule { steps }
    }
}

/// `T2.1`, `T1.begin`, `T1.abort`.
pub fn step_name(w: &Workload, t: usize, at: At) -> String {
    match at {
        At::Begin => format!("T{}.begin", t + 1),
        At::Stmt(i) => format!("T{}.{}", t + 1, i + 1),
        At::End => format!("T{}.{}", t + 1, w.ending(t).step()),
    }
}

/// The value a step is expected to show: what a read returned (`None`: the key was absent),
/// or what a write wrote; or the rows a predicate read returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepValue {
    pub txn: usize,
    /// 0-based statement index.
    pub stmt: usize,
    pub value: Shown,
}

/// What a statement showed, as an expectation says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shown {
    /// `11`, or `absent`.
    Value(Option<i64>),
    /// A predicate read's rows, or an update's or delete's: `{z=30, y=20}` (`{}`: no row;
    /// `{y=absent}`: deleted), by key name in key order.
    Rows(Vec<(String, Option<i64>)>),
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shown::Value(Some(v)) => write!(f, "{v}"),
            Shown::Value(None) => f.write_str("absent"),
            Shown::Rows(rows) => {
                let rows: Vec<String> = rows
                    .iter()
                    .map(|(k, v)| match v {
                        Some(v) => format!("{k}={v}"),
                        None => format!("{k}=absent"),
                    })
                    .collect();
                write!(f, "{{{}}}", rows.join(", "))
            }
        }
    }
}

impl fmt::Display for StepValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}.{} = {}", self.txn + 1, self.stmt + 1, self.value)
    }
}

/// What is wrong with a schedule or a step's expected value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("`{0}` is not a step: T<n>.begin, T<n>.<statement from 1>, T<n>.commit or T<n>.abort")]
    NotAStep(String),
    #[error("`{step}`: the workload has {count} transactions")]
    NoSuchTxn { step: String, count: usize },
    #[error("`{step}`: T{txn} has {count} statements")]
    NoSuchStmt {
        step: String,
        txn: usize,
        count: usize,
    },
    #[error("`{step}`: T{txn} ends with `{ending}`")]
    WrongEnding {
        step: String,
        txn: usize,
        ending: &'static str,
    },
    #[error("`{step}` where T{txn}'s next step is `{next}`: a transaction's steps run in order, each once")]
    OutOfOrder {
        step: String,
        txn: usize,
        next: String,
    },
    #[error("the schedule leaves out {missing}: it names every step of every transaction")]
    Missing { missing: String },
    #[error("`{0}` is not an expected value: `T<n>.<statement> = <number>`, `= absent`, or a predicate read's rows `= {{z=30}}`")]
    NotAnExpectation(String),
    #[error("`{0}` is not a key of the workload")]
    UnknownKey(String),
}

/// Reads one step's name against the workload.
fn parse_step(word: &str, w: &Workload) -> Result<(usize, At), ScheduleError> {
    let not_a_step = || ScheduleError::NotAStep(word.to_string());
    let (txn, what) = word
        .strip_prefix('T')
        .and_then(|rest| rest.split_once('.'))
        .ok_or_else(not_a_step)?;
    let t: usize = txn.parse().map_err(|_| not_a_step())?;
    if t == 0 || t > w.programs.len() {
        return Err(ScheduleError::NoSuchTxn {
            step: word.to_string(),
            count: w.programs.len(),
        });
    }
    let t = t - 1;
    let at = match what {
        "begin" => At::Begin,
        "commit" | "abort" => {
            let ending = w.ending(t).step();
            if what != ending {
                return Err(ScheduleError::WrongEnding {
                    step: word.to_string(),
                    txn: t + 1,
                    ending,
                });
            }
            At::End
        }
        number => {
            let i: usize = number.parse().map_err(|_| not_a_step())?;
            let count = w.programs[t].len();
            if i == 0 || i > count {
                return Err(ScheduleError::NoSuchStmt {
                    step: word.to_string(),
                    txn: t + 1,
                    count,
                });
            }
            At::Stmt(i - 1)
        }
    };
    Ok((t, at))
}

/// Transaction t's steps in order.
fn program_steps(w: &Workload, t: usize) -> Vec<At> {
    std::iter::once(At::Begin)
        .chain((0..w.programs[t].len()).map(At::Stmt))
        .chain(std::iter::once(At::End))
        .collect()
}

/// Reads a schedule (steps separated by spaces or commas) against the workload.
pub fn parse(text: &str, w: &Workload) -> Result<Schedule, ScheduleError> {
    let mut next = vec![0usize; w.programs.len()];
    let mut steps = Vec::new();
    for word in text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
    {
        let (t, at) = parse_step(word, w)?;
        let program = program_steps(w, t);
        match program.get(next[t]) {
            Some(&expected) if expected == at => next[t] += 1,
            expected => {
                return Err(ScheduleError::OutOfOrder {
                    step: word.to_string(),
                    txn: t + 1,
                    next: expected
                        .map_or("none: it has ended".to_string(), |&e| step_name(w, t, e)),
                })
            }
        }
        steps.push((t, at));
    }
    let missing: Vec<String> = (0..w.programs.len())
        .flat_map(|t| {
            program_steps(w, t)
                .into_iter()
                .skip(next[t])
                .map(move |at| (t, at))
        })
        .map(|(t, at)| format!("`{}`", step_name(w, t, at)))
        .collect();
    if !missing.is_empty() {
        return Err(ScheduleError::Missing {
            missing: missing.join(", "),
        });
    }
    Ok(Schedule { steps })
}

/// Reads `T1.2 = 11` (or `= absent`, or a predicate read's rows `= {z=30}`, `= {}`) against the
/// workload.
pub fn parse_expectation(text: &str, w: &Workload) -> Result<StepValue, ScheduleError> {
    let not_one = || ScheduleError::NotAnExpectation(text.to_string());
    let (step, value) = text.split_once('=').ok_or_else(not_one)?;
    let (txn, at) = parse_step(step.trim(), w)?;
    let At::Stmt(stmt) = at else {
        return Err(not_one());
    };
    let value = match value.trim() {
        "absent" => Shown::Value(None),
        v if v.starts_with('{') && v.ends_with('}') => {
            let inner = v[1..v.len() - 1].trim();
            let mut rows = Vec::new();
            for row in inner.split(',').filter(|_| !inner.is_empty()) {
                let (k, v) = row.split_once('=').ok_or_else(not_one)?;
                let k = k.trim();
                if !w.keys.iter().any(|name| name == k) {
                    return Err(ScheduleError::UnknownKey(k.to_string()));
                }
                let v = match v.trim() {
                    "absent" => None,
                    v => Some(v.parse::<i64>().map_err(|_| not_one())?),
                };
                rows.push((k.to_string(), v));
            }
            rows.sort();
            Shown::Rows(rows)
        }
        v => Shown::Value(Some(v.parse::<i64>().map_err(|_| not_one())?)),
    };
    Ok(StepValue { txn, stmt, value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{named, Ending};

    fn lost_update() -> Workload {
        named("lost_update").unwrap()
    }

    #[test]
    fn a_schedule_reads_back_as_written_and_gives_its_order() {
        let w = lost_update();
        let text = "T1.begin T2.begin T1.1 T2.1 T1.2 T1.commit T2.2 T2.commit";
        let s = parse(text, &w).unwrap();
        assert_eq!(s.text(&w), text);
        assert_eq!(s.order(), [0, 1, 0, 1, 0, 0, 1, 1]);
        assert_eq!(Schedule::of_order(&s.order(), &w), s);
    }

    #[test]
    fn every_mistake_is_named() {
        let w = lost_update();
        let err = |text: &str| parse(text, &w).unwrap_err().to_string();
        assert!(err("T1.begin T1.x").contains("`T1.x` is not a step"));
        assert!(err("T3.begin").contains("the workload has 2 transactions"));
        assert!(err("T1.begin T1.3").contains("T1 has 2 statements"));
        assert!(err("T1.begin T1.1 T1.2 T1.abort").contains("T1 ends with `commit`"));
        assert!(err("T1.1").contains("T1's next step is `T1.begin`"));
        assert!(err("T1.begin T1.1 T1.2 T1.commit T1.commit").contains("it has ended"));
        let missing = err("T1.begin T1.1 T1.2 T1.commit T2.begin");
        assert!(missing.contains("`T2.1`, `T2.2`, `T2.commit`"), "{missing}");
    }

    #[test]
    fn an_abort_is_named_as_the_program_ends() {
        let mut w = lost_update();
        w.endings = vec![Ending::Abort, Ending::Commit];
        let s = parse(
            "T1.begin T1.1 T1.2 T1.abort T2.begin T2.1 T2.2 T2.commit",
            &w,
        );
        assert!(s.is_ok(), "{s:?}");
    }

    #[test]
    fn expected_values_name_a_statement() {
        let w = lost_update();
        let v = parse_expectation("T2.1 = 10", &w).unwrap();
        assert_eq!(
            v,
            StepValue {
                txn: 1,
                stmt: 0,
                value: Shown::Value(Some(10))
            }
        );
        assert_eq!(v.to_string(), "T2.1 = 10");
        assert_eq!(
            parse_expectation("T1.2=absent", &w).unwrap().value,
            Shown::Value(None)
        );
        // A predicate read's rows, in key order whatever the order written.
        let rows = parse_expectation("T1.1 = {x=3, x=1}", &w).unwrap();
        assert_eq!(
            rows.value,
            Shown::Rows(vec![("x".into(), Some(1)), ("x".into(), Some(3))])
        );
        assert_eq!(rows.to_string(), "T1.1 = {x=1, x=3}");
        assert_eq!(
            parse_expectation("T1.1 = {}", &w).unwrap().value,
            Shown::Rows(vec![])
        );
        assert!(parse_expectation("T1.1 = {y=1}", &w)
            .unwrap_err()
            .to_string()
            .contains("`y` is not a key"));
        assert!(parse_expectation("T1.1 = {x}", &w).is_err());
        assert!(parse_expectation("T1.begin = 1", &w).is_err());
        assert!(parse_expectation("T1.1 = ten", &w).is_err());
        assert!(parse_expectation("T1.9 = 1", &w).is_err());
    }
}
