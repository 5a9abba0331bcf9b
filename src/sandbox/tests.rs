//! Real confinement of real `/bin/sh` commands, on temp dirs each test creates.
//!
//! Commands under the namespaces engine start through the real spawner (an init process
//! in their own namespaces: see `process::pidns`). Every other command (the landlock
//! engine, and no sandbox at all) runs in a private mount namespace of its own first, so
//! a mount that succeeds (an escape that wrongly did, or the unconfined control runs of
//! `without_the_sandbox_every_denied_action_succeeds`, which mount for real) never
//! touches the host's mount table.

use std::io::Write;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::harness::{Missing, skip, skipped};

struct Fixture {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
    tmpdir: PathBuf,
    home: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = |name: &str| {
            let path = root.path().join(name);
            std::fs::create_dir_all(&path).expect("create dir");
            path.canonicalize().expect("canonical")
        };
        let workspace = dir("ws");
        let outside = dir("outside");
        let tmpdir = dir("tmp");
        let home = dir("home");
        std::fs::write(outside.join("file"), "original\n").expect("write");
        std::fs::create_dir_all(workspace.join(".git/hooks")).expect("hooks");
        std::fs::create_dir_all(workspace.join(".git/objects")).expect("objects");
        std::fs::write(workspace.join(".git/config"), "[core]\n").expect("config");
        std::fs::create_dir_all(home.join(".ssh")).expect("ssh");
        std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-KEY\n").expect("key");
        Fixture {
            _root: root,
            workspace,
            outside,
            tmpdir,
            home,
        }
    }

    fn policy(&self, mode: Mode, engine: Engine) -> Policy {
        Policy {
            engine,
            workspace: Some(self.workspace.clone()),
            ..Policy::new(mode)
        }
    }

    fn prepare(&self, policy: &Policy) -> Arc<Confinement> {
        let prepared = prepare(policy, &self.workspace, &self.tmpdir).expect("prepare");
        assert!(prepared.is_active(), "{:?}", prepared.reason());
        confined(prepared)
    }

    /// Run `script` under `prepared` with `sh -c`, in the workspace.
    fn run(&self, prepared: &Arc<Confinement>, script: &str) -> Output {
        self.run_with(prepared, "/bin/sh", script)
    }

    fn run_with(&self, sandbox: &Arc<Confinement>, shell: &str, script: &str) -> Output {
        if sandbox.prepared.namespaces().is_some() {
            return self.spawn_with(sandbox, shell, script);
        }
        let child_prepared = Arc::clone(sandbox);
        let mut command = Command::new(shell);
        command
            .arg("-c")
            .arg(script)
            .current_dir(&self.workspace)
            .env("TMPDIR", &self.tmpdir)
            .env("OUT", &self.outside)
            .env("W", &self.workspace)
            .env("H", &self.home);
        // SAFETY: the closure only makes raw syscalls on data built before fork.
        unsafe {
            command.pre_exec(move || {
                // Unconfined too: the control runs mount a tmpfs and a bind on `$OUT`,
                // which left two mounts on the host's table at every run of the suite.
                isolate_mounts()?;
                child_prepared
                    .prepared
                    .apply_in_child()
                    .map_err(std::io::Error::from)
            });
        }
        command.output().expect("spawn sh")
    }

    /// [`Fixture::run_with`] through agentbash's own spawner.
    fn spawn_with(&self, sandbox: &Arc<Confinement>, shell: &str, script: &str) -> Output {
        use crate::process::spawn::{ChildIo, spawn};
        use std::io::Read;
        let shown = |p: &std::path::Path| p.display().to_string();
        let spec = crate::process::SpawnSpec {
            program: shell.into(),
            args: vec!["-c".into(), script.into()],
            env: vec![
                ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
                ("TMPDIR".into(), shown(&self.tmpdir)),
                ("OUT".into(), shown(&self.outside)),
                ("W".into(), shown(&self.workspace)),
                ("H".into(), shown(&self.home)),
            ],
            cwd: self.workspace.clone(),
            sandbox: Some(Arc::clone(sandbox)),
            ..Default::default()
        };
        let (mut out_r, out_w) = std::io::pipe().expect("pipe");
        let (mut err_r, err_w) = std::io::pipe().expect("pipe");
        let mut child = spawn(
            &spec,
            ChildIo::Null,
            ChildIo::Fd(out_w.into()),
            ChildIo::Fd(err_w.into()),
        )
        .expect("spawn");
        let err = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = err_r.read_to_end(&mut v);
            v
        });
        let mut stdout = Vec::new();
        let _ = out_r.read_to_end(&mut stdout);
        let stderr = err.join().unwrap_or_default();
        let status = child.wait().expect("wait");
        Output {
            status,
            stdout,
            stderr,
        }
    }

    fn outside_untouched(&self) {
        let names: Vec<_> = std::fs::read_dir(&self.outside)
            .expect("list outside")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("file")]);
        let content = std::fs::read_to_string(self.outside.join("file")).expect("read");
        assert_eq!(content, "original\n");
    }
}

fn confined(prepared: Prepared) -> Arc<Confinement> {
    Arc::new(Confinement {
        prepared,
        tmpdir: None,
    })
}

/// A private mount namespace for every command not started by the spawner (see the
/// module doc).
fn isolate_mounts() -> std::io::Result<()> {
    // SAFETY: raw syscalls with constant arguments.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0
            || libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// What a test of the namespaces engine needs when the machine lacks it.
fn no_namespaces() -> Missing {
    Missing::new(
        "mount namespaces are unavailable (`agentbash sandbox check` says why)",
        "run as root, or where unprivileged user namespaces are allowed, as .ci/run does",
    )
}

/// What a test of the landlock engine needs when the kernel lacks it.
fn no_landlock() -> Missing {
    Missing::new(
        "the kernel has no Landlock",
        "a Linux kernel of 5.13 or later with landlock in its lsm= list",
    )
}

/// The engines this machine has; each one missing is a skipped part of the test.
fn engines() -> Vec<Engine> {
    let report = check();
    let mut engines = Vec::new();
    if report.mount_namespaces {
        engines.push(Engine::Namespaces);
    } else {
        let m = no_namespaces();
        skipped(&format!("the namespaces engine: {}", m.what), &m.how);
    }
    if report.landlock_abi.is_some() {
        engines.push(Engine::Landlock);
    } else {
        let m = no_landlock();
        skipped(&format!("the landlock engine: {}", m.what), &m.how);
    }
    assert!(!engines.is_empty(), "no engine on this machine:\n{report}");
    engines
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn assert_ok(output: &Output) {
    assert!(output.status.success(), "{}", text(output));
}

fn assert_fails(output: &Output) {
    assert!(!output.status.success(), "should fail: {}", text(output));
}

const OUTSIDE_WRITES: &[&str] = &[
    "echo x > \"$OUT/new\"",
    "echo x >> \"$OUT/file\"",
    "rm -rf \"$OUT/file\"",
    "mkdir \"$OUT/d\"",
    "mv \"$OUT/file\" \"$OUT/moved\"",
    "ln -s x \"$OUT/link\"",
    "ln \"$OUT/file\" \"$OUT/hard\"",
    "truncate -s 0 \"$OUT/file\"",
    "mv \"$OUT/file\" \"$W/stolen\"",
    // A symlink made inside the workspace does not widen access.
    "ln -s \"$OUT\" \"$W/out\" && echo x > \"$W/out/new\"",
    "echo x > \"/proc/self/root$OUT/new\"",
];

const METADATA: &[&str] = &[
    "chmod 777 \"$OUT/file\"",
    "chown 1:1 \"$OUT/file\"",
    "touch -d 2000-01-01 \"$OUT/file\"",
];

const GIT_WRITES: &[&str] = &[
    "echo evil > .git/hooks/pre-commit",
    "echo '[core] fsmonitor = evil' >> .git/config",
    "rm -rf .git/hooks",
    "mv .git/config .git/config.old",
    "mv .git/hooks .git/hooks.old",
];

const SECRET_READS: &[&str] = &[
    "cat \"$H/.ssh/id_ed25519\"",
    "ls \"$H/.ssh\" | grep id_",
    "cp -r \"$H/.ssh\" \"$W/copy\" && cat \"$W/copy/id_ed25519\"",
    "cat /proc/self/root\"$H/.ssh/id_ed25519\"",
    "umount \"$H/.ssh\"; cat \"$H/.ssh/id_ed25519\"",
    "mount -o remount,rw \"$H/.ssh\"; cat \"$H/.ssh/id_ed25519\"",
];

/// Each would change the outside directory or the mount tree if it escaped.
const ESCAPES: &[&str] = &[
    "mount -t tmpfs tmpfs \"$OUT\"",
    "mount --bind \"$W\" \"$OUT\"",
    "mount -o remount,bind,rw /",
    "umount \"$W\"",
    "unshare -r sh -c 'echo x > \"$OUT/new\"'",
    "unshare -rm sh -c 'mount -o remount,bind,rw / && echo x > \"$OUT/new\"'",
    "chroot / sh -c 'echo x > \"$OUT/new\"'",
];

/// Every action the other tests expect to fail succeeds without the sandbox (in a
/// private mount namespace, so mounts stay off the host): they fail when confinement
/// goes, not because a command is missing or misspelt.
#[test]
fn without_the_sandbox_every_denied_action_succeeds() {
    // Unmounting `$W` only fails unconfined because nothing is mounted there.
    let escapes = ESCAPES.iter().filter(|s| !s.starts_with("umount"));
    let groups: [&[&str]; 4] = [OUTSIDE_WRITES, METADATA, GIT_WRITES, &SECRET_READS[..4]];
    for script in groups.into_iter().flatten().chain(escapes) {
        let fx = Fixture::new();
        let unconfined = prepare(
            &fx.policy(Mode::ReadOnly, Engine::None),
            &fx.workspace,
            &fx.tmpdir,
        )
        .expect("none");
        assert_ok(&fx.run(&confined(unconfined), script));
        // The run's mounts stayed in its own namespace: none on the host's table.
        let table = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
        let outside = fx.outside.display().to_string();
        assert!(
            !table
                .lines()
                .any(|l| l.split(' ').nth(4) == Some(outside.as_str())),
            "`{script}` left a mount on the host at {outside}"
        );
    }
}

#[test]
fn workspace_write_allows_the_workspace_and_nothing_outside() {
    for engine in engines() {
        let fx = Fixture::new();
        let prepared = fx.prepare(&fx.policy(Mode::WorkspaceWrite, engine));
        assert_ok(&fx.run(
            &prepared,
            "echo hi > a && mkdir d && mv a d/b && rm -r d && echo t > \"$TMPDIR/t\" \
             && echo x > /dev/null && head -c 4 /dev/zero > z && echo obj > .git/objects/o",
        ));
        for script in OUTSIDE_WRITES {
            assert_fails(&fx.run(&prepared, script));
            fx.outside_untouched();
        }
    }
}

#[test]
fn namespaces_also_stop_metadata_changes_outside() {
    let fx = Fixture::new();
    if !check().mount_namespaces {
        skip!(no_namespaces());
    }
    let prepared = fx.prepare(&fx.policy(Mode::WorkspaceWrite, Engine::Namespaces));
    let before = std::fs::metadata(fx.outside.join("file")).expect("stat");
    for script in METADATA {
        assert_fails(&fx.run(&prepared, script));
    }
    let after = std::fs::metadata(fx.outside.join("file")).expect("stat");
    assert_eq!(
        (before.mode(), before.uid(), before.gid(), before.mtime()),
        (after.mode(), after.uid(), after.gid(), after.mtime())
    );
}

#[test]
fn landlock_alone_does_not_stop_metadata_changes() {
    // The documented limit of the landlock engine; if a kernel starts handling
    // attribute changes this fails, and the module doc should be updated.
    let fx = Fixture::new();
    if check().landlock_abi.is_none() {
        skip!(no_landlock());
    }
    let prepared = fx.prepare(&fx.policy(Mode::WorkspaceWrite, Engine::Landlock));
    assert_ok(&fx.run(&prepared, "chmod 600 \"$OUT/file\""));
}

#[test]
fn git_hooks_and_config_stay_read_only_in_a_writable_workspace() {
    if !check().mount_namespaces {
        skip!(no_namespaces());
    }
    let fx = Fixture::new();
    let prepared = fx.prepare(&fx.policy(Mode::WorkspaceWrite, Engine::Namespaces));
    for script in GIT_WRITES {
        assert_fails(&fx.run(&prepared, script));
    }
    assert!(!fx.workspace.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(fx.workspace.join(".git/config")).expect("config"),
        "[core]\n"
    );
}

#[test]
fn read_only_allows_only_the_private_tmpdir_and_devices() {
    for engine in engines() {
        let fx = Fixture::new();
        let prepared = fx.prepare(&fx.policy(Mode::ReadOnly, engine));
        assert_ok(&fx.run(
            &prepared,
            "cat .git/config >/dev/null && echo t > \"$TMPDIR/t\" && echo x > /dev/null",
        ));
        for script in [
            "echo x > a",
            "mkdir d",
            "echo x > \"$OUT/new\"",
            "rm -rf .git",
        ] {
            assert_fails(&fx.run(&prepared, script));
        }
        assert!(fx.workspace.join(".git/config").exists());
        assert!(!fx.workspace.join("a").exists());
        fx.outside_untouched();
    }
}

#[test]
fn deny_read_hides_a_directory_even_from_root() {
    for engine in engines() {
        let fx = Fixture::new();
        let mut policy = fx.policy(Mode::WorkspaceWrite, engine);
        policy.deny_read = vec![fx.home.join(".ssh")];
        let prepared = fx.prepare(&policy);
        for script in SECRET_READS {
            let output = fx.run(&prepared, script);
            assert_fails(&output);
            assert!(!text(&output).contains("SECRET"), "{engine:?}: {script}");
        }
        // The rest stays readable.
        assert_ok(&fx.run(&prepared, "cat \"$OUT/file\""));
    }
}

#[test]
fn mount_umount_unshare_and_chroot_do_not_escape() {
    for engine in engines() {
        let fx = Fixture::new();
        let prepared = fx.prepare(&fx.policy(Mode::WorkspaceWrite, engine));
        for script in ESCAPES {
            assert_fails(&fx.run(&prepared, script));
            fx.outside_untouched();
        }
    }
}

#[test]
fn network_false_refuses_loopback_fast() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let udp = UdpSocket::bind("127.0.0.1:0").expect("udp");
    udp.set_nonblocking(true).expect("nonblocking");
    let udp_port = udp.local_addr().expect("addr").port();
    for engine in engines() {
        let fx = Fixture::new();
        let open = fx.prepare(&fx.policy(Mode::WorkspaceWrite, engine));
        let tcp = format!("echo hi > /dev/tcp/127.0.0.1/{port}");
        assert_ok(&fx.run_with(&open, "/bin/bash", &tcp));
        assert!(listener.accept().is_ok(), "the open run connected");

        let mut policy = fx.policy(Mode::WorkspaceWrite, engine);
        policy.network = Network::Off;
        let closed = fx.prepare(&policy);
        let started = Instant::now();
        let output = fx.run_with(&closed, "/bin/bash", &tcp);
        assert_fails(&output);
        assert!(
            started.elapsed() < crate::harness::scaled(Duration::from_secs(2)),
            "fails fast"
        );
        assert!(listener.accept().is_err(), "{engine:?}: nothing connected");
        let send = format!("echo hi > /dev/udp/127.0.0.1/{udp_port}");
        let mut buf = [0u8; 16];
        if engine == Engine::Namespaces {
            assert_fails(&fx.run_with(&closed, "/bin/bash", &send));
            assert!(udp.recv(&mut buf).is_err(), "no datagram arrived");
            // The network namespace alone, without the Landlock layer: loopback is down.
            let mut netns_only = prepare(&policy, &fx.workspace, &fx.tmpdir).expect("prep");
            netns_only.ruleset = None;
            netns_only.landlock_dev = false;
            let netns_only = confined(netns_only);
            let started = Instant::now();
            let output = fx.run_with(&netns_only, "/bin/bash", &tcp);
            assert_fails(&output);
            assert!(
                started.elapsed() < crate::harness::scaled(Duration::from_secs(2)),
                "fails fast"
            );
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains("unreachable"), "{stderr}");
            assert!(listener.accept().is_err(), "nothing connected");
        } else {
            // Landlock handles TCP only: the documented limit of the landlock engine.
            assert_ok(&fx.run_with(&closed, "/bin/bash", &send));
            assert!(
                udp.recv(&mut buf).is_ok(),
                "landlock alone lets UDP through"
            );
        }
    }
}

#[test]
fn off_and_none_enforce_nothing_and_say_why() {
    let fx = Fixture::new();
    let off = prepare(&Policy::default(), &fx.workspace, &fx.tmpdir).expect("off");
    assert!(!off.is_active());
    let none = prepare(
        &fx.policy(Mode::ReadOnly, Engine::None),
        &fx.workspace,
        &fx.tmpdir,
    )
    .expect("none");
    assert_eq!(none.resolved(), Resolved::None);
    assert!(none.reason().is_some_and(|r| r.contains("none")));
    let missing = fx.workspace.join("missing");
    let mut policy = fx.policy(Mode::WorkspaceWrite, Engine::Auto);
    policy.workspace = Some(missing);
    let error = prepare(&policy, &fx.workspace, &fx.tmpdir).expect_err("missing workspace");
    let message = error.to_string();
    assert!(
        message.contains("missing") && message.contains("[sandbox] workspace"),
        "{message}"
    );
    assert!(matches!(
        prepare(
            &fx.policy(Mode::ReadOnly, Engine::Bwrap),
            &fx.workspace,
            &fx.tmpdir
        ),
        Err(SandboxError::BwrapUnsupported)
    ));
}

#[test]
fn check_reports_and_renders() {
    let report = check();
    let rendered = report.to_string();
    assert!(rendered.contains("landlock:") && rendered.contains("engine for auto:"));
    let json = serde_json::to_value(&report).expect("json");
    assert!(json.get("mount_namespaces").is_some());
    // The probes are a few forks, well under 20 ms when idle; this bound only catches
    // a hang, since forks of a busy test process on a loaded machine took over 200 ms.
    assert!(report.micros < 5_000_000, "{} µs", report.micros);
}

/// `cargo test --release --lib sandbox::tests::timings -- --ignored --nocapture`
///
/// Cases are interleaved round by round and medians reported, so a busy machine's drift
/// hits every case alike.
#[test]
#[ignore]
fn timings() {
    let fx = Fixture::new();
    let cases: [(&str, Option<(Engine, bool)>); 4] = [
        ("bare /bin/true", None),
        ("landlock", Some((Engine::Landlock, true))),
        ("namespaces+landlock", Some((Engine::Namespaces, true))),
        (
            "namespaces+landlock+netns",
            Some((Engine::Namespaces, false)),
        ),
    ];
    let rounds = 200;
    let mut prepare_times = vec![Vec::new(); cases.len()];
    let mut totals = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        for (index, (_, case)) in cases.iter().enumerate() {
            let started = Instant::now();
            let mut spec = crate::process::SpawnSpec {
                program: "/bin/true".into(),
                cwd: fx.workspace.clone(),
                ..Default::default()
            };
            if let Some((engine, network)) = case {
                let mut policy = fx.policy(Mode::WorkspaceWrite, *engine);
                policy.network = (*network).into();
                let prepared = prepare(&policy, &fx.workspace, &fx.tmpdir).expect("prep");
                prepare_times[index].push(started.elapsed());
                spec.sandbox = Some(confined(prepared));
            }
            use crate::process::spawn::{ChildIo, spawn};
            let mut child =
                spawn(&spec, ChildIo::Null, ChildIo::Null, ChildIo::Null).expect("spawn");
            assert!(child.wait().expect("wait").success());
            totals[index].push(started.elapsed());
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times.get(times.len() / 2).copied().unwrap_or_default()
    };
    let mut out = std::io::stdout().lock();
    let report = check();
    writeln!(out, "{report}check took {} µs", report.micros).ok();
    for (index, (name, _)) in cases.iter().enumerate() {
        writeln!(
            out,
            "{name}: prepare {:?}, prepare+spawn+apply+exit {:?} (median of {rounds})",
            median(&mut prepare_times[index]),
            median(&mut totals[index])
        )
        .ok();
        // The bare case has no prepare step; its 0 is not a measurement.
    }
}
