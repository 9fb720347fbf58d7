//! The `actors` trace vocabulary: an actor system's own code run for real (`loadbearing
//! run-actors`), one line per delivery and per timeout, as the actors' wrapper logged them.
//! Every actor model reads it the same way: an event reports the model's `Deliver` or
//! `Timeout` action with the same actors and the same message or timer, and the checker keeps
//! the states where that action was enabled.
//!
//! ```text
//! {"v":2,"vocabulary":"actors","action":"Deliver","src":"owner","dst":"broker","msg":{"Commit":{"epoch":1,"offset":1,"row":{"contents":2,"deleted":false,"offset":1,"present":true}}}}
//! {"v":2,"vocabulary":"actors","action":"Deliver","src":"owner","dst":"store","msg":"Read"}
//! {"v":2,"vocabulary":"actors","action":"Timeout","actor":"zombie","timer":{"ZombieWrite":2}}
//! ```
//!
//! `msg` and `timer` are the model's own `Msg` and `Timer` as serde writes them; actors are
//! named as the model's swimlanes name them.

use std::fmt;

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Serialize};
use stateright::actor::{ActorModelAction, Id};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum ActorEvent {
    /// `dst` received `msg` from `src`.
    Deliver {
        src: String,
        dst: String,
        msg: serde_json::Value,
    },
    /// `actor`'s timer `timer` fired.
    Timeout {
        actor: String,
        timer: serde_json::Value,
    },
}

impl TraceEvent for ActorEvent {
    const VOCABULARY: &'static str = "actors";

    fn action(&self) -> &str {
        match self {
            ActorEvent::Deliver { .. } => "Deliver",
            ActorEvent::Timeout { .. } => "Timeout",
        }
    }
}

impl ActorEvent {
    /// The event a model action is, under the model's actor names; `None` for the actions a
    /// real run never logs (a lost message, a crash, a random choice).
    pub fn of<M: Serialize, T: Serialize, R>(
        action: &ActorModelAction<M, T, R>,
        name: fn(Id) -> &'static str,
    ) -> Option<ActorEvent> {
        match action {
            ActorModelAction::Deliver { src, dst, msg } => Some(ActorEvent::Deliver {
                src: name(*src).to_string(),
                dst: name(*dst).to_string(),
                msg: serde_json::to_value(msg).expect("an actor message serializes"),
            }),
            ActorModelAction::Timeout(id, timer) => Some(ActorEvent::Timeout {
                actor: name(*id).to_string(),
                timer: serde_json::to_value(timer).expect("an actor timer serializes"),
            }),
            ActorModelAction::Drop(_)
            | ActorModelAction::Crash(_)
            | ActorModelAction::Recover(_)
            | ActorModelAction::SelectRandom { .. } => None,
        }
    }
}

/// Nothing an actor event observes can contradict a step it reports: the event is the action
/// (`reports`), and the checker refuses it where the model does not enable it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoContradiction {}

impl fmt::Display for NoContradiction {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {}
    }
}

/// `Conform` for an actor model over the `actors` vocabulary, under its actor names.
#[macro_export]
macro_rules! conform_actors {
    ($model:ty, $name:path) => {
        impl loadbearing_trace::Conform for $model {
            type Event = $crate::infra::actors::trace::ActorEvent;
            type Contradiction = $crate::infra::actors::trace::NoContradiction;

            fn reports(
                &self,
                action: &<Self as loadbearing_refinement::Model>::Action,
                event: &$crate::infra::actors::trace::ActorEvent,
            ) -> bool {
                $crate::infra::actors::trace::ActorEvent::of(action, $name).as_ref() == Some(event)
            }

            fn observe(
                &self,
                _: &<Self as loadbearing_refinement::Model>::State,
                _: &<Self as loadbearing_refinement::Model>::State,
                _: &$crate::infra::actors::trace::ActorEvent,
            ) -> Result<(), $crate::infra::actors::trace::NoContradiction> {
                Ok(())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_trace::{parse_ndjson, to_ndjson};

    #[test]
    fn the_documented_lines_read_and_write_back() {
        let text = concat!(
            r#"{"v":2,"vocabulary":"actors","action":"Deliver","src":"owner","dst":"store","msg":{"Write":{"offset":1}}}"#,
            "\n",
            r#"{"v":2,"vocabulary":"actors","action":"Timeout","actor":"zombie","timer":{"ZombieWrite":2}}"#,
            "\n",
        );
        let events = parse_ndjson::<ActorEvent>(text).unwrap();
        assert_eq!(to_ndjson(&events), text);
        let err = parse_ndjson::<ActorEvent>(
            r#"{"v":2,"vocabulary":"actors","action":"Deliver","src":"owner","msg":1}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("missing field `dst`"), "{err}");
    }
}
