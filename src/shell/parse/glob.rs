//! Shell pattern matching (`*`, `?`, `[…]`, `\x`) as bash does it for pathname
//! expansion, `case` and `${x%pattern}`: in time proportional to pattern × text,
//! whatever a hostile pattern looks like.

/// Whether `pattern` matches all of `text`. With `hidden_rule`, a leading `.` of
/// `text` is matched only by a pattern that starts with one (pathname expansion).
pub fn matches(pattern: &str, text: &str, hidden_rule: bool) -> bool {
    if hidden_rule
        && text.starts_with('.')
        && !pattern.starts_with('.')
        && !pattern.starts_with("\\.")
    {
        return false;
    }
    let items = compile(pattern);
    let n: Vec<char> = text.chars().collect();
    // Greedy matching with one backtrack point per star: O(pattern × text).
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match items.get(pi) {
            Some(Item::Star) => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(item) if item.accepts(n[ni]) => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    items[pi.min(items.len())..]
        .iter()
        .all(|it| matches!(it, Item::Star))
}

/// Whether `s` has an unescaped glob character.
pub fn has_meta(s: &str) -> bool {
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if matches!(c, '*' | '?' | '[') {
            return true;
        }
    }
    false
}

/// `s` with every glob character escaped, so that it matches only itself.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A pattern with its escapes removed (what it matches when it has no glob character).
pub fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

enum Item {
    Star,
    Any,
    Char(char),
    Set {
        negate: bool,
        items: Vec<(char, char)>,
    },
}

impl Item {
    fn accepts(&self, c: char) -> bool {
        match self {
            Item::Star => true,
            Item::Any => true,
            Item::Char(x) => *x == c,
            Item::Set { negate, items } => {
                items.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negate
            }
        }
    }
}

fn compile(pattern: &str) -> Vec<Item> {
    let p: Vec<char> = pattern.chars().collect();
    let mut items = Vec::with_capacity(p.len());
    let mut i = 0;
    while let Some(&c) = p.get(i) {
        i += 1;
        items.push(match c {
            '*' => {
                // `**` is `*` here.
                while p.get(i) == Some(&'*') {
                    i += 1;
                }
                Item::Star
            }
            '?' => Item::Any,
            '\\' => match p.get(i) {
                Some(&lit) => {
                    i += 1;
                    Item::Char(lit)
                }
                None => Item::Char('\\'),
            },
            '[' => match set_end(&p, i) {
                Some(close) => {
                    let mut body = &p[i..close];
                    i = close + 1;
                    let negate = matches!(body.first(), Some('!' | '^'));
                    if negate {
                        body = &body[1..];
                    }
                    let mut ranges = Vec::new();
                    let mut k = 0;
                    while k < body.len() {
                        let lo = if body[k] == '\\' && k + 1 < body.len() {
                            k += 1;
                            body[k]
                        } else {
                            body[k]
                        };
                        if k + 2 < body.len() && body[k + 1] == '-' {
                            ranges.push((lo, body[k + 2]));
                            k += 3;
                        } else {
                            ranges.push((lo, lo));
                            k += 1;
                        }
                    }
                    Item::Set {
                        negate,
                        items: ranges,
                    }
                }
                None => Item::Char('['),
            },
            lit => Item::Char(lit),
        });
    }
    items
}

/// The index of the `]` closing a bracket expression whose body starts at `i` (a `]`
/// right after `[` or `[!` is a member, not the end).
fn set_end(p: &[char], i: usize) -> Option<usize> {
    let mut k = i;
    if matches!(p.get(k), Some('!' | '^')) {
        k += 1;
    }
    if p.get(k) == Some(&']') {
        k += 1;
    }
    while let Some(&c) = p.get(k) {
        match c {
            '\\' => k += 2,
            ']' => return Some(k),
            _ => k += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_bash() {
        for (p, n, want) in [
            ("*", "usr", true),
            ("u*", "usr", true),
            ("*r", "usr", true),
            ("u?r", "usr", true),
            ("[a-v]sr", "usr", true),
            ("[!u]sr", "usr", false),
            ("[]x]", "]", true),
            ("\\*", "*", true),
            ("\\*", "usr", false),
            ("*", ".ssh", false),
            (".*", ".ssh", true),
            ("*a*b*c", "xaybzc", true),
            ("*a*b*c", "xaybz", false),
            ("us", "usr", false),
            ("usr*", "usr", true),
            ("[", "[", true),
        ] {
            assert_eq!(matches(p, n, true), want, "{p} vs {n}");
        }
        assert!(matches("*", ".ssh", false));
        assert!(matches("*/", "a/b/", false));
    }

    #[test]
    fn hostile_globs_stay_fast() {
        let p = "*a".repeat(5000);
        let n = "a".repeat(10_000) + "b";
        let t = std::time::Instant::now();
        assert!(!matches(&p, &n, true));
        assert!(t.elapsed() < crate::harness::scaled(std::time::Duration::from_secs(5)));
    }
}
