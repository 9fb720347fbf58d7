//! Bad input, fuzzed (proptest, a bounded number of cases per property, so CI's time is
//! bounded): the trace reader behind `conform --trace`, the workload and suite files, and the
//! CLI's arguments. A malformed input is an error naming where it went wrong, never a panic or
//! a hang; a well-formed one reads back as what was written.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loadbearing_registry as registry;
use loadbearing_specs::infra::knobs::Constants;
use loadbearing_specs::ssi::file;
use loadbearing_ssi_engine::engine::Variant;
use loadbearing_ssi_engine::tier::{attempt_engine, scenario};
use proptest::prelude::*;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The files of a folder of the repository, sorted.
fn files_in(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// A real engine trace of the #136 trigger under the fix, as `conform --trace` reads it (made
/// once: every case edits the same trace).
fn ssi_trace() -> &'static str {
    static TRACE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TRACE.get_or_init(|| {
        let a = attempt_engine(
            &scenario("write_skew_trigger").unwrap(),
            Variant::FIX,
            1,
            0,
            None,
        );
        loadbearing_conform::ssi_engine::to_ndjson(&a.trace)
    })
}

/// One edit of a text: a character deleted, one inserted, or a slice repeated.
#[derive(Clone, Debug)]
enum Edit {
    Delete(usize),
    Insert(usize, char),
    Repeat(usize, usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        (
            any::<usize>(),
            prop_oneof![
                Just('"'),
                Just('{'),
                Just('}'),
                Just('['),
                Just(']'),
                Just(','),
                Just(':'),
                Just('='),
                Just('\n'),
                Just('#'),
                Just('-'),
                Just('9'),
                Just('é'),
                Just('\0'),
                any::<char>()
            ]
        )
            .prop_map(|(at, c)| Edit::Insert(at, c)),
        (any::<usize>(), 1usize..40).prop_map(|(at, n)| Edit::Repeat(at, n)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

/// `text` with `edits` applied, positions taken modulo its length (on character boundaries).
fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
        match *e {
            Edit::Delete(i) if !chars.is_empty() => {
                let i = at(i, chars.len());
                chars.remove(i);
            }
            Edit::Insert(i, c) => {
                let i = at(i, chars.len() + 1);
                chars.insert(i, c);
            }
            Edit::Repeat(i, n) if !chars.is_empty() => {
                let i = at(i, chars.len());
                let end = (i + n).min(chars.len());
                let slice: Vec<char> = chars[i..end].to_vec();
                chars.splice(end..end, slice);
            }
            Edit::Truncate(i) => {
                let i = at(i, chars.len() + 1);
                chars.truncate(i);
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// The number in `line N` of an error message, if it names one.
fn named_line(message: &str) -> Option<usize> {
    let at = message.find("line ")? + 5;
    message[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// Every model that reads traces, given a mangled engine trace: a verdict or an error
    /// naming a line of the text, never a panic.
    #[test]
    fn a_mangled_trace_is_judged_or_refused_at_a_line(edits in prop::collection::vec(edit(), 1..6)) {
        let text = mutate(ssi_trace(), &edits);
        let lines = text.lines().count();
        for name in registry::conformance_models() {
            let entry = registry::conformance(name).unwrap();
            let Ok(constants) = (entry.resolve)(&Constants::new()) else { continue };
            if let Err(e) = (entry.conform)(&constants, &text, &Default::default()) {
                let message = e.to_string();
                prop_assert!(!message.is_empty());
                if let Some(n) = named_line(&message) {
                    prop_assert!(n >= 1 && n <= lines.max(1), "{name}: line {n} of {lines}: {message}");
                }
            }
        }
    }

    /// Arbitrary text as a trace: no panic.
    #[test]
    fn arbitrary_text_is_no_trace_panic(text in ".{0,400}") {
        let entry = registry::conformance("SSI").unwrap();
        let constants = (entry.resolve)(&Constants::new()).unwrap();
        let _ = (entry.conform)(&constants, &text, &Default::default());
    }

    /// A mangled workload file: a workload, or an error naming a line of the file.
    #[test]
    fn a_mangled_workload_file_is_read_or_refused_at_a_line(
        which in 0usize..14,
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        // The classic five and Hermitage's nine (schedules, step values, engines' levels).
        let mut files = files_in("expected/workloads");
        files.extend(files_in("expected/workloads/hermitage"));
        let path = &files[which % files.len()];
        let text = mutate(&std::fs::read_to_string(path).unwrap(), &edits);
        match file::parse_file(&text, path, Variant::NAMES) {
            Ok(parsed) => {
                // What was read writes back and reads again as itself.
                let again = file::parse(&file::to_toml(&parsed.workload), path).unwrap();
                prop_assert_eq!(again, parsed.workload);
            }
            Err(e) => {
                let lines = text.lines().count().max(1);
                prop_assert!(e.line.is_some_and(|l| l >= 1 && l <= lines + 1), "{e} ({lines} lines)");
                prop_assert!(e.to_string().starts_with(&path.display().to_string()));
            }
        }
    }

    /// A mangled suite file: configs, or an error; never a panic.
    #[test]
    fn a_mangled_suite_file_is_read_or_refused(
        which in 0usize..4,
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let files = files_in("expected/suites");
        let path = &files[which % files.len()];
        let text = mutate(&std::fs::read_to_string(path).unwrap(), &edits);
        if let Err(e) = loadbearing_expected::suite::parse(&text, loadbearing_expected::suite::Source::File(path.clone())) {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}

/// Words the CLI is given: subcommand options with bad, odd or good values.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("--format"),
        Just("json"),
        Just("junit"),
        Just("table"),
        Just("svg"),
        Just("bogus"),
        Just("--attempts"),
        Just("0"),
        Just("-1"),
        Just("99999999999999999999"),
        Just("x"),
        Just("--variant"),
        Just("none"),
        Just("nope"),
        Just("fix,,"),
        Just("--seed"),
        Just("--traces"),
        Just("--suite"),
        Just("/no/such/suite.toml"),
        Just("--set"),
        Just("MaxOffset=x"),
        Just("="),
        Just(""),
        Just("--"),
        Just("-"),
        Just("--threads"),
        Just("kafka-flow-835/nope"),
        Just("no_such_config"),
        Just("--model"),
        Just("SSI"),
        Just("--scenario"),
        Just("--jitter-us"),
        Just("é"),
        Just("--max-states"),
    ]
    .prop_map(str::to_string)
}

/// Runs the binary, killing it after `limit`: (exit code, stderr), or None when it hung.
fn run_bounded(args: &[String], limit: Duration) -> Option<(Option<i32>, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadbearing"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return Some((status.code(), err));
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Odd arguments after a subcommand and a target that cannot run long (an unknown config,
    /// a mangled workload or trace file): exit 0, 1 or 2, a message on stderr for 2, never a
    /// panic (101), a signal or a hang.
    #[test]
    fn odd_arguments_exit_with_a_verdict_or_a_message(
        command in 0usize..4,
        words in prop::collection::vec(word(), 0..5),
        edits in prop::collection::vec(edit(), 0..4),
    ) {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-cli");
        std::fs::create_dir_all(&dir).unwrap();
        let case = format!("{:x}", {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (command, &words, format!("{edits:?}")).hash(&mut h);
            h.finish()
        });
        let mut args: Vec<String> = match command {
            0 => vec!["check".into(), "no_such_config".into()],
            1 => vec!["trace".into(), "kafka-flow-835/nope".into()],
            2 => {
                let f = dir.join(format!("{case}.ndjson"));
                std::fs::write(&f, mutate(ssi_trace(), &edits)).unwrap();
                vec!["conform".into(), "--trace".into(), f.display().to_string(),
                     "--model".into(), "SSI".into()]
            }
            _ => {
                let f = dir.join(format!("{case}.toml"));
                let text = std::fs::read_to_string(repo("expected/workloads/write_skew.toml")).unwrap();
                std::fs::write(&f, mutate(&text, &edits)).unwrap();
                vec!["isolation".into(), "--workload".into(), f.display().to_string(),
                     "--attempts".into(), "2".into(), "--variant".into(), "fix".into()]
            }
        };
        args.extend(words);
        let Some((code, stderr)) = run_bounded(&args, Duration::from_secs(120)) else {
            return Err(TestCaseError::fail(format!("hung: {args:?}")));
        };
        prop_assert!(matches!(code, Some(0..=2)), "{args:?}: exit {code:?}\n{stderr}");
        prop_assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        if code == Some(2) {
            prop_assert!(!stderr.trim().is_empty(), "{args:?}: exit 2 without a word");
        }
    }
}
