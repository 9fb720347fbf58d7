//! `loadbearing report --out DIR` in a real browser: headless Chromium opens every page of the
//! site from `file://` (no server, no network), each must run its script without an error and
//! log nothing to the console; `epoch_refines`' page draws its counterexample as four steps on
//! three lifelines; the index's filter hides what it does not match. Screenshots of the index
//! and of that page are kept (the target's tmp folder, and `LOADBEARING_ARTIFACTS` when set, as
//! CI sets it) for people to look at, not compared pixel by pixel.
//!
//! Without Chromium the test says `skipped:` and passes, except under CI=true.

use std::path::{Path, PathBuf};
use std::process::Command;

use loadbearing_test_support::skip_or_fail;

use crate::browser::{chromium, headless};

const TEST: &str = "the_report_site_loads_in_headless_chromium_without_errors";

/// Builds the site of a small run: two failures, one with a refinement step and one liveness
/// loop, a holding config for guard mutation, and two embedded conformance targets.
fn build_site(out: &Path) {
    let _ = std::fs::remove_dir_all(out);
    let run = Command::new(env!("CARGO_BIN_EXE_loadbearing"))
        .args([
            "report",
            "--out",
            &out.display().to_string(),
            "kafka-flow-828/epoch_refines",
            "kafka-flow-828/cassandra_refines",
            "kafka-flow-835/kafka_genlag",
            "--conform",
            "store",
            "--conform",
            "store-lww",
            "--traces",
            "3",
        ])
        .output()
        .expect("the binary runs");
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

fn pages(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn url(page: &Path) -> String {
    format!("file://{}", page.canonicalize().unwrap().display())
}

/// The page's DOM after its scripts ran, and what Chromium logged.
fn load(browser: &Path, address: &str) -> (String, String) {
    let out = headless(
        browser,
        address,
        &["--dump-dom", "--enable-logging=stderr", "--v=0"],
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn screenshot(browser: &Path, address: &str, name: &str) {
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_file(&shot);
    let out = headless(
        browser,
        address,
        &[
            "--window-size=1400,1600",
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
    assert!(png.starts_with(b"\x89PNG"), "{}", shot.display());
    if let Some(dir) = std::env::var_os("LOADBEARING_ARTIFACTS") {
        let dir = PathBuf::from(dir).join("report");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&shot, dir.join(name)).unwrap();
    }
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr().lock(),
        "screenshot of the report: {}",
        shot.display()
    );
}

#[test]
fn the_report_site_loads_in_headless_chromium_without_errors() {
    let Some(browser) = chromium() else {
        skip_or_fail(
            TEST,
            &"no chromium on PATH (Debian: apt-get install chromium)",
        );
        return;
    };
    let site = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-site");
    build_site(&site);
    let pages = pages(&site);
    // The index and one page per config.
    assert_eq!(pages.len(), 4, "{pages:?}");
    assert!(site.join("tower.svg").is_file());

    for page in &pages {
        let (dom, log) = load(&browser, &url(page));
        assert!(
            dom.contains("data-ready=\"yes\""),
            "{}: the page's script did not run to its end:\n{dom}\n{log}",
            page.display()
        );
        assert!(
            // The attribute on the body (the page's script names it in single quotes).
            !dom.contains("data-errors=\""),
            "{}: a script error:\n{dom}",
            page.display()
        );
        let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
        assert!(
            console.is_empty(),
            "{}: the console is not quiet:\n{}",
            page.display(),
            console.join("\n")
        );
        // Offline: nothing is loaded from elsewhere (no stylesheet, script or image source
        // off the page but the tower beside it).
        let text = std::fs::read_to_string(page).unwrap();
        for loaded in ["src=\"http", "<link", "src=\"//", "@import"] {
            assert!(
                !text.contains(loaded),
                "{} loads something from the network ({loaded})",
                page.display()
            );
        }
    }

    // The refinement failure of the Epoch design: four steps, on the lifelines of the
    // coordinator, the zombie and the owner.
    let epoch = site.join("configs/kafka-flow-828/epoch_refines.html");
    let (dom, _) = load(&browser, &url(&epoch));
    assert!(
        dom.contains("data-steps=\"4\"") && dom.contains("data-lifelines=\"3\""),
        "{dom}"
    );
    assert_eq!(dom.matches("<g class=\"step\"").count(), 4, "{dom}");
    assert_eq!(dom.matches("<g class=\"lifeline\"").count(), 3, "{dom}");
    for actor in ["coordinator", "zombie", "owner"] {
        assert!(dom.contains(&format!("data-actor=\"{actor}\"")), "{actor}");
    }
    // What it checks, from the model's description.
    assert!(dom.contains("<h2>What Epoch checks</h2>"), "{dom}");

    // The liveness failure draws its loop back.
    let genlag = site.join("configs/kafka-flow-835/kafka_genlag.html");
    let (dom, _) = load(&browser, &url(&genlag));
    assert!(dom.contains("class=\"loop\""), "{dom}");

    // The index: every config, the failing ones first is not needed here (all as expected),
    // and the filter given in the address leaves only what matches.
    let index = site.join("index.html");
    let (dom, _) = load(&browser, &url(&index));
    for shown in [
        "epoch_refines",
        "cassandra_refines",
        "kafka_genlag",
        "store-lww",
    ] {
        assert!(dom.contains(shown), "{shown} is not on the index");
    }
    assert!(dom.contains("id=\"mutation\""), "{dom}");
    let (dom, _) = load(&browser, &format!("{}#filter=genlag", url(&index)));
    // The opening tags of the config rows (the page's script also names `data-search`).
    let rows: Vec<&str> = dom
        .split("<tr ")
        .skip(1)
        .filter_map(|r| r.split('>').next())
        .filter(|tag| tag.contains("data-search"))
        .collect();
    assert_eq!(rows.len(), 3, "{dom}");
    let visible = rows.iter().filter(|r| !r.contains("hidden")).count();
    assert_eq!(visible, 1, "the filter `genlag` leaves one row:\n{dom}");

    screenshot(&browser, &url(&index), "report-index.png");
    screenshot(&browser, &url(&epoch), "report-epoch_refines.png");
}
