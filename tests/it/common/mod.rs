//! Shared by the tests of this binary: the explorer as a child process that is stopped when the
//! test ends, and the servers behind the backend tests. The helpers every test binary of the
//! workspace shares (free ports, the HTTP client, skip-or-fail) are in loadbearing-test-support.

#![allow(dead_code)]

pub mod servers;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loadbearing_test_support::ChildGuard;
pub use loadbearing_test_support::{free_port, http};

/// The binary under test, run to completion with `args`.
pub fn loadbearing(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_loadbearing"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The binary under test with `args`, not yet run (to add an environment, a directory, or run
/// it in the background).
pub fn loadbearing_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_loadbearing"));
    command.args(args);
    command
}

/// Runs of whitespace as one space, to compare aligned text.
pub fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `loadbearing explore CONFIG` on a free port, killed on drop.
pub struct Explorer {
    pub port: u16,
    /// What the command printed before serving: the URLs.
    pub announced: String,
    _child: ChildGuard,
}

impl Explorer {
    /// Starts on a free port; another test may take the port first, so a taken one is retried.
    pub fn start(config: &str) -> Explorer {
        Explorer::start_with(config, &[])
    }

    /// Starts with extra arguments (`--set NAME=VALUE`).
    pub fn start_with(config: &str, extra: &[&str]) -> Explorer {
        for _ in 0..5 {
            if let Some(explorer) = Explorer::try_start(config, extra) {
                return explorer;
            }
        }
        panic!("explore {config}: no free port in five tries");
    }

    fn try_start(config: &str, extra: &[&str]) -> Option<Explorer> {
        let port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_loadbearing"))
            .args(["explore", config, "--port", &port.to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut announced = String::new();
        loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap() == 0 {
                let mut stderr = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
                let _ = child.wait();
                if stderr.contains("cannot listen") {
                    return None;
                }
                panic!("explore {config} ended early:\n{announced}\n{stderr}");
            }
            announced.push_str(&line);
            if line.starts_with("Ctrl-C") {
                break;
            }
        }
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "explore {config} never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Explorer {
            port,
            announced,
            _child: ChildGuard(child),
        })
    }

    /// The URL printed for the shortest counterexample, if any.
    pub fn counterexample_url(&self) -> Option<String> {
        self.announced
            .lines()
            .find(|l| l.starts_with("the shortest counterexample"))
            .and_then(|l| l.split_whitespace().last())
            .map(str::to_string)
    }
}

/// `conform --trace FILE --model CasFirstWriteAtomic` (and `extra` arguments) on `path`: the
/// exit code, and stdout then stderr.
pub fn conform_first_write(path: &std::path::Path, extra: &[&str]) -> (Option<i32>, String) {
    conform_trace(path, "CasFirstWriteAtomic", extra)
}

/// `conform --trace FILE --model MODEL` (and `extra` arguments) on `path`: the exit code, and
/// stdout then stderr.
pub fn conform_trace(path: &std::path::Path, model: &str, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = vec![
        "conform",
        "--trace",
        path.to_str().expect("a UTF-8 path"),
        "--model",
        model,
    ];
    args.extend_from_slice(extra);
    let out = loadbearing(&args);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

/// A trace file of `lines` in a fresh directory named for the test (`test`) and this process.
pub fn trace_file(test: &str, lines: &[String]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lb-trace-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.ndjson");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// The rows of a page a command wrote afresh (`fresh`) whose lines start with one of
/// `prefixes`, each of which the committed page (`committed`, its path from the repository)
/// must hold as it is: a generated page is never edited by hand nor left stale.
pub fn fresh_rows_are_committed(fresh: &str, committed: &str, prefixes: &[&str]) -> usize {
    let page =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(committed))
            .unwrap_or_else(|e| panic!("{committed}: {e}"));
    let rows: Vec<&str> = fresh
        .lines()
        .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
        .collect();
    for row in &rows {
        assert!(
            page.lines().any(|l| l == *row),
            "{committed} lacks the fresh row (run the command its first lines name):\n{row}"
        );
    }
    rows.len()
}
