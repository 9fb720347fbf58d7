//! Model → engine: a path driven through the engine in order on one thread. A caller holding
//! typed actions gives them as [`Action`]s ([`replay_actions`]; the conformance adapter maps
//! the model's own actions to them); a person gives their names, as `loadbearing trace
//! --format json` prints them (`Begin(T1)`, `Read(T1, bob)`, `Write(T1, alice)`, `Check(T1)`,
//! …), parsed here ([`replay`]).

use std::fmt;
use std::sync::Arc;

use crate::engine::{Engine, Error, Status, Variant};
use crate::program::{Outcome, Script, Session, StmtKind};
use crate::trace::{EngineEvent, Recorder};

/// One model action, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Begin(usize),
    Read(usize, String),
    Write(usize, String),
    /// `Exec(T1, 0)`: the next statement, whatever it is.
    Exec(usize, usize),
    Check(usize),
    Record(usize),
    End(usize),
    AppAbort(usize),
    Cleanup(usize),
}

impl Action {
    pub fn txn(&self) -> usize {
        match self {
            Action::Begin(t)
            | Action::Read(t, _)
            | Action::Write(t, _)
            | Action::Exec(t, _)
            | Action::Check(t)
            | Action::Record(t)
            | Action::End(t)
            | Action::AppAbort(t)
            | Action::Cleanup(t) => *t,
        }
    }
}

/// As the model names the action (and [`parse`] reads it back).
impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.txn() + 1;
        match self {
            Action::Begin(_) => write!(f, "Begin(T{t})"),
            Action::Read(_, k) => write!(f, "Read(T{t}, {k})"),
            Action::Write(_, k) => write!(f, "Write(T{t}, {k})"),
            Action::Exec(_, i) => write!(f, "Exec(T{t}, {i})"),
            Action::Check(_) => write!(f, "Check(T{t})"),
            Action::Record(_) => write!(f, "Record(T{t})"),
            Action::End(_) => write!(f, "End(T{t})"),
            Action::AppAbort(_) => write!(f, "AppAbort(T{t})"),
            Action::Cleanup(_) => write!(f, "Cleanup(T{t})"),
        }
    }
}

/// A step name [`parse`] cannot read as an action of the SSI model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a model action of the SSI model: `{0}`")]
pub struct NotAnAction(pub String);

/// Parses `Name(T1)` or `Name(T1, arg)`. `Init` is not an action (None).
pub fn parse(text: &str) -> Result<Option<Action>, NotAnAction> {
    let text = text.trim();
    if text == "Init" {
        return Ok(None);
    }
    let bad = || NotAnAction(text.to_string());
    let (name, rest) = text.split_once('(').ok_or_else(bad)?;
    let inner = rest.strip_suffix(')').ok_or_else(bad)?;
    let mut parts = inner.split(',').map(str::trim);
    let actor = parts.next().ok_or_else(bad)?;
    let t = actor
        .strip_prefix('T')
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n >= 1)
        .ok_or_else(bad)?
        - 1;
    let arg = parts.next().map(str::to_string);
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(Some(match (name, arg) {
        ("Begin", None) => Action::Begin(t),
        ("Read", Some(k)) => Action::Read(t, k),
        ("Write", Some(k)) => Action::Write(t, k),
        ("Exec", Some(i)) => Action::Exec(t, i.parse().map_err(|_| bad())?),
        ("Check", None) => Action::Check(t),
        ("Record", None) => Action::Record(t),
        ("End", None) => Action::End(t),
        ("AppAbort", None) => Action::AppAbort(t),
        ("Cleanup", None) => Action::Cleanup(t),
        _ => return Err(bad()),
    }))
}

/// What one replayed step returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepResult {
    pub action: String,
    /// None: the step succeeded; else the error kind (`SnapshotUnsafe`, …).
    pub error: Option<String>,
    /// The engine had already aborted the transaction (the path came from a model in which it
    /// had not): the step was not taken.
    pub skipped: bool,
}

/// The engine's state after a replay.
#[derive(Clone, Debug)]
pub struct Replayed {
    pub steps: Vec<StepResult>,
    /// Statuses, failures, committed values, and the serializability verdict.
    pub outcome: Outcome,
    pub trace: Vec<EngineEvent>,
}

impl Replayed {
    /// The error the step named `action` returned (None: it succeeded or never ran).
    pub fn error_of(&self, action: &str) -> Option<&str> {
        self.steps
            .iter()
            .find(|s| s.action == action)
            .and_then(|s| s.error.as_deref())
    }
}

/// A model step the engine could not take at all: the path does not fit this engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayError {
    pub index: usize,
    pub action: String,
    pub message: String,
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "step {} `{}`: {}",
            self.index + 1,
            self.action,
            self.message
        )
    }
}

impl std::error::Error for ReplayError {}

/// Drives `actions` through a fresh engine of `variant` running `script`. A step that fails
/// with an SSI or write error is recorded (that is an outcome, like the model's). When the
/// engine aborts a transaction the path goes on with (a path found on another variant), that
/// transaction's later steps are skipped, except `Cleanup`. A step the engine refuses outright,
/// or one naming another statement than the program's next, is a `ReplayError`.
pub fn replay<S: AsRef<str>>(
    script: &Script,
    variant: Variant,
    actions: &[S],
) -> Result<Replayed, ReplayError> {
    drive(
        script,
        variant,
        actions.iter().map(AsRef::as_ref).map(|text| {
            let parsed = parse(text);
            (text.to_string(), parsed)
        }),
    )
}

/// Drives typed `actions` through a fresh engine of `variant` running `script`, as [`replay`]
/// drives their names.
pub fn replay_actions(
    script: &Script,
    variant: Variant,
    actions: &[Action],
) -> Result<Replayed, ReplayError> {
    drive(
        script,
        variant,
        actions.iter().map(|a| (a.to_string(), Ok(Some(a.clone())))),
    )
}

/// The replay itself: each step as it is shown, and the engine action it takes (`None`: no
/// step, as `Init`; `Err`: a name that is no action).
fn drive(
    script: &Script,
    variant: Variant,
    actions: impl Iterator<Item = (String, Result<Option<Action>, NotAnAction>)>,
) -> Result<Replayed, ReplayError> {
    let recorder = Recorder::new();
    let engine = Engine::new(variant, script.layout()).with_tracer(recorder.clone() as Arc<_>);
    script.load(&engine);
    let mut session = Session::new(script, &engine);
    let mut steps = Vec::new();
    for (index, (text, action)) in actions.enumerate() {
        let text = text.as_str();
        let fail = |message: String| ReplayError {
            index,
            action: text.to_string(),
            message,
        };
        let Some(action) = action.map_err(|e| fail(e.to_string()))? else {
            continue;
        };
        let t = action.txn();
        if t >= script.txn_count() {
            return Err(fail(format!(
                "the workload `{}` has {} transactions",
                script.name(),
                script.txn_count()
            )));
        }
        let txn = session.txn(t);
        if txn.status() == Status::Aborted && !matches!(action, Action::Cleanup(_)) {
            steps.push(StepResult {
                action: text.to_string(),
                error: None,
                skipped: true,
            });
            continue;
        }
        let result: Result<(), Error> = match &action {
            Action::Begin(_) => txn.begin(),
            Action::Read(..) | Action::Write(..) | Action::Exec(..) => {
                let pc = session.pc[t];
                if pc >= script.stmt_count(t) {
                    return Err(fail(format!("T{} has no statement left", t + 1)));
                }
                let kind = script.stmt_kind(t, pc);
                let fits = match (&action, &kind) {
                    (Action::Read(_, k), StmtKind::Read(s)) => k == s,
                    (Action::Write(_, k), StmtKind::Write(s)) => k == s,
                    (Action::Exec(_, i), _) => *i == pc,
                    _ => false,
                };
                if !fits {
                    return Err(fail(format!("T{}'s next statement is {kind:?}", t + 1)));
                }
                session.next(t).map(|_| ())
            }
            Action::Check(_) => txn.check(),
            Action::Record(_) => txn.record(),
            Action::End(_) => txn.end(),
            Action::AppAbort(_) => txn.abort(),
            Action::Cleanup(_) => txn.cleanup(),
        };
        let error = match result {
            Ok(()) => None,
            Err(Error::NotAllowed(why)) => return Err(fail(why)),
            Err(e) => Some(e.to_string()),
        };
        steps.push(StepResult {
            action: text.to_string(),
            error,
            skipped: false,
        });
    }
    Ok(Replayed {
        steps,
        outcome: session.outcome(),
        trace: recorder.events(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::script;

    #[test]
    fn action_names_parse_and_nonsense_is_refused() {
        assert_eq!(parse("Init").unwrap(), None);
        assert_eq!(
            parse("Read(T1, bob)").unwrap(),
            Some(Action::Read(0, "bob".into()))
        );
        assert_eq!(parse("End(T2)").unwrap(), Some(Action::End(1)));
        assert_eq!(parse("Exec(T3, 1)").unwrap(), Some(Action::Exec(2, 1)));
        for bad in [
            "",
            "Begin",
            "Begin(T0)",
            "Begin(X1)",
            "Read(T1)",
            "Fly(T1)",
            "Read(T1, a, b)",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_path_that_does_not_fit_the_program_is_an_error_not_an_outcome() {
        let s = script("write_skew").unwrap();
        let e = replay(&s, Variant::FIX, &["Begin(T1)", "Read(T1, alice)"]).unwrap_err();
        assert_eq!(e.index, 1);
        let e = replay(&s, Variant::FIX, &["Check(T1)"]).unwrap_err();
        assert!(e.message.contains("Idle"), "{e}");
        let e = replay(&s, Variant::FIX, &["Begin(T3)"]).unwrap_err();
        assert!(e.message.contains("2 transactions"), "{e}");
    }
}
