//! Fuzzes the normalizer: no input may panic, and what it reports must
//! describe the input: the command that runs is a prefix of the trimmed input, the
//! stripped suffix is the input's end, and an extracted limit is never zero.
//!
//! Run with `fuzz/run.sh normalizer` (or `cargo +nightly fuzz run normalizer`).

#![no_main]

use agentbash::pipeline::normalize::normalize;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(cmd) = std::str::from_utf8(rest) else {
        return;
    };
    let strip = flags & 1 == 1;
    let explicit_head = (flags & 2 == 2).then_some(usize::from(flags >> 4) + 1);
    let explicit_tail = (flags & 4 == 4).then_some(usize::from(flags >> 4) + 1);
    let n = normalize(cmd, strip, explicit_head, explicit_tail);
    let trimmed = cmd.trim();
    assert!(trimmed.starts_with(&n.command), "{n:?} from {cmd:?}");
    match &n.stripped {
        None => assert_eq!(n.command, trimmed),
        Some(s) => {
            assert!(strip);
            assert!(trimmed.ends_with(s.as_str()), "{n:?} from {cmd:?}");
            assert!(n.command.len() + s.len() <= trimmed.len());
            assert!(!n.command.is_empty());
        }
    }
    if explicit_head.is_some() {
        assert_eq!(n.head, explicit_head);
    }
    if explicit_tail.is_some() {
        assert_eq!(n.tail, explicit_tail);
    }
    assert!(n.head != Some(0) && n.tail != Some(0));
});
