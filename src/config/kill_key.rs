//! The key that force-kills an interactive run: the profile's `pty.kill_key`.

use std::fmt;
use std::str::FromStr;

const ESC: u8 = 0x1b;

/// The key that force-kills an interactive run (profile `pty.kill_key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillKey {
    /// A lone Escape (not the start of an escape sequence).
    Esc,
    CtrlC,
    CtrlBackslash,
    CtrlRightBracket,
    /// Ctrl plus another ASCII letter, stored lowercase. Parsing refuses the
    /// letters whose byte is also an ordinary key (h, i, j, m).
    CtrlLetter(char),
}

impl KillKey {
    /// The byte the outer terminal sends for this key in raw mode.
    pub fn byte(self) -> u8 {
        match self {
            KillKey::Esc => ESC,
            KillKey::CtrlC => 0x03,
            KillKey::CtrlBackslash => 0x1c,
            KillKey::CtrlRightBracket => 0x1d,
            KillKey::CtrlLetter(letter) => (letter as u8) & 0x1f,
        }
    }
}

impl fmt::Display for KillKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KillKey::Esc => f.write_str("esc"),
            KillKey::CtrlC => f.write_str("ctrl-c"),
            KillKey::CtrlBackslash => f.write_str("ctrl-\\"),
            KillKey::CtrlRightBracket => f.write_str("ctrl-]"),
            KillKey::CtrlLetter(letter) => write!(f, "ctrl-{letter}"),
        }
    }
}

/// Why a `pty.kill_key` value was refused.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum KillKeyError {
    #[error("unknown kill key {0:?}: expected esc, ctrl-\\, ctrl-] or ctrl-<letter>")]
    Unknown(String),
    #[error(
        "kill key {key:?} sends the same byte as {same_as}, so it could not be told apart; choose another key"
    )]
    Ambiguous { key: String, same_as: &'static str },
}

impl FromStr for KillKey {
    type Err = KillKeyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let key = text.trim().to_ascii_lowercase();
        if key == "esc" || key == "escape" {
            return Ok(KillKey::Esc);
        }
        let unknown = || KillKeyError::Unknown(text.to_string());
        let rest = ["ctrl-", "ctrl+", "c-"]
            .iter()
            .find_map(|prefix| key.strip_prefix(prefix))
            .ok_or_else(unknown)?;
        let ambiguous = |same_as| KillKeyError::Ambiguous {
            key: text.to_string(),
            same_as,
        };
        match rest {
            "[" => Ok(KillKey::Esc),
            "\\" => Ok(KillKey::CtrlBackslash),
            "]" => Ok(KillKey::CtrlRightBracket),
            "c" => Ok(KillKey::CtrlC),
            "h" => Err(ambiguous("Backspace")),
            "i" => Err(ambiguous("Tab")),
            "j" | "m" => Err(ambiguous("Enter")),
            letter if letter.len() == 1 && letter.as_bytes()[0].is_ascii_lowercase() => {
                Ok(KillKey::CtrlLetter(char::from(letter.as_bytes()[0])))
            }
            _ => Err(unknown()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_keys_parse_from_profile_strings() {
        let cases = [
            ("esc", KillKey::Esc),
            ("Escape", KillKey::Esc),
            ("ctrl-[", KillKey::Esc),
            ("ctrl-c", KillKey::CtrlC),
            ("CTRL+C", KillKey::CtrlC),
            ("ctrl-\\", KillKey::CtrlBackslash),
            ("ctrl-]", KillKey::CtrlRightBracket),
            ("c-g", KillKey::CtrlLetter('g')),
            (" ctrl-x ", KillKey::CtrlLetter('x')),
        ];
        for (text, key) in cases {
            assert_eq!(text.parse::<KillKey>(), Ok(key), "{text}");
        }
        for key in [
            KillKey::Esc,
            KillKey::CtrlBackslash,
            KillKey::CtrlLetter('x'),
        ] {
            assert_eq!(key.to_string().parse::<KillKey>(), Ok(key));
        }
        assert_eq!(KillKey::CtrlBackslash.byte(), 0x1c);
        assert_eq!(KillKey::CtrlLetter('x').byte(), 0x18);
    }

    #[test]
    fn bad_kill_keys_say_what_to_use() {
        let error = "alt-x".parse::<KillKey>().unwrap_err().to_string();
        assert!(
            error.contains("\"alt-x\"") && error.contains("ctrl-<letter>"),
            "{error}"
        );
        let error = "ctrl-m".parse::<KillKey>().unwrap_err().to_string();
        assert!(error.contains("Enter"), "{error}");
        for bad in ["", "ctrl-", "ctrl-1", "ctrl-ab", "f1"] {
            assert!(bad.parse::<KillKey>().is_err(), "{bad:?}");
        }
    }
}
