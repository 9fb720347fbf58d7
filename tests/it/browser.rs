//! The explorer in a real browser: headless Chromium opens the counterexample link that
//! `loadbearing explore` prints, runs the explorer's JavaScript, and the page must show the path
//! of actions and the violated property. A screenshot is kept in the target directory.
//!
//! Without Chromium the test says `skipped: <reason>` and passes, except under CI (`CI=true`),
//! where `.ci/setup.d/20-chromium.sh` installs Debian's `chromium` and a missing browser fails.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::Explorer;

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file())
}

pub(crate) fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("LOADBEARING_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .find_map(|name| on_path(name))
}

/// Runs headless Chromium on `url` with a fresh profile; killed after a minute.
pub(crate) fn headless(browser: &Path, url: &str, extra: &[&str]) -> Output {
    // A profile of its own for every run: tests of this binary run Chromium side by side.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let profile =
        std::env::temp_dir().join(format!("loadbearing-chromium-{}-{run}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("chromium did not finish within a minute on {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    out
}

#[test]
fn the_counterexample_link_opens_in_headless_chromium() {
    let Some(browser) = chromium() else {
        let reason = "no chromium on PATH (Debian: apt-get install chromium)";
        if loadbearing_test_support::in_ci() {
            panic!("CI=true and {reason}: .ci/setup.d/20-chromium.sh installs it");
        }
        // Straight to the terminal: the test harness captures print!.
        let _ = writeln!(
            std::io::stderr().lock(),
            "skipped: the_counterexample_link_opens_in_headless_chromium: {reason}"
        );
        return;
    };
    let explorer = Explorer::start("cassandra_unguarded");
    let url = explorer
        .counterexample_url()
        .expect("explore prints the counterexample link");
    assert!(url.contains("#/steps/"), "{url}");

    let dom = headless(&browser, &url, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    for shown in [
        // The path of actions, in the spec's names…
        "ZombieWrite(2)",
        "OwnerFold",
        // …the offending step's verdict, the abstract image, and where we are on the path.
        "✗ RefSafeSpec is violated",
        "RefSafeSpec maps this state to SingleWriterStore",
        "step 2 of 2 of the shortest counterexample to RefSafeSpec",
        // The model named by its config, not by the type Stateright's checker runs.
        "cassandra_unguarded: Cassandra with",
    ] {
        assert!(dom.contains(shown), "`{shown}` is not on the page:\n{dom}");
    }
    for hidden in ["Explorable", "Init 0"] {
        assert!(!dom.contains(hidden), "`{hidden}` is on the page:\n{dom}");
    }

    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("explorer-cassandra_unguarded.png");
    let _ = std::fs::remove_file(&shot);
    let out = headless(
        &browser,
        &url,
        &[
            "--window-size=1400,1000",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot at {}: {e}\n{}",
            shot.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}",
        shot.display()
    );
    let _ = writeln!(
        std::io::stderr().lock(),
        "screenshot of the counterexample in the explorer: {}",
        shot.display()
    );
}
