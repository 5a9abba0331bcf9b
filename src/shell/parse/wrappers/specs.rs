//! The option tables of the wrappers `unwrap` reads: which options each program takes
//! and whether they carry a value, kept apart from the logic that reads them.

use super::super::options::{Arg, Spec};

use Arg::{No as N, Optional as O, Required as R};

pub(super) const SUDO: Spec = Spec {
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
pub(super) const DOAS: Spec = Spec::wrapper("uaC", &[]);
pub(super) const PKEXEC: Spec = Spec::wrapper(
    "",
    &[("user", R), ("disable-internal-agent", N), ("keep-cwd", N)],
);
pub(super) const RUN0: Spec = Spec::wrapper(
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
pub(super) const ENV: Spec = Spec {
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
pub(super) const COMMAND: Spec = Spec::wrapper("", &[]);
pub(super) const EXEC: Spec = Spec::wrapper("a", &[]);
pub(super) const NICE: Spec = Spec {
    numeric_options: true,
    ..Spec::wrapper("n", &[("adjustment", R), ("help", N), ("version", N)])
};
pub(super) const IONICE: Spec = Spec::wrapper(
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
pub(super) const SETSID: Spec = Spec::wrapper("", &[("ctty", N), ("fork", N), ("wait", N)]);
pub(super) const STDBUF: Spec = Spec::wrapper("ioe", &[("input", R), ("output", R), ("error", R)]);
pub(super) const TIMEOUT: Spec = Spec::wrapper(
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
pub(super) const TIME: Spec = Spec::wrapper(
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
pub(super) const XARGS: Spec = Spec {
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
pub(super) const FLOCK: Spec = Spec::wrapper(
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
pub(super) const STRACE: Spec = Spec::wrapper(
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
pub(super) const LTRACE: Spec = Spec::wrapper(
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
pub(super) const SCRIPT: Spec = Spec {
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
pub(super) const WATCH: Spec = Spec {
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
pub(super) const NSENTER: Spec = Spec {
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
pub(super) const UNSHARE: Spec = Spec {
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
pub(super) const SYSTEMD_RUN: Spec = Spec::wrapper(
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
pub(super) const CHROOT: Spec = Spec::wrapper(
    "",
    &[
        ("userspec", R),
        ("groups", R),
        ("skip-chdir", N),
        ("help", N),
        ("version", N),
    ],
);
pub(super) const CHRT: Spec = Spec::wrapper(
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
pub(super) const TASKSET: Spec =
    Spec::wrapper("", &[("all-tasks", N), ("cpu-list", N), ("pid", N)]);
pub(super) const NUMACTL: Spec = Spec::wrapper(
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
pub(super) const PLAIN: Spec = Spec::wrapper("", &[]);
pub(super) const PROXYCHAINS: Spec = Spec::wrapper("f", &[]);
pub(super) const FAKEROOT: Spec =
    Spec::wrapper("lsib", &[("lib", R), ("faked", R), ("unknown-is-real", N)]);
pub(super) const XVFB_RUN: Spec = Spec::wrapper(
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
pub(super) const SU: Spec = Spec::new(
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
pub(super) const RUNUSER: Spec = Spec::wrapper(
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
