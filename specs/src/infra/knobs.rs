//! A model's constants (TLA+ CONSTANTS, our "knobs"): declared with their ranges, validated on
//! load, so a typo or an out-of-range value is an error rather than a silently different model.
//!
//! Each model declares its knobs once, as typed constants ([`Nat`], [`Flag`], [`Choice`]); its
//! [`Params`] lists them for the command line and the suite file, reads them back with
//! [`Resolved::get`] (a flag reads as `bool`, a number as the integer type its declaration
//! names, a choice as its own enum), and its guards ([`crate::Guard`]) name the same constants,
//! so a misspelt knob does not compile.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Nat(u64),
    /// One of a knob's named choices (a workload, a predicate).
    Name(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Nat(n) => write!(f, "{n}"),
            Value::Name(name) => write!(f, "{name}"),
        }
    }
}

impl Value {
    /// Reads a value as written on the command line (`--set Guarded=false`, `--set N=6`,
    /// `--set Workload=write_skew`).
    pub fn parse(text: &str) -> Option<Value> {
        match text {
            "" => None,
            "true" | "TRUE" => Some(Value::Bool(true)),
            "false" | "FALSE" => Some(Value::Bool(false)),
            _ => Some(
                text.parse()
                    .map(Value::Nat)
                    .unwrap_or_else(|_| Value::Name(text.to_string())),
            ),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Nat {
        min: u64,
        max: u64,
        default: u64,
    },
    Bool {
        default: bool,
    },
    /// A flag whose default is another flag's value: the two agree unless a config decouples
    /// them (the model declares the followed flag before this one).
    Follows {
        flag: &'static str,
    },
    Choice {
        choices: &'static [&'static str],
        default: &'static str,
    },
}

/// One constant of a model as the command line, the suite file and the docs see it: its name as
/// the spec writes it, its range, and its default. Made only from a typed declaration
/// ([`Nat::knob`], [`Flag::knob`], [`Choice::knob`]).
#[derive(Clone, Copy, Debug)]
pub struct Knob {
    pub name: &'static str,
    pub kind: Kind,
    pub meaning: &'static str,
    /// Why a number knob's range ends at its maximum: mostly the model's representation (`the
    /// log is a 32-bit set of offsets`); `None` for a range simply chosen for the suite, and for
    /// the other kinds.
    pub limit: Option<&'static str>,
}

impl Knob {
    /// The value a knob takes when a config leaves it out, given the knobs resolved before it.
    fn default_value(&self, earlier: &Constants) -> Result<Value, KnobError> {
        Ok(match self.kind {
            Kind::Nat { default, .. } => Value::Nat(default),
            Kind::Bool { default } => Value::Bool(default),
            Kind::Follows { flag } => earlier
                .get(flag)
                .cloned()
                .ok_or(KnobError::Undeclared { name: flag })?,
            Kind::Choice { default, .. } => Value::Name(default.to_string()),
        })
    }
}

/// The integer type a number knob reads as: `u8` unless the model's state holds wider numbers.
pub trait Width: Copy + TryFrom<u64> + 'static {
    /// The largest value the type holds, which bounds the knob's range.
    const MAX: u64;
}

impl Width for u8 {
    const MAX: u64 = u8::MAX as u64;
}

impl Width for u16 {
    const MAX: u64 = u16::MAX as u64;
}

impl Width for u32 {
    const MAX: u64 = u32::MAX as u64;
}

/// A number knob, read as `T`. Models keep their numbers in their state (they size arrays,
/// bitsets and counters), so a knob reads as the type the state holds it in, and a range that
/// does not fit that type does not compile. Where the range ends because of the representation,
/// [`Nat::max_because`] says why, and so does the error for a value above it.
pub struct Nat<T = u8> {
    knob: Knob,
    width: PhantomData<fn() -> T>,
}

// Derived impls would require `T: Clone`; a number knob is a declaration, whatever `T` is.
impl<T> Clone for Nat<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Nat<T> {}

impl<T> fmt::Debug for Nat<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Nat").field(&self.knob).finish()
    }
}

impl<T: Width> Nat<T> {
    /// A knob whose range `min..=max` is chosen for the suite: the model would run past `max`.
    pub const fn new(
        name: &'static str,
        min: u64,
        max: u64,
        default: u64,
        meaning: &'static str,
    ) -> Self {
        assert!(
            min <= default && default <= max,
            "a number knob's default lies in its range"
        );
        assert!(
            max <= T::MAX,
            "a number knob's range fits the type it reads as"
        );
        Nat {
            knob: Knob {
                name,
                kind: Kind::Nat { min, max, default },
                meaning,
                limit: None,
            },
            width: PhantomData,
        }
    }

    /// The same knob, its maximum set for the reason `why`, mostly the model's representation
    /// (`"the log is a 32-bit set of offsets"`), which a value above it is told.
    pub const fn max_because(self, why: &'static str) -> Self {
        Nat {
            knob: Knob {
                limit: Some(why),
                ..self.knob
            },
            width: PhantomData,
        }
    }
}

/// A switch, usually a guard of the design or a fault the environment may inject.
#[derive(Clone, Copy, Debug)]
pub struct Flag(Knob);

impl Flag {
    pub const fn new(name: &'static str, default: bool, meaning: &'static str) -> Flag {
        Flag(Knob {
            name,
            kind: Kind::Bool { default },
            meaning,
            limit: None,
        })
    }

    /// A flag that takes `leader`'s value unless set: a second reading of one design choice
    /// that only a config testing the check itself sets apart.
    pub const fn following(name: &'static str, leader: Flag, meaning: &'static str) -> Flag {
        Flag(Knob {
            name,
            kind: Kind::Follows {
                flag: leader.0.name,
            },
            meaning,
            limit: None,
        })
    }
}

/// The values of a choice knob: every name a config may write, and what each one means.
pub trait Choices: Sized + 'static {
    /// The names, in the order errors and docs list them.
    const NAMES: &'static [&'static str];
    /// The value one of [`Self::NAMES`] stands for (`None` for any other name).
    fn named(name: &str) -> Option<Self>;
}

/// A knob whose value is one of the names of `C` (a workload, a predicate, a network).
pub struct Choice<C> {
    knob: Knob,
    values: PhantomData<fn() -> C>,
}

// Derived impls would require `C: Clone`; a choice knob is a declaration, whatever `C` is.
impl<C> Clone for Choice<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Choice<C> {}

impl<C> fmt::Debug for Choice<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Choice").field(&self.knob).finish()
    }
}

impl<C: Choices> Choice<C> {
    pub const fn new(name: &'static str, default: &'static str, meaning: &'static str) -> Self {
        assert!(
            is_one_of(default, C::NAMES),
            "a choice knob's default is one of its choices"
        );
        Choice {
            knob: Knob {
                name,
                kind: Kind::Choice {
                    choices: C::NAMES,
                    default,
                },
                meaning,
                limit: None,
            },
            values: PhantomData,
        }
    }

    /// Whether `name` is one of this knob's choices (usable in constants, for guards).
    pub const fn offers(&self, name: &str) -> bool {
        is_one_of(name, C::NAMES)
    }
}

/// A typed knob declaration: its untyped face, and how it reads a validated value.
pub trait Typed: Copy {
    /// What the model reads: a number's [`Width`], `bool`, or the choice's own type.
    type Value;
    fn knob(self) -> Knob;
    /// `None` when `value` is not of this declaration's kind (or a choice names nothing).
    fn read(self, value: &Value) -> Option<Self::Value>;
}

impl<T> Nat<T> {
    pub const fn knob(self) -> Knob {
        self.knob
    }

    /// A trace's `value` (of event `event`, `what` it is) past `has`, this knob's value in the
    /// model judging it: the bound it passes, and the least value of the knob that holds it
    /// (none past the knob's own maximum). `None` when the value is within.
    pub fn passed_by(
        self,
        has: u64,
        value: u64,
        event: usize,
        what: impl FnOnce() -> String,
    ) -> Option<loadbearing_trace::Beyond> {
        if value <= has {
            return None;
        }
        let max = match self.knob.kind {
            Kind::Nat { max, .. } => max,
            _ => unreachable!("a number knob is a Nat"),
        };
        Some(loadbearing_trace::Beyond {
            event,
            what: what(),
            bound: loadbearing_trace::Bound::Knob {
                name: self.knob.name,
                value: has,
                needs: (value <= max).then_some(value),
            },
        })
    }
}

impl Flag {
    pub const fn knob(self) -> Knob {
        self.0
    }
}

impl<C> Choice<C> {
    pub const fn knob(self) -> Knob {
        self.knob
    }
}

impl<T: Width> Typed for Nat<T> {
    type Value = T;
    fn knob(self) -> Knob {
        self.knob
    }
    fn read(self, value: &Value) -> Option<T> {
        match value {
            Value::Nat(n) => T::try_from(*n).ok(),
            _ => None,
        }
    }
}

impl Typed for Flag {
    type Value = bool;
    fn knob(self) -> Knob {
        self.0
    }
    fn read(self, value: &Value) -> Option<bool> {
        match value {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl<C: Choices> Typed for Choice<C> {
    type Value = C;
    fn knob(self) -> Knob {
        self.knob
    }
    fn read(self, value: &Value) -> Option<C> {
        match value {
            Value::Name(name) => C::named(name),
            _ => None,
        }
    }
}

/// `a == b`, in a constant.
pub(crate) const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `names.contains(&name)`, in a constant.
pub(crate) const fn is_one_of(name: &str, names: &[&str]) -> bool {
    let mut i = 0;
    while i < names.len() {
        if same(name, names[i]) {
            return true;
        }
        i += 1;
    }
    false
}

/// A model's typed parameters: the knobs it declares, and the one place that reads them.
pub trait Params: Sized {
    /// Every knob, in the order `list`, errors and docs show them.
    const KNOBS: &'static [Knob];
    /// Reads every knob out of constants resolved against [`Self::KNOBS`].
    fn from_resolved(knobs: &Resolved) -> Result<Self, KnobError>;
}

/// Declares a model's knobs once, each beside the field it sets, and implements [`Params`]
/// from them: the knobs become associated constants of the type (what guards and code name),
/// `KNOBS` lists them in the order given, and `from_resolved` reads each into its field. Every
/// field of the type is a knob's; a type with fields computed from its knobs implements
/// [`Params`] by hand.
///
/// ```
/// use loadbearing_specs::infra::knobs::{Flag, Nat, Params};
///
/// #[derive(Debug, PartialEq)]
/// pub struct Register {
///     compare: bool,
///     max_value: u8,
/// }
///
/// loadbearing_specs::params! {
///     Register {
///         /// The guard.
///         compare: pub const COMPARE: Flag = Flag::new("Compare", true, "a cas compares");
///         max_value: pub const MAX_VALUE: Nat<u8> =
///             Nat::new("MaxValue", 1, 255, 3, "the largest value held");
///     }
/// }
///
/// assert_eq!(Register::KNOBS.len(), 2);
/// assert_eq!(Register::KNOBS[1].name, "MaxValue");
/// assert_eq!(Register::COMPARE.knob().name, "Compare");
/// ```
#[macro_export]
macro_rules! params {
    (
        $model:ident {
            $(
                $(#[$meta:meta])*
                $field:ident : $vis:vis const $name:ident : $knob:ty = $value:expr;
            )+
        }
    ) => {
        impl $model {
            $(
                $(#[$meta])*
                $vis const $name: $knob = $value;
            )+
        }

        impl $crate::infra::knobs::Params for $model {
            const KNOBS: &'static [$crate::infra::knobs::Knob] = &[$(Self::$name.knob()),+];

            fn from_resolved(
                knobs: &$crate::infra::knobs::Resolved,
            ) -> ::core::result::Result<Self, $crate::infra::knobs::KnobError> {
                ::core::result::Result::Ok($model {
                    $($field: knobs.get(Self::$name)?),+
                })
            }
        }
    };
}

pub type Constants = BTreeMap<String, Value>;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    #[error("{model} has no constant `{name}`; its constants are: {}", known.join(", "))]
    Unknown {
        model: String,
        name: String,
        known: Vec<String>,
    },
    #[error("constant `{name}` takes {expected}, not `{got}`")]
    WrongType {
        name: String,
        expected: String,
        got: String,
    },
    #[error(
        "constant `{name}` = {value} is outside {min}..={max}{}",
        beyond(*.value, *.max, *.limit)
    )]
    OutOfRange {
        name: String,
        value: u64,
        min: u64,
        max: u64,
        /// Why the range ends at `max`, if the declaration says ([`Knob::limit`]).
        limit: Option<&'static str>,
    },
    /// The model reads a knob its [`Params::KNOBS`] leaves out: a bug in the model.
    #[error("the model reads constant `{name}`, which it does not declare")]
    Undeclared { name: &'static str },
    /// The model reads a knob with a declaration other than the one it lists, or a choice name
    /// means nothing to it: a bug in the model.
    #[error("the model cannot read constant `{name}` = `{value}` as it declares it")]
    Unreadable { name: &'static str, value: String },
}

/// Why a value above a range's maximum is refused: the representation's reason, or that the
/// range was chosen. A value below the minimum needs no reason beyond the range.
fn beyond(value: u64, max: u64, limit: Option<&'static str>) -> String {
    match limit {
        _ if value <= max => String::new(),
        Some(why) => format!(": {why}"),
        None => ", a range chosen for the suite".to_string(),
    }
}

/// Constants checked against a model's knobs, defaults filled in. Made by [`Resolved::resolve`],
/// which also builds the model's parameters from them once, so every problem is found there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved(Constants);

impl Resolved {
    /// Checks `given` against the knobs of `P` (names, kinds, ranges), fills in the defaults,
    /// and reads `P` from the result, so a model that cannot be built is an error here.
    pub fn resolve<P: Params>(model: &str, given: &Constants) -> Result<Resolved, KnobError> {
        let resolved = Resolved::validate(model, P::KNOBS, given)?;
        P::from_resolved(&resolved)?;
        Ok(resolved)
    }

    fn validate(model: &str, knobs: &[Knob], given: &Constants) -> Result<Resolved, KnobError> {
        for name in given.keys() {
            if !knobs.iter().any(|k| k.name == name) {
                return Err(KnobError::Unknown {
                    model: model.to_string(),
                    name: name.clone(),
                    known: knobs.iter().map(|k| k.name.to_string()).collect(),
                });
            }
        }
        let mut values = Constants::new();
        for knob in knobs {
            let value = match given.get(knob.name) {
                Some(value) => value.clone(),
                None => knob.default_value(&values)?,
            };
            match (knob.kind, &value) {
                (Kind::Bool { .. } | Kind::Follows { .. }, Value::Bool(_)) => {}
                (Kind::Choice { choices, .. }, Value::Name(name))
                    if choices.contains(&name.as_str()) => {}
                (Kind::Nat { min, max, .. }, &Value::Nat(n)) => {
                    if n < min || n > max {
                        return Err(KnobError::OutOfRange {
                            name: knob.name.to_string(),
                            value: n,
                            min,
                            max,
                            limit: knob.limit,
                        });
                    }
                }
                (kind, got) => {
                    return Err(KnobError::WrongType {
                        name: knob.name.to_string(),
                        expected: match kind {
                            Kind::Bool { .. } | Kind::Follows { .. } => "true or false".to_string(),
                            Kind::Nat { min, max, .. } => format!("a number in {min}..={max}"),
                            Kind::Choice { choices, .. } => {
                                format!("one of {}", choices.join(", "))
                            }
                        },
                        got: got.to_string(),
                    })
                }
            }
            values.insert(knob.name.to_string(), value);
        }
        Ok(Resolved(values))
    }

    /// The value of one declared knob, typed as the declaration reads it.
    pub fn get<K: Typed>(&self, knob: K) -> Result<K::Value, KnobError> {
        let name = knob.knob().name;
        let value = self.0.get(name).ok_or(KnobError::Undeclared { name })?;
        knob.read(value).ok_or_else(|| KnobError::Unreadable {
            name,
            value: value.to_string(),
        })
    }

    /// Every knob's value by name, as configs and `--set` write them.
    pub fn values(&self) -> &Constants {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum Colour {
        Red,
        Blue,
    }

    impl Choices for Colour {
        const NAMES: &'static [&'static str] = &["red", "blue", "green"];
        fn named(name: &str) -> Option<Colour> {
            match name {
                "red" => Some(Colour::Red),
                "blue" => Some(Colour::Blue),
                _ => None,
            }
        }
    }

    const SIZE: Nat = Nat::new("Size", 1, 9, 3, "how big");
    const ON: Flag = Flag::new("On", true, "a switch");
    const COLOUR: Choice<Colour> = Choice::new("Colour", "red", "a colour");
    const UNLISTED: Flag = Flag::new("Unlisted", false, "declared, never listed");
    /// Same name as `SIZE`, another kind: a model that mixes them cannot read it.
    const SIZE_AS_FLAG: Flag = Flag::new("Size", false, "a mistake");

    struct Toy {
        size: u8,
        on: bool,
        colour: Colour,
    }

    impl Params for Toy {
        const KNOBS: &'static [Knob] = &[SIZE.knob(), ON.knob(), COLOUR.knob()];
        fn from_resolved(k: &Resolved) -> Result<Toy, KnobError> {
            Ok(Toy {
                size: k.get(SIZE)?,
                on: k.get(ON)?,
                colour: k.get(COLOUR)?,
            })
        }
    }

    fn given(pairs: &[(&str, Value)]) -> Constants {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn typed_reads_see_defaults_and_given_values() {
        let k = Resolved::resolve::<Toy>("Toy", &Constants::new()).unwrap();
        let toy = Toy::from_resolved(&k).unwrap();
        assert_eq!((toy.size, toy.on, toy.colour), (3, true, Colour::Red));
        let k = Resolved::resolve::<Toy>(
            "Toy",
            &given(&[
                ("Size", Value::Nat(9)),
                ("On", Value::Bool(false)),
                ("Colour", Value::Name("blue".into())),
            ]),
        )
        .unwrap();
        let toy = Toy::from_resolved(&k).unwrap();
        assert_eq!((toy.size, toy.on, toy.colour), (9, false, Colour::Blue));
    }

    #[test]
    fn bad_values_are_clear_errors() {
        let err = |pairs: &[(&str, Value)]| {
            Resolved::resolve::<Toy>("Toy", &given(pairs))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&[("Sise", Value::Nat(2))]),
            "Toy has no constant `Sise`; its constants are: Size, On, Colour"
        );
        assert_eq!(
            err(&[("Size", Value::Nat(10))]),
            "constant `Size` = 10 is outside 1..=9, a range chosen for the suite"
        );
        assert_eq!(
            err(&[("Size", Value::Nat(0))]),
            "constant `Size` = 0 is outside 1..=9"
        );
        assert_eq!(
            err(&[("On", Value::Nat(1))]),
            "constant `On` takes true or false, not `1`"
        );
        assert_eq!(
            err(&[("Colour", Value::Name("pink".into()))]),
            "constant `Colour` takes one of red, blue, green, not `pink`"
        );
        assert_eq!(
            err(&[("Size", Value::Bool(true))]),
            "constant `Size` takes a number in 1..=9, not `true`"
        );
    }

    #[test]
    fn a_model_that_misreads_its_own_knobs_fails_to_resolve() {
        // A declared choice that means nothing to the model is found when resolving.
        let e = Resolved::resolve::<Toy>("Toy", &given(&[("Colour", Value::Name("green".into()))]))
            .unwrap_err();
        assert_eq!(
            e,
            KnobError::Unreadable {
                name: "Colour",
                value: "green".into()
            }
        );
        let k = Resolved::resolve::<Toy>("Toy", &Constants::new()).unwrap();
        assert_eq!(
            k.get(UNLISTED),
            Err(KnobError::Undeclared { name: "Unlisted" })
        );
        assert_eq!(
            k.get(SIZE_AS_FLAG),
            Err(KnobError::Unreadable {
                name: "Size",
                value: "3".into()
            })
        );
    }

    #[test]
    fn a_following_flag_takes_its_leaders_value_unless_set() {
        const LIGHT: Flag = Flag::following("Light", ON, "lit when on, unless set apart");
        struct Lamp(bool, bool);
        impl Params for Lamp {
            const KNOBS: &'static [Knob] = &[ON.knob(), LIGHT.knob()];
            fn from_resolved(k: &Resolved) -> Result<Lamp, KnobError> {
                Ok(Lamp(k.get(ON)?, k.get(LIGHT)?))
            }
        }
        let lamp = |pairs: &[(&str, Value)]| {
            let k = Resolved::resolve::<Lamp>("Lamp", &given(pairs)).unwrap();
            let Lamp(on, light) = Lamp::from_resolved(&k).unwrap();
            (on, light)
        };
        assert_eq!(lamp(&[]), (true, true));
        assert_eq!(lamp(&[("On", Value::Bool(false))]), (false, false));
        assert_eq!(
            lamp(&[("On", Value::Bool(false)), ("Light", Value::Bool(true))]),
            (false, true)
        );
        // Listed before its leader, a following flag has nothing to follow: a model bug.
        struct Backwards;
        impl Params for Backwards {
            const KNOBS: &'static [Knob] = &[LIGHT.knob(), ON.knob()];
            fn from_resolved(_: &Resolved) -> Result<Backwards, KnobError> {
                Ok(Backwards)
            }
        }
        assert_eq!(
            Resolved::resolve::<Backwards>("Backwards", &Constants::new()).unwrap_err(),
            KnobError::Undeclared { name: "On" }
        );
    }

    /// A knob as wide as its model's state: read as `u16`, its maximum that of the type.
    const SPAN: Nat<u16> =
        Nat::new("Span", 1, u16::MAX as u64, 3, "how far").max_because("offsets are 16-bit");

    struct Wide(u16);

    impl Params for Wide {
        const KNOBS: &'static [Knob] = &[SPAN.knob()];
        fn from_resolved(k: &Resolved) -> Result<Wide, KnobError> {
            Ok(Wide(k.get(SPAN)?))
        }
    }

    #[test]
    fn a_wide_knob_reads_values_past_a_byte() {
        let k = Resolved::resolve::<Wide>("Wide", &given(&[("Span", Value::Nat(400))])).unwrap();
        assert_eq!(k.get(SPAN), Ok(400u16));
        let k = Resolved::resolve::<Wide>("Wide", &given(&[("Span", Value::Nat(65_535))])).unwrap();
        assert_eq!(Wide::from_resolved(&k).unwrap().0, u16::MAX);
    }

    #[test]
    fn a_range_the_representation_ends_says_what_ends_it() {
        let e =
            Resolved::resolve::<Wide>("Wide", &given(&[("Span", Value::Nat(65_536))])).unwrap_err();
        assert_eq!(
            e,
            KnobError::OutOfRange {
                name: "Span".into(),
                value: 65_536,
                min: 1,
                max: 65_535,
                limit: Some("offsets are 16-bit"),
            }
        );
        assert_eq!(
            e.to_string(),
            "constant `Span` = 65536 is outside 1..=65535: offsets are 16-bit"
        );
        // Below the minimum, the representation is not the reason.
        let e = Resolved::resolve::<Wide>("Wide", &given(&[("Span", Value::Nat(0))])).unwrap_err();
        assert_eq!(e.to_string(), "constant `Span` = 0 is outside 1..=65535");
    }

    #[test]
    fn constants_compare_names() {
        assert!(same("Guarded", "Guarded"));
        assert!(!same("Guarded", "Guarde"));
        assert!(!same("Guarded", "guarded"));
        assert!(COLOUR.offers("green"));
        assert!(!COLOUR.offers("pink"));
    }
}
