//! A simple command written back as one canonical line: its words as bash will pass
//! them (quotes and backslashes removed, variables, wrappers and aliases of the same
//! command resolved), each quoted only where it must be, then its redirections.
//! `deny` rules are matched against this text (docs/RULES.md), so `r\eboot`,
//! `"shut"down` and `x=reboot; $x` read `reboot` and `shutdown` like their plain
//! forms.

use super::expand::Field;
use super::walk::{Redirection, SimpleCommand};

/// `s` as one shell word: as is when it holds only characters that need no quoting,
/// else single-quoted.
pub fn quote_word(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.starts_with('~')
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || "_@%+=:,./-^".contains(c)
                || (!c.is_ascii() && !c.is_control())
        });
    if plain {
        s.to_string()
    } else {
        crate::display::quote(s)
    }
}

/// One field: a glob is written as its pattern, an unknown part as `…`.
pub fn field(f: &Field) -> String {
    if !f.known() {
        if f.text.is_empty() {
            return "…".to_string();
        }
        return quote_word(&f.text) + "…";
    }
    match &f.glob {
        Some(pattern) => pattern.clone(),
        None => quote_word(&f.text),
    }
}

fn redirection(r: &Redirection) -> String {
    let fd = r.fd.map(|n| n.to_string()).unwrap_or_default();
    let target = match (&r.target, &r.here) {
        (Some(t), _) => field(t),
        (None, Some(here)) => quote_word(here.strip_suffix('\n').unwrap_or(here)),
        (None, None) => "…".to_string(),
    };
    format!("{fd}{} {target}", r.op.as_str())
}

/// The canonical line of `cmd` (see the module docs).
pub fn render(cmd: &SimpleCommand) -> String {
    let mut out = String::new();
    for (i, f) in cmd.argv.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if i == 0 && f.known() && f.glob.is_none() {
            out.push_str(&quote_word(super::walk::program_name(&f.text)));
        } else {
            out.push_str(&field(f));
        }
    }
    for r in &cmd.redirects {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&redirection(r));
    }
    out
}
