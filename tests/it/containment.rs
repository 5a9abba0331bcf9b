//! Containment that holds as root, through the real binary: no capability over the
//! host, a syscall filter, a PID namespace, a private `/dev`, `.git` that cannot be
//! swapped, agentbash's own files out of reach, only stdio passed on, fail-closed
//! policies, and a reaper that finds what left the run's cgroup.
//!
//! Nothing here can harm the machine even if the sandbox were broken: device nodes are
//! made in temp dirs (and are /dev/null's numbers), network and host-name changes are
//! tried inside an outer network and UTS namespace the test makes itself, and every
//! process a test starts is killed by pid.

use crate::support::{TestEnv, assert_has, assert_lacks, confining, nonce, run_json_as_nobody, s};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether a prerequisite is here; when not, says so (and fails the test where every
/// prerequisite must be present, `AGENTBASH_REQUIRE_ALL=1`, as in CI).
fn have(ok: bool, what: &str) -> bool {
    if ok {
        return true;
    }
    crate::harness::skipped(
        what,
        "run the suite as root with it installed, as .ci/run does",
    );
    false
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// A test env with `sandbox.toml`: `extends = "default"` with `[sandbox]` `section`.
fn sandboxed(section: &str) -> (TestEnv, String) {
    let env = TestEnv::new();
    let profile = env.root().join("sandbox.toml");
    std::fs::write(
        &profile,
        format!(
            "extends = \"default\"\n[shell]\nsnapshot = false\n[sandbox]\n{}\n",
            confining(section)
        ),
    )
    .expect("profile");
    let p = profile.display().to_string();
    (env, p)
}

fn run_json(env: &TestEnv, profile: &str, script: &str) -> (Option<i32>, Value) {
    let out = env.run_json(script).profile(profile).run();
    (out.code(), out.json())
}

/// Runs git in `dir` (without the user's global config); it must succeed.
fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git")
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// A workspace-write sandbox whose working directory is a new git repository:
/// `(env, profile, working directory)`; `None` (the test skips, see `have`) without git.
fn git_workspace() -> Option<(TestEnv, String, PathBuf)> {
    if !have(on_path("git"), "git") {
        return None;
    }
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    let work = env.work();
    git(&work, &["init", "-q", "."]);
    Some((env, profile, work))
}

/// No process whose command line holds `needle` is left (after up to 2 s).
fn no_process_runs(needle: &str) -> bool {
    crate::support::procs_with_cmdline(needle, std::time::Duration::from_secs(2)).is_empty()
}

#[test]
fn a_root_command_holds_no_capability_over_the_host_and_makes_no_device() {
    if !have(is_root(), "root") {
        return;
    }
    let (env, profile) = sandboxed("mode = \"workspace-write\"\nrequired = true");
    // Control: root without the sandbox can make the node (/dev/null's numbers, in a
    // temp dir), so the refusal below is the sandbox's doing.
    let control = env.root().join("control-node");
    let made = std::process::Command::new("mknod")
        .arg(&control)
        .args(["c", "1", "3"])
        .status()
        .expect("mknod");
    assert!(made.success() && control.exists());
    std::fs::remove_file(&control).expect("remove control node");

    let (code, v) = run_json(
        &env,
        &profile,
        "grep -E '^Cap(Eff|Bnd|Amb)' /proc/self/status; cat /proc/self/uid_map; \
         mknod \"$TMPDIR/c\" c 1 3 || echo char-refused; mknod \"$TMPDIR/b\" b 7 0 || echo block-refused; \
         mknod c c 1 3 || echo ws-refused; ls \"$TMPDIR\"",
    );
    assert_eq!(code, Some(0), "{v}");
    let out = s(&v, "output");
    // Only the file capabilities root keeps in its own user namespace (0-7), none of
    // them over the host: the namespace maps the whole id range to itself.
    assert_has(out, "CapEff:\t00000000000000ff");
    assert_has(out, "CapBnd:\t00000000000000ff");
    assert_has(out, "CapAmb:\t0000000000000000");
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"]),
        "{out}"
    );
    for refused in ["char-refused", "block-refused", "ws-refused"] {
        assert!(out.contains(refused), "{refused}: {out}");
    }
    assert!(!env.work().join("c").exists(), "{v}");
}

#[test]
fn network_and_host_name_changes_fail_inside_and_change_nothing() {
    if !have(is_root(), "root") || !have(on_path("ip"), "ip (iproute2)") {
        return;
    }
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    // An outer network and UTS namespace of the test's own: whatever happens inside
    // stays there, even if the sandbox failed.
    let inner = format!(
        "ip link add ab-{n} type bridge && echo link-added; ip addr add 10.254.7.1/32 dev lo && echo addr-added; \
         hostname ab-{n} && echo renamed; true",
        n = &nonce()[..6]
    );
    let script = format!(
        "{bin} run -q -p {profile} -- '{inner}'; echo \"after: $(hostname)\"; ip -o link; ip -o addr show dev lo; \
         echo control:; sh -c '{inner}'",
        bin = crate::support::bin().display(),
    );
    let out = env
        .program(
            "unshare",
            &["--net", "--uts", "--fork", "--", "sh", "-c", &script],
        )
        .run();
    let text = out.stdout.clone();
    let (sandboxed, control) = text.split_once("control:").expect("both halves ran");
    for changed in ["link-added", "addr-added", "renamed"] {
        assert!(
            !sandboxed.contains(changed),
            "{changed} inside the sandbox: {text}"
        );
        assert!(
            control.contains(changed),
            "{changed} without it (control): {text}"
        );
    }
    assert!(!sandboxed.contains("ab-"), "nothing changed: {text}");
    assert!(!sandboxed.contains("10.254.7.1"), "nothing changed: {text}");
}

#[test]
#[cfg(target_arch = "x86_64")]
fn the_syscall_filter_refuses_what_a_command_never_needs() {
    if !have(on_path("python3"), "python3") {
        return;
    }
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    // Harmless arguments: each call fails or does nothing when allowed; only the
    // filter answers EPERM for all of them. The control runs them unconfined, as root
    // in CI: `kexec_load` names an architecture no kernel has (EINVAL once permitted),
    // since with flags 0 and no segments it would unload a staged kernel.
    let probe = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
calls = {"mount": (165, 0, 0, 0, 0, 0), "io_uring_setup": (425, 0, 0), "bpf": (321, 0, 0, 0),
         "perf_event_open": (298, 0, 0, 0, -1, 0), "keyctl": (250, 999, 0, 0),
         "setns": (308, -1, 0), "open_by_handle_at": (304, -1, 0, 0), "userfaultfd": (323, 0),
         "unshare_user": (272, 0x10000000), "add_key": (248, 0, 0, 0, 0, 0), "swapoff": (168, 0),
         "init_module": (175, 0, 0, 0), "kexec_load": (246, 0, 0, 0, 0xffff0000)}
for name, args in calls.items():
    ctypes.set_errno(0)
    rc = libc.syscall(*[ctypes.c_long(a) for a in args])
    print(name, rc, ctypes.get_errno())
"#;
    let script = format!("python3 -c '{probe}'");
    let (code, v) = run_json(&env, &profile, &script);
    assert_eq!(code, Some(0), "{v}");
    let out = s(&v, "output");
    let control = crate::support::sh_text(&script);
    for name in [
        "mount",
        "io_uring_setup",
        "bpf",
        "perf_event_open",
        "keyctl",
        "setns",
        "open_by_handle_at",
        "userfaultfd",
        "unshare_user",
        "add_key",
        "init_module",
        "kexec_load",
    ] {
        let line = |text: &str| {
            text.lines()
                .find(|l| l.split_whitespace().next() == Some(name))
                .map(str::to_owned)
                .unwrap_or_default()
        };
        assert_eq!(line(out), format!("{name} -1 1"), "EPERM inside: {out}");
        assert_ne!(line(&control), format!("{name} -1 1"), "control: {control}");
    }
    let listed = env.run(&["sandbox", "check"]);
    for name in ["mount", "io_uring_setup", "bpf", "setns", "CLONE_NEWUSER"] {
        assert_has(&listed.stdout, name);
    }
}

#[test]
fn a_pid_namespace_hides_every_other_process() {
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    let me = std::process::id();
    let script = format!(
        "ps -e -o pid=,comm=; kill -0 {me} 2>&1; echo kill=$?; echo \"pgrep: $(pgrep -f agentbash | tr '\\n' ' ')\""
    );
    let (code, v) = run_json(&env, &profile, &script);
    assert_eq!(code, Some(0), "{v}");
    let out = s(&v, "output");
    let pids: Vec<i64> = out
        .lines()
        .take_while(|l| !l.contains("kill"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    // Init (1), the shell (2) and ps: nothing of the host.
    assert!(pids.contains(&1) && pids.iter().all(|&p| p < 100), "{out}");
    assert!(
        out.contains("No such process") && out.contains("kill=1"),
        "{out}"
    );
    // Only the namespace's own processes match (its init, the shell whose command
    // line names agentbash): the agentbash that runs the command is out of reach.
    let pgrep = out
        .lines()
        .find(|l| l.starts_with("pgrep:"))
        .unwrap_or_default();
    assert!(
        pgrep
            .split_whitespace()
            .skip(1)
            .all(|p| p.parse::<i64>().is_ok_and(|p| p < 100)),
        "{out}"
    );
}

#[test]
fn a_sandboxed_command_cannot_signal_the_server_that_runs_it() {
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    let mut server = crate::support::LiveServer::start(&env, &["rpc", "-p", &profile]);
    let pid = server.pid();
    let first = server.ask(json!({"id": "1", "type": "bash",
        "command": format!("kill -TERM {pid}; echo kill=$?; kill -KILL {pid}; echo $?")}));
    let out = s(&first["data"], "output").to_string();
    assert!(
        out.contains("kill=1") && out.contains("No such process"),
        "{first}"
    );
    // Still serving.
    let second = server.ask(json!({"id": "2", "type": "bash", "command": "echo alive"}));
    assert_eq!(second["data"]["output"], "alive\n", "{second}");
}

#[test]
fn git_cannot_be_swapped_nor_made_to_run_planted_code() {
    let Some((env, profile, work)) = git_workspace() else {
        return;
    };
    std::fs::create_dir_all(work.join("sub")).expect("sub");
    git(&work.join("sub"), &["init", "-q", "."]);
    std::fs::create_dir_all(work.join(".agentbash/profiles")).expect(".agentbash");
    let config_before = std::fs::read(work.join(".git/config")).expect("config");
    let script = "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m inside; echo commit=$?; \
        mv .git .g; echo mv=$?; mv sub/.git sub/.g; echo sub=$?; \
        rm -rf .git/hooks; echo evil > .git/hooks/post-checkout; echo hooks=$?; \
        git config core.fsmonitor 'touch pwned'; echo config=$?; echo x >> .git/info/exclude; echo info=$?; \
        echo \"$PWD/evil\" > .git/commondir; echo commondir=$?; touch .agentbash/profiles/x.toml; echo agentbash=$?";
    let (_, v) = run_json(&env, &profile, script);
    let out = s(&v, "output");
    for refused in [
        "mv=1",
        "sub=1",
        "hooks=1",
        "config=",
        "info=1",
        "agentbash=1",
    ] {
        assert!(out.contains(refused), "{refused}: {out}");
    }
    assert_lacks(out, "config=0");
    assert!(out.contains("commit=0"), "committing still works: {out}");
    assert!(work.join(".git").is_dir() && work.join("sub/.git").is_dir());
    assert!(!work.join(".g").exists() && !work.join("sub/.g").exists());
    assert_eq!(
        std::fs::read(work.join(".git/config")).expect("config"),
        config_before
    );
    assert!(!work.join(".git/hooks/post-checkout").exists());
    assert!(!work.join(".agentbash/profiles/x.toml").exists());
    // The one git file a command can still create is moved aside after the run, and
    // the caller is told.
    assert!(!work.join(".git/commondir").exists(), "{v}");
    assert!(work.join(".git/commondir.refused-by-agentbash").exists());
    assert!(
        s(&v, "text").contains(".git/commondir, which would change what git runs"),
        "{v}"
    );
}

#[test]
fn the_command_sees_only_a_private_dev() {
    let (env, profile) = sandboxed("mode = \"read-only\"");
    let (code, v) = run_json(
        &env,
        &profile,
        "ls /dev | tr '\\n' ' '; echo; echo x > /dev/null && head -c 1 /dev/zero | wc -c; \
         echo shm > /dev/shm/f && cat /dev/shm/f; python3 -c 'import os; m, s = os.openpty(); print(\"pty\", os.ttyname(s))'",
    );
    assert_eq!(code, Some(0), "{v}");
    let out = s(&v, "output");
    let listed: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        listed,
        [
            "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
            "tty", "urandom", "zero"
        ],
        "{out}"
    );
    assert!(out.contains("\n1\n") && out.contains("shm\n"), "{out}");
    assert!(out.contains("pty /dev/pts/0"), "a pty of its own: {out}");
}

#[test]
fn writable_mounts_honour_no_device_node_and_no_set_uid_bit() {
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    let work = std::fs::canonicalize(env.work()).expect("work");
    let (code, v) = run_json(&env, &profile, "cat /proc/self/mountinfo");
    assert_eq!(code, Some(0), "{v}");
    let out = s(&v, "output");
    let options = |point: &str| {
        out.lines()
            .filter(|l| l.split_whitespace().nth(4) == Some(point))
            .map(|l| l.split_whitespace().nth(5).unwrap_or_default().to_string())
            .next_back()
            .unwrap_or_default()
    };
    let tmpdir = v["sandbox"]["tmpdir"].as_str().expect("tmpdir");
    for point in [work.to_str().expect("utf-8"), tmpdir, "/dev/shm"] {
        let o = options(point);
        assert!(
            o.contains("nosuid") && o.contains("nodev") && o.starts_with("rw"),
            "{point}: {o:?}\n{out}"
        );
    }
    let root = options("/");
    assert!(root.starts_with("ro"), "{root}");
}

#[test]
fn agentbash_own_directories_stay_read_only_even_inside_a_writable_tree() {
    let env = TestEnv::new();
    let root = env.root().display().to_string();
    let profile = env.write(
        "wide.toml",
        format!(
            "extends = \"default\"\n[shell]\nsnapshot = false\n[sandbox]\nmode = \"workspace-write\"\nwritable = [\"{root}\"]\n"
        ),
    );
    for dir in [env.state_dir(), env.config_dir(), env.root().join("cache")] {
        std::fs::create_dir_all(&dir).expect("dir");
    }
    let script = format!(
        "for d in {state} {config} {cache}; do touch \"$d/planted\" 2>/dev/null && echo \"wrote $d\"; done; \
         touch {root}/ok && echo root-writable; echo t > \"$TMPDIR/t\" && echo tmp-writable",
        state = env.state_dir().display(),
        config = env.config_dir().display(),
        cache = env.root().join("cache/agentbash").display(),
    );
    let v = env
        .run_json(&script)
        .profile(profile.to_str().expect("utf-8"))
        .json();
    let text = s(&v, "output");
    assert_lacks(text, "wrote");
    assert!(
        text.contains("root-writable") && text.contains("tmp-writable"),
        "{text}"
    );
    for dir in [env.state_dir(), env.config_dir()] {
        assert!(!dir.join("planted").exists(), "{}", dir.display());
    }
}

#[test]
fn only_stdin_stdout_and_stderr_reach_the_command() {
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    let outside = env.root().join("outside-file");
    std::fs::write(&outside, "original\n").expect("file");
    for extra in [vec!["-p", profile.as_str()], vec![]] {
        let mut args = vec!["run", "-q"];
        args.extend(extra.iter().copied());
        let script = format!(
            "exec 7>>{out}; exec {bin} {args} -- 'echo pwned >&7 || echo refused; ls /proc/self/fd | tr \"\\n\" \" \"'",
            out = outside.display(),
            bin = crate::support::bin().display(),
            args = args.join(" "),
        );
        let out = env.program("bash", &["-c", &script]).run();
        assert!(
            out.stdout.contains("refused"),
            "{}{}",
            out.stdout,
            out.stderr
        );
        assert_lacks(&out.stdout, " 7 ");
    }
    assert_eq!(
        std::fs::read_to_string(&outside).expect("read"),
        "original\n"
    );
}

#[test]
fn a_required_sandbox_never_runs_unconfined_nor_with_a_workspace_of_everything() {
    let (env, profile) = sandboxed("mode = \"read-only\"\nrequired = true\nengine = \"none\"");
    let marker = env.root().join("ran");
    let cmd = format!("touch {}", marker.display());
    let out = env.run_text(&cmd).profile(&profile).code(125).run();
    assert_has(&out.stderr, "engine = \"none\"");
    assert!(!marker.exists());

    // Started in / (or in HOME), workspace-write would open everything.
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    for dir in [PathBuf::from("/"), env.home()] {
        let out = env
            .cmd(&["run", "-p", &profile, "--", &cmd])
            .current_dir(&dir)
            .run();
        out.assert_code(125);
        assert_has(&out.stderr, "[sandbox] workspace");
        assert!(!marker.exists());
    }
    // Named on purpose, it is the user's choice.
    let home = env.home().display().to_string();
    let explicit = env.write(
        "explicit.toml",
        format!(
            "extends = \"default\"\n[shell]\nsnapshot = false\n[sandbox]\nmode = \"workspace-write\"\nworkspace = \"{home}\"\n"
        ),
    );
    let out = env
        .cmd(&[
            "run",
            "-p",
            explicit.to_str().expect("utf-8"),
            "--",
            "touch ok",
        ])
        .current_dir(env.home())
        .run();
    out.assert_code(0);
}

#[test]
fn a_process_that_moves_out_of_the_run_cgroup_is_still_stopped() {
    let Some(mount) = crate::support::cgroup2_mount() else {
        have(false, "a cgroup2 mount");
        return;
    };
    if !have(is_root(), "root (to move a process between cgroups)") {
        return;
    }
    let env = TestEnv::new();
    let tag = format!("304.{}", nonce());
    let escape = format!(
        "sh -c 'echo $$ > {}/cgroup.procs; exec sleep {tag}' & sleep 0.2; echo started",
        mount.display()
    );
    let v = env.run_json(&escape).json();
    let killed = v["background_killed"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        killed
            .iter()
            .any(|k| k["command"] == format!("sleep {tag}")),
        "{v}"
    );
    assert!(s(&v, "text").contains(&format!("sleep {tag}")), "{v}");
    assert!(no_process_runs(&format!("sleep {tag}")), "it is gone");
}

/// A user other than root gets the same confinement, through a user namespace that
/// maps only its own ids. agentbash is not dumpable, which used to hide its child's
/// `/proc` files from the user and leave it with Landlock alone.
#[test]
fn a_user_other_than_root_gets_the_namespaces_too() {
    if !have(is_root(), "root (to become nobody)") || !have(on_path("setpriv"), "setpriv") {
        return;
    }
    let root = tempfile::tempdir().expect("temp");
    std::fs::create_dir_all(root.path().join("outside")).expect("dir");
    std::fs::write(root.path().join("outside/file"), "original\n").expect("file");
    let r = root.path().display().to_string();
    let command = format!(
        "id -u; ps -e -o pid= | wc -l; touch ok && echo ws-ok; echo x > {r}/outside/file; chmod 777 {r}/outside/file; true"
    );
    let args = [
        "run",
        "--json",
        "--sandbox",
        "workspace-write",
        "--",
        &command,
    ];
    let v = run_json_as_nobody(root.path(), &args, &[]);
    assert_eq!(v["sandbox"]["engine"], "namespaces", "{v}");
    let text = s(&v, "output");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("65534"), "{text}");
    let count: usize = lines.next().unwrap_or("0").trim().parse().unwrap_or(0);
    assert!(count < 10, "its own PID namespace: {text}");
    assert_has(text, "ws-ok");
    let file = root.path().join("outside/file");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "original\n");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
    assert_ne!(mode & 0o777, 0o777, "chmod outside refused");
}

/// Landlock alone (no namespaces): no capability, the host's disk nodes unreadable,
/// signals only within the run.
#[test]
fn the_landlock_engine_drops_capabilities_and_keeps_the_host_devices_out() {
    let (env, profile) = sandboxed("mode = \"workspace-write\"\nengine = \"landlock\"");
    let me = std::process::id();
    let (code, v) = run_json(
        &env,
        &profile,
        &format!(
            "grep -E '^Cap(Eff|Bnd)' /proc/self/status; ls /dev >/dev/null 2>&1 || echo dev-unlisted; \
             for d in /dev/vda /dev/sda /dev/nvme0n1 /dev/mem /dev/kmsg; do [ -e $d ] && {{ head -c1 $d >/dev/null 2>&1 && echo read-$d; }}; done; \
             echo x > /dev/null && echo null-ok; kill -0 {me} 2>/dev/null || echo signal-refused; true"
        ),
    );
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["sandbox"]["engine"], "landlock", "{v}");
    let out = s(&v, "output");
    if is_root() {
        assert_has(out, "CapEff:\t0000000000000000");
        assert_has(out, "CapBnd:\t0000000000000000");
    }
    assert!(
        out.contains("dev-unlisted") && out.contains("null-ok"),
        "{out}"
    );
    assert_lacks(out, "read-/dev");
    assert_has(out, "signal-refused");
}

/// Teardown in the PID namespace: background processes are listed by their host pid
/// and stopped, a timeout ends the whole tree, and the namespace's own init is never
/// listed.
#[test]
fn teardown_lists_and_stops_what_the_sandboxed_command_left() {
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    let tag = format!("305.{}", nonce());
    let (code, v) = run_json(&env, &profile, &format!("sleep {tag} & echo started"));
    assert_eq!(code, Some(0), "{v}");
    let killed = v["background_killed"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(killed.len(), 1, "only the sleep, not init: {v}");
    assert_eq!(killed[0]["command"], format!("sleep {tag}"), "{v}");
    assert!(
        killed[0]["pid"].as_i64().is_some_and(|p| p > 2),
        "a host pid: {v}"
    );
    assert!(no_process_runs(&format!("sleep {tag}")));
    let v = env
        .run_json(format!("sleep {tag}1 & sleep {tag}2"))
        .opts(&["-t", "1", "-p", &profile])
        .json();
    assert_eq!(v["exit_code"], 124, "{v}");
    assert!(no_process_runs(&format!("sleep {tag}")), "{v}");
}

/// On a terminal the command's own terminal keeps its name (`ttyname` finds it in the
/// private `/dev`), and it can still open pseudo-terminals of its own.
#[test]
fn a_sandboxed_command_on_a_terminal_knows_its_terminal() {
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    let v = env.run_json("tty; test -t 0 && echo on-a-tty; python3 -c 'import os; m, s = os.openpty(); print(\"own\", os.ttyname(s))'").opts(&["--pty", "-p", &profile]).json();
    let text = s(&v, "output");
    assert!(
        text.contains("/dev/console") && text.contains("on-a-tty"),
        "{v}"
    );
    assert!(text.contains("own /dev/pts/"), "{v}");
}

/// A linked worktree's gitdir inside the workspace's `.git` (its `commondir`, `config`,
/// `gitdir` pointer) is read-only too: git follows them when it runs in that worktree.
#[test]
fn a_worktree_gitdir_inside_the_workspace_stays_read_only() {
    let Some((env, profile, work)) = git_workspace() else {
        return;
    };
    git(
        &work,
        &[
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
    );
    let elsewhere = env.root().join("wt");
    git(
        &work,
        &["worktree", "add", "-q", elsewhere.to_str().expect("utf-8")],
    );
    let inner = work.join(".git/worktrees/wt");
    let before = std::fs::read(inner.join("commondir")).expect("commondir");
    let (_, v) = run_json(
        &env,
        &profile,
        "echo /tmp/evil > .git/worktrees/wt/commondir; echo c=$?; echo x > .git/worktrees/wt/gitdir; echo g=$?",
    );
    let out = s(&v, "output");
    assert!(out.contains("c=1") && out.contains("g=1"), "{out}");
    assert_eq!(
        std::fs::read(inner.join("commondir")).expect("commondir"),
        before
    );
}

/// What a probe of this boot found is kept (the probe is a fork that creates every
/// namespace), only when positive, and only as agentbash's own file: a hostile or
/// foreign file is not believed, and `sandbox check` probes afresh.
#[test]
fn the_namespace_probe_is_kept_for_the_boot_and_checked() {
    let (env, profile) = sandboxed("mode = \"workspace-write\"");
    let (code, v) = run_json(&env, &profile, "true");
    assert_eq!(code, Some(0), "{v}");
    let cache = env.root().join("cache/agentbash/sandbox-probe");
    let kept = std::fs::read_to_string(&cache).expect("the probe's answer is kept");
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").expect("boot id");
    assert!(
        kept.starts_with(boot.trim()) && kept.contains("network=0"),
        "{kept}"
    );
    // Runs on it still get their namespaces.
    let (_, v) = run_json(&env, &profile, "ps -e -o pid= | wc -l");
    assert_eq!(v["sandbox"]["engine"], "namespaces", "{v}");
    // A file of another boot is not believed (the next run probes and rewrites it).
    std::fs::write(&cache, "not-this-boot 0 x network=0 user=1\n").expect("write");
    let (_, v) = run_json(&env, &profile, "true");
    assert_eq!(v["exit_code"], 0, "{v}");
    assert!(
        std::fs::read_to_string(&cache)
            .expect("cache")
            .starts_with(boot.trim())
    );
    // `sandbox check` probes for real.
    env.run(&["sandbox", "check"]);
    assert!(
        !cache.exists()
            || std::fs::read_to_string(&cache)
                .expect("cache")
                .starts_with(boot.trim())
    );
}
