//! Conformance of the owner's restart (impls/src/flow.rs) to the ReplayFence model
//! (docs/models/replayfence.md), both ways: a restarted owner resumes below the high water it
//! recovered, and the replay fence keeps it from writing an older fold over a newer row.

use loadbearing_impls::flow::{FlowConfig, FlowError, Ownership, Record};
use loadbearing_impls::{Mode, SnapshotStore};
use loadbearing_refinement::Model;
use loadbearing_specs::replay_fence::model::{ReplayAction, ReplayFence, ReplayState};
use loadbearing_specs::replay_fence::trace::ReplayEvent;

use crate::backend::BackendKind;
use crate::driver::{self, Applied, Compare, Harness};
use crate::error::Error;
use crate::mismatch::Mismatch;
use crate::replays::{self, ReplayOutcome, Violation};
use crate::schedule::{Schedule, Seeded};
use crate::stores::{StoreFactory, STORES};
use crate::target::{Expect, ModelName, Replay, Settings, Target, TargetResult};
use crate::target_id::TargetId;
use crate::{counterexample, Cx};

use crate::partition_flow::{written, Traced};

// ----------------------------------------------------------------------------------------------
// The owner's restart below its recovered high water: the ReplayFence model

/// A restarted owner: a previous incarnation folded `1..=hw` and flushed; the new owner resumes
/// at the committed offset 0 and recovers the key at hw.
struct Restart {
    key: String,
    reader: Box<dyn SnapshotStore>,
    owner: Traced,
    hw: u16,
    /// Folded since the last write.
    dirty: bool,
}

impl Restart {
    fn new(factory: &StoreFactory, key: &str, hw: u16, fence: bool) -> Result<Restart, Error> {
        let ownership = Ownership::new();
        let mut previous = Traced::new(&ownership, factory, FlowConfig::default())?;
        for o in 1..=hw {
            previous.handle(&Record::new(key, o as u64, o.to_string().as_bytes()))?;
        }
        previous
            .flow
            .revoke()
            .map_err(Error::flow("the previous owner's revoke"))?;
        let config = FlowConfig {
            replay_fence: fence,
            ..FlowConfig::default()
        };
        let owner = Traced::recovered(&ownership, factory, config, key)?;
        Ok(Restart {
            key: key.to_string(),
            reader: factory.open(loadbearing_impls::trace::no_trace())?,
            owner,
            hw,
            dirty: false,
        })
    }

    fn cur(&self) -> u16 {
        self.owner.flow.position() as u16
    }

    fn stored(&self) -> Result<u64, Error> {
        Ok(self.reader.read(&self.key)?.offset().unwrap_or(0))
    }

    /// `Fold`: the owner handles its next record.
    fn fold(&mut self) -> Result<ReplayEvent, Error> {
        let o = self.cur() + 1;
        self.owner
            .handle(&Record::new(&self.key, o as u64, o.to_string().as_bytes()))?;
        self.owner.fresh();
        self.dirty = true;
        Ok(ReplayEvent::Fold {
            offset: o as u64,
            hw: Some(self.hw as u64),
        })
    }

    /// `Write`: flush what is buffered; with nothing buffered, a timer deletes the key at the
    /// flow's position (`tick_delete`), which is a write of the key at cur too.
    fn write(&mut self, tick: bool) -> Result<Option<ReplayEvent>, Error> {
        if tick {
            self.owner
                .flow
                .tick_delete(&self.key)
                .map_err(Error::flow("tick"))?;
        }
        let error = self.owner.flush()?;
        self.dirty = false;
        let steps = self.owner.fresh();
        let Some(w) = written(&steps) else {
            return Ok(None);
        };
        Ok(Some(ReplayEvent::Write {
            presented: Some(w.offset),
            stored: Some(self.stored()?),
            self_fenced: Some(matches!(error, Some(FlowError::SelfFenced(_)))),
            hw: Some(self.hw as u64),
        }))
    }
}

pub const FENCE_MAX_OFFSET: u16 = 5;

pub fn fence_trace(
    factory: &StoreFactory,
    key: &str,
    fence: bool,
    schedule: &mut dyn Schedule,
) -> Result<Vec<ReplayEvent>, Error> {
    let hw = 1 + schedule.below(FENCE_MAX_OFFSET as u64) as u16;
    let mut r = Restart::new(factory, key, hw, fence)?;
    let mut events = Vec::new();
    while r.owner.alive {
        let folding = r.cur() < FENCE_MAX_OFFSET;
        // Fold most of the time; flush, or tick, now and then; end with a flush.
        let event = match (folding, schedule.below(6)) {
            (true, 0..=2) => Some(r.fold()?),
            (true, 3 | 4) | (false, _) => r.write(false)?,
            (true, _) => r.write(true)?,
        };
        events.extend(event);
        if !folding {
            break;
        }
    }
    Ok(events)
}

/// The restarted owner with the replay fence on or off, against ReplayFence with the fix;
/// then the two counterexamples of the fence switched off (`replay_fix_off`, a self-fence, and
/// `replay_fix_off_live`, the owner never completing: the same broken write).
pub struct FenceTarget {
    id: TargetId,
    fence: bool,
}

/// The replay fence: an owner resuming below its recovered high water.
pub static FENCE: FenceTarget = FenceTarget {
    id: TargetId::Fence,
    fence: true,
};

/// The replay fence switched off (planted mutant).
pub static FENCE_OFF: FenceTarget = FenceTarget {
    id: TargetId::FenceOff,
    fence: false,
};

impl Target for FenceTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<ReplayFence>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        STORES
    }

    fn expect(&self) -> Expect {
        if self.fence {
            Expect::Conforms
        } else {
            Expect::Diverges
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let factory = StoreFactory::new(settings.backend.clone(), Mode::Guarded, self.id.name())?;
        let model = ReplayFence {
            max_offset: FENCE_MAX_OFFSET,
            fix: true,
        };
        let mut schedule = Seeded::new(settings.seed);
        for round in 0..settings.traces {
            let key = format!("fence{round}");
            let events = fence_trace(&factory, &key, self.fence, &mut schedule)?;
            result.tally(&model, &events);
        }
        for spec in replays::driven_by(self.id)? {
            let config = spec.config.as_str();
            let cx = replay_fence_cx(settings, config)?;
            result.steps += cx.steps;
            let did = |r: &FenceReplay| {
                if r.self_fenced {
                    "the owner self-fenced (its own flow refused to go on) and never completes"
                        .to_string()
                } else if r.completed {
                    "the owner completed".to_string()
                } else {
                    "the owner neither completed nor self-fenced".to_string()
                }
            };
            let broken = ReplayOutcome::of(spec.shows, cx.broken.shows(spec.shows));
            let guarded = match cx.fixed.violation() {
                Some(v) => ReplayOutcome::Reproduced(v),
                None => ReplayOutcome::Refused,
            };
            result.replays.push(Replay {
                config: config.into(),
                steps: cx.shown.clone(),
                broken: did(&cx.broken),
                guarded: did(&cx.fixed),
                broken_outcome: broken,
                guarded_outcome: guarded,
            });
            let reproducing = replays::reproduces(&spec, self.id);
            if reproducing {
                result
                    .mismatches
                    .extend(cx.broken.mismatches.iter().cloned());
            } else {
                result
                    .mismatches
                    .extend(cx.fixed.mismatches.iter().cloned());
            }
            // The fenced owner must complete on every schedule; the unfenced one must show the
            // config's violation when this target is the one built that way.
            let judged_broken = if reproducing {
                broken
            } else {
                ReplayOutcome::NotDriven
            };
            result
                .mismatches
                .extend(crate::mismatch::judge_replay(&spec, judged_broken, guarded));
        }
        Ok(())
    }
}

/// One ReplayFence schedule driven on a restarted owner.
#[derive(Debug, Default)]
pub struct FenceReplay {
    pub mismatches: Vec<Mismatch>,
    /// The owner's flow stopped with `FlowError::SelfFenced`.
    pub self_fenced: bool,
    /// After the schedule, the owner folded the rest of the log and flushed without error.
    pub completed: bool,
    pub steps: usize,
}

impl FenceReplay {
    /// Whether `violation` showed (the violations a restarted owner can show).
    pub fn shows(&self, violation: Violation) -> bool {
        match violation {
            Violation::SelfFence => self.self_fenced,
            Violation::NeverCompletes => !self.completed,
            _ => false,
        }
    }

    fn violation(&self) -> Option<Violation> {
        [Violation::SelfFence, Violation::NeverCompletes]
            .into_iter()
            .find(|v| self.shows(*v))
    }
}

/// The restarted owner as ReplayFence sees it: the stored offset, and whether it self-fenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FenceSeen {
    pub stored: u64,
    pub self_fenced: bool,
}

impl std::fmt::Display for FenceSeen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stored={} selfFenced={}", self.stored, self.self_fenced)
    }
}

/// The restarted owner under ReplayFence's steps: `Halted` (the model's stutter once the owner
/// stopped) has no counterpart; a self-fenced owner takes no more steps.
impl Harness for Restart {
    type Step = ReplayAction;
    type Observed = FenceSeen;

    fn apply(&mut self, action: &ReplayAction) -> Result<Applied, Error> {
        match action {
            ReplayAction::Fold => {
                self.fold()?;
            }
            ReplayAction::Write => {
                let tick = !self.dirty;
                self.write(tick)?;
            }
            ReplayAction::Halted => return Ok(Applied::Skipped),
        }
        Ok(Applied::Taken)
    }

    fn observe(&mut self) -> Result<FenceSeen, Error> {
        Ok(FenceSeen {
            stored: self.stored()?,
            self_fenced: !self.owner.alive,
        })
    }

    fn halted(&self) -> bool {
        !self.owner.alive
    }
}

/// Drives `path` (ReplayFence actions) on a restarted owner, comparing the stored offset and
/// the self-fence with `model`'s after every step; then lets the owner finish the log.
pub fn replay_fence(
    factory: &StoreFactory,
    key: &str,
    model: &ReplayFence,
    init: &ReplayState,
    path: &[ReplayAction],
) -> Result<FenceReplay, Error> {
    let mut r = Restart::new(factory, key, init.hw, model.fix)?;
    // The model's Halted is a stutter: the driver skips it without stepping the model.
    let driven_path: Vec<ReplayAction> = path
        .iter()
        .copied()
        .filter(|a| *a != ReplayAction::Halted)
        .collect();
    let driven = driver::drive(
        model,
        init,
        &driven_path,
        &mut r,
        |s| FenceSeen {
            stored: s.stored as u64,
            self_fenced: s.self_fenced,
        },
        Compare::Always,
    )?;
    let mut out = FenceReplay {
        steps: driven.steps,
        self_fenced: driven.observed.iter().any(|seen| seen.self_fenced),
        mismatches: driven.records(key),
        completed: false,
    };
    if r.owner.alive {
        while r.cur() < model.max_offset {
            r.fold()?;
        }
        r.write(false)?;
        out.completed = r.owner.alive;
    }
    Ok(out)
}

/// A ReplayFence config's counterexample (`replay_fix_off`, `replay_fix_off_live`) on the owner
/// without the fence (it must self-fence) and with it (it must complete).
pub struct FenceCx {
    /// The model steps, as the checker shows them.
    pub shown: Vec<String>,
    pub broken: FenceReplay,
    pub fixed: FenceReplay,
    pub steps: usize,
}

pub fn replay_fence_cx(settings: &Settings, config: &str) -> Result<FenceCx, Error> {
    let Cx {
        model,
        states,
        path,
    } = counterexample::<ReplayFence>(config)?;
    let factory = StoreFactory::new(settings.backend.clone(), Mode::Guarded, "fence_cx")?;
    let broken = replay_fence(&factory, "cx_off", &model, &states[0], &path)?;
    let fixed_model = ReplayFence {
        fix: true,
        ..model.clone()
    };
    let fixed = replay_fence(&factory, "cx_on", &fixed_model, &states[0], &path)?;
    Ok(FenceCx {
        shown: path.iter().map(|a| model.format_action(a)).collect(),
        steps: broken.steps + fixed.steps,
        broken,
        fixed,
    })
}
