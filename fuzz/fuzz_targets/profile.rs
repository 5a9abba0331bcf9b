//! Fuzzes the profile loader: any text must give either a profile or an
//! error naming a line and column inside the text, never a panic or a hang; a
//! layer that parses must merge over the built-in default and validate.
//!
//! Run with `fuzz/run.sh profile` (or `cargo +nightly fuzz run profile`).

#![no_main]

use agentbash::config::profile::{
    Origin, Profile, ProfileError, locate, merge, parse_layer, semantic_errors,
};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn default_table() -> &'static toml::Table {
    static T: OnceLock<toml::Table> = OnceLock::new();
    T.get_or_init(|| {
        let text = agentbash::config::profile::BUILTIN[0].1;
        parse_layer(&Origin::Builtin("default".into()), text)
            .expect("built-in default parses")
            .0
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let origin = Origin::File("fuzz.toml".into());
    match parse_layer(&origin, text) {
        Err(ProfileError::Invalid {
            line, col, message, ..
        }) => {
            let lines = text.split('\n').count().max(1);
            assert!(
                line >= 1 && line <= lines,
                "line {line} of {lines}: {message}"
            );
            assert!(col >= 1);
            assert!(!message.is_empty());
        }
        Err(e) => panic!("unexpected error kind: {e}"),
        Ok((table, _)) => {
            let mut merged = default_table().clone();
            merge(&mut merged, &table);
            merged.remove("extends");
            if let Ok(p) = merged.try_into::<Profile>() {
                for (sec, key, _) in semantic_errors(&p) {
                    let (line, col) = locate(text, sec, key);
                    assert!(line >= 1 && col >= 1);
                }
            }
        }
    }
});
