//! The kernel sandbox through the real binary: every write, read and connection is
//! tried for real, on directories each test creates under its own temp root.

use crate::support::{
    Output, Test, TestEnv, assert_has, confining, is_root, needs_program, needs_root, notices, s,
    scaled, skip,
};
use serde_json::{Value, json};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A test env with a directory outside the workspace (holding `file`), and a
/// `sandbox.toml` profile with `[sandbox]` set to `section`, required unless it says
/// otherwise ([`confining`]).
struct Sandboxed {
    env: TestEnv,
    outside: PathBuf,
    profile: String,
}

impl Sandboxed {
    fn new(section: &str) -> Sandboxed {
        let env = TestEnv::new();
        let outside = env.root().join("outside");
        std::fs::create_dir_all(&outside).expect("outside dir");
        std::fs::write(outside.join("file"), "original\n").expect("outside file");
        let profile = env.root().join("sandbox.toml");
        std::fs::write(
            &profile,
            format!(
                "extends = \"default\"\n[shell]\nsnapshot = false\n[sandbox]\n{}\n",
                confining(section)
            ),
        )
        .expect("profile");
        Sandboxed {
            env,
            outside,
            profile: profile.display().to_string(),
        }
    }

    /// `run --json -p sandbox.toml <extra> -- script`.
    fn run(&self, extra: &[&str], script: &str) -> (Option<i32>, Value) {
        let out = self
            .env
            .run_json(script)
            .profile(&self.profile)
            .opts(extra)
            .run();
        (out.code(), out.json())
    }

    fn o(&self, name: &str) -> String {
        self.outside.join(name).display().to_string()
    }
}

fn output(v: &Value) -> &str {
    s(v, "output")
}

#[test]
fn workspace_write_allows_the_workspace_and_refuses_outside_with_a_notice() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let (code, v) = t.run(&[], &format!("touch a && echo made; touch {}", t.o("b")));
    assert_eq!(code, Some(1), "{v}");
    assert!(t.env.work().join("a").exists(), "{v}");
    assert!(!t.outside.join("b").exists(), "{v}");
    assert!(output(&v).contains("Read-only file system"), "{v}");
    let text = s(&v, "text");
    assert!(
        text.contains(&format!("[sandbox: writing {} was refused", t.o("b")))
            && text.contains("[sandbox] writable"),
        "{text}"
    );
    assert_eq!(v["sandbox"]["mode"], "workspace-write");
    assert_eq!(v["sandbox"]["engine"], "namespaces");
    assert_eq!(v["sandbox"]["landlock"], true);
}

#[test]
fn rm_chmod_chown_and_touch_outside_change_nothing() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let file = t.outside.join("file");
    let before = std::fs::metadata(&file).expect("meta");
    let script = format!(
        "rm -rf {o}; chmod 777 {f}; chown 65534 {f}; touch -d '2001-01-01' {f}; mv {f} {o}/moved; true",
        o = t.outside.display(),
        f = file.display()
    );
    let (code, v) = t.run(&[], &script);
    assert_eq!(code, Some(0), "{v}");
    let after = std::fs::metadata(&file).expect("the file is still there");
    assert_eq!(after.mode(), before.mode(), "{v}");
    assert_eq!(after.uid(), before.uid(), "{v}");
    assert_eq!(after.mtime(), before.mtime(), "{v}");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "original\n");
}

#[test]
fn git_hooks_and_config_stay_read_only_inside_a_writable_workspace() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    std::fs::create_dir_all(t.env.work().join(".git/hooks")).expect("hooks");
    std::fs::write(t.env.work().join(".git/config"), "[core]\n").expect("config");
    let (_, v) = t.run(
        &[],
        "echo evil > .git/hooks/pre-commit; echo '[core] fsmonitor = evil' >> .git/config; echo ok > .git/other",
    );
    assert!(!t.env.work().join(".git/hooks/pre-commit").exists(), "{v}");
    assert_eq!(
        std::fs::read_to_string(t.env.work().join(".git/config")).expect("config"),
        "[core]\n"
    );
    assert!(
        t.env.work().join(".git/other").exists(),
        "the rest of .git is writable: {v}"
    );
}

#[test]
fn symlinks_and_proc_root_do_not_widen_what_is_writable() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let o = t.outside.display();
    let script = format!(
        "ln -s {o} link; echo x >> link/file; echo x > link/new; echo x > /proc/self/root{o}/new2; \
         echo x > /proc/$$/cwd/../outside/new3; true"
    );
    let (_, v) = t.run(&[], &script);
    assert_eq!(
        std::fs::read_to_string(t.outside.join("file")).expect("file"),
        "original\n",
        "{v}"
    );
    for name in ["new", "new2", "new3"] {
        assert!(!t.outside.join(name).exists(), "{name}: {v}");
    }
}

/// Each escape leaves its own sign (a word printed, a file outside). The control runs
/// the very script without agentbash, as root in a private mount namespace the test
/// makes (so its mounts never reach the host): every sign appears there, so their
/// absence under the sandbox is the sandbox's doing. The remounts are bind remounts:
/// they change one mount's flags, never the file system's.
#[test]
fn escapes_by_mount_unshare_and_chroot_fail() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    std::fs::create_dir_all(t.env.work().join("m")).expect("dir");
    let (f1, f2, f3) = (t.o("f1"), t.o("f2"), t.o("f3"));
    let script = format!(
        "mount -t tmpfs none m && echo MOUNTED; mount -o remount,bind,rw / && echo REMOUNTED; \
         unshare -r sh -c 'touch {f1}'; unshare -m sh -c 'mount -o remount,bind,rw / ; touch {f2}'; \
         chroot / touch {f3}; true"
    );
    let signs = ["f1", "f2", "f3"];
    if is_root() {
        let control = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .current_dir(t.env.work())
            .output()
            .expect("run unshare");
        let said = String::from_utf8_lossy(&control.stdout);
        assert!(
            said.contains("MOUNTED\n") && said.contains("REMOUNTED\n"),
            "control: {said} {}",
            String::from_utf8_lossy(&control.stderr)
        );
        for f in signs {
            assert!(
                t.outside.join(f).exists(),
                "control: no {f}: {}",
                String::from_utf8_lossy(&control.stderr)
            );
            std::fs::remove_file(t.outside.join(f)).expect("remove");
        }
    } else {
        needs_root("the unconfined control (mount, unshare and chroot)").skip_part();
    }
    let (_, v) = t.run(&[], &script);
    assert!(!output(&v).contains("MOUNTED"), "{v}");
    assert!(!output(&v).contains("REMOUNTED"), "{v}");
    for f in signs {
        assert!(!t.outside.join(f).exists(), "{f}: {v}");
    }
}

#[test]
fn another_sessions_files_cannot_be_written() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let (code, v) = t.run(&["-s", "other"], "export X=1");
    assert_eq!(code, Some(0), "{v}");
    let sessions = t.env.state_dir().join("sessions");
    std::fs::create_dir_all(t.env.work().join("sub")).expect("sub");
    let (code, v) = t.run(&["-s", "mine"], "cd sub; export Y=2");
    assert_eq!(code, Some(0), "the session's own state is saved: {v}");
    let (_, v) = t.run(&["-s", "mine"], "pwd; echo $Y");
    assert!(
        output(&v).contains("/work/sub\n2"),
        "state carried over: {v}"
    );
    // The other session's files, as they are before the attempt.
    let theirs: Vec<PathBuf> = walk(&sessions.join("other"));
    assert!(!theirs.is_empty(), "session `other` saved no file: {v}");
    let read = |files: &[PathBuf]| -> Vec<Vec<u8>> {
        files
            .iter()
            .map(|f| std::fs::read(f).expect("read"))
            .collect()
    };
    let before = read(&theirs);
    let attempt = format!(
        "for f in $(find {} -path '*other*' -type f); do echo \"TRY $f\"; echo evil >> $f && echo WROTE; done; true",
        sessions.display()
    );
    let (_, v) = t.run(&["-s", "mine"], &attempt);
    // It saw every file (reading is allowed) and changed none.
    for f in &theirs {
        assert!(
            output(&v).contains(&format!("TRY {}\n", f.display())),
            "{}: {v}",
            f.display()
        );
    }
    assert!(!output(&v).contains("WROTE"), "{v}");
    assert_eq!(read(&theirs), before, "{v}");
    // The control: unconfined (and in no session: `mine` keeps its sandbox policy), the
    // same attempt writes every one of them.
    let (_, v) = t.run(&["--sandbox", "off"], &attempt);
    assert_eq!(
        output(&v).matches("WROTE").count(),
        theirs.len(),
        "the control: {v}"
    );
    assert_ne!(read(&theirs), before, "the control: {v}");
}

#[test]
fn tmpdir_is_private_writable_and_removed_after_the_run() {
    let t = Sandboxed::new("mode = \"read-only\"");
    let (code, v) = t.run(
        &[],
        "echo $TMPDIR; stat -c %a \"$TMPDIR\"; echo hi > \"$TMPDIR/x\" && cat \"$TMPDIR/x\"",
    );
    assert_eq!(code, Some(0), "{v}");
    let lines: Vec<&str> = output(&v).lines().collect();
    assert_eq!(lines[1..], ["700", "hi"], "{v}");
    let tmpdir = Path::new(lines[0]);
    assert_eq!(v["sandbox"]["tmpdir"], lines[0]);
    assert!(tmpdir.starts_with(t.env.state_dir()), "{v}");
    assert!(!tmpdir.exists(), "removed after the run");
}

#[test]
fn read_only_refuses_writes_but_reading_tools_work() {
    let t = Sandboxed::new("mode = \"read-only\"");
    std::fs::write(t.env.work().join("notes.txt"), "hello\n").expect("write");
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(t.env.work())
        .status();
    let (code, v) = t.run(&[], "touch a");
    assert_eq!(code, Some(1), "{v}");
    assert!(!t.env.work().join("a").exists());
    // The relative path in `touch: cannot touch 'a'` is named as the real one.
    let refused = format!(
        "[sandbox: writing {} was refused: the read-only sandbox",
        t.env.work().join("a").display()
    );
    assert!(s(&v, "text").contains(&refused), "{v}");
    let (code, v) = t.run(&[], "ls && cat notes.txt");
    assert_eq!(code, Some(0), "{v}");
    assert!(output(&v).contains("notes.txt\nhello"), "{v}");
    if git.is_ok_and(|g| g.success()) {
        let (code, v) = t.run(&[], "git status --short");
        assert_eq!(code, Some(0), "{v}");
        assert!(output(&v).contains("notes.txt"), "{v}");
    } else {
        needs_program("git", "git").skip_part();
    }
}

#[test]
fn deny_read_hides_a_key_from_every_reader_even_as_root() {
    let env_home = tempfile::tempdir().expect("tmp");
    let ssh = env_home.path().join("fake-home/.ssh");
    std::fs::create_dir_all(&ssh).expect("ssh");
    std::fs::write(ssh.join("id_ed25519"), "SECRET-KEY-MATERIAL\n").expect("key");
    let t = Sandboxed::new(&format!(
        "mode = \"workspace-write\"\ndeny_read = [\"{}\"]",
        ssh.display()
    ));
    let k = ssh.join("id_ed25519");
    let script = format!(
        "cat {k}; ls -la {d}; cp {k} copied; tar cf t.tar {d}; \
         python3 -c 'print(open(\"{k}\").read())'; cat copied; tar xOf t.tar; true",
        k = k.display(),
        d = ssh.display()
    );
    let (_, v) = t.run(&[], &script);
    assert!(!output(&v).contains("SECRET"), "{v}");
    assert!(!output(&v).contains("id_ed25519\n"), "not even listed: {v}");
}

/// A listener outside the sandbox: each accepted connection is counted.
fn listener() -> (u16, std::sync::mpsc::Receiver<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { break };
            let _ = c.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
            if tx.send(()).is_err() {
                break;
            }
        }
    });
    (port, rx)
}

#[test]
fn network_off_refuses_loopback_tcp_udp_and_dns_fast() {
    let (port, accepted) = listener();
    let t = Sandboxed::new("mode = \"workspace-write\"\nnetwork = false");
    let started = Instant::now();
    let script = format!(
        "(echo hi > /dev/tcp/127.0.0.1/{port}) && echo TCP-OK; \
         curl -s -m 5 http://localhost:{port}/ && echo CURL-OK; \
         (echo hi > /dev/udp/127.0.0.1/{port}) && echo UDP-OK; \
         getent hosts example.com && echo DNS-OK; true"
    );
    let (_, v) = t.run(&[], &script);
    assert!(
        started.elapsed() < scaled(Duration::from_secs(5)),
        "fails fast: {v}"
    );
    for ok in ["TCP-OK", "CURL-OK", "UDP-OK", "DNS-OK"] {
        assert!(!output(&v).contains(ok), "{ok}: {v}");
    }
    assert!(accepted.try_recv().is_err(), "nothing reached the listener");
    assert_eq!(v["sandbox"]["network"], false);

    let t = Sandboxed::new("mode = \"workspace-write\"\nnetwork = true");
    let (code, v) = t.run(&[], &format!("curl -s -m 5 http://127.0.0.1:{port}/"));
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(output(&v).trim(), "ok", "{v}");
    assert!(accepted.recv_timeout(Duration::from_secs(5)).is_ok());
}

#[test]
fn the_pty_path_is_sandboxed_too() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let (code, v) = t.run(
        &["--pty"],
        &format!("tty >/dev/null && touch ok-here && touch {}", t.o("b")),
    );
    assert_eq!(v["mode"], "pty", "{v}");
    assert_eq!(code, Some(1), "{v}");
    assert!(t.env.work().join("ok-here").exists(), "{v}");
    assert!(!t.outside.join("b").exists(), "{v}");
}

#[test]
fn the_sandbox_flag_overrides_the_profile_per_run() {
    let t = Sandboxed::new("mode = \"off\"");
    let (_, v) = t.run(&["--sandbox", "read-only"], "touch a");
    assert!(!t.env.work().join("a").exists(), "{v}");
    assert_eq!(v["sandbox"]["mode"], "read-only");
    let t = Sandboxed::new("mode = \"read-only\"");
    let (code, v) = t.run(&["--sandbox", "off"], "touch a");
    assert_eq!(code, Some(0), "{v}");
    assert!(t.env.work().join("a").exists());
    assert_eq!(v["sandbox"], Value::Null);
}

#[test]
fn required_with_an_unavailable_engine_exits_125_and_unrequired_runs_with_a_warning() {
    let t = Sandboxed::new("mode = \"workspace-write\"\nengine = \"bwrap\"\nrequired = true");
    let (code, v) = t.run(&[], "touch a");
    assert_eq!(code, Some(125), "{v}");
    assert!(!t.env.work().join("a").exists());
    assert!(
        s(&v, "error").contains("required = true") && s(&v, "error").contains("bwrap"),
        "{v}"
    );
    let t = Sandboxed::new("mode = \"workspace-write\"\nengine = \"bwrap\"\nrequired = false");
    let (code, v) = t.run(&[], &format!("touch {}", t.o("b")));
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["sandbox"]["engine"], "none");
    assert!(
        v["sandbox"]["weaker"]
            .as_str()
            .is_some_and(|w| w.contains("bwrap"))
    );
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("NOT enforced"), "{v}");
}

/// `agentbash sandbox check`, which must succeed.
fn sandbox_check(env: &TestEnv) -> Output {
    env.run_ok(&["sandbox", "check"])
}

#[test]
fn sandbox_check_reports_each_mechanism() {
    let env = TestEnv::new();
    let out = sandbox_check(&env);
    for line in [
        "landlock:          ABI ",
        "network isolation: ",
        "seccomp:           ",
        "bubblewrap:        ",
        "engine for auto:   namespaces + landlock",
    ] {
        assert!(out.stdout.contains(line), "{line}\n{}", out.stdout);
    }
    let v = env
        .test()
        .args(&["sandbox", "check", "--json"])
        .code(0)
        .json();
    assert!(
        v["landlock_abi"].as_i64().is_some_and(|abi| abi >= 1),
        "{v}"
    );
    assert_eq!(v["mount_namespaces"], true);
}

#[test]
fn explain_shows_mode_engine_workspace_writable_deny_read_and_network() {
    let t = Sandboxed::new(
        "mode = \"workspace-write\"\nwritable = [\"~/.cache\"]\ndeny_read = [\"~/.ssh\"]\nnetwork = false",
    );
    std::fs::create_dir_all(t.env.home().join(".cache")).expect("cache dir");
    let out = t.env.run(&["explain", "-p", &t.profile, "--", "ls"]);
    out.assert_code(0);
    let work = t.env.work().display().to_string();
    for line in [
        "sandbox     workspace-write, engine namespaces + landlock (asked: auto), network off"
            .to_string(),
        format!("  workspace {work}"),
        "  writable  ~/.cache (and a private TMPDIR)".into(),
        "  deny_read ~/.ssh".into(),
    ] {
        assert!(out.stdout.contains(&line), "{line}\n{}", out.stdout);
    }
    let v = t.env.explain_json("ls").profile("strict").json();
    assert_eq!(v["sandbox"]["mode"], "read-only");
    assert_eq!(v["sandbox"]["network"], false);
    assert!(v["sandbox"]["deny_read"].to_string().contains("~/.ssh"));
}

#[test]
fn builtin_profiles_set_the_sandbox() {
    for (profile, mode) in [
        ("default", "off"),
        ("ci", "off"),
        ("agent", "workspace-write"),
        ("strict", "read-only"),
    ] {
        let out = Test::new().explain_json("true").profile(profile).run();
        assert_eq!(out.json()["sandbox"]["mode"], mode, "{profile}");
    }
}

/// An rpc `bash` request `id` with the fields of `request`.
fn bash(id: u64, mut request: Value) -> Value {
    request["id"] = json!(id);
    request["type"] = json!("bash");
    request
}

fn response_output(v: &Value) -> String {
    v["data"]["output"].as_str().unwrap_or_default().to_string()
}

#[test]
fn rpc_live_shells_are_not_shared_between_sandboxed_and_unsandboxed_requests() {
    let t = Sandboxed::new("mode = \"off\"\nallow_override = true");
    let mut rpc = t.env.rpc(&["-p", &t.profile]);
    let plain = rpc.ask(bash(1, json!({"command": "echo $$"})));
    let plain_again = rpc.ask(bash(2, json!({"command": "echo $$"})));
    let boxed = rpc.ask(bash(
        3,
        json!({"command": format!("echo $$; touch {}", t.o("b")), "sandbox": "workspace-write"}),
    ));
    let boxed_again = rpc.ask(bash(
        4,
        json!({"command": "echo $$", "sandbox": "workspace-write"}),
    ));
    let pid = |v: &Value| {
        response_output(v)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(pid(&plain), pid(&plain_again), "{plain} {plain_again}");
    assert_eq!(pid(&boxed), pid(&boxed_again), "{boxed} {boxed_again}");
    assert_ne!(pid(&plain), pid(&boxed), "{plain} {boxed}");
    assert!(!t.outside.join("b").exists(), "{boxed}");
    let unboxed = rpc.ask(bash(5, json!({"command": format!("touch {}", t.o("c"))})));
    assert!(t.outside.join("c").exists(), "{unboxed}");
}

#[test]
fn rpc_refuses_a_sandbox_override_unless_the_profile_allows_it() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let mut rpc = t.env.rpc(&["-p", &t.profile]);
    let v = rpc.ask(bash(
        1,
        json!({"command": format!("touch {}", t.o("b")), "sandbox": "off"}),
    ));
    assert_eq!(v["success"], false, "{v}");
    assert_has(s(&v, "error"), "allow_override = false");
    assert!(!t.outside.join("b").exists());
    let v = rpc.ask(bash(2, json!({"command": format!("touch {}", t.o("b"))})));
    assert!(!t.outside.join("b").exists(), "{v}");
}

#[test]
fn ptrace_of_agentbash_fails() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    // $PPID is agentbash: it spawned the shell directly. (python's own parent is the
    // sandboxed shell, which it may trace.)
    let script = "python3 -c 'import ctypes, sys\n\
                  libc = ctypes.CDLL(None, use_errno=True)\n\
                  rc = libc.ptrace(16, int(sys.argv[1]), 0, 0)\n\
                  print(\"attach\", rc, ctypes.get_errno())' $PPID; \
                  timeout 2 strace -p $PPID -o /dev/null; echo strace=$?";
    let (_, v) = t.run(&[], script);
    let line = output(&v)
        .lines()
        .find(|l| l.starts_with("attach"))
        .unwrap_or_default()
        .to_string();
    assert!(line.starts_with("attach -1 "), "{v}");
    // 124 would mean strace attached and ran until the timeout.
    assert!(output(&v).contains("strace=1"), "{v}");
}

#[test]
fn another_runs_artifacts_cannot_be_written() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let v = t.env.run_json("seq 1 200000").opts(&["--tail", "3"]).json();
    let artifacts = t.env.state_dir().join("artifacts");
    let files: Vec<PathBuf> = walk(&artifacts);
    assert!(!files.is_empty(), "the first run left an artifact: {v}");
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(f).expect("read"))
        .collect();
    let script = format!(
        "for f in $(find {d} -type f); do echo evil >> $f && echo WROTE; rm -f $f && echo REMOVED; done; \
         touch {d}/new && echo CREATED; true",
        d = artifacts.display()
    );
    let (_, v) = t.run(&[], &script);
    for word in ["WROTE", "REMOVED", "CREATED"] {
        assert!(!output(&v).contains(word), "{word}: {v}");
    }
    let after: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(f).expect("still there"))
        .collect();
    assert_eq!(before, after);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_setuid_helper_gains_nothing_even_with_ld_preload() {
    use std::os::unix::fs::PermissionsExt;
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let helper = t.env.work().join("id-setuid");
    std::fs::copy("/usr/bin/id", &helper).expect("copy id");
    // Owned by nobody and set-uid: run by anyone else, it would run as nobody.
    if std::os::unix::fs::chown(&helper, Some(65534), None).is_err() {
        skip!(needs_root("chown to nobody"));
    }
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o4755)).expect("chmod");
    let outside = Command::new(&helper)
        .arg("-u")
        .output()
        .expect("run helper");
    let outside = String::from_utf8_lossy(&outside.stdout).trim().to_string();
    if outside != "65534" {
        skip!(
            format!("the temp file system ignores set-uid bits (the helper ran as {outside})"),
            "a TMPDIR on a file system mounted without nosuid"
        );
    }
    let (code, v) = t.run(
        &[],
        "grep NoNewPrivs /proc/self/status; ./id-setuid -u; LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 ./id-setuid -u",
    );
    assert_eq!(code, Some(0), "{v}");
    let own = Command::new("id").arg("-u").output().expect("id");
    let own = String::from_utf8_lossy(&own.stdout).trim().to_string();
    let lines: Vec<&str> = output(&v).lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["NoNewPrivs:", "1"],
        "{v}"
    );
    assert_eq!(
        lines[1..],
        [own.as_str(), own.as_str()],
        "the set-uid bit gave nothing: {v}"
    );
}

#[test]
fn the_rc_snapshot_is_generated_read_only_under_a_sandboxed_run() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let profile = t.env.root().join("snap.toml");
    std::fs::write(
        &profile,
        "extends = \"default\"\n[shell]\nsnapshot = true\n[sandbox]\nmode = \"workspace-write\"\n",
    )
    .expect("profile");
    let planted = t.o("from-rc");
    let in_workspace = t.env.work().join("from-rc");
    t.env.write_rc(format!(
        "touch {planted}\ntouch {}\nrc_function() {{ echo from-the-rc; }}\n",
        in_workspace.display()
    ));
    let v = t
        .env
        .run_json("rc_function")
        .profile(&profile.display().to_string())
        .json();
    assert_eq!(
        s(&v, "text"),
        "from-the-rc",
        "the snapshot was made and sourced: {v}"
    );
    assert!(
        !t.outside.join("from-rc").exists(),
        "the rc wrote outside: {v}"
    );
    assert!(
        !in_workspace.exists(),
        "generation is read-only, the workspace too: {v}"
    );
}

#[test]
fn a_peer_cwd_does_not_move_the_workspace() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let mut rpc = t.env.rpc(&["-p", &t.profile]);
    let v = rpc.ask(bash(
        1,
        json!({"command": format!("touch {} ; cd / ; touch {}", t.o("via-cwd"), t.o("via-cd")), "cwd": t.outside.display().to_string()}),
    ));
    assert!(!t.outside.join("via-cwd").exists(), "{v}");
    assert!(!t.outside.join("via-cd").exists(), "{v}");
    assert_eq!(
        v["data"]["sandbox"]["workspace"].as_str(),
        Some(t.env.work().display().to_string().as_str()),
        "{v}"
    );
}

#[test]
fn a_reused_live_shell_reports_the_tmpdir_it_gives_the_command() {
    let t = Sandboxed::new("mode = \"workspace-write\"");
    let mut rpc = t.env.rpc(&["-p", &t.profile]);
    for id in 1..=2 {
        let v = rpc.ask(bash(id, json!({"command": "echo $TMPDIR"})));
        let used = response_output(&v).trim().to_string();
        assert_eq!(
            v["data"]["sandbox"]["tmpdir"].as_str(),
            Some(used.as_str()),
            "{v}"
        );
        assert!(
            Path::new(&used).is_dir(),
            "the live shell's TMPDIR lives with it: {v}"
        );
    }
}

/// `sandbox check` judges each built-in profile's mode on this machine and exits 1
/// when one would not hold (issue 22, item 12). Here every engine works; under a
/// seccomp filter that refuses `unshare` and Landlock — what a container's default
/// filter does — `agent` and `strict` cannot be confined, and it says so.
#[test]
fn sandbox_check_judges_every_built_in_profile() {
    let env = TestEnv::new();
    let out = sandbox_check(&env);
    for line in [
        "  default   off              runs here (no confinement asked)",
        "  ci        off              runs here (no confinement asked)",
        "  agent     workspace-write  enforced here: namespaces + landlock",
        "  strict    read-only        enforced here: namespaces + landlock",
    ] {
        assert!(
            out.stdout.lines().any(|l| l == line),
            "{line:?} in\n{}",
            out.stdout
        );
    }
    let mut cmd = env.cmd(&["sandbox", "check", "--json"]).into_command();
    // SAFETY: between fork and exec the hook only builds a filter on its own stack
    // and calls prctl, which is async-signal-safe.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(deny_unshare_and_landlock);
    }
    let out = cmd.output().expect("run agentbash");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(1), "{v:#}");
    assert_eq!(
        (v["landlock_abi"].is_null(), v["mount_namespaces"].as_bool()),
        (true, Some(false)),
        "{v:#}"
    );
    let verdict = |name: &str| {
        v["profiles"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {v:#}"))
    };
    assert_eq!(verdict("default")["enforced"], true);
    // `agent` would run unconfined (required = false); `strict` would refuse to run.
    let agent = verdict("agent");
    assert_eq!(
        (&agent["enforced"], &agent["engine"]),
        (&json!(false), &json!("none")),
        "{agent}"
    );
    let strict = verdict("strict");
    assert_eq!(strict["enforced"], false, "{strict}");
    assert_has(
        s(&strict, "reason"),
        "required = true but no engine can enforce it here",
    );
}

/// A seccomp filter for this process and its children: `unshare` fails with EPERM and
/// `landlock_create_ruleset` with ENOSYS, as in a container whose filter predates
/// Landlock and forbids new namespaces.
fn deny_unshare_and_landlock() -> std::io::Result<()> {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq_next_else_skip = |k: u32| libc::sock_filter {
        code: JEQ_K,
        jt: 0,
        jf: 1,
        k,
    };
    let mut filter = [
        stmt(LD_W_ABS, 0), // the syscall number
        jeq_next_else_skip(libc::SYS_unshare as u32),
        stmt(RET_K, RET_ERRNO | libc::EPERM as u32),
        jeq_next_else_skip(libc::SYS_landlock_create_ruleset as u32),
        stmt(RET_K, RET_ERRNO | libc::ENOSYS as u32),
        stmt(RET_K, RET_ALLOW),
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: prctl reads the program through a valid pointer for the call's length.
    let ok = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A read-only sandbox that refused a write says so (issue 22, item 12), whichever
/// engine refused it: under the namespaces the OS says "Read-only file system", under
/// Landlock alone "Permission denied", on a relative path that names nothing outside.
/// A session's state file, which its shell may write, is never named (item 18).
#[test]
fn a_read_only_refusal_is_named_whatever_the_engine() {
    for engine in ["namespaces", "landlock"] {
        let t = Sandboxed::new(&format!("mode = \"read-only\"\nengine = \"{engine}\""));
        for (extra, script) in [
            (&[][..], "mkdir made"),
            (&[][..], "touch made"),
            (&["-s", "ro"][..], "touch made"),
        ] {
            let (code, v) = t.run(extra, script);
            assert_eq!(code, Some(1), "{engine} {script}: {v}");
            assert!(!t.env.work().join("made").exists(), "{v}");
            let text = s(&v, "text");
            // The relative path is resolved against the run's directory and named.
            let named = format!(
                "[sandbox: writing {}/made was refused: the read-only sandbox lets the command write only its private TMPDIR.",
                t.env.work().display()
            );
            assert!(
                text.contains(&named)
                    || text.contains("[sandbox: a write was refused: the read-only sandbox lets the command write only its private TMPDIR."),
                "{engine} {script} {extra:?}: {text}"
            );
            assert!(
                !text.contains(".pending") && !text.contains("/dev/shm"),
                "{text}"
            );
        }
    }
}

/// A read refused by `deny_read` is named (issue 22, item 18): hidden under an empty
/// mount, `cat ~/.ssh/id_rsa` said only "No such file or directory"; under Landlock
/// "Permission denied". A command that names a hidden path is told so even when its
/// output says nothing (`ls` of an empty mount).
#[test]
fn a_read_hidden_by_deny_read_is_named() {
    for engine in ["namespaces", "landlock"] {
        let t = Sandboxed::new(&format!(
            "mode = \"workspace-write\"\nengine = \"{engine}\"\ndeny_read = [\"~/secret\"]"
        ));
        let hidden = t.env.home().join("secret");
        std::fs::create_dir_all(&hidden).expect("mkdir");
        std::fs::write(hidden.join("key"), "original\n").expect("write");
        for script in ["cat ~/secret/key", "ls ~/secret", "cd ~/secret && cat key"] {
            let (_, v) = t.run(&[], script);
            assert!(
                !output(&v).contains("original"),
                "{engine}: the secret was read: {v}"
            );
            let notice = notices(&v)
                .into_iter()
                .find(|n| n.contains("is hidden by [sandbox] deny_read"))
                .unwrap_or_else(|| panic!("{engine} {script}: no notice in {v:#}"));
            assert_has(&notice, "secret");
        }
        // A run that touches nothing hidden gets no such notice.
        let (code, v) = t.run(&[], "echo fine");
        assert_eq!(code, Some(0));
        assert!(!s(&v, "text").contains("deny_read"), "{v}");
    }
}
