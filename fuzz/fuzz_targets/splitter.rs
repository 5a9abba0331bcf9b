//! Fuzzes the interceptor's shell splitter and the matcher behind it:
//! no input may panic, and the token list must give back the input byte for byte.
//!
//! Run with `cargo +nightly fuzz run splitter` from the crate root.

#![no_main]

use std::sync::OnceLock;

use agentbash::pipeline::intercept::{Split, blocked_message, format_test, intercept, lex, split};
use agentbash::config::rules::RuleSet;
use libfuzzer_sys::fuzz_target;

fn default_rules() -> Option<&'static RuleSet> {
    static SET: OnceLock<Option<RuleSet>> = OnceLock::new();
    SET.get_or_init(|| RuleSet::load(&["default".to_string()], None).ok())
        .as_ref()
}

fuzz_target!(|data: &[u8]| {
    let Ok(cmd) = std::str::from_utf8(data) else {
        return;
    };

    let lexed = lex(cmd);
    let mut rebuilt = String::with_capacity(cmd.len());
    for token in &lexed.tokens {
        match cmd.get(token.range.clone()) {
            Some(piece) => rebuilt.push_str(piece),
            None => panic!("token {:?} is not on character boundaries", token.range),
        }
    }
    assert_eq!(rebuilt, cmd, "the token list must be lossless");

    if let Split::Segments(segments) = split(cmd) {
        for segment in segments {
            assert_eq!(cmd.get(segment.range.clone()), Some(segment.text.as_str()));
            assert!(segment.text.ends_with(segment.command.as_str()));
        }
    }

    if let Some(rules) = default_rules() {
        let tools: Vec<String> = ["read", "grep", "glob", "edit", "write", "hub"]
            .iter()
            .map(|t| t.to_string())
            .collect();
        let result = intercept(cmd, rules, &tools);
        if let Some(hit) = &result.blocked {
            let _ = blocked_message(hit, cmd);
        }
        let _ = format_test(cmd, &result, &tools);
    }
});
