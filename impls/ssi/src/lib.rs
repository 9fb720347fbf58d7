//! An MVCC key-value engine with serializable snapshot isolation, as libdb implements it.
