//! Fuzzes the output path: the sanitizer (decoding, then line
//! edits: CR, BS, erase in line) and the retaining, redacting, column-capping sink
//! must give the same result however the stream is cut into reads, the shown text
//! must be clean (no escape or control bytes other than tab and newline), and the
//! live text must be the shown text when nothing was cut.
//!
//! The first bytes pick a configuration and the cut points; the rest is the stream.
//! Run with `fuzz/run.sh sink` (or `cargo +nightly fuzz run sink`).

#![no_main]

use agentbash::output::sanitize::{Sanitizer, sanitize};
use agentbash::output::sink::{OutputSink, Retained, SinkConfig};
use libfuzzer_sys::fuzz_target;

fn config(b: &[u8; 4]) -> SinkConfig {
    let max_bytes = 256 + usize::from(b[0]) * 4;
    SinkConfig {
        max_bytes,
        head_bytes: if b[1] & 1 == 1 { max_bytes / 3 } else { 0 },
        max_columns: if b[1] & 2 == 2 {
            8 + usize::from(b[2] % 64)
        } else {
            0
        },
        head_lines: (b[1] & 4 == 4).then_some(1 + usize::from(b[3] % 16)),
        tail_lines: (b[1] & 8 == 8).then_some(1 + usize::from(b[3] / 16)),
        stop_after_lines: None,
        redact: if b[1] & 16 == 16 {
            agentbash::output::redact::Secrets::new(&[
                ("FUZZ_TOKEN".to_string(), "s3cr3t-\u{e9}value".to_string()),
                ("OTHER_KEY".to_string(), "aaaaaaaa".to_string()),
            ])
        } else {
            Default::default()
        },
    }
}

fn run(cfg: &SinkConfig, chunks: &[&[u8]]) -> (Retained, String) {
    let mut sink = OutputSink::new(cfg.clone(), None, true);
    let mut live = String::new();
    for c in chunks {
        sink.push(c);
        if let Some(t) = sink.take_pending() {
            live.push_str(&t);
        }
    }
    sink.end_input();
    if let Some(t) = sink.take_pending() {
        live.push_str(&t);
    }
    (sink.finish(), live)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let cfg = config(&[data[0], data[1], data[2], data[3]]);
    let step = usize::from(data[4]) + 1;
    let stream = &data[5..];

    // Sanitizer: one chunk == chunks of `step` bytes, and the text is clean.
    let whole = sanitize(stream);
    let mut s = Sanitizer::new();
    let mut pieces = String::new();
    for c in stream.chunks(step) {
        s.push(c, &mut pieces);
    }
    s.finish(&mut pieces);
    assert_eq!(whole, pieces);
    assert!(
        whole
            .chars()
            .all(|c| c == '\n' || c == '\t' || !(c.is_control())),
        "control character in {whole:?}"
    );

    // Sink: same retained result for one read, fixed-size reads and single bytes.
    let (one, one_live) = run(&cfg, &[stream]);
    let fixed: Vec<&[u8]> = stream.chunks(step).collect();
    let (many, many_live) = run(&cfg, &fixed);
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    let (single, _) = run(&cfg, &bytes);
    assert_eq!(one_live, many_live);
    if !one.truncated {
        assert_eq!(one_live, one.text);
    }
    for other in [&many, &single] {
        assert_eq!(one.text, other.text);
        assert_eq!(one.notice, other.notice);
        assert_eq!(one.truncated, other.truncated);
        assert_eq!(one.truncation, other.truncation);
        assert_eq!(
            (
                one.total_bytes,
                one.total_lines,
                one.output_bytes,
                one.output_lines
            ),
            (
                other.total_bytes,
                other.total_lines,
                other.output_bytes,
                other.output_lines
            )
        );
    }
    assert_eq!(one.total_bytes, stream.len() as u64);
    assert!(
        one.text.len() <= cfg.max_bytes + 64,
        "retention over budget"
    );
    if !cfg.redact.is_empty() {
        assert!(!one.text.contains("s3cr3t-\u{e9}value"));
    }
});
