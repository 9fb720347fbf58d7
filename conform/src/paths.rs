//! Model paths to drive through an implementation: every short path, and seeded random walks.

use loadbearing_refinement::Model;

use crate::schedule::Schedule;

/// A model path: its actions, and the states they lead through (the initial one first).
pub type ModelPath<M> = (
    Vec<<M as loadbearing_refinement::Model>::Action>,
    Vec<<M as loadbearing_refinement::Model>::State>,
);

/// Every path of at most `depth` steps from `init`, leaving out the actions `skip` names: each
/// non-empty prefix when `every_prefix`, else only the maximal ones (depth reached, or nothing
/// enabled). Depth first, in the model's action order.
pub fn all_paths<M>(
    model: &M,
    init: M::State,
    depth: usize,
    every_prefix: bool,
    skip: impl Fn(&M::Action) -> bool,
) -> Vec<Vec<M::Action>>
where
    M: Model,
    M::Action: Clone,
{
    let mut out = Vec::new();
    let mut stack = vec![(init, Vec::new())];
    while let Some((state, path)) = stack.pop() {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        actions.retain(|a| !skip(a));
        let maximal = path.len() == depth || actions.is_empty();
        if (every_prefix && !path.is_empty()) || (!every_prefix && maximal) {
            out.push(path.clone());
        }
        if path.len() == depth {
            continue;
        }
        for action in actions {
            if let Some(next) = model.next_state(&state, action.clone()) {
                let mut longer = path.clone();
                longer.push(action);
                stack.push((next, longer));
            }
        }
    }
    out
}

/// A random walk of `model` from `init`: at each step the schedule picks one enabled action
/// (other than those `skip` names), until none is enabled or `max_steps` were taken. The
/// states start with `init`.
pub fn random_walk<M>(
    model: &M,
    init: M::State,
    schedule: &mut dyn Schedule,
    max_steps: usize,
    skip: impl Fn(&M::Action) -> bool,
) -> ModelPath<M>
where
    M: Model,
    M::Action: Clone,
{
    let mut path = Vec::new();
    let mut states = vec![init];
    while path.len() < max_steps {
        let state = states.last().expect("starts with init");
        let mut actions = Vec::new();
        model.actions(state, &mut actions);
        actions.retain(|a| !skip(a));
        let Some(chosen) = (!actions.is_empty())
            .then(|| schedule.pick(actions.len()))
            .flatten()
        else {
            break;
        };
        let action = actions[chosen].clone();
        let next = model.next_state(state, action.clone()).expect("enabled");
        path.push(action);
        states.push(next);
    }
    (path, states)
}
