//! The oracle of the typed values models show (`Shown`): a variable's text read back into JSON
//! the way the CLI read every value before the models typed their own. A model variable's
//! value, as the models print it (`[{present: true, offset: 1}]`,
//! `<1:k1/persist, 2:k1/persist>`, `{1,2}`, `7`, `false`), read back into JSON for machines:
//! integers as numbers, `true`/`false` as booleans, records (`{name: value, …}`) as objects,
//! sequences (`<…>`), lists (`[…]`) and sets (`{…}`) as arrays, anything else as the text it
//! is (`Absent`, `1:k1/persist`). Nothing is lost: a text that is none of these stays a string.

use serde_json::{Map, Number, Value};

/// The JSON value of a variable's printed value.
pub fn typed(text: &str) -> Value {
    let text = text.trim();
    if let Ok(n) = text.parse::<i64>() {
        return Value::Number(Number::from(n));
    }
    match text {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    let bracketed = |open: char, close: char| {
        text.strip_prefix(open)
            .and_then(|t| t.strip_suffix(close))
            .filter(|inner| balanced(inner))
    };
    if let Some(inner) = bracketed('[', ']').or_else(|| bracketed('<', '>')) {
        return Value::Array(items(inner).into_iter().map(typed).collect());
    }
    if let Some(inner) = bracketed('{', '}') {
        let items = items(inner);
        let fields: Option<Vec<(&str, &str)>> = items.iter().map(|item| field(item)).collect();
        return match fields {
            Some(fields) if !fields.is_empty() => Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), typed(v)))
                    .collect::<Map<String, Value>>(),
            ),
            _ => Value::Array(items.into_iter().map(typed).collect()),
        };
    }
    Value::String(text.to_string())
}

/// `name: value` with `name` an identifier; `None` for anything else (`1:k1/persist`).
fn field(item: &str) -> Option<(&str, &str)> {
    let (name, value) = item.split_once(": ")?;
    let name = name.trim();
    let identifier = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    identifier.then_some((name, value))
}

fn opens(c: char) -> bool {
    matches!(c, '[' | '{' | '<' | '(')
}

fn closes(c: char) -> bool {
    matches!(c, ']' | '}' | '>' | ')')
}

/// Whether every bracket of `text` closes inside it (so `[a] [b]` is not one list).
fn balanced(text: &str) -> bool {
    let mut depth = 0i32;
    for c in text.chars() {
        if opens(c) {
            depth += 1;
        } else if closes(c) {
            depth -= 1;
            if depth < 0 {
                return false;
            }
        }
    }
    depth == 0
}

/// The comma-separated items of a bracket's inside, commas of nested brackets kept.
fn items(inner: &str) -> Vec<&str> {
    if inner.trim().is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in inner.char_indices() {
        if opens(c) {
            depth += 1;
        } else if closes(c) {
            depth -= 1;
        } else if c == ',' && depth == 0 {
            out.push(inner[start..i].trim());
            start = i + 1;
        }
    }
    out.push(inner[start..].trim());
    out
}

mod tests {
    use super::typed;
    use serde_json::json;

    #[test]
    fn scalars_lists_records_sets_and_sequences_are_typed() {
        assert_eq!(typed("7"), json!(7));
        assert_eq!(typed("-3"), json!(-3));
        assert_eq!(typed("false"), json!(false));
        assert_eq!(typed("Absent"), json!("Absent"));
        assert_eq!(typed("{}"), json!([]));
        assert_eq!(typed("{1,2}"), json!([1, 2]));
        assert_eq!(
            typed("[{present: true, offset: 1, value: {1}}]"),
            json!([{"present": true, "offset": 1, "value": [1]}])
        );
        assert_eq!(
            typed("<1:k1/persist, 2:k1/persist>"),
            json!(["1:k1/persist", "2:k1/persist"])
        );
    }

    /// A text that only looks bracketed stays the text it is.
    #[test]
    fn what_is_not_a_value_stays_text() {
        assert_eq!(typed("[a] [b]"), json!("[a] [b]"));
        assert_eq!(typed("<x"), json!("<x"));
        assert_eq!(typed("T1 -> T2"), json!("T1 -> T2"));
    }
}
