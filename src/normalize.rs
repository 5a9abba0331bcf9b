//! §4.1 Normalize: a trailing `| head -n N` / `| tail -n N` becomes a line limit.
//!
//! Agents habitually append `| tail -n 50` to keep output short. Run literally, that
//! throws the rest of the output away for good; lifted into a limit, the caller still
//! sees the same lines while the full stream lands in an artifact.

#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Normalized {
    /// The command that will run.
    pub command: String,
    /// The stripped suffix exactly as written (e.g. `| tail -n 5`), if any.
    pub stripped: Option<String>,
    pub head: Option<usize>,
    pub tail: Option<usize>,
}

/// A trailing `| head|tail -n N` / `| head|tail -N` split off `s`: (what precedes the
/// pipe with its trailing whitespace trimmed, the suffix from the `|` on without its
/// trailing whitespace, true for head, N as written). Hand-written because compiling
/// the equivalent regex costs more than the rest of start-up's decisions together;
/// the regex stays in the tests as the oracle.
fn trailing(s: &str) -> Option<(&str, &str, bool, &str)> {
    // The suffix holds no `|` of its own, so the operator is the last one.
    let bar = s.rfind('|')?;
    let suffix = s[bar..].trim_end_matches(char::is_whitespace);
    let after = suffix[1..].trim_start_matches(char::is_whitespace);
    let (is_head, after) = if let Some(a) = after.strip_prefix("head") {
        (true, a)
    } else {
        (false, after.strip_prefix("tail")?)
    };
    let after = after.trim_start_matches(char::is_whitespace);
    let digits = if let Some(a) = after.strip_prefix("-n") {
        a.trim_start_matches(char::is_whitespace)
    } else {
        after.strip_prefix('-')?
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((
        s[..bar].trim_end_matches(char::is_whitespace),
        suffix,
        is_head,
        digits,
    ))
}

/// Trim outer whitespace and, with `strip`, lift one trailing head/tail into a limit.
/// Explicit `--head`/`--tail` win over extracted values.
pub fn normalize(
    command: &str,
    strip: bool,
    explicit_head: Option<usize>,
    explicit_tail: Option<usize>,
) -> Normalized {
    let trimmed = command.trim();
    let mut out = Normalized {
        command: trimmed.to_string(),
        stripped: None,
        head: explicit_head,
        tail: explicit_tail,
    };
    if !strip {
        return out;
    }
    let Some((rest, suffix, is_head, digits)) = trailing(trimmed) else {
        return out;
    };
    // `a || tail -n 5` is an or-list, not a pipe, and an escaped `\|` is not an
    // operator at all. (`|& tail` never matches: `&` is not `head`/`tail`.)
    if rest.is_empty() || rest.ends_with('|') || rest.ends_with('\\') {
        return out;
    }
    if !quotes_balanced(rest) {
        return out;
    }
    let n: usize = match digits.parse() {
        Ok(n) if n > 0 => n,
        _ => return out,
    };
    out.command = rest.to_string();
    out.stripped = Some(suffix.to_string());
    if is_head {
        out.head = explicit_head.or(Some(n));
    } else {
        out.tail = explicit_tail.or(Some(n));
    }
    out
}

/// True when `s` ends outside any quote (so the `|` we found is a real operator).
fn quotes_balanced(s: &str) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for ch in s.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match ch {
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ => {}
        }
    }
    !single && !double && !escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        // (input, command, stripped, head, tail)
        type Case<'a> = (
            &'a str,
            &'a str,
            Option<&'a str>,
            Option<usize>,
            Option<usize>,
        );
        let cases: &[Case] = &[
            (
                "seq 1 100 | tail -n 5",
                "seq 1 100",
                Some("| tail -n 5"),
                None,
                Some(5),
            ),
            (
                "seq 1 100 | tail -5",
                "seq 1 100",
                Some("| tail -5"),
                None,
                Some(5),
            ),
            (
                "seq 1 100|head -n3",
                "seq 1 100",
                Some("|head -n3"),
                Some(3),
                None,
            ),
            (
                "  ls -la   |  head -20  ",
                "ls -la",
                Some("|  head -20"),
                Some(20),
                None,
            ),
            (
                "cmd 2>&1 | tail -n 5",
                "cmd 2>&1",
                Some("| tail -n 5"),
                None,
                Some(5),
            ),
            ("seq 10 | head -c 5", "seq 10 | head -c 5", None, None, None),
            ("seq 10 | head", "seq 10 | head", None, None, None),
            ("seq 10 | tail -f", "seq 10 | tail -f", None, None, None),
            ("false || tail -n 5", "false || tail -n 5", None, None, None),
            (
                "echo 'a | tail -n 5'",
                "echo 'a | tail -n 5'",
                None,
                None,
                None,
            ),
            ("seq 10 | tail -n 0", "seq 10 | tail -n 0", None, None, None),
            ("| tail -n 5", "| tail -n 5", None, None, None),
            ("a  b | tail -n 2 x", "a  b | tail -n 2 x", None, None, None),
            (
                "seq 10 |& tail -n 2",
                "seq 10 |& tail -n 2",
                None,
                None,
                None,
            ),
        ];
        for (input, cmd, stripped, head, tail) in cases {
            let n = normalize(input, true, None, None);
            assert_eq!(n.command, *cmd, "{input}");
            assert_eq!(n.stripped.as_deref(), *stripped, "{input}");
            assert_eq!((n.head, n.tail), (*head, *tail), "{input}");
        }
    }

    #[test]
    fn explicit_wins_and_strip_off() {
        let n = normalize("seq 100 | tail -n 5", true, None, Some(7));
        assert_eq!((n.command.as_str(), n.tail), ("seq 100", Some(7)));
        let n = normalize(" seq 100 | tail -n 5 ", false, None, None);
        assert_eq!(
            (n.command.as_str(), n.stripped),
            ("seq 100 | tail -n 5", None)
        );
    }

    /// The hand-written splitter against the regex it replaced, on inputs built from
    /// the pieces that matter (pipes, names, flags, digits, Unicode whitespace).
    #[test]
    fn trailing_agrees_with_the_regex_oracle() {
        use proptest::prelude::*;
        let oracle =
            regex::Regex::new(r"(?s)^(.*?)\s*(\|\s*(head|tail)\s*(?:-n\s*([0-9]+)|-([0-9]+)))\s*$")
                .expect("oracle");
        let piece = prop::sample::select(vec![
            "|", "||", "|&", " ", "\t", "\u{3000}", "\n", "head", "tail", "hea", "-n", "-", "n",
            "5", "0", "42", "x", "'", "\"", "\\", "é", "seq 1 9",
        ]);
        proptest!(ProptestConfig::with_cases(4000), |(parts in prop::collection::vec(piece, 0..12))| {
            let s: String = parts.concat();
            let want = oracle.captures(&s).map(|c| {
                (
                    c.get(1).map_or("", |m| m.as_str()).to_string(),
                    c[2].to_string(),
                    &c[3] == "head",
                    c.get(4).or(c.get(5)).map_or("", |m| m.as_str()).to_string(),
                )
            });
            let got = trailing(&s).map(|(r, suf, h, d)| (r.to_string(), suf.to_string(), h, d.to_string()));
            prop_assert_eq!(got, want, "{:?}", s);
        });
    }
}
