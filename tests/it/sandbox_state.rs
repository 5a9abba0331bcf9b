//! State that crosses the sandbox's edge, through the real binary: sessions used by
//! sandboxed commands (saved after every call, over the CLI, rpc and MCP), the sandbox
//! policy a session remembers, the rc snapshot's seal, and the package cache that
//! sandboxed runs get instead of the user's own.

use crate::support::{LiveServer, TestEnv, mode_of, must_run, s};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `<root>/<name>.toml`: the `default` profile with `[sandbox]` set to `section` (and
/// no rc snapshot unless `extra` asks for one).
fn profile(env: &TestEnv, name: &str, section: &str, extra: &str) -> String {
    let path = env.root().join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "extends = \"default\"\n{extra}\n[shell]\nsnapshot = false\n[sandbox]\n{section}\n"
        ),
    )
    .expect("profile");
    path.display().to_string()
}

fn workspace_write(env: &TestEnv) -> String {
    profile(env, "ww", "mode = \"workspace-write\"", "")
}

/// `run --json -p PROFILE [-s SESSION] <extra> -- script`: (exit code, result, stderr).
fn run(
    env: &TestEnv,
    profile: &str,
    session: Option<&str>,
    extra: &[&str],
    script: &str,
) -> (Option<i32>, Value, String) {
    let mut args = vec!["run", "--json", "-p", profile];
    if let Some(name) = session {
        args.extend(["-s", name]);
    }
    args.extend_from_slice(extra);
    args.extend(["--", script]);
    let out = env.run(&args);
    let v = serde_json::from_str(out.stdout.trim_end()).unwrap_or(Value::Null);
    (out.code(), v, out.stderr)
}

/// Ten state changes in a row — a directory, a variable, a function, an alias, a
/// virtualenv, `cd` away and back, an unset, `deactivate`, a shell variable — each
/// checked by the next command (the same steps as `tests/mcp/mcp_client.py`).
const STEPS: &[(&str, &str)] = &[
    ("true", "mkdir -p sub && cd sub"),
    ("[ \"${PWD##*/}\" = sub ]", "export FOO=1"),
    ("[ \"$FOO\" = 1 ]", "greet() { echo hello-$1; }"),
    ("[ \"$(greet x)\" = hello-x ]", "alias ll='echo aliased'"),
    (
        "[ \"$(ll)\" = aliased ]",
        "python3 -m venv --without-pip .venv && . .venv/bin/activate",
    ),
    (
        "[ \"$(command -v python)\" = \"$PWD/.venv/bin/python\" ]",
        "export BACK=$PWD BAR=2; cd /tmp",
    ),
    ("[ \"$PWD\" = /tmp ] && [ \"$BAR\" = 2 ]", "cd \"$BACK\""),
    ("[ \"${PWD##*/}\" = sub ]", "unset FOO"),
    ("[ -z \"${FOO+set}\" ]", "deactivate"),
    (
        "[ -z \"${VIRTUAL_ENV-}\" ] && [ \"$(command -v python)\" != \"$PWD/.venv/bin/python\" ]",
        "counter=10",
    ),
    ("[ \"$counter\" = 10 ]", "true"),
];

/// Step `n`'s command: says `ok-N` when it sees the change before it, then changes
/// one more thing.
fn step(n: usize) -> String {
    let (check, change) = STEPS[n];
    format!("if {check}; then echo ok-{n}; else echo BAD-{n}; fi; {change}")
}

/// The checks of one step's result (`text` is what the caller reads).
#[track_caller]
fn assert_step(n: usize, v: &Value) {
    let text = v["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(&format!("ok-{n}")),
        "step {n} ({}) did not see the change before it: {v}",
        STEPS[n].0
    );
    assert!(!text.contains("not saved"), "step {n}: {v}");
    assert_eq!(v["exit_code"], 0, "step {n}: {v}");
    assert_eq!(v["sandbox"]["mode"], "workspace-write", "step {n}: {v}");
}

/// The runtime directory the tests point `XDG_RUNTIME_DIR` at (the session's pending
/// state is written there), so that what is left in it can be looked at.
fn runtime_dir(env: &TestEnv) -> PathBuf {
    let dir = env.root().join("run");
    std::fs::create_dir_all(&dir).expect("runtime dir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    dir
}

/// Every file under `dir` (recursively).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The mode of the pending state file, as the command's own shell sees it (its save
/// function names the file).
const PENDING_MODE: &str = "stat -c %a \"$(declare -f __agentbash_session_save | grep -o \"'[^']*pending'\" | tr -d \"'\")\"";

#[test]
fn a_sandboxed_cli_session_keeps_ten_state_changes_and_leaves_no_pending_file() {
    let env = TestEnv::new();
    let rt = runtime_dir(&env);
    let profile = workspace_write(&env);
    for n in 0..STEPS.len() {
        let out = env
            .run_json(step(n))
            .opts(&["-p", &profile, "-s", "dev"])
            .env("XDG_RUNTIME_DIR", &rt)
            .run();
        assert_step(n, &out.json());
        assert_eq!(
            files(&rt),
            Vec::<PathBuf>::new(),
            "step {n}: {}",
            out.stdout
        );
    }
    env.run_json(PENDING_MODE)
        .opts(&["-p", &profile, "-s", "dev"])
        .env("XDG_RUNTIME_DIR", &rt)
        .output("600\n")
        .run();
    // What agentbash set for the sandbox (the run's TMPDIR, the package caches) is
    // not taken for the session's own exports.
    let shown = env.run(&["session", "show", "dev"]).stdout;
    let exported = shown
        .lines()
        .find(|l| l.starts_with("exported"))
        .unwrap_or("");
    for var in ["TMPDIR", "PIP_CACHE_DIR", "CARGO_HOME"] {
        assert!(!exported.contains(var), "{shown}");
    }
    assert!(exported.contains("BACK BAR"), "{shown}");
}

#[test]
fn a_sandboxed_rpc_session_keeps_ten_state_changes_on_its_live_shell() {
    let env = TestEnv::new();
    let rt = runtime_dir(&env);
    let profile = workspace_write(&env);
    let cmd = env
        .cmd(&["rpc", "-p", &profile])
        .env("XDG_RUNTIME_DIR", &rt);
    let mut rpc = LiveServer::start_cmd(cmd);
    let mut shells = Vec::new();
    for n in 0..STEPS.len() {
        let command = format!("{}; echo \"shell $$\"", step(n));
        let r = rpc.ask(json!({"id": n, "type": "bash", "command": command, "session": "dev"}));
        assert_step(n, &r["data"]);
        assert_eq!(files(&rt), Vec::<PathBuf>::new(), "step {n}: {r}");
        let out = r["data"]["output"].as_str().unwrap_or_default();
        shells.extend(
            out.lines()
                .filter(|l| l.starts_with("shell "))
                .map(str::to_string),
        );
    }
    shells.dedup();
    assert_eq!(
        shells.len(),
        1,
        "one live shell served every call: {shells:?}"
    );
    let r =
        rpc.ask(json!({"id": "mode", "type": "bash", "command": PENDING_MODE, "session": "dev"}));
    assert_eq!(r["data"]["output"], "600\n", "{r}");
    // The shell's exit trap, when the server stops it, leaves nothing behind either.
    drop(rpc);
    let left = files(&rt);
    assert_eq!(left, Vec::<PathBuf>::new(), "after the server exited");
}

#[test]
fn a_sandboxed_mcp_session_keeps_ten_state_changes_with_the_python_client() {
    let env = TestEnv::new();
    let profile = workspace_write(&env);
    crate::mcp::python_client_checks(&env, "session keeps ten state changes", &profile);
}

#[test]
fn a_session_made_in_the_sandbox_is_refused_under_another_policy() {
    let env = TestEnv::new();
    let sandboxed = workspace_write(&env);
    let (code, v, _) = run(
        &env,
        &sandboxed,
        Some("dev"),
        &[],
        "make() { touch PLANTED; }; export MARK=1",
    );
    assert_eq!(code, Some(0), "{v}");
    // Weaker (off), different (read-only, another workspace): refused, nothing run.
    for (extra, now) in [
        (&["--sandbox", "off"][..], "`off`"),
        (&["--sandbox", "read-only"][..], "`read-only (engine"),
    ] {
        let (code, v, stderr) = run(&env, &sandboxed, Some("dev"), extra, "make; echo ran");
        assert_eq!(code, Some(125), "{extra:?}: {v} {stderr}");
        let error = s(&v, "error");
        assert!(
            error.contains("made under the sandbox policy `workspace-write (engine")
                && error.contains(&format!("this run's is {now}"))
                && error.contains("agentbash session rm dev"),
            "{extra:?}: {error}"
        );
        assert!(!env.work().join("PLANTED").exists(), "{extra:?}: {v}");
        assert!(!s(&v, "output").contains("ran\n"), "{extra:?}: {v}");
    }
    let elsewhere = profile(
        &env,
        "elsewhere",
        &format!(
            "mode = \"workspace-write\"\nworkspace = \"{}\"",
            env.root().display()
        ),
        "",
    );
    let (code, v, _) = run(&env, &elsewhere, Some("dev"), &[], "make");
    assert_eq!(code, Some(125), "another workspace is another policy: {v}");
    assert!(!env.work().join("PLANTED").exists(), "{v}");
    // The same policy keeps working.
    let (code, v, _) = run(&env, &sandboxed, Some("dev"), &[], "echo $MARK; make");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], "1\n", "{v}");
    assert!(env.work().join("PLANTED").exists(), "{v}");
    env.test()
        .args(&["session", "show", "dev"])
        .stdout_has("sandbox    workspace-write (engine")
        .run();
}

#[test]
fn a_session_made_unsandboxed_is_refused_in_the_sandbox_over_rpc_too() {
    let env = TestEnv::new();
    let open = profile(&env, "open", "mode = \"off\"\nallow_override = true", "");
    let mut rpc = env.rpc(&["-p", &open]);
    let made = rpc.ask(json!({"id": 1, "type": "bash", "command": "export X=1", "session": "s"}));
    assert_eq!(made["data"]["exit_code"], 0, "{made}");
    let boxed = rpc.ask(json!({"id": 2, "type": "bash", "command": "echo $X",
        "session": "s", "sandbox": "workspace-write"}));
    assert_eq!(boxed["data"]["exit_code"], 125, "{boxed}");
    let error = boxed["data"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("made under the sandbox policy `off`")
            && error.contains("this run's is `workspace-write"),
        "{boxed}"
    );
    let again = rpc.ask(json!({"id": 3, "type": "bash", "command": "echo $X", "session": "s"}));
    assert_eq!(again["data"]["output"], "1\n", "{again}");
}

/// The rc snapshot's files: (snapshot, metadata).
fn snapshot_files(env: &TestEnv) -> (PathBuf, PathBuf) {
    let dir = env.root().join("cache/agentbash/snapshots");
    let all = files(&dir);
    let find = |suffix: &str| {
        all.iter()
            .find(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.ends_with(suffix) && name.matches('.').count() == 1
            })
            .cloned()
            .unwrap_or_else(|| panic!("no *{suffix} in {all:?}"))
    };
    (find(".sh"), find(".json"))
}

#[test]
fn a_snapshot_changed_behind_agentbash_is_never_sourced() {
    let env = TestEnv::new();
    env.write_rc("rc_function() { echo from-the-rc; }\n");
    let snap = profile(&env, "snap", "mode = \"off\"", "");
    std::fs::write(
        &snap,
        std::fs::read_to_string(&snap)
            .expect("profile")
            .replace("snapshot = false", "snapshot = true"),
    )
    .expect("profile");
    let (code, v, _) = run(&env, &snap, None, &[], "rc_function");
    assert_eq!((code, s(&v, "output")), (Some(0), "from-the-rc\n"), "{v}");
    // A command that could write ~/.cache plants code in the snapshot, and keeps its
    // metadata consistent (the content hash agentbash stores next to it).
    let (file, meta) = snapshot_files(&env);
    let planted = env.root().join("PLANTED");
    let mut text = std::fs::read_to_string(&file).expect("snapshot");
    text.push_str(&format!("touch {}\n", planted.display()));
    std::fs::write(&file, &text).expect("tamper");
    let mut m: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta).expect("meta")).expect("meta json");
    m["content_hash"] = json!(agentbash::ids::fnv64(text.as_bytes()));
    std::fs::write(&meta, m.to_string()).expect("tamper meta");
    for script in ["rc_function", "rc_function; echo $BASH_VERSION >/dev/null"] {
        let (code, v, _) = run(&env, &snap, None, &[], script);
        assert_eq!(code, Some(0), "{v}");
        assert_eq!(s(&v, "output"), "from-the-rc\n", "regenerated: {v}");
        assert!(!planted.exists(), "the planted line ran: {v}");
    }
    assert!(
        !std::fs::read_to_string(&file)
            .expect("snapshot")
            .contains("PLANTED"),
        "the snapshot was written again"
    );
    // Changed again, and this time it cannot be regenerated: no snapshot, a warning.
    let mut text = std::fs::read_to_string(&file).expect("snapshot");
    text.push_str(&format!("touch {}\n", planted.display()));
    std::fs::write(&file, &text).expect("tamper");
    let seals = env.state_dir().join("snapshot-seals");
    std::fs::remove_dir_all(&seals).expect("seals");
    std::fs::write(&seals, "not a directory").expect("block the seals");
    let (code, v, _) = run(&env, &snap, None, &[], "rc_function");
    assert!(!planted.exists(), "the planted line ran: {v}");
    assert_ne!(code, Some(0), "{v}");
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("shell snapshot unavailable"),
        "the run says it went without the snapshot: {v}"
    );
}

#[test]
fn sandboxed_package_managers_get_a_private_cache_per_workspace() {
    let env = TestEnv::new();
    let ww = workspace_write(&env);
    std::fs::create_dir_all(env.home().join(".cargo")).expect("cargo home");
    std::fs::write(env.home().join(".cargo/config.toml"), "[net]\nretry = 7\n").expect("config");
    let user_pip = env.home().join(".cache/pip");
    std::fs::create_dir_all(&user_pip).expect("user cache");
    let vars = "PIP_CACHE_DIR UV_CACHE_DIR npm_config_cache GOCACHE GOMODCACHE CARGO_HOME";
    let show = format!("for v in {vars}; do eval echo \\$v=\\${{$v-}}; done");
    let script = format!(
        "{show}; echo kept > \"$PIP_CACHE_DIR/wheel\" && echo wrote; (echo x > {}/x) 2>/dev/null || echo refused; cat \"$CARGO_HOME/config.toml\"",
        user_pip.display()
    );
    // The user's CARGO_HOME, as rustup's cargo proxy exports it.
    let v = env
        .run_json(&script)
        .profile(&ww)
        .env("CARGO_HOME", env.home().join(".cargo"))
        .code(0)
        .json();
    let cache = PathBuf::from(
        v["sandbox"]["package_cache"]
            .as_str()
            .expect("package_cache"),
    );
    assert!(
        cache.starts_with(env.root().join("cache/agentbash/sandbox-cache")),
        "{v}"
    );
    let out = s(&v, "output");
    for (var, sub) in [
        ("PIP_CACHE_DIR", "pip"),
        ("UV_CACHE_DIR", "uv"),
        ("npm_config_cache", "npm"),
        ("GOCACHE", "go-build"),
        ("GOMODCACHE", "go-mod"),
        ("CARGO_HOME", "cargo"),
    ] {
        assert!(
            out.contains(&format!("{var}={}\n", cache.join(sub).display())),
            "{var}: {v}"
        );
    }
    assert!(out.contains("wrote\n") && out.contains("refused\n"), "{v}");
    assert!(
        out.contains("retry = 7"),
        "cargo sees the user's config: {v}"
    );
    assert!(
        !user_pip.join("x").exists(),
        "the user's own cache stays read-only"
    );
    let mode = mode_of(&cache) & 0o777;
    assert_eq!(mode, 0o700, "{v}");
    assert!(
        std::fs::symlink_metadata(cache.join("cargo/credentials.toml")).is_err(),
        "credentials are not linked"
    );
    // It persists: the next run finds what the last one cached.
    let (_, v2, _) = run(&env, &ww, None, &[], "cat \"$PIP_CACHE_DIR/wheel\"");
    assert_eq!(s(&v2, "output"), "kept\n", "{v2}");
    // Explicit values win; off, or with env.sandbox_caches = false, nothing is set.
    let (_, v3, _) = run(
        &env,
        &ww,
        None,
        &["--env", "PIP_CACHE_DIR=/mine"],
        "echo $PIP_CACHE_DIR $UV_CACHE_DIR",
    );
    assert_eq!(
        s(&v3, "output"),
        format!("/mine {}\n", cache.join("uv").display()),
        "{v3}"
    );
    let set = profile(
        &env,
        "set",
        "mode = \"workspace-write\"",
        "[env.set]\nGOCACHE = \"/profile-go\"",
    );
    let (_, v4, _) = run(&env, &set, None, &[], "echo $GOCACHE");
    assert_eq!(s(&v4, "output"), "/profile-go\n", "{v4}");
    let (_, v5, _) = run(&env, &ww, None, &["--sandbox", "off"], &show);
    assert!(!s(&v5, "output").contains("sandbox-cache"), "{v5}");
    assert!(v5["sandbox"].is_null(), "{v5}");
    let no = profile(
        &env,
        "no",
        "mode = \"workspace-write\"",
        "[env]\nsandbox_caches = false",
    );
    let (_, v6, _) = run(&env, &no, None, &[], &show);
    assert!(!s(&v6, "output").contains("sandbox-cache"), "{v6}");
    assert!(v6["sandbox"]["package_cache"].is_null(), "{v6}");
    // Another workspace has a cache of its own.
    let other = env.root().join("other");
    std::fs::create_dir_all(&other).expect("other");
    let there = env
        .run_json("echo $PIP_CACHE_DIR")
        .profile(&ww)
        .current_dir(&other)
        .json();
    assert!(
        !s(&there, "output").starts_with(&cache.display().to_string()),
        "{there}"
    );
}

#[test]
fn the_state_dirs_tmp_is_private() {
    let env = TestEnv::new();
    let ww = workspace_write(&env);
    let (code, v, _) = run(&env, &ww, None, &[], "true");
    assert_eq!(code, Some(0), "{v}");
    let mode = mode_of(env.state_dir().join("tmp"));
    assert_eq!(mode & 0o777, 0o700, "{v}");
}

#[test]
fn artifacts_never_follow_a_symlinked_agentbash_out_of_the_tree() {
    let env = TestEnv::new();
    let elsewhere = env.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, env.work().join(".agentbash")).expect("link");
    // More than the ci profile's 1 MiB tail: the full output would be an artifact.
    let big = "head -c 1500000 /dev/zero | tr '\\0' x; echo";
    let v = env.run_json(big).profile("ci").code(0).json();
    assert!(v["artifact"].is_null(), "{}", v["artifact"]);
    assert_eq!(
        files(&elsewhere),
        Vec::<PathBuf>::new(),
        "written through the link"
    );
    let warnings = v["warnings"].to_string();
    let link = env.work().join(".agentbash");
    assert!(
        warnings.contains("artifacts unavailable")
            && warnings.contains(&format!("{} is a symbolic link", link.display()))
            && warnings.contains(&elsewhere.display().to_string()),
        "the warning names the path and the reason: {warnings}"
    );
    // A link deeper down is refused the same way; a real directory works.
    std::fs::remove_file(&link).expect("unlink");
    std::fs::create_dir_all(&link).expect("real .agentbash");
    std::os::unix::fs::symlink(&elsewhere, link.join("artifacts")).expect("link");
    let v = env.run_json(big).profile("ci").json();
    assert!(v["artifact"].is_null(), "{v}");
    assert_eq!(files(&elsewhere), Vec::<PathBuf>::new());
    std::fs::remove_file(link.join("artifacts")).expect("unlink");
    let v = env.run_json(big).profile("ci").json();
    let path = PathBuf::from(v["artifact"]["path"].as_str().expect("an artifact"));
    assert!(path.starts_with(link.join("artifacts")), "{v}");
    assert_eq!(std::fs::metadata(&path).expect("artifact").len(), 1_500_001);
}

#[test]
fn the_refusal_notice_names_the_real_path_and_the_right_key() {
    let env = TestEnv::new();
    let ww = workspace_write(&env);
    must_run(
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(env.work()),
    );
    let notice = |script: &str| {
        let (code, v, _) = run(&env, &ww, None, &[], script);
        assert_ne!(code, Some(0), "{v}");
        v["notices"]
            .as_array()
            .and_then(|n| {
                n.iter()
                    .find_map(|x| x.as_str().filter(|t| t.starts_with("[sandbox")))
            })
            .unwrap_or_else(|| panic!("no sandbox notice: {v}"))
            .to_string()
    };
    let config = env.work().join(".git/config");
    let n = notice("git config core.fsmonitor 'touch /tmp/planted'");
    assert!(
        n.contains(".git/config is read-only in the sandbox on purpose")
            && n.contains(&config.display().to_string())
            && !n.contains("add the path to [sandbox] writable"),
        "{n}"
    );
    let hook = env.work().join(".git/hooks/pre-commit.sample");
    let n = notice("cp /dev/null .git/hooks/pre-commit.sample");
    assert!(
        n.contains(".git/hooks is read-only in the sandbox on purpose")
            && n.contains(&hook.display().to_string()),
        "{n}"
    );
    // bash names itself first: the path is the one after it.
    let outside = env.root().join("outside-file");
    let n = notice(&format!("echo x > {}", outside.display()));
    assert!(
        n.contains(&format!("writing {} was refused", outside.display()))
            && n.contains("add the path to [sandbox] writable"),
        "{n}"
    );
}
