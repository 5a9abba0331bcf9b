//! Programs that run another command: `sudo`, `env`, `timeout`, `xargs`, `nohup`,
//! `flock`, `strace`, `script -c`, `watch`, `nsenter`, `systemd-run`, `chroot`,
//! `busybox` and the rest. For each, where its own options end and what it changes
//! for the command it runs (environment, directory, root), read with the options the
//! program really has (GNU long-option prefixes included: `env --ch=/`).

use super::expand::Field;
use super::options::{Scanned, Spec, scan};

mod specs;
use specs::*;

/// What a wrapper does to the command it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// `env -i`, `exec -c`.
    ClearEnv,
    /// `env -u NAME`.
    Unset(String),
    /// `env NAME=value`, `sudo NAME=value`.
    Set(String, String),
    /// `env -C DIR`, `sudo -D DIR`, `nsenter --wd=DIR`, `systemd-run --working-directory`.
    Chdir(String),
    /// `chroot DIR`, `sudo -R DIR`, `nsenter --root=DIR`, `unshare --root=DIR`.
    Chroot(String),
    /// `sudo`, `doas`, `pkexec`, `run0`: another user's (reset) environment.
    Sudo {
        preserve_env: bool,
        user: Option<String>,
        /// `-i`: a login shell, in the user's home.
        login: bool,
    },
    /// `timeout`: the command cannot outlive the run.
    Bounded,
    /// `xargs`: the command gets its arguments from stdin.
    Xargs {
        /// `-I R` / `-i`: one command per input line, `R` replaced.
        replace: Option<String>,
        /// `-0` / `-d X`.
        delimiter: Option<char>,
    },
}

/// How a wrapper runs what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwrap {
    /// Not a wrapper.
    No,
    /// The command starts `skip` words later.
    Command { skip: usize, effects: Vec<Effect> },
    /// A string run as a shell script (`watch 'a; b'`, `script -c`, `flock -c`,
    /// `env -S`, `su -c`).
    Script { text: String, effects: Vec<Effect> },
    /// Runs no command (`command -v x`, `sudo -l`, `ionice -p 1`, a wrapper alone).
    Nothing,
}

/// Whether the interceptor shows this wrapper in a candidate: it changes how long or
/// the command lives (`nohup`, `setsid`, `watch`), which is what
/// the job rules are about. Every other wrapper is looked through.
pub fn routed(name: &str) -> bool {
    matches!(name, "nohup" | "setsid" | "watch")
}

/// `-c STRING` (or `--command=STRING`), where a program takes its command as a string.
fn command_string(s: &Scanned) -> Option<String> {
    s.value('c', "--command").map(str::to_string)
}

/// The words of `fields` as text, for scanning.
fn texts(fields: &[Field]) -> Vec<&str> {
    fields.iter().map(|f| f.text.as_str()).collect()
}

/// Scans `args` (the wrapper's arguments) by `spec`; dynamic words are operands.
fn scanned(args: &[Field], spec: &Spec) -> Scanned {
    let t = texts(args);
    scan(&t, spec, |i| args.get(i).is_some_and(|f| !f.known()))
}

/// Shell-quoted words joined into one command line (what `watch` and `env -S` pass
/// to a shell).
fn joined(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|f| super::render::quote_word(&f.text))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command after the wrapper's options, or nothing when none follows.
fn command_at(args: &[Field], s: &Scanned, effects: Vec<Effect>) -> Unwrap {
    if s.end >= args.len() {
        Unwrap::Nothing
    } else {
        Unwrap::Command {
            skip: 1 + s.end,
            effects,
        }
    }
}

/// The command after the wrapper's options and one operand (a duration, a priority).
fn command_after_operand(args: &[Field], s: &Scanned, effects: Vec<Effect>) -> Unwrap {
    if s.end + 1 >= args.len() {
        return Unwrap::Nothing;
    }
    Unwrap::Command {
        skip: 2 + s.end,
        effects,
    }
}

/// `NAME=value` assignments among the wrapper's arguments (`sudo`, `env`).
fn assignments(args: &[Field], s: &Scanned, effects: &mut Vec<Effect>) {
    for &i in &s.assignments {
        if let Some((k, v)) = args[i].text.split_once('=') {
            effects.push(Effect::Set(k.to_string(), v.to_string()));
        }
    }
}

/// How `name` (the program, already reduced to its name) runs `argv[1..]`.
pub fn unwrap(name: &str, argv: &[Field]) -> Unwrap {
    let args = argv.get(1..).unwrap_or_default();
    let plain = |spec: &Spec| command_at(args, &scanned(args, spec), vec![]);
    match name {
        "sudo" | "doas" | "pkexec" | "run0" => sudo(name, args),
        "env" => env(args),
        "command" => {
            let s = scanned(args, &COMMAND);
            if s.has('v', "") || s.has('V', "") {
                return Unwrap::Nothing;
            }
            command_at(args, &s, vec![])
        }
        "builtin" => command_at(
            args,
            &Scanned {
                end: 0,
                ..Scanned::default()
            },
            vec![],
        ),
        "exec" => {
            let s = scanned(args, &EXEC);
            let effects = if s.has('c', "") {
                vec![Effect::ClearEnv]
            } else {
                vec![]
            };
            command_at(args, &s, effects)
        }
        "nice" => plain(&NICE),
        "ionice" => {
            let s = scanned(args, &IONICE);
            if s.value('p', "--pid").is_some()
                || s.value('P', "--pgid").is_some()
                || s.value('u', "--uid").is_some()
            {
                return Unwrap::Nothing;
            }
            command_at(args, &s, vec![])
        }
        "nohup" | "unbuffer" | "eatmydata" | "catchsegv" | "chronic" | "caffeinate"
        | "firejail" | "valgrind" | "prlimit" | "setpriv" | "dbus-run-session" => plain(&PLAIN),
        "setsid" => plain(&SETSID),
        "stdbuf" => plain(&STDBUF),
        // The duration comes first.
        "timeout" | "gtimeout" => {
            command_after_operand(args, &scanned(args, &TIMEOUT), vec![Effect::Bounded])
        }
        "time" => plain(&TIME),
        "xargs" => xargs(args),
        "busybox" | "toybox" => match args.first() {
            Some(f) if !f.text.starts_with('-') => Unwrap::Command {
                skip: 1,
                effects: vec![],
            },
            _ => Unwrap::Nothing,
        },
        "flock" => flock(args),
        "strace" => plain(&STRACE),
        "ltrace" => plain(&LTRACE),
        "script" => match command_string(&scanned(args, &SCRIPT)) {
            Some(c) => Unwrap::Script {
                text: c,
                effects: vec![],
            },
            None => Unwrap::Nothing,
        },
        "watch" => watch(args),
        "nsenter" | "unshare" | "systemd-run" => namespaces(name, args),
        "chroot" => chroot(args),
        "chrt" | "taskset" => {
            let s = scanned(args, if name == "chrt" { &CHRT } else { &TASKSET });
            if s.has('p', "--pid") {
                return Unwrap::Nothing;
            }
            // The priority or mask comes first.
            command_after_operand(args, &s, vec![])
        }
        "numactl" => plain(&NUMACTL),
        "proxychains" | "proxychains4" => plain(&PROXYCHAINS),
        "fakeroot" => plain(&FAKEROOT),
        "xvfb-run" => plain(&XVFB_RUN),
        "su" | "runuser" | "sg" => su(name, args),
        _ => Unwrap::No,
    }
}

/// `sudo`, `doas`, `pkexec`, `run0`: another user, maybe another directory or root;
/// their listing and editing modes run nothing.
fn sudo(name: &str, args: &[Field]) -> Unwrap {
    let spec = match name {
        "sudo" => &SUDO,
        "doas" => &DOAS,
        "pkexec" => &PKEXEC,
        _ => &RUN0,
    };
    let s = scanned(args, spec);
    if [
        "-e",
        "--edit",
        "-l",
        "--list",
        "-v",
        "--validate",
        "-K",
        "-V",
        "--version",
        "-C",
    ]
    .iter()
    .any(|o| s.opts.iter().any(|x| x.name == *o))
        || (s.has('h', "--help") && s.value('h', "--host").is_none())
    {
        return Unwrap::Nothing;
    }
    let mut effects = vec![Effect::Sudo {
        preserve_env: name == "sudo"
            && s.opts
                .iter()
                .any(|o| o.name == "-E" || o.name == "--preserve-env"),
        user: s.value('u', "--user").map(str::to_string),
        login: name == "sudo" && s.has('i', "--login"),
    }];
    assignments(args, &s, &mut effects);
    if let Some(d) = s.value('D', "--chdir") {
        effects.push(Effect::Chdir(d.to_string()));
    }
    if let Some(r) = s.value('R', "--chroot") {
        effects.push(Effect::Chroot(r.to_string()));
    }
    command_at(args, &s, effects)
}

/// `env`: cleared, unset and set variables, a directory, or `-S` a string to split.
fn env(args: &[Field]) -> Unwrap {
    let s = scanned(args, &ENV);
    let mut effects = Vec::new();
    if s.has('i', "--ignore-environment") || args.first().is_some_and(|f| f.text == "-") {
        effects.push(Effect::ClearEnv);
    }
    for o in &s.opts {
        match o.name.as_str() {
            "-u" | "--unset" => effects.extend(o.value.clone().map(Effect::Unset)),
            "-C" | "--chdir" => effects.extend(o.value.clone().map(Effect::Chdir)),
            _ => {}
        }
    }
    assignments(args, &s, &mut effects);
    if let Some(split) = s.value('S', "--split-string") {
        let rest = joined(args.get(s.end..).unwrap_or_default());
        return Unwrap::Script {
            text: format!("{split} {rest}"),
            effects,
        };
    }
    // `env -` alone: skip the dash.
    let s_end = if args.get(s.end).is_some_and(|f| f.text == "-") {
        s.end + 1
    } else {
        s.end
    };
    if s_end >= args.len() {
        Unwrap::Nothing
    } else {
        Unwrap::Command {
            skip: 1 + s_end,
            effects,
        }
    }
}

/// `xargs`: the command gets its arguments from stdin, maybe one line at a time.
fn xargs(args: &[Field]) -> Unwrap {
    let s = scanned(args, &XARGS);
    let replace = s.opts.iter().rev().find_map(|o| match o.name.as_str() {
        "-I" => o.value.clone(),
        "-i" | "--replace" => Some(o.value.clone().unwrap_or_else(|| "{}".into())),
        _ => None,
    });
    let delimiter = if s.has('0', "--null") {
        Some('\0')
    } else {
        s.value('d', "--delimiter").and_then(|d| d.chars().next())
    };
    let effects = vec![Effect::Xargs { replace, delimiter }];
    if s.end >= args.len() {
        // xargs alone runs `echo`.
        return Unwrap::Nothing;
    }
    Unwrap::Command {
        skip: 1 + s.end,
        effects,
    }
}

/// `flock [opts] FILE (-c STRING | CMD…)`; `flock [opts] FD` runs nothing.
fn flock(args: &[Field]) -> Unwrap {
    let s = scanned(args, &FLOCK);
    if let Some(c) = command_string(&s) {
        return Unwrap::Script {
            text: c,
            effects: vec![],
        };
    }
    let after = s.end + 1;
    match args.get(after).map(|f| f.text.as_str()) {
        None => Unwrap::Nothing,
        Some("-c" | "--command") => match args.get(after + 1) {
            Some(f) => Unwrap::Script {
                text: f.text.clone(),
                effects: vec![],
            },
            None => Unwrap::Nothing,
        },
        Some(_) => Unwrap::Command {
            skip: 1 + after,
            effects: vec![],
        },
    }
}

/// `watch`: its words joined are a shell string, or with `-x` the command itself.
fn watch(args: &[Field]) -> Unwrap {
    let s = scanned(args, &WATCH);
    let rest = args.get(s.end..).unwrap_or_default();
    if rest.is_empty() {
        return Unwrap::Nothing;
    }
    if s.has('x', "--exec") {
        return command_at(args, &s, vec![]);
    }
    Unwrap::Script {
        text: rest
            .iter()
            .map(|f| f.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        effects: vec![],
    }
}

/// `nsenter`, `unshare`, `systemd-run`: maybe another root and directory.
fn namespaces(name: &str, args: &[Field]) -> Unwrap {
    let mut effects = Vec::new();
    let s = match name {
        "nsenter" | "unshare" => {
            let s = scanned(
                args,
                if name == "nsenter" {
                    &NSENTER
                } else {
                    &UNSHARE
                },
            );
            let root_flag = if name == "nsenter" { 'r' } else { 'R' };
            if let Some(r) = s.value(root_flag, "--root") {
                effects.push(Effect::Chroot(r.to_string()));
            }
            if let Some(w) = s.value('w', "--wd") {
                effects.push(Effect::Chdir(w.to_string()));
            }
            s
        }
        _ => {
            let s = scanned(args, &SYSTEMD_RUN);
            if let Some(d) = s.value('\0', "--working-directory") {
                effects.push(Effect::Chdir(d.to_string()));
            }
            s
        }
    };
    command_at(args, &s, effects)
}

/// `chroot DIR CMD…`: another root, and `/` as directory unless `--skip-chdir`.
fn chroot(args: &[Field]) -> Unwrap {
    let s = scanned(args, &CHROOT);
    let Some(root) = args.get(s.end) else {
        return Unwrap::Nothing;
    };
    let mut effects = vec![Effect::Chroot(root.text.clone())];
    if !s.has('\0', "--skip-chdir") {
        effects.push(Effect::Chdir("/".into()));
    }
    command_after_operand(args, &s, effects)
}

/// `su [-] [user] -c STRING`, `sg GROUP [-c] STRING`, `runuser [-u USER] CMD…`.
fn su(name: &str, args: &[Field]) -> Unwrap {
    if name == "runuser" {
        let s = scanned(args, &RUNUSER);
        if let Some(u) = s.value('u', "--user") {
            return command_at(
                args,
                &s,
                vec![Effect::Sudo {
                    preserve_env: false,
                    user: Some(u.to_string()),
                    login: false,
                }],
            );
        }
    }
    let s = scanned(args, &SU);
    let string = command_string(&s).or_else(|| {
        (name == "sg")
            .then(|| {
                args.iter()
                    .skip(1)
                    .find(|f| f.text != "-c")
                    .map(|f| f.text.clone())
            })
            .flatten()
    });
    match string {
        Some(c) => Unwrap::Script {
            text: c,
            effects: vec![Effect::Sudo {
                preserve_env: s.has('m', "--preserve-environment") || s.has('p', ""),
                user: s
                    .operands
                    .iter()
                    .filter_map(|&i| args.get(i))
                    .find(|f| f.text != "-")
                    .map(|f| f.text.clone()),
                login: false,
            }],
        },
        None => Unwrap::Nothing,
    }
}
