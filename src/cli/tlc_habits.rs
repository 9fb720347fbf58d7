//! TLC's options spelt the TLC way (`-workers 2`, `-deadlock`): clap would read `-workers` as
//! `-w orkers` and answer `invalid value 'orkers'`, which tells a TLC user nothing. Such an
//! argument is caught before parsing and answered with what loadbearing calls it.

use std::ffi::OsString;

/// What to say about the first argument that is a TLC-style option (one dash, a word), if any.
/// Arguments after a bare `--` are values, never options.
pub fn tlc_style_option(args: &[OsString]) -> Option<String> {
    args.iter()
        .skip(1)
        .map(|a| a.to_string_lossy())
        .take_while(|a| a != "--")
        .find_map(|a| {
            let word = a.strip_prefix('-')?;
            let is_word = word.len() >= 3
                && !word.starts_with('-')
                && word.chars().all(|c| c.is_ascii_alphabetic());
            is_word.then(|| advice(word))
        })
}

fn advice(word: &str) -> String {
    let said = format!("`-{word}` is TLC's spelling");
    match word {
        "workers" => format!(
            "{said}: threads are `--threads N` (`check`, `bench`); `--workers N` is for timely workers with `--distributed`"
        ),
        "deadlock" => format!(
            "{said}: `--deadlock` (`check --deadlock`) takes a state without successors as a normal end for every config checked; a config says so for itself with `end_states = true` in its suite entry (docs/architecture.md)"
        ),
        "config" => format!(
            "{said}: configs are named as arguments (`loadbearing check NAME`; `loadbearing list` shows them), a suite file with `--suite FILE`"
        ),
        "depth" | "simulate" => format!(
            "{said}: loadbearing explores every state breadth-first; bound a run with `--timeout-secs` or `--max-states`"
        ),
        _ => format!("{said}: loadbearing's options take two dashes (`--{word}`; `--help` lists them)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(args: &[&str]) -> Option<String> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        tlc_style_option(&args)
    }

    #[test]
    fn tlc_options_are_named_and_others_pass() {
        let workers = said(&["lb", "check", "casfw_3w", "-workers", "2"]).unwrap();
        assert!(workers.contains("--threads N"), "{workers}");
        let deadlock = said(&["lb", "check", "x", "-deadlock"]).unwrap();
        assert!(deadlock.contains("end_states = true"), "{deadlock}");
        assert!(said(&["lb", "check", "x", "-colour"])
            .unwrap()
            .contains("`--colour`"));
        for fine in [
            &["lb", "check", "x", "--threads", "2"][..],
            &["lb", "check", "x", "-w", "2"],
            &["lb", "check", "x", "-n2"],
            &["lb", "conform", "--", "-workers"],
            &["lb", "check", "x", "--set", "N=-1"],
        ] {
            assert_eq!(said(fine), None, "{fine:?}");
        }
    }
}
