//! The step mini-language of workload files: the text [`Workload::stmt_text`] prints, parsed
//! back. `read bob`, `put alice=0 if bob=1`, `put x=x+1`, `put x=(x+y<10 ? x+-11 : x+-10)`;
//! `x-11` is sugar for `x+-11` (the model has no subtraction of a key).
//!
//! [`Workload::stmt_text`]: super::workload::Workload::stmt_text

use super::workload::{Expr, Key, Stmt};

/// Why a step does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error("a step starts with `read` or `put`")]
    NoVerb,
    #[error("`{0}` is not a key of [keys]")]
    UnknownKey(String),
    #[error("expected {expected}, found {found}")]
    Expected {
        expected: &'static str,
        found: String,
    },
    #[error("{0} is outside the values the model holds (-128..=127)")]
    OutOfRange(i64),
    #[error("only a number can be subtracted (`x-1`); the model cannot negate a key")]
    SubtractedKey,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Name(String),
    Number(i64),
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

const SYMBOLS: &str = "=+-()<?:";

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
            // Saturate: any number this long is out of range, and says so below.
            out.push(Token::Number(digits.parse().unwrap_or(i64::MAX)));
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
                expected: "a key, a number or one of = + - ( ) < ? :",
                found: format!("`{c}`"),
            });
        }
    }
    Ok(out)
}

/// A key name as workload files allow it: the tokenizer's names.
pub fn is_key_name(name: &str) -> bool {
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

    fn value(n: i64) -> Result<i8, StepError> {
        i8::try_from(n).map_err(|_| StepError::OutOfRange(n))
    }

    /// A number, with an optional leading `-`.
    fn number(&mut self) -> Result<i8, StepError> {
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

    fn stmt(&mut self) -> Result<Stmt, StepError> {
        let verb = match self.next() {
            Some(Token::Name(verb)) if verb == "read" || verb == "put" => verb,
            _ => return Err(StepError::NoVerb),
        };
        let stmt = if verb == "read" {
            Stmt::Read(self.key()?)
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
        assert_eq!(parse("put x=200", &k), Err(StepError::OutOfRange(200)));
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
}
