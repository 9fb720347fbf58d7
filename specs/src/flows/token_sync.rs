#![doc = include_str!("token_sync.md")]

use loadbearing_refinement::{EventuallyAlways, Spec, Variables};
use loadbearing_refinement::{Model, Property};

use crate::infra::knobs::{Flag, Nat};
use crate::{Configured, Guard};

/// Generations are 16-bit: the states grow only as MaxGen squared, so generations past a byte
/// are in reach.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TokenState {
    /// The coordinator's current generation: the truth the token must follow.
    pub live_gen: u16,
    /// The owner's published generation, the one its transactional commits carry.
    pub token: u16,
    /// An assignment callback is waiting to be delivered (an assigning bump happened).
    pub owed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenAction {
    AssigningBump,
    SilentBump,
    OwnerCapture,
    OwnerRefresh,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenSync {
    pub max_gen: u16,
    /// The assignment callback captures the current generation.
    pub capture: bool,
    /// The post-poll `groupMetadata()` read refreshes the token.
    pub refresh: bool,
    /// A platform fact: a generation bump may fire no callback for this member (KIP-848).
    pub allow_silent: bool,
}

/// The weakly-fair groups, one per sync mechanism, as the spec's `WF_vars` conjuncts.
const FAIR: [&str; 2] = ["OwnerCapture", "OwnerRefresh"];

impl TokenSync {
    fn type_ok(&self, s: &TokenState) -> bool {
        let gens = 1..=self.max_gen;
        gens.contains(&s.live_gen) && gens.contains(&s.token)
    }
}

impl Model for TokenSync {
    type State = TokenState;
    type Action = TokenAction;

    fn init_states(&self) -> Vec<TokenState> {
        vec![TokenState {
            live_gen: 1,
            token: 1,
            owed: false,
        }]
    }

    fn actions(&self, s: &TokenState, actions: &mut Vec<TokenAction>) {
        if s.live_gen < self.max_gen {
            actions.push(TokenAction::AssigningBump);
            if self.allow_silent {
                actions.push(TokenAction::SilentBump);
            }
        }
        if self.capture && s.owed {
            actions.push(TokenAction::OwnerCapture);
        }
        if self.refresh && s.token != s.live_gen {
            actions.push(TokenAction::OwnerRefresh);
        }
    }

    fn next_state(&self, s: &TokenState, action: TokenAction) -> Option<TokenState> {
        let mut next = s.clone();
        match action {
            TokenAction::AssigningBump => {
                next.live_gen = s.live_gen + 1;
                next.owed = true;
            }
            TokenAction::SilentBump => next.live_gen = s.live_gen + 1,
            TokenAction::OwnerCapture | TokenAction::OwnerRefresh => {
                next.token = s.live_gen;
                next.owed = false;
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("TokenNeverLeads", |_, s: &TokenState| s.token <= s.live_gen),
            Property::always("TypeOK", |m: &Self, s: &TokenState| m.type_ok(s)),
            // The token catches up with a bump at the last generation, so a holding `Synced`
            // is not the initial agreement kept by a generation that never moves.
            Property::sometimes("SyncedAfterBump", |m: &Self, s: &TokenState| {
                s.live_gen == m.max_gen && s.token == s.live_gen && m.max_gen > 1
            }),
        ]
    }
}

impl Spec for TokenSync {
    fn variables(&self, s: &TokenState) -> Variables {
        vec![
            ("liveGen", s.live_gen.into()),
            ("token", s.token.into()),
            ("owed", s.owed.into()),
        ]
    }

    fn eventually_always(&self) -> Vec<EventuallyAlways<Self>> {
        vec![EventuallyAlways::new("Synced", |_, s: &TokenState| {
            s.token == s.live_gen
        })]
    }

    fn fairness_groups(&self) -> Vec<String> {
        FAIR.iter().map(|g| g.to_string()).collect()
    }

    fn fairness_group(&self, action: &TokenAction) -> Option<usize> {
        match action {
            TokenAction::OwnerCapture => Some(0),
            TokenAction::OwnerRefresh => Some(1),
            TokenAction::AssigningBump | TokenAction::SilentBump => None,
        }
    }

    fn actor(&self, action: &TokenAction) -> String {
        match action {
            TokenAction::AssigningBump | TokenAction::SilentBump => "coordinator".into(),
            TokenAction::OwnerCapture | TokenAction::OwnerRefresh => "owner".into(),
        }
    }
}

crate::params! {
    TokenSync {
        max_gen: pub const MAX_GEN: Nat<u16> = Nat::new(
            "MaxGen",
            1,
            u16::MAX as u64,
            3,
            "the coordinator's generation runs 1..=MaxGen",
        )
        .max_because("generations are 16-bit");
        capture: pub const CAPTURE: Flag = Flag::new(
            "Capture",
            true,
            "an owed assignment callback captures the current generation",
        );
        refresh: pub const REFRESH: Flag = Flag::new(
            "Refresh",
            true,
            "the post-poll groupMetadata() read syncs the token to the current generation",
        );
        allow_silent: pub const ALLOW_SILENT: Flag = Flag::new(
            "AllowSilent",
            true,
            "platform fact: a bump may fire no callback for this member (KIP-848)",
        );
    }
}

impl Configured for TokenSync {
    const NAME: &'static str = "TokenSync";
    const DOC: &'static str = include_str!("token_sync.md");
    type Params = TokenSync;
    const GUARDS: &'static [Guard] = &[
        Guard::off("post-poll refresh", Self::REFRESH),
        Guard::off("assignment capture", Self::CAPTURE),
    ];

    fn build(params: TokenSync) -> Self {
        params
    }
}

use crate::flows::token_sync_trace::TokenEvent;
use loadbearing_trace::Conform;

/// Why an owner's event contradicts a TokenSync step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenContradiction {
    #[error("the owner's token became {seen}, the model's live generation is {model}")]
    Token { seen: u16, model: u16 },
    #[error(
        "the commit was {}, but the token {token} is {} generation {live}",
        if *accepted { "accepted" } else { "refused" },
        if token == live { "the live" } else { "behind the live" }
    )]
    Commit {
        accepted: bool,
        token: u16,
        live: u16,
    },
    #[error("the run ended, but under weak fairness the model must still take {pending}")]
    NotQuiescent { pending: String },
}

impl Conform for TokenSync {
    type Event = TokenEvent;
    type Contradiction = TokenContradiction;

    fn reports(&self, action: &TokenAction, event: &TokenEvent) -> bool {
        matches!(
            (action, event),
            (TokenAction::AssigningBump, TokenEvent::AssigningBump)
                | (TokenAction::SilentBump, TokenEvent::SilentBump)
                | (
                    TokenAction::OwnerRefresh | TokenAction::OwnerCapture,
                    TokenEvent::OwnerRefresh { .. }
                )
        )
    }

    fn observe(
        &self,
        _before: &TokenState,
        after: &TokenState,
        event: &TokenEvent,
    ) -> Result<(), TokenContradiction> {
        match event {
            TokenEvent::OwnerRefresh { generation } if *generation != after.token => {
                Err(TokenContradiction::Token {
                    seen: *generation,
                    model: after.token,
                })
            }
            TokenEvent::Commit { accepted } if *accepted != (after.token == after.live_gen) => {
                Err(TokenContradiction::Commit {
                    accepted: *accepted,
                    token: after.token,
                    live: after.live_gen,
                })
            }
            TokenEvent::Quiesced => match crate::infra::fairness::fair_actions_left(self, after) {
                None => Ok(()),
                Some(pending) => Err(TokenContradiction::NotQuiescent { pending }),
            },
            _ => Ok(()),
        }
    }

    fn is_stutter(&self, event: &TokenEvent) -> bool {
        matches!(event, TokenEvent::Commit { .. } | TokenEvent::Quiesced)
    }

    /// Generations past `MaxGen`.
    fn beyond(&self, events: &[TokenEvent]) -> Option<loadbearing_trace::Beyond> {
        events
            .iter()
            .enumerate()
            .find_map(|(i, event)| match *event {
                TokenEvent::OwnerRefresh { generation } => {
                    TokenSync::MAX_GEN.passed_by(self.max_gen as u64, generation as u64, i, || {
                        format!("generation {generation}")
                    })
                }
                _ => None,
            })
    }

    fn disabled_reason(&self, s: &TokenState, event: &TokenEvent) -> Option<String> {
        Some(match event {
            TokenEvent::AssigningBump | TokenEvent::SilentBump if s.live_gen >= self.max_gen => {
                format!("the generation is at its last, {}", self.max_gen)
            }
            TokenEvent::SilentBump => "a bump always reaches the member by a callback here \
                                       (AllowSilent = FALSE)"
                .into(),
            TokenEvent::OwnerRefresh { .. } if s.token == s.live_gen => {
                format!("the token is the live generation {} already", s.live_gen)
            }
            TokenEvent::OwnerRefresh { .. } => {
                "the owner has no way to take the live generation now".into()
            }
            _ => return None,
        })
    }
}
