//! Model → implementation: model paths (the must-fail configs' counterexamples, the guarded
//! model's random walks) driven through a world, the topic compared with the model's after
//! every step.

use super::*;

/// What one replay of a model path did to the implementation.
#[derive(Clone, Debug, Default)]
pub struct Replayed {
    pub events: Vec<KafkaEvent>,
    /// The topic after each step.
    pub topics: Vec<Cell>,
    /// A zombie commit was accepted.
    pub zombie_landed: bool,
    /// The topic's last record for the key moved to a lower offset (or vanished).
    pub regressed: bool,
    pub mismatches: Vec<Mismatch>,
}

/// The world under the model's steps, as the harness's moves. A step the implementation cannot
/// take is a mismatch, and the path goes on.
pub(super) struct Driving<'a> {
    pub(super) world: &'a mut World,
    pub(super) events: Vec<KafkaEvent>,
}

impl Harness for Driving<'_> {
    type Step = Move;
    type Observed = Cell;

    fn apply(&mut self, mv: &Move) -> Result<Applied, Error> {
        Ok(match self.world.apply(*mv) {
            Ok(event) => {
                let refused = matches!(
                    &event,
                    KafkaEvent::ZombieCommit { outcome: Some(outcome), .. } if !outcome.committed()
                );
                self.events.push(event);
                if refused {
                    Applied::Refused
                } else {
                    Applied::Taken
                }
            }
            Err(e) => Applied::Failed(e.to_string()),
        })
    }

    fn observe(&mut self) -> Result<Cell, Error> {
        self.world.topic()
    }
}

/// Drives `variant` through `moves` from log `ops`, comparing the topic after each step with
/// `expected[i]` (the model's).
pub fn drive(
    backend: &Backend,
    variant: Variant,
    ops: Ops,
    max: u8,
    moves: &[Move],
    expected: &[Cell],
) -> Result<Replayed, Error> {
    let mut world = World::new(variant, ops, max, backend)?;
    let mut driving = Driving {
        world: &mut world,
        events: Vec::new(),
    };
    let driven = drive_expecting(
        &mut driving,
        moves.iter().copied().zip(expected.iter().copied()),
        Compare::Always,
    )?;
    let zombie_landed = driving.events.iter().any(|event| {
        matches!(
            event,
            KafkaEvent::ZombieCommit { outcome: Some(outcome), .. } if outcome.committed()
        )
    });
    let context = format!("{variant:?}, log {}", ops.render(max));
    let regressed = driven
        .transitions()
        .any(|(before, after)| before.present && (!after.present || after.offset < before.offset));
    Ok(Replayed {
        events: driving.events,
        topics: driven.observed[1..].to_vec(),
        zombie_landed,
        regressed,
        mismatches: driven.records(context),
    })
}

/// The guarded model's topic along `moves`: a step the guarded model does not enable is
/// refused there (its state stays), and must be refused by the guarded implementation too.
pub(super) fn guarded_topics(guarded: &Kafka, init: &KafkaState, moves: &[Move]) -> Vec<Cell> {
    refusing_states(guarded, init, moves, |mv| mv.kafka_action())
        .iter()
        .map(|s| s.topic)
        .collect()
}

/// A must-fail config's counterexample replayed on the broken variant and the guarded design.
#[derive(Clone, Debug)]
pub struct CxReplay {
    pub spec: ReplaySpec,
    pub log: String,
    pub path: Vec<Move>,
    pub broken: Replayed,
    pub guarded: Replayed,
}

/// A config's counterexample as the harness's moves: MaxOffset, the log, the moves, and the
/// model's topic after each step.
pub(super) fn schedule_of<M: Configured + OneKey>(
    config: &str,
    to_move: fn(M::Action) -> Move,
) -> Result<(u8, Ops, Vec<Move>, Vec<Cell>), Error> {
    let Cx {
        model,
        states,
        path,
    } = counterexample::<M>(config)?;
    let topics = states[1..].iter().map(M::row).collect();
    let moves = path.into_iter().map(to_move).collect();
    Ok((model.max_offset(), M::log(&states[0]), moves, topics))
}

/// Replays the mutant's config counterexample on its variant and on the guarded design.
pub fn replay_counterexample(target: &KafkaTarget) -> Result<CxReplay, Error> {
    replay_counterexample_on(&Backend::MEMORY, target)
}

/// The must-fail config `target` reproduces (the replay data's), on `backend`.
pub fn replay_counterexample_on(
    backend: &Backend,
    target: &KafkaTarget,
) -> Result<CxReplay, Error> {
    let spec = replays::driven_by(target.id)?
        .into_iter()
        .next()
        .ok_or_else(|| {
            HarnessError::out_of_order(target.name(), "the replay data gives it no counterexample")
        })?;
    replay_config_on(backend, target, spec)
}

pub(super) fn replay_config_on(
    backend: &Backend,
    target: &KafkaTarget,
    spec: ReplaySpec,
) -> Result<CxReplay, Error> {
    // The model's topic after each step: what the broken variant must show. The counterexample
    // is a path of the config's model, the Kafka one or the rejected Epoch design's.
    let model = crate::suite_config(&spec.config)?.model;
    let (max, ops, path, broken_topics) = if model == <Epoch as Configured>::NAME {
        schedule_of::<Epoch>(&spec.config, Move::of_epoch)?
    } else {
        schedule_of::<Kafka>(&spec.config, Move::of_kafka)?
    };
    let guarded = Kafka {
        max_offset: max,
        coupled: true,
        seeded: true,
    };
    let guarded_init = guarded
        .init_states()
        .into_iter()
        .find(|s| s.op == ops)
        .ok_or_else(|| HarnessError::outside("the guarded model's log", ops))?;
    let guarded_topics = guarded_topics(&guarded, &guarded_init, &path);
    Ok(CxReplay {
        log: ops.render(max),
        broken: drive(backend, target.variant, ops, max, &path, &broken_topics)?,
        guarded: drive(backend, Variant::GUARDED, ops, max, &path, &guarded_topics)?,
        path,
        spec,
    })
}

/// Random walks of the guarded model driven on the guarded design.
pub(super) fn guarded_walks(settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
    let model = Kafka {
        max_offset: MAX_OFFSET,
        coupled: true,
        seeded: true,
    };
    let mut schedule = Seeded::new(settings.seed ^ 0x5EED);
    let inits = model.init_states();
    for _ in 0..settings.traces {
        let init = inits[schedule.below(inits.len() as u64) as usize].clone();
        let (path, states) = random_walk(&model, init.clone(), &mut schedule, MAX_STEPS, |_| false);
        let topics: Vec<Cell> = states[1..].iter().map(|s| s.topic).collect();
        let moves: Vec<Move> = path.into_iter().map(Move::of_kafka).collect();
        let replayed = drive(
            &settings.backend,
            Variant::GUARDED,
            init.op,
            MAX_OFFSET,
            &moves,
            &topics,
        )?;
        result.steps += moves.len();
        result.mismatches.extend(replayed.mismatches);
    }
    Ok(())
}

impl Replayed {
    /// The broken variant reproduced the zombie's violation: its commit landed and the topic
    /// moved back.
    pub(super) fn reproduced(&self) -> ReplayOutcome {
        ReplayOutcome::of(
            Violation::ZombieCommitLanded,
            self.zombie_landed && self.regressed,
        )
    }

    /// The guarded design refused it: no zombie commit landed, and the topic never moved back.
    pub(super) fn refused(&self) -> ReplayOutcome {
        ReplayOutcome::of(
            Violation::ZombieCommitLanded,
            self.zombie_landed || self.regressed,
        )
    }
}

/// Judges the replayed counterexample by its typed outcomes; what is missing goes to the
/// mismatches.
pub(super) fn judge_cx(cx: &CxReplay, result: &mut TargetResult) {
    result.steps += cx.broken.topics.len() + cx.guarded.topics.len();
    let shown: Vec<String> = cx.path.iter().map(|m| format!("{m:?}")).collect();
    let schedule = format!("{} ({}, log {})", cx.spec.config, shown.join(", "), cx.log);
    let (broken, guarded) = (cx.broken.reproduced(), cx.guarded.refused());
    for m in crate::mismatch::judge_replay(&cx.spec, broken, guarded) {
        result.mismatches.push(m.with_context(format!(
            "{schedule}: on the broken variant zombie commit landed {}, topic regressed {}; on the guarded design {}, {}",
            cx.broken.zombie_landed, cx.broken.regressed, cx.guarded.zombie_landed, cx.guarded.regressed
        )));
    }
    result
        .mismatches
        .extend(cx.broken.mismatches.iter().cloned());
    result
        .mismatches
        .extend(cx.guarded.mismatches.iter().cloned());
    let did = |r: &Replayed| {
        let topics: Vec<String> = r.topics.iter().map(Cell::to_string).collect();
        let what = match (r.zombie_landed, r.regressed) {
            (true, true) => "the zombie's commit landed and the topic moved back",
            (true, false) => "the zombie's commit landed",
            (false, true) => "the topic moved back",
            (false, false) => {
                "the zombie's commit was refused or never sent; the topic never moved back"
            }
        };
        format!("topic {}: {what}", topics.join(" → "))
    };
    result.replays.push(Replay {
        config: format!("{} (log {})", cx.spec.config, cx.log),
        steps: shown,
        broken: did(&cx.broken),
        guarded: did(&cx.guarded),
        broken_outcome: broken,
        guarded_outcome: guarded,
    });
}
