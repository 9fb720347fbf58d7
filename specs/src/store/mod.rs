//! The store family: `SingleWriterStore`, the abstract spec at the top of the tower that every
//! backend must refine.

pub mod model;
