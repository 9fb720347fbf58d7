//! The guards of a design, each named after the typed knob that switches it.
//!
//! A guard is built from the knob constant itself, so a misspelt knob does not compile, a flag's
//! guard can only be removed by a flag setting and a choice's only by one of its choices (checked
//! when the constant is evaluated). [`check_guards`] also proves, at compile time in the
//! registry, that every guard's knob is one the model declares.

use crate::infra::knobs::{is_one_of, same, Choice, Choices, Flag, Kind, Knob, Resolved, Value};

/// A guard of a design, named as its write-up names it: the knob that switches it and the
/// setting that removes it. Guard-mutation coverage flips each one in turn.
///
/// ```
/// use loadbearing_specs::Guard;
/// # use loadbearing_refinement::{Model, Spec, Variables};
/// # use loadbearing_specs::infra::knobs::{Flag, Nat};
/// # #[derive(Debug, PartialEq)]
/// # pub struct Register { compare: bool, max: u8 }
/// # loadbearing_specs::params! {
/// #     Register {
/// #         compare: pub const COMPARE: Flag = Flag::new("Compare", true, "a cas compares");
/// #         max: pub const MAX: Nat<u8> = Nat::new("MaxValue", 1, 255, 3, "the largest value");
/// #     }
/// # }
/// # impl Model for Register {
/// #     type State = u8;
/// #     type Action = ();
/// #     fn init_states(&self) -> Vec<u8> { vec![0] }
/// #     fn actions(&self, v: &u8, a: &mut Vec<()>) { if *v < self.max { a.push(()) } }
/// #     fn next_state(&self, v: &u8, _: ()) -> Option<u8> { Some(v + 1) }
/// # }
/// # impl Spec for Register {
/// #     fn variables(&self, v: &u8) -> Variables { vec![("value", v.into())] }
/// # }
/// let guard = Guard::off("the cas compares", Register::COMPARE);
/// assert_eq!(guard.name(), "the cas compares");
/// // What `mutate` sets to check the design without it.
/// assert_eq!(guard.removal(), "Compare=false");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Guard {
    name: &'static str,
    knob: Knob,
    removed: Setting,
}

/// The setting of a guard's knob that removes the guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    Flag(bool),
    Choice(&'static str),
}

impl Setting {
    pub fn value(self) -> Value {
        match self {
            Setting::Flag(b) => Value::Bool(b),
            Setting::Choice(name) => Value::Name(name.to_string()),
        }
    }
}

impl Guard {
    /// A guard that is there while `knob` is on: turning it off removes the guard.
    pub const fn off(name: &'static str, knob: Flag) -> Guard {
        Guard {
            name,
            knob: knob.knob(),
            removed: Setting::Flag(false),
        }
    }

    /// A guard whose absence `knob` switches on (`PlainSI`, `DropMarkersAtCommit`): turning it
    /// on removes the guard.
    pub const fn on(name: &'static str, knob: Flag) -> Guard {
        Guard {
            name,
            knob: knob.knob(),
            removed: Setting::Flag(true),
        }
    }

    /// A guard removed by choosing `removed`, which must be one of the knob's choices.
    pub const fn choice<C: Choices>(
        name: &'static str,
        knob: Choice<C>,
        removed: &'static str,
    ) -> Guard {
        assert!(
            knob.offers(removed),
            "a guard is removed by one of its knob's choices"
        );
        Guard {
            name,
            knob: knob.knob(),
            removed: Setting::Choice(removed),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The name of the knob that switches the guard.
    pub fn knob(&self) -> &'static str {
        self.knob.name
    }

    pub fn removed(&self) -> Setting {
        self.removed
    }

    /// `Knob=value`, the setting that removes the guard, as `--set` writes it.
    pub fn removal(&self) -> String {
        format!("{}={}", self.knob.name, self.removed.value())
    }

    /// The `--set` that removes the guard.
    pub fn removing_set(&self) -> (String, Value) {
        (self.knob.name.to_string(), self.removed.value())
    }

    /// Whether constants already run the model without this guard.
    pub fn is_removed_in(&self, constants: &Resolved) -> bool {
        constants.values().get(self.knob.name) == Some(&self.removed.value())
    }
}

/// Panics (at compile time, when called in a constant) unless every guard's knob is one of
/// `knobs`, declared with the same kind, and guard names are distinct.
pub const fn check_guards(knobs: &[Knob], guards: &[Guard]) {
    let mut g = 0;
    while g < guards.len() {
        let guard = &guards[g];
        let mut declared = false;
        let mut k = 0;
        while k < knobs.len() {
            if same(knobs[k].name, guard.knob.name) {
                declared = true;
                match (knobs[k].kind, guard.removed) {
                    (Kind::Bool { .. } | Kind::Follows { .. }, Setting::Flag(_)) => {}
                    (Kind::Choice { choices, .. }, Setting::Choice(removed)) => {
                        assert!(
                            is_one_of(removed, choices),
                            "a guard is removed by one of its knob's choices"
                        );
                    }
                    _ => panic!("a guard's knob is declared with another kind"),
                }
            }
            k += 1;
        }
        assert!(declared, "a guard's knob is one its model declares");
        let mut other = g + 1;
        while other < guards.len() {
            assert!(
                !same(guard.name, guards[other].name),
                "a model's guards have distinct names"
            );
            other += 1;
        }
        g += 1;
    }
}
