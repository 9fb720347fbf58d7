//! The report's HTML pieces: escaping, the page frame (style and script inline, so a page needs
//! nothing beside it), and markdown from the models' descriptions.

use pulldown_cmark::{html, Options, Parser};

/// Text safe inside HTML elements and quoted attributes: the sequence diagrams' XML escaping,
/// which HTML reads the same.
pub use crate::sequence::escape;

/// A model's markdown description as HTML (tables and footnotes as on GitHub). Raw HTML in the
/// markdown is shown as text: the descriptions are ours, but a page must not run what it shows.
pub fn markdown(text: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_FOOTNOTES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    let events = Parser::new_ext(text, options).map(|event| match event {
        pulldown_cmark::Event::Html(raw) | pulldown_cmark::Event::InlineHtml(raw) => {
            pulldown_cmark::Event::Text(raw)
        }
        other => other,
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

const STYLE: &str = r##"
body { font-family: "DejaVu Sans", sans-serif; margin: 1.5em 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.red td { background: #fbe3e0; }
tr.amber td { background: #fdf2d0; }
code, pre { font-family: "DejaVu Sans Mono", monospace; font-size: 0.9em; }
/* A long line wraps where the page ends rather than hide behind a scroll bar. */
pre { background: #f7f7f7; padding: 0.6em; white-space: pre-wrap; overflow-wrap: anywhere; }
/* The tower at its own size (scaled to the page its labels cannot be read), in a frame that
   scrolls, so the page itself never scrolls sideways. */
.tower-frame { overflow: auto; max-height: 36em; border: 1px solid #ddd; }
.tower { display: block; max-width: none; }
/* Names are never broken: suite, config, model. */
td.name { white-space: nowrap; }
/* A matrix's property columns: their names read upwards, the columns as narrow as a mark. */
th.vertical { writing-mode: sideways-lr; white-space: nowrap; text-align: left; vertical-align: bottom; }
#filter { width: 22em; }
.summary span { margin-right: 1.2em; }
.bad { color: #c0392b; font-weight: bold; } .good { color: #1e7d32; }
.diagram { overflow-x: auto; border: 1px solid #ddd; padding: 0.5em; }
nav a { margin-right: 1em; }
"##;

/// Records any script error on the body (`data-errors`), so a test reading the page's DOM sees
/// it; marks the body `data-ready` once the page's own script has run.
const ERROR_TRAP: &str = r#"window.addEventListener('error', function (e) {
  var b = document.body; b.setAttribute('data-errors', (b.getAttribute('data-errors') || '') + e.message + ';');
});"#;

/// A whole page: `title`, the body's HTML, and the page's own script (may be empty).
pub fn page(title: &str, body: &str, script: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n<script>{ERROR_TRAP}</script>\n</head>\n<body>\n{body}\n<script>\n{script}\ndocument.body.setAttribute('data-ready', 'yes');\n</script>\n</body>\n</html>\n",
        escape(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_shows_raw_html_as_text() {
        let out = markdown("a *b* <script>x</script>\n\n| h |\n|---|\n| c |\n");
        assert!(out.contains("<em>b</em>"));
        assert!(out.contains("&lt;script&gt;"));
        assert!(out.contains("<table>"));
    }

    #[test]
    fn the_page_escapes_its_title() {
        assert!(page("a<b", "", "").contains("<title>a&lt;b</title>"));
    }
}
