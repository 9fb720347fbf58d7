//! What a history search found, as data (serde) and as text for people: the order of each
//! part when every part has one, the longest order and what could not come next when a part
//! has none, the budget and the part when the search could not tell.

use std::fmt::{self, Write as _};
use std::rc::Rc;

use serde::Serialize;

use super::search::{Node, Step};
use super::{Sequential, Spent};
use crate::wire::{Key, Timed};

/// A part of a history: the key the history names, the model's own key within it, or the
/// whole history (neither).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PartName {
    /// The history's key, as written (a string or a number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<Key>,
    /// The model's key within it, as the model shows it (absent for a model of one key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_key: Option<String>,
}

impl PartName {
    pub(super) fn new<K: fmt::Debug>(key: Option<&Key>, model_key: &K) -> PartName {
        let model_key = format!("{model_key:?}");
        PartName {
            key: key.cloned(),
            model_key: (model_key != "()").then_some(model_key),
        }
    }

    /// Whether this is the whole history (one key, none named).
    pub fn is_whole(&self) -> bool {
        self.key.is_none() && self.model_key.is_none()
    }

    /// `key "k17": ` before what is said of the part; nothing for the whole history.
    fn prefix(&self) -> String {
        if self.is_whole() {
            String::new()
        } else {
            format!("{self}: ")
        }
    }
}

/// `key "k17"`, `key 17`, `key "k17" 0`, `model key 0`; the whole history: `the history`.
impl fmt::Display for PartName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.key, &self.model_key) {
            (None, None) => write!(f, "the history"),
            (Some(key), None) => write!(f, "key {key}"),
            (Some(key), Some(model)) => write!(f, "key {key} {model}"),
            (None, Some(model)) => write!(f, "model key {model}"),
        }
    }
}

/// One step of an order the model allows: an operation taking effect, or a silent step of the
/// model, with the state after it.
#[derive(Clone, Debug, Serialize)]
pub struct Placed {
    /// The operation's index in the history (`None`: a silent step of the model).
    pub op: Option<usize>,
    /// Its line in the trace file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<u64>,
    /// `None` for an operation that never returned (of unknown outcome), or a silent step.
    pub ret: Option<u64>,
    /// Of unknown outcome: the order has it take effect here.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unknown: bool,
    pub what: String,
    pub state: String,
}

/// An operation that had to take effect next and could not, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Refused {
    pub op: usize,
    pub line: usize,
    pub what: String,
    pub why: String,
}

/// A part's linearization: an order of its operations the model allows, from its initial
/// state, each known operation once and between its call and its return; the operations of
/// unknown outcome it leaves out never took effect.
#[derive(Clone, Debug, Serialize)]
pub struct PartOrder {
    pub part: PartName,
    pub initial: String,
    pub placed: Vec<Placed>,
    /// Operations of unknown outcome the order has never take effect, by history index.
    pub left_out: Vec<usize>,
}

/// Why a part of the history is no behaviour of the model: the longest order of its operations
/// the model allows (the longest linearizable prefix), and at its end, each operation that
/// could have come next with why the model refused it.
#[derive(Clone, Debug, Serialize)]
pub struct NotLinearizable {
    pub part: PartName,
    /// The operations of the part, by index in the history.
    pub ops: Vec<usize>,
    /// The operation that returned with no order able to place it (history index).
    pub due: usize,
    /// The longest order found, from the part's initial state.
    pub initial: String,
    pub placed: Vec<Placed>,
    /// The state where it ended.
    pub state: String,
    pub refused: Vec<Refused>,
    /// Known operations of the part left unplaced there.
    pub unplaced: Vec<usize>,
}

/// The verdict on a history.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum HistoryOutcome {
    /// Every part has an order the model allows: each part's.
    Linearizable { orders: Vec<PartOrder> },
    /// A part has none: the first such part, explained.
    NotLinearizable(Box<NotLinearizable>),
    /// The search ran out of a budget before it could tell, in this part.
    Unknown { part: PartName, spent: Spent },
}

/// One part's search: how many operations, and the configurations it explored.
#[derive(Clone, Debug, Serialize)]
pub struct PartSearched {
    pub part: PartName,
    pub operations: usize,
    pub configurations: u64,
}

/// What a search found, and what it cost.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryVerdict {
    pub operations: usize,
    pub parts: usize,
    /// Configurations explored, over every part.
    pub configurations: u64,
    /// The most configurations held at one return.
    pub widest: usize,
    /// Each part searched, in order (the last one is where the search stopped when it did).
    pub searched: Vec<PartSearched>,
    #[serde(flatten)]
    pub outcome: HistoryOutcome,
}

/// The orders of a linearizable verdict are shown in the text up to this many steps in all;
/// a longer one is in the JSON (the text says so).
const SHOWN_STEPS: usize = 200;

impl HistoryVerdict {
    pub fn conforming(&self) -> bool {
        matches!(self.outcome, HistoryOutcome::Linearizable { .. })
    }

    /// For people: the verdict; the order of each part, one operation a line (a long one only
    /// in the JSON); for a part with no order, what could be placed and what could not.
    pub fn text(&self) -> String {
        let mut out = String::new();
        match &self.outcome {
            HistoryOutcome::Linearizable { orders } => {
                let _ = writeln!(
                    out,
                    "linearizable: {} operations in {} part(s), {} configurations explored",
                    self.operations, self.parts, self.configurations
                );
                let steps: usize = orders.iter().map(|o| o.placed.len()).sum();
                if steps > SHOWN_STEPS {
                    let _ = writeln!(
                        out,
                        "the order of each part ({steps} steps) is in the JSON (--format json): `orders`"
                    );
                } else {
                    for order in orders {
                        out.push_str(&order.text());
                    }
                }
            }
            HistoryOutcome::Unknown { part, spent } => {
                let searched = self.searched.last();
                let _ = writeln!(
                    out,
                    "unknown: the search spent {spent} in {part}{} before it could tell ({} configurations in all)",
                    searched.map_or(String::new(), |s| format!(
                        " ({} operations, {} configurations)",
                        s.operations, s.configurations
                    )),
                    self.configurations
                );
            }
            HistoryOutcome::NotLinearizable(why) => out.push_str(&why.text()),
        }
        out
    }
}

impl Placed {
    fn line_text(&self) -> String {
        let at = match (self.line, self.call, self.ret, self.unknown) {
            (None, ..) => return format!("              {}  → {}", self.what, self.state),
            (Some(line), Some(call), Some(ret), _) => {
                format!("line {line:>5}  [{call}, {ret}]")
            }
            (Some(line), Some(call), None, true) => {
                format!("line {line:>5}  [{call}, never returned: took effect here]")
            }
            (Some(line), ..) => format!("line {line:>5}"),
        };
        format!("  {at}  {}  → {}", self.what, self.state)
    }
}

impl PartOrder {
    /// One step a line, then the operations of unknown outcome left out.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}an order the model allows, from {}:",
            self.part.prefix(),
            self.initial
        );
        for p in &self.placed {
            let _ = writeln!(out, "{}", p.line_text());
        }
        if !self.left_out.is_empty() {
            let _ = writeln!(
                out,
                "  {} operation(s) of unknown outcome never took effect in it (history index {:?})",
                self.left_out.len(),
                self.left_out
            );
        }
        out
    }
}

impl NotLinearizable {
    /// The failed part for people: the longest order the model allows, then each operation
    /// that had to come next and why the model refused it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "not linearizable: {}no order of its {} operations is a behaviour of the model",
            self.part.prefix(),
            self.ops.len()
        );
        let _ = writeln!(
            out,
            "the longest order the model allows places {} of them, from {}:",
            self.placed.iter().filter(|p| p.op.is_some()).count(),
            self.initial
        );
        for p in &self.placed {
            let _ = writeln!(out, "{}", p.line_text());
        }
        let _ = writeln!(
            out,
            "then nothing the history allows next fits, in {}:",
            self.state
        );
        for r in &self.refused {
            let _ = writeln!(out, "  line {:>5}  {}: {}", r.line, r.what, r.why);
        }
        if self.refused.is_empty() {
            let _ = writeln!(
                out,
                "  (no operation may come next: each left must wait for one that was refused)"
            );
        }
        let _ = writeln!(
            out,
            "{} operation(s) with a known outcome never placed",
            self.unplaced.len()
        );
        out
    }
}

/// Each step of an order as people read it.
fn placed<S: Sequential>(
    model: &S,
    history: &[Timed<S::Op>],
    ops: &[usize],
    steps: &[(Step, S::State)],
) -> Vec<Placed> {
    steps
        .iter()
        .map(|(step, state)| match *step {
            Step::Op(k) => {
                let op = &history[ops[k]];
                Placed {
                    op: Some(ops[k]),
                    line: Some(op.line),
                    call: Some(op.call),
                    ret: op.ret,
                    unknown: op.ret.is_none(),
                    what: model.describe(&op.event),
                    state: model.describe_state(state),
                }
            }
            Step::Silent | Step::Start => Placed {
                op: None,
                line: None,
                call: None,
                ret: None,
                unknown: false,
                what: "(a silent step of the model)".to_string(),
                state: model.describe_state(state),
            },
        })
        .collect()
}

/// A part's order, once checked step by step against the model and the history's times.
pub(super) fn order<S: Sequential>(
    model: &S,
    history: &[Timed<S::Op>],
    ops: &[usize],
    part: PartName,
    last: Option<&Rc<Node<S::State>>>,
) -> PartOrder {
    let Some(last) = last else {
        // Nothing known to place, and no initial state: the empty order.
        return PartOrder {
            part,
            initial: "(no initial state: nothing needs one)".to_string(),
            placed: Vec::new(),
            left_out: ops
                .iter()
                .copied()
                .filter(|&i| history[i].ret.is_none())
                .collect(),
        };
    };
    let (initial, steps) = last.order();
    certify(model, history, ops, &initial, &steps);
    let mut taken = vec![false; ops.len()];
    for (step, _) in &steps {
        if let Step::Op(k) = step {
            taken[*k] = true;
        }
    }
    PartOrder {
        part,
        initial: model.describe_state(&initial),
        placed: placed(model, history, ops, &steps),
        left_out: (0..ops.len())
            .filter(|&k| history[ops[k]].ret.is_none() && !taken[k])
            .map(|k| ops[k])
            .collect(),
    }
}

/// Holds an order found to what it claims, independently of how the search found it: every
/// operation with a known outcome placed exactly once, no operation placed before one that
/// precedes it, and every step one the model allows. A search that breaks this is a bug, not a
/// verdict: it panics rather than print one.
fn certify<S: Sequential>(
    model: &S,
    history: &[Timed<S::Op>],
    ops: &[usize],
    initial: &S::State,
    steps: &[(Step, S::State)],
) {
    let mut times = vec![0usize; ops.len()];
    let mut order = Vec::new();
    let mut state = initial;
    let mut after = Vec::new();
    for (step, next) in steps {
        after.clear();
        match *step {
            Step::Op(k) => {
                let op = &history[ops[k]];
                times[k] += 1;
                order.push(k);
                if op.ret.is_some() {
                    let _ = model.step(state, &op.event, &mut after);
                } else {
                    model.step_unknown(state, &op.event, &mut after);
                }
            }
            Step::Silent | Step::Start => model.silent(state, &mut after),
        }
        assert!(
            after.contains(next),
            "bug: the history search placed a step the model does not allow ({step:?} from {state:?} to {next:?})"
        );
        state = next;
    }
    for (k, &n) in times.iter().enumerate() {
        assert!(
            history[ops[k]].ret.is_none() || n == 1,
            "bug: the history search placed operation {} {n} times",
            ops[k]
        );
    }
    // No operation after another precedes it: scanning from the end, the earliest return of
    // the operations placed later is never before the call of the one placed here.
    let mut earliest_later: Option<u64> = None;
    for &k in order.iter().rev() {
        let op = &history[ops[k]];
        assert!(
            earliest_later.is_none_or(|ret| ret >= op.call),
            "bug: the history search placed operation {} after one that precedes it",
            ops[k]
        );
        if let Some(ret) = op.ret {
            earliest_later = Some(earliest_later.map_or(ret, |e| e.min(ret)));
        }
    }
}

/// A part with no order, explained from the configuration that placed the most.
pub(super) fn failure<S: Sequential>(
    model: &S,
    history: &[Timed<S::Op>],
    ops: &[usize],
    part: PartName,
    due: usize,
    deepest: &Option<Rc<Node<S::State>>>,
    unplaced_pending: &[usize],
) -> NotLinearizable {
    let known = |k: usize| history[ops[k]].ret.is_some();
    let Some(deepest) = deepest else {
        let none = "(no initial state of the model fits this part's operations)".to_string();
        return NotLinearizable {
            part,
            ops: ops.to_vec(),
            due: ops[due],
            initial: none.clone(),
            placed: Vec::new(),
            state: none,
            refused: Vec::new(),
            unplaced: (0..ops.len())
                .filter(|&k| known(k))
                .map(|k| ops[k])
                .collect(),
        };
    };
    let (initial, steps) = deepest.order();
    let end = steps.last().map_or(&initial, |(_, state)| state);
    let mut after = Vec::new();
    let refused = unplaced_pending
        .iter()
        .map(|&k| {
            let op = &history[ops[k]];
            after.clear();
            let why = match model.step(end, &op.event, &mut after) {
                Err(why) => why.to_string(),
                Ok(()) => "allowed here, but no order from here places every operation".to_string(),
            };
            Refused {
                op: ops[k],
                line: op.line,
                what: model.describe(&op.event),
                why,
            }
        })
        .collect();
    let mut taken = vec![false; ops.len()];
    for (step, _) in &steps {
        if let Step::Op(k) = step {
            taken[*k] = true;
        }
    }
    NotLinearizable {
        part,
        ops: ops.to_vec(),
        due: ops[due],
        initial: model.describe_state(&initial),
        placed: placed(model, history, ops, &steps),
        state: model.describe_state(end),
        refused,
        unplaced: (0..ops.len())
            .filter(|&k| known(k) && !taken[k])
            .map(|k| ops[k])
            .collect(),
    }
}
