//! `run` and `explain` lines read without building clap's model.
//!
//! Those two are nearly every line agentbash is started with. clap reads a line by
//! first building the whole `run` definition (every argument, its value parser, its
//! conflicts), which was about a quarter of the instructions of a `run -q -- true` and
//! pulls its code in page by page (docs/BENCHMARKS.md). This reader takes every option
//! of `run` and `explain` in the forms agents and scripts type them: `-x VALUE`,
//! `--name VALUE`, `--name=VALUE`, flags one by one, then `--` or the first word that is
//! not an option, and the command from there. Anything else — options joined
//! (`-qp x`), `-xVALUE`, a value that starts with `-`, a single-valued option or a
//! flag given twice, options that conflict, a value clap would reject, text that is
//! not UTF-8, `--help` — returns `None`, and clap parses the line as before, with its
//! own messages. Its answer is the `Cli` clap would give: unit tests hold the two
//! equal over a list of lines and over generated ones.

use super::{Cli, ColorArg, Command, Deferred, RunArgs};
use clap::ValueEnum;
use std::ffi::OsString;

/// The `Cli` for `args` (argv, program name first) when it is a `run` or `explain`
/// line this reader takes; `None` hands it to clap. `env_profile` is
/// `AGENTBASH_PROFILE`, which clap reads when no `--profile` is given.
pub(super) fn common(args: &[OsString], env_profile: Option<OsString>) -> Option<Cli> {
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str())
        .collect::<Option<_>>()?;
    let (&sub, mut rest) = words.split_first()?;
    let explain = match sub {
        "run" => false,
        "explain" => true,
        _ => return None,
    };
    let mut run = empty_run_args();
    let mut color = None;
    // Options until `--` or the first word that is not one: the command from there.
    while let Some((&word, after)) = rest.split_first() {
        rest = after;
        if word == "--" {
            break;
        }
        if !word.starts_with('-') {
            rest = &words[words.len() - after.len() - 1..];
            break;
        }
        if let Some(flag) = flag(&mut run, word) {
            if std::mem::replace(flag, true) {
                return None;
            }
            continue;
        }
        // `-x VALUE`, `--name VALUE` or `--name=VALUE`.
        let (name, value) = match word.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, value),
            _ => {
                let (&value, after) = rest.split_first()?;
                rest = after;
                (word, value)
            }
        };
        // clap takes a value that starts with `-` only as a negative timeout.
        let timeout = matches!(name, "-t" | "--timeout");
        let negative = || value[1..].bytes().all(|b| b.is_ascii_digit()) && value.len() > 1;
        if value.is_empty() || (value.starts_with('-') && !(timeout && negative())) {
            return None;
        }
        let r = &mut run;
        match name {
            "-p" | "--profile" => once(&mut r.profile, value.to_string()),
            "--target" => once(&mut r.target, value.to_string()),
            "-C" | "--cwd" => once(&mut r.cwd, value.into()),
            "-t" | "--timeout" => once(&mut r.timeout, super::parse_timeout(value).ok()?),
            "--head" => once(&mut r.head, super::parse_line_count(value).ok()?),
            "--tail" => once(&mut r.tail, super::parse_line_count(value).ok()?),
            "--mode" => once(&mut r.mode, choice(value)?),
            "--format" => once(&mut r.format, choice(value)?),
            "--color" => once(&mut color, choice(value)?),
            "--sandbox" => once(&mut r.sandbox, choice(value)?),
            "--stderr" => once(&mut r.stderr, choice(value)?),
            "-s" | "--session" => once(&mut r.session, super::parse_session_name(value).ok()?),
            "--tools" => {
                let tools = r.tools.get_or_insert_with(Vec::new);
                tools.extend(value.split(',').map(str::to_string));
                Some(())
            }
            "-e" | "--env" => {
                r.env.push(super::parse_env_pair(value).ok()?);
                Some(())
            }
            _ => None,
        }?;
    }
    let conflict = (run.mode.is_some() && (run.pty || run.no_pty))
        || (run.pty && run.no_pty)
        || (run.format.is_some() && run.json);
    if rest.is_empty() || conflict {
        return None;
    }
    run.color = color.unwrap_or(ColorArg::Auto);
    if run.profile.is_none()
        && let Some(p) = env_profile
    {
        run.profile = Some(p.into_string().ok().filter(|p| !p.is_empty())?);
    }
    run.command = rest.iter().map(|w| w.to_string()).collect();
    let command = if explain {
        Command::Explain(Deferred(run))
    } else {
        Command::Run(Deferred(run))
    };
    Some(Cli { command })
}

/// The flag `word` names, if it is one.
fn flag<'a>(run: &'a mut RunArgs, word: &str) -> Option<&'a mut bool> {
    Some(match word {
        "-q" | "--quiet" => &mut run.quiet,
        "--json" => &mut run.json,
        "--pty" => &mut run.pty,
        "--no-pty" => &mut run.no_pty,
        "--no-intercept" => &mut run.no_intercept,
        "--stdin" => &mut run.stdin,
        "--expand" => &mut run.expand,
        "--stream" => &mut run.stream,
        _ => return None,
    })
}

/// A single-valued option's value; `None` when it was given before (clap refuses that).
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// One of an option's values, matched as clap matches them.
fn choice<T: ValueEnum>(value: &str) -> Option<T> {
    T::from_str(value, false).ok()
}

/// `run`'s options as clap leaves them when none is given.
fn empty_run_args() -> RunArgs {
    RunArgs {
        profile: None,
        target: None,
        cwd: None,
        timeout: None,
        head: None,
        tail: None,
        mode: None,
        pty: false,
        no_pty: false,
        format: None,
        json: false,
        color: super::ColorArg::Auto,
        tools: None,
        no_intercept: false,
        sandbox: None,
        env: Vec::new(),
        session: None,
        stdin: false,
        expand: false,
        stream: false,
        stderr: None,
        quiet: false,
        command: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;
    use proptest::prelude::*;

    /// What clap makes of `args`: its `Cli`, or its error's kind.
    fn by_clap(args: &[OsString]) -> Result<String, clap::error::ErrorKind> {
        let mut m = <Cli as clap::CommandFactory>::command()
            .try_get_matches_from(args)
            .map_err(|e| e.kind())?;
        Cli::from_arg_matches_mut(&mut m)
            .map(|c| format!("{c:?}"))
            .map_err(|e| e.kind())
    }

    fn argv(line: &[&str]) -> Vec<OsString> {
        std::iter::once("agentbash")
            .chain(line.iter().copied())
            .map(OsString::from)
            .collect()
    }

    /// Both read AGENTBASH_PROFILE from this process's environment, whatever it is.
    fn quick(args: &[OsString]) -> Option<String> {
        common(args, std::env::var_os("AGENTBASH_PROFILE")).map(|c| format!("{c:?}"))
    }

    /// Lines the reader must take, each the same as clap reads it.
    const TAKEN: &[&[&str]] = &[
        &["run", "-q", "--", "true"],
        &["run", "--", "true"],
        &["run", "true"],
        &["run", "true", "-q", "--json", "--help"],
        &["run", "-q", "printf", "%s\\n", "a b"],
        &["explain", "--json", "--", "ls | wc -l"],
        &["run", "--json", "-q", "--", "--", "x"],
        &["run", "-p", "agent", "--", "true"],
        &["run", "--profile", "agent", "-q", "--", "true"],
        &["run", "--profile=agent", "--", "true"],
        &["run", "--target", "box", "--", "true"],
        &["run", "-s", "work-1", "--", "cd /tmp"],
        &["run", "--session=w.1", "--json", "--", "pwd"],
        &["run", "-C", "sub dir", "--", "ls"],
        &["run", "--cwd=/tmp", "ls"],
        &["run", "-t", "30", "--", "sleep 1"],
        &["run", "--timeout", "99999", "--", "sleep 1"],
        &["run", "--timeout=0", "--", "true"],
        &["run", "-t", "-5", "--", "true"],
        &["run", "--timeout=-7", "true"],
        &["run", "-t", " 30", "-C", ".", "x"],
        &["run", "--head", "3", "--tail=4", "x"],
        &["run", "--mode", "pty", "x"],
        &["run", "--mode=print", "--format", "ndjson", "x"],
        &["run", "--format=text", "--color", "never", "x"],
        &["run", "--color=always", "--pty", "x"],
        &[
            "run",
            "--no-pty",
            "--no-intercept",
            "--stdin",
            "--expand",
            "--stream",
            "x",
        ],
        &["run", "--tools", "rg,fd", "--", "x"],
        &["run", "--tools=rg", "x"],
        &["run", "--tools", "a,,b", "x"],
        &["run", "--tools=a,", "x"],
        &["run", "--tools", "a", "--tools", "b,c", "x"],
        &["run", "--sandbox", "workspace-write", "x"],
        &["run", "--sandbox=read-only", "--stderr", "separate", "x"],
        &["run", "--stderr=merged", "x"],
        &[
            "run",
            "-e",
            "A=1",
            "--env",
            "B=",
            "--env=C=x=y",
            "--",
            "env",
        ],
        &[
            "explain",
            "-e",
            "A=-1",
            "-p",
            "./p.toml",
            "--session",
            "s",
            "x",
            "y",
        ],
        &["run", "-q", "--", "-q"],
        &["run", "--", "a", "--", "-p", "x"],
        &["run", "--", ""],
    ];

    /// Lines the reader must leave to clap (clap may take or refuse them).
    const LEFT: &[&[&str]] = &[
        &[],
        &["run"],
        &["run", "-q"],
        &["run", "-q", "--"],
        &["run", "-h"],
        &["run", "--help", "--", "x"],
        &["--version"],
        &["rpc"],
        &["job", "list"],
        &["ru", "--", "true"],
        &["run", "-qp", "x", "--", "true"],
        &["run", "-pagent", "--", "true"],
        &["run", "-p=agent", "--", "true"],
        &["run", "-q", "-q", "--", "true"],
        &["run", "--json", "--json", "true"],
        &["run", "-p", "a", "-p", "b", "--", "true"],
        &["run", "-p", "--", "true"],
        &["run", "-p"],
        &["run", "--profile=", "true"],
        &["run", "--cwd=", "true"],
        &["run", "-C", "-x", "true"],
        &["run", "-s", "../x", "--", "true"],
        &["run", "-s", "", "--", "true"],
        &["run", "-t", "soon", "--", "true"],
        &["run", "-t", "-", "--", "true"],
        &["run", "-t", "-5s", "--", "true"],
        &["run", "-t", "99999999999999999999", "--", "true"],
        &["run", "--head", "0", "x"],
        &["run", "--tail", "-2", "x"],
        &["run", "--mode", "tty", "x"],
        &["run", "--mode", "Pty", "x"],
        &["run", "--mode", "pty", "--pty", "x"],
        &["run", "--pty", "--no-pty", "x"],
        &["run", "--format", "json", "--json", "x"],
        &["run", "-e", "1A=x", "--", "true"],
        &["run", "-e", "NOEQUALS", "--", "true"],
        &["run", "--quiet=yes", "--", "true"],
        &["run", "-q=x", "true"],
        &["run", "--=x", "true"],
        &["run", "--profiles", "x", "--", "true"],
        &["run", "--bogus", "--", "true"],
        &["run", "-", "true"],
    ];

    #[test]
    fn the_lines_it_takes_are_read_as_clap_reads_them() {
        for line in TAKEN {
            let args = argv(line);
            let quick = quick(&args).unwrap_or_else(|| panic!("not taken: {line:?}"));
            assert_eq!(Ok(quick), by_clap(&args), "{line:?}");
        }
        for line in LEFT {
            assert!(quick(&argv(line)).is_none(), "taken: {line:?}");
        }
    }

    /// Pieces of a line: options with good and bad values, flags, and what clap
    /// alone answers.
    const PIECES: &[&[&str]] = &[
        &["-q"],
        &["--quiet"],
        &["--json"],
        &["--pty"],
        &["--no-pty"],
        &["--no-intercept"],
        &["--stdin"],
        &["--expand"],
        &["--stream"],
        &["-p", "agent"],
        &["--profile=x.toml"],
        &["--target", "box"],
        &["-C", "d"],
        &["--cwd=/tmp"],
        &["-t", "5"],
        &["--timeout=-3"],
        &["-t", "x"],
        &["--head", "3"],
        &["--tail=0"],
        &["--mode", "pty"],
        &["--mode=auto"],
        &["--mode", "bogus"],
        &["--format", "json"],
        &["--format=text"],
        &["--color", "never"],
        &["--color=always"],
        &["--tools", "a,b"],
        &["--tools=rg,,x"],
        &["--sandbox", "off"],
        &["-e", "A=1"],
        &["--env=B=2"],
        &["-e", "1=x"],
        &["-s", "s1"],
        &["--session=../x"],
        &["--stderr", "separate"],
        &["--stderr=merged"],
        &["-h"],
        &["--bogus"],
        &["-qp", "x"],
        &["-p"],
        &["--"],
        &["ls"],
        &["-x"],
    ];

    proptest! {
        /// Any line built of those pieces: where the reader answers, clap answers the
        /// same; where clap refuses, the reader leaves the line to it.
        #[test]
        fn generated_lines_are_read_as_clap_reads_them(
            explain in any::<bool>(),
            pieces in proptest::collection::vec(0..PIECES.len(), 0..7),
        ) {
            let mut line = vec![if explain { "explain" } else { "run" }];
            line.extend(pieces.iter().flat_map(|&i| PIECES[i].iter().copied()));
            let args = argv(&line);
            if let Some(quick) = quick(&args) {
                prop_assert_eq!(Ok(quick), by_clap(&args), "{:?}", line);
            } else {
                // Left to clap: nothing to compare.
            }
        }
    }

    /// Pieces in forms the reader leaves to clap on purpose (see the module's text).
    const CLAPS_ALONE: &[&[&str]] = &[&["-h"], &["--bogus"], &["-qp", "x"], &["-p"], &["-x"]];

    #[test]
    fn every_two_pieces_are_read_as_clap_reads_them_and_taken_where_plain() {
        let mut taken = 0;
        for (i, a) in PIECES.iter().enumerate() {
            for (j, b) in PIECES.iter().enumerate() {
                for tail in [&["--", "x"][..], &["x"], &[]] {
                    let mut line = vec!["run"];
                    line.extend(a.iter().chain(b.iter()).chain(tail.iter()).copied());
                    let args = argv(&line);
                    let clap = by_clap(&args);
                    match quick(&args) {
                        Some(quick) => {
                            assert_eq!(Ok(quick), clap, "{line:?}");
                            taken += 1;
                        }
                        None => {
                            // Left to clap: either clap refuses it too, or it holds a
                            // form the reader leaves alone, or one piece twice.
                            let unusual = CLAPS_ALONE.contains(a) || CLAPS_ALONE.contains(b);
                            assert!(
                                clap.is_err() || unusual || i == j,
                                "clap takes {line:?}, the reader does not"
                            );
                        }
                    }
                }
            }
        }
        // Most of the 5,547 lines are taken.
        assert!(taken > 2_000, "only {taken} lines taken");
    }

    #[test]
    fn the_profile_variable_is_used_when_no_profile_is_given() {
        let with = |line: &[&str], env: Option<&str>| {
            common(&argv(line), env.map(OsString::from)).map(|c| format!("{c:?}"))
        };
        let flagged = with(&["run", "-p", "from-env", "--", "true"], None);
        assert!(flagged.is_some());
        assert_eq!(with(&["run", "--", "true"], Some("from-env")), flagged);
        // A flag wins over the variable, as in clap.
        assert_eq!(
            with(&["run", "-p", "from-env", "--", "true"], Some("other")),
            flagged
        );
        // An empty variable is clap's to judge.
        assert_eq!(with(&["run", "--", "true"], Some("")), None);
    }

    #[test]
    fn text_that_is_not_utf8_is_left_to_clap() {
        use std::os::unix::ffi::OsStringExt;
        let mut args = argv(&["run", "--"]);
        args.push(OsString::from_vec(vec![0x66, 0xff]));
        assert!(common(&args, None).is_none());
    }
}
