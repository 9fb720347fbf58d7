//! Stateright's web explorer on our models: the explorer runs its own checker on a wrapper
//! model, [`Explorable`]: the same states and actions in the same order, so the explorer's
//! `#/steps/<init>/<action>/…` paths name the same behaviours as our counterexamples. States read
//! by the spec's variable names, each with its refinement images, and every step says whether it
//! is a stutter, which abstract step it simulates, or that it breaks the refinement.
//!
//! Behind the feature `explorer` (Stateright and its web server, tiny_http).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use std::sync::Arc;

use crate::check::CheckSpec;
use crate::fingerprint::fingerprint;
use crate::model::{Expectation, Model, Property};
use crate::refinement::{Refinement, StepMatch};
use crate::report::CounterexampleOf;
use crate::spec::{Spec, Variables};

use super::{front, ViewError};

/// Serves the explorer on `address` for `model` checked against `spec`, the counterexample
/// marked, and does not return while it runs.
pub(super) fn serve<M: Spec + 'static>(
    model: &Arc<M>,
    spec: &CheckSpec,
    cx: Option<&CounterexampleOf<M>>,
    address: SocketAddr,
    title: &str,
) -> Result<(), ViewError> {
    let lens = Lens::new(Arc::clone(model), spec, cx);
    let explorable = Explorable {
        lens: Arc::new(lens),
    };
    let inits: Vec<Variables> = model
        .init_states()
        .iter()
        .map(|s| model.variables(s))
        .collect();
    let names = front::Names {
        title: title.to_string(),
        inits: front::init_labels(&inits),
    };
    front::serve(address, names, move |inner| {
        use stateright::Model as _;
        explorable.checker().serve(inner);
    })
}

/// A property of the config that Stateright's checker can check on states.
enum Check<M: Model> {
    /// An invariant or a witness of the model.
    State(Property<M>),
    /// A refinement, as the state property "no step out of here, and no initial state, maps to
    /// no abstract step": its discovery ends at the state before the offending step.
    Refinement(usize),
}

struct Checked<M: Model> {
    expectation: Expectation,
    name: &'static str,
    check: Check<M>,
}

/// A counterexample of our engine, marked on the states it passes.
struct Marked {
    property: String,
    /// Each state's positions on the path (a lasso passes its loop start twice).
    positions: HashMap<u64, Vec<usize>>,
    steps: usize,
    loop_start: Option<usize>,
    fairness_note: Option<String>,
}

/// What the wrapper model shares with every state it shows.
pub struct Lens<M: Spec> {
    model: Arc<M>,
    refinements: Vec<Box<dyn Refinement<M::State>>>,
    checked: Vec<Checked<M>>,
    /// `eventually` properties: Stateright checks them only at terminal states, which our
    /// stuttering models never reach, so they are shown, not checked, by the explorer.
    liveness: Vec<Property<M>>,
    init_fps: HashSet<u64>,
    marked: Option<Marked>,
}

impl<M: Spec> Lens<M> {
    fn new(model: Arc<M>, spec: &CheckSpec, cx: Option<&CounterexampleOf<M>>) -> Self {
        let properties = model.properties();
        let refinements = model.refinements();
        let mut checked = Vec::new();
        let mut liveness = Vec::new();
        for name in &spec.properties {
            if let Some(p) = properties.iter().find(|p| p.name == name) {
                match p.expectation {
                    Expectation::Eventually => liveness.push(p.clone()),
                    _ => checked.push(Checked {
                        expectation: p.expectation.clone(),
                        name: p.name,
                        check: Check::State(p.clone()),
                    }),
                }
            } else if let Some(i) = refinements.iter().position(|r| r.name() == name) {
                checked.push(Checked {
                    expectation: Expectation::Always,
                    name: refinements[i].name(),
                    check: Check::Refinement(i),
                });
            }
        }
        checked.truncate(CONDITIONS);
        let init_fps = model.init_states().iter().map(fingerprint).collect();
        let marked = cx.map(|cx| {
            let mut positions: HashMap<u64, Vec<usize>> = HashMap::new();
            for (i, s) in cx.path.states().enumerate() {
                positions.entry(fingerprint(s)).or_default().push(i);
            }
            Marked {
                property: cx.property.clone(),
                positions,
                steps: cx.len(),
                loop_start: cx.loop_start,
                fairness_note: cx.fairness_note.clone(),
            }
        });
        Lens {
            model,
            refinements,
            checked,
            liveness,
            init_fps,
            marked,
        }
    }

    fn holds(&self, i: usize, s: &M::State) -> bool {
        match &self.checked[i].check {
            Check::State(p) => (p.condition)(&self.model, s),
            Check::Refinement(r) => {
                let r = &self.refinements[*r];
                if self.init_fps.contains(&fingerprint(s)) && r.check_init(s).is_err() {
                    return false;
                }
                r.check_steps(s, &self.model.next_states(s)).is_empty()
            }
        }
    }

    /// A state as the explorer shows it: the spec's variables, each refinement image, what the
    /// config's properties say here, and where the state is on the counterexample.
    pub fn describe(&self, s: &M::State) -> String {
        let mut out = String::new();
        let vars = self.model.variables(s);
        let width = vars.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in &vars {
            out.push_str(&format!("{k:<width$} = {v}\n"));
        }
        for r in &self.refinements {
            let image = r.image(s).variables();
            out.push_str(&format!(
                "\n{} maps this state to {}:\n",
                r.name(),
                r.abstract_model()
            ));
            let width = image.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            for (k, v) in image {
                out.push_str(&format!("  {k:<width$} = {v}\n"));
            }
        }
        let mut verdicts = Vec::new();
        for c in &self.checked {
            if let Check::State(p) = &c.check {
                let here = (p.condition)(&self.model, s);
                match (&c.expectation, here) {
                    (Expectation::Always, false) => {
                        verdicts.push(format!("✗ {} is violated in this state", c.name))
                    }
                    (Expectation::Sometimes, true) => {
                        verdicts.push(format!("✓ {} (a witness) holds here", c.name))
                    }
                    _ => {}
                }
            }
        }
        for p in &self.liveness {
            let here = (p.condition)(&self.model, s);
            verdicts.push(if here {
                format!("✓ {} (eventually) is satisfied here", p.name)
            } else {
                format!("… {} (eventually) is not yet satisfied here", p.name)
            });
        }
        if let Some(m) = &self.marked {
            if let Some(positions) = m.positions.get(&fingerprint(s)) {
                for &i in positions {
                    let mut line = format!(
                        "⚠ step {i} of {} of the shortest counterexample to {}",
                        m.steps, m.property
                    );
                    if let Some(start) = m.loop_start {
                        if i == start && start == m.steps {
                            line.push_str(": it stutters here forever");
                        } else if i == start {
                            line.push_str(": the loop starts here");
                        } else if i == m.steps {
                            line.push_str(&format!(": back at step {start}, the loop repeats"));
                        }
                        if i == m.steps {
                            if let Some(note) = &m.fairness_note {
                                line.push_str(&format!(" ({note})"));
                            }
                        }
                    }
                    verdicts.push(line);
                }
            }
        }
        if !verdicts.is_empty() {
            out.push('\n');
            for v in verdicts {
                out.push_str(&v);
                out.push('\n');
            }
        }
        out
    }

    /// A step as the explorer shows it: who acted, what changed, what each refinement makes of
    /// it, then the state it reaches.
    fn describe_step(&self, before: &M::State, action: &M::Action, after: &M::State) -> String {
        let mut out = format!(
            "{} by {}\n",
            self.model.format_action(action),
            self.model.actor(action)
        );
        let then = self.model.variables(before);
        let changed: Vec<String> = self
            .model
            .variables(after)
            .into_iter()
            .zip(then)
            .filter(|(n, t)| n.1 != t.1)
            .map(|(n, _)| format!("{}={}", n.0, n.1))
            .collect();
        if changed.is_empty() {
            out.push_str("changes nothing (a stutter)\n");
        } else {
            out.push_str(&format!("changes {}\n", changed.join("  ")));
        }
        for r in &self.refinements {
            let target = r.abstract_model();
            let verdict = match r.check_step(before, after) {
                Ok(StepMatch::Stutter) => format!("{}: a stutter of {target}", r.name()),
                Ok(StepMatch::Simulates(a)) => format!("{}: simulates {target}'s {a}", r.name()),
                Err(_) => format!(
                    "✗ {} is violated: this step maps to no step of {target} and is no stutter",
                    r.name()
                ),
            };
            out.push_str(&verdict);
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&self.describe(after));
        out
    }
}

/// A model's state in the explorer: hashed and compared as the state itself, printed through
/// the lens.
pub struct Shown<M: Spec> {
    pub state: M::State,
    lens: Arc<Lens<M>>,
}

impl<M: Spec> Clone for Shown<M> {
    fn clone(&self) -> Self {
        Shown {
            state: self.state.clone(),
            lens: Arc::clone(&self.lens),
        }
    }
}

impl<M: Spec> PartialEq for Shown<M> {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state
    }
}

impl<M: Spec> Eq for Shown<M> {}

impl<M: Spec> Hash for Shown<M> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.state.hash(h)
    }
}

impl<M: Spec> fmt::Debug for Shown<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lens.describe(&self.state))
    }
}

/// An action with its index among the actions of its state: Stateright's explorer encodes a
/// path by these indices.
#[derive(Clone)]
pub struct Indexed<A> {
    pub index: usize,
    pub action: A,
}

impl<A> PartialEq for Indexed<A> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}

impl<A: fmt::Debug> fmt::Debug for Indexed<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.action.fmt(f)
    }
}

/// The model Stateright's explorer runs: `M`'s states and actions, in `M`'s order.
pub struct Explorable<M: Spec> {
    lens: Arc<Lens<M>>,
}

impl<M: Spec> Explorable<M> {
    fn shown(&self, state: M::State) -> Shown<M> {
        Shown {
            state,
            lens: Arc::clone(&self.lens),
        }
    }
}

/// Stateright's properties take plain function pointers: one per position of a checked
/// property, up to `CONDITIONS` of them.
fn condition<M: Spec, const I: usize>(m: &Explorable<M>, s: &Shown<M>) -> bool {
    m.lens.holds(I, &s.state)
}

const CONDITIONS: usize = 16;

type Condition<M> = fn(&Explorable<M>, &Shown<M>) -> bool;

fn conditions<M: Spec>() -> [Condition<M>; CONDITIONS] {
    [
        condition::<M, 0>,
        condition::<M, 1>,
        condition::<M, 2>,
        condition::<M, 3>,
        condition::<M, 4>,
        condition::<M, 5>,
        condition::<M, 6>,
        condition::<M, 7>,
        condition::<M, 8>,
        condition::<M, 9>,
        condition::<M, 10>,
        condition::<M, 11>,
        condition::<M, 12>,
        condition::<M, 13>,
        condition::<M, 14>,
        condition::<M, 15>,
    ]
}

impl<M: Spec> stateright::Model for Explorable<M> {
    type State = Shown<M>;
    type Action = Indexed<M::Action>;

    fn init_states(&self) -> Vec<Self::State> {
        self.lens
            .model
            .init_states()
            .into_iter()
            .map(|s| self.shown(s))
            .collect()
    }

    fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>) {
        let mut inner = Vec::new();
        self.lens.model.actions(&state.state, &mut inner);
        actions.extend(
            inner
                .into_iter()
                .enumerate()
                .map(|(index, action)| Indexed { index, action }),
        );
    }

    fn next_state(&self, state: &Self::State, action: Self::Action) -> Option<Self::State> {
        self.lens
            .model
            .next_state(&state.state, action.action)
            .map(|s| self.shown(s))
    }

    fn format_action(&self, action: &Self::Action) -> String {
        self.lens.model.format_action(&action.action)
    }

    fn format_step(&self, last: &Self::State, action: Self::Action) -> Option<String> {
        let after = self
            .lens
            .model
            .next_state(&last.state, action.action.clone())?;
        Some(self.lens.describe_step(&last.state, &action.action, &after))
    }

    /// The inner model's picture of the path (an actor model's sequence diagram).
    fn as_svg(&self, path: stateright::Path<Self::State, Self::Action>) -> Option<String> {
        let steps = path.into_vec();
        let init = steps.first()?.0.state.clone();
        let actions: Vec<M::Action> = steps
            .iter()
            .filter_map(|(_, a)| a.as_ref().map(|a| a.action.clone()))
            .collect();
        self.lens.model.as_svg(&init, &actions)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        let conditions = conditions::<M>();
        self.lens
            .checked
            .iter()
            .zip(conditions)
            .map(|(c, condition)| stateright::Property {
                expectation: match c.expectation {
                    Expectation::Always => stateright::Expectation::Always,
                    Expectation::Eventually => stateright::Expectation::Eventually,
                    Expectation::Sometimes => stateright::Expectation::Sometimes,
                },
                name: c.name,
                condition,
            })
            .collect()
    }
}
