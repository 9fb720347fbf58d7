//! A behaviour of a model as data: its states and the actions between them, in the model's own
//! types (as Stateright's discoveries are a `Path<State, Action>`). People read a path through
//! the `shown` module; code that drives an implementation along it reads the actions themselves.

/// An initial state, then each action with the state it reaches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Path<S, A> {
    init: S,
    steps: Vec<(A, S)>,
}

impl<S, A> Path<S, A> {
    /// The path of no steps that starts (and ends) in `init`.
    pub fn new(init: S) -> Self {
        Path {
            init,
            steps: Vec::new(),
        }
    }

    /// Extends the path by `action`, which reaches `state` from the current last state.
    pub fn push(&mut self, action: A, state: S) {
        self.steps.push((action, state));
    }

    pub fn init(&self) -> &S {
        &self.init
    }

    /// Each action with the state it reaches, in order.
    pub fn steps(&self) -> &[(A, S)] {
        &self.steps
    }

    /// The number of transitions (the initial state is not one).
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The state after `i` transitions: `state(0)` is the initial state.
    pub fn state(&self, i: usize) -> &S {
        match i {
            0 => &self.init,
            i => &self.steps[i - 1].1,
        }
    }

    pub fn last_state(&self) -> &S {
        self.steps.last().map_or(&self.init, |(_, s)| s)
    }

    /// Every state, the initial one first.
    pub fn states(&self) -> impl Iterator<Item = &S> {
        std::iter::once(&self.init).chain(self.steps.iter().map(|(_, s)| s))
    }

    pub fn actions(&self) -> impl Iterator<Item = &A> {
        self.steps.iter().map(|(a, _)| a)
    }

    /// Each transition as the state it leaves, the action, and the state it reaches.
    pub fn transitions(&self) -> impl Iterator<Item = (&S, &A, &S)> {
        self.states()
            .zip(&self.steps)
            .map(|(before, (action, after))| (before, action, after))
    }

    /// The actions, and the states they lead through (the initial one first).
    pub fn into_parts(self) -> (Vec<A>, Vec<S>) {
        let mut states = Vec::with_capacity(self.steps.len() + 1);
        states.push(self.init);
        let mut actions = Vec::with_capacity(self.steps.len());
        for (action, state) in self.steps {
            actions.push(action);
            states.push(state);
        }
        (actions, states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_lists_its_states_actions_and_transitions_in_order() {
        let mut path = Path::new(0u8);
        path.push('a', 1);
        path.push('b', 3);
        assert_eq!(path.len(), 2);
        assert_eq!(path.states().copied().collect::<Vec<_>>(), [0, 1, 3]);
        assert_eq!(path.actions().copied().collect::<Vec<_>>(), ['a', 'b']);
        assert_eq!(*path.state(0), 0);
        assert_eq!(*path.state(2), 3);
        assert_eq!(*path.last_state(), 3);
        let transitions: Vec<_> = path.transitions().map(|(b, a, t)| (*b, *a, *t)).collect();
        assert_eq!(transitions, [(0, 'a', 1), (1, 'b', 3)]);
        assert_eq!(path.into_parts(), (vec!['a', 'b'], vec![0, 1, 3]));
    }

    #[test]
    fn an_empty_path_ends_where_it_starts() {
        let path: Path<u8, char> = Path::new(7);
        assert!(path.is_empty());
        assert_eq!(*path.last_state(), 7);
        assert_eq!(path.transitions().count(), 0);
    }
}
