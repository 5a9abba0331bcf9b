//! Fuzzes the guard: no command text may make it panic, and a refusal always names
//! its rule and at least one checked program or rule.
//!
//! Run with `fuzz/run.sh guard` from the crate root. Nothing is executed: the guard
//! only judges text.

#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

use agentbash::pipeline::guard::{Context, check};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(cmd) = std::str::from_utf8(data) else {
        return;
    };
    let env: BTreeMap<String, String> = [("HOME", "/home/fuzz"), ("X", "/ /tmp")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let protected: Vec<String> = ["/", "~", "/etc", "/usr"].iter().map(|s| s.to_string()).collect();
    let v = check(
        cmd,
        &Context {
            env: &env,
            cwd: Path::new("/work"),
            protected: &protected,
        },
    );
    if let Some(r) = &v.refused {
        assert!(r.rule.starts_with("guard:"), "{r:?}");
        assert!(!v.checked.is_empty(), "refused without a checked program: {cmd:?}");
    }
});
