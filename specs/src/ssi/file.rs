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
use super::step::{self, StepError};
use super::workload::{Stmt, Workload};
use super::{MAX_PAGES, MAX_STMTS, MAX_TXNS};

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
    #[error("`{0}` is not a key name: letters, digits and `_`, not starting with a digit")]
    BadKeyName(String),
    #[error(
        "the initial value {value} of `{key}` is outside the values the model holds (-128..=127)"
    )]
    InitialOutOfRange { key: String, value: i64 },
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
    #[error("a fourth transaction: the model has room for {MAX_TXNS}")]
    TooManyTxns,
    #[error("T{txn} has no steps")]
    NoSteps { txn: usize },
    #[error("T{txn} has more than {MAX_STMTS} steps: the model has room for {MAX_STMTS}")]
    TooManySteps { txn: usize },
    #[error("step `{step}`: {why}")]
    BadStep { step: String, why: StepError },
    #[error(
        "step `{step}` uses `{key}` before this transaction reads it: add `read {key}` before it"
    )]
    UseBeforeRead { step: String, key: String },
    #[error("[expect] names `{name}`, which is not a variant: {known}")]
    UnknownVariant { name: String, known: String },
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

/// A workload file: the workload and what its `[expect]` table says (empty without one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadFile {
    pub workload: Workload,
    pub expect: Vec<Expect>,
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
    keys: HashMap<String, Spanned<i64>>,
    pages: Option<HashMap<String, Spanned<i64>>>,
    #[serde(default)]
    txn: Vec<RawTxn>,
    #[serde(default)]
    expect: HashMap<String, Spanned<Vec<Spanned<String>>>>,
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

/// [`parse`], with the `[expect]` table checked against `variants` and [`outcomes`].
pub fn parse_file(text: &str, file: &Path, variants: &[&str]) -> Result<WorkloadFile, FileError> {
    let (workload, raw) = parse_raw(text, file)?;
    let src = Source { text, file };
    let mut entries: Vec<_> = raw.expect.iter().collect();
    entries.sort_by_key(|(_, v)| v.span().start);
    let mut expect = Vec::new();
    let outcomes = outcomes();
    for (variant, list) in entries {
        let line = src.line(list.span().start);
        if !variants.contains(&variant.as_str()) {
            return Err(src.at(
                list.span().start,
                Problem::UnknownVariant {
                    name: variant.clone(),
                    known: variants.join(", "),
                },
            ));
        }
        let mut anomalies = Vec::new();
        let mut serializable = false;
        for item in list.get_ref() {
            let name = item.get_ref().trim();
            if name == "serializable" {
                serializable = true;
            } else if outcomes.iter().any(|o| o == name) {
                anomalies.push(name.to_string());
            } else {
                return Err(src.at(
                    item.span().start,
                    Problem::UnknownOutcome {
                        name: name.to_string(),
                        known: outcomes.join(", "),
                    },
                ));
            }
        }
        if serializable && !anomalies.is_empty() {
            return Err(src.at(list.span().start, Problem::SerializableWithAnomalies));
        }
        anomalies.sort();
        anomalies.dedup();
        expect.push(Expect {
            variant: variant.clone(),
            line,
            anomalies,
        });
    }
    Ok(WorkloadFile { workload, expect })
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
    let programs = programs(&src, &keys, &raw.txn)?;
    let name = raw.name.clone().unwrap_or_else(|| {
        file.file_stem()
            .map_or("workload".into(), |s| s.to_string_lossy().into_owned())
    });
    Ok((
        Workload {
            name,
            keys,
            pages,
            initial,
            programs,
        },
        raw,
    ))
}

/// The keys in file order (TOML tables are unordered; the values' offsets keep the order).
fn keys(
    src: &Source,
    raw: &HashMap<String, Spanned<i64>>,
) -> Result<(Vec<String>, Vec<i8>), FileError> {
    if raw.is_empty() {
        return Err(src.at_header("keys", Problem::NoKeys));
    }
    let mut entries: Vec<(&String, &Spanned<i64>)> = raw.iter().collect();
    entries.sort_by_key(|(_, v)| v.span().start);
    let mut keys = Vec::new();
    let mut initial = Vec::new();
    for (key, value) in entries {
        let at = value.span().start;
        if !step::is_key_name(key) {
            return Err(src.at(at, Problem::BadKeyName(key.clone())));
        }
        let v = i8::try_from(*value.get_ref()).map_err(|_| {
            src.at(
                at,
                Problem::InitialOutOfRange {
                    key: key.clone(),
                    value: *value.get_ref(),
                },
            )
        })?;
        keys.push(key.clone());
        initial.push(v);
    }
    Ok((keys, initial))
}

fn pages(
    src: &Source,
    keys: &[String],
    raw_keys: &HashMap<String, Spanned<i64>>,
    raw: Option<&HashMap<String, Spanned<i64>>>,
) -> Result<Vec<usize>, FileError> {
    let Some(raw) = raw else {
        if keys.len() > MAX_PAGES {
            return Err(src.at_header("keys", Problem::PagesNeeded { keys: keys.len() }));
        }
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

fn programs(src: &Source, keys: &[String], raw: &[RawTxn]) -> Result<Vec<Vec<Stmt>>, FileError> {
    if raw.is_empty() {
        return Err(FileError {
            file: src.file.to_path_buf(),
            line: Some(1),
            problem: Problem::NoTxns,
        });
    }
    if let Some(extra) = raw.get(MAX_TXNS) {
        return Err(src.at(extra.steps.span().start, Problem::TooManyTxns));
    }
    raw.iter()
        .enumerate()
        .map(|(t, txn)| program(src, keys, t + 1, &txn.steps))
        .collect()
}

/// One transaction's steps, each checked against the model's assumptions.
fn program(
    src: &Source,
    keys: &[String],
    txn: usize,
    steps: &Spanned<Vec<Spanned<String>>>,
) -> Result<Vec<Stmt>, FileError> {
    let list = steps.get_ref();
    if list.is_empty() {
        return Err(src.at(steps.span().start, Problem::NoSteps { txn }));
    }
    if let Some(extra) = list.get(MAX_STMTS) {
        return Err(src.at(extra.span().start, Problem::TooManySteps { txn }));
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
        program.push(stmt);
    }
    Ok(program)
}

/// A workload in the file format ([`parse`] gives it back).
pub fn to_toml(w: &Workload) -> String {
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut out = format!("name = {}\n\n[keys]\n", quote(&w.name));
    for (k, v) in w.keys.iter().zip(&w.initial) {
        out.push_str(&format!("{k} = {v}\n"));
    }
    out.push_str("\n[pages]\n");
    for (k, p) in w.keys.iter().zip(&w.pages) {
        out.push_str(&format!("{k} = {p}\n"));
    }
    for program in &w.programs {
        let steps: Vec<String> = program.iter().map(|s| quote(&w.stmt_text(s))).collect();
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

    #[test]
    fn too_many_transactions_name_the_fourth() {
        let mut text = "[keys]\nx = 0\n".to_string();
        for _ in 0..4 {
            text.push_str("[[txn]]\nsteps = [\"read x\"]\n");
        }
        assert_eq!(line_of(&text), (Some(10), Problem::TooManyTxns));
    }

    #[test]
    fn too_many_steps_name_the_fifth() {
        let text = "[keys]\nx = 0\n[[txn]]\nsteps = [\n\"read x\",\n\"read x\",\n\"read x\",\n\"read x\",\n\"read x\",\n]\n";
        assert_eq!(line_of(text), (Some(9), Problem::TooManySteps { txn: 1 }));
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
    fn values_outside_i8_name_their_line() {
        let text = "[keys]\nx = 0\ny = 300\n[[txn]]\nsteps = [\"read x\"]\n";
        assert_eq!(
            line_of(text),
            (
                Some(3),
                Problem::InitialOutOfRange {
                    key: "y".into(),
                    value: 300
                }
            )
        );
        let text = "[keys]\nx = 0\n[[txn]]\nsteps = [\"put x=128\"]\n";
        let (line, p) = line_of(text);
        assert_eq!(line, Some(4));
        assert!(matches!(
            p,
            Problem::BadStep {
                why: StepError::OutOfRange(128),
                ..
            }
        ));
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
        assert!(matches!(bad("fix = [\n\"G2\",\n\"write skew\"]\n"),
            (Some(14), Problem::UnknownOutcome { name, .. }) if name == "G2"));
        assert_eq!(
            bad("fix = [\"serializable\", \"G0\"]\n"),
            (Some(13), Problem::SerializableWithAnomalies)
        );
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
}
