//! The common vocabulary of the single-writer specs (what every model of the tower shares).

use std::fmt;

use serde::Serialize;

/// A set of offsets in `1..=31`, bit `o` for offset `o`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Offsets(pub u32);

impl Offsets {
    pub const EMPTY: Offsets = Offsets(0);

    pub fn with(self, offset: u8) -> Offsets {
        Offsets(self.0 | 1 << offset)
    }

    pub fn contains(self, offset: u8) -> bool {
        self.0 & (1 << offset) != 0
    }

    /// Every member lies in `lo..=hi`.
    pub fn within(self, lo: u8, hi: u8) -> bool {
        (0..32u8).all(|o| !self.contains(o) || (lo..=hi).contains(&o))
    }
}

impl fmt::Display for Offsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let members: Vec<String> = (0..32u8)
            .filter(|&o| self.contains(o))
            .map(|o| o.to_string())
            .collect();
        write!(f, "{{{}}}", members.join(","))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Op {
    Persist,
    Delete,
}

impl Op {
    /// The name traces and renderings use: `persist` or `delete`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Persist => "persist",
            Op::Delete => "delete",
        }
    }

    pub fn parse(name: &str) -> Option<Op> {
        match name {
            "persist" => Some(Op::Persist),
            "delete" => Some(Op::Delete),
            _ => None,
        }
    }
}

/// The event log of one key: offset `o` in `1..=max` is a delete iff bit `o` is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ops(pub u32);

impl Ops {
    /// Every one of the `2^max` logs, in a fixed order.
    pub fn all(max: u8) -> impl Iterator<Item = Ops> {
        (0..1u32 << max).map(|bits| Ops(bits << 1))
    }

    pub fn at(self, offset: u8) -> Op {
        if self.0 & (1 << offset) != 0 {
            Op::Delete
        } else {
            Op::Persist
        }
    }

    /// CorrectContents(o): the persists `j <= o` that no later delete `j < d <= o` cleared.
    pub fn correct_contents(self, offset: u8) -> Offsets {
        let mut contents = Offsets::EMPTY;
        for j in 1..=offset {
            contents = match self.at(j) {
                Op::Persist => contents.with(j),
                Op::Delete => Offsets::EMPTY,
            };
        }
        contents
    }

    pub fn render(self, max: u8) -> String {
        let ops: Vec<&str> = (1..=max).map(|o| self.at(o).name()).collect();
        format!("<{}>", ops.join(", "))
    }
}

/// A row of the store, or a compacted-topic record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cell {
    pub present: bool,
    pub deleted: bool,
    pub offset: u8,
    pub contents: Offsets,
}

impl Cell {
    pub const ABSENT: Cell = Cell {
        present: false,
        deleted: false,
        offset: 0,
        contents: Offsets::EMPTY,
    };

    pub fn snap(offset: u8, contents: Offsets) -> Cell {
        Cell {
            present: true,
            deleted: false,
            offset,
            contents,
        }
    }

    pub fn tomb(offset: u8) -> Cell {
        Cell {
            present: true,
            deleted: true,
            offset,
            contents: Offsets::EMPTY,
        }
    }

    /// The deterministic correct fold at `offset`: what a writer with the right state writes.
    pub fn correct_fold(ops: Ops, offset: u8) -> Cell {
        match ops.at(offset) {
            Op::Persist => Cell::snap(offset, ops.correct_contents(offset)),
            Op::Delete => Cell::tomb(offset),
        }
    }

    /// The snapshot a recovering owner reloads: the contents of a live row, else nothing.
    pub fn live_contents(self) -> Offsets {
        if self.present && !self.deleted {
            self.contents
        } else {
            Offsets::EMPTY
        }
    }

    /// `overwrote` latches when a write lands on a present row with a higher offset.
    pub fn would_overwrite(self, offset: u8) -> bool {
        self.present && self.offset > offset
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.present, self.deleted) {
            (false, _) if self.offset == 0 && self.contents == Offsets::EMPTY && !self.deleted => {
                write!(f, "Absent")
            }
            (true, false) => write!(f, "Snap({}, {})", self.offset, self.contents),
            (true, true) if self.contents == Offsets::EMPTY => write!(f, "Tomb({})", self.offset),
            _ => write!(
                f,
                "{{present: {}, deleted: {}, offset: {}, contents: {}}}",
                self.present, self.deleted, self.offset, self.contents
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correct_contents_restarts_after_each_delete() {
        // persist 1, delete 2, persist 3, persist 4
        let ops = Ops(1 << 2);
        assert_eq!(ops.correct_contents(1), Offsets::EMPTY.with(1));
        assert_eq!(ops.correct_contents(2), Offsets::EMPTY);
        assert_eq!(ops.correct_contents(4), Offsets::EMPTY.with(3).with(4));
    }

    #[test]
    fn every_log_is_enumerated_once() {
        let logs: Vec<Ops> = Ops::all(3).collect();
        assert_eq!(logs.len(), 8);
        assert!(logs.iter().all(|l| l.0 & 1 == 0 && l.0 < 16));
    }
}
