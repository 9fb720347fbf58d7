//! Trace conformance, implementation → model: is a recorded run a behaviour of the model?
//!
//! A trace is NDJSON, one event of the model's typed vocabulary per line (`wire`,
//! `docs/trace-format.md`). The checker keeps every model state consistent with the prefix
//! read so far, so an event may carry only some variables (the rest are searched), a declared
//! silent action may happen between events (up to a bound), and an event that reports no model
//! action is a stutter. A trace that fits ends with a witness, the model path it follows; one
//! that does not ends with a divergence report: the longest matched prefix, the event that could
//! not be matched, and for each state it was tried from, what the model allowed there and why
//! the event contradicts it. Data first (serde), text second.

mod conform;
pub mod history;
mod judge;
mod sequence;
mod wire;

pub use conform::{Beyond, Bound, Conform};
pub use history::{
    check_history, search_history, Budget, HistoryOutcome, HistoryVerdict, NotLinearizable,
    PartName, PartOrder, Placed, Progress, Refused, Sequential, Spent,
};
pub use judge::{
    judge, judge_history, read_trace, BeyondAt, Decision, Judgement, Legend, TraceOptions,
    TraceReport,
};
pub use sequence::{
    validate, validate_path, Divergence, Limits, Tried, TriedFrom, Validated, Verdict,
};
pub use wire::Key;
pub use wire::{
    parse_ndjson, parse_trace, to_history_line, to_history_ndjson, to_ndjson, LineError, Timed,
    Trace, TraceError, TraceEvent, SCHEMA_VERSION,
};
