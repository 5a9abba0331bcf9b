//! Which command words may change the shell: the bash builtins and keywords, the
//! harmless few among them, and the plain one-program commands whose run can skip
//! saving the session.

/// Bash builtins and keywords: as a command word, each may change the shell's state
/// (except the few in [`HARMLESS`]).
pub(super) const BUILTINS: &[&str] = &[
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "case",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "coproc",
    "declare",
    "dirs",
    "disown",
    "do",
    "done",
    "echo",
    "elif",
    "else",
    "enable",
    "esac",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "fi",
    "for",
    "function",
    "getopts",
    "hash",
    "help",
    "history",
    "if",
    "in",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "select",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "then",
    "time",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "until",
    "wait",
    "while",
];
pub(super) const HARMLESS: &[&str] = &[
    ":", "true", "false", "echo", "pwd", "test", "type", "times", "help",
];

/// The command word of `command` when it is one plain command — words of letters,
/// digits and `_ . / : @ % + , = -` separated by spaces, no expansion, quoting,
/// redirection, assignment or operator of any kind — whose word is not a builtin
/// or keyword that could change the shell. Such a command runs a program (or a
/// harmless builtin) and leaves the session as it was, unless the word names a
/// function or an alias, which only the shell can tell (it checks before skipping
/// the save).
pub fn plain_command_word(command: &str) -> Option<&str> {
    let c = command.trim_matches(' ');
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"_./:@%+,=- ".contains(&b);
    if c.is_empty() || !c.bytes().all(plain) {
        return None;
    }
    let word = c.split(' ').next()?;
    if word.contains(['=', '%']) || word.starts_with('-') {
        return None;
    }
    if changes_shell(word) {
        return None;
    }
    Some(word)
}

/// True when `word` is a builtin or keyword that may change the shell running it
/// (`cd`, `export`, `source`, …), rather than a harmless one or a program.
pub fn changes_shell(word: &str) -> bool {
    BUILTINS.contains(&word) && !HARMLESS.contains(&word)
}
