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
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use loadbearing_impls::trace::Tracer;
use loadbearing_impls_kafka::group_commit::{
    CommitError, GroupCommit, GroupCommitConfig, GroupMetadata, GroupMetadataSource, Held,
    InputPartition, MemProducer, SnapshotWrite, Ticket, TxnProducer,
};
use loadbearing_impls_kafka::trace::{KafkaStep, KafkaTracer, SharedKafkaTracer, TxnOutcome};
use loadbearing_specs::group_commit::trace::{GcEvent, Writer};
use loadbearing_specs::group_commit::{GcAction, GcState, GroupCommit as Model, Pc};
use stateright::Model as _;

use super::{
    all_paths, counterexample, random_walk, Backend, Cx, Rng, Settings, Target, TargetResult,
};

/// The input offset the partition was assigned at: the next record to consume is offset 1,
/// so the implementation's scheduled offset (the next to consume) is the model's `oc` + 1.
const SEED: i64 = 1;
/// The consumer generation the in-memory coordinator holds live.
const GENERATION: i32 = 1;
/// How long the flow waits for the writes below an offset to become durable.
const SCHEDULE_PATIENCE: Duration = Duration::from_secs(20);

pub fn run(target: Target, settings: &Settings, result: &mut TargetResult) -> Result<(), String> {
    result.model = "GroupCommit";
    let gated = target == Target::GroupCommit;
    let n = settings.writers as u8;
    let mut rng = Rng::new(settings.seed);
    let mut broker = kafka_group(&settings.backend)?;
    // `round` names the broker's topics; the in-memory runs need no names.
    #[cfg_attr(not(feature = "kafka"), allow(unused_variables))]
    for round in 0..settings.traces {
        // Caps 1 to 3: with 8 writers the queue often holds more than one transaction takes.
        let cap = 1 + rng.below(3) as u8;
        let seed = rng.next_u64();
        let recorder = Arc::new(Recorder::default());
        let tracer: SharedKafkaTracer = recorder.clone();
        match &mut broker {
            #[cfg(feature = "kafka")]
            Some(group) => {
                let gc = group.commit(round, config(cap, gated), tracer)?;
                race(&gc, &recorder, n, seed)?;
            }
            _ => {
                let (gc, producer) = memory_commit(config(cap, gated), tracer);
                // A broker round trip per commit, so that writers queue up behind it.
                producer.log().commit_latency = Some(Duration::from_micros(200));
                race(&gc, &recorder, n, seed)?;
            }
        }
        let model = Model {
            n,
            cap,
            gated: true,
        };
        result.tally(&model, &events_of(&recorder.steps()));
    }
    if gated {
        replay_paths(settings, &mut rng, result)?;
        result.ok = result.conforming == result.traces && result.mismatches.is_empty();
    } else {
        reproduce_ungated(result)?;
        result.ok = result.divergent_traces > 0 && result.mismatches.is_empty();
    }
    Ok(())
}

fn config(cap: u8, gated: bool) -> GroupCommitConfig {
    let config = GroupCommitConfig::new(InputPartition::new("input", 0), SEED).cap(cap as usize);
    if gated {
        config
    } else {
        config.ungated()
    }
}

fn member(generation: i32) -> GroupMetadata {
    GroupMetadata {
        group_id: "conform".into(),
        generation_id: generation,
        member_id: "member-1".into(),
        group_instance_id: None,
    }
}

/// A group commit on the in-memory producer, whose coordinator holds GENERATION live.
fn memory_commit(
    config: GroupCommitConfig,
    tracer: SharedKafkaTracer,
) -> (GroupCommit<MemProducer>, MemProducer) {
    let producer = MemProducer::new();
    producer.log().live_generation = Some(GENERATION);
    let meta: Arc<dyn GroupMetadataSource> = Arc::new(|| Some(member(GENERATION)));
    (
        GroupCommit::new(producer.clone(), config, meta, tracer),
        producer,
    )
}

/// Keeps the Kafka step events in order, and which input offsets were offered (the flow waits
/// for those before it schedules past them).
#[derive(Default)]
struct Recorder {
    steps: Mutex<Vec<KafkaStep>>,
    offered: Mutex<u64>,
    changed: Condvar,
}

impl Recorder {
    fn steps(&self) -> Vec<KafkaStep> {
        lock(&self.steps).clone()
    }

    /// Blocks until the writes of offsets 1..=o were offered.
    fn wait_offered(&self, o: u8) {
        let all: u64 = (1..=o).map(|k| 1u64 << k).sum();
        let mut offered = lock(&self.offered);
        while *offered & all != all {
            offered = self
                .changed
                .wait(offered)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Tracer for Recorder {}

impl KafkaTracer for Recorder {
    fn kafka(&self, step: &KafkaStep) {
        lock(&self.steps).push(step.clone());
        if let KafkaStep::Offer { offset, .. } = step {
            *lock(&self.offered) |= 1u64 << offset;
            self.changed.notify_all();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One run on real threads: `n` writers (each after a seeded pause) and the flow, which picks
/// the offsets it schedules from the same seed and retries an offset the gate refuses.
fn race<P: TxnProducer + Send>(
    gc: &GroupCommit<P>,
    recorder: &Recorder,
    n: u8,
    seed: u64,
) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let pauses: Vec<u64> = (0..n).map(|_| rng.below(300)).collect();
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
                    .map_err(|e| format!("writer {w}: {e}"))
                })
            })
            .collect();
        let flow = scope.spawn(move || schedule_all(gc, recorder, n, &mut rng));
        let mut failures: Vec<String> = writers
            .into_iter()
            .filter_map(|h| h.join().expect("writer thread").err())
            .collect();
        if let Err(e) = flow.join().expect("flow thread") {
            failures.push(e);
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("; "))
        }
    })
}

/// The flow: schedules seeded offsets up to `n`, each once its records were offered.
fn schedule_all<P: TxnProducer>(
    gc: &GroupCommit<P>,
    recorder: &Recorder,
    n: u8,
    rng: &mut Rng,
) -> Result<(), String> {
    let mut oc = 0u8;
    while oc < n {
        let o = oc + 1 + rng.below((n - oc) as u64) as u8;
        recorder.wait_offered(o);
        let started = Instant::now();
        loop {
            match gc.schedule(o as i64 + SEED) {
                Ok(()) => break,
                Err(CommitError::Ungated { .. }) if started.elapsed() < SCHEDULE_PATIENCE => {
                    std::thread::sleep(Duration::from_micros(50));
                }
                Err(e) => return Err(format!("the flow could not schedule offset {o}: {e}")),
            }
        }
        oc = o;
    }
    Ok(())
}

/// The model's reading of how a transaction ended.
pub fn outcome_of(outcome: &TxnOutcome) -> loadbearing_specs::kafka::trace::TxnOutcome {
    use loadbearing_specs::kafka::trace::TxnOutcome as Model;
    match outcome {
        TxnOutcome::Committed => Model::Committed,
        TxnOutcome::Fenced(code) => Model::Fenced(code.clone()),
        TxnOutcome::Refused(why) => Model::Refused(why.clone()),
        TxnOutcome::Failed(why) => Model::Failed(why.clone()),
    }
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
                outcome: Some(outcome_of(outcome)),
            },
            KafkaStep::Await {
                writer, outcome, ..
            } => GcEvent::Await {
                writer: writer_of(&offset_of, *writer),
                outcome: Some(outcome_of(outcome)),
            },
            KafkaStep::Sched { offset, .. } => GcEvent::Sched {
                o: (*offset - SEED).max(0) as u64,
            },
            KafkaStep::OwnerFold { .. }
            | KafkaStep::OwnerRecover { .. }
            | KafkaStep::Rebalance { .. }
            | KafkaStep::Poll { .. }
            | KafkaStep::ZombieCommit { .. }
            | KafkaStep::ZombieInit { .. } => continue,
        };
        events.push(event);
    }
    events
}

/// What the implementation shows after a step: the model's `done`, `co` and `oc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Observed {
    done: u16,
    co: u8,
    oc: u8,
}

fn observe(gc: &GroupCommit<MemProducer>, producer: &MemProducer) -> Observed {
    let log = producer.log();
    let done = log
        .durable
        .iter()
        .filter_map(|w| w.key.strip_prefix('k')?.parse::<u8>().ok())
        .fold(0u16, |d, w| d | 1 << w);
    let model_offset = |o: Option<i64>| o.map_or(0, |o| (o - SEED).max(0) as u8);
    Observed {
        done,
        co: model_offset(log.committed_offset),
        oc: model_offset(gc.scheduled()),
    }
}

fn expected(state: &GcState) -> Observed {
    Observed {
        done: state.done,
        co: state.co,
        oc: state.oc,
    }
}

/// What driving one model path did to the implementation.
#[derive(Default)]
struct Driven {
    /// Steps after which the implementation's state differed from the model's.
    mismatches: Vec<String>,
    /// The first step the implementation refused (its gate), if any.
    refused: Option<String>,
    /// The first step after which the committed offset led the durable writes.
    leading: Option<String>,
}

/// Drives the in-memory group commit through `path` one model step at a time. Comparison
/// with the model stops at the first refused step (from there the two legitimately differ);
/// the implementation's own invariant is checked throughout.
fn drive(model: &Model, path: &[GcAction], gated: bool) -> Result<Driven, String> {
    let (gc, producer) = memory_commit(
        config(model.cap, gated),
        Arc::new(loadbearing_impls_kafka::trace::NoKafkaTrace),
    );
    let mut tickets: HashMap<u8, Ticket> = HashMap::new();
    let mut held: HashMap<u8, Held<'_, MemProducer>> = HashMap::new();
    let mut state = model.init_states().remove(0);
    let mut driven = Driven::default();
    for (i, action) in path.iter().enumerate() {
        let step = format!("step {} {action:?}", i + 1);
        match *action {
            GcAction::Offer(w) => {
                let write = SnapshotWrite::persist(&format!("k{w}"), w as i64, b"replayed");
                tickets.insert(w, gc.offer(write));
            }
            GcAction::Acq(w) => {
                let ticket = tickets.get(&w).ok_or(format!("{step}: no offer before"))?;
                held.insert(w, gc.acquire(ticket));
            }
            GcAction::Commit(w) => {
                let lock = held.remove(&w).ok_or(format!("{step}: no acq before"))?;
                // The outcome reaches each drained writer through its ticket.
                let _ = gc.commit(lock);
            }
            GcAction::Await(w) => {
                let ticket = tickets.get(&w).ok_or(format!("{step}: no offer before"))?;
                match gc.try_await(ticket) {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => driven
                        .mismatches
                        .push(format!("{step}: the write failed: {e}")),
                    None => driven
                        .mismatches
                        .push(format!("{step}: no transaction carried writer {w}'s write")),
                }
            }
            GcAction::Sched(o) => match gc.schedule(o as i64 + SEED) {
                Ok(()) => {}
                Err(CommitError::Ungated { pending, .. }) => {
                    if driven.refused.is_none() {
                        driven.refused = Some(format!(
                            "{step}: refused, the write of offset {pending} is not durable"
                        ));
                    }
                }
                Err(e) => return Err(format!("{step}: {e}")),
            },
            GcAction::SchedDone | GcAction::Terminating => {}
        }
        state = model
            .next_state(&state, *action)
            .ok_or(format!("{step} is not enabled in the model"))?;
        let seen = observe(&gc, &producer);
        if driven.refused.is_none() && seen != expected(&state) {
            driven.mismatches.push(format!(
                "{step}: the implementation shows {seen:?}, the model {:?}",
                expected(&state)
            ));
        }
        let durable_upto = (1..=seen.co).all(|k| seen.done & (1 << k) != 0);
        if !durable_upto && driven.leading.is_none() {
            driven.leading = Some(format!(
                "{step}: input offset {} committed while only {:?} are durable",
                seen.co,
                (1..=seen.co)
                    .filter(|k| seen.done & (1 << k) != 0)
                    .collect::<Vec<_>>()
            ));
        }
    }
    Ok(driven)
}

/// The stutter once every process is done: never driven (the implementation has no step for it).
fn is_final_stutter(action: &GcAction) -> bool {
    *action == GcAction::Terminating
}

/// Model → implementation on the gated group commit: all short paths of small configs and
/// random walks with every writer; the implementation must do what the model does.
fn replay_paths(
    settings: &Settings,
    rng: &mut Rng,
    result: &mut TargetResult,
) -> Result<(), String> {
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
            cap: 1 + rng.below(3) as u8,
            gated: true,
        };
        let init = wide.init_states().remove(0);
        let (walk, _) = random_walk(&wide, init, rng, usize::MAX, is_final_stutter);
        paths.push((wide, walk));
    }
    for (model, path) in &paths {
        let driven = drive(model, path, true)?;
        result.steps += path.len();
        result.mismatches.extend(driven.mismatches);
        if let Some(refused) = driven.refused {
            result.mismatches.push(format!(
                "the gated model allowed it, the implementation {refused}"
            ));
        }
        if let Some(leading) = driven.leading {
            result.mismatches.push(leading);
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
fn reproduce_ungated(result: &mut TargetResult) -> Result<(), String> {
    let Cx {
        model,
        path: shortest,
        ..
    } = counterexample::<Model>("gc_ungated")?;
    let in_order = shortest_in_flow_order(&model)
        .ok_or("gc_ungated: no counterexample in which the flow offers before it schedules")?;
    for (name, path, must_refuse) in [
        ("gc_ungated", &shortest, false),
        (
            "gc_ungated (flow offers before it schedules)",
            &in_order,
            true,
        ),
    ] {
        let broken = drive(&model, path, false)?;
        let guarded = drive(&model, path, true)?;
        result.steps += 2 * path.len();
        result.mismatches.extend(broken.mismatches);
        if broken.leading.is_none() {
            result.mismatches.push(format!(
                "{name} on the ungated group commit: the committed offset never led the durable writes"
            ));
        }
        if let Some(leading) = &guarded.leading {
            if must_refuse {
                result
                    .mismatches
                    .push(format!("{name} on the gated group commit: {leading}"));
            }
        }
        if must_refuse && guarded.refused.is_none() {
            result.mismatches.push(format!(
                "{name} on the gated group commit: no step was refused"
            ));
        }
        let guarded_did = match (&guarded.refused, &guarded.leading) {
            (Some(refused), _) => refused.clone(),
            (None, Some(leading)) => format!(
                "not refused ({leading}): the gate sees only offered writes, and this schedule runs ahead of an offer, which the flow never does"
            ),
            (None, None) => "not refused, no violation".into(),
        };
        result.replays.push(super::Replay {
            config: "gc_ungated".into(),
            steps: path.iter().map(|a| format!("{a:?}")).collect(),
            broken: broken.leading.unwrap_or_else(|| "did not reproduce".into()),
            guarded: guarded_did,
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

/// The consumer group of a run on a real broker; None in memory.
#[cfg(feature = "kafka")]
fn kafka_group(backend: &Backend) -> Result<Option<kafka_backend::Group>, String> {
    Ok(match backend {
        Backend::Kafka(bootstrap) => Some(kafka_backend::Group::join(bootstrap)?),
        _ => None,
    })
}

/// Without the Kafka client (feature `kafka`) there is no broker: every run is in memory.
#[cfg(not(feature = "kafka"))]
fn kafka_group(_: &Backend) -> Result<Option<std::convert::Infallible>, String> {
    Ok(None)
}

/// The group commit on a real Kafka 4.4 broker: a consumer group member supplies the live
/// group metadata, each run writes to a fresh snapshot topic with a fresh transactional id.
#[cfg(feature = "kafka")]
mod kafka_backend {
    use super::*;
    use loadbearing_impls_kafka::flow::{Member, MemberConfig};
    use loadbearing_impls_kafka::kafka::{self, KafkaTxnProducer, LiveGroupMetadata};
    use loadbearing_impls_kafka::trace::no_trace;

    pub struct Group {
        bootstrap: String,
        member: Member,
        run: String,
        input: String,
    }

    impl Group {
        pub fn join(bootstrap: &str) -> Result<Group, String> {
            let run = format!(
                "conform-gc-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis())
                    .unwrap_or(0)
            );
            let input = format!("{run}-input");
            kafka::create_topics(bootstrap, &[(&input, 1, false)])?;
            let member = Member::join(
                bootstrap,
                &format!("{run}-group"),
                &input,
                "conform",
                &MemberConfig::default(),
                no_trace(),
            )?;
            member.poll_until_assigned(Duration::from_secs(60))?;
            Ok(Group {
                bootstrap: bootstrap.to_string(),
                member,
                run,
                input,
            })
        }

        /// A group commit on a fresh snapshot topic, fenced by the member's live generation.
        pub fn commit(
            &mut self,
            round: usize,
            config: GroupCommitConfig,
            tracer: SharedKafkaTracer,
        ) -> Result<GroupCommit<KafkaTxnProducer>, String> {
            let topic = format!("{}-snapshots-{round}", self.run);
            kafka::create_topics(&self.bootstrap, &[(&topic, 1, true)])?;
            let producer =
                KafkaTxnProducer::new(&self.bootstrap, &format!("{topic}-txn"), &topic, 0)
                    .map_err(|e| format!("init_transactions: {e}"))?;
            // Keep the membership alive between runs (a member that stops polling is evicted).
            let _ = self.member.poll(Duration::from_millis(1));
            let config = GroupCommitConfig {
                input: InputPartition::new(&self.input, 0),
                ..config
            };
            Ok(GroupCommit::new(
                producer,
                config,
                Arc::new(LiveGroupMetadata(self.member.consumer.clone())),
                tracer,
            ))
        }
    }
}
