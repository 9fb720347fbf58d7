//! Badger (`github.com/dgraph-io/badger/v4`, from the Go module proxy) as an engine that claims
//! serializable snapshot isolation: its read-write transactions read the versions committed
//! before they began, record the keys they read, and are refused at commit (`Transaction
//! Conflict`) when another transaction committed one of those keys since. Badger is Go, so our
//! small Go program (`go/badger-driver`, built by this crate's build script with the `badger`
//! feature) holds the database in memory and answers one request a line; each of a workload's
//! transactions is driven through it one step at a time.
//!
//! Badger keeps no writer column or version log the tier can read: each value carries its
//! writer (as PostgreSQL's `w`), and each commit appends its keys to a version log in the order
//! commits returned (taken one at a time under the log's lock: commit order, which for Badger
//! is version order).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use crate::engine::{CommitStep, Layout};
use crate::interleave::{self, Drivable, EveryInterleaving};
use crate::program::{Observed, Plan, Rows, Script};
use crate::race::{Run, VersionRow};
use crate::record::{scan_by_reads, select_by_reads, targeted_keys, Edit, ReadLog, VersionLog};
use crate::tier::{run_all, Conn, Scenario, Schedule};
use loadbearing_workload::workload::Workload;

/// The store's name in a workload's results.
pub const STORE: &str = "badger v4 (optimistic SSI)";

/// The driver this build made (`go/badger-driver`).
const DRIVER: &str = env!("LB_BADGER_DRIVER");

/// A step Badger refused, in its words (`Transaction Conflict. Please retry`), or a driver that
/// stopped answering.
#[derive(Debug, thiserror::Error)]
#[error("badger {0}")]
pub struct Refused(pub String);

/// The driver process: requests to its stdin, answers from its stdout.
struct Driver {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Driver {
    fn start() -> Result<Driver, Refused> {
        let mut child = Command::new(DRIVER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Refused(format!("cannot start its driver {DRIVER}: {e}")))?;
        let input = child.stdin.take().expect("piped");
        let output = BufReader::new(child.stdout.take().expect("piped"));
        let mut driver = Driver {
            child,
            input,
            output,
        };
        let ready = driver.answer()?;
        if !ready.starts_with("ready badger") {
            return Err(Refused(format!("its driver said {ready:?}")));
        }
        Ok(driver)
    }

    fn answer(&mut self) -> Result<String, Refused> {
        let mut line = String::new();
        match self.output.read_line(&mut line) {
            Ok(0) => Err(Refused("driver stopped".into())),
            Ok(_) => Ok(line.trim_end().to_string()),
            Err(e) => Err(Refused(format!("driver: {e}"))),
        }
    }

    /// One request, its answer; `err …` is a refusal in Badger's words.
    fn ask(&mut self, request: &str) -> Result<String, Refused> {
        writeln!(self.input, "{request}")
            .and_then(|()| self.input.flush())
            .map_err(|e| Refused(format!("driver: {e}")))?;
        let answer = self.answer()?;
        match answer.strip_prefix("err ") {
            Some(said) => Err(Refused(said.to_string())),
            None => Ok(answer),
        }
    }

    /// A `val V W` or `none` answer.
    fn versioned(&mut self, request: &str) -> Result<Option<(i64, i32)>, Refused> {
        let answer = self.ask(request)?;
        if answer == "none" {
            return Ok(None);
        }
        let parsed = answer.strip_prefix("val ").and_then(|rest| {
            let (v, w) = rest.split_once(' ')?;
            Some((v.parse().ok()?, w.parse().ok()?))
        });
        parsed
            .map(Some)
            .ok_or_else(|| Refused(format!("driver answered {answer:?}")))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One transaction of the script (`T{t}` to the driver).
struct BadgerConn<'r> {
    driver: &'r Mutex<Driver>,
    keys: &'r [String],
    layout: Layout,
    /// Transaction t of the script: its writes carry `w = t + 1`.
    t: usize,
    open: bool,
    written: Vec<String>,
    reads: &'r ReadLog,
    log: &'r Mutex<VersionLog>,
}

impl BadgerConn<'_> {
    fn driver(&self) -> std::sync::MutexGuard<'_, Driver> {
        self.driver.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An update or delete, row by row.
    fn edit(&mut self, rows: &Rows, edit: &Edit) -> Result<Observed, Refused> {
        let t = self.t;
        let mut changed = Vec::new();
        for key in targeted_keys(self.keys, rows) {
            let found = self.driver().versioned(&format!("get T{t} {key}"))?;
            let Some(change) = edit.change(rows, &key, found) else {
                continue;
            };
            let request = match change.value {
                Some(v) => format!("set T{t} {key} {v} {}", t + 1),
                None => format!("del T{t} {key}"),
            };
            self.driver().ask(&request)?;
            self.written.push(key);
            changed.push(change);
        }
        Ok(Observed::Changed(changed))
    }

    fn read(&mut self, key: &str) -> Result<Option<i64>, Refused> {
        let found = self.driver().versioned(&format!("get T{} {key}", self.t))?;
        if let Some((v, writer)) = found {
            self.reads.record(self.t, key.to_string(), writer, v);
        }
        Ok(found.map(|(v, _)| v))
    }
}

impl Conn for BadgerConn<'_> {
    type Error = Refused;

    fn begin(&mut self) -> Result<(), Refused> {
        self.driver().ask(&format!("begin T{}", self.t))?;
        self.open = true;
        Ok(())
    }

    fn exec(&mut self, plan: &Plan) -> Result<Observed, Refused> {
        match plan {
            Plan::Read(k) => Ok(Observed::Value(self.read(k)?)),
            Plan::Scan(p) => {
                // The workloads' files have no scan; a model script's is the page's reads.
                let (keys, layout) = (self.keys, self.layout.clone());
                let found = scan_by_reads(keys, |k| layout.page_of(k) == *p, |k| self.read(k))?;
                Ok(Observed::Rows(found))
            }
            Plan::Write(k, v) => {
                let request = format!("set T{} {k} {v} {}", self.t, self.t + 1);
                self.driver().ask(&request)?;
                self.written.push(k.clone());
                Ok(Observed::Wrote(*v))
            }
            Plan::Select(pred) => {
                let (keys, t) = (self.keys, self.t);
                select_by_reads(keys, *pred, |k| {
                    self.driver().versioned(&format!("get T{t} {k}"))
                })
                .map(Observed::Matched)
            }
            // A key-value store has no insert of its own: a read of the key (the store sees
            // it, as a unique check), refused if the row is there, else a put.
            Plan::Insert(k, v) => {
                let t = self.t;
                if self.driver().versioned(&format!("get T{t} {k}"))?.is_some() {
                    return Err(Refused(format!("duplicate key `{k}` (insert)")));
                }
                self.exec(&Plan::Write(k.clone(), *v))
            }
            Plan::Update { rows, set } => self.edit(rows, &Edit::Update(*set)),
            Plan::Delete(rows) => self.edit(rows, &Edit::Delete),
            Plan::Skip(_) => Ok(Observed::Skipped),
        }
    }

    fn commit(&mut self, hook: &mut dyn FnMut(CommitStep)) -> Result<(), Refused> {
        hook(CommitStep::Checked);
        hook(CommitStep::Recorded);
        let w = self.t as i32 + 1;
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        // The driver forgets the transaction whatever its commit answers.
        self.open = false;
        self.driver().ask(&format!("commit T{}", self.t))?;
        log.commit(w, &self.written);
        Ok(())
    }

    fn app_abort(&mut self) -> Result<(), Refused> {
        if std::mem::take(&mut self.open) {
            self.driver().ask(&format!("discard T{}", self.t))?;
        }
        Ok(())
    }

    fn cleanup(&mut self) -> Result<(), Refused> {
        self.app_abort()
    }
}

/// The driver, its database emptied before each run, the version log of the last run.
pub struct BadgerTier {
    driver: Mutex<Driver>,
    keys: Vec<String>,
    log: Mutex<VersionLog>,
}

impl BadgerTier {
    /// Starts the driver (an in-memory database).
    pub fn start() -> Result<BadgerTier, Refused> {
        Ok(BadgerTier {
            driver: Mutex::new(Driver::start()?),
            keys: Vec::new(),
            log: Mutex::new(VersionLog::default()),
        })
    }

    /// Every interleaving of `workload`'s transactions (at most `bound`, else that many drawn
    /// with `seed`) driven step by step (store name [`STORE`]).
    pub fn every(
        &mut self,
        workload: &Workload,
        bound: usize,
        seed: u64,
    ) -> Result<EveryInterleaving, Refused> {
        interleave::every(self, STORE, workload, bound, seed)
    }

    fn driver(&self) -> std::sync::MutexGuard<'_, Driver> {
        self.driver.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drivable for BadgerTier {
    type Error = Refused;

    fn run_once(
        &mut self,
        script: &Script,
        scenario: &Scenario,
        sched: &Schedule,
    ) -> Result<Run, Refused> {
        self.driver().ask("reset")?;
        for (k, v) in script.initial() {
            if let Some(v) = v {
                self.driver().ask(&format!("load {k} {v} 0"))?;
            }
        }
        self.keys = script.keys().into_iter().map(|(k, _)| k).collect();
        self.log = Mutex::new(VersionLog::default());
        let reads = ReadLog::default();
        let layout = script.layout();
        let conns: Vec<BadgerConn<'_>> = (0..script.txn_count())
            .map(|t| BadgerConn {
                driver: &self.driver,
                keys: &self.keys,
                layout: layout.clone(),
                t,
                open: false,
                written: Vec::new(),
                reads: &reads,
                log: &self.log,
            })
            .collect();
        let (results, observed) = run_all(script, scenario, sched, conns);
        Ok((results, observed, reads.into_reads()))
    }

    fn state(&mut self, script: &Script) -> Result<BTreeMap<String, Option<i64>>, Refused> {
        let mut state = BTreeMap::new();
        for (k, _) in script.keys() {
            let v = self.driver().versioned(&format!("read {k}"))?;
            state.insert(k, v.map(|(v, _)| v));
        }
        Ok(state)
    }

    fn versions(&mut self) -> Result<Vec<VersionRow>, Refused> {
        Ok(self.log.lock().unwrap_or_else(|e| e.into_inner()).rows())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over every interleaving of the write-skew pair and of two read-modify-writes, Badger's
    /// transactions commit no anomaly, every history established; where the two overlap, one
    /// is refused at commit in Badger's words.
    #[test]
    fn every_interleaving_on_badger_is_serializable() {
        let mut tier = BadgerTier::start().unwrap();
        for name in ["write_skew", "lost_update"] {
            let w = loadbearing_workload::workload::named(name).unwrap();
            let run = tier.every(&w, 1000, 1).unwrap();
            let race = &run.race;
            assert!(run.interleavings.every(), "{name}");
            assert!(race.problems(&[]).is_empty(), "{name}: {race:?}");
            assert_eq!(race.serializable, race.attempts, "{name}: {race:?}");
            assert!(
                race.outcomes
                    .keys()
                    .any(|o| o.contains("Transaction Conflict")),
                "{name}: {:?}",
                race.outcomes
            );
        }
    }
}
