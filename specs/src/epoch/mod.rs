//! The Epoch family: the rejected producer-epoch design, whose refinement of SingleWriterStore
//! must fail, shared-state (`model`, reading Kafka's trace vocabulary) and as actors (`actors`).

#[cfg(feature = "actors")]
pub mod actors;
pub mod model;
