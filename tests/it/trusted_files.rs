//! Files agentbash trusts and directories it writes: hostile files in their place
//! are refused at once with an error naming them; hostile directories are checked,
//! never chmod'ed, and lead to a warning or exit 125 as the README says.

use crate::support::*;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long refusing a hostile file may take (it is a few syscalls; the margin is for
/// a loaded machine). A hang is caught by the harness's cap long before the suite.
const PROMPT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy)]
enum Hostile {
    Fifo,
    DevZero,
    Socket,
    Directory,
    Sparse5GiB,
}

const ALL: [Hostile; 5] = [
    Hostile::Fifo,
    Hostile::DevZero,
    Hostile::Socket,
    Hostile::Directory,
    Hostile::Sparse5GiB,
];

impl Hostile {
    /// Put one at `path`; the returned listener keeps a socket alive.
    fn make(self, path: &Path) -> Option<std::os::unix::net::UnixListener> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        match self {
            Hostile::Fifo => {
                nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
            }
            Hostile::DevZero => symlink("/dev/zero", path).unwrap(),
            Hostile::Socket => return Some(std::os::unix::net::UnixListener::bind(path).unwrap()),
            Hostile::Directory => std::fs::create_dir(path).unwrap(),
            Hostile::Sparse5GiB => std::fs::File::create(path)
                .and_then(|f| f.set_len(5 << 30))
                .unwrap(),
        }
        None
    }

    /// What the error says about it.
    fn reason(self, links_refused: bool) -> &'static str {
        match self {
            Hostile::Fifo => "FIFO",
            Hostile::DevZero if links_refused => "symbolic link",
            Hostile::DevZero => "character device",
            Hostile::Socket => "socket",
            Hostile::Directory => "directory",
            Hostile::Sparse5GiB => "bytes, more than",
        }
    }
}

/// Run `test` (its expectations checked), and how long it took.
fn timed(test: Test) -> (Output, Duration) {
    let t = Instant::now();
    let out = test.run();
    (out, t.elapsed())
}

fn assert_refused(what: &str, h: Hostile, out: &Output, took: Duration, path: &Path, reason: &str) {
    eprintln!("{what} {h:?}: refused in {took:?}");
    assert!(took < PROMPT, "{what} {h:?} took {took:?}");
    assert!(
        out.stderr.contains(&path.display().to_string()) && out.stderr.contains(reason),
        "{what} {h:?}: stderr should name {} and say {reason:?}: {}",
        path.display(),
        out.stderr
    );
}

/// Give `path` these permission bits.
fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Create the env's state dir with these permission bits.
fn make_state_dir(env: &TestEnv, mode: u32) {
    std::fs::create_dir_all(env.state_dir()).unwrap();
    set_mode(&env.state_dir(), mode);
}

#[test]
fn hostile_profile_paths_are_exit_125_at_once() {
    let env = TestEnv::new();
    for h in ALL {
        let path = match h {
            Hostile::DevZero => PathBuf::from("/dev/zero"),
            _ => env.root().join(format!("p-{h:?}.toml")),
        };
        let _keep = (!matches!(h, Hostile::DevZero)).then(|| h.make(&path));
        let (out, took) = timed(
            env.run_text("true")
                .profile(&path.display().to_string())
                .code(125),
        );
        assert_refused("profile", h, &out, took, &path, h.reason(false));
    }
}

#[test]
fn a_symlinked_profile_is_followed_to_a_file_of_ours() {
    let env = TestEnv::new();
    let real = env.write("real.toml", "[env.set]\nWHICH = \"linked\"\n");
    symlink(&real, env.work().join("link.toml")).unwrap();
    env.run_json("echo $WHICH")
        .profile("./link.toml")
        .code(0)
        .output("linked\n")
        .run();
}

#[test]
fn hostile_rule_packs_are_refused_at_once() {
    let env = TestEnv::new();
    for h in ALL {
        let pack = env.work().join(format!("pack-{h:?}.toml"));
        let _keep = h.make(&pack);
        let profile = env.write(
            format!("p-{h:?}.toml"),
            format!("[interceptor]\nrules = [\"pack-{h:?}.toml\"]\ntools = [\"read\"]\n"),
        );
        // A pack that cannot be loaded stops the run (as for any bad pack), saying why.
        let (out, took) = timed(
            env.run_json("true")
                .profile(&profile.display().to_string())
                .code(125),
        );
        let v = out.json();
        let warnings = v["error"].to_string();
        eprintln!("rule pack {h:?} (run): refused in {took:?}");
        assert!(took < PROMPT, "{h:?} took {took:?}");
        assert!(
            warnings.contains(&pack.display().to_string()) && warnings.contains(h.reason(false)),
            "{h:?}: {warnings}"
        );
        let (out, took) = timed(
            env.test()
                .args(&["rules", "check", &pack.display().to_string()]),
        );
        assert_ne!(out.code(), Some(0), "{h:?}");
        let all = format!("{}{}", out.stdout, out.stderr);
        assert!(took < PROMPT, "{h:?} took {took:?}");
        assert!(
            all.contains(&pack.display().to_string()) && all.contains(h.reason(false)),
            "{h:?}: {all}"
        );
    }
}

/// A session that has run once, so its `state.sh` exists.
fn session(env: &TestEnv, name: &str) -> PathBuf {
    env.run_text("export A=1")
        .opts(&["-s", name])
        .run()
        .assert_code(0);
    let state = env.state_dir().join("sessions").join(name).join("state.sh");
    assert!(state.is_file());
    state
}

#[test]
fn a_hostile_session_state_is_never_sourced() {
    let env = TestEnv::new();
    for h in ALL {
        let name = format!("s-{h:?}");
        let state = session(&env, &name);
        std::fs::remove_file(&state).unwrap();
        let _keep = h.make(&state);
        let (out, took) = timed(env.run_text("echo ran").opts(&["-s", &name]).code(125));
        assert!(!out.stdout.contains("ran"), "{h:?}: {}", out.stdout);
        assert_refused("session state", h, &out, took, &state, h.reason(true));
    }
}

#[test]
fn a_session_state_of_another_user_or_linked_to_one_is_never_sourced() {
    let env = TestEnv::new();
    if !is_root() {
        skip!(needs_root("chown to nobody"));
    }
    let marker = env.root().join("sourced");
    let state = session(&env, "foreign");
    std::fs::write(&state, format!("touch '{}'\n", marker.display())).unwrap();
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
    let out = env
        .run_text("true")
        .opts(&["-s", "foreign"])
        .code(125)
        .run();
    assert!(!marker.exists(), "a foreign state.sh was sourced");
    assert_has(&out.stderr, state.display().to_string());
    assert_has(&out.stderr, "uid 65534");
    // A link to someone else's file, in place of our own.
    let theirs = env.root().join("theirs.sh");
    std::fs::rename(&state, &theirs).unwrap();
    symlink(&theirs, &state).unwrap();
    let out = env
        .run_text("true")
        .opts(&["-s", "foreign"])
        .code(125)
        .run();
    assert!(!marker.exists());
    assert_has(&out.stderr, "symbolic link");
}

#[test]
fn hostile_artifact_sidecars_are_named_and_skipped() {
    let env = TestEnv::new();
    let dir = env.state_dir().join("artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut keep = Vec::new();
    for (i, h) in ALL.iter().enumerate() {
        let id = i + 1;
        std::fs::write(dir.join(format!("{id}.bash.log")), "x\n").unwrap();
        keep.push(h.make(&dir.join(format!("{id}.json"))));
    }
    let (out, took) = timed(env.test().args(&["artifact", "list"]).code(0));
    for (i, h) in ALL.iter().enumerate() {
        let meta = dir.join(format!("{}.json", i + 1));
        assert_refused("artifact sidecar", *h, &out, took, &meta, h.reason(true));
    }
}

fn run_json(env: &TestEnv, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["run", "--json"];
    a.extend_from_slice(args);
    let out = env.run(&a);
    out.assert_code(0);
    out.json()
}

fn warnings(v: &serde_json::Value) -> String {
    v["warnings"].to_string()
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn an_existing_0755_state_dir_is_used_as_it_is() {
    let env = TestEnv::new();
    make_state_dir(&env, 0o755);
    let v = run_json(&env, &["--", "seq 100000"]);
    assert!(!v["artifact"].is_null(), "{}", warnings(&v));
    assert_eq!(
        mode(&env.state_dir()),
        0o755,
        "an existing dir was chmod'ed"
    );
    assert_eq!(mode(&env.state_dir().join("artifacts")), 0o700);
}

#[test]
fn a_group_writable_or_linked_artifacts_dir_means_no_artifacts() {
    let env = TestEnv::new();
    // The state dir group-writable: anyone in the group could swap what is below.
    make_state_dir(&env, 0o775);
    let v = run_json(&env, &["--", "seq 100000"]);
    assert!(v["artifact"].is_null());
    assert!(
        warnings(&v).contains("artifacts unavailable")
            && warnings(&v).contains("writable by group"),
        "{}",
        warnings(&v)
    );
    assert_eq!(
        mode(&env.state_dir()),
        0o775,
        "an existing dir was chmod'ed"
    );

    // A custom artifacts dir that is a link to a real one.
    let real = env.root().join("real-arts");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    symlink(&real, env.work().join("arts")).unwrap();
    let p = env.write("p.toml", "[artifacts]\ndir = \"arts\"\n");
    let v = run_json(&env, &["-p", &p.display().to_string(), "--", "seq 100000"]);
    assert!(v["artifact"].is_null());
    assert!(warnings(&v).contains("symbolic link"), "{}", warnings(&v));
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
}

#[test]
fn a_foreign_owned_artifacts_dir_means_no_artifacts() {
    if !is_root() {
        skip!(needs_root("chown to nobody"));
    }
    let env = TestEnv::new();
    let dir = env.state_dir().join("artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    set_mode(&env.state_dir(), 0o700);
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    let v = run_json(&env, &["--", "seq 100000"]);
    assert!(v["artifact"].is_null());
    assert!(
        warnings(&v).contains("artifacts unavailable") && warnings(&v).contains("uid 65534"),
        "{}",
        warnings(&v)
    );
}

#[test]
fn a_hostile_session_dir_is_exit_125() {
    let env = TestEnv::new();
    let dir = env.state_dir().join("sessions/open");
    std::fs::create_dir_all(&dir).unwrap();
    set_mode(&env.state_dir(), 0o700);
    std::fs::set_permissions(
        dir.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = env
        .run_text("echo ran")
        .opts(&["-s", "open"])
        .code(125)
        .stdout_lacks("ran")
        .run();
    assert_has(&out.stderr, dir.display().to_string());
    assert_has(&out.stderr, "writable by group");
    assert_eq!(mode(&dir), 0o777, "an existing dir was chmod'ed");
    if is_root() {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        env.run_text("echo ran")
            .opts(&["-s", "open"])
            .code(125)
            .stderr_has("uid 65534")
            .run();
    } else {
        needs_root("the session dir owned by nobody").skip_part();
    }
    // A linked session dir is not followed either.
    let real = env.root().join("real-session");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    symlink(&real, env.state_dir().join("sessions/linked")).unwrap();
    env.run_text("echo ran")
        .opts(&["-s", "linked"])
        .code(125)
        .stderr_has("symbolic link")
        .run();
}

#[test]
fn a_snapshot_file_of_another_user_is_never_sourced() {
    if !is_root() {
        skip!(needs_root("chown to nobody"));
    }
    let env = TestEnv::new();
    env.write_rc("greet() { echo hi; }\n");
    let v = run_json(&env, &["--", "greet"]);
    assert_eq!(v["output"], "hi\n");
    // Every snapshot file handed to someone else (and made to define something else).
    let snaps = env.root().join("cache/agentbash/snapshots");
    let marker = env.root().join("sourced");
    for e in std::fs::read_dir(&snaps).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sh") {
            std::fs::write(&p, format!("touch '{}'\n", marker.display())).unwrap();
            std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        }
    }
    let v = run_json(&env, &["--", "greet"]);
    assert!(!marker.exists(), "a foreign snapshot file was sourced");
    assert_eq!(v["output"], "hi\n", "regenerated: {}", warnings(&v));
}

#[test]
fn a_group_writable_snapshot_cache_means_no_snapshot() {
    let env = TestEnv::new();
    env.write_rc("greet() { echo hi; }\n");
    let cache = env.root().join("cache/agentbash");
    // A cached snapshot first: the check is made on every run, not only on generation.
    let v = run_json(&env, &["--", "greet"]);
    assert_eq!(v["output"], "hi\n", "{}", warnings(&v));
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let v = env.run_json("greet").json();
    assert!(
        warnings(&v).contains("shell snapshot unavailable")
            && warnings(&v).contains("writable by group"),
        "{}",
        warnings(&v)
    );
    assert_ne!(v["exit_code"], 0, "greet came from a refused snapshot");
    assert_eq!(mode(&cache), 0o777);
}

/// agentbash is non-dumpable: a command of the same (unprivileged) user cannot read
/// its environment through `/proc/$PPID/environ`, while the command itself runs as
/// usual (its own `/proc/$$/environ` is readable: execve made it dumpable again).
#[test]
fn a_command_cannot_read_agentbash_environment() {
    let env = TestEnv::new();
    let secret = format!("s3cret-{}", nonce());
    let cmd = "cat /proc/$PPID/environ; echo \"[status $?]\"; tr '\\0' '\\n' < /proc/$$/environ | grep -c '^PATH='";
    let out = if is_root() {
        let dir = env.root().join("nobody");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("p.toml"), "[env]\nexclude = [\"AB_SECRET\"]\n").unwrap();
        for p in [env.root(), dir.as_path()] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let script = format!(
            "cd '{d}' && HOME='{d}' AGENTBASH_STATE_DIR='{d}/state' XDG_CACHE_HOME='{d}/cache' exec setpriv --reuid=65534 --regid=65534 --clear-groups '{b}' run --json -p ./p.toml -- \"$0\"",
            d = dir.display(),
            b = bin().display()
        );
        env.program("sh", &["-c", &script, cmd])
            .env("AB_SECRET", &secret)
            .run()
    } else {
        env.write("p.toml", "[env]\nexclude = [\"AB_SECRET\"]\n");
        env.run_json(cmd)
            .profile("./p.toml")
            .env("AB_SECRET", &secret)
            .run()
    };
    out.assert_code(0);
    let v = out.json();
    let output = s(&v, "output");
    assert!(!output.contains(&secret), "the secret leaked: {output}");
    assert_has(output, "Permission denied");
    assert!(
        output.ends_with("\n1\n"),
        "the command's own environ: {output}"
    );
}
