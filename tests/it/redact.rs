//! `output.redact` (issue 11): secret values masked as `[REDACTED:NAME]` in every
//! string a run returns, in every format, and in the artifact.

use crate::support::{Output, TestEnv, nonce, s, wait_for_cmdline};
use serde_json::Value;
use std::time::Duration;

const FORMATS: [&str; 3] = ["json", "ndjson", "text"];

/// Every string a format printed, and (json/ndjson) the result object.
struct Shown {
    all: String,
    result: Option<Value>,
    /// ndjson: the live output events joined.
    live: String,
    ndjson: bool,
}

impl Shown {
    /// In ndjson, the live output starts with `want`.
    #[track_caller]
    fn assert_live_starts_with(&self, want: &str) {
        if self.ndjson {
            assert!(self.live.starts_with(want), "{:.80}", self.live);
        }
    }
}

fn shown(format: &str, out: &Output) -> Shown {
    let all = format!("{}{}", out.stdout, out.stderr);
    let ndjson = format == "ndjson";
    match format {
        "json" => Shown {
            all,
            result: Some(out.json()),
            live: String::new(),
            ndjson,
        },
        "ndjson" => {
            let events = out.ndjson();
            let live = events
                .iter()
                .filter(|e| e["type"] == "output")
                .filter_map(|e| e["data"].as_str())
                .collect();
            Shown {
                all,
                result: events.last().cloned(),
                live,
                ndjson,
            }
        }
        _ => Shown {
            all,
            result: None,
            live: String::new(),
            ndjson,
        },
    }
}

/// `agentbash run --format FORMAT -p ./p.toml OPTS -- command` with `vars` set, which
/// must exit 0.
#[track_caller]
pub(crate) fn run_formatted(
    env: &TestEnv,
    format: &str,
    opts: &[&str],
    command: &str,
    vars: &[(&str, &str)],
) -> Output {
    let mut all = vec!["--format", format, "-p", "./p.toml"];
    all.extend_from_slice(opts);
    let mut run = env.run_text(command).opts(&all).code(0);
    for (k, v) in vars {
        run = run.env(k, v);
    }
    run.run()
}

fn profile(env: &TestEnv, redact: &str, extra: &str) {
    env.write(
        "p.toml",
        format!("[output]\nredact = {redact}\nmax_bytes = 2048\n{extra}"),
    );
}

fn artifact_text(v: &Value) -> String {
    let path = v["artifact"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("no artifact in {v:#}"));
    String::from_utf8_lossy(&std::fs::read(path).expect("artifact")).into_owned()
}

#[test]
fn globs_match_names_case_insensitively() {
    let env = TestEnv::new();
    profile(&env, r#"["*my_token*", "*SECRET*"]"#, "");
    for format in FORMATS {
        let out = run_formatted(
            &env,
            format,
            &[],
            "echo \"a=$MY_TOKEN b=$lower_secret\"",
            &[
                ("MY_TOKEN", "upper-token-value"),
                ("lower_secret", "lower-secret-value"),
            ],
        );
        let sh = shown(format, &out);
        assert!(
            sh.all
                .contains("a=[REDACTED:MY_TOKEN] b=[REDACTED:lower_secret]"),
            "{format}: {}",
            sh.all
        );
        assert!(!sh.all.contains("-value"), "{format}: {}", sh.all);
    }
}

/// A value with CRLF shows in the text with LF (the sanitizer's rewriting) and is
/// masked there; the artifact, raw bytes, is masked in its raw form. A value with a
/// line break that a terminal turns into CRLF is masked in PTY mode too.
#[test]
fn crlf_and_multi_line_secrets_are_masked_in_the_text_and_the_artifact() {
    let env = TestEnv::new();
    profile(&env, r#"["*_KEY"]"#, "head_bytes = 512\n");
    let cases = [
        ("--no-pty", "crlf-part-one\r\ncrlf-part-two"),
        ("--pty", "lf-part-one\nlf-part-two"),
        ("--pty", "lone-cr-one\rlone-cr-two"),
    ];
    for (mode, value) in cases {
        for format in ["json", "ndjson"] {
            let out = run_formatted(
                &env,
                format,
                &[mode],
                "printf 'x=%s.\\n' \"$MULTI_KEY\"; seq 1 2000",
                &[("MULTI_KEY", value)],
            );
            let sh = shown(format, &out);
            let r = sh.result.clone().expect("result");
            assert!(
                s(&r, "text").contains("x=[REDACTED:MULTI_KEY]."),
                "{mode} {format} {value:?}: {:.200}",
                s(&r, "text")
            );
            for half in value.split(['\r', '\n']).filter(|h| !h.is_empty()) {
                assert!(!sh.all.contains(half), "{mode} {format}: {half} leaked");
            }
            let raw = artifact_text(&r);
            assert!(
                raw.starts_with("x=[REDACTED:MULTI_KEY].\r\n")
                    || raw.starts_with("x=[REDACTED:MULTI_KEY].\n"),
                "{mode} {format} artifact: {raw:.80?}"
            );
            sh.assert_live_starts_with("x=[REDACTED:MULTI_KEY].");
        }
    }
}

/// Written in pieces with pauses, across its own line break: one secret still.
#[test]
fn a_secret_split_across_writes_and_lines_is_masked() {
    let env = TestEnv::new();
    profile(&env, r#"["*TOKEN*"]"#, "");
    let value = "split-token-first-line\nsplit-token-second-line";
    let cmd = "printf '<%s' \"${SPLIT_TOKEN:0:6}\"; sleep 0.1; printf '%s' \"${SPLIT_TOKEN:6:20}\"; \
               sleep 0.1; printf '%s>\\n' \"${SPLIT_TOKEN:26}\"; seq 1 2000";
    for format in FORMATS {
        let out = run_formatted(&env, format, &[], cmd, &[("SPLIT_TOKEN", value)]);
        let sh = shown(format, &out);
        for part in ["split-token-first", "second-line"] {
            assert!(!sh.all.contains(part), "{format}: {part} leaked");
        }
        if let Some(r) = &sh.result {
            let raw = artifact_text(r);
            assert!(
                raw.starts_with("<[REDACTED:SPLIT_TOKEN]>\n1\n"),
                "{raw:.60?}"
            );
        }
        sh.assert_live_starts_with("<[REDACTED:SPLIT_TOKEN]>\n");
    }
}

#[test]
fn a_secret_a_session_exported_is_masked_in_later_runs() {
    let env = TestEnv::new();
    profile(&env, r#"["*TOKEN*"]"#, "");
    env.run_text("export API_TOKEN=session-token-abc123")
        .opts(&["-p", "./p.toml", "-s", "s1"])
        .run()
        .assert_code(0);
    for format in FORMATS {
        let out = run_formatted(&env, format, &["-s", "s1"], "echo \"t=$API_TOKEN\"", &[]);
        let sh = shown(format, &out);
        assert!(
            sh.all.contains("t=[REDACTED:API_TOKEN]"),
            "{format}: {}",
            sh.all
        );
        assert!(
            !sh.all.contains("session-token-abc123"),
            "{format}: {}",
            sh.all
        );
    }
}

/// cwd and final_cwd (a directory named after the secret), error, notices and
/// session (a session named after it), background_killed, command, blocked:
/// masked in json, ndjson (start event and result) and text.
#[test]
fn every_result_field_is_masked() {
    let env = TestEnv::new();
    let secret = "field-secret-4711";
    profile(
        &env,
        r#"["*SECRET*"]"#,
        "[process]\nbackground = \"kill\"\n",
    );
    std::fs::create_dir_all(env.work().join(format!("d-{secret}"))).expect("mkdir");
    let dir = format!("d-{secret}");
    let missing = format!("gone-{secret}");
    let n = nonce();
    let background = format!("sh -c 'sleep 60.{n}; : {secret}' & echo started");
    let runs: Vec<(Vec<&str>, &str)> = vec![
        (vec!["-C", &dir, "--", "pwd"], "cwd"),
        (vec!["-C", &missing, "--", "true"], "error"),
        (vec!["--", &background], "background_killed"),
        (vec!["--", "echo field-secret-4711"], "command"),
        (
            vec!["--tools", "read", "--", "cat field-secret-4711"],
            "blocked",
        ),
    ];
    for format in FORMATS {
        for (args, what) in &runs {
            let mut argv = vec!["run", "--format", format, "-p", "./p.toml"];
            argv.extend(args.iter().copied());
            let out = env.cmd(&argv).env("FIELD_SECRET", secret).run();
            let sh = shown(format, &out);
            assert!(
                !sh.all.contains(secret),
                "{format} {what}: leaked\n{}",
                sh.all
            );
            // (The text format does not list killed background jobs.)
            assert!(
                sh.all.contains("[REDACTED:FIELD_SECRET]")
                    || (format == "text" && *what == "background_killed"),
                "{format} {what}: nothing masked\n{}",
                sh.all
            );
            let Some(r) = sh.result else { continue };
            let masked = |key: &str| {
                assert!(
                    s(&r, key).contains("[REDACTED:FIELD_SECRET]"),
                    "{format} {what}: {key} = {:?}",
                    r[key]
                )
            };
            match *what {
                "cwd" => ["cwd", "final_cwd", "output"].map(masked).len(),
                "error" => ["error", "cwd", "text"].map(masked).len(),
                "background_killed" => {
                    let killed = r["background_killed"].as_array().expect("array");
                    assert!(
                        killed.iter().any(|k| k["command"]
                            .as_str()
                            .is_some_and(|c| c.contains("[REDACTED:FIELD_SECRET]"))),
                        "{format}: {killed:?}"
                    );
                    0
                }
                "command" => ["command", "normalized_command", "output"]
                    .map(masked)
                    .len(),
                _ => {
                    assert!(r["blocked"].is_object(), "{r:#}");
                    ["output", "text"].map(masked).len()
                }
            };
        }
    }
}

/// A run that waits for a busy session is told so, naming the session: with the
/// session named after a secret, that text and the session field are masked.
#[test]
fn notices_and_the_session_name_are_masked() {
    let env = TestEnv::new();
    let secret = "busy-session-secret-9";
    profile(&env, r#"["*SECRET*"]"#, "");
    let n = nonce();
    let sleeper = format!("sleep 30.{n}");
    let holder = env
        .run_text(&sleeper)
        .opts(&["-s", secret])
        .env("BUSY_SECRET", secret)
        .spawn();
    assert!(
        wait_for_cmdline(&format!("sleep 30.{n}"), Duration::from_secs(10)),
        "the first run did not start"
    );
    for format in ["json", "ndjson"] {
        let out = env
            .run_text("true")
            .opts(&[
                "--format", format, "-p", "./p.toml", "-t", "1", "-s", secret,
            ])
            .env("BUSY_SECRET", secret)
            .run();
        let sh = shown(format, &out);
        assert!(!sh.all.contains(secret), "{format}: leaked\n{}", sh.all);
        let r = sh.result.expect("result");
        assert_eq!(r["session"], "[REDACTED:BUSY_SECRET]");
        assert!(
            s(&r, "text").contains("for session \"[REDACTED:BUSY_SECRET]\", held by another run"),
            "{r:#}"
        );
    }
    drop(holder);
    crate::support::kill_cmdline(&sleeper);
}

/// The agent profile: its wider globs, URL passwords in any variable, and the
/// shell's own PWD/OLDPWD left alone by `*_PWD`.
#[test]
fn the_agent_profile_masks_url_passwords_and_not_pwd() {
    let env = TestEnv::new();
    let work = env.work().display().to_string();
    for format in FORMATS {
        let out = env
            .run_text("echo \"db=$DATABASE_URL pwd=$PWD old=$OLDPWD d=$DB_PWD k=$X_APIKEY p=$GH_PAT c=$AWS_CREDENTIALS_FILE\"").opts(&["--format", format, "-p", "agent"])
            .env("DATABASE_URL", "postgres://u:secret@h/db")
            .env("PWD", &work)
            .env("OLDPWD", "/tmp")
            .env("DB_PWD", "db-pwd-value-1")
            .env("X_APIKEY", "api-key-value-2")
            .env("GH_PAT", "gh-pat-value-3")
            .env("AWS_CREDENTIALS_FILE", "/creds/file-value-4")
            .code(0).run();
        let sh = shown(format, &out);
        let want = format!(
            "db=postgres://u:[REDACTED:DATABASE_URL]@h/db pwd={work} old=/tmp \
             d=[REDACTED:DB_PWD] k=[REDACTED:X_APIKEY] p=[REDACTED:GH_PAT] \
             c=[REDACTED:AWS_CREDENTIALS_FILE]"
        );
        assert!(sh.all.contains(&want), "{format}: {}", sh.all);
        for leak in ["u:secret@", "value-1", "value-2", "value-3", "value-4"] {
            assert!(!sh.all.contains(leak), "{format}: {leak}");
        }
    }
}

/// Line edits run after the first masking: a secret printed whole and then partly
/// overwritten by a CR redraw (`SECRET\rxx`) shows as a partly overwritten mask, never
/// as the rest of the secret (`xxCRET`); one put together by backspace overstrike is
/// masked in the line it makes. In every format and in PTY mode.
#[test]
fn line_edits_cannot_reveal_a_secret() {
    let env = TestEnv::new();
    profile(&env, r#"["*_TOKEN"]"#, "");
    let secret = "cr-secret-value-42";
    let cases = [
        ("printf '%s\\rxx\\n' \"$MY_TOKEN\"", "xxEDACTED:MY_TOKEN]"),
        (
            "printf '%sZZ\\b\\b%s\\n' \"${MY_TOKEN:0:16}\" \"${MY_TOKEN:16}\"",
            "[REDACTED:MY_TOKEN]",
        ),
    ];
    for (cmd, want) in cases {
        for mode in ["--no-pty", "--pty"] {
            for format in FORMATS {
                let out = run_formatted(&env, format, &[mode], cmd, &[("MY_TOKEN", secret)]);
                let sh = shown(format, &out);
                assert!(sh.all.contains(want), "{mode} {format} `{cmd}`: {}", sh.all);
                for piece in ["CRET", "secret", "value-42"] {
                    assert!(
                        !sh.all.contains(piece),
                        "{mode} {format} `{cmd}`: {}",
                        sh.all
                    );
                }
                if let Some(r) = &sh.result {
                    assert_eq!(s(r, "output"), format!("{want}\n"), "{mode} {format}");
                }
            }
        }
    }
}
