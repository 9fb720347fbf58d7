#![doc = include_str!("model_835.md")]

use loadbearing_refinement::Shown;
use loadbearing_refinement::{EventuallyAlways, Refinement, Spec, Variables};
use loadbearing_refinement::{Model, Property};

use crate::infra::knobs::{Flag, Nat};
use crate::infra::vocab::{Cell, Offsets, Op, Ops};
use crate::one_key::{self, OneKey};
use crate::{Configured, Guard};

/// How many rebalances (each leaving one zombie incarnation) a behaviour may have.
pub const REBALANCE_LIMIT: u8 = 2;
/// How many generation bumps that assign the owner nothing new a behaviour may have.
pub const GEN_BUMP_LIMIT: u8 = 2;
/// How many new owners may recover and resume.
pub const HANDOVER_LIMIT: u8 = 2;
/// One zombie incarnation per possible rebalance.
const ZOMBIES: usize = REBALANCE_LIMIT as usize;

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Kafka835State {
    pub op: Ops,
    /// The key's record in the compacted topic.
    pub store: Cell,
    pub owner_pos: u8,
    pub owner_loaded: bool,
    pub owner_state: Offsets,
    pub overwrote: bool,
    /// The durable committed input offset.
    pub committed: u8,
    /// offsetToCommit: what the owner's next transaction commits.
    pub scheduled: u8,
    /// The offset of the snapshot the owner last recovered: the replay filter's floor.
    pub recovered_at: u8,
    pub live_gen: u8,
    /// Per zombie incarnation (index `z - 1` for the spec's `z`).
    pub z_alive: [bool; ZOMBIES],
    pub z_captured_gen: [u8; ZOMBIES],
    pub z_carries_offset: [bool; ZOMBIES],
    pub rebalances: u8,
    pub handovers: u8,
    /// The owner's published generation, the one its transactional commits carry.
    pub o_captured_gen: u8,
    pub gen_bumps: u8,
}

impl Kafka835State {
    /// The initial state over the event log `op`.
    pub fn initial(op: Ops) -> Kafka835State {
        Kafka835State {
            op,
            store: Cell::ABSENT,
            owner_pos: 0,
            owner_loaded: true,
            owner_state: Offsets::EMPTY,
            overwrote: false,
            committed: 0,
            scheduled: 0,
            recovered_at: 0,
            live_gen: 1,
            z_alive: [false; ZOMBIES],
            z_captured_gen: [0; ZOMBIES],
            z_carries_offset: [false; ZOMBIES],
            rebalances: 0,
            handovers: 0,
            o_captured_gen: 1,
            gen_bumps: 0,
        }
    }

    /// The owner's token is the coordinator's generation, so its transactions are accepted.
    fn owner_current(&self) -> bool {
        self.o_captured_gen == self.live_gen
    }

    /// The offset recovery reads as the filter's floor: the record's, or 0 for none.
    fn recovery_floor(&self) -> u8 {
        if self.store.present {
            self.store.offset
        } else {
            0
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kafka835Action {
    /// The owner folds a batch up to offset `o` and flushes it (the accepted `OwnerFold`).
    OwnerFold(u8),
    /// The owner's stale token is refused: `OwnerFold`'s spuriously fenced branch.
    OwnerFenced,
    OwnerMarker,
    OwnerRecover,
    /// A new owner resumes at input offset `c`.
    Handover(u8),
    Rebalance,
    /// Zombie incarnation `z` (1-based, as the spec numbers it) polls.
    Poll(u8),
    /// Zombie `z` commits the correct fold at offset `m`.
    ZombieCommit(u8, u8),
    GenBump,
    OwnerRefresh,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kafka835 {
    pub max_offset: u8,
    pub coupled: bool,
    pub seeded: bool,
    pub atomic_bind: bool,
    pub refresh: bool,
    pub replay_filter: bool,
}

/// The weakly-fair groups, as the spec's `WF_vars` conjuncts.
const FAIR: [&str; 4] = ["OwnerFold", "OwnerRecover", "OwnerRefresh", "OwnerMarker"];

impl Kafka835 {
    fn type_ok(&self, s: &Kafka835State) -> bool {
        let max = self.max_offset;
        let gens = max + 5;
        one_key::row_in_range(s.store, max)
            && s.owner_pos <= max
            && s.owner_state.within(1, max)
            && s.committed <= max
            && s.scheduled <= max
            && s.recovered_at <= max
            && (1..=gens).contains(&s.live_gen)
            && s.z_captured_gen.iter().all(|&g| g <= gens)
            && s.rebalances <= REBALANCE_LIMIT
            && s.handovers <= HANDOVER_LIMIT
            && s.o_captured_gen <= gens
            && s.gen_bumps <= GEN_BUMP_LIMIT
    }

    /// The accepted `OwnerFold` up to `o`: inside the replay window (`o <= recoveredAt`) the
    /// filter drops the batch (no write, no transaction) and only schedules `o`.
    fn owner_fold(&self, s: &Kafka835State, o: u8) -> Kafka835State {
        let mut next = s.clone();
        let start = if self.replay_filter {
            (s.owner_pos + 1).max(s.recovered_at + 1)
        } else {
            s.owner_pos + 1
        };
        let new_state = s.op.fold_onto(s.owner_state, start, o);
        let dropped = self.replay_filter && o <= s.recovered_at;
        if !dropped {
            next.store = match s.op.at(o) {
                Op::Persist => Cell::snap(o, new_state),
                Op::Delete => Cell::tomb(o),
            };
            next.overwrote |= s.store.would_overwrite(o);
        }
        next.committed = match (self.atomic_bind, dropped) {
            // The transaction commits the offset scheduled before it: the one-round lag.
            (true, false) => s.scheduled,
            (true, true) => s.committed,
            (false, _) => o,
        };
        next.scheduled = o;
        next.owner_state = new_state;
        next.owner_loaded = dropped || s.op.at(o) == Op::Persist;
        next.owner_pos = o;
        next
    }

    /// Whether zombie `z`'s commit lands: under the binding it is gated on its captured
    /// generation when it carries an offset; a plain produce is gated by nothing.
    fn zombie_accepted(&self, s: &Kafka835State, z: usize) -> bool {
        !self.atomic_bind || !s.z_carries_offset[z] || s.z_captured_gen[z] == s.live_gen
    }
}

impl Model for Kafka835 {
    type State = Kafka835State;
    type Action = Kafka835Action;

    fn init_states(&self) -> Vec<Kafka835State> {
        Ops::all(self.max_offset)
            .map(Kafka835State::initial)
            .collect()
    }

    fn actions(&self, s: &Kafka835State, actions: &mut Vec<Kafka835Action>) {
        let max = self.max_offset;
        if s.owner_pos < max && s.owner_loaded {
            if s.owner_current() {
                actions.extend((s.owner_pos + 1..=max).map(Kafka835Action::OwnerFold));
            } else {
                actions.push(Kafka835Action::OwnerFenced);
            }
        }
        if !s.owner_loaded {
            actions.push(Kafka835Action::OwnerRecover);
        }
        if s.handovers < HANDOVER_LIMIT && s.store.present {
            if self.atomic_bind {
                if s.committed <= s.store.offset {
                    actions.push(Kafka835Action::Handover(s.committed));
                }
            } else {
                actions.extend((0..=s.store.offset).map(Kafka835Action::Handover));
            }
        }
        if self.atomic_bind && s.committed != s.scheduled && s.owner_current() {
            actions.push(Kafka835Action::OwnerMarker);
        }
        if s.rebalances < REBALANCE_LIMIT {
            actions.push(Kafka835Action::Rebalance);
        }
        for z in 0..ZOMBIES {
            if s.z_alive[z] && s.z_captured_gen[z] != s.live_gen {
                actions.push(Kafka835Action::Poll(z as u8 + 1));
            }
        }
        if s.gen_bumps < GEN_BUMP_LIMIT {
            actions.push(Kafka835Action::GenBump);
        }
        if self.refresh && !s.owner_current() {
            actions.push(Kafka835Action::OwnerRefresh);
        }
        for z in 0..ZOMBIES {
            if s.z_alive[z] {
                actions.extend((1..=max).map(|m| Kafka835Action::ZombieCommit(z as u8 + 1, m)));
            }
        }
    }

    fn next_state(&self, s: &Kafka835State, action: Kafka835Action) -> Option<Kafka835State> {
        let mut next = s.clone();
        match action {
            Kafka835Action::OwnerFold(o) => return Some(self.owner_fold(s, o)),
            Kafka835Action::OwnerFenced => {
                // The commit is refused: the flow tears down and resumes from `committed`.
                next.owner_loaded = false;
                next.owner_pos = s.committed;
            }
            Kafka835Action::OwnerMarker => next.committed = s.scheduled,
            Kafka835Action::OwnerRecover => {
                next.owner_state = s.store.live_contents();
                next.recovered_at = s.recovery_floor();
                next.owner_loaded = true;
            }
            Kafka835Action::Handover(c) => {
                next.owner_pos = c;
                next.committed = c;
                next.scheduled = c;
                next.recovered_at = s.store.offset;
                next.owner_state = s.store.live_contents();
                next.owner_loaded = true;
                next.handovers = s.handovers + 1;
                // The new owner captures the generation on its assignment.
                next.o_captured_gen = s.live_gen;
            }
            Kafka835Action::Rebalance => {
                let z = s.rebalances as usize;
                next.z_alive[z] = true;
                // The pre-bump generation, stale from this step on.
                next.z_captured_gen[z] = s.live_gen;
                next.z_carries_offset[z] = self.seeded;
                next.live_gen = s.live_gen + 1;
                next.rebalances = s.rebalances + 1;
            }
            Kafka835Action::Poll(z) => {
                let z = z as usize - 1;
                next.z_captured_gen[z] = s.live_gen;
                // Coupled: the callback that captures the generation tears the flow down.
                next.z_alive[z] = !self.coupled;
            }
            Kafka835Action::ZombieCommit(z, m) => {
                if self.zombie_accepted(s, z as usize - 1) {
                    next.store = Cell::correct_fold(s.op, m);
                    next.overwrote |= s.store.would_overwrite(m);
                    if self.atomic_bind {
                        next.committed = m;
                    }
                }
            }
            Kafka835Action::GenBump => {
                next.live_gen = s.live_gen + 1;
                next.gen_bumps = s.gen_bumps + 1;
            }
            Kafka835Action::OwnerRefresh => next.o_captured_gen = s.live_gen,
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("RefDurableOK", one_key::ref_durable_ok::<Self>),
            Property::always("RefTypeOK", one_key::ref_type_ok::<Self>),
            Property::always("INV_NoStaleOverwrite", |_, s: &Kafka835State| !s.overwrote),
            Property::always("INV_CaptureCoupled", |_, s: &Kafka835State| {
                (0..ZOMBIES).all(|z| !s.z_alive[z] || s.z_captured_gen[z] != s.live_gen)
            }),
            Property::always("INV_NoReplayGap", |_, s: &Kafka835State| {
                !s.store.present || s.committed == s.store.offset
            }),
            Property::always("INV_CommittedNeverAhead", |m: &Self, s: &Kafka835State| {
                !(m.atomic_bind && s.store.present) || s.committed <= s.store.offset
            }),
            Property::always("TypeOK", |m: &Self, s: &Kafka835State| m.type_ok(s)),
            Property::eventually("RefLive", one_key::ref_live::<Self>),
            // Both overlapping zombies were torn down, so the fence met two stale generations.
            Property::sometimes("ZombiesFenced", |_, s: &Kafka835State| {
                s.rebalances == REBALANCE_LIMIT && s.z_alive.iter().all(|alive| !alive)
            }),
            // A new owner resumed below its recovered snapshot: the replay window is real.
            Property::sometimes("ReplayWindowOpen", |_, s: &Kafka835State| {
                s.handovers > 0 && s.owner_loaded && s.owner_pos < s.recovered_at
            }),
        ]
    }
}

impl OneKey for Kafka835 {
    fn max_offset(&self) -> u8 {
        self.max_offset
    }
    fn log(s: &Kafka835State) -> Ops {
        s.op
    }
    fn row(s: &Kafka835State) -> Cell {
        s.store
    }
}

/// A function over the zombie incarnations, as TLC prints it.
fn render<T: Copy + Into<Shown>>(values: &[T]) -> Shown {
    Shown::tuple(values.iter().copied())
}

impl Spec for Kafka835 {
    fn variables(&self, s: &Kafka835State) -> Variables {
        vec![
            ("op", s.op.shown(self.max_offset)),
            ("store", s.store.into()),
            ("ownerPos", s.owner_pos.into()),
            ("ownerLoaded", s.owner_loaded.into()),
            ("ownerState", s.owner_state.into()),
            ("overwrote", s.overwrote.into()),
            ("committed", s.committed.into()),
            ("scheduled", s.scheduled.into()),
            ("recoveredAt", s.recovered_at.into()),
            ("liveGen", s.live_gen.into()),
            ("zAlive", render(&s.z_alive)),
            ("zCapturedGen", render(&s.z_captured_gen)),
            ("zCarriesOffset", render(&s.z_carries_offset)),
            ("rebalances", s.rebalances.into()),
            ("handovers", s.handovers.into()),
            ("oCapturedGen", s.o_captured_gen.into()),
            ("genBumps", s.gen_bumps.into()),
        ]
    }

    fn eventually_always(&self) -> Vec<EventuallyAlways<Self>> {
        vec![EventuallyAlways::new(
            "LIVE_CommitCatchesUp",
            |_, s: &Kafka835State| s.committed == s.scheduled,
        )]
    }

    fn fairness_groups(&self) -> Vec<String> {
        FAIR.iter().map(|g| g.to_string()).collect()
    }

    fn fairness_group(&self, action: &Kafka835Action) -> Option<usize> {
        match action {
            Kafka835Action::OwnerFold(_) | Kafka835Action::OwnerFenced => Some(0),
            Kafka835Action::OwnerRecover => Some(1),
            Kafka835Action::OwnerRefresh => Some(2),
            Kafka835Action::OwnerMarker => Some(3),
            Kafka835Action::Handover(_)
            | Kafka835Action::Rebalance
            | Kafka835Action::Poll(_)
            | Kafka835Action::ZombieCommit(..)
            | Kafka835Action::GenBump => None,
        }
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<Kafka835State>>> {
        vec![one_key::ref_safe_spec(self)]
    }

    fn actor(&self, action: &Kafka835Action) -> String {
        match action {
            Kafka835Action::OwnerFold(_)
            | Kafka835Action::OwnerFenced
            | Kafka835Action::OwnerMarker
            | Kafka835Action::OwnerRecover
            | Kafka835Action::OwnerRefresh => "owner".into(),
            Kafka835Action::Handover(_) => "new owner".into(),
            Kafka835Action::Rebalance | Kafka835Action::GenBump => "coordinator".into(),
            Kafka835Action::Poll(z) | Kafka835Action::ZombieCommit(z, _) => {
                format!("zombie {z}")
            }
        }
    }
}

crate::params! {
    Kafka835 {
        max_offset: pub const MAX_OFFSET: Nat = crate::infra::vocab::MAX_OFFSET;
        coupled: pub const COUPLED: Flag = super::model::Kafka::COUPLED;
        seeded: pub const SEEDED: Flag = Flag::new(
            "Seeded",
            true,
            "a zombie's flush carries an input offset, so it is gated",
        );
        atomic_bind: pub const ATOMIC_BIND: Flag = Flag::new(
            "AtomicBind",
            true,
            "the snapshot write and the input-offset commit ride one generation-gated transaction",
        );
        refresh: pub const REFRESH: Flag = Flag::new(
            "Refresh",
            true,
            "the owner re-publishes the live generation after every poll",
        );
        replay_filter: pub const REPLAY_FILTER: Flag = Flag::new(
            "ReplayFilter",
            true,
            "events at or below the recovered snapshot's offset are dropped on replay",
        );
    }
}

impl Configured for Kafka835 {
    const NAME: &'static str = "Kafka835";
    const DOC: &'static str = include_str!("model_835.md");
    type Params = Kafka835;
    const GUARDS: &'static [Guard] = &[
        Guard::off("capture coupling", Self::COUPLED),
        Guard::off("seed", Self::SEEDED),
        Guard::off("atomic binding", Self::ATOMIC_BIND),
        Guard::off("post-poll refresh", Self::REFRESH),
        Guard::off("replay filter", Self::REPLAY_FILTER),
    ];

    fn build(params: Kafka835) -> Self {
        params
    }
}
