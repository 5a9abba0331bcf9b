//! The bash side of state capture: a function that writes the shell's state into a
//! file as sections separated by `\n<delim> <section>\n` lines, and its parser.

use std::collections::BTreeMap;

/// What to capture.
#[derive(Debug, Clone, Copy)]
pub struct Sections {
    pub cwd: bool,
    /// Exported variables (raw values) and the other shell variables (`declare -p`).
    pub variables: bool,
    pub options: bool,
    /// Functions and aliases only when the function's third argument is `1`
    /// (otherwise always).
    pub definitions_on_request: bool,
}

/// Names the dump function uses for itself; never saved.
pub const OWN_PREFIX: &str = "__agentbash_";

/// Builtins the generated bash relies on, or that a command expects to behave as
/// documented. A function takes precedence over a builtin of the same name, and
/// neither `builtin` nor a backslash gets past a function named `builtin`, so a
/// user's `builtin() { … }` would break every save. Such functions are removed
/// (see [`unshadow`]) before anything of ours runs, and never carried.
pub const MACHINERY_BUILTINS: &[&str] = &[
    "builtin", "command", "declare", "typeset", "local", "export", "unset", "set", "shopt", "trap",
    "eval", "exec", "source", ".", "return", "exit", "printf", "echo", "read", "type", "hash",
    "alias", "unalias", "enable", "test", "[",
];

/// Bash that removes functions named like [`MACHINERY_BUILTINS`]. In POSIX mode
/// (entered by assigning `POSIXLY_CORRECT`, which no function can intercept)
/// `unset` is a special builtin, found before any function. Leaving POSIX mode
/// keeps the `inherit_errexit` it turned on: that is put back too.
///
/// With `record`, the names that were functions are first appended, one per line,
/// to that variable (`export -f` fails for a name that is not a function, and is
/// a special builtin too).
pub fn unshadow(record: Option<&str>) -> String {
    // Words without quotes, so that the text also fits in a single-quoted trap.
    let names: Vec<&str> = MACHINERY_BUILTINS
        .iter()
        .map(|n| if *n == "[" { "\\[" } else { n })
        .collect();
    let names = names.join(" ");
    let find = record.map_or_else(String::new, |var| {
        format!(
            "for __agentbash_n in {names}; do export -f -- \"$__agentbash_n\" 2>/dev/null && {var}=\"${var}$__agentbash_n\n\"; done; "
        )
    });
    format!(
        "__agentbash_px=\"${{POSIXLY_CORRECT+x}}:$BASHOPTS:\"; POSIXLY_CORRECT=y; {find}unset -f -- {names} 2>/dev/null; \
         case $__agentbash_px in x*) ;; *) unset POSIXLY_CORRECT; case $__agentbash_px in *:inherit_errexit:*) ;; *) builtin shopt -u inherit_errexit;; esac;; esac\n"
    )
}

/// The bash function `name FILE STATUS [DEFINITIONS]` that writes the dump.
pub fn function(name: &str, delim: &str, what: Sections) -> String {
    let mut body = String::new();
    // Only into a file agentbash made for this dump (0600, and removed once read): a
    // shell that exits after its last command was committed (its EXIT trap) writes
    // nothing, rather than leave a file of its umask's mode behind.
    body.push_str(&format!(
        "{name}() {{\n  {}  local __agentbash_f=\"$1\" __agentbash_s=\"$2\" __agentbash_n __agentbash_a __agentbash_o\n  builtin [ -f \"$__agentbash_f\" ] || builtin return 0\n",
        unshadow(None)
    ));
    if what.options {
        // Before anything changes them.
        // A command substitution clears -e (outside POSIX mode): take it from $-.
        body.push_str("  __agentbash_o=\"$(builtin shopt -p; builtin set +o)\"\n  case $- in *e*) __agentbash_o=\"$__agentbash_o\nset -o errexit\";; esac\n");
    }
    body.push_str("  builtin set +euvx\n  {\n");
    let d = delim;
    body.push_str(&format!(
        "    builtin printf '\\n{d} status %s\\n' \"$__agentbash_s\"\n"
    ));
    if what.cwd {
        body.push_str(&format!("    builtin printf '\\n{d} cwd\\n%s' \"$PWD\"\n"));
    }
    if what.variables {
        // One `declare -p` is far cheaper than visiting variables one by one.
        body.push_str(&format!(
            "    builtin printf '\\n{d} variables\\n'; builtin declare -p\n"
        ));
    }
    // Printing every function is the costly part of a dump; a caller that knows
    // none can have changed asks for it to be left out.
    let (open, close) = if what.definitions_on_request {
        ("    if [ \"$3\" = 1 ]; then\n", "    fi\n")
    } else {
        ("", "")
    };
    body.push_str(open);
    body.push_str(&format!(
        "    builtin printf '\\n{d} functions\\n'; builtin declare -f\n"
    ));
    body.push_str(&format!(
        "    builtin printf '\\n{d} function-names\\n'; builtin declare -F\n"
    ));
    body.push_str(&format!(
        "    builtin printf '\\n{d} aliases\\n'; builtin alias -p\n"
    ));
    body.push_str(close);
    if what.options {
        body.push_str(&format!(
            "    builtin printf '\\n{d} options\\n%s\\n' \"$__agentbash_o\"\n"
        ));
    }
    body.push_str(&format!("    builtin printf '\\n{d} end\\n'\n"));
    body.push_str("  } >| \"$__agentbash_f\" 2>/dev/null\n}\n");
    body
}

/// A parsed dump.
#[derive(Debug, Default, Clone)]
pub struct Dump {
    /// The status argument given to the dump function.
    pub status: String,
    pub cwd: Option<String>,
    /// Exported variables with their exact values.
    pub exported: BTreeMap<String, String>,
    /// Other shell variables: name → `declare -p` text.
    pub variables: BTreeMap<String, String>,
    /// name → definition as `declare -f` prints it (export lines removed).
    pub functions: BTreeMap<String, String>,
    /// name → `alias name='value'` line.
    pub aliases: BTreeMap<String, String>,
    /// `shopt -p` / `set +o` lines.
    pub options: Vec<String>,
    /// The file ended with its `end` section (it was not cut short).
    pub complete: bool,
    /// Functions and aliases were dumped.
    pub has_definitions: bool,
    /// Sections present in the file (extra ones are ignored).
    pub extra: BTreeMap<String, String>,
}

/// Parse a dump written with `delim`. Unknown sections are kept in `extra`.
pub fn parse(text: &str, delim: &str) -> Dump {
    let sep = format!("\n{delim} ");
    let mut d = Dump::default();
    let mut function_text = None;
    let mut function_names = None;
    for piece in text.split(&sep).skip(1) {
        let (header, body) = piece.split_once('\n').unwrap_or((piece, ""));
        let mut words = header.splitn(2, ' ');
        let kind = words.next().unwrap_or("");
        let arg = words.next().unwrap_or("");
        match kind {
            "status" => d.status = arg.to_string(),
            "cwd" => d.cwd = Some(body.to_string()),
            "variables" => {
                for v in parse_declare(body) {
                    if v.flags.contains('x') {
                        if let (Some(value), false) = (v.value, v.flags.contains(['a', 'A'])) {
                            d.exported.insert(v.name, value);
                        }
                    } else if !v.flags.contains('r') {
                        d.variables.insert(v.name, v.line);
                    }
                }
            }
            "functions" => {
                d.has_definitions = true;
                function_text = Some(body.to_string());
            }
            "function-names" => function_names = Some(body.to_string()),
            "aliases" => d.aliases = parse_aliases(body),
            "options" => {
                d.options = body
                    .lines()
                    .map(str::to_string)
                    .filter(|l| !l.is_empty())
                    .collect();
            }
            "end" => d.complete = true,
            other => {
                d.extra.insert(
                    format!("{other} {arg}").trim().to_string(),
                    body.to_string(),
                );
            }
        }
    }
    if let (Some(t), Some(n)) = (function_text, function_names) {
        d.functions = split_functions(&t, &n);
    }
    d
}

/// One entry of `declare -p` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    pub name: String,
    /// Attribute letters (`-` for none): `x` exported, `r` readonly, `a`/`A` arrays.
    pub flags: String,
    /// The whole entry, which re-creates the variable when sourced.
    pub line: String,
    /// A scalar's value, unquoted (`None` for arrays and unset variables).
    pub value: Option<String>,
}

/// Parse `declare -p` output. Values are quoted (`"..."`, `$'...'`, `'...'`,
/// arrays in parentheses), so an entry ends at the first newline outside quotes
/// whatever the value holds.
pub fn parse_declare(text: &str) -> Vec<Declared> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !text[i..].starts_with("declare -") {
            i += text[i..].find('\n').map_or(b.len() - i, |n| n + 1);
            continue;
        }
        let start = i;
        i += "declare ".len();
        let flags_end = text[i..].find(' ').map_or(b.len(), |n| i + n);
        let flags = text[i..flags_end].trim_start_matches('-').to_string();
        i = (flags_end + 1).min(b.len());
        let name_end = text[i..].find(['=', '\n']).map_or(b.len(), |n| i + n);
        let name = text[i..name_end].to_string();
        i = name_end;
        let mut value = None;
        if i < b.len() && b[i] == b'=' {
            let (v, end) = parse_value(b, i + 1);
            value = v.map(|v| String::from_utf8_lossy(&v).into_owned());
            i = end;
        }
        out.push(Declared {
            name,
            flags: if flags.is_empty() { "-".into() } else { flags },
            line: text[start..i].to_string(),
            value,
        });
        i += 1;
    }
    out
}

/// A value starting at `i`: (the unquoted scalar, or `None` for an array; index of
/// the newline ending the entry).
fn parse_value(b: &[u8], mut i: usize) -> (Option<Vec<u8>>, usize) {
    let mut v = Vec::new();
    let mut scalar = true;
    let mut depth = 0usize;
    while i < b.len() && (b[i] != b'\n' || depth > 0) {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\'
                        && i + 1 < b.len()
                        && matches!(b[i + 1], b'"' | b'\\' | b'$' | b'`' | b'\n')
                    {
                        if b[i + 1] != b'\n' {
                            v.push(b[i + 1]);
                        }
                        i += 2;
                    } else {
                        v.push(b[i]);
                        i += 1;
                    }
                }
                i += 1;
            }
            b'$' if b.get(i + 1) == Some(&b'\'') => i = ansi_c(b, i + 2, &mut v),
            b'\'' => {
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    v.push(b[i]);
                    i += 1;
                }
                i += 1;
            }
            b'(' => {
                scalar = false;
                depth += 1;
                i += 1;
            }
            b')' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            c => {
                v.push(c);
                i += 1;
            }
        }
    }
    (scalar.then_some(v), i.min(b.len()))
}

/// Decode `$'...'` from just after the opening quote; returns the index after the
/// closing one.
fn ansi_c(b: &[u8], mut i: usize, v: &mut Vec<u8>) -> usize {
    let digits = |b: &[u8], i: usize, max: usize, radix: u32| {
        let mut n = 0u32;
        let mut k = 0;
        while k < max && i + k < b.len() && (b[i + k] as char).is_digit(radix) {
            n = n * radix + (b[i + k] as char).to_digit(radix).unwrap_or(0);
            k += 1;
        }
        (n, k)
    };
    while i < b.len() && b[i] != b'\'' {
        if b[i] != b'\\' || i + 1 >= b.len() {
            v.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        match c {
            b'a' => v.push(7),
            b'b' => v.push(8),
            b'e' | b'E' => v.push(27),
            b'f' => v.push(12),
            b'n' => v.push(b'\n'),
            b'r' => v.push(b'\r'),
            b't' => v.push(b'\t'),
            b'v' => v.push(11),
            b'0'..=b'7' => {
                let (n, k) = digits(b, i - 1, 3, 8);
                v.push(n as u8);
                i += k - 1;
            }
            b'x' | b'u' | b'U' => {
                let max = match c {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let (n, k) = digits(b, i, max, 16);
                if k == 0 {
                    v.extend_from_slice(&[b'\\', c]);
                } else if c == b'x' {
                    v.push(n as u8);
                } else {
                    let mut buf = [0u8; 4];
                    v.extend_from_slice(
                        char::from_u32(n)
                            .unwrap_or('\u{fffd}')
                            .encode_utf8(&mut buf)
                            .as_bytes(),
                    );
                }
                i += k;
            }
            b'c' if i < b.len() => {
                v.push(b[i] & 0x1f);
                i += 1;
            }
            other => v.push(other),
        }
    }
    i + 1
}

/// Parse a dump whatever its delimiter (the first line names it).
pub fn parse_any(text: &str) -> Dump {
    let first = text
        .trim_start_matches('\n')
        .split(' ')
        .next()
        .unwrap_or("");
    if first.starts_with("__AGENTBASH_") {
        parse(text, first)
    } else {
        Dump::default()
    }
}

/// Split `declare -f` output into functions, using the `declare -F` name list
/// (both sorted the same way) to find where each definition starts.
pub fn split_functions(text: &str, names: &str) -> BTreeMap<String, String> {
    let names: Vec<(String, bool)> = names
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("declare -f")?;
            let (flags, name) = rest.split_once(' ')?;
            Some((name.to_string(), flags.contains('x')))
        })
        .collect();
    let mut out = BTreeMap::new();
    let mut starts = Vec::new();
    let mut from = 0;
    for (name, _) in &names {
        let header = format!("{name} () \n{{ \n");
        let found = if text[from..].starts_with(&header) {
            Some(from)
        } else {
            text[from..]
                .find(&format!("\n{header}"))
                .map(|i| from + i + 1)
        };
        match found {
            Some(i) => {
                starts.push((name.clone(), i));
                from = i + header.len();
            }
            None => starts.push((name.clone(), usize::MAX)),
        }
    }
    let found: Vec<(String, usize)> = starts
        .into_iter()
        .filter(|(_, i)| *i != usize::MAX)
        .collect();
    for (k, (name, start)) in found.iter().enumerate() {
        let end = found.get(k + 1).map(|(_, i)| *i).unwrap_or(text.len());
        let mut def = text[*start..end].trim_end_matches('\n').to_string();
        let export_line = format!("\ndeclare -fx {name}");
        if def.ends_with(&export_line) {
            def.truncate(def.len() - export_line.len());
        }
        out.insert(name.clone(), def);
    }
    out
}

/// Parse `alias -p` output: `alias NAME='value'` entries, values possibly spanning
/// lines, quotes escaped as `'\''`.
pub fn parse_aliases(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !text[i..].starts_with("alias ") {
            // Skip to the next line.
            match text[i..].find('\n') {
                Some(j) => i += j + 1,
                None => break,
            }
            continue;
        }
        let start = i;
        let Some(eq) = text[i..].find('=') else { break };
        let name = text[i + 6..i + eq].trim_start_matches("-- ").to_string();
        let mut j = i + eq + 1;
        // A sequence of '...' and \' pieces, ending at a newline outside quotes.
        loop {
            if j >= b.len() || b[j] == b'\n' {
                break;
            }
            if b[j] == b'\'' {
                match text[j + 1..].find('\'') {
                    Some(k) => j += k + 2,
                    None => {
                        j = b.len();
                        break;
                    }
                }
            } else if b[j] == b'\\' {
                j += 2;
            } else {
                j += 1;
            }
        }
        let end = j.min(b.len());
        out.insert(name, text[start..end].to_string());
        i = end + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_functions_even_with_lookalike_lines() {
        let text = "f () \n{ \n    cat <<EOF\n}\ng () \nEOF\n\n}\ng () \n{ \n    :\n}\ndeclare -fx g\nh-x () \n{ \n    :\n}\n";
        let names = "declare -f f\ndeclare -fx g\ndeclare -f h-x\n";
        let m = split_functions(text, names);
        assert_eq!(m.len(), 3);
        assert!(m["f"].contains("g () \nEOF"));
        assert_eq!(m["g"], "g () \n{ \n    :\n}");
        assert_eq!(m["h-x"], "h-x () \n{ \n    :\n}");
    }

    #[test]
    fn parses_aliases() {
        let m = parse_aliases("alias a1='echo '\\''x'\\''\ny'\nalias ll='ls -l'\n");
        assert_eq!(m["a1"], "alias a1='echo '\\''x'\\''\ny'");
        assert_eq!(m["ll"], "alias ll='ls -l'");
    }

    #[test]
    fn parses_sections() {
        let d = "D";
        let text = "\nD status 3\n\nD cwd\n/tmp/x y\nD variables\ndeclare -x PATH=\"/bin\"\ndeclare -x MULTI=$'a\\nb'\ndeclare -a arr=([0]=\"1\")\ndeclare -r RO=\"1\"\n\nD functions\n\nD function-names\n\nD aliases\n\nD end\n";
        let p = parse(text, d);
        assert_eq!(p.status, "3");
        assert_eq!(p.cwd.as_deref(), Some("/tmp/x y"));
        assert_eq!(p.exported["PATH"], "/bin");
        assert_eq!(p.exported["MULTI"], "a\nb");
        assert_eq!(p.variables["arr"], "declare -a arr=([0]=\"1\")");
        assert!(!p.variables.contains_key("RO"));
        assert!(p.complete);
    }

    #[test]
    fn declare_values_round_trip_through_real_bash() {
        // Every awkward value bash can hold, printed by bash and read back.
        let values = [
            "plain",
            "",
            "two words",
            "q\"uote",
            "back\\slash",
            "dol$lar",
            "back`tick",
            "new\nline",
            "tab\there",
            "\u{1}ctrl\u{7f}",
            "héllo wörld",
            "'single'",
            "$'not-ansi'",
            "a=b",
            "trailing\\",
        ];
        let mut script = String::new();
        for (k, v) in values.iter().enumerate() {
            script.push_str(&format!("export V{k}={}\n", crate::display::quote(v)));
        }
        script.push_str(
            "declare -a arr=(\"x y\" $'z\\n'); declare -A as=([k]=v); declare -i n=5; declare -p\n",
        );
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(&script)
            .output()
            .expect("bash");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let decl = parse_declare(&text);
        for (k, v) in values.iter().enumerate() {
            let e = decl
                .iter()
                .find(|d| d.name == format!("V{k}"))
                .expect("declared");
            assert_eq!(e.value.as_deref(), Some(*v), "V{k} from {:?}", e.line);
            assert!(e.flags.contains('x'));
        }
        let arr = decl.iter().find(|d| d.name == "arr").expect("arr");
        assert_eq!(arr.value, None);
        assert!(arr.line.starts_with("declare -a arr=("));
        assert!(decl.iter().any(|d| d.name == "as" && d.flags == "A"));
        assert!(
            decl.iter()
                .any(|d| d.name == "n" && d.value.as_deref() == Some("5"))
        );
    }
}
