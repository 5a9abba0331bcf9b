//! Project trust: a repository's `.agentbash/profiles` run only after
//! `agentbash trust` (or `AGENTBASH_TRUST_PROJECT=1`), and stop when they change.

use crate::support::*;
use std::os::unix::fs::PermissionsExt;

/// A project default profile whose prefix would write `marker` before every command.
fn hostile_default(env: &TestEnv) -> std::path::PathBuf {
    marking_project_profile(env, "default", "description = \"cloned\"\n")
}

/// The project profile `name` (`more` and a prefix that would write a marker before
/// every command): the marker's path.
fn marking_project_profile(env: &TestEnv, name: &str, more: &str) -> std::path::PathBuf {
    let marker = env.root().join(format!("marker-{name}"));
    env.write(
        format!(".agentbash/profiles/{name}.toml"),
        format!(
            "{more}[shell]\nprefix = \"touch '{}';\"\n",
            marker.display()
        ),
    );
    marker
}

fn assert_skipped_warning(out: &Output, env: &TestEnv) {
    let project = env.work().canonicalize().unwrap();
    assert!(
        out.stderr.contains("is not trusted")
            && out.stderr.contains(&project.display().to_string())
            && out.stderr.contains("agentbash trust")
            && out.stderr.contains("AGENTBASH_TRUST_PROJECT=1"),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn an_untrusted_prefix_never_runs_until_trusted_and_again_after_an_edit() {
    let env = TestEnv::new();
    let marker = hostile_default(&env);
    let out = env.run_text("true").code(0).run();
    assert!(!marker.exists(), "the untrusted prefix ran");
    assert_skipped_warning(&out, &env);

    let trusted = env.trust(".");
    assert!(
        trusted.stdout.contains(".agentbash/profiles/default.toml"),
        "trust says what it hashed: {}",
        trusted.stdout
    );
    let out = env.run_text("true").code(0).run();
    assert!(marker.exists(), "a trusted prefix runs: {}", out.stderr);
    assert_lacks(&out.stderr, "not trusted");

    // An edit makes the project untrusted again.
    std::fs::remove_file(&marker).unwrap();
    let f = env.work().join(".agentbash/profiles/default.toml");
    let mut text = std::fs::read_to_string(&f).unwrap();
    text.push_str("# edited\n");
    std::fs::write(&f, text).unwrap();
    let out = env.run_text("true").code(0).run();
    assert!(!marker.exists(), "an edited profile ran without new trust");
    assert_skipped_warning(&out, &env);
    assert_has(&out.stderr, "modified profiles/default.toml");

    // So does a new file (a rule pack a profile could name), once re-trusted.
    env.trust(".");
    env.write(".agentbash/rules/extra.toml", "");
    let out = env.run_text("true").run();
    assert!(!marker.exists(), "a new file went unnoticed");
    assert_has(&out.stderr, "new rules/extra.toml");
}

#[test]
fn an_explicit_builtin_name_is_not_shadowed_by_an_untrusted_project() {
    let env = TestEnv::new();
    env.write(
        ".agentbash/profiles/agent.toml",
        "[interceptor]\nenabled = false\n[env.set]\nWHICH = \"project\"\n",
    );
    let out = env
        .run_json("echo \"[$WHICH]\"")
        .profile("agent")
        .code(0)
        .run();
    let v = out.json();
    assert_eq!(v["output"], "[]\n", "the built-in agent ran");
    assert_skipped_warning(&out, &env);
    // The built-in agent intercepts `cat`; the project's would not have.
    env.run_text("cat README.md")
        .profile("agent")
        .run()
        .assert_code(77);
}

#[test]
fn builtin_prefix_skips_even_a_trusted_project() {
    let env = TestEnv::new();
    env.write(
        ".agentbash/profiles/agent.toml",
        "[env.set]\nWHICH = \"project\"\n",
    );
    env.write(
        ".agentbash/profiles/x.toml",
        "extends = \"builtin:default\"\n[env.set]\nWHICH = \"x-on-builtin\"\n",
    );
    env.trust(".");
    env.run_json("echo \"[$WHICH]\"")
        .profile("agent")
        .output("[project]\n")
        .run();
    env.run_json("echo \"[$WHICH]\"")
        .profile("builtin:agent")
        .code(0)
        .field("output", "[]\n")
        .field("profile", "agent")
        .run();
    env.run_json("echo \"[$WHICH] $PAGER\"")
        .profile("x")
        .code(0)
        .output("[x-on-builtin] cat\n")
        .run();
    env.run_text("true").profile("builtin:nope").code(125).run();
}

#[test]
fn the_environment_variable_trusts_without_a_record() {
    let env = TestEnv::new();
    let marker = hostile_default(&env);
    let out = env
        .run_text("true")
        .env("AGENTBASH_TRUST_PROJECT", "1")
        .code(0)
        .run();
    assert!(marker.exists(), "{}", out.stderr);
    assert!(!env.state_dir().join("trust").exists(), "no record written");
}

#[test]
fn a_name_only_an_untrusted_project_defines_is_exit_125() {
    let env = TestEnv::new();
    let marker = marking_project_profile(&env, "mine", "");
    let out = env.run_text("true").profile("mine").code(125).run();
    assert!(!marker.exists());
    assert!(
        out.stderr.contains("exists only as")
            && out.stderr.contains("is not trusted")
            && out.stderr.contains("agentbash trust"),
        "{}",
        out.stderr
    );
    // extends by name reports the same.
    env.run_text("true")
        .profile_file("p.toml", "extends = \"mine\"\n")
        .code(125)
        .stderr_has("is not trusted")
        .run();
}

#[test]
fn profile_list_and_explain_show_the_untrusted_project() {
    let env = TestEnv::new();
    hostile_default(&env);
    let out = env.run_ok(&["profile", "list"]);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains(".agentbash/profiles/default.toml"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(line.contains("UNTRUSTED"), "{}", out.stdout);
    assert_has(&out.stdout, "built-in:default");
    let out = env.run_ok(&["explain", "--", "true"]);
    assert_has(&out.stdout, "warning");
    assert_has(&out.stdout, "is not trusted");
    assert_has(&out.stdout, "built-in:default");
}

#[test]
fn a_project_profile_cannot_load_files_its_record_does_not_cover() {
    let env = TestEnv::new();
    env.write("tools/base.toml", "[env.set]\nWHICH = \"outside\"\n");
    env.write(
        ".agentbash/profiles/x.toml",
        "extends = \"../../tools/base.toml\"\n",
    );
    env.trust(".");
    env.run_text("true")
        .profile("x")
        .code(125)
        .stderr_has("may only extend files under")
        .run();
}

#[test]
fn trust_list_and_revoke() {
    let env = TestEnv::new();
    let marker = hostile_default(&env);
    let project = env.work().canonicalize().unwrap();
    // Nothing to trust outside a project, nothing to revoke before trust.
    std::fs::create_dir_all(env.root().join("plain")).unwrap();
    env.test()
        .args(&["trust", "../plain"])
        .code(1)
        .stderr_has("has no .agentbash/")
        .run();
    env.run(&["trust", "--revoke"]).assert_code(1);

    // From a subdirectory, the nearest project is the one trusted.
    std::fs::create_dir_all(env.work().join("sub")).unwrap();
    env.cmd(&["trust"])
        .current_dir(env.work().join("sub"))
        .run()
        .assert_code(0);
    let dir = env.state_dir().join("trust");
    let mode = |p: &std::path::Path| mode_of(p) & 0o777;
    assert_eq!(mode(&dir), 0o700);
    for e in std::fs::read_dir(&dir).unwrap() {
        assert_eq!(mode(&e.unwrap().path()), 0o600);
    }
    let out = env.run_ok(&["trust", "--list"]);
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with(&project.display().to_string()))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(row.contains("matches") && row.contains("UTC"), "{row}");

    env.write(".agentbash/profiles/new.toml", "");
    let out = env.run(&["trust", "--list"]);
    assert_has(&out.stdout, "CHANGED");
    assert_has(&out.stdout, "new profiles/new.toml");
    std::fs::remove_file(env.work().join(".agentbash/profiles/new.toml")).unwrap();

    env.test()
        .args(&["trust", "--revoke", "."])
        .code(0)
        .stdout_has("revoked")
        .run();
    env.run_text("true").run().assert_code(0);
    assert!(!marker.exists(), "a revoked project's prefix ran");
    env.test()
        .args(&["trust", "--list"])
        .code(0)
        .stdout_lacks(project.display().to_string())
        .run();
}

#[test]
fn profile_check_reviews_an_untrusted_project_and_writable_records_are_not_believed() {
    let env = TestEnv::new();
    let marker = hostile_default(&env);
    env.write(
        ".agentbash/profiles/broken.toml",
        "[timeout]\ndefualt = 3\n",
    );
    let out = env.test().args(&["profile", "check"]).code(1).run();
    assert!(
        out.stdout
            .contains("(untrusted project: not used until trusted)")
            && out.stdout.contains("did you mean `default`?"),
        "{}",
        out.stdout
    );
    std::fs::remove_file(env.work().join(".agentbash/profiles/broken.toml")).unwrap();
    env.trust(".");
    // A trust directory others can write could hold any record: it is not believed.
    let dir = env.state_dir().join("trust");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = env.run_text("true").code(0).run();
    assert!(
        !marker.exists(),
        "a record in a world-writable dir was believed"
    );
    assert!(
        out.stderr.contains("trust records are not usable")
            && out.stderr.contains("writable by group"),
        "{}",
        out.stderr
    );
    env.test()
        .args(&["trust", "--list"])
        .code(125)
        .stderr_has("writable by group")
        .run();
    env.test().args(&["trust", "."]).code(125).run();
    assert_eq!(mode_of(&dir) & 0o777, 0o777, "an existing dir was chmod'ed");
}

#[test]
fn trust_refuses_to_hash_a_fifo_at_once() {
    let env = TestEnv::new();
    hostile_default(&env);
    let fifo = env.work().join(".agentbash/rules/pipe.toml");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let t = std::time::Instant::now();
    let out = env.test().args(&["trust"]).code(125).run();
    assert!(t.elapsed() < scaled(std::time::Duration::from_secs(5)));
    assert_has(&out.stderr, fifo.display().to_string());
    assert_has(&out.stderr, "FIFO");
    assert!(
        !env.state_dir().join("trust").exists() || env.run(&["trust", "--list"]).stdout.is_empty()
    );
}

/// A built-in profile's `extends` stays among the built-ins: `-p agent` (and
/// `builtin:agent`) in a trusted project whose `default.toml` changes the timeout and
/// the prefix is the built-in agent on the built-in default, without a warning.
#[test]
fn a_builtin_profile_extends_only_builtins() {
    let env = TestEnv::new();
    let marker = marking_project_profile(&env, "default", "[timeout]\nmax = 7\n");
    env.run_text("true")
        .opts(&["-q", "-p", "builtin:agent"])
        .code(0)
        .stderr_lacks("ignoring project profile")
        .run();
    env.run(&["trust"]).assert_code(0);
    for p in ["agent", "builtin:agent"] {
        let out = env.run_json("true").profile(p).code(0).run();
        assert_eq!(out.json()["timeout_s"], 120, "{p}: {}", out.stdout);
        assert!(
            !marker.exists(),
            "{p}: the project's default.toml was layered under it"
        );
    }
}

/// A pack outside what the trust record covers is refused however the run needs the
/// packs: compiled (a caller with tools), only checked (no tools: nothing of the pack
/// may be read either), or by `rules list`; and the guard's packs likewise.
#[test]
fn a_project_profile_cannot_name_rule_packs_its_record_does_not_cover() {
    let env = TestEnv::new();
    let pack = env.write(
        "tools/pack.toml",
        "[[rules]]\nid = \"x\"\npattern = '^echo\\b'\naction = \"deny\"\nmessage = \"no\"\n",
    );
    env.write(
        ".agentbash/profiles/x.toml",
        format!("[interceptor]\nrules = [\"{}\"]\n", pack.display()),
    );
    env.write(
        ".agentbash/profiles/g.toml",
        format!("[guard]\nrules = [\"{}\"]\n", pack.display()),
    );
    env.trust(".");
    let outside = "is outside";
    for args in [
        &["run", "-p", "x", "--tools", "grep", "--", "echo hi"][..],
        &["run", "-p", "x", "--", "echo hi"],
        &["rules", "list", "-p", "x"],
        &["run", "-p", "g", "--", "echo hi"],
    ] {
        let out = env.run(args);
        out.assert_code(125);
        assert!(
            out.stderr.contains(outside) && out.stderr.contains("move it there"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(!out.stdout.contains("hi"), "{args:?} ran: {}", out.stdout);
    }
}
