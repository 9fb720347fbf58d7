//! The compound's must-fail configs (`casfw_no_ine`, `casfw_noretry`, `casfw_spurious`) driven
//! through the real three-statement first write on PostgreSQL, statement by statement in the
//! counterexample's order: each writer is a thread holding its own session, and the scripted
//! scheduler lets exactly the writer whose step comes next run its next statement; a
//! `ReapRow` step removes the row as a TTL expiry would.
//!
//! On the store built the same broken way (IF NOT EXISTS or the retry off; for `Reap`, the
//! design itself) the trace must be the counterexample, step for step, and the violation must
//! be visible in what the store did; on the guarded store the same schedule must fit the
//! guarded model and show no such thing.

use loadbearing_impls::trace::no_trace;
use loadbearing_impls::CompoundGuards;
use loadbearing_impls::{Read, WriteError};
use loadbearing_refinement::Model;
use loadbearing_specs::first_write::compound::{CasFirstWrite, CasFwAction, MAX_WRITERS};
use loadbearing_specs::first_write::trace::{FirstWriteEvent, Outcome, Statement, Writer};
use loadbearing_trace::{validate, Limits};

use crate::error::{Error, HarnessError};
use crate::mismatch::Mismatch;
use crate::replays::{self, ReplayOutcome, Violation};
use crate::schedule::{Scheduler, Scripted};
use crate::stores::{event_of, row_of, StoreFactory};
use crate::target::{Replay, Settings, TargetResult};
use crate::target_id::TargetId;
use crate::{counterexample, Cx};

/// The scheduler's actor index of the reaper (after the writers).
const REAPER: usize = MAX_WRITERS;

/// What one scripted run did.
struct Run {
    events: Vec<FirstWriteEvent>,
    /// Each writer's persist result.
    results: Vec<(usize, Result<(), WriteError>)>,
    /// The row when the script was done (before the writers were released).
    row: Read,
    /// The scripted step a writer had already finished before taking, if any.
    early: Option<usize>,
}

fn actor_of(action: &CasFwAction) -> usize {
    match action {
        CasFwAction::Update1(w) | CasFwAction::Insert(w) | CasFwAction::RetryUpdate(w) => {
            *w as usize
        }
        CasFwAction::ReapRow => REAPER,
    }
}

/// Runs `path` on stores from `factory`: writer w persists `off[w]`.
fn scripted(
    factory: &StoreFactory,
    key: &str,
    off: &[u8],
    path: &[CasFwAction],
) -> Result<Run, Error> {
    let order: Vec<usize> = path.iter().map(actor_of).collect();
    let mut writers: Vec<usize> = order.iter().copied().filter(|&a| a != REAPER).collect();
    writers.sort_unstable();
    writers.dedup();
    let reaps = order.iter().filter(|&&a| a == REAPER).count();
    let scheduler = Scheduler::scripted(MAX_WRITERS + 1, Scripted::along(order));
    let stores = writers
        .iter()
        .map(|&w| factory.open(scheduler.tracer(w)))
        .collect::<Result<Vec<_>, _>>()?;
    let reaper = factory.reaper(scheduler.tracer(REAPER))?;
    let reader = factory.open(no_trace())?;
    let mut results = Vec::new();
    let mut reaped = Ok(());
    let (early, row) = std::thread::scope(|scope| {
        let handles: Vec<_> = writers
            .iter()
            .zip(&stores)
            .map(|(&w, store)| {
                let scheduler = scheduler.clone();
                let payload = format!("w{}@{}", w + 1, off[w]);
                scope.spawn(move || {
                    scheduler.wait_turn(w);
                    let result = store.persist(key, off[w] as u64, payload.as_bytes());
                    scheduler.finished(w);
                    (w, result)
                })
            })
            .collect();
        let reaping = {
            let scheduler = scheduler.clone();
            let reaper = &reaper;
            scope.spawn(move || {
                for _ in 0..reaps {
                    scheduler.wait_turn(REAPER);
                    // The reap's event hands the turn on; a reap that finds no row has no
                    // event, so the script cannot go on: stop there.
                    let reaped = reaper.reap(key).map_err(Error::open("reaping the row"))?;
                    if !reaped {
                        scheduler.finished(REAPER);
                        return Err(HarnessError::out_of_order(
                            format!("the scripted reap of {key}"),
                            "it found no row",
                        ));
                    }
                }
                scheduler.finished(REAPER);
                Ok(())
            })
        };
        let early = scheduler.wait_script_done().err();
        let row = reader.read(key);
        scheduler.release();
        for handle in handles {
            results.push(handle.join().expect("writer thread"));
        }
        reaped = reaping.join().expect("reaper thread");
        (early, row)
    });
    reaped?;
    Ok(Run {
        events: scheduler
            .steps()
            .iter()
            .filter_map(|(w, step)| event_of(Writer::model(*w), step, None))
            .collect(),
        results,
        row: row?,
        early,
    })
}

/// The compound's must-fail configs (the replay data's for `compound`) on PostgreSQL, each on
/// the matching broken store and on the guarded one.
pub fn replay_counterexamples(settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
    for spec in replays::driven_by(TargetId::Compound)? {
        let config = spec.config.as_str();
        let Cx {
            model,
            states,
            path,
        } = counterexample::<CasFirstWrite>(config)?;
        let guards = CompoundGuards {
            insert_if_not_exists: model.insert_if_not_exists,
            retry: model.retry,
        };
        let broken = StoreFactory::compound(
            settings.backend.clone(),
            loadbearing_impls::Mode::Guarded,
            "cx_compound",
            guards,
        )?;
        let shown: Vec<String> = path.iter().map(|a| model.format_action(a)).collect();
        let off = &states[0].off;
        let run = scripted(&broken, config, off, &path)?;
        result.steps += path.len();
        let verdict = validate(&model, &run.events, Limits::default());
        if verdict.witness.as_ref() != Some(&shown) || run.early.is_some() {
            result.mismatches.push(Mismatch::NotFollowed {
                on: config.to_string(),
                divergence: verdict.divergence.map(|d| d.text()),
            });
        }
        let last = states.last().expect("a path has states");
        let row = row_of(&run.row)?;
        if row != last.stored {
            result.mismatches.push(Mismatch::Differs {
                on: format!("{config}: after the counterexample"),
                what: "the row is",
                implementation: row.to_string(),
                model: last.stored.to_string(),
            });
        }
        let evidence = violation_on_store(spec.shows, &run, off);
        let broken_outcome = ReplayOutcome::of(spec.shows, evidence.is_some());
        let broken_did = evidence.unwrap_or_else(|| "did not reproduce".into());
        let (guarded_outcome, guarded_did) = if model.reap && guards == CompoundGuards::default() {
            // Reaping is not a guard that was removed: the design itself has this outcome.
            (
                ReplayOutcome::NotDriven,
                "the same store: a TTL reap between the lost insert and the retry is the design's own limit (docs/models/casfirstwrite.md)".to_string(),
            )
        } else {
            let guarded = StoreFactory::compound(
                settings.backend.clone(),
                loadbearing_impls::Mode::Guarded,
                "cx_compound_guarded",
                CompoundGuards::default(),
            )?;
            let run = scripted(&guarded, config, off, &path)?;
            result.steps += path.len();
            let guarded_model = CasFirstWrite {
                insert_if_not_exists: true,
                retry: true,
                ..model.clone()
            };
            let verdict = validate(&guarded_model, &run.events, Limits::default());
            if !verdict.conforming {
                result.mismatches.push(Mismatch::NotFollowed {
                    on: format!("{config} on the guarded store"),
                    divergence: verdict.divergence.map(|d| d.text()),
                });
            }
            match violation_on_store(spec.shows, &run, off) {
                Some(fact) => (ReplayOutcome::Reproduced(spec.shows), fact),
                None => (
                    ReplayOutcome::Refused,
                    format!("no violation; the writers ended {}", outcomes(&run.results)),
                ),
            }
        };
        result.mismatches.extend(crate::mismatch::judge_replay(
            &spec,
            broken_outcome,
            guarded_outcome,
        ));
        result.replays.push(Replay {
            config: config.into(),
            steps: shown,
            broken: broken_did,
            guarded: guarded_did,
            broken_outcome,
            guarded_outcome,
        });
    }
    Ok(())
}

fn outcomes(results: &[(usize, Result<(), WriteError>)]) -> String {
    results
        .iter()
        .map(|(w, r)| match r {
            Ok(()) => format!("w{} wrote", w + 1),
            Err(WriteError::Conflict(c)) => {
                format!("w{} refused ({} < stored {})", w + 1, c.attempted, c.stored)
            }
            Err(e) => format!("w{} failed ({e})", w + 1),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `violation` shows in what the store did (its writers' results, its row, its own
/// step events), and how.
fn violation_on_store(violation: Violation, run: &Run, off: &[u8]) -> Option<String> {
    match violation {
        // A writer's acknowledged write was overwritten by a lower offset.
        Violation::StaleOverwrite => {
            let stored = run.row.offset()?;
            run.results.iter().find_map(|(w, r)| {
                let written = u64::from(off[*w]);
                (r.is_ok() && written > stored).then(|| {
                    format!(
                        "w{}'s acknowledged write at offset {written} was overwritten by offset {stored}: a stale write landed",
                        w + 1
                    )
                })
            })
        }
        // A writer gave up although nothing higher was stored.
        Violation::UnjustifiedConflict => run.results.iter().find_map(|(w, r)| match r {
            Err(WriteError::Conflict(c)) if c.attempted >= c.stored => Some(format!(
                "w{} got a conflict for offset {} while the row held {}: its write was lost, not refused",
                w + 1,
                c.attempted,
                c.stored
            )),
            _ => None,
        }),
        // The retry found the row gone (reaped after the lost insert): a conflict for nothing.
        Violation::SpuriousConflict => run.events.iter().find_map(|event| match event {
            FirstWriteEvent::RetryUpdate(Statement {
                writer,
                offset,
                outcome: Some(Outcome::RowAbsent),
                ..
            }) => Some(format!(
                "{writer}: the retry of offset {offset} found no row (reaped after the lost insert): a spurious conflict, nothing was written"
            )),
            _ => None,
        }),
        // Not a violation the compound's store can show.
        _ => None,
    }
}
