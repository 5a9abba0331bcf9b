//! Command-line options the way GNU getopt reads them: short clusters (`-rf`,
//! `-iu root`), `--long=value`, and any unambiguous prefix of a long option
//! (`rm --recur` is `rm --recursive`). Both the wrappers the walker looks through and
//! the guard's destructive programs are read with it.

/// Whether an option takes an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    No,
    /// In the same word (`-ofile`, `--out=file`) or the next one.
    Required,
    /// Only in the same word (`-m/proc/1/ns/mnt`, `--root=/mnt`).
    Optional,
}

/// How a program reads its options.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Short options that take a required argument.
    pub short_args: &'static str,
    /// Short options whose argument is optional (attached only).
    pub short_optional: &'static str,
    pub long: &'static [(&'static str, Arg)],
    /// Options end at the first operand (a wrapper: what follows is the command);
    /// otherwise, as GNU tools do, options may follow operands until `--`.
    pub stop_at_operand: bool,
    /// `NAME=value` words before the operands are assignments (`env`, `sudo`).
    pub assignments: bool,
    /// `-5` is an option (`nice -5`), not an operand.
    pub numeric_options: bool,
}

impl Spec {
    pub const fn new(short_args: &'static str, long: &'static [(&'static str, Arg)]) -> Self {
        Spec {
            short_args,
            short_optional: "",
            long,
            stop_at_operand: false,
            assignments: false,
            numeric_options: false,
        }
    }

    pub const fn wrapper(short_args: &'static str, long: &'static [(&'static str, Arg)]) -> Self {
        Spec {
            stop_at_operand: true,
            ..Spec::new(short_args, long)
        }
    }
}

/// One option found on a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// `-x` for a short option, `--name` (the full name, prefixes resolved) for a long
    /// one; an unknown or ambiguous long option keeps what was written.
    pub name: String,
    pub value: Option<String>,
}

impl Opt {
    pub fn is(&self, short: char, long: &str) -> bool {
        self.name == format!("-{short}") || self.name == long
    }
}

/// The options and operands of a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scanned {
    pub opts: Vec<Opt>,
    /// Indices of the operands (and of `NAME=value` words, see `assignments`).
    pub operands: Vec<usize>,
    pub assignments: Vec<usize>,
    /// With `stop_at_operand`: the index of the first word after the options.
    pub end: usize,
}

impl Scanned {
    pub fn has(&self, short: char, long: &str) -> bool {
        self.opts.iter().any(|o| o.is(short, long))
    }

    pub fn value(&self, short: char, long: &str) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|o| o.is(short, long))
            .and_then(|o| o.value.as_deref())
    }
}

/// The full name of the long option `name` (without `--`) abbreviates, if exactly one.
pub fn resolve_long(name: &str, table: &[(&'static str, Arg)]) -> Option<(&'static str, Arg)> {
    if let Some(&(n, a)) = table.iter().find(|(n, _)| *n == name) {
        return Some((n, a));
    }
    if name.is_empty() {
        return None;
    }
    let mut found = None;
    for &(n, a) in table {
        if n.starts_with(name) {
            if found.is_some() {
                return None;
            }
            found = Some((n, a));
        }
    }
    found
}

fn is_assignment(s: &str) -> bool {
    s.split_once('=')
        .is_some_and(|(n, _)| super::parser::valid_name(n.strip_suffix('+').unwrap_or(n)))
}

/// Reads `words` (the program's arguments, without the program name) by `spec`.
/// `opaque(i)` says a word's value is unknown before the command runs: it is an
/// operand, never an option.
pub fn scan(words: &[&str], spec: &Spec, opaque: impl Fn(usize) -> bool) -> Scanned {
    let mut out = Scanned::default();
    let mut i = 0;
    let mut only_operands = false;
    while i < words.len() {
        let w = words[i];
        if only_operands || opaque(i) {
            if spec.stop_at_operand && !only_operands {
                break;
            }
            out.operands.push(i);
            i += 1;
            continue;
        }
        if w == "--" {
            i += 1;
            if spec.stop_at_operand {
                break;
            }
            only_operands = true;
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            match resolve_long(name, spec.long) {
                Some((full, arg)) => {
                    let value = match (arg, attached) {
                        (Arg::No, _) => None,
                        (_, Some(v)) => Some(v),
                        (Arg::Required, None) => {
                            i += 1;
                            words.get(i).map(|s| s.to_string())
                        }
                        (Arg::Optional, None) => None,
                    };
                    out.opts.push(Opt {
                        name: format!("--{full}"),
                        value,
                    });
                }
                None => out.opts.push(Opt {
                    name: format!("--{name}"),
                    value: attached,
                }),
            }
            i += 1;
            continue;
        }
        let numeric =
            spec.numeric_options && w.len() > 1 && w[1..].bytes().all(|c| c.is_ascii_digit());
        if w.len() > 1 && w.starts_with('-') && !numeric {
            let chars: Vec<char> = w[1..].chars().collect();
            let mut k = 0;
            while let Some(&c) = chars.get(k) {
                k += 1;
                if spec.short_args.contains(c) {
                    let rest: String = chars[k..].iter().collect();
                    let value = if rest.is_empty() {
                        i += 1;
                        words.get(i).map(|s| s.to_string())
                    } else {
                        Some(rest)
                    };
                    out.opts.push(Opt {
                        name: format!("-{c}"),
                        value,
                    });
                    break;
                }
                if spec.short_optional.contains(c) {
                    let rest: String = chars[k..].iter().collect();
                    out.opts.push(Opt {
                        name: format!("-{c}"),
                        value: (!rest.is_empty()).then_some(rest),
                    });
                    break;
                }
                out.opts.push(Opt {
                    name: format!("-{c}"),
                    value: None,
                });
            }
            i += 1;
            continue;
        }
        if numeric {
            out.opts.push(Opt {
                name: w.to_string(),
                value: None,
            });
            i += 1;
            continue;
        }
        if spec.assignments && out.operands.is_empty() && is_assignment(w) {
            out.assignments.push(i);
            i += 1;
            continue;
        }
        if spec.stop_at_operand {
            break;
        }
        out.operands.push(i);
        i += 1;
    }
    out.end = i.min(words.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RM: Spec = Spec::new(
        "",
        &[
            ("recursive", Arg::No),
            ("force", Arg::No),
            ("dir", Arg::No),
            ("no-preserve-root", Arg::No),
            ("preserve-root", Arg::Optional),
            ("interactive", Arg::Optional),
            ("one-file-system", Arg::No),
            ("verbose", Arg::No),
        ],
    );

    fn names(words: &[&str], spec: &Spec) -> (Vec<String>, Vec<usize>) {
        let s = scan(words, spec, |_| false);
        (s.opts.into_iter().map(|o| o.name).collect(), s.operands)
    }

    #[test]
    fn long_prefixes_resolve_when_unambiguous() {
        assert_eq!(names(&["--recur", "x"], &RM).0, ["--recursive"]);
        assert_eq!(names(&["--r", "x"], &RM).0, ["--recursive"]);
        assert_eq!(names(&["--no", "/"], &RM).0, ["--no-preserve-root"]);
        // `--p` could only be --preserve-root; `--d` only --dir.
        assert_eq!(names(&["--d"], &RM).0, ["--dir"]);
        // GNU permutes: options after operands still count, until `--`.
        assert_eq!(
            names(&["/", "-rf"], &RM),
            (vec!["-r".into(), "-f".into()], vec![0])
        );
        assert_eq!(names(&["--", "-rf"], &RM), (vec![], vec![1]));
    }

    #[test]
    fn clusters_take_their_argument() {
        const SUDO: Spec = Spec {
            assignments: true,
            ..Spec::wrapper(
                "ugpCDhrtUTR",
                &[("user", Arg::Required), ("chdir", Arg::Required)],
            )
        };
        let s = scan(&["-iu", "root", "X=1", "rm", "-rf", "/"], &SUDO, |_| false);
        assert_eq!(s.end, 3);
        assert_eq!(s.value('u', "--user"), Some("root"));
        assert!(s.has('i', "--login"));
        assert_eq!(s.assignments, [2]);
        let s = scan(&["--ch=/tmp", "ls"], &SUDO, |_| false);
        assert_eq!((s.value('D', "--chdir"), s.end), (Some("/tmp"), 1));
    }
}
