//! What every model is built from, apart from any one design: its constants (`knobs`), the
//! guards its design names among them (`guard`), the single-writer vocabulary of logs, offsets
//! and rows (`vocab`), what weak fairness still asks of a trace's last state (`fairness`), and
//! the actor models' network, step names and trace vocabulary (`actors`).

#[cfg(feature = "actors")]
pub mod actors;
pub mod fairness;
pub mod guard;
pub mod knobs;
pub mod vocab;
