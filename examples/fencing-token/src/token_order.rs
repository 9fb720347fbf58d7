//! The abstract spec the design refines, `TokenOrder`: what storage may hold, whatever the
//! clients and their leases do. The lock service grants tokens in increasing order; storage
//! holds the write of one token at a time and only ever moves to a token at least as high, and
//! never past one granted. Leases, expiry and which client writes are not here: they are the
//! design's business, and the refinement says that none of it can make storage go back.

use loadbearing::Model;
use loadbearing::{Spec, Variables};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OrderState {
    /// The last token granted.
    pub granted: u8,
    /// The token of the write storage holds (0: none yet).
    pub stored: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderAction {
    /// The next token is granted.
    Grant,
    /// Storage takes a write with this token.
    Store(u8),
}

#[derive(Clone, Debug)]
pub struct TokenOrder {
    /// Tokens granted at most (the concrete model's bound).
    pub max_token: u8,
}

impl Model for TokenOrder {
    type State = OrderState;
    type Action = OrderAction;

    fn init_states(&self) -> Vec<OrderState> {
        vec![OrderState {
            granted: 0,
            stored: 0,
        }]
    }

    fn actions(&self, s: &OrderState, actions: &mut Vec<OrderAction>) {
        if s.granted < self.max_token {
            actions.push(OrderAction::Grant);
        }
        // Any granted token at least the stored one; the stored one again is a stutter.
        actions.extend((s.stored.max(1)..=s.granted).map(OrderAction::Store));
    }

    fn next_state(&self, s: &OrderState, action: OrderAction) -> Option<OrderState> {
        Some(match action {
            OrderAction::Grant => OrderState {
                granted: s.granted + 1,
                ..s.clone()
            },
            OrderAction::Store(token) => OrderState {
                stored: token,
                ..s.clone()
            },
        })
    }
}

impl Spec for TokenOrder {
    fn variables(&self, s: &OrderState) -> Variables {
        vec![("granted", s.granted.into()), ("stored", s.stored.into())]
    }
}
