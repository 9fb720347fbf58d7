//! A variable's value as a model shows it: the text people read in a counterexample
//! (`{1,2}`, `Snap(1, {1})`, `<persist, delete>`) and the typed value machines read in JSON
//! (`[1, 2]`, `"Snap(1, {1})"`, `["persist", "delete"]`), both made by the model from its
//! state. Nothing reads the text back: a number is a number because the model said so.

use std::fmt;

use serde::Serialize;

/// One variable's value: its text and its typed value.
///
/// ```
/// use loadbearing_refinement::Shown;
/// use serde_json::json;
///
/// // Numbers and booleans are themselves; a collection is built from its items.
/// let held = Shown::list([Shown::from(3u8), Shown::name("none")]);
/// assert_eq!(held.text(), "[3, none]");
/// assert_eq!(held.typed(), &json!([3, "none"]));
/// assert_eq!(Shown::set([1u8, 2]).text(), "{1,2}");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Shown {
    text: String,
    typed: serde_json::Value,
}

impl Shown {
    /// A value shown as `text` and typed as `typed`'s JSON (a number, a list, a record).
    pub fn new(text: impl Into<String>, typed: impl Serialize) -> Shown {
        Shown {
            text: text.into(),
            typed: serde_json::to_value(typed).expect("a shown value is plain data"),
        }
    }

    /// A value that is a name or a phrase (`Absent`, `Snap(1, {1})`, `idle, 0 writes`):
    /// machines read the text as a string.
    pub fn name(text: impl fmt::Display) -> Shown {
        let text = text.to_string();
        Shown {
            typed: serde_json::Value::String(text.clone()),
            text,
        }
    }

    /// A sequence, set or list of values: the items between `open` and `close`, joined by
    /// `separator` for people (`<1, 2>`, `{1,2}`, `[w1:done, w2:todo]`), an array for machines.
    pub fn items<I: Into<Shown>>(
        open: &str,
        separator: &str,
        close: &str,
        items: impl IntoIterator<Item = I>,
    ) -> Shown {
        let items: Vec<Shown> = items.into_iter().map(Into::into).collect();
        let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
        Shown {
            text: format!("{open}{}{close}", texts.join(separator)),
            typed: serde_json::Value::Array(items.into_iter().map(|i| i.typed).collect()),
        }
    }

    /// A TLA+ sequence `<a, b>`.
    pub fn sequence<I: Into<Shown>>(items: impl IntoIterator<Item = I>) -> Shown {
        Shown::items("<", ", ", ">", items)
    }

    /// A TLA+ set `{a,b}`.
    pub fn set<I: Into<Shown>>(items: impl IntoIterator<Item = I>) -> Shown {
        Shown::items("{", ",", "}", items)
    }

    /// A TLA+ tuple as TLC prints it, `<<a, b>>`; machines read it as a list in a list
    /// (`[[a, b]]`), as they always have.
    pub fn tuple<I: Into<Shown>>(items: impl IntoIterator<Item = I>) -> Shown {
        Shown::items("<", "", ">", [Shown::sequence(items)])
    }

    /// A list `[a, b]` (a function over writers or keys).
    pub fn list<I: Into<Shown>>(items: impl IntoIterator<Item = I>) -> Shown {
        Shown::items("[", ", ", "]", items)
    }

    /// A record `{name: value, …}`: an object for machines.
    pub fn record<'a>(fields: impl IntoIterator<Item = (&'a str, Shown)>) -> Shown {
        let fields: Vec<(&str, Shown)> = fields.into_iter().collect();
        let texts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        Shown {
            text: format!("{{{}}}", texts.join(", ")),
            typed: serde_json::Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.typed))
                    .collect(),
            ),
        }
    }

    /// What people read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What machines read.
    pub fn typed(&self) -> &serde_json::Value {
        &self.typed
    }

    /// The text, for a caller that keeps only what people read.
    pub fn into_text(self) -> String {
        self.text
    }
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Machines read the typed value.
impl Serialize for Shown {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.typed.serialize(serializer)
    }
}

macro_rules! shown_as_itself {
    ($($t:ty),*) => {$(
        impl From<$t> for Shown {
            fn from(v: $t) -> Shown {
                Shown::new(v.to_string(), v)
            }
        }
        impl From<&$t> for Shown {
            fn from(v: &$t) -> Shown {
                Shown::from(*v)
            }
        }
    )*};
}

shown_as_itself!(bool, u8, u16, u32, u64, usize, i8, i16, i32, i64);

#[cfg(test)]
mod tests {
    use super::Shown;
    use serde_json::json;

    #[test]
    fn numbers_and_booleans_are_typed_and_names_are_text() {
        assert_eq!(Shown::from(7u8).typed(), &json!(7));
        assert_eq!(Shown::from(-3i64).text(), "-3");
        assert_eq!(Shown::from(false).typed(), &json!(false));
        assert_eq!(Shown::name("Absent").typed(), &json!("Absent"));
    }

    #[test]
    fn collections_join_their_items_for_people_and_list_them_for_machines() {
        let set = Shown::set([1u8, 2]);
        assert_eq!((set.text(), set.typed()), ("{1,2}", &json!([1, 2])));
        let seq = Shown::sequence([Shown::name("persist"), Shown::name("delete")]);
        assert_eq!(seq.text(), "<persist, delete>");
        assert_eq!(seq.typed(), &json!(["persist", "delete"]));
        let row = Shown::record([("present", true.into()), ("offset", 1u8.into())]);
        assert_eq!(row.text(), "{present: true, offset: 1}");
        assert_eq!(row.typed(), &json!({"present": true, "offset": 1}));
        let empty = Shown::list(Vec::<u8>::new());
        assert_eq!((empty.text(), empty.typed()), ("[]", &json!([])));
    }
}
