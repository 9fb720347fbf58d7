//! What a subcommand found: one type for every subcommand. Only `main` turns it into an exit
//! code (0 as expected, 1 differs, 2 incomplete or bad input), as ripgrep's `main` does.

/// A subcommand's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every outcome is what was expected.
    AsExpected,
    /// Some outcome differs from what was expected (a failure for the wrong reason included).
    Differs,
    /// A state or time budget was hit before an answer: never reported as holding.
    Incomplete,
    /// The input was bad; what was wrong has been reported.
    BadInput,
}

impl Verdict {
    /// As expected when `ok`, otherwise differs.
    pub fn of(ok: bool) -> Verdict {
        if ok {
            Verdict::AsExpected
        } else {
            Verdict::Differs
        }
    }
}
