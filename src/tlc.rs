//! TLC run side by side with our engine, for `bench --tlc`: the same config at the same
//! constants, on a copy of the user's TLA+ models folder.
//!
//! A config's `.cfg` is found by its name in a models folder of its suite (a folder named
//! after the suite, or a `models` folder inside one); its header names the module
//! (`\* spec:`) and TLC's flags (`\* flags:`), and every constant the bench changes is
//! rewritten in place. TLC's distinct-state count is read from its output, so a bench row
//! shows when the two checkers disagree.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use loadbearing_expected::suite::Config;
use loadbearing_specs::infra::knobs::Value;

/// Where TLC is and which models it checks.
pub struct Tlc {
    pub jar: PathBuf,
    pub models: Vec<PathBuf>,
    /// TLC's `-workers`.
    pub workers: usize,
}

/// One TLC run: its distinct states and wall-clock seconds.
#[derive(Clone, Debug)]
pub struct TlcRun {
    pub states: u64,
    pub seconds: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum TlcError {
    #[error(
        "no `{name}.cfg` for suite `{suite}` in the TLC models folders given (a suite's folder \
         is named after it, `{suite}/` or `{suite}/models/`, as the reference keeps them)"
    )]
    NoCfg { suite: String, name: String },
    #[error("{cfg}: {problem}")]
    Cfg { cfg: PathBuf, problem: String },
    #[error("could not run java for TLC: {0}")]
    Java(std::io::Error),
    #[error("copying the models folder: {0}")]
    Copy(std::io::Error),
    #[error("TLC printed no distinct-state count (exit {status}); its last lines:\n{tail}")]
    NoCount { status: String, tail: String },
    #[error("TLC's jar {0} is not a file (--tla2tools names tla2tools.jar)")]
    NoJar(PathBuf),
    /// The cfg's header names a module its folder does not hold: TLC would stop at parsing.
    #[error(
        "{cfg}: its header names the module `{module}`, and no `{module}.tla` is beside it (TLC \
         checks the TLA+ modules of a models folder, not its configs alone)"
    )]
    NoModule { cfg: PathBuf, module: String },
}

impl Tlc {
    /// The `.cfg` of `config`, if one of the models folders holds it for its suite.
    fn cfg_of(&self, config: &Config) -> Result<PathBuf, TlcError> {
        let of_suite = |dir: &Path| {
            let named = |p: Option<&Path>| {
                p.and_then(Path::file_name)
                    .is_some_and(|n| n == config.suite.as_str())
            };
            named(Some(dir)) || named(dir.parent())
        };
        self.models
            .iter()
            .filter(|dir| of_suite(dir))
            .map(|dir| dir.join(format!("{}.cfg", config.name)))
            .find(|cfg| cfg.is_file())
            .ok_or_else(|| TlcError::NoCfg {
                suite: config.suite.clone(),
                name: config.name.clone(),
            })
    }

    /// Runs TLC on `config` with the constants `sets` changed.
    pub fn run(&self, config: &Config, sets: &[(String, Value)]) -> Result<TlcRun, TlcError> {
        if !self.jar.is_file() {
            return Err(TlcError::NoJar(self.jar.clone()));
        }
        let cfg = self.cfg_of(config)?;
        let text = std::fs::read_to_string(&cfg).map_err(|e| TlcError::Cfg {
            cfg: cfg.clone(),
            problem: e.to_string(),
        })?;
        let header = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("\\* {key}:")))
                .map(|v| v.trim().to_string())
        };
        let spec = header("spec").ok_or_else(|| TlcError::Cfg {
            cfg: cfg.clone(),
            problem: "no `\\* spec:` header naming the module".into(),
        })?;
        if !cfg.with_file_name(format!("{spec}.tla")).is_file() {
            return Err(TlcError::NoModule {
                cfg: cfg.clone(),
                module: spec,
            });
        }
        let flags: Vec<String> = header("flags")
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let mut rewritten = text.clone();
        for (name, value) in sets {
            rewritten =
                set_constant(&rewritten, name, &tla_value(value)).ok_or_else(|| TlcError::Cfg {
                    cfg: cfg.clone(),
                    problem: format!("no constant `{name}` to set"),
                })?;
        }

        // TLC's SYMMETRY names a set of permutations, which the module must define: a wrapper
        // module extends the spec with one per symmetry the config reduces by.
        let mut module = spec.clone();
        let mut wrapper = None;
        if !config.symmetry.is_empty() {
            // One set of permutations for them all, as TLC takes one SYMMETRY.
            let perms: Vec<String> = config
                .symmetry
                .iter()
                .map(|name| format!("Permutations({name})"))
                .collect();
            module = format!("Bench{spec}");
            wrapper = Some(format!(
                "---- MODULE {module} ----\nEXTENDS {spec}, TLC\nBenchPerms == {}\n====\n",
                perms.join(" \\cup ")
            ));
            rewritten.push_str("SYMMETRY BenchPerms\n");
        }

        let work = std::env::temp_dir().join(format!(
            "loadbearing-tlc-{}-{}",
            std::process::id(),
            config.name
        ));
        let folder = cfg.parent().expect("a cfg file is in a folder");
        copy_folder(folder, &work).map_err(TlcError::Copy)?;
        std::fs::write(work.join("bench.cfg"), rewritten).map_err(TlcError::Copy)?;
        if let Some(wrapper) = wrapper {
            std::fs::write(work.join(format!("{module}.tla")), wrapper).map_err(TlcError::Copy)?;
        }
        let started = Instant::now();
        let out = Command::new("java")
            .current_dir(&work)
            .args(["-XX:+UseParallelGC", "-cp"])
            .arg(&self.jar)
            .args(["tlc2.TLC", "-workers", &self.workers.to_string()])
            .args(&flags)
            .args(["-metadir", "states", "-config", "bench.cfg"])
            .arg(format!("{module}.tla"))
            .output()
            .map_err(TlcError::Java)?;
        let seconds = started.elapsed().as_secs_f64();
        let _ = std::fs::remove_dir_all(&work);
        let printed = String::from_utf8_lossy(&out.stdout);
        match distinct_states(&printed) {
            Some(states) => Ok(TlcRun { states, seconds }),
            None => Err(TlcError::NoCount {
                status: out.status.to_string(),
                tail: last_lines(&printed, &String::from_utf8_lossy(&out.stderr)),
            }),
        }
    }
}

/// The last eight lines TLC printed, from its standard output or, where that is empty (java
/// itself failed), its standard error.
fn last_lines(stdout: &str, stderr: &str) -> String {
    let printed = if stdout.trim().is_empty() {
        stderr
    } else {
        stdout
    };
    let lines: Vec<&str> = printed.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

fn tla_value(value: &Value) -> String {
    match value {
        Value::Bool(true) => "TRUE".into(),
        Value::Bool(false) => "FALSE".into(),
        other => other.to_string(),
    }
}

/// The cfg text with `name = …` set to `value`, or `None` if it sets no such constant. A
/// constant the cfg sets to a set of model values (`Writers = {w1, w2}`) is a count to us:
/// `Writers=4` becomes `{w1, w2, w3, w4}`.
fn set_constant(text: &str, name: &str, value: &str) -> Option<String> {
    let mut found = false;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match (!line.starts_with("\\*"))
            .then(|| assignment(line, name))
            .flatten()
        {
            Some((start, end)) => {
                found = true;
                let old = &line[start..end];
                let new = match old.strip_prefix('{') {
                    Some(set) => model_values(set, value)?,
                    None => value.to_string(),
                };
                out.push_str(&line[..start]);
                out.push_str(&new);
                out.push_str(&line[end..]);
            }
            None => out.push_str(line),
        }
    }
    found.then_some(out)
}

/// Where the value of `name = value` lies in `line`: a `{…}` set or one token.
fn assignment(line: &str, name: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(at) = line[from..].find(name).map(|i| i + from) {
        let before_ok = at == 0 || !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let rest = &line[at + name.len()..];
        let after = rest.trim_start();
        if before_ok && after.starts_with('=') && !after.starts_with("==") {
            let value = after[1..].trim_start();
            let start = line.len() - value.len();
            let len = if value.starts_with('{') {
                value.find('}')? + 1
            } else {
                value.find(char::is_whitespace).unwrap_or(value.len())
            };
            return Some((start, start + len));
        }
        from = at + name.len();
    }
    None
}

/// `count` model values named as the set's first element is, `w1` giving `{w1, …, wN}`.
fn model_values(set: &str, count: &str) -> Option<String> {
    let first = set.split([',', '}']).next()?.trim();
    let stem = first.trim_end_matches(|c: char| c.is_ascii_digit());
    let n: usize = count.parse().ok()?;
    let values: Vec<String> = (1..=n).map(|i| format!("{stem}{i}")).collect();
    Some(format!("{{{}}}", values.join(", ")))
}

/// TLC's "N distinct states found" (N may carry thousands separators).
fn distinct_states(printed: &str) -> Option<u64> {
    // The last one: progress lines before the summary carry running counts.
    printed.lines().rev().find_map(|l| {
        let (count, _) = l.split_once(" distinct states found")?;
        let number = count.rsplit(' ').next()?.replace(',', "");
        number.parse().ok()
    })
}

fn copy_folder(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_is_set_where_the_cfg_sets_it_and_nowhere_else() {
        let cfg = "\\* MaxOffset = 3 in the header stays\nCONSTANTS MaxOffset = 3  Guarded = TRUE\nINVARIANT TypeOK\n";
        let set = set_constant(cfg, "MaxOffset", "10").unwrap();
        assert!(
            set.contains("CONSTANTS MaxOffset = 10  Guarded = TRUE"),
            "{set}"
        );
        assert!(set.starts_with("\\* MaxOffset = 3 in the header stays"));
        assert_eq!(set_constant(cfg, "Writers", "4"), None);
    }

    #[test]
    fn a_count_of_model_values_becomes_a_set_of_them() {
        let cfg = "CONSTANTS\n  Writers = {w1, w2}\n  MaxOffset = 2\n";
        let set = set_constant(cfg, "Writers", "4").unwrap();
        assert!(
            set.contains("  Writers = {w1, w2, w3, w4}\n  MaxOffset = 2"),
            "{set}"
        );
    }

    /// A models folder `kafka-flow-828/` in a fresh temporary folder, holding `files`.
    fn models_folder(test: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir()
            .join(format!(
                "loadbearing-tlc-test-{}-{test}",
                std::process::id()
            ))
            .join("kafka-flow-828");
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        dir
    }

    fn casfw_reap() -> Config {
        let configs = loadbearing_expected::suite::built_in().unwrap();
        loadbearing_expected::suite::find(&configs, "casfw_reap")
            .unwrap()
            .clone()
    }

    #[test]
    fn a_missing_jar_or_module_is_named_before_java_runs() {
        let cfg = "\\* spec: CasFirstWrite\nCONSTANTS Writers = {w1, w2} MaxOffset = 2\n";
        let models = models_folder("module", &[("casfw_reap.cfg", cfg), ("tla2tools.jar", "")]);
        let tlc = |jar: PathBuf| Tlc {
            jar,
            models: vec![models.clone()],
            workers: 1,
        };
        let missing = tlc(models.join("nowhere.jar"));
        let err = missing.run(&casfw_reap(), &[]).unwrap_err().to_string();
        assert!(
            err.starts_with("TLC's jar ") && err.contains("nowhere.jar is not a file"),
            "{err}"
        );
        let err = tlc(models.join("tla2tools.jar"))
            .run(&casfw_reap(), &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with(
                "casfw_reap.cfg: its header names the module `CasFirstWrite`, and no \
                 `CasFirstWrite.tla` is beside it (TLC checks the TLA+ modules of a models \
                 folder, not its configs alone)"
            ),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(models.parent().unwrap());
    }

    #[test]
    fn a_failure_shows_the_last_lines_printed_where_they_are() {
        assert_eq!(last_lines("a\nb\n", "c"), "a\nb");
        assert_eq!(
            last_lines("  \n", "Error: no class tlc2.TLC"),
            "Error: no class tlc2.TLC"
        );
        let long: String = (1..=10).map(|i| format!("{i}\n")).collect();
        assert_eq!(last_lines(&long, ""), "3\n4\n5\n6\n7\n8\n9\n10");
    }

    #[test]
    fn the_count_is_read_from_tlcs_summary() {
        let printed = "Progress(3): 10 states generated, 9 distinct states found, 2 states left\n\
                       Model checking completed. No error has been found.\n\
                       1,239,666 states generated, 161,281 distinct states found, 0 states left on queue.\n";
        assert_eq!(distinct_states(printed), Some(161_281));
        assert_eq!(distinct_states("Error: parse"), None);
    }
}
