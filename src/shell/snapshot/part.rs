//! The snapshot cut to the part one command needs: which definitions a command
//! names, reaches through expansions or `eval`, or may change, and the smaller file
//! sourced in place of the whole snapshot.

use super::*;

pub(super) const MARK: &str = "# agentbash:";

/// Words that let a command reach definitions it does not name: expansions, `eval`,
/// sourcing, and the builtins that list, change or look up functions and aliases.
/// A command containing one sources the whole snapshot.
pub(super) fn reaches_everything(command: &str) -> bool {
    const DYNAMIC: &[&str] = &[
        "eval",
        "source",
        ".",
        "declare",
        "typeset",
        "local",
        "type",
        "command",
        "compgen",
        "complete",
        "alias",
        "unalias",
        "unset",
        "set",
        "export",
        "builtin",
        "hash",
        "enable",
        "trap",
        "readonly",
        "shopt",
        "caller",
        "mapfile",
        "readarray",
    ];
    command.contains(['$', '`']) || command_words(command).any(|w| DYNAMIC.contains(&w))
}

/// The words of a command, split as loosely as names may be written.
pub(super) fn command_words(command: &str) -> impl Iterator<Item = &str> {
    command
        .split(|c: char| c.is_whitespace() || ";|&(){}<>\"'=\\!,*?[]#~".contains(c))
        .filter(|w| !w.is_empty())
}

/// What a run sources from the snapshot.
#[derive(Debug, Clone, Default)]
pub struct Part {
    /// `None`: nothing to source.
    pub path: Option<PathBuf>,
    /// The functions and aliases it defines; `None`: all of them.
    pub names: Option<BTreeSet<String>>,
}

/// Whether `command` could define, change or remove a function or alias: it has
/// parentheses (`f() {...}`) or the `function` keyword, reaches anything dynamically
/// (see [`reaches_everything`]), or names one of `known` (a function can define
/// others). Conservative: a `false` is safe to rely on.
pub fn may_change_definitions<'a>(command: &str, known: impl IntoIterator<Item = &'a str>) -> bool {
    if command.contains(['(', ')']) || reaches_everything(command) {
        return true;
    }
    let words: BTreeSet<&str> = command_words(command).collect();
    words.contains("function") || known.into_iter().any(|k| words.contains(k))
}

impl Snapshot {
    /// What a run of `command` sources: the whole snapshot, or (the usual case) only
    /// the options and the functions and aliases the command names, with what they in
    /// turn name — bash parses every function it sources, about 10 µs each, on every
    /// run.
    pub fn part_for(&self, command: &str) -> Part {
        let all = Part {
            path: Some(self.path.clone()),
            names: None,
        };
        if reaches_everything(command) {
            return all;
        }
        let m = &self.meta;
        let mut wanted: BTreeSet<&str> = BTreeSet::new();
        let mut queue: Vec<&str> = command_words(command)
            .filter(|w| m.refs.contains_key(*w))
            .collect();
        while let Some(n) = queue.pop() {
            if wanted.insert(n) {
                queue.extend(m.refs.get(n).into_iter().flatten().map(String::as_str));
            }
        }
        let names = Some(wanted.iter().map(|n| n.to_string()).collect());
        if wanted.is_empty() && m.options.is_empty() {
            return Part { path: None, names };
        }
        match self.cut(&wanted) {
            Ok(p) => Part {
                path: Some(p),
                names,
            },
            // Changed since it was sealed: nothing of it is sourced.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Part {
                path: None,
                names: Some(BTreeSet::new()),
            },
            Err(_) => all,
        }
    }

    /// A file with the options and the `wanted` definitions (cached next to the
    /// snapshot, named after its content). A cached part is sourced only when it holds
    /// exactly what agentbash would write (as the snapshot, it may have been changed
    /// by whoever could write the cache); else it is written again.
    pub(super) fn cut(&self, wanted: &BTreeSet<&str>) -> std::io::Result<PathBuf> {
        let m = &self.meta;
        let (Some(dir), Some(stem)) = (
            self.path.parent(),
            self.path.file_stem().and_then(|s| s.to_str()),
        ) else {
            return Err(std::io::Error::other("snapshot path without a name"));
        };
        let names: Vec<&str> = wanted.iter().copied().collect();
        let tag = fnv64(format!("{}\0{}", m.content_hash, names.join("\0")).as_bytes());
        let part = dir.join(format!("{stem}.{tag:016x}.sh"));
        let memo_key = (
            self.sha256.clone(),
            names.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
        );
        let expected = with_memo(|memo| memo.parts.get(&memo_key).cloned()).flatten();
        if let Some(sha) = &expected
            && file_sha(&part).as_ref() == Some(sha)
        {
            return Ok(part);
        }
        let text = self.part_text(wanted)?;
        let sha = crate::ids::sha256_hex(text.as_bytes());
        with_memo(|memo| {
            if memo.parts.len() >= MEMO_CAP {
                memo.parts.clear();
            }
            memo.parts.insert(memo_key, sha.clone())
        });
        if file_sha(&part) != Some(sha) {
            write_private(&part, text.as_bytes())?;
        }
        Ok(part)
    }

    /// What the part with the `wanted` definitions holds, cut from the snapshot as
    /// sealed (a snapshot changed since is an error: the caller sources it whole,
    /// and the next run generates it again).
    pub(super) fn part_text(&self, wanted: &BTreeSet<&str>) -> std::io::Result<String> {
        let m = &self.meta;
        let full = crate::fsguard::read_text(
            &self.path,
            crate::fsguard::SNAPSHOT_CAP,
            crate::fsguard::Links::Refuse,
        )?;
        if crate::ids::sha256_hex(full.as_bytes()) != self.sha256 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the snapshot changed since it was sealed",
            ));
        }
        let mut out = String::from("unset BASH_ENV\n");
        out.extend(m.options.iter().map(|o| format!("{o}\n")));
        let mut keep = false;
        let mut aliases = false;
        for line in full.lines() {
            if let Some(rest) = line.strip_prefix(MARK) {
                let (kind, name) = rest.split_once(' ').unwrap_or((rest, ""));
                keep = wanted.contains(name);
                if keep && kind == "alias" && !aliases {
                    out.push_str("shopt -s expand_aliases\n");
                    aliases = true;
                }
            } else if keep {
                out.push_str(line);
                out.push('\n');
            }
        }
        Ok(out)
    }
}
