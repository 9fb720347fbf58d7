//! `loadbearing report --out DIR`: a static site of one `check` + `mutate` + `conform` run, for
//! people. Every page is self-contained HTML (its style and its few lines of script inline, the
//! pictures inline SVG or files beside it), so the site reads from `file://` with no network.
//!
//! - `index.html`: every config with expected / actual / states / depth / time, the ones that
//!   are not as expected first; a filter; the tower; the guard-mutation and conformance tables.
//! - `configs/SUITE/CONFIG.html`: what the config checks (its model's description) and, for a
//!   failure, the counterexample as a sequence diagram (the picture `trace --format svg` draws)
//!   and as the table's swimlane.
//! - `tower.svg`: the tower of models (docs/tower.svg, compiled in).

mod html;
mod pages;

use std::path::{Path, PathBuf};

use loadbearing_expected::run::Judged;

use crate::junit::RunFailure;
use crate::mutate::Coverage;

pub use html::escape;

/// One conformance target's result, as the report shows it.
#[cfg(feature = "targets")]
pub type Conformance = loadbearing_conform::TargetResult;

/// A build without the project's implementations has no conformance run to show.
#[cfg(not(feature = "targets"))]
#[derive(Debug)]
pub enum Conformance {}

/// What one report shows: the results of the run it was built from.
pub struct Inputs<'a> {
    pub judged: &'a [Judged],
    /// Configs that could not be run at all.
    pub failures: &'a [RunFailure],
    /// The guard-mutation run (`None`: not run, and the page says so).
    pub coverage: Option<&'a Coverage>,
    pub conformance: &'a [Conformance],
    /// How the run was asked for (`loadbearing report …`), shown on the index.
    pub command: &'a str,
}

#[derive(Debug, thiserror::Error)]
#[error("writing the report: {path}: {source}")]
pub struct ReportError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The tower of models, as `loadbearing docs` draws it.
const TOWER_SVG: &str = include_str!("../../docs/tower.svg");

/// Writes the site into `dir` (created if missing); returns the pages written, index first.
pub fn write(dir: &Path, inputs: &Inputs) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::new();
    let mut put = |relative: &str, text: &str| -> Result<(), ReportError> {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| ReportError {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(&path, text).map_err(|source| ReportError {
            path: path.clone(),
            source,
        })?;
        written.push(path);
        Ok(())
    };
    put("index.html", &pages::index(inputs))?;
    put("tower.svg", TOWER_SVG)?;
    for j in inputs.judged {
        put(&pages::config_href(&j.config), &pages::config_page(j))?;
    }
    Ok(written)
}
