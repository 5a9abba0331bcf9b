//! The two switches a test run takes from its environment, shared by the integration
//! tests (tests/it/main.rs) and the library's unit tests (src/lib.rs includes this
//! file under `cfg(test)`):
//!
//! - `AGENTBASH_REQUIRE_ALL=1` (.ci/run sets it): a test whose prerequisite is missing
//!   fails instead of skipping, so a passing CI run is one in which every test ran.
//!   Without it a skip is still said, on the test process's stderr, past the test
//!   harness's capture: `SKIPPED <test>: <what is missing> (to run it: <how>)`.
//! - `AGENTBASH_TEST_SLOWNESS=N` (a number, default 1): every time limit a test asserts
//!   is multiplied by N ([`scaled`]), for a machine slower than the loaded 2-core one
//!   the limits were chosen on. Tests synchronise on readiness (a marker line, a
//!   process in /proc, a file appearing), never on time, so no factor is needed there.

#![allow(dead_code)]

use std::io::Write;
use std::time::Duration;

/// Set to 1 to turn every skip into a failure.
pub const REQUIRE_ALL: &str = "AGENTBASH_REQUIRE_ALL";

/// The factor every asserted time limit is multiplied by.
pub const SLOWNESS: &str = "AGENTBASH_TEST_SLOWNESS";

/// A prerequisite this machine lacks: what it is, and how to get it.
#[derive(Debug, Clone)]
pub struct Missing {
    pub what: String,
    pub how: String,
}

impl Missing {
    pub fn new(what: impl Into<String>, how: impl Into<String>) -> Missing {
        Missing {
            what: what.into(),
            how: how.into(),
        }
    }

    /// Leave out one optional part of the running test (see [`skipped`]).
    #[track_caller]
    pub fn skip_part(&self) {
        skipped(&self.what, &self.how);
    }
}

/// Whether `AGENTBASH_REQUIRE_ALL=1`.
pub fn require_all() -> bool {
    std::env::var(REQUIRE_ALL).as_deref() == Ok("1")
}

/// Say that (part of) the running test cannot run here: panics when
/// `AGENTBASH_REQUIRE_ALL=1`, else writes one line to stderr. A test calls it directly
/// for an optional part it leaves out, and through [`skip!`] to stop altogether.
#[track_caller]
pub fn skipped(what: &str, how: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let line = format!("SKIPPED {test}: {what} (to run it: {how})");
    if require_all() {
        panic!("{line}; {REQUIRE_ALL}=1 forbids skipping");
    }
    // `std::io::stderr()` rather than `eprintln!`: the harness captures only the
    // print macros, and a skip must be seen in a passing run too.
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Skip the rest of the test, saying what is missing and how to get it (see
/// [`skipped`]): `skip!("fish is not installed", "apt-get install fish")`, or
/// `skip!(missing)` with a [`Missing`].
macro_rules! skip {
    ($missing:expr $(,)?) => {{
        let missing: $crate::harness::Missing = $missing;
        $crate::harness::skipped(&missing.what, &missing.how);
        return;
    }};
    ($what:expr, $how:expr $(,)?) => {{
        $crate::harness::skipped(&$what, &$how);
        return;
    }};
}
pub(crate) use skip;

/// `AGENTBASH_TEST_SLOWNESS` (default 1). A value that is not a positive number is a
/// mistake worth stopping for, not a silent 1.
pub fn slowness() -> f64 {
    match std::env::var(SLOWNESS) {
        Err(_) => 1.0,
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f > 0.0 => f,
            _ => panic!("{SLOWNESS}={v:?}: expected a positive number such as 1, 2 or 1.5"),
        },
    }
}

/// A time limit a test asserts, stretched by [`slowness`].
pub fn scaled(limit: Duration) -> Duration {
    if limit.is_zero() {
        // Nothing to stretch (and no panic in a cleanup path over a bad factor).
        return limit;
    }
    limit.mul_f64(slowness())
}
