//! What the one-key backends (Cassandra, Kafka, Epoch) share: the refinement mapping onto
//! SingleWriterStore and the mapped properties (docs/models/cassandra.md, "Refinement mapping"),
//! and reading their traces (`conform`).

pub mod conform;

use loadbearing_refinement::{MappedRefinement, Refinement, Spec};

use crate::infra::vocab::{Cell, Ops};
use crate::store::model::{single_key_image, SingleWriterStore, SwsState};

/// A backend that stores one key's snapshot in one cell, folding a fixed event log.
pub trait OneKey: Spec + 'static {
    fn max_offset(&self) -> u8;
    fn log(state: &Self::State) -> Ops;
    fn row(state: &Self::State) -> Cell;
}

pub fn abstract_spec<M: OneKey>(model: &M) -> SingleWriterStore {
    SingleWriterStore {
        keys: 1,
        max_offset: model.max_offset(),
    }
}

pub fn image<M: OneKey>(state: &M::State) -> SwsState {
    single_key_image(M::log(state).0, M::row(state))
}

/// `RefSafeSpec`: the backend refines SingleWriterStore's SafeSpec.
pub fn ref_safe_spec<M: OneKey>(model: &M) -> Box<dyn Refinement<M::State>> {
    Box::new(MappedRefinement::new(
        "RefSafeSpec",
        abstract_spec(model),
        image::<M>,
    ))
}

/// `RefDurableOK`: the mapped INV_DurableCorrect.
pub fn ref_durable_ok<M: OneKey>(model: &M, state: &M::State) -> bool {
    abstract_spec(model).durable_correct(&image::<M>(state))
}

/// `RefTypeOK`: the mapped TypeOK.
pub fn ref_type_ok<M: OneKey>(model: &M, state: &M::State) -> bool {
    abstract_spec(model).type_ok(&image::<M>(state))
}

/// `RefLive`: the mapped LIVE_Progress, eventually hwm = MaxOffset.
pub fn ref_live<M: OneKey>(model: &M, state: &M::State) -> bool {
    M::row(state).offset == model.max_offset()
}

/// `INV_NoCorruptDurable`: a live row holds the correct fold at its offset.
pub fn no_corrupt_durable<M: OneKey>(_model: &M, state: &M::State) -> bool {
    let row = M::row(state);
    !row.present || row.deleted || row.contents == M::log(state).correct_contents(row.offset)
}

/// The range check every one-key model's own TypeOK makes of its row.
pub fn row_in_range(row: Cell, max: u8) -> bool {
    row.offset <= max && row.contents.within(1, max)
}
