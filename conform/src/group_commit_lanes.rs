//! Conformance of the group commit's two lanes (`impls/kafka/src/group_commit.rs`: writes
//! drained up to the cap, the scheduled offset riding every transaction on a lane of its own,
//! `commit_marker` committing a moved offset alone) to the GroupCommitLanes model (K-5), both
//! ways.
//!
//! Implementation → model: the end of `KafkaFlow::flush` (schedule, then `commit_marker`)
//! round after round, overlapped with the next round's writes, as the group commit's contract
//! allows: a round's writers write concurrently (each its own input offset); once the next
//! round's writes are offered too, the flow schedules the round's end (retrying while the gate
//! refuses it) and calls `commit_marker`, so a moved offset meets queued writes. At the end, with every
//! writer joined, the run is `Quiesced` at the committed offset: the model must agree, and
//! under weak fairness have nothing left to do (a stranded marker shows there). The group
//! commit's own steps are the trace. Every trace is held to the design's model (gated, own
//! lane, self-commit, atomic durability): `group-commit-lanes` must conform, each planted
//! mutant must diverge.
//!
//! Model → implementation (in memory, one thread): the counterexample of each mutant's
//! config drives the group commit step by step (a `TxnBegin` is the whole transaction, a
//! `ScheduleMarker` the flow's schedule and `commit_marker`), through the mutant, which must
//! show the violation, and through the design, which must not.
//!
//! Not replayed here: `gclanes_ungated`, whose guard (the `schedule` gate) the `group-commit`
//! targets replay with `gc_ungated`. In our group commit an offset scheduled ahead of its
//! writes is carried by the transaction that drains them, so its counterexample (a marker
//! committed before any write was offered) has no schedule of its own here.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loadbearing_impls_kafka::group_commit::{
    CommitError, GroupCommit, GroupCommitConfig, InputPartition, Lanes, SnapshotWrite, Ticket,
    TxnProducer,
};
use loadbearing_impls_kafka::trace::{KafkaStep, SharedKafkaTracer, TxnOutcome};
use loadbearing_specs::group_commit::lanes::{GroupCommitLanes, LanesAction};
use loadbearing_specs::group_commit::lanes_trace::LanesEvent;

use crate::backend::BackendKind;
use crate::error::{Error, HarnessError};
use crate::must_fail::{replay_each, Build, Showed};
use crate::producer::{memory_commit, Recorder, PRODUCERS, SCHEDULE_PATIENCE, SEED};
use crate::replays::Violation;
use crate::schedule::{Schedule, Seeded};
use crate::target::{Expect, ModelName, Settings, Target, TargetResult};
use crate::target_id::TargetId;

pub struct LanesTarget {
    id: TargetId,
    lanes: Lanes,
}

/// The two lanes as designed.
pub static GROUP_COMMIT_LANES: LanesTarget = LanesTarget {
    id: TargetId::GroupCommitLanes,
    lanes: Lanes::Own,
};

/// A moved offset takes a write slot (planted mutant).
pub static GROUP_COMMIT_LANES_SHARED: LanesTarget = LanesTarget {
    id: TargetId::GroupCommitLanesShared,
    lanes: Lanes::SharedBudget,
};

/// `commit_marker` does nothing (planted mutant, D-3 as found).
pub static GROUP_COMMIT_LANES_STARVE: LanesTarget = LanesTarget {
    id: TargetId::GroupCommitLanesStarve,
    lanes: Lanes::NoMarkerTrigger,
};

/// A write counts as durable once drained (planted mutant).
pub static GROUP_COMMIT_LANES_EAGER: LanesTarget = LanesTarget {
    id: TargetId::GroupCommitLanesEager,
    lanes: Lanes::EagerDurable,
};

impl Target for LanesTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<GroupCommitLanes>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        PRODUCERS
    }

    fn expect(&self) -> Expect {
        if self.lanes == Lanes::Own {
            Expect::Conforms
        } else {
            Expect::Diverges
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let n = settings.writers as u8;
        let mut schedule = Seeded::new(settings.seed);
        #[cfg(feature = "kafka")]
        let mut broker = match settings.backend.kind() {
            BackendKind::Kafka => Some(crate::producer::kafka_backend::Group::join(
                settings.backend.address()?,
            )?),
            _ => None,
        };
        for round in 0..settings.traces {
            // Cap 1 first: a moved offset that takes the only slot shows at once.
            let cap = if round == 0 {
                1
            } else {
                1 + schedule.below(3) as u8
            };
            let seed = schedule.next_u64();
            let recorder = Arc::new(Recorder::default());
            let tracer: SharedKafkaTracer = recorder.clone();
            let config = config(cap, self.lanes);
            #[cfg(feature = "kafka")]
            if let Some(group) = &mut broker {
                let gc = group.commit(round, config, tracer)?;
                let co = flush_rounds(&gc, &recorder, n, seed)?;
                result.tally(&design(n, cap), &events_of(&recorder.steps(), co));
                continue;
            }
            let _ = round;
            let (gc, producer) = memory_commit(config, tracer);
            // A broker round trip per commit, so that writers queue up behind it.
            producer.log().commit_latency = Some(Duration::from_micros(200));
            let co = flush_rounds(&gc, &recorder, n, seed)?;
            result.tally(&design(n, cap), &events_of(&recorder.steps(), co));
        }
        replay_counterexamples(self.id, self.lanes, result)
    }
}

fn config(cap: u8, lanes: Lanes) -> GroupCommitConfig {
    GroupCommitConfig::new(InputPartition::new("input", 0), SEED)
        .cap(usize::from(cap))
        .planted_lanes(lanes)
}

/// The design's model.
fn design(n: u8, cap: u8) -> GroupCommitLanes {
    GroupCommitLanes {
        n,
        cap,
        gated: true,
        shared_budget: false,
        marker_self_commit: true,
        enable_abort: false,
        atomic_durable: true,
    }
}

fn write_of(w: u8) -> SnapshotWrite {
    SnapshotWrite::persist(&format!("k{w}"), i64::from(w), format!("v{w}").as_bytes())
}

/// The flow's rounds on real threads (see the module's doc); returns the committed offset,
/// in the model's terms, once everything is joined.
fn flush_rounds<P: TxnProducer + Send>(
    gc: &GroupCommit<P>,
    recorder: &Recorder,
    n: u8,
    seed: u64,
) -> Result<u8, Error> {
    let mut schedule = Seeded::new(seed);
    // Consecutive rounds of 1 to 3 writers.
    let mut ends = Vec::new();
    let mut end = 0;
    while end < n {
        end = (end + 1 + schedule.below(3) as u8).min(n);
        ends.push(end);
    }
    let pauses: Vec<u64> = (0..n).map(|_| schedule.below(300)).collect();
    std::thread::scope(|scope| {
        let mut writers = Vec::new();
        let mut flushed = 0;
        let mut previous = None;
        for &end in &ends {
            for w in flushed + 1..=end {
                let pause = pauses[usize::from(w) - 1];
                writers.push(scope.spawn(move || {
                    std::thread::sleep(Duration::from_micros(pause));
                    gc.write(write_of(w)).map(|_| ()).map_err(Error::Commit)
                }));
            }
            flushed = end;
            if let Some(done) = previous {
                recorder.wait_offered(end);
                flush_end(gc, recorder, done)?;
            }
            previous = Some(end);
        }
        if let Some(done) = previous {
            flush_end(gc, recorder, done)?;
        }
        for w in writers {
            w.join().expect("writer thread")?;
        }
        Ok::<(), Error>(())
    })?;
    let committed = gc.committed().unwrap_or(SEED);
    u8::try_from(committed - SEED).map_err(|_| HarnessError::outside("committed offset", committed))
}

/// The end of a flush: the round's writes offered, the flow schedules past them (the gate
/// refuses until they are durable) and commits the marker.
fn flush_end<P: TxnProducer>(
    gc: &GroupCommit<P>,
    recorder: &Recorder,
    end: u8,
) -> Result<(), Error> {
    recorder.wait_offered(end);
    let started = Instant::now();
    loop {
        match gc.schedule(i64::from(end) + SEED) {
            Ok(()) => break,
            Err(CommitError::Ungated { .. }) if started.elapsed() < SCHEDULE_PATIENCE => {
                std::thread::sleep(Duration::from_micros(50));
            }
            Err(e) => return Err(Error::Commit(e)),
        }
    }
    gc.commit_marker().map(|_| ()).map_err(Error::Commit)
}

/// The model's reading of the group commit's steps: a `Commit` that opened a transaction
/// (a `Transaction` follows it before the next `Commit`; the lock serializes them) is a
/// `TxnBegin`, one that found nothing to do no step; the run ends `Quiesced` at `co`.
///
/// `TxnCommit` carries no offset: where a schedule lands while a transaction is in flight, the
/// model's commit takes the latest offset, ours the one it drained with, and the model's
/// marker stays queued; the next transaction (`commit_marker`'s) commits the later offset, so
/// the two agree again there and at `Quiesced`, where the offset is compared.
pub fn events_of(steps: &[KafkaStep], co: u8) -> Vec<LanesEvent> {
    let model_offset = |offset: i64| u8::try_from(offset - SEED).unwrap_or(u8::MAX);
    let mut events = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match step {
            KafkaStep::Offer { offset, .. } => events.push(LanesEvent::OfferWrite {
                writer: u8::try_from(*offset).unwrap_or(u8::MAX),
            }),
            KafkaStep::Sched { offset, .. } => events.push(LanesEvent::ScheduleMarker {
                offset: model_offset(*offset),
            }),
            KafkaStep::Commit { writes, .. } if opened_a_transaction(steps, i) => {
                let writes = u8::try_from(*writes).unwrap_or(u8::MAX);
                events.push(LanesEvent::TxnBegin { writes });
            }
            KafkaStep::Transaction { outcome, .. } => {
                events.push(match outcome {
                    TxnOutcome::Committed => LanesEvent::TxnCommit,
                    TxnOutcome::Fenced(_) | TxnOutcome::Refused(_) | TxnOutcome::Failed(_) => {
                        LanesEvent::TxnAbort
                    }
                    // Nobody knows how it ended, so neither does the model's reading of what
                    // follows: the trace is checked up to here (a prefix of a behaviour is one),
                    // without the final quiescence.
                    TxnOutcome::Indeterminate(_) => return events,
                });
            }
            // The lock and a writer's outcome are GroupCommit's steps, not the lanes'; the
            // flows' steps are another vocabulary's.
            _ => {}
        }
    }
    events.push(LanesEvent::Quiesced { co });
    events
}

/// Whether the `Commit` at `steps[i]` opened a transaction: its `Transaction` follows before
/// the next `Commit` (the lock serializes them); a commit that found nothing to do has none.
fn opened_a_transaction(steps: &[KafkaStep], i: usize) -> bool {
    steps[i + 1..]
        .iter()
        .find(|s| matches!(s, KafkaStep::Commit { .. } | KafkaStep::Transaction { .. }))
        .is_some_and(|s| matches!(s, KafkaStep::Transaction { .. }))
}

/// What a driven counterexample did.
struct Driven {
    steps: Vec<KafkaStep>,
    /// The flow's schedules the gate refused.
    refused: usize,
    /// The committed offset's lead over the durable prefix, when it led at some step.
    ahead: Option<(u8, u8)>,
    /// Scheduled and committed offsets at the end (the model's terms).
    scheduled: u8,
    committed: u8,
    cap: u8,
}

impl Driven {
    /// A transaction that drained fewer writes than the cap allowed while more were queued.
    fn slot_steal(&self) -> Option<(usize, usize)> {
        let mut queued = 0usize;
        for (i, step) in self.steps.iter().enumerate() {
            match step {
                KafkaStep::Offer { .. } => queued += 1,
                KafkaStep::Commit { writes, .. } => {
                    let room = queued.min(usize::from(self.cap));
                    if opened_a_transaction(&self.steps, i) && *writes < room {
                        return Some((*writes, queued));
                    }
                    queued -= writes;
                }
                _ => {}
            }
        }
        None
    }

    fn shows(&self, violation: Violation) -> bool {
        match violation {
            Violation::SlotSteal => self.slot_steal().is_some(),
            Violation::MarkerStranded => self.scheduled > self.committed,
            Violation::OffsetAheadOfDurable => self.ahead.is_some(),
            _ => false,
        }
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some((took, queued)) = self.slot_steal() {
            parts.push(format!(
                "a transaction took {took} of {queued} queued writes"
            ));
        }
        if let Some((co, durable)) = self.ahead {
            parts.push(format!(
                "offset {co} committed with the writes durable up to {durable}"
            ));
        }
        if self.refused > 0 {
            parts.push(format!("{} schedule(s) refused by the gate", self.refused));
        }
        parts.push(format!(
            "scheduled {}, committed {}",
            self.scheduled, self.committed
        ));
        parts.join("; ")
    }
}

/// Drive a model path through a group commit in memory, one step at a time.
fn drive(model: &GroupCommitLanes, path: &[LanesAction], lanes: Lanes) -> Result<Driven, Error> {
    let recorder = Arc::new(Recorder::default());
    let tracer: SharedKafkaTracer = recorder.clone();
    let (gc, producer) = memory_commit(config(model.cap, lanes), tracer);
    if model.enable_abort {
        // The counterexample's abort: the first transaction's commit fails.
        producer.log().fail_commit_at = Some(1);
    }
    let mut tickets: Vec<Ticket> = Vec::new();
    let mut refused = 0;
    let mut ahead = None;
    let to_model = |o: Option<i64>| u8::try_from(o.unwrap_or(SEED) - SEED).unwrap_or(u8::MAX);
    let durable_prefix = |producer: &loadbearing_impls_kafka::group_commit::MemProducer| {
        let log = producer.log();
        let durable: Vec<&str> = log.durable.iter().map(|w| w.key.as_str()).collect();
        (1..=model.n)
            .take_while(|w| durable.contains(&format!("k{w}").as_str()))
            .count() as u8
    };
    for action in path {
        match action {
            LanesAction::OfferWrite(w) => tickets.push(gc.offer(write_of(*w))),
            LanesAction::ScheduleMarker(o) => {
                if gc.schedule(i64::from(*o) + SEED).is_err() {
                    refused += 1;
                }
                let _ = gc.commit_marker();
            }
            LanesAction::TxnBegin if queue_len(&recorder.steps()) > 0 => {
                let ticket = tickets.last().expect("a write was offered");
                let _ = gc.commit(gc.acquire(ticket));
            }
            LanesAction::TxnBegin => {
                let _ = gc.commit_marker();
            }
            LanesAction::TxnCommit | LanesAction::TxnAbort | LanesAction::Stutter => {}
        }
        let co = to_model(gc.committed());
        let durable = durable_prefix(&producer);
        if co > durable && ahead.is_none() {
            ahead = Some((co, durable));
        }
    }
    Ok(Driven {
        steps: recorder.steps(),
        refused,
        ahead,
        scheduled: to_model(gc.scheduled()),
        committed: to_model(gc.committed()),
        cap: model.cap,
    })
}

/// Writes offered and not yet drained, from the group commit's steps.
fn queue_len(steps: &[KafkaStep]) -> usize {
    let mut queued = 0usize;
    for step in steps {
        match step {
            KafkaStep::Offer { .. } => queued += 1,
            KafkaStep::Commit { writes, .. } => queued = queued.saturating_sub(*writes),
            _ => {}
        }
    }
    queued
}

fn replay_counterexamples(
    target: TargetId,
    lanes: Lanes,
    result: &mut TargetResult,
) -> Result<(), Error> {
    replay_each::<GroupCommitLanes>(target, result, |spec, cx, build, _| {
        let lanes = match build {
            Build::Broken => lanes,
            Build::Designed => Lanes::Own,
        };
        let driven = drive(&cx.model, &cx.path, lanes)?;
        Ok(Showed {
            violation: driven.shows(spec.shows),
            did: driven.describe(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_trace::{validate, Limits};

    /// A run's trace and its committed offset.
    fn traced(lanes: Lanes, n: u8, cap: u8, seed: u64) -> (Vec<LanesEvent>, u8) {
        let recorder = Arc::new(Recorder::default());
        let tracer: SharedKafkaTracer = recorder.clone();
        let (gc, producer) = memory_commit(config(cap, lanes), tracer);
        producer.log().commit_latency = Some(Duration::from_micros(200));
        let co = flush_rounds(&gc, &recorder, n, seed).unwrap();
        (events_of(&recorder.steps(), co), co)
    }

    #[test]
    fn the_design_conforms_and_ends_quiescent_at_its_last_offset() {
        for seed in 0..10 {
            let (events, _) = traced(Lanes::Own, 5, 2, seed);
            assert_eq!(events.last(), Some(&LanesEvent::Quiesced { co: 5 }));
            let verdict = validate(&design(5, 2), &events, Limits::default());
            assert!(
                verdict.conforming,
                "{}",
                verdict.divergence.map(|d| d.text()).unwrap_or_default()
            );
        }
    }

    #[test]
    fn without_the_marker_trigger_a_run_ends_with_its_last_offset_stranded() {
        // A writer's own late commit may still carry the last offset; some runs strand it,
        // and every such run diverges: at its end the model either still owes the marker's
        // transaction (weak fairness) or, where a schedule landed inside a transaction, has
        // already committed the later offset the implementation never did.
        let mut stranded = 0;
        for seed in 0..20 {
            let (events, co) = traced(Lanes::NoMarkerTrigger, 3, 3, seed);
            if co < 3 {
                stranded += 1;
                let verdict = validate(&design(3, 3), &events, Limits::default());
                assert!(!verdict.conforming, "seed {seed}: a stranded run conformed");
            }
        }
        assert!(stranded > 0, "no run stranded its last offset");
    }
}
