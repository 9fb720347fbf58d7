//! The isolation levels SQL names, at which the servers' drivers (PostgreSQL, MariaDB) begin
//! their transactions: each server means something of its own by each (its module says what).

/// An isolation level as SQL names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Serializable,
    RepeatableRead,
    ReadCommitted,
}

impl Level {
    /// Strongest first: the order a server's columns are driven and listed in.
    pub const ALL: [Level; 3] = [
        Level::Serializable,
        Level::RepeatableRead,
        Level::ReadCommitted,
    ];

    /// The level as SQL names it.
    pub fn sql(self) -> &'static str {
        match self {
            Level::Serializable => "SERIALIZABLE",
            Level::RepeatableRead => "REPEATABLE READ",
            Level::ReadCommitted => "READ COMMITTED",
        }
    }
}
