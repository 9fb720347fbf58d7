//! The common vocabulary of the single-writer specs (what every model of the tower shares).

use std::fmt;

use loadbearing_refinement::Shown;
use serde::{Deserialize, Serialize};

/// The last offset an event log ([`Ops`]) or a set of offsets ([`Offsets`]) holds, and why a
/// one-key model's MaxOffset stops there. The sets stay 32-bit: a model over every log starts
/// from `2^MaxOffset` of them, out of any checker's reach well before 31.
pub const LAST_OFFSET: u8 = 31;

/// `MaxOffset` of every model whose log and offset sets are 32-bit (`Ops`, `Offsets`): the
/// one declaration the single-writer models and their #835 versions share.
pub const MAX_OFFSET: crate::infra::knobs::Nat = crate::infra::knobs::Nat::new(
    "MaxOffset",
    1,
    LAST_OFFSET as u64,
    3,
    "events at offsets 1..MaxOffset",
)
.max_because(OFFSETS_LIMIT);
pub const OFFSETS_LIMIT: &str = "the log and the sets of offsets are 32-bit, bit o for offset o";

/// A set of offsets in `0..=31`, bit `o` for offset `o`. In a trace, the list of its members
/// (`[1,2]`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(into = "Vec<u8>", try_from = "Vec<u8>")]
pub struct Offsets(pub u32);

impl From<Offsets> for Vec<u8> {
    fn from(set: Offsets) -> Vec<u8> {
        (0..32u8).filter(|&o| set.contains(o)).collect()
    }
}

/// An offset a set of offsets cannot hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("offset {0} is out of range (0..=31)")]
pub struct OffsetOutOfRange(pub u8);

impl TryFrom<Vec<u8>> for Offsets {
    type Error = OffsetOutOfRange;
    fn try_from(members: Vec<u8>) -> Result<Offsets, OffsetOutOfRange> {
        members.into_iter().try_fold(Offsets::EMPTY, |set, o| {
            if o < 32 {
                Ok(set.with(o))
            } else {
                Err(OffsetOutOfRange(o))
            }
        })
    }
}

impl Offsets {
    pub const EMPTY: Offsets = Offsets(0);

    pub fn with(self, offset: u8) -> Offsets {
        Offsets(self.0 | 1 << offset)
    }

    pub fn contains(self, offset: u8) -> bool {
        self.0 & (1 << offset) != 0
    }

    /// The greatest member, 0 for the empty set.
    pub fn max(self) -> u8 {
        (u32::BITS - self.0.leading_zeros()).saturating_sub(1) as u8
    }

    /// The members above `floor`.
    pub fn above(self, floor: u8) -> Offsets {
        Offsets(self.0 & u32::MAX.checked_shl(u32::from(floor) + 1).unwrap_or(0))
    }

    /// Every member lies in `lo..=hi`. One mask, not a walk over the 32 offsets: a model's
    /// TypeOK asks it at every state (a twentieth of a Kafka search's time walked).
    pub fn within(self, lo: u8, hi: u8) -> bool {
        // Offsets 0..=hi, then those below lo taken out; shifts past 63 leave nothing.
        let upto = 1u64
            .checked_shl(u32::from(hi) + 1)
            .map_or(u64::MAX, |bit| bit - 1);
        let below = 1u64
            .checked_shl(u32::from(lo))
            .map_or(u64::MAX, |bit| bit - 1);
        u64::from(self.0) & !(upto & !below) == 0
    }
}

impl From<Offsets> for Shown {
    fn from(offsets: Offsets) -> Shown {
        Shown::set((0..32u8).filter(|&o| offsets.contains(o)))
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

/// In a trace, `persist` or `delete`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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
        self.fold_onto(Offsets::EMPTY, 1, offset)
    }

    /// The in-memory fold of events `a..=b` onto `base` (the #835 Kafka's FoldRange): a
    /// persist adds its offset, a delete clears everything before it.
    pub fn fold_onto(self, base: Offsets, a: u8, b: u8) -> Offsets {
        (a..=b).fold(base, |state, j| match self.at(j) {
            Op::Persist => state.with(j),
            Op::Delete => Offsets::EMPTY,
        })
    }

    pub fn render(self, max: u8) -> String {
        self.shown(max).into_text()
    }

    /// The log of offsets `1..=max` as a model variable: `<persist, delete>`.
    pub fn shown(self, max: u8) -> Shown {
        Shown::sequence((1..=max).map(|o| Shown::name(self.at(o).name())))
    }
}

/// A row of the store, or a compacted-topic record. In a trace, `{"kind":"absent"}`,
/// `{"kind":"snap","offset":2,"contents":[1,2]}` or `{"kind":"tomb","offset":3}`.
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

/// The three shapes a row takes, as a trace writes them.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum CellWire {
    Absent {},
    Snap { offset: u8, contents: Offsets },
    Tomb { offset: u8 },
}

/// People and traces read a cell in its tagged form; the distributed engine's binary wire
/// (bincode, which cannot read a tagged form back) carries its four fields as they are.
impl Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            CellWire::from(*self).serialize(serializer)
        } else {
            (self.present, self.deleted, self.offset, self.contents.0).serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for Cell {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Cell, D::Error> {
        if deserializer.is_human_readable() {
            return CellWire::deserialize(deserializer).map(Cell::from);
        }
        let (present, deleted, offset, contents) =
            <(bool, bool, u8, u32)>::deserialize(deserializer)?;
        Ok(Cell {
            present,
            deleted,
            offset,
            contents: Offsets(contents),
        })
    }
}

impl From<Cell> for CellWire {
    fn from(c: Cell) -> CellWire {
        match (c.present, c.deleted) {
            (false, _) => CellWire::Absent {},
            (true, false) => CellWire::Snap {
                offset: c.offset,
                contents: c.contents,
            },
            (true, true) => CellWire::Tomb { offset: c.offset },
        }
    }
}

impl From<CellWire> for Cell {
    fn from(c: CellWire) -> Cell {
        match c {
            CellWire::Absent {} => Cell::ABSENT,
            CellWire::Snap { offset, contents } => Cell::snap(offset, contents),
            CellWire::Tomb { offset } => Cell::tomb(offset),
        }
    }
}

impl From<Cell> for Shown {
    /// A row by its name (`Absent`, `Snap(2, {1,2})`, `Tomb(3)`), or as the record it is when
    /// it is none of those.
    fn from(cell: Cell) -> Shown {
        match (cell.present, cell.deleted) {
            (false, _) if cell == Cell::ABSENT => Shown::name(cell),
            (true, false) => Shown::name(cell),
            (true, true) if cell.contents == Offsets::EMPTY => Shown::name(cell),
            _ => Shown::record([
                ("present", cell.present.into()),
                ("deleted", cell.deleted.into()),
                ("offset", cell.offset.into()),
                ("contents", cell.contents.into()),
            ]),
        }
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
    fn within_is_every_member_in_the_range() {
        let sets = [
            0u32,
            1,
            2,
            0b1010,
            0x8000_0000,
            0xffff_ffff,
            0x0001_fffe,
            0x7ff0_0000,
        ];
        for set in sets.map(Offsets) {
            for lo in 0..=40u8 {
                for hi in 0..=40u8 {
                    let walked = (0..32u8).all(|o| !set.contains(o) || (lo..=hi).contains(&o));
                    assert_eq!(set.within(lo, hi), walked, "{set:?} within {lo}..={hi}");
                }
            }
        }
        assert!(Offsets(0b110).within(1, 2));
        assert!(!Offsets(0b110).within(2, 2));
        assert!(Offsets::EMPTY.within(5, 1));
    }

    #[test]
    fn correct_contents_restarts_after_each_delete() {
        // persist 1, delete 2, persist 3, persist 4
        let ops = Ops(1 << 2);
        assert_eq!(ops.correct_contents(1), Offsets::EMPTY.with(1));
        assert_eq!(ops.correct_contents(2), Offsets::EMPTY);
        assert_eq!(ops.correct_contents(4), Offsets::EMPTY.with(3).with(4));
    }

    #[test]
    fn a_cell_travels_between_processes_in_binary() {
        // The distributed engine's wire (bincode) cannot read the tagged form back.
        let cells = [Cell::ABSENT, Cell::snap(2, Offsets(0b110)), Cell::tomb(3)];
        let bytes = bincode::serialize(&cells).unwrap();
        let back: [Cell; 3] = bincode::deserialize(&bytes).unwrap();
        assert_eq!(back, cells);
    }

    #[test]
    fn rows_and_offset_sets_read_back_as_written() {
        let cells = [Cell::ABSENT, Cell::snap(2, Offsets(0b110)), Cell::tomb(3)];
        let text = serde_json::to_string(&cells).unwrap();
        assert_eq!(
            text,
            r#"[{"kind":"absent"},{"kind":"snap","offset":2,"contents":[1,2]},{"kind":"tomb","offset":3}]"#
        );
        assert_eq!(serde_json::from_str::<Vec<Cell>>(&text).unwrap(), cells);
        assert!(serde_json::from_str::<Offsets>("[32]").is_err());
        assert!(serde_json::from_str::<Cell>(r#"{"kind":"tomb","offset":3,"x":1}"#).is_err());
    }

    #[test]
    fn every_log_is_enumerated_once() {
        let logs: Vec<Ops> = Ops::all(3).collect();
        assert_eq!(logs.len(), 8);
        assert!(logs.iter().all(|l| l.0 & 1 == 0 && l.0 < 16));
    }

    #[test]
    fn a_fold_keeps_only_what_follows_the_last_delete() {
        // persist 1, delete 2, persist 3
        let op = Ops(1 << 2);
        let base = Offsets::EMPTY.with(1);
        assert_eq!(op.fold_onto(base, 3, 3), base.with(3));
        assert_eq!(op.fold_onto(base, 2, 3), Offsets::EMPTY.with(3));
        assert_eq!(op.fold_onto(base, 2, 1), base);
        assert_eq!(op.correct_contents(3), Offsets::EMPTY.with(3));
    }

    #[test]
    fn a_sets_greatest_member_and_its_members_above_a_floor() {
        let set = Offsets::EMPTY.with(0).with(4).with(31);
        assert_eq!(set.max(), 31);
        assert_eq!(Offsets::EMPTY.with(4).max(), 4);
        assert_eq!(Offsets::EMPTY.max(), 0);
        assert_eq!(set.above(0), Offsets::EMPTY.with(4).with(31));
        assert_eq!(set.above(4), Offsets::EMPTY.with(31));
        assert_eq!(set.above(31), Offsets::EMPTY);
    }
}
