//! The flows family (#835): what keeps the partition flows of the Kafka transactional writer
//! sound: every live flow owned in the current generation (`alive`), a key's flush serialized
//! against appends (`flush_cell`), and the owner's published generation token kept current
//! (`token_sync`); each with its trace vocabulary (`<model>_trace`).

pub mod alive;
pub mod alive_trace;
pub mod flush_cell;
pub mod flush_cell_trace;
pub mod token_sync;
pub mod token_sync_trace;
