//! The rc snapshot (issue 5): what is carried from `~/.bashrc` into commands,
//! what is dropped and why, reuse and invalidation, and rc files that are slow,
//! failing, noisy or hostile — none of which may break a run. Also `shell.prefix`.

use crate::support::{Output, TestEnv, assert_has, assert_lacks, procs_with_cmdline, s};
use std::path::PathBuf;
use std::time::Duration;

/// A user rc with what real ones have: a non-interactive guard, output, a kept
/// function calling a `_` helper (itself calling another), an unused helper, a
/// function and aliases shadowing tools, a plain alias and an option.
pub const BASHRC: &str = r#"
case $- in *i*) ;; *) return;; esac
echo "Welcome back!"
greet() { _zz "$@"; }
_zz() { _zz_inner "hello $1"; }
_zz_inner() { echo "$1"; }
_completion_helper() { :; }
grep() { command grep --color=always "$@"; }
alias ls='ls --color=always'
alias hey='echo hey-from-alias'
shopt -s extglob
set -o pipefail
"#;

fn with_rc(rc: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write_rc(rc);
    env
}

/// `agentbash snapshot report`, which must succeed.
/// `agentbash snapshot report`, which must succeed and name each of `wants`: its text.
#[track_caller]
fn snapshot_report(env: &TestEnv, wants: &[&str]) -> String {
    let out = env.run_ok(&["snapshot", "report"]);
    for want in wants {
        assert_has(&out.stdout, want);
    }
    out.stdout
}

fn snapshot_files(env: &TestEnv) -> Vec<PathBuf> {
    let dir = env.root().join("cache/agentbash/snapshots");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn mode(p: &std::path::Path) -> u32 {
    crate::support::mode_of(p) & 0o777
}

fn warnings(v: &serde_json::Value) -> String {
    v["warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|w| w.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn functions_aliases_and_options_are_carried_and_shadowing_names_dropped() {
    let env = with_rc(BASHRC);
    let v = env
        .run_json(
            "greet world; hey; type -t grep; type -t _completion_helper || echo no-helper; alias ls 2>&1 || true; shopt -p extglob; [[ -o pipefail ]] && echo pipefail-on || echo pipefail-off",
        )
        .json();
    let out = s(&v, "output");
    assert!(
        out.contains("hello world"),
        "kept function via transitive helpers: {out}"
    );
    assert!(
        out.contains("hey-from-alias"),
        "alias usable on the command's first line: {out}"
    );
    assert!(
        out.contains("\nfile\n"),
        "grep function dropped, the real grep runs: {out}"
    );
    assert!(out.contains("no-helper"), "unused _ helper dropped: {out}");
    assert!(
        out.contains("alias: ls: not found"),
        "ls alias dropped: {out}"
    );
    assert!(
        out.contains("shopt -s extglob"),
        "safe option carried: {out}"
    );
    assert!(
        out.contains("pipefail-off"),
        "unsafe option not carried: {out}"
    );
    assert!(
        !out.contains("Welcome back"),
        "rc output never reaches commands: {out}"
    );
    assert!(
        warnings(&v).contains("pipefail"),
        "the first run says what was not carried: {v:#}"
    );
    // Later runs reuse the snapshot quietly.
    let v = env.run_json("greet again").json();
    assert_eq!(s(&v, "output"), "hello again\n");
    assert_eq!(warnings(&v), "", "no warning once the snapshot is cached");
}

#[test]
fn report_lists_captured_and_dropped_names_with_reasons() {
    let env = with_rc(BASHRC);
    snapshot_report(
        &env,
        &[
            "functions  _zz _zz_inner greet",
            "aliases    hey",
            "options    shopt -s extglob",
            "function grep",
            "shadows the `grep` command",
            "alias    ls",
            "_completion_helper",
            "helper not called by any kept function",
            "set -o pipefail",
            "would change the exit status of pipelines",
        ],
    );
    let show = env.run_ok(&["snapshot", "show"]);
    assert!(
        show.stdout.starts_with("# /"),
        "show starts with the path: {}",
        show.stdout
    );
    assert_has(&show.stdout, "greet ()");
    assert_lacks(&show.stdout, "grep ()");
}

#[test]
fn snapshot_files_are_private_and_reused_until_the_rc_changes() {
    let env = with_rc(BASHRC);
    env.run_json("true").json();
    let files = snapshot_files(&env);
    // The snapshot itself (`<id>.sh`), and the part a run cut from it (`<id>.<n>.sh`).
    let sh: Vec<&PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .filter(|p| {
            p.file_stem()
                .is_some_and(|s| !s.to_string_lossy().contains('.'))
        })
        .collect();
    assert_eq!(sh.len(), 1, "{files:?}");
    assert_eq!(mode(sh[0]), 0o600);
    assert_eq!(mode(&env.root().join("cache/agentbash/snapshots")), 0o700);
    for f in &files {
        if f.extension().is_some_and(|e| e == "sh" || e == "json") {
            assert_eq!(mode(f), 0o600, "{}", f.display());
        }
    }
    let meta = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("meta");
    let first = std::fs::read_to_string(meta).expect("meta");
    env.run_json("true").json();
    assert_eq!(
        std::fs::read_to_string(meta).expect("meta"),
        first,
        "reused, not regenerated"
    );
    // A changed rc is picked up by the next run.
    env.write_rc(format!("{BASHRC}\nnewfn() {{ echo new; }}\n"));
    env.run_json("newfn").output("new\n").run();
    // `snapshot refresh` regenerates on demand.
    env.test()
        .args(&["snapshot", "refresh"])
        .code(0)
        .stdout_has("4 functions")
        .run();
}

#[test]
fn a_run_sources_only_what_its_command_can_reach() {
    let env = with_rc(BASHRC);
    // Named directly, through an alias, dynamically, or listed: all work.
    env.run_json("greet direct").output("hello direct\n").run();
    env.run_json("hey").output("hey-from-alias\n").run();
    env.run_json("f=greet; $f dynamic")
        .output("hello dynamic\n")
        .run();
    env.run_json("declare -F | grep -c ' greet$'")
        .output("1\n")
        .run();
    // The part cut for `greet` holds greet and its helpers, nothing else.
    let part = snapshot_files(&env)
        .into_iter()
        .filter(|p| {
            p.file_stem()
                .is_some_and(|s| s.to_string_lossy().contains('.'))
        })
        .map(|p| std::fs::read_to_string(p).expect("read part"))
        .find(|t| t.contains("greet ()"))
        .expect("a part with greet");
    assert!(
        part.contains("_zz ()") && part.contains("_zz_inner ()"),
        "{part}"
    );
    assert_has(&part, "shopt -s extglob");
    assert_lacks(&part, "alias hey");
}

#[test]
fn a_slow_rc_is_stopped_and_the_run_goes_on_with_a_warning() {
    let n = crate::support::nonce();
    // Each time the rc is read it adds a line to `reads`.
    let env = TestEnv::new();
    let reads = env.root().join("rc-reads");
    env.write_rc(format!(
        "echo read >> '{}'\nf() {{ echo f; }}\nsleep 37.{n}\n",
        reads.display()
    ));
    let v = env.run_json("echo ran; type -t f || echo no-f").json();
    assert_eq!(v["exit_code"], 0);
    assert_eq!(s(&v, "output"), "ran\nno-f\n");
    assert!(warnings(&v).contains("longer than 2s"), "{v:#}");
    assert!(
        v["duration_ms"].as_u64().unwrap_or(u64::MAX)
            < crate::support::scaled(Duration::from_secs(6)).as_millis() as u64,
        "{v:#}"
    );
    assert!(
        procs_with_cmdline(&format!("sleep 37.{n}"), Duration::from_secs(2)).is_empty(),
        "the rc's sleep was left running"
    );
    let read_once = std::fs::read_to_string(&reads).expect("the rc was read");
    // The failure is cached: the next run does not read (and wait for) the rc again,
    // but still says why.
    let v = env.run_json("true").json();
    assert_eq!(
        std::fs::read_to_string(&reads).expect("read"),
        read_once,
        "the rc was read again: {v:#}"
    );
    assert!(warnings(&v).contains("longer than 2s"), "{v:#}");
}

#[test]
fn a_failing_rc_keeps_what_it_defined_and_says_why() {
    let env = with_rc("before() { echo before; }\nexit 1\nafter() { echo after; }\n");
    let v = env
        .run_json("before; type -t after || echo no-after")
        .json();
    assert_eq!(v["exit_code"], 0, "{v:#}");
    assert_eq!(s(&v, "output"), "before\nno-after\n");
    assert!(
        warnings(&v).contains("exited its shell (status 1)"),
        "{v:#}"
    );

    let env = with_rc("ok() { echo ok; }\nif then fi\n");
    let v = env.run_json("ok").json();
    assert_eq!(s(&v, "output"), "ok\n", "{v:#}");
}

#[test]
fn an_rc_that_prints_or_reads_stdin_never_disturbs_the_command() {
    let env = with_rc("echo noisy; echo noisy >&2; read -r line; cat; f() { echo f-works; }\n");
    let v = env.run_json("f").json();
    assert_eq!(s(&v, "output"), "f-works\n");
    assert_eq!(v["exit_code"], 0);
}

#[test]
fn errexit_and_nounset_from_the_rc_are_not_carried() {
    let env = with_rc("set -eu\nf() { echo f; }\n");
    let v = env
        .run_json("false; echo $NOT_SET_ANYWHERE; echo still-running; f")
        .json();
    assert_eq!(v["exit_code"], 0, "{v:#}");
    assert_eq!(s(&v, "output"), "\nstill-running\nf\n");
    let w = warnings(&v);
    assert!(w.contains("errexit") && w.contains("nounset"), "{v:#}");
}

#[test]
fn no_rc_means_no_snapshot_and_no_warning() {
    let env = TestEnv::new();
    let v = env.run_json("echo $BASH_ENV; echo ok").json();
    assert_eq!(s(&v, "output"), "\nok\n");
    assert_eq!(warnings(&v), "");
    assert!(snapshot_files(&env).is_empty());
    env.test()
        .args(&["snapshot", "show"])
        .code(1)
        .stderr_has("does not exist")
        .run();
}

#[test]
fn snapshot_can_be_turned_off() {
    let env = with_rc(BASHRC);
    env.write("nosnap.toml", "[shell]\nsnapshot = false\n");
    let v = env
        .run_json("type -t greet || echo none")
        .profile("./nosnap.toml")
        .json();
    assert_eq!(s(&v, "output"), "none\n");
    assert!(snapshot_files(&env).is_empty());
}

#[test]
fn line_numbers_and_child_scripts_are_unaffected() {
    let env = with_rc(BASHRC);
    env.write(
        "child.sh",
        "type -t greet || echo child-has-no-greet\necho \"BASH_ENV=${BASH_ENV-unset}\"\n",
    );
    let out: Output = env.run_json("bash child.sh; echo $LINENO").run();
    let v = out.json();
    assert_eq!(s(&v, "output"), "child-has-no-greet\nBASH_ENV=unset\n1\n");
}

#[test]
fn prefix_wraps_the_command_and_explain_shows_it() {
    let env = TestEnv::new();
    env.write("nice.toml", "[shell]\nprefix = \"nice -n 7\"\n");
    env.test()
        .args(&["explain", "-p", "./nice.toml", "--", "echo hi"])
        .code(0)
        .stdout_has("nice -n 7 echo hi")
        .run();
    let v = env
        .run_json("bash -c 'cut -d\" \" -f19 /proc/$$/stat'")
        .profile("./nice.toml")
        .json();
    assert_eq!(s(&v, "output"), "7\n", "{v:#}");
}

/// An rc whose functions shadow the builtins agentbash's own shell code calls, and
/// an alias for a keyword: none of them reaches a command, sessions keep working
/// (cd, export, a function saved), and the report says what was dropped and why.
#[test]
fn rc_functions_named_like_builtins_never_break_sessions() {
    let env = with_rc(
        "builtin() { echo hijacked; }\ncommand() { echo hijacked; }\nprintf() { echo hijacked; }\n\
         cd() { builtin cd \"$@\" && echo cd-wrapper >&2; }\nalias if='echo hijacked'\ngreet() { echo hi \"$1\"; }\n",
    );
    std::fs::create_dir_all(env.work().join("sub")).expect("mkdir");
    let v = env
        .run_json("cd sub; export X=1; f() { echo fn; }")
        .opts(&["-s", "hj"])
        .json();
    assert_eq!(v["exit_code"], 0, "{v:#}");
    assert_eq!(warnings(&v), "", "the snapshot was taken: {v:#}");
    let v = env
        .run_json("pwd; echo $X; f; greet you; type -t builtin command printf")
        .opts(&["-s", "hj"])
        .json();
    let out = s(&v, "output");
    assert_eq!(
        out,
        format!(
            "{}/sub\n1\nfn\nhi you\nbuiltin\nbuiltin\nbuiltin\n",
            env.work().display()
        ),
        "{v:#}"
    );
    let v = env.run_json("if true; then echo plain; fi").json();
    assert_eq!(s(&v, "output"), "plain\n", "{v:#}");
    let r = &snapshot_report(
        &env,
        &[
            "function builtin",
            "shadows the `builtin` builtin, which agentbash's own shell code and commands rely on",
            "function command",
            "function printf",
            "alias    if",
            "named like the shell keyword `if`",
        ],
    );
    assert!(
        r.contains("functions  cd greet"),
        "a cd wrapper is kept:\n{r}"
    );
    // Nothing anywhere printed the hijack.
    for args in [&["session", "show", "hj"][..], &["snapshot", "show"][..]] {
        let shown = env.run(args);
        assert!(
            !shown.stdout.contains("echo hijacked"),
            "{args:?}: {}",
            shown.stdout
        );
    }
}

#[test]
fn a_snapshot_swapped_for_a_link_to_the_same_bytes_is_generated_again_not_followed() {
    let env = with_rc(BASHRC);
    env.run_json("true").json();
    let sh = snapshot_files(&env)
        .into_iter()
        .find(|p| {
            p.extension().is_some_and(|e| e == "sh")
                && p.file_stem()
                    .is_some_and(|s| !s.to_string_lossy().contains('.'))
        })
        .expect("the snapshot");
    // The same bytes, so its seal's SHA-256 still matches: only the link gives it away.
    let elsewhere = env.root().join("elsewhere.sh");
    std::fs::copy(&sh, &elsewhere).expect("copy");
    std::fs::remove_file(&sh).expect("remove");
    std::os::unix::fs::symlink(&elsewhere, &sh).expect("link");
    env.run_json("greet x").output("hello x\n").run();
    let now = std::fs::symlink_metadata(&sh).expect("the snapshot");
    assert!(
        now.file_type().is_file(),
        "the link was followed instead of the snapshot being generated again"
    );
}
