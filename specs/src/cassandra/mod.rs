//! The Cassandra family: the snapshot store guarded by an offset compare-and-set and an
//! offset-carrying tombstone, as the tower models it (`model`, #828) and as the #835 suite does
//! (`model_835`, read from traces by `conform_835`), its actor model (`actors`), and the `flow`
//! trace vocabulary the partition flows write (`trace`).

#[cfg(feature = "actors")]
pub mod actors;
pub mod conform_835;
pub mod model;
pub mod model_835;
pub mod trace;
