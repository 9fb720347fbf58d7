//! Workloads from TOML files (docs/workloads.md): keys with their initial values, optionally
//! their pages, and up to three transactions of up to four steps in the step language of
//! [`super::step`]. Every problem — TOML syntax, an unknown key, a bad expression, a limit of
//! the model, a value a step uses before reading it — is a [`FileError`] naming the line.
//!
//! Without `[pages]`, each key is on a page of its own (at most [`MAX_PAGES`] keys then):
//! the finest marker granularity, so only a real rw-conflict on a key makes an SSI edge.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::anomaly::Class;
use super::schedule::{self, Schedule, ScheduleError, StepValue};
use super::step::{self, StepError};
use super::workload::{Ending, Stmt, Value, Workload};
use super::{BOUNDS, MAX_PAGES};

/// What is wrong with a workload file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("cannot read the file: {0}")]
    Unreadable(String),
    /// TOML's own message (syntax, a duplicate or unknown field, a wrong type).
    #[error("{0}")]
    Toml(String),
    #[error("no keys: a [keys] table gives each key its initial value")]
    NoKeys,
    #[error("`{0}` is not a key name: letters, digits and `_`, not starting with a digit, and not `all`, `where` or `value`")]
    BadKeyName(String),
    #[error("`{key} = \"{word}\"`: a key's initial value is a number or \"absent\"")]
    BadInitial { key: String, word: String },
    #[error("step `{step}` uses the value of `{key}`, which starts absent: a value computed from no row")]
    UsesAbsent { step: String, key: String },
    #[error("{keys} keys and no [pages]: the model has {MAX_PAGES} pages, so say which page each key is on")]
    PagesNeeded { keys: usize },
    #[error("[pages] names `{0}`, which is not a key of [keys]")]
    PageOfUnknownKey(String),
    #[error("the page of `{key}` is {page}; the model has pages 0 to {}", MAX_PAGES - 1)]
    PageOutOfRange { key: String, page: i64 },
    #[error("`{0}` has no page: with [pages], every key needs one")]
    MissingPage(String),
    #[error("no transactions: add [[txn]] tables with their steps")]
    NoTxns,
    #[error("T{txn} has no steps")]
    NoSteps { txn: usize },
    #[error(
        "T{txn}: step `{step}` after `{ending}`: `commit` or `abort` is a transaction's last step"
    )]
    StepAfterEnd {
        txn: usize,
        step: String,
        ending: &'static str,
    },
    #[error("step `{step}`: {why}")]
    BadStep { step: String, why: StepError },
    #[error(
        "step `{step}` uses `{key}` before this transaction reads it: add `read {key}` before it"
    )]
    UseBeforeRead { step: String, key: String },
    #[error("[expect] names `{name}`, which is neither a model variant ({known}) nor an engine ({stores})", stores = STORES.join(", "))]
    UnknownVariant { name: String, known: String },
    #[error(
        "[expect] names the model variant `{name}`, yet the workload is outside the model: {why}"
    )]
    ModelOutside { name: String, why: String },
    #[error("[schedule.expect] names `{name}`, which is neither `all` nor an engine: {stores}", stores = STORES.join(", "))]
    UnknownStore { name: String },
    #[error("`tests` names `{name}`, which is not an outcome: one of {known}")]
    UnknownTarget { name: String, known: String },
    #[error("[schedule]: {0}")]
    Schedule(ScheduleError),
    #[error("[expect] lists `{name}`, which is not an outcome: `serializable` or one of {known}")]
    UnknownOutcome { name: String, known: String },
    #[error("[expect] lists `serializable` with anomalies: it means none is reachable")]
    SerializableWithAnomalies,
}

/// What `[expect]` says one variant reaches: `serializable` (no anomaly), or exactly these
/// anomaly labels (`G2-item (write skew)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expect {
    pub variant: String,
    /// The line of the entry.
    pub line: usize,
    /// Sorted, deduplicated; empty for `serializable`.
    pub anomalies: Vec<String>,
}

/// The labels an `[expect]` entry may list besides `serializable`: every class, and each
/// class with the named pattern it can carry (the classifier's own, [`Class::labels`]).
pub fn outcomes() -> Vec<String> {
    Class::ALL.into_iter().flat_map(Class::labels).collect()
}

/// The engines (and their levels) an `[expect]` or `[schedule.expect]` table may name, as
/// the isolation runs name their columns: `postgres.repeatable_read = ["G2-item"]`.
pub const STORES: &[&str] = &[
    "postgres.serializable",
    "postgres.repeatable_read",
    "postgres.read_committed",
    "sqlite",
    "skipdb",
    "bdb",
    "badger",
    "mariadb.serializable",
    "mariadb.repeatable_read",
    "mariadb.read_committed",
];

/// A workload file: the workload and what its `[expect]` table says (empty without one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadFile {
    pub workload: Workload,
    /// What each model variant reaches (`fix = ["serializable"]`).
    pub expect: Vec<Expect>,
    /// What each engine at a level shows over the interleavings driven
    /// (`postgres.read_committed = ["G-single (lost update)"]`); `variant` is the engine's
    /// name among [`STORES`].
    pub engines: Vec<Expect>,
    /// The anomaly the workload tests for (`tests = "G-single (lost update)"`), as Hermitage
    /// names each test by one: the matrix reads each engine's row as prevented or shown by it.
    pub tests: Option<String>,
    /// One interleaving pinned by name, with the values its steps must show.
    pub schedule: Option<Pinned>,
}

/// A `[schedule]` table: an interleaving and what its steps must show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pinned {
    pub schedule: Schedule,
    /// The line of `steps`.
    pub line: usize,
    pub expect: Vec<StepExpect>,
}

/// One `T1.2 = 11` of `[schedule.expect]`: on every engine (`all`) or on one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepExpect {
    /// `None`: every engine (`all`); else one of [`STORES`].
    pub store: Option<String>,
    pub value: StepValue,
    pub line: usize,
}

/// A problem and where: `FILE:LINE: message` (`FILE: message` when the file cannot be read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    pub file: PathBuf,
    /// 1-based; `None` when the problem has no line (an unreadable file).
    pub line: Option<usize>,
    pub problem: Problem,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.problem),
            None => write!(f, "{}: {}", self.file.display(), self.problem),
        }
    }
}

impl std::error::Error for FileError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: Option<String>,
    #[serde(default)]
    keys: HashMap<String, Spanned<RawInitial>>,
    pages: Option<HashMap<String, Spanned<i64>>>,
    #[serde(default)]
    txn: Vec<RawTxn>,
    #[serde(default)]
    expect: HashMap<String, Listed>,
    tests: Option<Spanned<String>>,
    schedule: Option<RawSchedule>,
}

/// A key's initial value in `[keys]`: a number, or `"absent"` (no row until one is inserted).
#[derive(Deserialize)]
#[serde(untagged)]
enum RawInitial {
    Value(i64),
    Word(String),
}

/// The word `[keys]` takes for a key that starts without a row.
pub const ABSENT: &str = "absent";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchedule {
    steps: Spanned<String>,
    #[serde(default)]
    expect: HashMap<String, Listed>,
}

/// An `[expect]` entry: a list (`fix = [...]`, `sqlite = [...]`), or an engine's levels, each a
/// list (`postgres.repeatable_read = [...]`, which TOML reads as a table `postgres`).
enum Listed {
    List(Vec<Spanned<String>>),
    Levels(Vec<(String, Vec<Spanned<String>>)>),
}

impl<'de> Deserialize<'de> for Listed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Listed, D::Error> {
        // A visitor of our own, not an untagged enum: the latter buffers the value and loses
        // the spans TOML gives each item.
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Listed;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of outcomes, or a table of them by level")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Listed, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Listed::List(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Listed, A::Error> {
                let mut levels = Vec::new();
                while let Some((level, items)) = map.next_entry()? {
                    levels.push((level, items));
                }
                Ok(Listed::Levels(levels))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// Each entry of an expect table as (name, where, items): an engine's levels as
/// `engine.level`, in file order. TOML gives no span to a table reached by a dotted key
/// (`postgres.read_committed = …`), so an entry stands where its first item is, or, empty,
/// where a line starts with its name.
fn flatten(
    src: &Source,
    table: &HashMap<String, Listed>,
) -> Vec<(String, usize, Vec<Spanned<String>>)> {
    let mut out = Vec::new();
    let mut add = |name: String, items: &Vec<Spanned<String>>| {
        let at = items
            .first()
            .map_or_else(|| src.offset_of_key(&name), |i| i.span().start);
        out.push((name, at, items.clone()));
    };
    for (name, entry) in table {
        match entry {
            Listed::List(items) => add(name.clone(), items),
            Listed::Levels(levels) => {
                for (level, items) in levels {
                    add(format!("{name}.{level}"), items);
                }
            }
        }
    }
    out.sort_by_key(|(_, at, _)| *at);
    out
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTxn {
    steps: Spanned<Vec<Spanned<String>>>,
}

/// The source text, to turn byte offsets into lines.
struct Source<'a> {
    text: &'a str,
    file: &'a Path,
}

impl Source<'_> {
    fn line(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn at(&self, offset: usize, problem: Problem) -> FileError {
        FileError {
            file: self.file.to_path_buf(),
            line: Some(self.line(offset)),
            problem,
        }
    }

    /// The offset of the first line that assigns `key` (`key =`), else 0.
    fn offset_of_key(&self, key: &str) -> usize {
        let mut offset = 0;
        for line in self.text.split_inclusive('\n') {
            let rest = line.trim_start().strip_prefix(key).map(str::trim_start);
            if rest.is_some_and(|r| r.starts_with('=')) {
                return offset;
            }
            offset += line.len();
        }
        0
    }

    /// The line of a table's header (`[keys]`), else the first line.
    fn header(&self, table: &str) -> usize {
        let wanted = format!("[{table}]");
        self.text
            .lines()
            .position(|l| l.trim_start().starts_with(&wanted))
            .map_or(1, |i| i + 1)
    }

    fn at_header(&self, table: &str, problem: Problem) -> FileError {
        FileError {
            file: self.file.to_path_buf(),
            line: Some(self.header(table)),
            problem,
        }
    }
}

/// Loads a workload file; its name defaults to the file's stem.
pub fn load(path: &Path) -> Result<Workload, FileError> {
    let text = std::fs::read_to_string(path).map_err(|e| FileError {
        file: path.to_path_buf(),
        line: None,
        problem: Problem::Unreadable(e.to_string()),
    })?;
    parse(&text, path)
}

/// Loads a workload file with its `[expect]` table, whose variant names must be among
/// `variants`.
pub fn load_file(path: &Path, variants: &[&str]) -> Result<WorkloadFile, FileError> {
    let text = std::fs::read_to_string(path).map_err(|e| FileError {
        file: path.to_path_buf(),
        line: None,
        problem: Problem::Unreadable(e.to_string()),
    })?;
    parse_file(&text, path, variants)
}

/// Parses a workload file's text; `file` names it in errors and gives the default name.
pub fn parse(text: &str, file: &Path) -> Result<Workload, FileError> {
    Ok(parse_raw(text, file)?.0)
}

/// [`parse`], with the `[expect]` table checked against `variants`, [`STORES`] and
/// [`outcomes`], and the `tests` outcome and `[schedule]` against the workload.
pub fn parse_file(text: &str, file: &Path, variants: &[&str]) -> Result<WorkloadFile, FileError> {
    let (workload, raw) = parse_raw(text, file)?;
    let src = Source { text, file };
    let outcomes = outcomes();
    let mut expect = Vec::new();
    let mut engines = Vec::new();
    for (name, at, items) in flatten(&src, &raw.expect) {
        let entry = expectation(&src, &outcomes, name.clone(), at, &items)?;
        if variants.contains(&name.as_str()) {
            if let Some(why) = workload.outside_model(&BOUNDS) {
                return Err(src.at(at, Problem::ModelOutside { name, why }));
            }
            expect.push(entry);
        } else if STORES.contains(&name.as_str()) {
            engines.push(entry);
        } else {
            return Err(src.at(
                at,
                Problem::UnknownVariant {
                    name,
                    known: variants.join(", "),
                },
            ));
        }
    }
    let tests = match &raw.tests {
        Some(t) if !outcomes.contains(t.get_ref()) => {
            return Err(src.at(
                t.span().start,
                Problem::UnknownTarget {
                    name: t.get_ref().clone(),
                    known: outcomes.join(", "),
                },
            ))
        }
        t => t.as_ref().map(|t| t.get_ref().clone()),
    };
    let schedule = match &raw.schedule {
        Some(raw) => Some(pinned(&src, &workload, raw)?),
        None => None,
    };
    Ok(WorkloadFile {
        workload,
        expect,
        engines,
        tests,
        schedule,
    })
}

/// One `[expect]` entry's outcomes, checked.
fn expectation(
    src: &Source,
    outcomes: &[String],
    name: String,
    at: usize,
    items: &[Spanned<String>],
) -> Result<Expect, FileError> {
    let mut anomalies = Vec::new();
    let mut serializable = false;
    for item in items {
        let outcome = item.get_ref().trim();
        if outcome == "serializable" {
            serializable = true;
        } else if outcomes.iter().any(|o| o == outcome) {
            anomalies.push(outcome.to_string());
        } else {
            return Err(src.at(
                item.span().start,
                Problem::UnknownOutcome {
                    name: outcome.to_string(),
                    known: outcomes.join(", "),
                },
            ));
        }
    }
    if serializable && !anomalies.is_empty() {
        return Err(src.at(at, Problem::SerializableWithAnomalies));
    }
    anomalies.sort();
    anomalies.dedup();
    Ok(Expect {
        variant: name,
        line: src.line(at),
        anomalies,
    })
}

/// The `[schedule]` table, checked against the workload.
fn pinned(src: &Source, w: &Workload, raw: &RawSchedule) -> Result<Pinned, FileError> {
    let at = raw.steps.span().start;
    let schedule =
        schedule::parse(raw.steps.get_ref(), w).map_err(|e| src.at(at, Problem::Schedule(e)))?;
    let mut expect = Vec::new();
    for (name, entry_at, items) in flatten(src, &raw.expect) {
        let store = match name.as_str() {
            "all" => None,
            s if STORES.contains(&s) => Some(name.clone()),
            _ => return Err(src.at(entry_at, Problem::UnknownStore { name })),
        };
        for item in items {
            let value = schedule::parse_expectation(item.get_ref(), w)
                .map_err(|e| src.at(item.span().start, Problem::Schedule(e)))?;
            expect.push(StepExpect {
                store: store.clone(),
                value,
                line: src.line(item.span().start),
            });
        }
    }
    Ok(Pinned {
        schedule,
        line: src.line(at),
        expect,
    })
}

fn parse_raw(text: &str, file: &Path) -> Result<(Workload, RawFile), FileError> {
    let src = Source { text, file };
    let raw: RawFile = toml::from_str(text).map_err(|e| FileError {
        file: file.to_path_buf(),
        line: Some(e.span().map_or(1, |s| src.line(s.start))),
        problem: Problem::Toml(e.message().trim().to_string()),
    })?;
    let (keys, initial) = keys(&src, &raw.keys)?;
    let pages = pages(&src, &keys, &raw.keys, raw.pages.as_ref())?;
    let (programs, endings) = programs(&src, &keys, &initial, &raw.txn)?;
    let name = raw.name.clone().unwrap_or_else(|| {
        file.file_stem()
            .map_or("workload".into(), |s| s.to_string_lossy().into_owned())
    });
    let workload = Workload {
        name,
        keys,
        pages,
        initial,
        programs,
        endings,
    };
    let keys = workload.keys.len();
    if raw.pages.is_none() && keys > MAX_PAGES && workload.outside_model(&BOUNDS).is_none() {
        return Err(src.at_header("keys", Problem::PagesNeeded { keys }));
    }
    Ok((workload, raw))
}

/// The keys in file order (TOML tables are unordered; the values' offsets keep the order).
fn keys(
    src: &Source,
    raw: &HashMap<String, Spanned<RawInitial>>,
) -> Result<(Vec<String>, Vec<Option<Value>>), FileError> {
    if raw.is_empty() {
        return Err(src.at_header("keys", Problem::NoKeys));
    }
    let mut entries: Vec<(&String, &Spanned<RawInitial>)> = raw.iter().collect();
    entries.sort_by_key(|(_, v)| v.span().start);
    let mut keys = Vec::new();
    let mut initial = Vec::new();
    for (key, value) in entries {
        let at = value.span().start;
        if !step::is_key_name(key) {
            return Err(src.at(at, Problem::BadKeyName(key.clone())));
        }
        let v = match value.get_ref() {
            RawInitial::Word(w) if w == ABSENT => None,
            RawInitial::Word(w) => {
                return Err(src.at(
                    at,
                    Problem::BadInitial {
                        key: key.clone(),
                        word: w.clone(),
                    },
                ))
            }
            &RawInitial::Value(n) => Some(n),
        };
        keys.push(key.clone());
        initial.push(v);
    }
    Ok((keys, initial))
}

fn pages(
    src: &Source,
    keys: &[String],
    raw_keys: &HashMap<String, Spanned<RawInitial>>,
    raw: Option<&HashMap<String, Spanned<i64>>>,
) -> Result<Vec<usize>, FileError> {
    let Some(raw) = raw else {
        // A page each (more than the model has is refused once the workload is known to be
        // the model's: engines have no pages to run out of).
        return Ok((0..keys.len()).collect());
    };
    let mut entries: Vec<(&String, &Spanned<i64>)> = raw.iter().collect();
    entries.sort_by_key(|(_, v)| v.span().start);
    for (key, page) in &entries {
        let at = page.span().start;
        if !keys.contains(key) {
            return Err(src.at(at, Problem::PageOfUnknownKey(key.to_string())));
        }
        if !(0..MAX_PAGES as i64).contains(page.get_ref()) {
            return Err(src.at(
                at,
                Problem::PageOutOfRange {
                    key: key.to_string(),
                    page: *page.get_ref(),
                },
            ));
        }
    }
    keys.iter()
        .map(|k| match raw.get(k) {
            Some(page) => Ok(*page.get_ref() as usize),
            None => Err(src.at(raw_keys[k].span().start, Problem::MissingPage(k.clone()))),
        })
        .collect()
}

/// Each transaction's statements and how it ends.
type Programs = (Vec<Vec<Stmt>>, Vec<Ending>);

fn programs(
    src: &Source,
    keys: &[String],
    initial: &[Option<Value>],
    raw: &[RawTxn],
) -> Result<Programs, FileError> {
    if raw.is_empty() {
        return Err(FileError {
            file: src.file.to_path_buf(),
            line: Some(1),
            problem: Problem::NoTxns,
        });
    }
    raw.iter()
        .enumerate()
        .map(|(t, txn)| program(src, keys, initial, t + 1, &txn.steps))
        .collect::<Result<Vec<_>, _>>()
        .map(|programs| programs.into_iter().unzip())
}

/// The ending a step names, if it is `commit` or `abort`.
fn ending(step: &str) -> Option<Ending> {
    [Ending::Commit, Ending::Abort]
        .into_iter()
        .find(|e| e.step() == step)
}

/// One transaction's steps, each checked against the model's assumptions, and how it ends (a
/// last step `commit` or `abort`; a commit without one).
fn program(
    src: &Source,
    keys: &[String],
    initial: &[Option<Value>],
    txn: usize,
    steps: &Spanned<Vec<Spanned<String>>>,
) -> Result<(Vec<Stmt>, Ending), FileError> {
    let mut list: &[Spanned<String>] = steps.get_ref();
    let mut end = Ending::Commit;
    if let Some((last, before)) = list.split_last() {
        if let Some(e) = ending(last.get_ref().trim()) {
            end = e;
            list = before;
        }
    }
    if let Some(i) = list
        .iter()
        .position(|s| ending(s.get_ref().trim()).is_some())
    {
        // `list` is a prefix of the steps that does not end in an ending: one follows it.
        let after = &steps.get_ref()[i + 1];
        return Err(src.at(
            after.span().start,
            Problem::StepAfterEnd {
                txn,
                step: after.get_ref().trim().to_string(),
                ending: ending(list[i].get_ref().trim())
                    .expect("found above")
                    .step(),
            },
        ));
    }
    if list.is_empty() {
        return Err(src.at(steps.span().start, Problem::NoSteps { txn }));
    }
    let mut program: Vec<Stmt> = Vec::new();
    for text in list {
        let at = text.span().start;
        let step_text = text.get_ref().trim().to_string();
        let stmt = step::parse(&step_text, keys).map_err(|why| {
            src.at(
                at,
                Problem::BadStep {
                    step: step_text.clone(),
                    why,
                },
            )
        })?;
        // The model evaluates a write from the transaction's latest read of each key it uses
        // (`serial::last_read`): a value never read has nothing to come from.
        if let Some(unread) = step::uses(&stmt)
            .into_iter()
            .find(|k| !program.contains(&Stmt::Read(*k)))
        {
            return Err(src.at(
                at,
                Problem::UseBeforeRead {
                    step: step_text,
                    key: keys[unread].clone(),
                },
            ));
        }
        if let Some(absent) = step::uses(&stmt)
            .into_iter()
            .find(|&k| initial[k].is_none())
        {
            return Err(src.at(
                at,
                Problem::UsesAbsent {
                    step: step_text,
                    key: keys[absent].clone(),
                },
            ));
        }
        program.push(stmt);
    }
    Ok((program, end))
}

/// A workload in the file format ([`parse`] gives it back).
pub fn to_toml(w: &Workload) -> String {
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut out = format!("name = {}\n\n[keys]\n", quote(&w.name));
    for (k, v) in w.keys.iter().zip(&w.initial) {
        match v {
            Some(v) => out.push_str(&format!("{k} = {v}\n")),
            None => out.push_str(&format!("{k} = {}\n", quote(ABSENT))),
        }
    }
    // Outside the model a key a page is the default, and may be more pages than [pages] takes.
    let default_pages = w.pages.iter().copied().eq(0..w.keys.len());
    if w.outside_model(&BOUNDS).is_none() || !default_pages {
        out.push_str("\n[pages]\n");
        for (k, p) in w.keys.iter().zip(&w.pages) {
            out.push_str(&format!("{k} = {p}\n"));
        }
    }
    for (t, program) in w.programs.iter().enumerate() {
        let mut steps: Vec<String> = program.iter().map(|s| quote(&w.stmt_text(s))).collect();
        if w.ending(t) == Ending::Abort {
            steps.push(quote(Ending::Abort.step()));
        }
        out.push_str(&format!("\n[[txn]]\nsteps = [{}]\n", steps.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssi::workload::{named, NAMES};

    fn line_of(text: &str) -> (Option<usize>, Problem) {
        let e = parse(text, Path::new("bad.toml")).unwrap_err();
        (e.line, e.problem)
    }

    const SKEW: &str = r#"
[keys]
alice = 1
bob = 1

[[txn]]
steps = ["read bob", "put alice=0 if bob=1"]

[[txn]]
steps = ["read alice", "put bob=0 if alice=1"]
"#;

    #[test]
    fn every_compiled_in_workload_round_trips_through_the_file_format() {
        for name in NAMES {
            let w = named(name).unwrap();
            let text = to_toml(&w);
            let back = parse(&text, Path::new("x.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back, w, "{text}");
        }
    }

    #[test]
    fn defaults_are_the_file_stem_and_a_page_per_key() {
        let w = parse(SKEW, Path::new("dir/doctors.toml")).unwrap();
        assert_eq!(w.name, "doctors");
        assert_eq!(w.pages, vec![0, 1]);
        assert_eq!(w.programs, named("write_skew").unwrap().programs);
    }

    #[test]
    fn the_error_renders_file_and_line() {
        let e = parse("[keys\n", Path::new("w.toml")).unwrap_err();
        assert!(e.to_string().starts_with("w.toml:1: "), "{e}");
    }

    #[test]
    fn toml_syntax_errors_name_their_line() {
        let (line, p) = line_of("[keys]\nx = 1\ny = = 2\n");
        assert_eq!(line, Some(3));
        assert!(matches!(p, Problem::Toml(_)));
    }

    #[test]
    fn an_unknown_field_names_its_line() {
        let (line, p) = line_of("[keys]\nx = 1\n[[txn]]\nsteps = [\"read x\"]\nstpes = []\n");
        assert_eq!(line, Some(5));
        assert!(matches!(p, Problem::Toml(m) if m.contains("stpes")));
    }

    #[test]
    fn an_unknown_key_in_a_step_names_its_line() {
        let text = SKEW.replace("put bob=0 if alice=1", "put carol=0 if alice=1");
        let (line, p) = line_of(&text);
        assert_eq!(line, Some(10));
        assert!(
            matches!(p, Problem::BadStep { why: StepError::UnknownKey(k), .. } if k == "carol")
        );
    }

    #[test]
    fn a_bad_expression_names_its_line() {
        let text = "[keys]\nx = 0\n[[txn]]\nsteps = [\n  \"read x\",\n  \"put x=x+\",\n]\n";
        let (line, p) = line_of(text);
        assert_eq!(line, Some(6));
        assert!(matches!(p, Problem::BadStep { .. }));
    }

    /// Beyond the model's bounds (a fourth transaction, a fifth statement, a value past its
    /// `i8`) a workload reads, as one the model cannot run, saying which bound it passes; a
    /// number past 64 bits is still bad input naming its line.
    #[test]
    fn a_workload_beyond_the_models_bounds_reads_as_outside_it() {
        let outside = |text: &str| {
            parse(text, Path::new("w.toml"))
                .unwrap()
                .outside_model(&BOUNDS)
                .unwrap()
        };
        let mut four = "[keys]\nx = 0\n".to_string();
        for _ in 0..4 {
            four.push_str("[[txn]]\nsteps = [\"read x\"]\n");
        }
        assert_eq!(
            outside(&four),
            "4 transactions > 3: the model has room for 3"
        );
        let five = "[keys]\nx = 0\n[[txn]]\nsteps = [\"read x\", \"read x\", \"read x\", \"read x\", \"read x\", \"commit\"]\n";
        assert_eq!(
            outside(five),
            "T1 has 5 statements > 4: the model has room for 4 a transaction"
        );
        let initial = "[keys]\nx = 0\ny = 300\n[[txn]]\nsteps = [\"read x\"]\n";
        assert_eq!(
            outside(initial),
            "`y` starts at 300: the model holds values -128..=127"
        );
        let written = "[keys]\nx = 0\n[[txn]]\nsteps = [\"read x\", \"put x=x+1000\"]\n";
        assert_eq!(
            outside(written),
            "`put x=x+1000`: the model holds values -128..=127"
        );
        let guard = "[keys]\nx = 0\n[[txn]]\nsteps = [\"read x\", \"put x=1 if x=-129\"]\n";
        assert!(outside(guard).starts_with("`put x=1 if x=-129`"));
        // Three at most, four statements, and values within: inside.
        let inside = "[keys]\nx = -128\n[[txn]]\nsteps = [\"read x\", \"read x\", \"read x\", \"put x=127\", \"commit\"]\n";
        assert_eq!(
            parse(inside, Path::new("w.toml"))
                .unwrap()
                .outside_model(&BOUNDS),
            None
        );
        let huge = "[keys]\nx = 0\n[[txn]]\nsteps = [\"put x=9223372036854775808\"]\n";
        let (line, p) = line_of(huge);
        assert_eq!(line, Some(4));
        assert!(matches!(
            p,
            Problem::BadStep {
                why: StepError::OutOfRange(_),
                ..
            }
        ));
    }

    #[test]
    fn too_many_pages_name_the_page() {
        let text = "[keys]\nx = 0\n[pages]\nx = 2\n[[txn]]\nsteps = [\"read x\"]\n";
        let (line, p) = line_of(text);
        assert_eq!(line, Some(4));
        assert!(matches!(p, Problem::PageOutOfRange { page: 2, .. }));
        let three = "[keys]\nx = 0\ny = 0\nz = 0\n[[txn]]\nsteps = [\"read x\"]\n";
        assert_eq!(line_of(three), (Some(1), Problem::PagesNeeded { keys: 3 }));
    }

    #[test]
    fn a_use_before_read_names_its_line() {
        let text = "[keys]\nx = 0\ny = 0\n[[txn]]\nsteps = [\"read x\"]\n[[txn]]\nsteps = [\n\"put x=1\",\n\"put y=x+1\",\n]\n";
        let (line, p) = line_of(text);
        assert_eq!(line, Some(9));
        assert!(matches!(p, Problem::UseBeforeRead { key, .. } if key == "x"));
    }

    #[test]
    fn the_expect_table_is_read_and_checked() {
        let variants = ["fix", "plainsi"];
        let text = format!(
            "{SKEW}\n[expect]\nplainsi = [\"G2-item (write skew)\"]\nfix = [\"serializable\"]\n"
        );
        let f = parse_file(&text, Path::new("w.toml"), &variants).unwrap();
        assert_eq!(f.expect.len(), 2);
        assert_eq!(f.expect[0].variant, "plainsi");
        assert_eq!(f.expect[0].anomalies, ["G2-item (write skew)"]);
        assert_eq!(f.expect[1].line, 14);
        assert!(f.expect[1].anomalies.is_empty());
        let bad = |tail: &str| {
            let e = parse_file(
                &format!("{SKEW}\n[expect]\n{tail}"),
                Path::new("w"),
                &variants,
            )
            .unwrap_err();
            (e.line, e.problem)
        };
        assert!(matches!(bad("fixx = [\"serializable\"]\n"),
            (Some(13), Problem::UnknownVariant { name, .. }) if name == "fixx"));
        assert!(matches!(bad("fix = [\n\"G3\",\n\"write skew\"]\n"),
            (Some(14), Problem::UnknownOutcome { name, .. }) if name == "G3"));
        assert_eq!(
            bad("fix = [\"serializable\", \"G0\"]\n"),
            (Some(13), Problem::SerializableWithAnomalies)
        );
    }

    #[test]
    fn engines_and_their_levels_are_expected_beside_the_variants() {
        let text = format!(
            "{SKEW}\n[expect]\nfix = [\"serializable\"]\nsqlite = [\"serializable\"]\n\
             postgres.repeatable_read = [\"G2-item (write skew)\"]\n\
             postgres.read_committed = [\"G2-item (write skew)\"]\n"
        );
        let f = parse_file(&text, Path::new("w.toml"), &["fix"]).unwrap();
        assert_eq!(f.expect.len(), 1);
        let engines: Vec<(&str, usize)> = f
            .engines
            .iter()
            .map(|e| (e.variant.as_str(), e.line))
            .collect();
        assert_eq!(
            engines,
            [
                ("sqlite", 14),
                ("postgres.repeatable_read", 15),
                ("postgres.read_committed", 16)
            ]
        );
        let bad = format!("{SKEW}\n[expect]\npostgres.snapshot = [\"G0\"]\n");
        let e = parse_file(&bad, Path::new("w.toml"), &["fix"]).unwrap_err();
        assert_eq!(e.line, Some(13));
        assert!(
            matches!(e.problem, Problem::UnknownVariant { name, .. } if name == "postgres.snapshot")
        );
    }

    #[test]
    fn a_pinned_schedule_and_its_step_values_are_read_at_their_lines() {
        let text = format!(
            "{SKEW}tests = \"G2-item (write skew)\"\n[schedule]\n\
             steps = \"T1.begin T2.begin T1.1 T2.1 T1.2 T2.2 T1.commit T2.commit\"\n\
             [schedule.expect]\nall = [\"T1.1 = 1\"]\npostgres.serializable = [\"T2.1 = 1\"]\n"
        );
        // `tests` sits in the last [[txn]] table there: move it to the top.
        let text = format!(
            "tests = \"G2-item (write skew)\"\n{}",
            text.replace("tests = \"G2-item (write skew)\"\n", "")
        );
        let f = parse_file(&text, Path::new("w.toml"), &[]).unwrap();
        assert_eq!(f.tests.as_deref(), Some("G2-item (write skew)"));
        let pinned = f.schedule.unwrap();
        assert_eq!(pinned.line, 13);
        assert_eq!(pinned.schedule.order(), [0, 1, 0, 1, 0, 1, 0, 1]);
        let values: Vec<(Option<&str>, String, usize)> = pinned
            .expect
            .iter()
            .map(|e| (e.store.as_deref(), e.value.to_string(), e.line))
            .collect();
        assert_eq!(
            values,
            [
                (None, "T1.1 = 1".to_string(), 15),
                (Some("postgres.serializable"), "T2.1 = 1".to_string(), 16)
            ]
        );
        let missing = text.replace(" T2.commit\"", "\"");
        let e = parse_file(&missing, Path::new("w.toml"), &[]).unwrap_err();
        assert_eq!(e.line, Some(13));
        assert!(e.to_string().contains("leaves out `T2.commit`"), "{e}");
        let unknown = text.replace("T2.1 = 1", "T2.7 = 1");
        let e = parse_file(&unknown, Path::new("w.toml"), &[]).unwrap_err();
        assert_eq!(e.line, Some(16));
        let target = text.replace("tests = \"G2-item (write skew)\"", "tests = \"skew\"");
        let e = parse_file(&target, Path::new("w.toml"), &[]).unwrap_err();
        assert_eq!(
            (e.line, matches!(e.problem, Problem::UnknownTarget { .. })),
            (Some(1), true)
        );
    }

    #[test]
    fn commit_or_abort_ends_a_transaction_and_nothing_follows_it() {
        let w = parse(
            "[keys]\nx = 0\n[[txn]]\nsteps = [\"put x=1\", \"abort\"]\n[[txn]]\nsteps = [\"read x\", \"commit\"]\n",
            Path::new("w.toml"),
        )
        .unwrap();
        assert_eq!(w.endings, [Ending::Abort, Ending::Commit]);
        assert_eq!(w.programs[1].len(), 1);
        let back = parse(&to_toml(&w), Path::new("w.toml")).unwrap();
        assert_eq!(back.endings, w.endings);
        let (line, p) = line_of("[keys]\nx = 0\n[[txn]]\nsteps = [\n\"abort\",\n\"read x\",\n]\n");
        assert_eq!(line, Some(6));
        assert!(
            matches!(p, Problem::StepAfterEnd { step, ending: "abort", .. } if step == "read x")
        );
        let (_, p) = line_of("[keys]\nx = 0\n[[txn]]\nsteps = [\"commit\"]\n");
        assert_eq!(p, Problem::NoSteps { txn: 1 });
    }

    #[test]
    fn missing_parts_are_named() {
        assert_eq!(
            line_of("name = \"n\"\n[keys]\n[[txn]]\nsteps = [\"read x\"]\n"),
            (Some(2), Problem::NoKeys)
        );
        assert_eq!(line_of("[keys]\nx = 0\n"), (Some(1), Problem::NoTxns));
        assert_eq!(
            line_of("[keys]\nx = 0\n[[txn]]\nsteps = []\n"),
            (Some(4), Problem::NoSteps { txn: 1 })
        );
        assert_eq!(
            line_of("[keys]\nx = 0\ny = 1\n[pages]\nx = 0\n[[txn]]\nsteps = [\"read x\"]\n"),
            (Some(3), Problem::MissingPage("y".into()))
        );
    }

    /// A key may start absent; a workload with predicate reads or inserts is outside the model,
    /// so it needs no pages and its `[expect]` may name engines only.
    #[test]
    fn absent_keys_and_predicates_read_as_a_workload_outside_the_model() {
        let text = "[keys]\nx = 10\ny = 20\nz = \"absent\"\n\n[[txn]]\nsteps = [\"read where value % 3 = 0\", \"insert z=30\"]\n\n[expect]\npostgres.serializable = [\"serializable\"]\n";
        let f = parse_file(text, Path::new("w.toml"), &["fix"]).unwrap();
        assert_eq!(f.workload.initial, vec![Some(10), Some(20), None]);
        assert!(f
            .workload
            .outside_model(&BOUNDS)
            .unwrap()
            .contains("predicate read"));
        assert_eq!(f.engines.len(), 1);
        // Printed back, it reads the same.
        assert_eq!(
            parse(&to_toml(&f.workload), Path::new("w.toml")).unwrap(),
            f.workload
        );

        let bad = |text: &str| {
            let e = parse_file(text, Path::new("w"), &["fix"]).unwrap_err();
            (e.line, e.problem)
        };
        assert_eq!(
            bad("[keys]\nx = \"none\"\n[[txn]]\nsteps = [\"read x\"]\n"),
            (
                Some(2),
                Problem::BadInitial {
                    key: "x".into(),
                    word: "none".into()
                }
            )
        );
        assert_eq!(
            bad("[keys]\nx = \"absent\"\n[[txn]]\nsteps = [\"read x\", \"put x=x+1\"]\n"),
            (
                Some(4),
                Problem::UsesAbsent {
                    step: "put x=x+1".into(),
                    key: "x".into()
                }
            )
        );
        let (line, problem) = bad(&format!("{text}fix = [\"serializable\"]\n"));
        assert_eq!(line, Some(11));
        assert!(matches!(problem, Problem::ModelOutside { name, .. } if name == "fix"));
        // The model's own workloads still need pages for a third key.
        assert_eq!(
            bad("[keys]\nx = 0\ny = 0\nz = 0\n[[txn]]\nsteps = [\"read x\"]\n").1,
            Problem::PagesNeeded { keys: 3 }
        );
        assert_eq!(
            bad("[keys]\nall = 0\n[[txn]]\nsteps = [\"read all\"]\n").1,
            Problem::BadKeyName("all".into())
        );
    }
}
