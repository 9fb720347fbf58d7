//! Workloads as data: each transaction runs a small program of reads, then writes whose values
//! (and whether they happen at all) depend on what was read.

use std::fmt;
use std::ops::RangeInclusive;

/// Keys are small indices into a workload's key table.
pub type Key = usize;

/// A number as a workload file writes it: any 64-bit value, as engines hold them. The SSI model
/// holds fewer (its [`ModelBounds`]); a workload with a value beyond them runs on engines only.
pub type Value = i64;

/// The numbers a workload computes with: the model's `i8`, which wraps as the model's own
/// arithmetic does, and engines' `i64`.
pub trait Number: Copy + PartialOrd {
    /// A workload's constant as this number. The model only meets workloads whose constants it
    /// holds ([`Workload::outside_model`] refuses the rest before a model is built).
    fn of(value: Value) -> Self;
    fn plus(self, other: Self) -> Self;
}

impl Number for i8 {
    fn of(value: Value) -> i8 {
        i8::try_from(value).expect("the model's workloads hold only values it can represent")
    }

    fn plus(self, other: i8) -> i8 {
        self.wrapping_add(other)
    }
}

impl Number for i64 {
    fn of(value: Value) -> i64 {
        value
    }

    fn plus(self, other: i64) -> i64 {
        self.wrapping_add(other)
    }
}

/// What the SSI model has room for: a workload beyond any of it is run on engines only, and
/// [`Workload::outside_model`] says which bound it passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelBounds {
    pub txns: usize,
    /// Statements a transaction, its ending aside.
    pub stmts: usize,
    pub values: RangeInclusive<Value>,
}

/// A value computed from the transaction's own reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Const(Value),
    /// The value this transaction last read (or wrote) for the key.
    Read(Key),
    Add(Box<Expr>, Box<Expr>),
    /// `if a < b then yes else no`.
    IfLess(Box<Expr>, Box<Expr>, Box<Expr>, Box<Expr>),
}

/// A predicate over a row's value, as a `WHERE` clause says it: `value % 3 = 0`, `value > 5`,
/// or every row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pred {
    /// Every row (`read all`: `SELECT * FROM test`).
    All,
    /// `value <op> n`.
    Compare(Cmp, Value),
    /// `value % modulus = remainder` (SQL's `%`: the remainder takes the value's sign).
    Mod { modulus: Value, remainder: Value },
}

/// A comparison of a row's value with a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    pub const ALL: [Cmp; 6] = [Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge];

    /// As SQL writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "=",
            Cmp::Ne => "<>",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
}

impl Pred {
    /// Whether a row holding `value` matches; an absent row matches nothing.
    pub fn matches(self, value: Option<i64>) -> bool {
        let Some(v) = value else {
            return false;
        };
        match self {
            Pred::All => true,
            Pred::Compare(cmp, n) => match cmp {
                Cmp::Eq => v == n,
                Cmp::Ne => v != n,
                Cmp::Lt => v < n,
                Cmp::Le => v <= n,
                Cmp::Gt => v > n,
                Cmp::Ge => v >= n,
            },
            Pred::Mod { modulus, remainder } => v.wrapping_rem(modulus) == remainder,
        }
    }

    /// The condition as SQL's `WHERE` says it of a column (`v % 3 = 0`); `None` for every row.
    pub fn sql(self, column: &str) -> Option<String> {
        match self {
            Pred::All => None,
            Pred::Compare(cmp, n) => Some(format!("{column} {} {n}", cmp.symbol())),
            Pred::Mod { modulus, remainder } => Some(format!("{column} % {modulus} = {remainder}")),
        }
    }
}

impl fmt::Display for Pred {
    /// As a workload file writes it: `all`, `where value % 3 = 0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.sql("value") {
            None => f.write_str("all"),
            Some(condition) => write!(f, "where {condition}"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stmt {
    Read(Key),
    /// Writes `value` to `key`, only if the key read earlier equals the given value.
    Write {
        key: Key,
        value: Expr,
        only_if: Option<(Key, Value)>,
    },
    /// A predicate read: every row whose value matches, as one statement sees the table.
    Select(Pred),
    /// Adds a row that must be absent (a store refuses a duplicate key as it would).
    Insert {
        key: Key,
        value: Value,
    },
    /// One statement that reads and writes the rows it targets: `update x = x + 10`,
    /// `update where value = 10 set value = 12`.
    Update {
        target: Target,
        set: Set,
    },
    /// Removes the rows it targets: `delete x`, `delete where value = 20`.
    Delete(Target),
}

impl Stmt {
    /// Every number the statement names (a constant, a guard's value, a predicate's operands).
    pub fn constants(&self) -> Vec<Value> {
        let mut out = Vec::new();
        let pred = |p: &Pred, out: &mut Vec<Value>| match *p {
            Pred::All => {}
            Pred::Compare(_, n) => out.push(n),
            Pred::Mod { modulus, remainder } => out.extend([modulus, remainder]),
        };
        let target = |t: &Target, out: &mut Vec<Value>| {
            if let Target::Where(p) = t {
                pred(p, out)
            }
        };
        match self {
            Stmt::Read(_) => {}
            Stmt::Write { value, only_if, .. } => {
                value.constants(&mut out);
                out.extend(only_if.map(|(_, v)| v));
            }
            Stmt::Select(p) => pred(p, &mut out),
            Stmt::Insert { value, .. } => out.push(*value),
            Stmt::Update { target: t, set } => {
                target(t, &mut out);
                out.push(match *set {
                    Set::To(v) | Set::Add(v) => v,
                });
            }
            Stmt::Delete(t) => target(t, &mut out),
        }
        out
    }
}

impl Expr {
    fn constants(&self, out: &mut Vec<Value>) {
        match self {
            Expr::Const(v) => out.push(*v),
            Expr::Read(_) => {}
            Expr::Add(a, b) => {
                a.constants(out);
                b.constants(out);
            }
            Expr::IfLess(a, b, yes, no) => [a, b, yes, no].iter().for_each(|e| e.constants(out)),
        }
    }
}

/// The rows an update or delete targets: one key, or every row a predicate matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    Key(Key),
    Where(Pred),
}

/// What an update sets a row's value to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Set {
    /// `= 12`.
    To(Value),
    /// `= value + 10` (a negative number subtracts).
    Add(Value),
}

impl Set {
    /// The row's new value (wrapping, as every value a workload computes).
    pub fn apply(self, value: Value) -> Value {
        match self {
            Set::To(v) => v,
            Set::Add(n) => value.wrapping_add(n),
        }
    }

    /// As SQL's `SET` says it of a column (`v + 10`, `12`).
    pub fn sql(self, column: &str) -> String {
        match self {
            Set::To(v) => v.to_string(),
            Set::Add(n) if n < 0 => format!("{column} - {}", n.unsigned_abs()),
            Set::Add(n) => format!("{column} + {n}"),
        }
    }
}

/// How a transaction ends after its statements: it asks to commit (the store may still refuse),
/// or it rolls itself back (Hermitage's `abort`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ending {
    #[default]
    Commit,
    Abort,
}

impl Ending {
    /// The step that ends a transaction, as a workload file writes it.
    pub fn step(self) -> &'static str {
        match self {
            Ending::Commit => "commit",
            Ending::Abort => "abort",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub name: String,
    pub keys: Vec<String>,
    /// The page each key lives on: SIREAD markers are per page.
    pub pages: Vec<usize>,
    /// Each key's initial value; `None`: the key starts absent (no row).
    pub initial: Vec<Option<Value>>,
    pub programs: Vec<Vec<Stmt>>,
    /// How each transaction ends, one per program.
    pub endings: Vec<Ending>,
}

impl Workload {
    /// How transaction t ends.
    pub fn ending(&self, t: usize) -> Ending {
        self.endings[t]
    }

    /// Why the SSI model cannot run this workload, if it cannot: the model has no predicate
    /// reads, no inserts, no single-statement updates or deletes and no absent rows, and no
    /// room beyond `model`'s bounds (engines run such workloads on their own).
    pub fn outside_model(&self, model: &ModelBounds) -> Option<String> {
        self.outside_language().or_else(|| self.beyond(model))
    }

    fn outside_language(&self) -> Option<String> {
        let steps = self.programs.iter().flatten();
        if let Some(Stmt::Select(p)) = steps.clone().find(|s| matches!(s, Stmt::Select(_))) {
            return Some(format!(
                "a predicate read (`read {p}`): the model reads keys only"
            ));
        }
        if let Some(s) = steps.clone().find(|s| matches!(s, Stmt::Insert { .. })) {
            return Some(format!("`{}`: the model has no inserts", self.stmt_text(s)));
        }
        if let Some(s) = steps
            .clone()
            .find(|s| matches!(s, Stmt::Update { .. } | Stmt::Delete(_)))
        {
            return Some(format!(
                "`{}`: the model has no single-statement updates or deletes",
                self.stmt_text(s)
            ));
        }
        if let Some(k) = self.initial.iter().position(Option::is_none) {
            return Some(format!(
                "`{}` starts absent: the model's keys all start with a value",
                self.keys[k]
            ));
        }
        None
    }

    /// The first of `model`'s bounds this workload passes: its transactions, a transaction's
    /// statements, a value it starts with or writes.
    fn beyond(&self, model: &ModelBounds) -> Option<String> {
        let n = self.programs.len();
        if n > model.txns {
            return Some(format!(
                "{n} transactions > {}: the model has room for {}",
                model.txns, model.txns
            ));
        }
        if let Some((t, p)) = self
            .programs
            .iter()
            .enumerate()
            .find(|(_, p)| p.len() > model.stmts)
        {
            return Some(format!(
                "T{} has {} statements > {}: the model has room for {} a transaction",
                t + 1,
                p.len(),
                model.stmts,
                model.stmts
            ));
        }
        let (low, high) = (model.values.start(), model.values.end());
        if let Some((k, v)) = self
            .keys
            .iter()
            .zip(&self.initial)
            .find_map(|(k, v)| v.filter(|v| !model.values.contains(v)).map(|v| (k, v)))
        {
            return Some(format!(
                "`{k}` starts at {v}: the model holds values {low}..={high}"
            ));
        }
        let step = self
            .programs
            .iter()
            .flatten()
            .find(|s| s.constants().iter().any(|c| !model.values.contains(c)))?;
        Some(format!(
            "`{}`: the model holds values {low}..={high}",
            self.stmt_text(step)
        ))
    }

    pub fn page_count(&self) -> usize {
        self.pages.iter().max().map_or(0, |p| p + 1)
    }

    pub fn stmt_text(&self, stmt: &Stmt) -> String {
        match stmt {
            Stmt::Read(k) => format!("read {}", self.keys[*k]),
            Stmt::Write {
                key,
                value,
                only_if,
            } => {
                let guard = only_if
                    .map(|(k, v)| format!(" if {}={v}", self.keys[k]))
                    .unwrap_or_default();
                format!("put {}={}{guard}", self.keys[*key], self.expr_text(value))
            }
            Stmt::Select(p) => format!("read {p}"),
            Stmt::Insert { key, value } => format!("insert {}={value}", self.keys[*key]),
            Stmt::Update {
                target: Target::Key(k),
                set,
            } => {
                let k = &self.keys[*k];
                format!("update {k} = {}", set.sql(k))
            }
            Stmt::Update {
                target: Target::Where(p),
                set,
            } => format!("update {p} set value = {}", set.sql("value")),
            Stmt::Delete(Target::Key(k)) => format!("delete {}", self.keys[*k]),
            Stmt::Delete(Target::Where(p)) => format!("delete {p}"),
        }
    }

    fn expr_text(&self, e: &Expr) -> String {
        match e {
            Expr::Const(v) => v.to_string(),
            Expr::Read(k) => self.keys[*k].to_string(),
            // `x-11`, not `x+-11`: a negative constant added reads as the subtraction it is.
            Expr::Add(a, b) => match b.as_ref() {
                Expr::Const(v) if *v < 0 => format!("{}-{}", self.expr_text(a), v.unsigned_abs()),
                _ => format!("{}+{}", self.expr_text(a), self.expr_text(b)),
            },
            Expr::IfLess(a, b, yes, no) => format!(
                "({}<{} ? {} : {})",
                self.expr_text(a),
                self.expr_text(b),
                self.expr_text(yes),
                self.expr_text(no)
            ),
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (t, program) in self.programs.iter().enumerate() {
            let mut steps: Vec<String> = program.iter().map(|s| self.stmt_text(s)).collect();
            if self.ending(t) == Ending::Abort {
                steps.push(Ending::Abort.step().to_string());
            }
            writeln!(f, "T{}: {}", t + 1, steps.join("; "))?;
        }
        Ok(())
    }
}

/// Evaluates an expression against what the transaction has seen of each key.
pub fn eval<N: Number>(e: &Expr, seen: &dyn Fn(Key) -> N) -> N {
    match e {
        Expr::Const(v) => N::of(*v),
        Expr::Read(k) => seen(*k),
        Expr::Add(a, b) => eval(a, seen).plus(eval(b, seen)),
        Expr::IfLess(a, b, yes, no) => {
            if eval(a, seen) < eval(b, seen) {
                eval(yes, seen)
            } else {
                eval(no, seen)
            }
        }
    }
}

pub const NAMES: &[&str] = &[
    "write_skew",
    "write_skew_onepage",
    "read_only",
    "lost_update",
    "read_your_writes",
    "reader_window",
];

fn read(k: Key) -> Stmt {
    Stmt::Read(k)
}

fn put(key: Key, value: Expr) -> Stmt {
    Stmt::Write {
        key,
        value,
        only_if: None,
    }
}

fn put_if(key: Key, value: Expr, if_key: Key, equals: Value) -> Stmt {
    Stmt::Write {
        key,
        value,
        only_if: Some((if_key, equals)),
    }
}

fn add(a: Expr, b: Expr) -> Expr {
    Expr::Add(Box::new(a), Box::new(b))
}

pub fn named(name: &str) -> Option<Workload> {
    use Expr::{Const, Read};
    let (alice, bob) = (0, 1);
    let owned = |names: &[&str]| names.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    let skew = |name: &str, pages: Vec<usize>| Workload {
        name: name.to_string(),
        keys: owned(&["alice", "bob"]),
        pages,
        initial: vec![Some(1), Some(1)],
        programs: vec![
            // T1 reads bob and, if 1, takes alice off call; T2 the mirror.
            vec![read(bob), put_if(alice, Const(0), bob, 1)],
            vec![read(alice), put_if(bob, Const(0), alice, 1)],
        ],
        endings: Vec::new(),
    };
    let mut w = match name {
        "write_skew" => skew("write_skew", vec![0, 1]),
        "write_skew_onepage" => skew("write_skew_onepage", vec![0, 0]),
        // Fekete, O'Neil and O'Neil 2004: checking x and savings y. The deposit and the
        // withdrawal write different accounts; the read-only report sees a state no serial
        // order produces.
        "read_only" => {
            let (x, y) = (0, 1);
            let withdraw = Expr::IfLess(
                Box::new(add(Read(x), Read(y))),
                Box::new(Const(10)),
                Box::new(add(Read(x), Const(-11))),
                Box::new(add(Read(x), Const(-10))),
            );
            Workload {
                name: "read_only".into(),
                keys: owned(&["x", "y"]),
                pages: vec![0, 1],
                initial: vec![Some(0), Some(0)],
                programs: vec![
                    vec![read(y), put(y, add(Read(y), Const(20)))],
                    vec![read(x), read(y), put(x, withdraw)],
                    vec![read(x), read(y)],
                ],
                endings: Vec::new(),
            }
        }
        "lost_update" => Workload {
            name: "lost_update".into(),
            keys: owned(&["x"]),
            pages: vec![0],
            initial: vec![Some(0)],
            programs: vec![
                vec![read(0), put(0, add(Read(0), Const(1)))],
                vec![read(0), put(0, add(Read(0), Const(1)))],
            ],
            endings: Vec::new(),
        },
        "read_your_writes" => Workload {
            name: "read_your_writes".into(),
            keys: owned(&["x"]),
            pages: vec![0],
            initial: vec![Some(0)],
            programs: vec![
                vec![put(0, Const(1)), read(0)],
                vec![read(0), put(0, add(Read(0), Const(10)))],
            ],
            endings: Vec::new(),
        },
        // Reaches the reader (buffer-pool) site: T1 reads b and writes a; T3 overwrites b
        // (T1 -rw-> T3) and commits; T2 starts after T3, reads T3's b, then reads the old a while
        // T1 sits between CHECK and END (T2 -rw-> T1): a cycle through T1's commit window.
        "reader_window" => {
            let (a, b) = (0, 1);
            Workload {
                name: "reader_window".into(),
                keys: owned(&["a", "b"]),
                pages: vec![0, 1],
                initial: vec![Some(0), Some(0)],
                programs: vec![
                    vec![read(b), put(a, Const(1))],
                    vec![read(b), read(a)],
                    vec![put(b, Const(1))],
                ],
                endings: Vec::new(),
            }
        }
        _ => return None,
    };
    // Every built-in transaction commits.
    w.endings = vec![Ending::Commit; w.programs.len()];
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A negative constant added is echoed as a subtraction (`x-11`), a positive one as an
    /// addition (`x+2`).
    #[test]
    fn adding_a_negative_constant_reads_as_a_subtraction() {
        let w = Workload {
            name: "w".into(),
            keys: vec!["x".into()],
            pages: vec![0],
            initial: vec![Some(0)],
            programs: vec![],
            endings: vec![],
        };
        let put = |c: Value| Stmt::Write {
            key: 0,
            value: Expr::Add(Box::new(Expr::Read(0)), Box::new(Expr::Const(c))),
            only_if: None,
        };
        assert_eq!(w.stmt_text(&put(-11)), "put x=x-11");
        assert_eq!(w.stmt_text(&put(2)), "put x=x+2");
        assert_eq!(w.stmt_text(&put(-128)), "put x=x-128");
    }
}
