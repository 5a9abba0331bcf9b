//! Text from outside (a command, a path, a name, an error quoting them) made safe to
//! show on a person's terminal or in a CI log.
//!
//! A command's text can carry control characters: `\r` and `ESC [2K` to overwrite
//! the line agentbash printed, OSC 52 to set the clipboard, OSC 0/2 to set the window
//! title, bidi overrides to make text read differently from what runs. Printed as
//! they are, a terminal obeys them. Here every such character is shown as an escape
//! (`\r`, `\e`, `\x07`, `\u{202e}`) instead, so the person sees exactly what will run.
//!
//! The command's *output* is not escaped here: the sanitizer (`output::sanitize`)
//! removes controls from it as it streams. (It removes, where this shows: for a
//! header or a message, hiding what a command contains would be the wrong answer.)
//! JSON output keeps the real text; JSON escaping is its own protection. A backslash
//! is left as it is, so ordinary commands (`printf 'a\n'`) read as typed.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `s` with every control character escaped, tab and newline included: for text
/// shown on one line (a header, a title, a table cell, a notice).
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// [`escape_controls`], keeping newlines and tabs: for a message of several lines
/// (an error with a hint, a block message).
pub fn escape_controls_multiline(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// Does `c` change what a terminal shows, other than by printing itself?
fn is_control(c: char, keep_lines: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_lines,
        // C0, DEL, C1.
        '\0'..='\x1f' | '\x7f'..='\u{9f}' => true,
        // Bidi embeddings, overrides and isolates (LRE..RLO, LRI..PDI).
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

fn escape(s: &str, keep_lines: bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_control(c, keep_lines)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !is_control(c, keep_lines) {
            out.push(c);
            continue;
        }
        // Writing to a String cannot fail.
        let _ = match c {
            '\t' => write!(out, "\\t"),
            '\n' => write!(out, "\\n"),
            '\r' => write!(out, "\\r"),
            '\x1b' => write!(out, "\\e"),
            '\0'..='\x7f' => write!(out, "\\x{:02x}", c as u32),
            _ => write!(out, "\\u{{{:x}}}", c as u32),
        };
    }
    Cow::Owned(out)
}

/// Single-quote `s` for bash.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `s` as one bash word: as it is when bash would read it back unchanged (letters,
/// digits and `_@%+=:,./-` only, not empty), else single-quoted.
pub fn shell_word(s: &str) -> Cow<'_, str> {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b);
    if !s.is_empty() && s.bytes().all(plain) {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(quote(s))
    }
}

/// `word` as one shell word (see [`shell_word`]).
pub fn quote_word(word: &str) -> String {
    shell_word(word).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases: &[(&str, &str, &str)] = &[
            ("ls -la", "ls -la", "ls -la"),
            ("a\tb\nc", "a\\tb\\nc", "a\tb\nc"),
            (
                "\r\x1b[2K$ echo harmless",
                "\\r\\e[2K$ echo harmless",
                "\\r\\e[2K$ echo harmless",
            ),
            (
                "\x1b]52;c;aGFja2Vk\x07",
                "\\e]52;c;aGFja2Vk\\x07",
                "\\e]52;c;aGFja2Vk\\x07",
            ),
            ("nul\0del\x7f", "nul\\x00del\\x7f", "nul\\x00del\\x7f"),
            ("c1 \u{9b}31m", "c1 \\u{9b}31m", "c1 \\u{9b}31m"),
            (
                "rlo \u{202e}txt.exe",
                "rlo \\u{202e}txt.exe",
                "rlo \\u{202e}txt.exe",
            ),
            (
                "iso \u{2066}x\u{2069}",
                "iso \\u{2066}x\\u{2069}",
                "iso \\u{2066}x\\u{2069}",
            ),
            ("snow \u{2603} é", "snow \u{2603} é", "snow \u{2603} é"),
            ("printf 'a\\n'", "printf 'a\\n'", "printf 'a\\n'"),
        ];
        for (input, one_line, multi) in cases {
            assert_eq!(escape_controls(input), *one_line, "{input:?}");
            assert_eq!(escape_controls_multiline(input), *multi, "{input:?}");
        }
    }

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(escape_controls("echo hi"), Cow::Borrowed(_)));
    }
}
