//! What weak fairness still demands at the end of a trace, for the models whose traces end
//! `Quiesced` (nothing more will happen).

use std::fmt;

/// The weakly-fair actions `model` still has enabled in `state`, by name: a trace that ends
/// quiescent there (nothing more will happen) is not a fair behaviour unless this is empty.
pub(crate) fn fair_actions_left<M>(model: &M, state: &M::State) -> Option<String>
where
    M: loadbearing_refinement::Spec,
    M::Action: fmt::Debug,
{
    let mut enabled = Vec::new();
    model.actions(state, &mut enabled);
    let pending: Vec<String> = enabled
        .iter()
        .filter(|a| model.fairness_group(a).is_some())
        .map(|a| format!("{a:?}"))
        .collect();
    (!pending.is_empty()).then(|| pending.join(", "))
}
