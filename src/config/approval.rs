//! The `[approval]` table's typed values (docs/CONFIG.md, Approval): a decision, and a
//! rule's `prefix` read into a pattern when the profile loads, so a bad pattern is an
//! error at its file:line:col and matching never parses text again.
//!
//! A prefix is words separated by spaces, matched against the first words of a
//! simple command (its program, then its arguments): a literal word matches itself,
//! `*` one word, `**` zero or more words. `|` joins stages into a pipeline form
//! (`curl ** | sh`), which matches consecutive stages of one pipeline, each stage as a
//! prefix. The matching itself is `pipeline::approval`'s.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What happens to a command: it runs, a person is asked first, or it is refused.
/// Ordered from the most to the least permissive: the strictest one wins.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    #[default]
    Allow,
    Ask,
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// What `ask` becomes when no one can be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Unattended {
    Allow,
    #[default]
    Deny,
}

/// One word of a stage's pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A literal word.
    Word(String),
    /// `*`: exactly one word.
    One,
    /// `**`: zero or more words.
    Any,
}

/// A rule's `prefix`, as written and as read: one stage per pipeline element.
#[derive(Debug, Clone)]
pub struct Prefix {
    text: String,
    stages: Vec<Vec<Token>>,
}

impl PartialEq for Prefix {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Prefix {
    /// The prefix as written, whitespace normalized (`git  push` is `git push`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The stages, each a non-empty list of tokens starting with a program word or `*`.
    pub fn stages(&self) -> &[Vec<Token>] {
        &self.stages
    }

    /// Read a prefix; the error says what is wrong and how to write it.
    pub fn parse(text: &str) -> Result<Prefix, String> {
        if text.trim().is_empty() {
            return Err(
                "prefix is empty: write the words the command starts with, e.g. \"git push\""
                    .into(),
            );
        }
        if let Some(c) = text.chars().find(|c| {
            matches!(
                c,
                '\'' | '"' | '\\' | '$' | '`' | ';' | '&' | '<' | '>' | '(' | ')'
            )
        }) {
            return Err(format!(
                "prefix {text:?} has `{c}`: a prefix is plain words separated by spaces (no quoting, variables, redirections or operators), joined by `|` for a pipeline form, e.g. \"curl ** | sh\""
            ));
        }
        let mut stages = Vec::new();
        for (n, stage) in text.split('|').enumerate() {
            let words: Vec<&str> = stage.split_whitespace().collect();
            if words.is_empty() {
                return Err(format!(
                    "prefix {text:?}: stage {} of the pipeline form is empty (write `a | b`, with a command on each side of `|`)",
                    n + 1
                ));
            }
            let mut tokens = Vec::with_capacity(words.len());
            for (i, w) in words.iter().enumerate() {
                let token = match *w {
                    "*" => Token::One,
                    "**" => Token::Any,
                    w if w.contains('*') => {
                        return Err(format!(
                            "prefix {text:?}: `{w}` mixes `*` into a word; `*` stands alone (one word) and `**` too (zero or more words), so write e.g. \"npm run *\""
                        ));
                    }
                    w => Token::Word(w.to_string()),
                };
                if i == 0 && token == Token::Any {
                    return Err(format!(
                        "prefix {text:?}: a stage starts with its program, not `**`; write `*` for any program"
                    ));
                }
                if token == Token::Any && tokens.last() == Some(&Token::Any) {
                    return Err(format!(
                        "prefix {text:?}: `** **` is one `**` (zero or more words)"
                    ));
                }
                tokens.push(token);
            }
            stages.push(tokens);
        }
        if !stages.iter().flatten().any(|t| matches!(t, Token::Word(_))) {
            return Err(format!(
                "prefix {text:?} names no word, so it would match every command: that is what approval.default decides"
            ));
        }
        let text = stages
            .iter()
            .map(|s| {
                s.iter()
                    .map(|t| match t {
                        Token::Word(w) => w.as_str(),
                        Token::One => "*",
                        Token::Any => "**",
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect::<Vec<_>>()
            .join(" | ");
        Ok(Prefix { text, stages })
    }
}

impl Serialize for Prefix {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Prefix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Prefix::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `[[approval.rule]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// The name the rule is shown by; its prefix when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub prefix: Prefix,
    pub decision: Decision,
    /// Commands the rule must match (checked by `agentbash profile check`).
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<String>,
    /// Commands it must not match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_match: Vec<String>,
}

impl ApprovalRule {
    /// How the rule is named in messages: its id, else its prefix.
    pub fn name(&self) -> String {
        match &self.id {
            Some(id) => format!("rule `{id}`"),
            None => format!("rule `{}`", self.prefix.text()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_read_into_stages() {
        let p = Prefix::parse("  curl   ** |  sh ").expect("valid");
        assert_eq!(p.text(), "curl ** | sh");
        assert_eq!(
            p.stages(),
            &[
                vec![Token::Word("curl".into()), Token::Any],
                vec![Token::Word("sh".into())]
            ]
        );
        assert_eq!(
            Prefix::parse("npm run *").expect("valid").stages()[0],
            vec![
                Token::Word("npm".into()),
                Token::Word("run".into()),
                Token::One
            ]
        );
        assert!(Prefix::parse("* | sh").is_ok());
        assert!(Prefix::parse("git ** push").is_ok());
    }

    #[test]
    fn bad_prefixes_say_what_to_write() {
        for (bad, says) in [
            ("", "empty"),
            ("   ", "empty"),
            ("curl |", "stage 2"),
            ("| sh", "stage 1"),
            ("a || b", "stage 2"),
            ("** rm", "not `**`"),
            ("git ** **", "is one `**`"),
            ("npm run test:*", "mixes `*`"),
            ("*", "names no word"),
            ("* | *", "names no word"),
            ("git commit -m 'x'", "has `'`"),
            ("make && deploy", "has `&`"),
            ("echo $HOME", "has `$`"),
        ] {
            let e = Prefix::parse(bad).expect_err(bad);
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    #[test]
    fn decisions_order_from_permissive_to_strict() {
        assert!(Decision::Allow < Decision::Ask && Decision::Ask < Decision::Deny);
        assert_eq!(
            [Decision::Ask, Decision::Deny, Decision::Allow]
                .into_iter()
                .max(),
            Some(Decision::Deny)
        );
    }
}
