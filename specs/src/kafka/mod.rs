//! The Kafka family: the snapshot store on a compacted topic fenced by the consumer group's
//! generation, as the tower models it (`model`, #828) and as the #835 suite does (`model_835`),
//! its actor model (`actors`), and the `kafka` trace vocabulary (`trace`, which Epoch reads too).

#[cfg(feature = "actors")]
pub mod actors;
pub mod model;
pub mod model_835;
pub mod trace;
