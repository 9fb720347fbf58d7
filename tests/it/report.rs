//! `loadbearing report --out DIR` in a real browser: headless Chromium opens every page of the
//! site from `file://` (no server, no network), each must run its script without an error and
//! log nothing to the console; `epoch_refines`' page draws its counterexample as four steps on
//! three lifelines; the index's filter hides what it does not match. Screenshots of the index
//! and of that page at 1280 and 1920 px are kept (the target's tmp folder, and
//! `LOADBEARING_ARTIFACTS` when set, as CI sets it) for people to look at, not compared pixel by
//! pixel; at both widths every page is laid out whole (no sideways scroll, no text past a
//! diagram's edge, no placeholder cut, no word broken in a table, no picture shrunk).
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

/// What the layout audit looks for in a page laid out at a window's width, written by the page
/// itself (a copy with `LAYOUT_AUDIT` at its end) on its body for `--dump-dom` to show: the
/// window's width as the page saw it, how far the page scrolls sideways, and each thing that
/// does not fit: a diagram's text past its drawing's edge, a placeholder cut, a word broken
/// over two lines in a table cell, a cell's text overflowing it, a box that scrolls sideways
/// (the tower's frame alone may: the picture at its own size), a picture shrunk below its own
/// size, a table or block past the window's right edge.
const LAYOUT_AUDIT: &str = r#"<script>
// After everything loaded: a picture's size is known only then.
window.addEventListener('load', function () {
  var problems = [];
  var view = window.innerWidth;
  var say = function (what, text) { problems.push(what + ': ' + String(text).slice(0, 90)); };
  document.querySelectorAll('svg').forEach(function (svg) {
    var edge = svg.viewBox.baseVal && svg.viewBox.baseVal.width ? svg.viewBox.baseVal.width : svg.width.baseVal.value;
    svg.querySelectorAll('text').forEach(function (t) {
      var b = t.getBBox();
      if (b.x + b.width > edge + 1) { say('diagram text past its edge (' + Math.round(b.x + b.width) + ' > ' + Math.round(edge) + ')', t.textContent); }
    });
  });
  var pen = document.createElement('canvas').getContext('2d');
  document.querySelectorAll('input[placeholder]').forEach(function (input) {
    var css = getComputedStyle(input);
    pen.font = css.font;
    var needs = pen.measureText(input.placeholder).width + parseFloat(css.paddingLeft) + parseFloat(css.paddingRight);
    if (needs > input.clientWidth) { say('placeholder cut (' + Math.round(needs) + ' > ' + input.clientWidth + ')', input.placeholder); }
  });
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  var range = document.createRange();
  for (var node = walker.nextNode(); node; node = walker.nextNode()) {
    var word = node.textContent.trim();
    if (!word || /\s/.test(word) || !node.parentElement.closest('td, th')) { continue; }
    range.selectNodeContents(node);
    if (range.getClientRects().length > 1) { say('a word broken over lines', word); }
  }
  document.querySelectorAll('body *').forEach(function (box) {
    var css = getComputedStyle(box);
    if (box.closest('.tower-frame') || !/auto|scroll|hidden/.test(css.overflowX)) { return; }
    if (box.scrollWidth > box.clientWidth + 1) { say('scrolls sideways inside (' + box.scrollWidth + ' > ' + box.clientWidth + ')', box.textContent.trim()); }
  });
  document.querySelectorAll('th, td').forEach(function (cell) {
    if (cell.scrollWidth > cell.clientWidth + 1 || cell.scrollHeight > cell.clientHeight + 1) { say('text overflows its cell', cell.textContent.trim()); }
  });
  document.querySelectorAll('img').forEach(function (img) {
    if (img.naturalWidth && img.clientWidth + 1 < img.naturalWidth) { say('picture shrunk to ' + img.clientWidth + ' of ' + img.naturalWidth + ' px', img.getAttribute('src')); }
  });
  document.querySelectorAll('table, pre, p, h1, h2, nav, .diagram').forEach(function (block) {
    var right = block.getBoundingClientRect().right;
    if (right > view + 1) { say(block.tagName.toLowerCase() + ' ends past the window (' + Math.round(right) + ' > ' + view + ')', block.textContent.trim()); }
  });
  document.body.setAttribute('data-layout', JSON.stringify({
    width: view,
    sideways: document.documentElement.scrollWidth - view,
    problems: problems
  }));
});
</script>"#;

/// The page laid out in a window `width` px wide: nothing clipped, no sideways scroll (the
/// audit above, run on a copy of the page beside it so its links still resolve).
fn assert_laid_out(browser: &Path, page: &Path, width: u32) {
    let text = std::fs::read_to_string(page).unwrap();
    let copy = page.with_extension(format!("audit-{width}.htm"));
    std::fs::write(
        &copy,
        text.replacen("</body>", &format!("{LAYOUT_AUDIT}</body>"), 1),
    )
    .unwrap();
    let (dom, log) = load_at(browser, &url(&copy), width);
    let _ = std::fs::remove_file(&copy);
    let layout = dom
        .split("data-layout=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("{}: the audit did not run:\n{log}", page.display()))
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    let found: serde_json::Value = serde_json::from_str(&layout).unwrap();
    assert_eq!(found["width"], width, "the window's width: {layout}");
    let problems = found["problems"].as_array().unwrap();
    assert!(
        found["sideways"] == 0 && problems.is_empty(),
        "{} at {width} px: scrolls {} px sideways; {}",
        page.display(),
        found["sideways"],
        problems
            .iter()
            .map(|p| p.as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("; ")
    );
}

fn load_at(browser: &Path, address: &str, width: u32) -> (String, String) {
    let out = headless(
        browser,
        address,
        &[
            "--dump-dom",
            &format!("--window-size={width},1000"),
            "--enable-logging=stderr",
            "--v=0",
        ],
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn screenshot(browser: &Path, address: &str, name: &str, width: u32) {
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_file(&shot);
    let out = headless(
        browser,
        address,
        &[
            &format!("--window-size={width},1600"),
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

    // At both widths people read it: every page laid out whole, and kept as screenshots.
    for width in [1280, 1920] {
        for page in &pages {
            assert_laid_out(&browser, page, width);
        }
        screenshot(
            &browser,
            &url(&index),
            &format!("report-index-{width}.png"),
            width,
        );
        screenshot(
            &browser,
            &url(&epoch),
            &format!("report-epoch_refines-{width}.png"),
            width,
        );
    }
}
