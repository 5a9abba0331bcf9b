//! Fuzzes the one shell parser and everything that reads its tree: no input may
//! panic, hang or overflow the stack, and what it reports must describe the input —
//! the lines kept before a syntax error parse on their own, every range it records
//! points into the text on character boundaries, and the walk, the canonical lines,
//! the interceptor and `rules test`'s report all handle whatever it yields.
//!
//! Run with `fuzz/run.sh parser` from the crate root. Nothing is executed.

#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use agentbash::config::rules::RuleSet;
use agentbash::pipeline::intercept::{blocked_message, format_test, intercept};
use agentbash::shell::parse::ast::{Command, List};
use agentbash::shell::parse::{Context, parse, parse_lines, walk};
use libfuzzer_sys::fuzz_target;

fn default_rules() -> Option<&'static RuleSet> {
    static SET: OnceLock<Option<RuleSet>> = OnceLock::new();
    SET.get_or_init(|| RuleSet::load(&["default".to_string(), "guard".to_string()], None).ok())
        .as_ref()
}

/// Every simple command's range lies in `src`, on character boundaries.
fn spans_in(list: &List, src: &str) {
    for item in list {
        for p in std::iter::once(&item.and_or.first).chain(item.and_or.rest.iter().map(|(_, p)| p)) {
            assert!(src.get(p.span.clone()).is_some(), "pipeline span {:?}", p.span);
            for stage in &p.stages {
                if let Command::Simple(s) = &stage.command {
                    assert!(src.get(s.span.clone()).is_some(), "command span {:?}", s.span);
                    for w in &s.words {
                        assert!(src.get(w.span.clone()).is_some(), "word span {:?}", w.span);
                    }
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(cmd) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse_lines(cmd);
    assert!(parsed.rest <= cmd.len());
    assert_eq!(parsed.error.is_none(), parsed.rest == cmd.len(), "{cmd:?}");
    spans_in(&parsed.script.body, cmd);
    if parsed.error.is_some() {
        // bash has run the lines before the error; they parse on their own.
        let before = &cmd[..parsed.rest];
        assert!(parse(before).is_ok(), "{before:?} (from {cmd:?}) does not parse");
    }

    let env: BTreeMap<String, String> = [("HOME", "/home/fuzz"), ("X", "/ /tmp")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let w = walk(&cmd, &Context { env: &env, cwd: Some(std::path::Path::new("/work")) });
    for c in &w.commands {
        let _ = c.rendered();
        let _ = c.name();
    }

    if let Some(rules) = default_rules() {
        let tools: Vec<String> = ["read", "grep", "glob", "edit", "write", "job"]
            .iter()
            .map(|t| t.to_string())
            .collect();
        let result = intercept(cmd, rules, &tools);
        if let Some(hit) = &result.blocked {
            assert!(blocked_message(hit, cmd).starts_with("Blocked: "));
        }
        let _ = format_test(cmd, &result, &tools);
    }
});
