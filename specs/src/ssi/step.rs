//! The step mini-language of workload files: the text [`Workload::stmt_text`] prints, parsed
//! back. `read bob`, `put alice=0 if bob=1`, `put x=x+1`, `put x=(x+y<10 ? x+-11 : x+-10)`;
//! `x-11` is sugar for `x+-11` (the model has no subtraction of a key). For engines (the model
//! has neither): predicate reads, `read where value % 3 = 0`, `read where value > 5` (`=`,
//! `<>`, `<`, `<=`, `>`, `>=`), `read all`; `insert z=30`, a row that must be absent; and
//! single statements that read and write: `update x = x + 10`, `update x = 12`,
//! `update where value = 10 set value = 12`, `update all set value = value + 10`, `delete x`,
//! `delete where value = 20`, `delete all`.
//!
//! [`Workload::stmt_text`]: super::workload::Workload::stmt_text

use super::workload::{Cmp, Expr, Key, Pred, Set, Stmt, Target, Value};

/// Why a step does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error("a step starts with `read`, `put`, `insert`, `update` or `delete`")]
    NoVerb,
    #[error("`update {key} = …` sets `{key}` from itself: `{key} + N`, `{key} - N`, or a number")]
    UpdateFromOther { key: String },
    #[error("a predicate is over `value`: `read where value % 3 = 0`, `read where value > 5`")]
    NotValue,
    #[error("`% {0}`: the modulus of a predicate is a positive number")]
    BadModulus(Value),
    #[error("`{0}` is not a key of [keys]")]
    UnknownKey(String),
    #[error("expected {expected}, found {found}")]
    Expected {
        expected: &'static str,
        found: String,
    },
    #[error("{0} is beyond a 64-bit value ({min}..={max})", min = i64::MIN, max = i64::MAX)]
    OutOfRange(String),
    #[error("only a number can be subtracted (`x-1`); the model cannot negate a key")]
    SubtractedKey,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Name(String),
    /// Digits as written, wider than any value so that `-9223372036854775808` reads and a
    /// number too long says so rather than being clamped.
    Number(i128),
    Symbol(char),
}

impl Token {
    fn text(token: Option<&Token>) -> String {
        match token {
            None => "the end of the step".into(),
            Some(Token::Name(n)) => format!("`{n}`"),
            Some(Token::Number(n)) => format!("`{n}`"),
            Some(Token::Symbol(c)) => format!("`{c}`"),
        }
    }
}

const SYMBOLS: &str = "=+-()<>?:%";

fn tokens(text: &str) -> Result<Vec<Token>, StepError> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_digit() {
            let mut digits = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                digits.push(d);
                chars.next();
            }
            let n = digits
                .parse()
                .map_err(|_| StepError::OutOfRange(digits.clone()))?;
            out.push(Token::Number(n));
        } else if c.is_alphabetic() || c == '_' {
            let mut name = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_alphanumeric() || **d == '_') {
                name.push(d);
                chars.next();
            }
            out.push(Token::Name(name));
        } else if SYMBOLS.contains(c) {
            out.push(Token::Symbol(c));
            chars.next();
        } else {
            return Err(StepError::Expected {
                expected: "a key, a number or one of = + - ( ) < > ? : %",
                found: format!("`{c}`"),
            });
        }
    }
    Ok(out)
}

/// Words the steps give a meaning of their own (`read all`, `read where value …`): no key is
/// named so.
pub const RESERVED: [&str; 3] = ["all", "where", "value"];

/// A key name as workload files allow it: the tokenizer's names, none of [`RESERVED`].
pub fn is_key_name(name: &str) -> bool {
    if RESERVED.contains(&name) {
        return false;
    }
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

struct Parser<'k> {
    tokens: Vec<Token>,
    at: usize,
    keys: &'k [String],
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn expected(&self, expected: &'static str) -> StepError {
        StepError::Expected {
            expected,
            found: Token::text(self.peek()),
        }
    }

    fn symbol(&mut self, c: char, expected: &'static str) -> Result<(), StepError> {
        if self.peek() == Some(&Token::Symbol(c)) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.expected(expected))
        }
    }

    fn key(&mut self) -> Result<Key, StepError> {
        match self.peek() {
            Some(Token::Name(name)) => {
                let name = name.clone();
                self.at += 1;
                self.keys
                    .iter()
                    .position(|k| *k == name)
                    .ok_or(StepError::UnknownKey(name))
            }
            _ => Err(self.expected("a key")),
        }
    }

    fn value(n: i128) -> Result<Value, StepError> {
        Value::try_from(n).map_err(|_| StepError::OutOfRange(n.to_string()))
    }

    /// A number, with an optional leading `-`.
    fn number(&mut self) -> Result<Value, StepError> {
        let negative = self.peek() == Some(&Token::Symbol('-'));
        if negative {
            self.at += 1;
        }
        match self.peek() {
            Some(&Token::Number(n)) => {
                self.at += 1;
                Self::value(if negative { -n } else { n })
            }
            _ => Err(self.expected("a number")),
        }
    }

    fn term(&mut self) -> Result<Expr, StepError> {
        match self.peek() {
            Some(Token::Name(_)) => self.key().map(Expr::Read),
            Some(Token::Number(_) | Token::Symbol('-')) => self.number().map(Expr::Const),
            Some(Token::Symbol('(')) => {
                self.at += 1;
                let inner = self.expr()?;
                if self.peek() == Some(&Token::Symbol(')')) {
                    self.at += 1;
                    return Ok(inner);
                }
                self.symbol('<', "`<` or `)`")?;
                let right = self.expr()?;
                self.symbol('?', "`?`")?;
                let yes = self.expr()?;
                self.symbol(':', "`:`")?;
                let no = self.expr()?;
                self.symbol(')', "`)`")?;
                Ok(Expr::IfLess(
                    Box::new(inner),
                    Box::new(right),
                    Box::new(yes),
                    Box::new(no),
                ))
            }
            _ => Err(self.expected("a key, a number or `(`")),
        }
    }

    fn expr(&mut self) -> Result<Expr, StepError> {
        let mut e = self.term()?;
        loop {
            let next = match self.peek() {
                Some(Token::Symbol('+')) => {
                    self.at += 1;
                    self.term()?
                }
                Some(Token::Symbol('-')) => {
                    self.at += 1;
                    match self.peek() {
                        Some(&Token::Number(n)) => {
                            self.at += 1;
                            Expr::Const(Self::value(-n)?)
                        }
                        _ => return Err(StepError::SubtractedKey),
                    }
                }
                _ => return Ok(e),
            };
            e = Expr::Add(Box::new(e), Box::new(next));
        }
    }

    /// Whether the next token is the word `word` (taken if so).
    fn word(&mut self, word: &str) -> bool {
        let found = matches!(self.peek(), Some(Token::Name(w)) if w == word);
        if found {
            self.at += 1;
        }
        found
    }

    /// A comparison: `=`, `<>`, `<`, `<=`, `>`, `>=`.
    fn comparison(&mut self) -> Result<Cmp, StepError> {
        let first = match self.peek() {
            Some(&Token::Symbol(c)) if "=<>".contains(c) => c,
            _ => return Err(self.expected("a comparison: = <> < <= > >=")),
        };
        self.at += 1;
        let second = match self.peek() {
            Some(&Token::Symbol(c)) if first != '=' && (c == '=' || (first == '<' && c == '>')) => {
                self.at += 1;
                Some(c)
            }
            _ => None,
        };
        Ok(match (first, second) {
            ('=', _) => Cmp::Eq,
            ('<', Some('>')) => Cmp::Ne,
            ('<', Some(_)) => Cmp::Le,
            ('<', None) => Cmp::Lt,
            (_, Some(_)) => Cmp::Ge,
            _ => Cmp::Gt,
        })
    }

    /// After `read`: `all`, or `where value …`.
    fn predicate(&mut self) -> Result<Pred, StepError> {
        if self.word("all") {
            return Ok(Pred::All);
        }
        self.at += 1; // `where`, seen by the caller
        if !self.word("value") {
            return Err(StepError::NotValue);
        }
        if self.peek() == Some(&Token::Symbol('%')) {
            self.at += 1;
            let modulus = match self.peek() {
                Some(&Token::Number(n)) => n,
                _ => return Err(self.expected("a number after `%`")),
            };
            self.at += 1;
            let modulus = Self::value(modulus)?;
            if modulus == 0 {
                return Err(StepError::BadModulus(modulus));
            }
            self.symbol('=', "`=` after the modulus")?;
            let remainder = self.number()?;
            return Ok(Pred::Mod { modulus, remainder });
        }
        let cmp = self.comparison()?;
        Ok(Pred::Compare(cmp, self.number()?))
    }

    /// `N`, or `<name> + N` / `<name> - N` where `name` is the row's own value.
    fn set(&mut self, name: &str) -> Result<Set, StepError> {
        if !self.word(name) {
            return self.number().map(Set::To);
        }
        let negative = match self.peek() {
            Some(Token::Symbol('+')) => false,
            Some(Token::Symbol('-')) => true,
            _ => return Err(self.expected("`+` or `-`")),
        };
        self.at += 1;
        let n = match self.peek() {
            Some(&Token::Number(n)) => n,
            _ => return Err(self.expected("a number")),
        };
        self.at += 1;
        Self::value(if negative { -n } else { n }).map(Set::Add)
    }

    /// After `update` or `delete`: a key, `all`, or `where value …`.
    fn target(&mut self) -> Result<Target, StepError> {
        match self.peek() {
            Some(Token::Name(w)) if RESERVED[..2].contains(&w.as_str()) => {
                self.predicate().map(Target::Where)
            }
            _ => self.key().map(Target::Key),
        }
    }

    fn stmt(&mut self) -> Result<Stmt, StepError> {
        const VERBS: [&str; 5] = ["read", "put", "insert", "update", "delete"];
        let verb = match self.next() {
            Some(Token::Name(verb)) if VERBS.contains(&verb.as_str()) => verb,
            _ => return Err(StepError::NoVerb),
        };
        let where_or_all =
            matches!(self.peek(), Some(Token::Name(w)) if RESERVED[..2].contains(&w.as_str()));
        let stmt = if verb == "delete" {
            Stmt::Delete(self.target()?)
        } else if verb == "update" {
            let target = self.target()?;
            let set = match target {
                Target::Key(k) => {
                    self.symbol('=', "`=` after the key")?;
                    let name = self.keys[k].clone();
                    match self.peek() {
                        Some(Token::Name(other)) if *other != name => {
                            return Err(StepError::UpdateFromOther { key: name })
                        }
                        _ => self.set(&name)?,
                    }
                }
                Target::Where(_) => {
                    if !self.word("set") || !self.word("value") {
                        return Err(self.expected("`set value = …`"));
                    }
                    self.symbol('=', "`=` after `set value`")?;
                    self.set("value")?
                }
            };
            Stmt::Update { target, set }
        } else if verb == "read" && where_or_all {
            Stmt::Select(self.predicate()?)
        } else if verb == "read" {
            Stmt::Read(self.key()?)
        } else if verb == "insert" {
            let key = self.key()?;
            self.symbol('=', "`=` after the key")?;
            Stmt::Insert {
                key,
                value: self.number()?,
            }
        } else {
            let key = self.key()?;
            self.symbol('=', "`=` after the key")?;
            let value = self.expr()?;
            let only_if = match self.peek() {
                Some(Token::Name(word)) if word == "if" => {
                    self.at += 1;
                    let guard = self.key()?;
                    self.symbol('=', "`=` in the condition")?;
                    Some((guard, self.number()?))
                }
                _ => None,
            };
            Stmt::Write {
                key,
                value,
                only_if,
            }
        };
        match self.peek() {
            None => Ok(stmt),
            Some(_) => Err(self.expected("the end of the step")),
        }
    }
}

/// Parses one step against the workload's key names.
pub fn parse(text: &str, keys: &[String]) -> Result<Stmt, StepError> {
    Parser {
        tokens: tokens(text)?,
        at: 0,
        keys,
    }
    .stmt()
}

/// The keys a step uses the value of (a write's expression and its condition).
pub fn uses(stmt: &Stmt) -> Vec<Key> {
    fn walk(e: &Expr, out: &mut Vec<Key>) {
        match e {
            Expr::Const(_) => {}
            Expr::Read(k) => out.push(*k),
            Expr::Add(a, b) => {
                walk(a, out);
                walk(b, out);
            }
            Expr::IfLess(a, b, yes, no) => {
                for e in [a, b, yes, no] {
                    walk(e, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    if let Stmt::Write { value, only_if, .. } = stmt {
        walk(value, &mut out);
        out.extend(only_if.map(|(k, _)| k));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Vec<String> {
        ["x", "y"].iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn the_sugar_and_the_printed_form_parse_alike() {
        let k = keys();
        assert_eq!(parse("put x=x-11", &k), parse("put x=x+-11", &k));
        assert_eq!(
            parse("put x = ( x + y < 10 ? x-11 : x+-10 )", &k).unwrap(),
            parse("put x=(x+y<10 ? x+-11 : x+-10)", &k).unwrap()
        );
        assert_eq!(
            parse("put y=(y)+1 if x=-3", &k).unwrap(),
            Stmt::Write {
                key: 1,
                value: Expr::Add(Box::new(Expr::Read(1)), Box::new(Expr::Const(1))),
                only_if: Some((0, -3)),
            }
        );
    }

    #[test]
    fn bad_steps_say_what_is_wrong() {
        let k = keys();
        assert_eq!(parse("read z", &k), Err(StepError::UnknownKey("z".into())));
        assert_eq!(parse("get x", &k), Err(StepError::NoVerb));
        // Any 64-bit value reads (the model's bounds are the workload's to check); a number
        // beyond 64 bits is an error, never clamped.
        assert!(parse("put x=200", &k).is_ok());
        assert!(parse("put x=-9223372036854775808", &k).is_ok());
        assert_eq!(
            parse("put x=9223372036854775808", &k),
            Err(StepError::OutOfRange("9223372036854775808".into()))
        );
        assert_eq!(
            parse("put x=99999999999999999999999999999999999999999", &k),
            Err(StepError::OutOfRange(
                "99999999999999999999999999999999999999999".into()
            ))
        );
        assert_eq!(parse("put x=x-y", &k), Err(StepError::SubtractedKey));
        assert!(matches!(
            parse("put x=1 y", &k),
            Err(StepError::Expected { .. })
        ));
        assert!(matches!(
            parse("put x=(x<1 ? 2)", &k),
            Err(StepError::Expected { .. })
        ));
        assert!(parse("put x=-128", &k).is_ok());
    }

    /// Predicate reads and inserts parse to what the workload prints back, every comparison
    /// and the modulus among them.
    #[test]
    fn predicates_and_inserts_read_back_as_printed() {
        let k = keys();
        let w = crate::ssi::workload::Workload {
            name: "w".into(),
            keys: k.clone(),
            pages: vec![0, 1],
            initial: vec![Some(1), None],
            programs: vec![],
            endings: vec![],
        };
        for text in [
            "read all",
            "read where value % 3 = 0",
            "read where value % 5 = -1",
            "read where value = 30",
            "read where value <> 30",
            "read where value < -2",
            "read where value <= 2",
            "read where value > 5",
            "read where value >= 5",
            "insert y=30",
        ] {
            let stmt = parse(text, &k).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(w.stmt_text(&stmt), text);
        }
        assert_eq!(
            parse("read where value%3=0", &k).unwrap(),
            Stmt::Select(Pred::Mod {
                modulus: 3,
                remainder: 0
            })
        );
        assert_eq!(
            parse("read where value >= 5", &k).unwrap(),
            Stmt::Select(Pred::Compare(Cmp::Ge, 5))
        );
    }

    #[test]
    fn a_bad_predicate_says_what_is_wrong() {
        let k = keys();
        assert_eq!(parse("read where x = 1", &k), Err(StepError::NotValue));
        assert_eq!(
            parse("read where value % 0 = 0", &k),
            Err(StepError::BadModulus(0))
        );
        assert!(matches!(
            parse("read where value ~ 1", &k),
            Err(StepError::Expected { .. })
        ));
        assert!(matches!(
            parse("read where value % 3", &k),
            Err(StepError::Expected { .. })
        ));
        assert!(matches!(
            parse("read where value = 1 and", &k),
            Err(StepError::Expected { .. })
        ));
        assert!(parse("insert x=300", &k).is_ok());
        assert!(!is_key_name("all") && !is_key_name("where") && !is_key_name("value"));
    }

    /// Updates and deletes, by key or by predicate, read back as printed.
    #[test]
    fn updates_and_deletes_read_back_as_printed() {
        let k = keys();
        let w = crate::ssi::workload::Workload {
            name: "w".into(),
            keys: k.clone(),
            pages: vec![0, 1],
            initial: vec![Some(1), Some(2)],
            programs: vec![],
            endings: vec![],
        };
        for text in [
            "update x = x + 10",
            "update x = x - 3",
            "update y = 12",
            "update where value = 10 set value = 12",
            "update all set value = value + 10",
            "update where value % 2 = 0 set value = value - 1",
            "delete x",
            "delete where value = 20",
            "delete all",
        ] {
            let stmt = parse(text, &k).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(w.stmt_text(&stmt), text);
        }
        assert_eq!(
            parse("update x = x+10", &k).unwrap(),
            Stmt::Update {
                target: Target::Key(0),
                set: Set::Add(10)
            }
        );
        assert_eq!(
            parse("update x = y + 1", &k),
            Err(StepError::UpdateFromOther { key: "x".into() })
        );
        assert!(matches!(
            parse("update where value = 1 value = 2", &k),
            Err(StepError::Expected { .. })
        ));
        assert_eq!(
            parse("delete z", &k),
            Err(StepError::UnknownKey("z".into()))
        );
    }
}
