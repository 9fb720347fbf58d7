//! The fast path of a part's search: Wing and Gong's depth-first search with Lowe's memo,
//! greedy (each step tries the operations with a known outcome first, the earliest return
//! first; one of unknown outcome only after them), within a small budget.
//!
//! It only ever answers "here is an order": a linearizable history, which is most of what real
//! stores log, is settled in about one configuration an operation. An order it finds is
//! certified like any other (`verdict::certify`); when it finds none within its budget (a
//! history that is not linearizable, or a hard one), the complete search (`search.rs`) decides.
//! So nothing it does can make a verdict wrong: not its greed, not its budget, and not its memo,
//! which keeps only a 64-bit hash of each configuration (a collision can only send the part on
//! to the complete search).

use std::rc::Rc;

use hashbrown::HashSet;

use super::search::{Node, Part, Step};
use super::Sequential;
use loadbearing_refinement::fingerprint::fingerprint;

/// A choice at a configuration: a step, the state after it, and the operation it places (a
/// known one, or an unknown one that is counted).
struct Choice<St> {
    step: Step,
    after: St,
    places: Option<usize>,
}

struct Frame<St> {
    node: Rc<Node<St>>,
    choices: Vec<Choice<St>>,
    next: usize,
    /// The choices are the known operations'; the unknown ones and the silent steps are
    /// generated only once those are spent (greedy: what is known first).
    known_only: bool,
    /// The operation the step into this frame placed, taken back when it is popped.
    placed: Option<usize>,
}

/// The call and return entries of a part's operations not yet placed, in time order, as a
/// doubly linked list over an array: placing an operation unlinks its entries, taking it back
/// relinks them, both in constant time ("dancing links").
struct Entries {
    /// Per entry (0 is the head): the operation, and whether it is its call.
    op: Vec<usize>,
    is_call: Vec<bool>,
    prev: Vec<usize>,
    next: Vec<usize>,
    /// Per operation: its call entry and its return entry (`END`: none).
    call_of: Vec<usize>,
    ret_of: Vec<usize>,
}

const END: usize = usize::MAX;

impl Entries {
    /// The entries of the operations with a known outcome.
    fn new<S: Sequential>(part: &Part<S>) -> Entries {
        // Calls before returns at one instant: closed intervals overlap when they touch.
        let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(part.ops.len() * 2);
        for (k, op) in part.ops.iter().enumerate() {
            if let Some(r) = op.ret {
                events.push((op.call, false, k));
                events.push((r, true, k));
            }
        }
        events.sort_unstable();
        let n = events.len() + 1;
        let mut entries = Entries {
            op: vec![END; n],
            is_call: vec![false; n],
            prev: (0..n).map(|e| e.wrapping_sub(1)).collect(),
            next: (1..=n).collect(),
            call_of: vec![END; part.ops.len()],
            ret_of: vec![END; part.ops.len()],
        };
        entries.prev[0] = END;
        entries.next[n - 1] = END;
        for (e, &(_, is_return, k)) in events.iter().enumerate() {
            let e = e + 1;
            entries.op[e] = k;
            entries.is_call[e] = !is_return;
            if is_return {
                entries.ret_of[k] = e;
            } else {
                entries.call_of[k] = e;
            }
        }
        entries
    }

    fn unlink(&mut self, e: usize) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = n;
        if n != END {
            self.prev[n] = p;
        }
    }

    fn relink(&mut self, e: usize) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = e;
        if n != END {
            self.prev[n] = e;
        }
    }

    /// Takes operation `k` out (its entries), or puts it back (the reverse order).
    fn place(&mut self, k: usize) {
        self.unlink(self.call_of[k]);
        if self.ret_of[k] != END {
            self.unlink(self.ret_of[k]);
        }
    }

    fn unplace(&mut self, k: usize) {
        if self.ret_of[k] != END {
            self.relink(self.ret_of[k]);
        }
        self.relink(self.call_of[k]);
    }

    /// The operations with a known outcome that may take effect next: every call before the
    /// first return still in the list (each is minimal in real time among those left); and
    /// that return's operation (`None`: none is left).
    fn ready(&self, into: &mut Vec<usize>) -> Option<usize> {
        into.clear();
        let mut e = self.next[0];
        while e != END && self.is_call[e] {
            into.push(self.op[e]);
            e = self.next[e];
        }
        (e != END).then(|| self.op[e])
    }
}

impl<S: Sequential> Part<'_, S> {
    /// An order of every operation with a known outcome, found greedily within `limit`
    /// configurations, or `None`; and the configurations it explored.
    pub(super) fn greedy(
        &self,
        initial: &[S::State],
        limit: u64,
    ) -> (Option<Rc<Node<S::State>>>, u64) {
        let n = self.ops.len();
        let known: Vec<bool> = self.ops.iter().map(|op| op.ret.is_some()).collect();
        let mut known_left = known.iter().filter(|&&k| k).count();
        // A random word per operation: the placed set's hash is their xor.
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let zobrist: Vec<u64> = (0..n)
            .map(|_| {
                rng = rng
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                rng ^ (rng >> 29)
            })
            .collect();
        let mut entries = Entries::new(self);
        let mut hash = 0u64;
        let mut seen: HashSet<u64> = HashSet::new();
        let mut explored = 0u64;
        let mut ready = Vec::new();
        let mut unknown_placed = vec![false; n];
        for start in initial {
            let root = Rc::new(Node {
                step: Step::Start,
                state: start.clone(),
                prev: None,
            });
            entries.ready(&mut ready);
            let mut stack = vec![Frame {
                choices: self.known_choices(&root.state, &ready),
                node: root,
                next: 0,
                known_only: true,
                placed: None,
            }];
            while let Some(top) = stack.last_mut() {
                if top.next == top.choices.len() && top.known_only {
                    // The known operations are spent here: now the unknown ones and the model's
                    // silent steps.
                    top.known_only = false;
                    let until = entries.ready(&mut ready).map(|k| self.ops[k].ret);
                    top.choices =
                        self.unknown_choices(&top.node.state, until.flatten(), &unknown_placed);
                    top.next = 0;
                }
                let Some(choice) = top.choices.get(top.next) else {
                    let frame = stack.pop().expect("the top frame");
                    if let Some(k) = frame.placed {
                        if known[k] {
                            entries.unplace(k);
                        } else {
                            unknown_placed[k] = false;
                        }
                        hash ^= zobrist[k];
                        known_left += known[k] as usize;
                    }
                    continue;
                };
                top.next += 1;
                let places = choice.places;
                let key = hash ^ places.map_or(0, |k| zobrist[k]);
                if !seen.insert(key ^ fingerprint(&choice.after).rotate_left(17)) {
                    continue;
                }
                explored += 1;
                if explored > limit {
                    return (None, explored);
                }
                let node = Rc::new(Node {
                    step: choice.step,
                    state: choice.after.clone(),
                    prev: Some(Rc::clone(&top.node)),
                });
                if let Some(k) = places {
                    if known[k] {
                        entries.place(k);
                    } else {
                        unknown_placed[k] = true;
                    }
                    hash ^= zobrist[k];
                    known_left -= known[k] as usize;
                }
                if known_left == 0 {
                    return (Some(node), explored);
                }
                entries.ready(&mut ready);
                let doomed = ready
                    .iter()
                    .any(|&k| known[k] && self.model.doomed(&node.state, &self.ops[k].event));
                let choices = if doomed {
                    Vec::new()
                } else {
                    self.known_choices(&node.state, &ready)
                };
                stack.push(Frame {
                    node,
                    choices,
                    next: 0,
                    known_only: !doomed,
                    placed: places,
                });
            }
        }
        (None, explored)
    }

    /// The ready operations with a known outcome that take effect from `state`, the earliest
    /// return first.
    fn known_choices(&self, state: &S::State, ready: &[usize]) -> Vec<Choice<S::State>> {
        let mut order = ready.to_vec();
        order.sort_by_key(|&k| self.ops[k].ret);
        let mut choices = Vec::new();
        let mut after = Vec::new();
        for k in order {
            after.clear();
            if self.model.apply(state, &self.ops[k].event, &mut after) {
                for next in after.drain(..) {
                    choices.push(Choice {
                        step: Step::Op(k),
                        after: next,
                        places: Some(k),
                    });
                }
            }
        }
        choices
    }

    /// The operations of unknown outcome called by `until` (the earliest return left; `None`:
    /// any) and not yet used that change `state` (the earliest-called of each class), then the
    /// model's silent steps.
    fn unknown_choices(
        &self,
        state: &S::State,
        until: Option<u64>,
        placed: &[bool],
    ) -> Vec<Choice<S::State>> {
        let model = self.model;
        let mut choices = Vec::new();
        let mut after = Vec::new();
        for class in &self.classes {
            let Some(&k) = class
                .members
                .iter()
                .find(|&&k| class.repeatable || !placed[k])
                .filter(|&&k| until.is_none_or(|until| self.ops[k].call <= until))
            else {
                continue;
            };
            let op = &self.ops[k].event;
            if model.settled(state, op) {
                continue;
            }
            after.clear();
            model.step_unknown(state, op, &mut after);
            for next in after.drain(..).filter(|next| next != state) {
                choices.push(Choice {
                    step: Step::Op(k),
                    after: next,
                    places: (!class.repeatable).then_some(k),
                });
            }
        }
        after.clear();
        model.silent(state, &mut after);
        for next in after.drain(..).filter(|next| next != state) {
            choices.push(Choice {
                step: Step::Silent,
                after: next,
                places: None,
            });
        }
        choices
    }
}
