//! Conformance of the generation token (the group metadata each transaction of the group
//! commit reads, `impls/kafka/src/group_commit.rs` with `LiveGroupMetadata`) to the TokenSync
//! model (K-2), both ways.
//!
//! The token is the generation the owner's transactional offset commits carry. Ours is read
//! from the consumer at every transaction: TokenSync's `Refresh`, with no capture
//! (`tokensync_refresh`). Two planted mutants stand beside it: a token captured in the
//! assignment callback only (`Capture` alone), and a token read once and kept (neither).
//!
//! Implementation → model: bumps of the coordinator's generation, each followed by the
//! owner's commits; each commit's read of the token is traced (a changed token is the model's
//! `OwnerRefresh`), and whether the coordinator accepted it (`Commit`, an observation: accepted
//! exactly when the token is live). The run ends `Quiesced`: under weak fairness the model must
//! have nothing left to do, so a token left behind diverges there. In memory the harness is
//! the coordinator and bumps silently or with a callback (a KIP-848 coordinator may do both,
//! `AllowSilent`); on Kafka a second member joins the group and leaves it, and the coordinator
//! moves the generation under the classic protocol, which always calls back (`AllowSilent`
//! observed false). The design must conform on both; the frozen token must diverge on both; the
//! captured one diverges only where bumps can be silent, as the model says
//! (`tokensync_capture_assigning` holds), so it runs in memory.
//!
//! Model → implementation (in memory): `tokensync_capture` and `tokensync_neither`'s
//! counterexamples (a silent bump) are driven through their mutant, whose next commit is then
//! refused with nothing to come that resyncs it, and through the design, whose commit lands.

use std::sync::{Arc, Mutex};

use loadbearing_impls_kafka::group_commit::{
    CommitError, GroupCommit, GroupCommitConfig, GroupMetadata, GroupMetadataSource,
    InputPartition, MemProducer, TxnProducer,
};
use loadbearing_impls_kafka::trace::no_trace;
use loadbearing_specs::flows::token_sync::{TokenAction, TokenSync};
use loadbearing_specs::flows::token_sync_trace::TokenEvent;

use crate::backend::BackendKind;
use crate::error::{Error, HarnessError};
use crate::must_fail::{replay_each, Build, Showed};
use crate::producer::PRODUCERS;
use crate::replays::Violation;
use crate::schedule::{Schedule, Seeded};
use crate::target::{Expect, ModelName, Settings, Target, TargetResult};
use crate::target_id::TargetId;

/// How the owner comes by its token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    /// Read from the consumer at every transaction: the design.
    Live,
    /// Taken in the assignment callback only (planted mutant).
    Captured,
    /// Read once and kept (planted mutant).
    Frozen,
}

pub struct TokenSyncTarget {
    id: TargetId,
    sync: Sync,
    backends: &'static [BackendKind],
}

const IN_MEMORY: &[BackendKind] = &[BackendKind::Memory];

pub static TOKEN_SYNC: TokenSyncTarget = TokenSyncTarget {
    id: TargetId::TokenSync,
    sync: Sync::Live,
    backends: PRODUCERS,
};

pub static TOKEN_SYNC_CAPTURED: TokenSyncTarget = TokenSyncTarget {
    id: TargetId::TokenSyncCaptured,
    sync: Sync::Captured,
    backends: IN_MEMORY,
};

pub static TOKEN_SYNC_FROZEN: TokenSyncTarget = TokenSyncTarget {
    id: TargetId::TokenSyncFrozen,
    sync: Sync::Frozen,
    backends: PRODUCERS,
};

impl Target for TokenSyncTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<TokenSync>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        self.backends
    }

    fn expect(&self) -> Expect {
        match self.sync {
            Sync::Live => Expect::Conforms,
            Sync::Captured | Sync::Frozen => Expect::Diverges,
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        match settings.backend.kind() {
            #[cfg(feature = "kafka")]
            BackendKind::Kafka => {
                let run = on_the_broker::join_and_leave(settings.backend.address()?, self.sync)?;
                result.tally(&design(run.bumps(), false), &run.events);
            }
            _ => {
                let mut schedule = Seeded::new(settings.seed);
                for _ in 0..settings.traces {
                    let bumps = script(&mut schedule);
                    let run = in_memory(self.sync, &bumps, &mut schedule)?;
                    result.tally(&design(run.bumps(), true), &run.events);
                }
            }
        }
        replay_counterexamples(self.id, self.sync, result)
    }
}

/// The design's model: the refresh alone, over `bumps` bumps.
fn design(bumps: u16, allow_silent: bool) -> TokenSync {
    TokenSync {
        max_gen: bumps + 1,
        capture: false,
        refresh: true,
        allow_silent,
    }
}

/// The owner's token as the group commit reads it, with every read's generation kept.
pub struct Token {
    live: Arc<dyn GroupMetadataSource>,
    sync: Sync,
    held: Mutex<Option<GroupMetadata>>,
    reads: Mutex<Vec<i32>>,
}

impl Token {
    pub fn new(live: Arc<dyn GroupMetadataSource>, sync: Sync) -> Arc<Token> {
        let held = Mutex::new(live.current());
        Arc::new(Token {
            live,
            sync,
            held,
            reads: Mutex::new(Vec::new()),
        })
    }

    /// The assignment callback ran: a captured token takes the generation now.
    pub fn on_assignment(&self) {
        if self.sync == Sync::Captured {
            *lock(&self.held) = self.live.current();
        }
    }

    /// The generations read since the last call.
    fn take_reads(&self) -> Vec<i32> {
        std::mem::take(&mut *lock(&self.reads))
    }
}

impl GroupMetadataSource for Token {
    fn current(&self) -> Option<GroupMetadata> {
        let meta = match self.sync {
            Sync::Live => self.live.current(),
            Sync::Captured | Sync::Frozen => lock(&self.held).clone(),
        };
        if let Some(m) = &meta {
            lock(&self.reads).push(m.generation_id);
        }
        meta
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records a run: real generations mapped to the model's (the first is 1, each bump adds one).
#[derive(Default)]
pub struct Trace {
    pub events: Vec<TokenEvent>,
    /// The real generation of each model generation, in order.
    generations: Vec<i32>,
    token: u16,
}

impl Trace {
    fn new(first: i32) -> Trace {
        Trace {
            generations: vec![first],
            token: 1,
            ..Trace::default()
        }
    }

    /// The bumps seen: the model's generations run `1..=bumps + 1`.
    fn bumps(&self) -> u16 {
        (self.generations.len() - 1) as u16
    }

    /// The generation moved to `to`; an assigning bump runs the owner's callback.
    fn bump(&mut self, to: i32, assigning: bool, token: &Token) {
        if assigning {
            token.on_assignment();
        }
        self.generations.push(to);
        self.events.push(if assigning {
            TokenEvent::AssigningBump
        } else {
            TokenEvent::SilentBump
        });
    }

    /// A commit: the token it read (if it changed, the model's refresh) and its outcome.
    fn commit(&mut self, reads: &[i32], outcome: &Result<(), CommitError>) -> Result<(), Error> {
        for &g in reads {
            let model = self
                .generations
                .iter()
                .position(|&r| r == g)
                .map(|i| i as u16 + 1)
                .ok_or_else(|| HarnessError::outside("the token's generation", g))?;
            if model != self.token {
                self.token = model;
                self.events
                    .push(TokenEvent::OwnerRefresh { generation: model });
            }
        }
        let accepted = match outcome {
            Ok(()) => true,
            Err(CommitError::Fenced { .. } | CommitError::AlreadyFenced { .. }) => false,
            Err(e) => return Err(HarnessError::failed("the owner's commit")(e)),
        };
        self.events.push(TokenEvent::Commit { accepted });
        Ok(())
    }

    fn finish(mut self) -> Trace {
        self.events.push(TokenEvent::Quiesced);
        self
    }
}

fn commit<P: TxnProducer>(
    gc: &GroupCommit<P>,
    token: &Token,
    trace: &mut Trace,
) -> Result<(), Error> {
    let outcome = gc.commit_now().map(|_| ());
    trace.commit(&token.take_reads(), &outcome)
}

/// A seeded run: one or two bumps, each silent or not.
fn script(schedule: &mut dyn Schedule) -> Vec<bool> {
    let bumps = 1 + schedule.below(2) as usize;
    (0..bumps).map(|_| schedule.below(2) == 0).collect()
}

/// The in-memory coordinator: the generation its commits check, and the generation the
/// member's consumer reports (the same, as soon as a bump lands).
struct Coordinator {
    producer: MemProducer,
    reported: Arc<Mutex<i32>>,
}

impl Coordinator {
    fn new() -> Coordinator {
        let producer = MemProducer::new();
        producer.log().live_generation = Some(1);
        Coordinator {
            producer,
            reported: Arc::new(Mutex::new(1)),
        }
    }

    fn bump(&self) -> i32 {
        let mut log = self.producer.log();
        let next = log.live_generation.unwrap_or(0) + 1;
        log.live_generation = Some(next);
        *lock(&self.reported) = next;
        next
    }

    fn consumer(&self) -> Arc<dyn GroupMetadataSource> {
        let reported = self.reported.clone();
        Arc::new(move || {
            Some(GroupMetadata {
                group_id: "conform".into(),
                generation_id: *lock(&reported),
                member_id: "owner".into(),
                group_instance_id: None,
            })
        })
    }
}

/// An owner over the in-memory coordinator, traced.
struct InMemory {
    coordinator: Coordinator,
    token: Arc<Token>,
    gc: GroupCommit<MemProducer>,
    trace: Trace,
}

impl InMemory {
    fn new(sync: Sync) -> InMemory {
        let coordinator = Coordinator::new();
        let token = Token::new(coordinator.consumer(), sync);
        let gc = GroupCommit::new(
            coordinator.producer.clone(),
            GroupCommitConfig::new(InputPartition::new("input", 0), 1),
            token.clone(),
            no_trace(),
        );
        InMemory {
            coordinator,
            token,
            gc,
            trace: Trace::new(1),
        }
    }

    fn bump(&mut self, assigning: bool) {
        let g = self.coordinator.bump();
        self.trace.bump(g, assigning, &self.token);
    }

    fn commit(&mut self) -> Result<(), Error> {
        commit(&self.gc, &self.token, &mut self.trace)
    }
}

fn in_memory(sync: Sync, bumps: &[bool], schedule: &mut dyn Schedule) -> Result<Trace, Error> {
    let mut owner = InMemory::new(sync);
    owner.commit()?;
    for &assigning in bumps {
        owner.bump(assigning);
        for _ in 0..1 + schedule.below(2) {
            owner.commit()?;
        }
    }
    Ok(owner.trace.finish())
}

/// What a driven counterexample showed: the owner's commit after the path, refused.
fn drive(path: &[TokenAction], sync: Sync) -> Result<Trace, Error> {
    let mut owner = InMemory::new(sync);
    for action in path {
        match action {
            TokenAction::AssigningBump => owner.bump(true),
            TokenAction::SilentBump => owner.bump(false),
            // The owner's own steps are what the implementation does by itself.
            TokenAction::OwnerCapture | TokenAction::OwnerRefresh => {}
        }
    }
    // The path ends where the model stutters: the owner's next flush commits.
    owner.commit()?;
    Ok(owner.trace.finish())
}

/// Whether the run showed `violation`: its last commit was refused for a stale generation.
fn shows(violation: Violation, trace: &Trace) -> bool {
    violation == Violation::StaleToken
        && trace.events.iter().rev().find_map(|e| match e {
            TokenEvent::Commit { accepted } => Some(!accepted),
            _ => None,
        }) == Some(true)
}

fn describe(trace: &Trace) -> String {
    let events: Vec<String> = trace
        .events
        .iter()
        .map(|e| match e {
            TokenEvent::OwnerRefresh { generation } => format!("token {generation}"),
            TokenEvent::Commit { accepted: true } => "commit accepted".into(),
            TokenEvent::Commit { accepted: false } => "commit refused (stale generation)".into(),
            other => format!("{other:?}"),
        })
        .collect();
    events.join(", ")
}

fn replay_counterexamples(
    target: TargetId,
    sync: Sync,
    result: &mut TargetResult,
) -> Result<(), Error> {
    replay_each::<TokenSync>(target, result, |spec, cx, build, _| {
        let trace = match build {
            Build::Broken => drive(&cx.path, sync)?,
            Build::Designed => drive(&cx.path, Sync::Live)?,
        };
        Ok(Showed {
            violation: shows(spec.shows, &trace),
            did: describe(&trace),
        })
    })
}

/// On a real Kafka 4.4 broker: member A alone on a two-partition topic; B joins (the
/// coordinator moves a partition to B, a new generation), B leaves (A takes both back,
/// another). After each settles, A commits.
#[cfg(feature = "kafka")]
mod on_the_broker {
    use super::*;
    use loadbearing_impls_kafka::flow::{Member, MemberConfig};
    use loadbearing_impls_kafka::kafka::{
        self, group_metadata_of, KafkaTxnProducer, LiveGroupMetadata,
    };
    use std::time::{Duration, Instant};

    const PATIENCE: Duration = Duration::from_secs(60);

    pub fn join_and_leave(bootstrap: &str, sync: Sync) -> Result<Trace, Error> {
        let run = format!(
            "conform-token-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        let (input, snapshots) = (format!("{run}-input"), format!("{run}-snapshots"));
        kafka::create_topics(bootstrap, &[(&input, 2, false), (&snapshots, 1, true)])
            .map_err(Error::open("creating the topics"))?;
        let group = format!("{run}-group");
        let config = MemberConfig::default();
        let a = Member::join(bootstrap, &group, &input, "A", &config, no_trace())
            .map_err(Error::open("member A joining"))?;
        let mut settled = Settled::default();
        settled.poll_until(&a, &[], |owned| owned.len() == 2)?;
        let first = settled.generation.ok_or_else(|| {
            HarnessError::not_recorded("generation of member A after its assignment")
        })?;
        let token = Token::new(Arc::new(LiveGroupMetadata(a.consumer.clone())), sync);
        let producer = KafkaTxnProducer::new(bootstrap, &format!("{run}-txn"), &snapshots, 0)
            .map_err(HarnessError::failed("init_transactions"))?;
        let gc = GroupCommit::new(
            producer,
            GroupCommitConfig::new(InputPartition::new(&input, 0), 0),
            token.clone(),
            no_trace(),
        );
        let mut trace = Trace::new(first);
        commit(&gc, &token, &mut trace)?;
        let b = Member::join(bootstrap, &group, &input, "B", &config, no_trace())
            .map_err(Error::open("member B joining"))?;
        settled.poll_until(&a, &[&b], |owned| owned.len() == 1)?;
        settled.record(&mut trace, &token);
        commit(&gc, &token, &mut trace)?;
        drop(b); // closes the consumer: B leaves the group
        settled.poll_until(&a, &[], |owned| owned.len() == 2)?;
        settled.record(&mut trace, &token);
        commit(&gc, &token, &mut trace)?;
        Ok(trace.finish())
    }

    /// A's assignment and generation as last seen between polls, and the generation changes
    /// seen since the last record (with whether the assignment moved with each).
    #[derive(Default)]
    struct Settled {
        owned: Option<Vec<i32>>,
        generation: Option<i32>,
        bumps: Vec<(i32, bool)>,
    }

    impl Settled {
        fn poll_until(
            &mut self,
            a: &Member,
            others: &[&Member],
            done: impl Fn(&[i32]) -> bool,
        ) -> Result<(), Error> {
            let deadline = Instant::now() + PATIENCE;
            loop {
                a.poll(Duration::from_millis(50))
                    .map_err(Error::open("member A polling"))?;
                for o in others {
                    o.poll(Duration::from_millis(50))
                        .map_err(Error::open("member B polling"))?;
                }
                let owned = a.assigned().map(|mut o| {
                    o.sort_unstable();
                    o
                });
                let generation = group_metadata_of(&a.consumer)
                    .map(|m| m.generation_id)
                    .filter(|&g| g >= 0);
                if let Some(g) = generation {
                    if self.generation.is_some_and(|seen| seen != g) {
                        // Under the classic protocol a new generation reaches A through its
                        // rebalance callback, which is what moves its assignment.
                        self.bumps.push((g, owned != self.owned));
                    }
                    self.generation = Some(g);
                }
                self.owned = owned;
                if self.owned.as_deref().is_some_and(&done) {
                    return Ok(());
                }
                if Instant::now() > deadline {
                    return Err(HarnessError::timed_out(
                        format!(
                            "member A's assignment moving as expected (now {:?})",
                            self.owned
                        ),
                        PATIENCE,
                    ));
                }
            }
        }

        fn record(&mut self, trace: &mut Trace, token: &Token) {
            for (g, assigning) in self.bumps.drain(..) {
                trace.bump(g, assigning, token);
            }
        }
    }
}
