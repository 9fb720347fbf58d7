//! JUnit XML (`--format junit`) for `check`, `mutate` and `conform`: the report CI systems parse.
//!
//! One `<testsuite>` per suite of configs (for `mutate`, per model; for `conform`, one for the
//! run), one `<testcase>` per config, guard or target. An outcome other than the declared one is
//! a `<failure>` whose message is the mismatch and whose text is the counterexample as the table
//! prints it; a config that could not run, or a run that hit a budget, is an `<error>`: it is not
//! known to hold. The shape is the JUnit 10 schema's (Jenkins' xUnit plugin), which the tests
//! validate against.

use std::fmt::Write as _;

#[cfg(feature = "targets")]
use loadbearing_conform::TargetResult;
use loadbearing_expected::run::Judged;

use crate::mutate::Coverage;
use crate::render;
#[cfg(feature = "targets")]
use crate::workload;

/// What became of one test case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaseOutcome {
    Passed,
    /// The outcome differs from what was declared.
    Failed {
        message: String,
        text: String,
    },
    /// The case could not be decided (bad input, a spent budget).
    Error {
        message: String,
        text: String,
    },
}

#[derive(Clone, Debug)]
pub struct Case {
    /// Where the case belongs (a suite, a model): JUnit's `classname`.
    pub classname: String,
    pub name: String,
    pub seconds: f64,
    pub outcome: CaseOutcome,
}

#[derive(Clone, Debug)]
pub struct Suite {
    pub name: String,
    pub cases: Vec<Case>,
}

impl Suite {
    fn count(&self, pick: fn(&CaseOutcome) -> bool) -> usize {
        self.cases.iter().filter(|c| pick(&c.outcome)).count()
    }

    fn seconds(&self) -> f64 {
        self.cases.iter().map(|c| c.seconds).sum()
    }
}

/// Groups cases into suites by their classname, keeping the order of first appearance.
pub fn grouped(cases: Vec<Case>) -> Vec<Suite> {
    let mut suites: Vec<Suite> = Vec::new();
    for case in cases {
        match suites.iter_mut().find(|s| s.name == case.classname) {
            Some(suite) => suite.cases.push(case),
            None => suites.push(Suite {
                name: case.classname.clone(),
                cases: vec![case],
            }),
        }
    }
    suites
}

/// The document: `<testsuites name=…>` holding every suite.
pub fn xml(name: &str, suites: &[Suite]) -> String {
    let failed = |o: &CaseOutcome| matches!(o, CaseOutcome::Failed { .. });
    let errored = |o: &CaseOutcome| matches!(o, CaseOutcome::Error { .. });
    let tests: usize = suites.iter().map(|s| s.cases.len()).sum();
    let failures: usize = suites.iter().map(|s| s.count(failed)).sum();
    let errors: usize = suites.iter().map(|s| s.count(errored)).sum();
    let seconds: f64 = suites.iter().map(Suite::seconds).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{}\">",
        escape(name),
        time(seconds)
    );
    for suite in suites {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{}\">",
            escape(&suite.name),
            suite.cases.len(),
            suite.count(failed),
            suite.count(errored),
            time(suite.seconds())
        );
        for case in &suite.cases {
            let open = format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"",
                escape(&case.classname),
                escape(&case.name),
                time(case.seconds)
            );
            match &case.outcome {
                CaseOutcome::Passed => {
                    let _ = writeln!(out, "{open}/>");
                }
                CaseOutcome::Failed { message, text } => {
                    let _ = writeln!(out, "{open}>");
                    element(&mut out, "failure", message, text);
                    out.push_str("    </testcase>\n");
                }
                CaseOutcome::Error { message, text } => {
                    let _ = writeln!(out, "{open}>");
                    element(&mut out, "error", message, text);
                    out.push_str("    </testcase>\n");
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn element(out: &mut String, tag: &str, message: &str, text: &str) {
    let _ = writeln!(
        out,
        "      <{tag} type=\"{tag}\" message=\"{}\">{}</{tag}>",
        escape(message),
        escape(text)
    );
}

/// Seconds as the schema's time: digits, a point, at most three decimals.
fn time(seconds: f64) -> String {
    format!("{:.3}", seconds.max(0.0))
}

/// Text safe inside an XML attribute or element: the five entities escaped, and the characters
/// XML 1.0 cannot carry at all (control characters other than tab and newline) shown as `\u{…}`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' => out.push(c),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A config that could not be run at all (unknown model, bad constants).
pub struct RunFailure {
    pub suite: String,
    pub config: String,
    pub error: String,
}

/// `check`: a case per config, in the order they ran.
pub fn check_cases(judged: &[Judged], failures: &[RunFailure]) -> Vec<Case> {
    let mut cases: Vec<Case> = judged.iter().map(check_case).collect();
    cases.extend(failures.iter().map(|f| Case {
        classname: f.suite.clone(),
        name: f.config.clone(),
        seconds: 0.0,
        outcome: CaseOutcome::Error {
            message: f.error.clone(),
            text: f.error.clone(),
        },
    }));
    cases
}

fn check_case(j: &Judged) -> Case {
    let report = j.report.as_ref();
    let actual = render::actual(report.outcome());
    let counterexample = report
        .counterexample()
        .map(|cx| render::swimlane(cx, ""))
        .unwrap_or_default();
    let summary = format!(
        "expected {}, actual {actual}: {} states, depth {}",
        j.config.expected,
        report.distinct_states(),
        report.depth()
    );
    let outcome = if j.incomplete() {
        CaseOutcome::Error {
            message: format!("{actual}: not known to be as expected"),
            text: summary,
        }
    } else if let Some(why) = &j.mismatch {
        CaseOutcome::Failed {
            message: why.to_string(),
            text: format!("{summary}\n{counterexample}"),
        }
    } else {
        CaseOutcome::Passed
    };
    Case {
        classname: j.config.suite.clone(),
        name: j.config.name.clone(),
        seconds: report.seconds(),
        outcome,
    }
}

/// `check --workload`: a case per variant (classname `workload NAME`); it fails when the
/// file's `[expect]` differs from what the variant reaches, and is an error when the
/// exploration was cut short.
#[cfg(feature = "targets")]
pub fn workload_cases(report: &workload::Report) -> Vec<Case> {
    report
        .results
        .iter()
        .map(|r| {
            let findings: Vec<String> = r
                .summary
                .findings
                .iter()
                .map(|f| format!("{}: {}\n  {}", f.label, f.example, f.schedule.join(" ; ")))
                .collect();
            let text = format!(
                "{} final states of {}; reached {}\n{}",
                r.summary.finals,
                r.summary.states,
                workload::outcome(&r.reached),
                findings.join("\n")
            );
            let outcome = if !r.summary.complete {
                CaseOutcome::Error {
                    message: "incomplete: the state budget ran out".into(),
                    text,
                }
            } else if r.differs {
                CaseOutcome::Failed {
                    message: format!(
                        "expected {}, reached {}",
                        workload::outcome(r.expected.as_deref().unwrap_or_default()),
                        workload::outcome(&r.reached)
                    ),
                    text,
                }
            } else {
                CaseOutcome::Passed
            };
            Case {
                classname: format!("workload {}", report.workload),
                name: r.variant.clone(),
                seconds: r.seconds,
                outcome,
            }
        })
        .collect()
}

/// `mutate`: a case per guard of a model; it fails when nothing catches the guard's removal
/// and no reason is written for it.
pub fn mutate_cases(coverage: &Coverage) -> Vec<Case> {
    coverage
        .guards
        .iter()
        .map(|g| {
            let mutants: Vec<String> = coverage
                .mutants
                .iter()
                .filter(|m| m.model == g.model && m.guard == g.guard && !m.not_applicable)
                .map(|m| {
                    let caught: Vec<&str> =
                        m.caught_by.iter().map(|c| c.property.as_str()).collect();
                    format!(
                        "{} with {}: {}",
                        m.config,
                        m.removal,
                        if caught.is_empty() {
                            "nothing fails".to_string()
                        } else {
                            format!("fails {}", caught.join(", "))
                        }
                    )
                })
                .collect();
            let outcome = if g.load_bearing() || g.explained.is_some() {
                CaseOutcome::Passed
            } else {
                CaseOutcome::Failed {
                    message: format!(
                        "guard `{}` is not load-bearing: no property catches its removal, and expected/guards.toml gives no reason",
                        g.guard
                    ),
                    text: mutants.join("\n"),
                }
            };
            Case {
                classname: g.model.clone(),
                name: g.guard.clone(),
                seconds: 0.0,
                outcome,
            }
        })
        .collect()
}

/// `conform`: a case per target on its backend; a target that could not run is an error.
#[cfg(feature = "targets")]
pub fn conform_cases(results: &[TargetResult]) -> Vec<Case> {
    results
        .iter()
        .map(|r| {
            let outcome = if let Some(error) = &r.error {
                // As a config that could not run (`check_cases`): the error is all there is.
                CaseOutcome::Error {
                    message: error.to_string(),
                    text: error.to_string(),
                }
            } else if r.ok {
                CaseOutcome::Passed
            } else {
                let mut text = String::new();
                for d in &r.divergences {
                    let _ = writeln!(text, "{}", d.text());
                }
                for m in &r.mismatches {
                    let _ = writeln!(text, "mismatch: {m}");
                }
                for replay in &r.replays {
                    let _ = writeln!(
                        text,
                        "replayed {}: broken: {}; guarded: {}",
                        replay.config, replay.broken, replay.guarded
                    );
                }
                CaseOutcome::Failed {
                    message: format!(
                        "{} of {} traces diverge from {}, {} mismatches (expected: {})",
                        r.divergent_traces,
                        r.traces,
                        r.model,
                        r.mismatches.len(),
                        r.expected.name()
                    ),
                    text,
                }
            };
            Case {
                classname: format!("conform.{}", r.backend),
                name: r.target.to_string(),
                seconds: r.seconds,
                outcome,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_xml_cannot_carry_is_escaped() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>\u{1}"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\\u{1}"
        );
    }

    #[test]
    fn suites_count_their_failures_and_errors() {
        let case = |name: &str, outcome| Case {
            classname: "s".into(),
            name: name.into(),
            seconds: 0.5,
            outcome,
        };
        let failed = CaseOutcome::Failed {
            message: "m".into(),
            text: "t".into(),
        };
        let suites = grouped(vec![
            case("a", CaseOutcome::Passed),
            case("b", failed),
            case(
                "c",
                CaseOutcome::Error {
                    message: "e".into(),
                    text: String::new(),
                },
            ),
        ]);
        let doc = xml("run", &suites);
        assert!(doc.contains(
            "<testsuite name=\"s\" tests=\"3\" failures=\"1\" errors=\"1\" skipped=\"0\" time=\"1.500\">"
        ));
        assert!(doc.contains("<failure type=\"failure\" message=\"m\">t</failure>"));
    }
}
