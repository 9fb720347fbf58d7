//! Conformance of a member's flows across rebalances (`impls/kafka/src/flow/registry.rs`,
//! under the member's rebalance callback) to the FlowsAlive model (S-3), both ways.
//!
//! Implementation → model: rebalances move a member's partitions; after each one that changed
//! its assignment the harness opens a flow for every newly owned partition without a live one
//! and the registry reports the assignment with its live flows (`FlowsLive`); a teardown that
//! completes after its revoke returned reports `Teardown`. On the memory backend the harness
//! picks the assignments (seeded); on Kafka a second member joins the group and leaves it, and
//! the coordinator moves the first member's partitions. Every trace is held to the awaited
//! model: `flows-alive` must conform, `flows-alive-deferred` (the teardown handed to a thread)
//! must diverge.
//!
//! Model → implementation (in memory): random walks of the awaited model drive the registry
//! one rebalance at a time, the live flows compared after each; and every must-fail
//! counterexample of FlowsAlive (`flowsalive_race`) is driven through the deferred registry,
//! which must leave a revoked flow live, and through the awaited one, which must not.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loadbearing_impls_kafka::flow::{FlowRegistry, TearDown, TeardownMode};
use loadbearing_impls_kafka::trace::{KafkaRecorder, KafkaStep};
use loadbearing_refinement::Model as _;
use loadbearing_specs::flows::alive::{FlowsAction, FlowsAlive, FlowsState, Partitions};
use loadbearing_specs::flows::alive_trace::FlowsEvent;

use crate::backend::BackendKind;
use crate::driver::{self, Applied, Compare, Harness};
use crate::error::{Error, HarnessError};
use crate::paths::random_walk;
use crate::producer::PRODUCERS;
use crate::replays::{self, Violation};
use crate::schedule::{Schedule, Seeded};
use crate::target::{Expect, ModelName, Settings, Target, TargetResult};
use crate::target_id::TargetId;
use crate::{counterexample, Cx};

/// The partitions of the harness's input topic.
const PARTITIONS: u8 = 2;

/// How long the planted mutant's teardown thread waits on Kafka: longer than a rebalance's
/// revoke and assignment usually take, so the revoked flow is still live when the assignment
/// is reported (if not, its late `Teardown` diverges instead).
const DEFERRED: Duration = Duration::from_secs(2);

/// The same in memory, where the harness reports the assignment right after the revoke.
const DEFERRED_IN_MEMORY: Duration = Duration::from_millis(20);

pub struct FlowsAliveTarget {
    id: TargetId,
    mode: TeardownMode,
}

/// Revoke awaits the flows' teardown: the design.
pub static FLOWS_ALIVE: FlowsAliveTarget = FlowsAliveTarget {
    id: TargetId::FlowsAlive,
    mode: TeardownMode::Awaited,
};

/// Revoke hands the teardown to a thread (planted mutant).
pub static FLOWS_ALIVE_DEFERRED: FlowsAliveTarget = FlowsAliveTarget {
    id: TargetId::FlowsAliveDeferred,
    mode: TeardownMode::Deferred(DEFERRED),
};

impl Target for FlowsAliveTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<FlowsAlive>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        PRODUCERS
    }

    fn expect(&self) -> Expect {
        match self.mode {
            TeardownMode::Awaited => Expect::Conforms,
            TeardownMode::Deferred(_) | TeardownMode::Detached => Expect::Diverges,
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let mut schedule = Seeded::new(settings.seed);
        for _ in 0..settings.traces {
            let steps = match settings.backend.kind() {
                #[cfg(feature = "kafka")]
                BackendKind::Kafka => kafka_backend::join_and_leave(
                    settings.backend.address()?,
                    self.mode,
                    self.id.name(),
                )?,
                _ => in_memory(self.mode, &mut schedule),
            };
            let events = events_of(&steps)?;
            result.tally(&awaited(rebalances(&events)), &events);
        }
        if self.mode == TeardownMode::Awaited {
            drive_walks(settings, &mut schedule, result)?;
        }
        replay_counterexamples(self.id, result)
    }
}

/// The awaited model with room for `rebalances` generations.
fn awaited(rebalances: u16) -> FlowsAlive {
    FlowsAlive {
        partitions: PARTITIONS,
        max_gen: rebalances,
        await_teardown: true,
    }
}

fn rebalances(events: &[FlowsEvent]) -> u16 {
    let n = events
        .iter()
        .filter(|e| matches!(e, FlowsEvent::Rebalance { .. }))
        .count();
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// The FlowsAlive events among a member's Kafka steps.
pub fn events_of(steps: &[KafkaStep]) -> Result<Vec<FlowsEvent>, Error> {
    let partition = |p: i32| {
        u8::try_from(p)
            .ok()
            .filter(|p| *p < PARTITIONS)
            .ok_or_else(|| HarnessError::outside("partition", p))
    };
    let set = |ps: &[i32]| ps.iter().map(|&p| partition(p)).collect::<Result<_, _>>();
    let mut events = Vec::new();
    for step in steps {
        match step {
            KafkaStep::FlowsLive { owned, live, .. } => events.push(FlowsEvent::Rebalance {
                owned: set(owned)?,
                live: Some(set(live)?),
            }),
            KafkaStep::Teardown { partition: p, .. } => events.push(FlowsEvent::Teardown {
                partition: partition(*p)?,
            }),
            _ => {}
        }
    }
    Ok(events)
}

/// A flow as the registry sees it: torn down or not.
#[derive(Default)]
struct StandIn(AtomicBool);

impl TearDown for StandIn {
    fn tear_down(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    fn is_torn_down(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A member in memory: its registry, and the assignment the harness gives it.
struct MemMember {
    registry: FlowRegistry,
    recorder: Arc<KafkaRecorder>,
    owned: Vec<i32>,
}

impl MemMember {
    fn new(mode: TeardownMode) -> Self {
        let recorder = KafkaRecorder::new();
        MemMember {
            registry: FlowRegistry::new("A", mode, recorder.clone()),
            recorder,
            owned: Vec::new(),
        }
    }

    /// A rebalance to `to`: revoke what is no longer owned, open flows for the newly owned
    /// partitions that have none live, report.
    fn rebalance(&mut self, to: Partitions) {
        let to: Vec<i32> = (0..PARTITIONS)
            .filter(|&p| to.contains(p))
            .map(i32::from)
            .collect();
        let revoked: Vec<i32> = self
            .owned
            .iter()
            .copied()
            .filter(|p| !to.contains(p))
            .collect();
        self.registry.revoke(&revoked);
        open_missing(&self.registry, &to);
        self.owned = to;
        self.registry.report(&self.owned);
    }

    fn live(&self) -> Partitions {
        partitions_of(&self.registry.live())
    }
}

/// The harness's partitions (always below `PARTITIONS`) as the model's set.
fn partitions_of(ps: &[i32]) -> Partitions {
    let small: Vec<u8> = ps.iter().filter_map(|&p| u8::try_from(p).ok()).collect();
    Partitions::of(&small).unwrap_or(Partitions::EMPTY)
}

/// Open a flow for every owned partition without a live one.
fn open_missing(registry: &FlowRegistry, owned: &[i32]) {
    for &p in owned {
        if !registry.is_live(p) {
            registry.register(p, Arc::new(StandIn::default()));
        }
    }
}

/// A member in memory given every partition, then one or two seeded rebalances, each to an
/// assignment it does not have (so the second revokes a partition); deferred teardowns are let
/// finish at the end.
fn in_memory(mode: TeardownMode, schedule: &mut dyn Schedule) -> Vec<KafkaStep> {
    let mode = match mode {
        TeardownMode::Deferred(_) => TeardownMode::Deferred(DEFERRED_IN_MEMORY),
        awaited => awaited,
    };
    let mut member = MemMember::new(mode);
    let mut owned = Partitions((1 << PARTITIONS) - 1);
    member.rebalance(owned);
    for _ in 0..1 + schedule.below(2) {
        let choices: Vec<Partitions> = (0..1u16 << PARTITIONS)
            .map(Partitions)
            .filter(|&p| p != owned)
            .collect();
        owned = choices[schedule.below(choices.len() as u64) as usize];
        member.rebalance(owned);
    }
    member.registry.settle();
    member.recorder.kafka_steps()
}

/// The awaited registry under the model's steps: a rebalance is the member's; the awaited
/// model never takes a teardown of its own (it happens inside the revoke), so one is a step
/// the registry cannot take.
impl Harness for MemMember {
    type Step = FlowsAction;
    type Observed = Partitions;

    fn apply(&mut self, action: &FlowsAction) -> Result<Applied, Error> {
        match action {
            FlowsAction::Rebalance(to) => {
                self.rebalance(*to);
                Ok(Applied::Taken)
            }
            FlowsAction::Teardown(_) => Ok(Applied::Failed(
                "the awaited model never enables a teardown of its own".into(),
            )),
        }
    }

    fn observe(&mut self) -> Result<Partitions, Error> {
        Ok(self.live())
    }
}

/// Random walks of the awaited model through the awaited registry, through the one path
/// driver: the live flows after each rebalance must be the model's.
fn drive_walks(
    settings: &Settings,
    schedule: &mut dyn Schedule,
    result: &mut TargetResult,
) -> Result<(), Error> {
    let model = awaited(3);
    for walk in 0..settings.traces {
        let init = model.init_states().remove(0);
        let (path, _) = random_walk(&model, init.clone(), schedule, usize::MAX, |_| false);
        let mut member = MemMember::new(TeardownMode::Awaited);
        let live = |s: &FlowsState| s.live;
        let driven = driver::drive(&model, &init, &path, &mut member, live, Compare::Always)?;
        result.steps += driven.steps;
        result
            .mismatches
            .extend(driven.records(format!("walk {}", walk + 1)));
    }
    Ok(())
}

/// What a counterexample did on one registry: the first step after which a revoked flow was
/// still live, or none.
fn drive(path: &[FlowsAction], mode: TeardownMode) -> Result<Option<String>, Error> {
    let mut member = MemMember::new(mode);
    let mut shown = None;
    for action in path {
        match action {
            FlowsAction::Rebalance(to) => member.rebalance(*to),
            FlowsAction::Teardown(p) => {
                return Err(Error::Harness(HarnessError::CannotTime(format!(
                    "it completes a teardown (p{}) at a chosen step, and a deferred teardown \
                     ends when it ends",
                    p + 1
                ))))
            }
        }
        let owned = partitions_of(&member.owned);
        if shown.is_none() && !member.live().is_subset(owned) {
            shown = Some(format!(
                "after {action:?} the flows of {} are live, owned {owned}",
                member.live()
            ));
        }
    }
    member.registry.settle();
    Ok(shown)
}

fn replay_counterexamples(target: TargetId, result: &mut TargetResult) -> Result<(), Error> {
    for spec in replays::driven_by(target)? {
        let Cx { path, .. } = counterexample::<FlowsAlive>(&spec.config)?;
        let broken = drive(&path, TeardownMode::Deferred(DEFERRED_IN_MEMORY))?;
        let guarded = drive(&path, TeardownMode::Awaited)?;
        result.steps += 2 * path.len();
        let reproduces = replays::reproduces(&spec, target);
        // The run shows a live unowned flow when it names one.
        let judged = |shown: Option<String>| {
            let showed = spec.shows == Violation::FlowAliveUnowned && shown.is_some();
            (
                showed,
                shown.unwrap_or_else(|| "every revoked flow was torn down".into()),
            )
        };
        result.replayed(
            &spec,
            path.iter().map(|a| format!("{a:?}")).collect(),
            reproduces.then(|| judged(broken)),
            judged(guarded),
        );
    }
    Ok(())
}

/// The member on a real Kafka 4.4 broker: a two-partition input topic; A joins alone (both
/// partitions), B joins (the coordinator moves one to B), B leaves (A takes both back).
#[cfg(feature = "kafka")]
mod kafka_backend {
    use super::*;
    use loadbearing_impls_kafka::flow::{Member, MemberConfig};
    use loadbearing_impls_kafka::kafka;
    use std::time::Instant;

    /// How long the coordinator may take to move partitions.
    const PATIENCE: Duration = Duration::from_secs(60);

    pub fn join_and_leave(
        bootstrap: &str,
        mode: TeardownMode,
        target: &str,
    ) -> Result<Vec<KafkaStep>, Error> {
        let run = format!(
            "conform-{target}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        let input = format!("{run}-input");
        kafka::create_topics(bootstrap, &[(&input, i32::from(PARTITIONS), false)])
            .map_err(Error::open("creating the input topic"))?;
        let group = format!("{run}-group");
        let recorder = KafkaRecorder::new();
        let config = MemberConfig::default();
        let a = Member::join_with(
            bootstrap,
            &group,
            &input,
            "A",
            &config,
            mode,
            recorder.clone(),
        )
        .map_err(Error::open("member A joining"))?;
        let mut seen: Option<Vec<i32>> = None;
        // A alone: both partitions.
        poll_until(&a, &mut seen, &[], |owned| owned.len() == 2)?;
        let b = Member::join(
            bootstrap,
            &group,
            &input,
            "B",
            &config,
            loadbearing_impls_kafka::trace::no_trace(),
        )
        .map_err(Error::open("member B joining"))?;
        poll_until(&a, &mut seen, &[&b], |owned| owned.len() == 1)?;
        drop(b); // closes the consumer: B leaves the group
        poll_until(&a, &mut seen, &[], |owned| owned.len() == 2)?;
        a.flows().settle();
        Ok(recorder.kafka_steps())
    }

    /// Poll A (and the others, so they stay members) until `done` holds for A's assignment;
    /// every change of A's assignment opens the missing flows and is reported.
    fn poll_until(
        a: &Member,
        seen: &mut Option<Vec<i32>>,
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
            if let Some(mut owned) = a.assigned() {
                owned.sort_unstable();
                if seen.as_ref() != Some(&owned) {
                    open_missing(a.flows(), &owned);
                    a.flows().report(&owned);
                    *seen = Some(owned.clone());
                }
                if done(&owned) {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                return Err(HarnessError::timed_out(
                    format!("member A's assignment moving as expected (now {seen:?})"),
                    PATIENCE,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_race_counterexample_leaves_a_revoked_flow_live_only_when_deferred() {
        let path = [
            FlowsAction::Rebalance(Partitions(0b11)),
            FlowsAction::Rebalance(Partitions(0b10)),
        ];
        assert!(drive(&path, TeardownMode::Deferred(DEFERRED_IN_MEMORY))
            .unwrap()
            .is_some());
        assert_eq!(drive(&path, TeardownMode::Awaited).unwrap(), None);
    }
}
