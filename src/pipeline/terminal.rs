//! Programs that need a terminal: editors, pagers, monitors, a REPL started without a
//! script, and `git commit` without a message.
//!
//! Print mode gives a command no terminal (stdin is the null device, no controlling
//! terminal), so such a program either ends at once with a terse error ("Standard input
//! is not a terminal", "failed tty get"), reads an empty script and exits, or waits
//! until the timeout (`executor::terminal_wait` ends that one within seconds). This
//! module knows them by name, for two things: with `--mode auto` and agentbash itself
//! on a terminal, such a command gets a PTY (the mode stage); and when one ended in
//! print mode, a notice names it and says how to give it a terminal.

use crate::executor::End;

/// Full-screen programs and interactive tools that need a terminal to be of any use.
const FULL_SCREEN: &[&str] = &[
    "vi", "vim", "nvim", "view", "vimdiff", "nano", "pico", "emacs", "micro", "hx", "helix", "joe",
    "mcedit", "less", "more", "most", "top", "htop", "btop", "atop", "iotop", "glances", "watch",
    "tig", "lazygit", "gitui", "mc", "ranger", "nnn", "vifm", "tmux", "screen", "mutt", "neomutt",
    "w3m", "lynx", "fzf", "dialog", "whiptail", "ncdu",
];

/// Programs that, started with no arguments at all, are an interactive prompt reading
/// commands from stdin.
const REPLS: &[&str] = &[
    "python", "python3", "ipython", "node", "irb", "ghci", "lua", "R", "sqlite3", "psql", "mysql",
    "bash", "sh", "zsh", "fish", "gdb", "bc",
];

/// What kind of program a command starts, when it needs a terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interactive {
    /// An editor, pager or monitor.
    FullScreen(String),
    /// A prompt started without a script.
    Repl(String),
    /// `git commit` with no message given: it asks an editor for one.
    GitCommit,
}

impl Interactive {
    /// The program's name, as the notice shows it.
    pub fn program(&self) -> &str {
        match self {
            Interactive::FullScreen(p) | Interactive::Repl(p) => p,
            Interactive::GitCommit => "git commit",
        }
    }
}

/// The interactive program `command` starts, when it is one simple command (no pipe,
/// list or redirection of stdin) that needs a terminal.
pub fn interactive_program(command: &str) -> Option<Interactive> {
    use crate::shell::parse::ast::{Command, RedirOp, Sep};
    let script = crate::shell::parse::parse(command).ok()?;
    let [item] = script.body.as_slice() else {
        return None;
    };
    if !item.and_or.rest.is_empty() || item.sep == Sep::Amp {
        return None;
    }
    let [stage] = item.and_or.first.stages.as_slice() else {
        return None;
    };
    let Command::Simple(simple) = &stage.command else {
        return None;
    };
    let reads_stdin = simple.redirects.iter().any(|r| {
        matches!(
            r.op,
            RedirOp::In
                | RedirOp::Heredoc
                | RedirOp::HereString
                | RedirOp::ReadWrite
                | RedirOp::DupIn
        ) && matches!(r.fd, None | Some(crate::shell::parse::ast::Fd::Number(0)))
    });
    if reads_stdin {
        return None;
    }
    let words: Vec<String> = simple
        .words
        .iter()
        .map(|w| {
            w.literal()
                .unwrap_or_else(|| script.src.get(w.span.clone()).unwrap_or("").to_string())
        })
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let (first, args) = words.split_first()?;
    let program = first.rsplit('/').next().unwrap_or(first);
    if FULL_SCREEN.contains(&program) {
        return Some(Interactive::FullScreen(program.to_string()));
    }
    if REPLS.contains(&program) && args.is_empty() {
        return Some(Interactive::Repl(program.to_string()));
    }
    if program == "git" && git_commit_asks_an_editor(args) {
        return Some(Interactive::GitCommit);
    }
    None
}

/// `git [options] commit …` with none of the options that give the message.
fn git_commit_asks_an_editor(args: &[&str]) -> bool {
    let Some(at) = args.iter().position(|a| *a == "commit") else {
        return false;
    };
    // Before the subcommand only options (`-C dir` and `-c k=v` take a value); a word
    // that is not one means `commit` is an argument of another subcommand.
    let mut i = 0;
    while i < at {
        match args[i] {
            "-C" | "-c" => i += 2,
            a if a.starts_with('-') => i += 1,
            _ => return false,
        }
    }
    !args[at + 1..].iter().any(|a| {
        let long = [
            "--message",
            "--file",
            "--no-edit",
            "--reuse-message",
            "--fixup",
            "--dry-run",
        ];
        long.iter().any(|l| a.starts_with(l))
            || (a.starts_with('-')
                && !a.starts_with("--")
                && a[1..].chars().any(|c| matches!(c, 'm' | 'F' | 'C')))
    })
}

/// How to give `command` a terminal: the two ways, as the caller types them.
fn give_it_a_terminal(command: &str) -> String {
    let command = crate::display::shell_word(command);
    format!(
        "Give it one: `agentbash run --pty -- {command}`, or start it as a job and type into it: `agentbash job start --pty -- {command}` and `agentbash job send` (MCP: `bash` with `background: true, pty: true`)"
    )
}

/// The notice for a run whose program needs a terminal, when print mode gave it none
/// and it ended by itself: at once with an error, or (a REPL) with nothing to read.
/// `None` for anything else (a program that read a script from its arguments, one
/// stopped for waiting — that has its own annotation).
pub fn hint(command: &str, end: &End, output: &str) -> Option<String> {
    let program = interactive_program(command)?;
    let code = match end {
        End::Exited(c) => *c,
        _ => return None,
    };
    match &program {
        Interactive::GitCommit if output.contains("empty commit message") => Some(format!(
            "[git commit asked an editor for the message, and the hardened environment's editor is `true`, so the message was empty. Give it with `-m \"…\"` (or edit it in a terminal: `agentbash run --pty -e GIT_EDITOR=vim -- {}`)]",
            crate::display::shell_word(command)
        )),
        Interactive::GitCommit => None,
        Interactive::Repl(p) if code == 0 => Some(format!(
            "[{p} started without a script reads its commands from stdin, which is the null device here, so it ended at once. {}]",
            give_it_a_terminal(command)
        )),
        Interactive::FullScreen(p) | Interactive::Repl(p) if code != 0 => Some(format!(
            "[{p} needs a terminal, and print mode has none (stdin is the null device). {}]",
            give_it_a_terminal(command)
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_what_needs_a_terminal() {
        let cases: &[(&str, Option<&str>)] = &[
            ("vim notes.txt", Some("vim")),
            ("/usr/bin/nano a", Some("nano")),
            ("EDITOR=x less README.md", Some("less")),
            ("top", Some("top")),
            ("python3", Some("python3")),
            ("git commit", Some("git commit")),
            ("git -C repo commit --amend", Some("git commit")),
            ("git commit -am 'x'", None),
            ("git commit -m x", None),
            ("git commit --message=x", None),
            ("git commit -F msg.txt", None),
            ("git commit --no-edit --amend", None),
            ("git log --grep commit", None),
            ("python3 script.py", None),
            ("python3 -c 'print(1)'", None),
            ("cat notes.txt | less", None),
            ("vim notes.txt; echo done", None),
            ("python3 < script.py", None),
            ("ls -la", None),
            ("echo vim", None),
        ];
        for (command, want) in cases {
            let got = interactive_program(command);
            assert_eq!(got.as_ref().map(Interactive::program), *want, "{command}");
        }
    }

    #[test]
    fn hints_only_for_programs_that_ended_without_a_terminal() {
        let nano = hint(
            "nano notes.txt",
            &End::Exited(1),
            "Standard input is not a terminal\n",
        )
        .expect("a hint");
        assert!(
            nano.starts_with("[nano needs a terminal, and print mode has none")
                && nano.contains("`agentbash run --pty -- 'nano notes.txt'`")
                && nano.contains("`agentbash job start --pty -- 'nano notes.txt'`"),
            "{nano}"
        );
        let py = hint("python3", &End::Exited(0), "").expect("a hint");
        assert!(py.starts_with("[python3 started without a script"), "{py}");
        assert!(
            hint(
                "git commit",
                &End::Exited(1),
                "Aborting commit due to empty commit message.\n"
            )
            .is_some_and(|h| h.contains("Give it with `-m"))
        );
        assert_eq!(hint("less README.md", &End::Exited(0), "text\n"), None);
        assert_eq!(hint("ls", &End::Exited(2), ""), None);
        assert_eq!(hint("vim x", &End::TimedOut, ""), None);
    }
}
