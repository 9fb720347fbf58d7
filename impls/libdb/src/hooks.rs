//! The points inside `DB_TXN->commit` that the harness's link-time wraps reach
//! (`csrc/harness.c`), delivered to the closure the committing thread installed.
//!
//! libdb calls [`lbdb_commit_point`] on whatever thread is committing; a thread that installed
//! no hook (setup, the final read, a plain transaction) passes straight through.

use std::cell::Cell;
use std::ffi::c_int;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// A point a commit reached, in the order it reaches them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// The pivot check passed and the read locks are about to be released (`__lock_vec` with
    /// `DB_LOCK_PUT_READ`): the #136 window opens here. Only a transaction that logged
    /// something reaches it; a read-only one goes straight to [`Point::Recorded`].
    Checked,
    /// The commit record is written and the SIREAD markers are about to be kept
    /// (`__lock_sicommit`); the status becomes COMMITTED after the locks are released.
    Recorded,
}

impl Point {
    fn from_c(point: c_int) -> Option<Point> {
        match point {
            1 => Some(Point::Checked),
            2 => Some(Point::Recorded),
            _ => None,
        }
    }
}

type Hook = *mut (dyn FnMut(Point) + 'static);

thread_local! {
    static HOOK: Cell<Option<Hook>> = const { Cell::new(None) };
    static PANIC: Cell<Option<Box<dyn std::any::Any + Send>>> = const { Cell::new(None) };
}

/// Called by libdb (through the wraps) at each point of a commit.
#[no_mangle]
pub extern "C" fn lbdb_commit_point(point: c_int) {
    let Some(point) = Point::from_c(point) else {
        return;
    };
    let Some(hook) = HOOK.with(Cell::get) else {
        return;
    };
    // A panic must not unwind through libdb's C frames: keep it and rethrow after the call.
    // SAFETY: the pointer is installed by `with_hook` for the duration of its body, on this
    // thread, and the body is the libdb call that brought us here.
    let result = catch_unwind(AssertUnwindSafe(|| unsafe { (*hook)(point) }));
    if let Err(payload) = result {
        PANIC.with(|p| p.set(Some(payload)));
    }
}

/// Runs `body` (a libdb call) with `hook` receiving the commit points this thread reaches.
pub fn with_hook<R>(hook: &mut dyn FnMut(Point), body: impl FnOnce() -> R) -> R {
    struct Restore(Option<Hook>);
    impl Drop for Restore {
        fn drop(&mut self) {
            HOOK.with(|h| h.set(self.0));
        }
    }
    // SAFETY: the 'static is a lie the Restore guard keeps: the pointer is removed before
    // `hook`'s borrow ends, whether `body` returns or unwinds.
    let erased: Hook = unsafe {
        std::mem::transmute::<*mut (dyn FnMut(Point) + '_), Hook>(hook as *mut dyn FnMut(Point))
    };
    let _restore = Restore(HOOK.with(|h| h.replace(Some(erased))));
    let r = body();
    if let Some(payload) = PANIC.with(Cell::take) {
        resume_unwind(payload);
    }
    r
}
