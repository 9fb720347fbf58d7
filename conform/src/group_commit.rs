//! Conformance of the group commit (`impls/kafka`, GroupCommit) to the GroupCommit model
//! (docs/models/groupcommit.md), both ways.
//!
//! Implementation → model: `writers` threads write one snapshot each (the writer of input
//! offset w writes key `kw` at offset w, the model's convention) while a flow thread schedules
//! input offsets in a seeded order, each only once the records below it were handed to their
//! writers (as the real flow does: it offers a record's write before it moves past it). The
//! `offer`/`acq`/`commit`/`await_`/`sched` events are validated against GroupCommit.
//!
//! Model → implementation: model paths (every path up to a depth of small configs, seeded
//! random walks, and `gc_ungated`'s counterexample) drive the implementation one step at a
//! time through its step API on one thread; after every step the implementation's observable
//! state (which writes are durable, the committed and the scheduled offset) is compared with
//! the model state.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadbearing_impls_kafka::group_commit::{
    CommitError, GroupCommit, GroupCommitConfig, Held, InputPartition, MemProducer, SnapshotWrite,
    Ticket, TxnProducer,
};
use loadbearing_impls_kafka::trace::{KafkaStep, SharedKafkaTracer};
use loadbearing_refinement::Model as _;
use loadbearing_specs::group_commit::model::{GcAction, GcState, GroupCommit as Model, Pc};
use loadbearing_specs::group_commit::trace::{GcEvent, Writer};

use crate::backend::BackendKind;
use crate::driver::{self, Applied, Compare, Harness};
use crate::error::{ConfigProblem, Error, HarnessError};
use crate::mismatch::Mismatch;
use crate::paths::{all_paths, random_walk};
#[cfg(feature = "kafka")]
use crate::producer::kafka_backend;
use crate::producer::{memory_commit, outcome_of, Recorder, PRODUCERS, SCHEDULE_PATIENCE, SEED};
use crate::replays::ReplaySpec;
use crate::replays::{self, ReplayOutcome, Violation};
use crate::schedule::{Schedule, Seeded};
use crate::target::{Expect, ModelName, Replay, Settings, Target, TargetResult};
use crate::target_id::TargetId;
use crate::{counterexample, Cx};

/// Concurrent group commits, gated or not, against GroupCommit; then model paths (gated) or
/// `gc_ungated`'s counterexample (ungated) driven through the implementation.
pub struct GroupCommitTarget {
    id: TargetId,
    gated: bool,
}

/// Concurrent group commits against GroupCommit.
pub static GROUP_COMMIT: GroupCommitTarget = GroupCommitTarget {
    id: TargetId::GroupCommit,
    gated: true,
};

/// Group commit scheduling offsets ahead of durable writes (planted mutant).
pub static GROUP_COMMIT_UNGATED: GroupCommitTarget = GroupCommitTarget {
    id: TargetId::GroupCommitUngated,
    gated: false,
};

impl Target for GroupCommitTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<Model>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        PRODUCERS
    }

    fn expect(&self) -> Expect {
        if self.gated {
            Expect::Conforms
        } else {
            Expect::Diverges
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let gated = self.gated;
        let n = settings.writers as u8;
        let mut schedule = Seeded::new(settings.seed);
        #[cfg(feature = "kafka")]
        let mut broker = match settings.backend.kind() {
            BackendKind::Kafka => Some(kafka_backend::Group::join(settings.backend.address()?)?),
            _ => None,
        };
        for round in 0..settings.traces {
            // Caps 1 to 3: with 8 writers the queue often holds more than one transaction takes.
            let cap = 1 + schedule.below(3) as u8;
            let seed = schedule.next_u64();
            let recorder = Arc::new(Recorder::default());
            let tracer: SharedKafkaTracer = recorder.clone();
            #[cfg(feature = "kafka")]
            if let Some(group) = &mut broker {
                let gc = group.commit(round, config(cap, gated), tracer)?;
                race(&gc, &recorder, n, seed)?;
                result.tally(&gated_model(n, cap), &events_of(&recorder.steps()));
                continue;
            }
            let (gc, producer) = memory_commit(config(cap, gated), tracer);
            // A broker round trip per commit, so that writers queue up behind it.
            producer.log().commit_latency = Some(Duration::from_micros(200));
            race(&gc, &recorder, n, seed)?;
            let _ = round;
            result.tally(&gated_model(n, cap), &events_of(&recorder.steps()));
        }
        if gated {
            replay_paths(settings, &mut schedule, result)
        } else {
            reproduce_ungated(self.id, result)
        }
    }
}

fn gated_model(n: u8, cap: u8) -> Model {
    Model {
        n,
        cap,
        gated: true,
    }
}

fn config(cap: u8, gated: bool) -> GroupCommitConfig {
    let config = GroupCommitConfig::new(InputPartition::new("input", 0), SEED).cap(cap as usize);
    if gated {
        config
    } else {
        config.ungated()
    }
}

/// One run on real threads: `n` writers (each after a seeded pause) and the flow, which picks
/// the offsets it schedules from the same seed and retries an offset the gate refuses.
fn race<P: TxnProducer + Send>(
    gc: &GroupCommit<P>,
    recorder: &Recorder,
    n: u8,
    seed: u64,
) -> Result<(), Error> {
    let mut schedule = Seeded::new(seed);
    let pauses: Vec<u64> = (0..n).map(|_| schedule.below(300)).collect();
    std::thread::scope(|scope| {
        let writers: Vec<_> = (1..=n)
            .map(|w| {
                let pause = pauses[w as usize - 1];
                scope.spawn(move || {
                    std::thread::sleep(Duration::from_micros(pause));
                    let value = format!("v{w}");
                    gc.write(SnapshotWrite::persist(
                        &format!("k{w}"),
                        w as i64,
                        value.as_bytes(),
                    ))
                    .map(|_| ())
                    .map_err(Error::Commit)
                })
            })
            .collect();
        let flow = scope.spawn(move || schedule_all(gc, recorder, n, &mut schedule));
        let mut failures: Vec<Error> = writers
            .into_iter()
            .filter_map(|h| h.join().expect("writer thread").err())
            .collect();
        if let Err(e) = flow.join().expect("flow thread") {
            failures.push(e);
        }
        // The first failure stands for all: any is the harness's, not the design's.
        match failures.into_iter().next() {
            None => Ok(()),
            Some(first) => Err(first),
        }
    })
}

/// The flow: schedules seeded offsets up to `n`, each once its records were offered.
fn schedule_all<P: TxnProducer>(
    gc: &GroupCommit<P>,
    recorder: &Recorder,
    n: u8,
    schedule: &mut dyn Schedule,
) -> Result<(), Error> {
    let mut oc = 0u8;
    while oc < n {
        let o = oc + 1 + schedule.below((n - oc) as u64) as u8;
        recorder.wait_offered(o);
        let started = Instant::now();
        loop {
            match gc.schedule(o as i64 + SEED) {
                Ok(()) => break,
                Err(CommitError::Ungated { .. }) if started.elapsed() < SCHEDULE_PATIENCE => {
                    std::thread::sleep(Duration::from_micros(50));
                }
                Err(e) => return Err(Error::Commit(e)),
            }
        }
        oc = o;
    }
    Ok(())
}

/// The model's reading of the group commit's events: writer ids become the offsets they
/// write (learnt from their `offer`), offsets the model's (the next to consume minus one).
/// The partition flows' steps are another vocabulary's (`kafka`); every step kind is named,
/// so a new one must be placed.
pub fn events_of(steps: &[KafkaStep]) -> Vec<GcEvent> {
    let mut offset_of: HashMap<u64, i64> = HashMap::new();
    let writer_of = |offset_of: &HashMap<u64, i64>, writer: u64| match offset_of.get(&writer) {
        Some(&o) if (0..=u8::MAX as i64).contains(&o) => Writer::Of(o as u8),
        // A transaction without a writer of the model (the revoke path's commit_now).
        _ => Writer::Unmodelled(writer),
    };
    let mut events = Vec::new();
    for step in steps {
        let event = match step {
            KafkaStep::Offer { writer, offset, .. } => {
                offset_of.insert(*writer, *offset);
                GcEvent::Offer {
                    writer: writer_of(&offset_of, *writer),
                }
            }
            KafkaStep::Acq { writer, .. } => GcEvent::Acq {
                writer: writer_of(&offset_of, *writer),
            },
            KafkaStep::Commit {
                writer,
                writes,
                offset,
                ..
            } => GcEvent::Commit {
                writer: writer_of(&offset_of, *writer),
                writes: Some(*writes as u64),
                co: (*offset >= SEED).then(|| (*offset - SEED) as u64),
            },
            KafkaStep::Transaction {
                writer, outcome, ..
            } => GcEvent::Transaction {
                writer: writer_of(&offset_of, *writer),
                outcome: outcome_of(outcome),
            },
            KafkaStep::Await {
                writer, outcome, ..
            } => GcEvent::Await {
                writer: writer_of(&offset_of, *writer),
                outcome: outcome_of(outcome),
            },
            KafkaStep::Sched { offset, .. } => GcEvent::Sched {
                o: (*offset - SEED).max(0) as u64,
            },
            KafkaStep::OwnerFold { .. }
            | KafkaStep::OwnerRecover { .. }
            | KafkaStep::Rebalance { .. }
            | KafkaStep::Poll { .. }
            | KafkaStep::ZombieCommit { .. }
            | KafkaStep::ZombieInit { .. }
            | KafkaStep::FlowsLive { .. }
            | KafkaStep::Teardown { .. } => continue,
        };
        events.push(event);
    }
    events
}

/// What the implementation shows after a step: the model's `done`, `co` and `oc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observed {
    done: u16,
    co: u8,
    oc: u8,
}

impl std::fmt::Display for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl Observed {
    fn of(state: &GcState) -> Observed {
        Observed {
            done: state.done,
            co: state.co,
            oc: state.oc,
        }
    }

    /// Every input offset up to the committed one has its write durable.
    fn durable_upto_co(&self) -> bool {
        (1..=self.co).all(|k| self.done & (1 << k) != 0)
    }
}

/// The in-memory group commit under GroupCommit's steps, one at a time through its step API.
struct GcHarness<'a> {
    gc: &'a GroupCommit<MemProducer>,
    producer: &'a MemProducer,
    tickets: HashMap<u8, Ticket>,
    held: HashMap<u8, Held<'a, MemProducer>>,
    /// Why the gate refused the first refused step.
    refusal: Option<String>,
}

impl Harness for GcHarness<'_> {
    type Step = GcAction;
    type Observed = Observed;

    fn apply(&mut self, action: &GcAction) -> Result<Applied, Error> {
        let missing = |what: &'static str| HarnessError::out_of_order(action, what);
        match *action {
            GcAction::Offer(w) => {
                let write = SnapshotWrite::persist(&format!("k{w}"), w as i64, b"replayed");
                self.tickets.insert(w, self.gc.offer(write));
            }
            GcAction::Acq(w) => {
                let ticket = self
                    .tickets
                    .get(&w)
                    .ok_or_else(|| missing("no offer before it"))?;
                self.held.insert(w, self.gc.acquire(ticket));
            }
            GcAction::Commit(w) => {
                let lock = self
                    .held
                    .remove(&w)
                    .ok_or_else(|| missing("no acq before it"))?;
                // The outcome reaches each drained writer through its ticket.
                let _ = self.gc.commit(lock);
            }
            GcAction::Await(w) => {
                let ticket = self
                    .tickets
                    .get(&w)
                    .ok_or_else(|| missing("no offer before it"))?;
                match self.gc.try_await(ticket) {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Ok(Applied::Failed(format!("the write failed: {e}"))),
                    None => {
                        return Ok(Applied::Failed(format!(
                            "no transaction carried writer {w}'s write"
                        )))
                    }
                }
            }
            GcAction::Sched(o) => match self.gc.schedule(o as i64 + SEED) {
                Ok(()) => {}
                Err(CommitError::Ungated { pending, .. }) => {
                    self.refusal.get_or_insert_with(|| {
                        format!("refused, the write of offset {pending} is not durable")
                    });
                    return Ok(Applied::Refused);
                }
                Err(e) => return Err(e.into()),
            },
            GcAction::SchedDone | GcAction::Terminating => {}
        }
        Ok(Applied::Taken)
    }

    fn observe(&mut self) -> Result<Observed, Error> {
        let log = self.producer.log();
        let done = log
            .durable
            .iter()
            .filter_map(|w| w.key.strip_prefix('k')?.parse::<u8>().ok())
            .fold(0u16, |d, w| d | 1 << w);
        let model_offset = |o: Option<i64>| o.map_or(0, |o| (o - SEED).max(0) as u8);
        Ok(Observed {
            done,
            co: model_offset(log.committed_offset),
            oc: model_offset(self.gc.scheduled()),
        })
    }
}

/// What driving one model path did to the implementation.
#[derive(Default)]
struct Driven {
    /// Steps after which the implementation's state differed from the model's.
    mismatches: Vec<Mismatch>,
    /// The first step the implementation refused (its gate), if any.
    refused: Option<String>,
    /// The first step after which the committed offset led the durable writes.
    leading: Option<String>,
}

/// Drives the in-memory group commit through `path` one model step at a time. Comparison
/// with the model stops at the first refused step (from there the two legitimately differ);
/// the implementation's own invariant is checked throughout.
fn drive(model: &Model, path: &[GcAction], gated: bool) -> Result<Driven, Error> {
    let (gc, producer) = memory_commit(
        config(model.cap, gated),
        Arc::new(loadbearing_impls_kafka::trace::NoKafkaTrace),
    );
    let mut harness = GcHarness {
        gc: &gc,
        producer: &producer,
        tickets: HashMap::new(),
        held: HashMap::new(),
        refusal: None,
    };
    let init = model.init_states().remove(0);
    let driven = driver::drive(
        model,
        &init,
        path,
        &mut harness,
        Observed::of,
        Compare::UntilRefused,
    )?;
    let step = |i: usize| format!("step {} {:?}", i + 1, path[i]);
    let leading = driven
        .observed
        .iter()
        .skip(1)
        .position(|seen| !seen.durable_upto_co())
        .map(|i| {
            let seen = driven.observed[i + 1];
            format!(
                "{}: input offset {} committed while only {:?} are durable",
                step(i),
                seen.co,
                (1..=seen.co)
                    .filter(|k| seen.done & (1 << k) != 0)
                    .collect::<Vec<_>>()
            )
        });
    Ok(Driven {
        mismatches: driven.records("the path"),
        refused: driven
            .first_refused()
            .zip(harness.refusal.take())
            .map(|(i, why)| format!("{}: {why}", step(i - 1))),
        leading,
    })
}

/// The stutter once every process is done: never driven (the implementation has no step for it).
fn is_final_stutter(action: &GcAction) -> bool {
    *action == GcAction::Terminating
}

/// Model → implementation on the gated group commit: all short paths of small configs and
/// random walks with every writer; the implementation must do what the model does.
fn replay_paths(
    settings: &Settings,
    schedule: &mut dyn Schedule,
    result: &mut TargetResult,
) -> Result<(), Error> {
    let mut paths: Vec<(Model, Vec<GcAction>)> = Vec::new();
    for cap in [1, 2] {
        let small = Model {
            n: 2,
            cap,
            gated: true,
        };
        paths.extend(
            all_paths(
                &small,
                small.init_states().remove(0),
                12,
                false,
                is_final_stutter,
            )
            .into_iter()
            .map(|p| (small.clone(), p)),
        );
    }
    for _ in 0..settings.traces {
        let wide = Model {
            n: settings.writers as u8,
            cap: 1 + schedule.below(3) as u8,
            gated: true,
        };
        let init = wide.init_states().remove(0);
        let (walk, _) = random_walk(&wide, init, schedule, usize::MAX, is_final_stutter);
        paths.push((wide, walk));
    }
    for (model, path) in &paths {
        let driven = drive(model, path, true)?;
        result.steps += path.len();
        result.mismatches.extend(driven.mismatches);
        if let Some(refused) = driven.refused {
            result
                .mismatches
                .push(Mismatch::RefusedAllowed { refusal: refused });
        }
        if let Some(leading) = driven.leading {
            result.mismatches.push(Mismatch::Showed {
                violation: Violation::OffsetAheadOfDurable,
                evidence: leading,
            });
        }
    }
    Ok(())
}

/// `gc_ungated` on the implementation. The checker's shortest counterexample schedules offset
/// 1 before writer 1 offered its write; the implementation's gate only sees offered writes,
/// because its flow offers a record's write before it schedules past the record. So two
/// schedules are driven: the checker's (it must reproduce on the ungated implementation), and
/// the shortest one in which the flow keeps that order (it must reproduce on the ungated
/// implementation and be refused by the gated one).
fn reproduce_ungated(target: TargetId, result: &mut TargetResult) -> Result<(), Error> {
    for spec in replays::driven_by(target)? {
        reproduce(&spec, result)?;
    }
    Ok(())
}

fn reproduce(spec: &ReplaySpec, result: &mut TargetResult) -> Result<(), Error> {
    let Cx {
        model,
        path: shortest,
        ..
    } = counterexample::<Model>(&spec.config)?;
    let in_order = shortest_in_flow_order(&model).ok_or_else(|| {
        // The flow's order (offer, then schedule) is the one the gate must refuse.
        Error::config(&spec.config, ConfigProblem::NoCounterexample)
    })?;
    for (name, path, must_refuse) in [
        (spec.config.clone(), &shortest, false),
        (
            format!("{} (flow offers before it schedules)", spec.config),
            &in_order,
            true,
        ),
    ] {
        let broken = drive(&model, path, false)?;
        let guarded = drive(&model, path, true)?;
        result.steps += 2 * path.len();
        result.mismatches.extend(broken.mismatches);
        let broken_outcome = ReplayOutcome::of(spec.shows, broken.leading.is_some());
        let guarded_outcome = match (&guarded.refused, &guarded.leading) {
            (_, Some(_)) => ReplayOutcome::Reproduced(Violation::OffsetAheadOfDurable),
            (Some(_), None) => ReplayOutcome::Refused,
            (None, None) => ReplayOutcome::NotDriven,
        };
        // The gate sees only offered writes: the gated implementation must refuse the schedule
        // the real flow can take (offers before it schedules), not the checker's, which runs
        // ahead of an offer.
        let judged_guarded = if must_refuse {
            match guarded_outcome {
                ReplayOutcome::NotDriven => {
                    result
                        .mismatches
                        .push(Mismatch::NothingRefused { on: name.clone() });
                    ReplayOutcome::NotDriven
                }
                other => other,
            }
        } else {
            ReplayOutcome::NotDriven
        };
        for m in crate::mismatch::judge_replay(spec, broken_outcome, judged_guarded) {
            result
                .mismatches
                .push(m.with_context(format!("on the schedule {name}")));
        }
        let guarded_did = match (&guarded.refused, &guarded.leading) {
            (Some(refused), _) => refused.clone(),
            (None, Some(leading)) => format!(
                "not refused ({leading}): the gate sees only offered writes, and this schedule runs ahead of an offer, which the flow never does"
            ),
            (None, None) => "not refused, no violation".into(),
        };
        result.replays.push(Replay {
            config: spec.config.clone(),
            steps: path.iter().map(|a| format!("{a:?}")).collect(),
            broken: broken.leading.unwrap_or_else(|| "did not reproduce".into()),
            guarded: guarded_did,
            broken_outcome,
            guarded_outcome,
        });
    }
    Ok(())
}

/// The shortest path of `model` to a state whose committed offset leads the durable writes,
/// among paths in which the flow schedules `o` only after writers 1..o offered (breadth-first).
fn shortest_in_flow_order(model: &Model) -> Option<Vec<GcAction>> {
    let init = model.init_states().remove(0);
    let mut parent: HashMap<GcState, Option<(GcState, GcAction)>> = HashMap::new();
    parent.insert(init.clone(), None);
    let mut frontier = std::collections::VecDeque::from([init]);
    while let Some(state) = frontier.pop_front() {
        if !(1..=state.co).all(|k| state.done & (1 << k) != 0) {
            let mut path = Vec::new();
            let mut at = state;
            while let Some(Some((before, action))) = parent.get(&at).cloned() {
                path.push(action);
                at = before;
            }
            path.reverse();
            return Some(path);
        }
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        for action in actions {
            if let GcAction::Sched(o) = action {
                let offered = (1..=o).all(|w| state.pc[w as usize] != Pc::Offer);
                if !offered {
                    continue;
                }
            }
            let next = model.next_state(&state, action).expect("enabled");
            if !parent.contains_key(&next) {
                parent.insert(next.clone(), Some((state.clone(), action)));
                frontier.push_back(next);
            }
        }
    }
    None
}
