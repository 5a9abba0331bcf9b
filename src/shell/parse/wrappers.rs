//! Programs that run another command: `sudo`, `env`, `timeout`, `xargs`, `nohup`,
//! `flock`, `strace`, `script -c`, `watch`, `nsenter`, `systemd-run`, `chroot`,
//! `busybox` and the rest. For each, where its own options end and what it changes
//! for the command it runs (environment, directory, root), read with the options the
//! program really has (GNU long-option prefixes included: `env --ch=/`).

use super::expand::Field;
use super::options::{Arg, Scanned, Spec, scan};

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

use Arg::{No as N, Optional as O, Required as R};

const SUDO: Spec = Spec {
    assignments: true,
    ..Spec::wrapper(
        "ugpCDhrtUTR",
        &[
            ("user", R),
            ("group", R),
            ("prompt", R),
            ("close-from", R),
            ("chdir", R),
            ("host", R),
            ("role", R),
            ("type", R),
            ("other-user", R),
            ("command-timeout", R),
            ("chroot", R),
            ("login", N),
            ("shell", N),
            ("preserve-env", O),
            ("set-home", N),
            ("non-interactive", N),
            ("background", N),
            ("edit", N),
            ("list", N),
            ("validate", N),
            ("reset-timestamp", N),
            ("remove-timestamp", N),
            ("version", N),
            ("help", N),
            ("stdin", N),
            ("askpass", N),
            ("bell", N),
            ("preserve-groups", N),
        ],
    )
};
const DOAS: Spec = Spec::wrapper("uaC", &[]);
const PKEXEC: Spec = Spec::wrapper(
    "",
    &[("user", R), ("disable-internal-agent", N), ("keep-cwd", N)],
);
const RUN0: Spec = Spec::wrapper(
    "ugD",
    &[
        ("user", R),
        ("group", R),
        ("chdir", R),
        ("nice", R),
        ("setenv", R),
        ("unit", R),
        ("property", R),
        ("description", R),
        ("slice", R),
        ("machine", R),
        ("background", R),
        ("pty", N),
        ("no-ask-password", N),
    ],
);
const ENV: Spec = Spec {
    assignments: true,
    ..Spec::wrapper(
        "uCS",
        &[
            ("ignore-environment", N),
            ("null", N),
            ("unset", R),
            ("chdir", R),
            ("split-string", R),
            ("debug", N),
            ("block-signal", O),
            ("default-signal", O),
            ("ignore-signal", O),
            ("list-signal-handling", N),
            ("help", N),
            ("version", N),
        ],
    )
};
const COMMAND: Spec = Spec::wrapper("", &[]);
const EXEC: Spec = Spec::wrapper("a", &[]);
const NICE: Spec = Spec {
    numeric_options: true,
    ..Spec::wrapper("n", &[("adjustment", R), ("help", N), ("version", N)])
};
const IONICE: Spec = Spec::wrapper(
    "cnpPu",
    &[
        ("class", R),
        ("classdata", R),
        ("pid", R),
        ("pgid", R),
        ("uid", R),
        ("ignore", N),
        ("help", N),
        ("version", N),
    ],
);
const SETSID: Spec = Spec::wrapper("", &[("ctty", N), ("fork", N), ("wait", N)]);
const STDBUF: Spec = Spec::wrapper("ioe", &[("input", R), ("output", R), ("error", R)]);
const TIMEOUT: Spec = Spec::wrapper(
    "sk",
    &[
        ("signal", R),
        ("kill-after", R),
        ("preserve-status", N),
        ("foreground", N),
        ("verbose", N),
        ("help", N),
        ("version", N),
    ],
);
const TIME: Spec = Spec::wrapper(
    "fo",
    &[
        ("format", R),
        ("output", R),
        ("append", N),
        ("portability", N),
        ("verbose", N),
        ("quiet", N),
    ],
);
const XARGS: Spec = Spec {
    short_optional: "eil",
    ..Spec::wrapper(
        "aEdILnPs",
        &[
            ("null", N),
            ("arg-file", R),
            ("delimiter", R),
            ("eof", O),
            ("replace", O),
            ("max-lines", O),
            ("max-args", R),
            ("max-procs", R),
            ("interactive", N),
            ("no-run-if-empty", N),
            ("max-chars", R),
            ("verbose", N),
            ("exit", N),
            ("show-limits", N),
            ("open-tty", N),
            ("process-slot-var", R),
        ],
    )
};
const FLOCK: Spec = Spec::wrapper(
    "Ewc",
    &[
        ("shared", N),
        ("exclusive", N),
        ("nonblock", N),
        ("nb", N),
        ("unlock", N),
        ("close", N),
        ("conflict-exit-code", R),
        ("wait", R),
        ("timeout", R),
        ("no-fork", N),
        ("verbose", N),
        ("command", R),
        ("help", N),
        ("version", N),
    ],
);
const STRACE: Spec = Spec::wrapper(
    "abeEIoOpPsSuUX",
    &[
        ("output", R),
        ("trace", R),
        ("trace-path", R),
        ("signal", R),
        ("status", R),
        ("abbrev", R),
        ("verbose", R),
        ("raw", R),
        ("read", R),
        ("write", R),
        ("fault", R),
        ("inject", R),
        ("kvm", R),
        ("attach", R),
        ("string-limit", R),
        ("summary-sort-by", R),
        ("user", R),
        ("env", R),
        ("absolute-timestamps", O),
        ("relative-timestamps", O),
        ("syscall-times", O),
        ("decode-fds", O),
        ("follow-forks", N),
        ("output-separately", N),
        ("seccomp-bpf", N),
        ("summary-only", N),
        ("summary", N),
        ("quiet", O),
        ("silent", O),
        ("daemonize", O),
        ("instruction-pointer", N),
        ("stack-trace", N),
        ("no-abbrev", N),
        ("help", N),
        ("version", N),
    ],
);
const LTRACE: Spec = Spec::wrapper(
    "aAeDEFlnopsuxX",
    &[
        ("output", R),
        ("library", R),
        ("indent", R),
        ("align", R),
        ("demangle", N),
        ("help", N),
        ("version", N),
    ],
);
const SCRIPT: Spec = Spec {
    short_optional: "t",
    ..Spec::new(
        "cEIOBTmo",
        &[
            ("append", N),
            ("command", R),
            ("echo", R),
            ("return", N),
            ("flush", N),
            ("force", N),
            ("log-in", R),
            ("log-out", R),
            ("log-io", R),
            ("log-timing", R),
            ("logging-format", R),
            ("output-limit", R),
            ("quiet", N),
            ("timing", O),
            ("help", N),
            ("version", N),
        ],
    )
};
const WATCH: Spec = Spec {
    short_optional: "d",
    ..Spec::wrapper(
        "nq",
        &[
            ("interval", R),
            ("differences", O),
            ("precise", N),
            ("no-title", N),
            ("beep", N),
            ("errexit", N),
            ("chgexit", N),
            ("equexit", R),
            ("color", N),
            ("no-color", N),
            ("exec", N),
            ("no-wrap", N),
            ("no-rerun", N),
            ("help", N),
            ("version", N),
        ],
    )
};
const NSENTER: Spec = Spec {
    short_optional: "muinpUCTrw",
    ..Spec::wrapper(
        "tSGN",
        &[
            ("target", R),
            ("mount", O),
            ("uts", O),
            ("ipc", O),
            ("net", O),
            ("pid", O),
            ("cgroup", O),
            ("user", O),
            ("time", O),
            ("setuid", R),
            ("setgid", R),
            ("preserve-credentials", N),
            ("root", O),
            ("wd", O),
            ("no-fork", N),
            ("follow-context", N),
            ("all", N),
            ("env", N),
            ("join-cgroup", N),
            ("keep-caps", N),
            ("user-parent", N),
            ("net-socket", R),
            ("help", N),
            ("version", N),
        ],
    )
};
const UNSHARE: Spec = Spec {
    short_optional: "muinpUCT",
    ..Spec::wrapper(
        "RwSGl",
        &[
            ("mount", O),
            ("uts", O),
            ("ipc", O),
            ("net", O),
            ("pid", O),
            ("user", O),
            ("cgroup", O),
            ("time", O),
            ("fork", N),
            ("kill-child", O),
            ("mount-proc", O),
            ("mount-binfmt", O),
            ("map-root-user", N),
            ("map-current-user", N),
            ("map-user", R),
            ("map-group", R),
            ("map-users", R),
            ("map-groups", R),
            ("map-auto", N),
            ("propagation", R),
            ("setgroups", R),
            ("keep-caps", N),
            ("root", R),
            ("wd", R),
            ("monotonic", R),
            ("boottime", R),
            ("setuid", R),
            ("setgid", R),
            ("load-interp", R),
            ("help", N),
            ("version", N),
        ],
    )
};
const SYSTEMD_RUN: Spec = Spec::wrapper(
    "upEHMs",
    &[
        ("unit", R),
        ("property", R),
        ("description", R),
        ("slice", R),
        ("slice-inherit", N),
        ("setenv", R),
        ("uid", R),
        ("gid", R),
        ("nice", R),
        ("working-directory", R),
        ("same-dir", N),
        ("scope", N),
        ("user", N),
        ("system", N),
        ("host", R),
        ("machine", R),
        ("on-active", R),
        ("on-boot", R),
        ("on-startup", R),
        ("on-unit-active", R),
        ("on-unit-inactive", R),
        ("on-calendar", R),
        ("on-clock-change", N),
        ("on-timezone-change", N),
        ("timer-property", R),
        ("path-property", R),
        ("socket-property", R),
        ("service-type", R),
        ("pty", N),
        ("pipe", N),
        ("quiet", N),
        ("wait", N),
        ("collect", N),
        ("no-block", N),
        ("remain-after-exit", N),
        ("send-sighup", N),
        ("shell", N),
        ("json", R),
        ("no-ask-password", N),
        ("expand-environment", R),
        ("help", N),
        ("version", N),
    ],
);
const CHROOT: Spec = Spec::wrapper(
    "",
    &[
        ("userspec", R),
        ("groups", R),
        ("skip-chdir", N),
        ("help", N),
        ("version", N),
    ],
);
const CHRT: Spec = Spec::wrapper(
    "TPD",
    &[
        ("batch", N),
        ("fifo", N),
        ("idle", N),
        ("other", N),
        ("rr", N),
        ("deadline", N),
        ("ext", N),
        ("all-tasks", N),
        ("max", N),
        ("pid", N),
        ("reset-on-fork", N),
        ("sched-runtime", R),
        ("sched-period", R),
        ("sched-deadline", R),
        ("verbose", N),
    ],
);
const TASKSET: Spec = Spec::wrapper("", &[("all-tasks", N), ("cpu-list", N), ("pid", N)]);
const NUMACTL: Spec = Spec::wrapper(
    "iNCmpP",
    &[
        ("interleave", R),
        ("cpunodebind", R),
        ("physcpubind", R),
        ("membind", R),
        ("preferred", R),
        ("preferred-many", R),
        ("localalloc", N),
        ("all", N),
        ("balancing", N),
    ],
);
const PLAIN: Spec = Spec::wrapper("", &[]);
const PROXYCHAINS: Spec = Spec::wrapper("f", &[]);
const FAKEROOT: Spec = Spec::wrapper("lsib", &[("lib", R), ("faked", R), ("unknown-is-real", N)]);
const XVFB_RUN: Spec = Spec::wrapper(
    "nsfepw",
    &[
        ("server-num", R),
        ("server-args", R),
        ("auth-file", R),
        ("error-file", R),
        ("xauth-protocol", R),
        ("wait", R),
    ],
);
const SU: Spec = Spec::new(
    "ugGcsw",
    &[
        ("user", R),
        ("group", R),
        ("supp-group", R),
        ("command", R),
        ("session-command", R),
        ("shell", R),
        ("whitelist-environment", R),
        ("login", N),
        ("preserve-environment", N),
        ("pty", N),
    ],
);
const RUNUSER: Spec = Spec::wrapper(
    "ugGcsw",
    &[
        ("user", R),
        ("group", R),
        ("supp-group", R),
        ("command", R),
        ("shell", R),
        ("whitelist-environment", R),
        ("login", N),
        ("preserve-environment", N),
        ("pty", N),
    ],
);

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

/// How `name` (the program, already reduced to its name) runs `argv[1..]`.
pub fn unwrap(name: &str, argv: &[Field]) -> Unwrap {
    let args = argv.get(1..).unwrap_or_default();
    let command_at = |s: &Scanned, effects: Vec<Effect>| {
        if s.end >= args.len() {
            Unwrap::Nothing
        } else {
            Unwrap::Command {
                skip: 1 + s.end,
                effects,
            }
        }
    };
    match name {
        "sudo" | "doas" | "pkexec" | "run0" => {
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
            for &i in &s.assignments {
                if let Some((k, v)) = args[i].text.split_once('=') {
                    effects.push(Effect::Set(k.to_string(), v.to_string()));
                }
            }
            if let Some(d) = s.value('D', "--chdir") {
                effects.push(Effect::Chdir(d.to_string()));
            }
            if let Some(r) = s.value('R', "--chroot") {
                effects.push(Effect::Chroot(r.to_string()));
            }
            command_at(&s, effects)
        }
        "env" => {
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
            for &i in &s.assignments {
                if let Some((k, v)) = args[i].text.split_once('=') {
                    effects.push(Effect::Set(k.to_string(), v.to_string()));
                }
            }
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
        "command" => {
            let s = scanned(args, &COMMAND);
            if s.has('v', "") || s.has('V', "") {
                return Unwrap::Nothing;
            }
            command_at(&s, vec![])
        }
        "builtin" => command_at(
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
            command_at(&s, effects)
        }
        "nice" => command_at(&scanned(args, &NICE), vec![]),
        "ionice" => {
            let s = scanned(args, &IONICE);
            if s.value('p', "--pid").is_some()
                || s.value('P', "--pgid").is_some()
                || s.value('u', "--uid").is_some()
            {
                return Unwrap::Nothing;
            }
            command_at(&s, vec![])
        }
        "nohup" | "unbuffer" | "eatmydata" | "catchsegv" | "chronic" | "caffeinate"
        | "firejail" | "valgrind" | "prlimit" | "setpriv" | "dbus-run-session" => {
            command_at(&scanned(args, &PLAIN), vec![])
        }
        "setsid" => command_at(&scanned(args, &SETSID), vec![]),
        "stdbuf" => command_at(&scanned(args, &STDBUF), vec![]),
        "timeout" | "gtimeout" => {
            let s = scanned(args, &TIMEOUT);
            // The duration comes first.
            if s.end + 1 >= args.len() {
                return Unwrap::Nothing;
            }
            Unwrap::Command {
                skip: 2 + s.end,
                effects: vec![Effect::Bounded],
            }
        }
        "time" => command_at(&scanned(args, &TIME), vec![]),
        "xargs" => {
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
        "busybox" | "toybox" => match args.first() {
            Some(f) if !f.text.starts_with('-') => Unwrap::Command {
                skip: 1,
                effects: vec![],
            },
            _ => Unwrap::Nothing,
        },
        "flock" => {
            let s = scanned(args, &FLOCK);
            if let Some(c) = command_string(&s) {
                return Unwrap::Script {
                    text: c,
                    effects: vec![],
                };
            }
            // `flock [opts] FILE (-c STRING | CMD…)`; `flock [opts] FD` runs nothing.
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
        "strace" | "ltrace" => {
            let s = scanned(args, if name == "strace" { &STRACE } else { &LTRACE });
            command_at(&s, vec![])
        }
        "script" => {
            let s = scanned(args, &SCRIPT);
            match command_string(&s) {
                Some(c) => Unwrap::Script {
                    text: c,
                    effects: vec![],
                },
                None => Unwrap::Nothing,
            }
        }
        "watch" => {
            let s = scanned(args, &WATCH);
            let rest = args.get(s.end..).unwrap_or_default();
            if rest.is_empty() {
                return Unwrap::Nothing;
            }
            if s.has('x', "--exec") {
                return command_at(&s, vec![]);
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
        "nsenter" => {
            let s = scanned(args, &NSENTER);
            let mut effects = Vec::new();
            if let Some(r) = s.value('r', "--root") {
                effects.push(Effect::Chroot(r.to_string()));
            }
            if let Some(w) = s.value('w', "--wd") {
                effects.push(Effect::Chdir(w.to_string()));
            }
            command_at(&s, effects)
        }
        "unshare" => {
            let s = scanned(args, &UNSHARE);
            let mut effects = Vec::new();
            if let Some(r) = s.value('R', "--root") {
                effects.push(Effect::Chroot(r.to_string()));
            }
            if let Some(w) = s.value('w', "--wd") {
                effects.push(Effect::Chdir(w.to_string()));
            }
            command_at(&s, effects)
        }
        "systemd-run" => {
            let s = scanned(args, &SYSTEMD_RUN);
            let mut effects = Vec::new();
            if let Some(d) = s.value('\0', "--working-directory") {
                effects.push(Effect::Chdir(d.to_string()));
            }
            command_at(&s, effects)
        }
        "chroot" => {
            let s = scanned(args, &CHROOT);
            let Some(root) = args.get(s.end) else {
                return Unwrap::Nothing;
            };
            if s.end + 1 >= args.len() {
                return Unwrap::Nothing;
            }
            let mut effects = vec![Effect::Chroot(root.text.clone())];
            if !s.has('\0', "--skip-chdir") {
                effects.push(Effect::Chdir("/".into()));
            }
            Unwrap::Command {
                skip: 2 + s.end,
                effects,
            }
        }
        "chrt" | "taskset" => {
            let s = scanned(args, if name == "chrt" { &CHRT } else { &TASKSET });
            if s.has('p', "--pid") {
                return Unwrap::Nothing;
            }
            // The priority or mask comes first.
            if s.end + 1 >= args.len() {
                return Unwrap::Nothing;
            }
            Unwrap::Command {
                skip: 2 + s.end,
                effects: vec![],
            }
        }
        "numactl" => command_at(&scanned(args, &NUMACTL), vec![]),
        "proxychains" | "proxychains4" => command_at(&scanned(args, &PROXYCHAINS), vec![]),
        "fakeroot" => command_at(&scanned(args, &FAKEROOT), vec![]),
        "xvfb-run" => command_at(&scanned(args, &XVFB_RUN), vec![]),
        "su" | "runuser" | "sg" => {
            if name == "runuser" {
                let s = scanned(args, &RUNUSER);
                if let Some(u) = s.value('u', "--user") {
                    return command_at(
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
            // `su [-] [user] -c STRING`; `sg GROUP [-c] STRING`.
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
        _ => Unwrap::No,
    }
}
