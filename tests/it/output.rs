//! What the caller is shown: retention, artifacts and their notices, the trailing
//! `| head`/`| tail` normalization and output hygiene (sanitizing)
//! (issue 2, items 3–6).

use crate::support::{
    Test, TestEnv, assert_has, assert_notice_is, mode_of, must_run, notices, re, s, sh_output,
    sh_text, u,
};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// The artifact file a result points at, checked against the artifact layout.
#[track_caller]
fn artifact_of(env: &TestEnv, v: &Value) -> (u64, PathBuf) {
    let a = &v["artifact"];
    assert!(a.is_object(), "no artifact in {v:#}");
    let id = a["id"].as_u64().expect("artifact.id");
    assert_eq!(a["url"], format!("artifact://{id}"));
    let path = PathBuf::from(a["path"].as_str().expect("artifact.path"));
    assert_eq!(
        path,
        env.state_dir()
            .join("artifacts")
            .join(format!("{id}.bash.log"))
    );
    (id, path)
}

/// `run --json -- command` under a profile with these `[output]` settings.
fn with_output<'e>(test: Test<'e>, settings: &str, command: &str) -> Test<'e> {
    test.run_json(command)
        .profile_file("p.toml", &format!("[output]\n{settings}\n"))
}

/// The shown output stays within the default 50 KB budget.
#[track_caller]
fn assert_within_the_budget(v: &Value) {
    let bytes = u(v, "output_bytes");
    assert!(bytes <= 51200, "output_bytes {bytes}");
}

#[test]
fn seq_100000_keeps_the_tail_and_spills_an_identical_artifact() {
    let env = TestEnv::new();
    let v = env.json_of("seq 1 100000");
    let output = s(&v, "output");
    assert_within_the_budget(&v);
    assert!(output.len() <= 51200, "output is {} bytes", output.len());
    assert!(
        output.ends_with("\n99999\n100000\n"),
        "{:?}",
        &output[output.len() - 20..]
    );
    assert_eq!(v["truncated"], true);
    assert_eq!(u(&v, "total_lines"), 100000);
    assert_eq!(u(&v, "total_bytes"), 588895);
    // The shown lines are a contiguous, whole-line tail.
    let first: u64 = output
        .lines()
        .next()
        .unwrap()
        .parse()
        .expect("whole first line");
    assert_eq!(first + u(&v, "output_lines") - 1, 100000);

    let (id, path) = artifact_of(&env, &v);
    let notice_re = re(
        r"^\[Showing lines (\d+)-100000 of 100000 \(50\.0KB limit\)\. Full: artifact://(\d+)\]$",
    );
    let notices: Vec<&str> = v["notices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let notice = notices
        .iter()
        .find(|n| notice_re.is_match(n))
        .unwrap_or_else(|| panic!("no [Showing …] notice in {notices:?}"));
    let caps = notice_re.captures(notice).unwrap();
    assert_eq!(caps[1].parse::<u64>().unwrap(), first);
    assert_eq!(caps[2].parse::<u64>().unwrap(), id);
    assert!(
        s(&v, "text").ends_with(notice),
        "text must end with the notice"
    );

    let raw = std::fs::read(&path).expect("read artifact");
    assert!(
        raw == sh_output("seq 1 100000"),
        "artifact differs from seq's output"
    );
    let mode = mode_of(&path) & 0o777;
    assert_eq!(mode, 0o600, "artifact file mode {mode:o}");
    let dmode = mode_of(path.parent().unwrap()) & 0o777;
    assert_eq!(dmode, 0o700, "artifact dir mode {dmode:o}");
}

#[test]
fn text_format_notice_goes_to_stderr() {
    let out = Test::new().run_text("seq 1 100000").code(0).run();
    assert!(out.stdout.ends_with("99999\n100000\n"));
    assert!(out.stdout.len() <= 51200 + 1);
    assert!(
        re(
            r"(?m)^\[Showing lines \d+-100000 of 100000 \(50\.0KB limit\)\. Full: artifact://\d+\]$"
        )
        .is_match(&out.stderr),
        "stderr: {:?}",
        out.stderr
    );
    assert!(!out.stdout.contains("[Showing"));
}

#[test]
fn small_output_makes_no_artifact() {
    let v = Test::new().run_json("seq 1 10").json();
    assert!(v["artifact"].is_null(), "{v:#}");
    assert_eq!(v["truncated"], false);
    assert!(v["truncation"].is_null());
}

#[test]
fn head_bytes_keeps_head_and_tail_with_the_middle_elided() {
    let env = TestEnv::new();
    let v = with_output(env.test(), "head_bytes = 1000", "seq 1 100000")
        .code(0)
        .json();
    let output = s(&v, "output");
    let marker_re = re(r"(?m)^\[…(\d+) lines elided…\]$");
    let m = marker_re
        .captures(output)
        .unwrap_or_else(|| panic!("no elided marker in output"));
    let whole = m.get(0).unwrap();
    let head = &output[..whole.start()];
    let tail = &output[whole.end()..];
    assert!(head.starts_with("1\n2\n3\n"), "head: {:?}", &head[..20]);
    assert!(head.len() <= 1000, "head part is {} bytes", head.len());
    assert!(
        tail.ends_with("\n100000\n"),
        "tail must end at the last line"
    );
    let head_last: u64 = head.trim_end().lines().last().unwrap().parse().unwrap();
    let tail_first: u64 = tail.trim_start().lines().next().unwrap().parse().unwrap();
    assert_eq!(
        m[1].parse::<u64>().unwrap(),
        tail_first - head_last - 1,
        "elided count"
    );
    // Head and tail together stay within max_bytes (the marker line aside).
    assert!(
        u(&v, "output_bytes") <= 51200 + whole.as_str().len() as u64 + 2,
        "output_bytes {}",
        v["output_bytes"]
    );
    assert_eq!(v["truncation"]["direction"], "middle");
    artifact_of(&env, &v);
}

#[test]
fn max_columns_caps_long_lines_and_saves_them() {
    let env = TestEnv::new();
    let v = with_output(
        env.test(),
        "max_columns = 20",
        "printf '%0100d\\nshort\\n' 0",
    )
    .code(0)
    .json();
    let lines: Vec<&str> = s(&v, "output").lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let capped = lines[0];
    assert!(capped.ends_with('…'), "{capped:?}");
    let kept = capped.trim_end_matches('…');
    assert!(
        (10..=20).contains(&kept.len()) && kept.bytes().all(|b| b == b'0'),
        "{capped:?}"
    );
    assert_eq!(lines[1], "short");
    let (_, path) = artifact_of(&env, &v);
    assert_eq!(
        std::fs::read(path).unwrap(),
        format!("{}\nshort\n", "0".repeat(100)).into_bytes()
    );
}

#[test]
fn max_columns_never_cuts_through_a_character() {
    // '€' is three bytes: a 10-byte cap falls inside the fourth one.
    let v = with_output(Test::new(), "max_columns = 10", "printf '€€€€€€€€\\n'").json();
    let line = s(&v, "output")
        .strip_suffix('\n')
        .expect("the line's newline");
    assert!(line.ends_with('…'), "{line:?}");
    assert!(!line.contains('\u{FFFD}'), "a character was cut: {line:?}");
    assert!(
        line.trim_end_matches('…').chars().all(|c| c == '€'),
        "{line:?}"
    );
}

#[test]
fn tail_cut_inside_a_long_line_never_splits_a_character() {
    // 40000 × '€' on one line = 120000 bytes; the 51200-byte tail starts mid-character.
    let v = Test::new()
        .run_json("yes € | head -n 40000 | tr -d '\\n'")
        .json();
    let output = s(&v, "output");
    assert!(!output.is_empty());
    assert!(
        output.chars().all(|c| c == '€'),
        "unexpected characters in {:?}",
        &output[..output.len().min(40)]
    );
    assert!(u(&v, "output_bytes") <= 51200);
    assert_eq!(u(&v, "total_bytes"), 120000);
}

#[test]
fn trailing_tail_is_stripped_and_the_full_output_saved() {
    let env = TestEnv::new();
    let v = env
        .run_json("seq 1 100 2>&1 | tail -n 5")
        .code(0)
        .output("96\n97\n98\n99\n100\n")
        .field("stripped", "| tail -n 5")
        .field("normalized_command", "seq 1 100 2>&1")
        .field("command", "seq 1 100 2>&1 | tail -n 5")
        .field("tail", 5)
        .json();
    assert!(v["head"].is_null());
    assert_eq!(u(&v, "total_lines"), 100);
    let (id, path) = artifact_of(&env, &v);
    assert_eq!(std::fs::read(path).unwrap(), sh_output("seq 1 100"));
    assert_notice_is(
        &v,
        &format!("[Showing lines 96-100 of 100. Full: artifact://{id}]"),
    );
    assert_eq!(v["truncation"]["truncated_by"], "lines");
    assert_eq!(v["truncation"]["shown_range"], serde_json::json!([96, 100]));
}

/// An explicit limit keeps the trailing pipe: it views what the pipeline prints.
/// `command` with `--LIMIT 2` (`limit` is `head` or `tail`) shows `want` and keeps the
/// pipe as written.
#[track_caller]
fn explicit_limit_views_the_pipe(command: &str, limit: &str, want: &str) {
    let flag = format!("--{limit}");
    let test = Test::new().run_json(command).opts(&[&flag, "2"]);
    let v = test.output(want).field(limit, 2).json();
    assert!(v["stripped"].is_null(), "{v:#}");
}

#[test]
fn explicit_tail_views_what_the_pipe_prints() {
    explicit_limit_views_the_pipe("seq 1 100 | tail -n 5", "tail", "99\n100\n");
}

#[test]
fn explicit_head_views_what_the_pipe_prints() {
    explicit_limit_views_the_pipe("seq 1 100 | head -n 3", "head", "1\n2\n");
}

#[test]
fn trailing_head_is_stripped() {
    let env = TestEnv::new();
    for cmd in [
        "seq 1 100 2>&1 | head -n 3",
        "seq 1 100 2>&1|head -3",
        "seq 1 100 |& head -n3  ",
    ] {
        let v = env.run_json(cmd).json();
        assert_eq!(s(&v, "output"), "1\n2\n3\n", "{cmd:?}");
        assert_eq!(v["head"], 3, "{cmd:?}");
        assert!(v["stripped"].is_string(), "{cmd:?}");
        assert!(
            s(&v, "normalized_command").starts_with("seq 1 100"),
            "{cmd:?}"
        );
    }
    env.run_json("seq 1 100 2>&1 | tail -5")
        .output("96\n97\n98\n99\n100\n")
        .run();
}

#[test]
fn other_head_forms_are_left_alone() {
    let env = TestEnv::new();
    let v = env.run_json("seq 1 100 | head -c 4").json();
    assert!(v["stripped"].is_null(), "{v:#}");
    assert_eq!(s(&v, "output"), "1\n2\n");
    let v = env.run_json("seq 1 20 2>&1 | head").json();
    assert!(v["stripped"].is_null(), "{v:#}");
    assert_eq!(s(&v, "output").lines().count(), 10);
}

#[test]
fn cr_split_across_chunks_gives_no_blank_line() {
    Test::new()
        .run_json("printf 'x\\r'; sleep 0.2; printf '\\ny\\n'")
        .output("x\ny\n")
        .run();
}

#[test]
fn ansi_escapes_and_controls_are_removed() {
    Test::new().run_json("printf '\\033[1;31mred\\033[0m plain\\n\\033]0;title\\007osc\\n\\033[2Kclear\\tTab\\a\\n'")
        .output("red plain\nosc\nclear\tTab\n").run();
}

#[test]
fn invalid_utf8_becomes_replacement_character() {
    let env = TestEnv::new();
    env.run_json("printf 'ok \\377\\n'")
        .code(0)
        .output("ok \u{FFFD}\n")
        .run();
    // Text format writes valid UTF-8 as well.
    let out = env.run_text("printf '\\377'").run();
    assert!(String::from_utf8(out.stdout_bytes.clone()).is_ok());
    assert_eq!(out.stdout, "\u{FFFD}");
}

/// The artifact keeps the raw bytes (CRLF, a lone CR, escapes, invalid UTF-8) of what
/// the text shows cleaned. A case is `(what printf writes, its bytes)`.
#[test]
fn artifact_keeps_the_raw_bytes() {
    let env = TestEnv::new();
    let cases: [(&str, &[u8]); 2] = [
        ("a\\r\\n\\033[31m\\377\\n", b"a\r\n\x1b[31m\xff\n"),
        ("abc\\rX\\n", b"abc\rX\n"),
    ];
    for (printf, raw) in cases {
        let v = env
            .run_json(format!("printf '{printf}'; seq 1 3"))
            .opts(&["--tail", "1"])
            .case(printf)
            .output("3\n")
            .json();
        let (_, path) = artifact_of(&env, &v);
        let want = [raw, b"1\n2\n3\n"].concat();
        assert_eq!(std::fs::read(path).unwrap(), want, "{printf}");
    }
}

#[test]
fn nul_bytes_in_output_are_handled() {
    let env = TestEnv::new();
    let v = env.json_of("printf 'a\\0b\\n'; head -c 70000 /dev/zero; echo end");
    let output = s(&v, "output");
    assert!(!output.contains('\0'), "NUL reached the shown text");
    assert!(
        output.ends_with("end\n"),
        "{:?}",
        &output[output.len().saturating_sub(20)..]
    );
    assert_eq!(u(&v, "total_bytes"), 4 + 70000 + 4);
    let out = env.run_text("printf 'a\\0b\\n'").code(0).run();
    assert!(!out.stdout_bytes.contains(&0), "NUL written to stdout");
    assert!(
        out.stdout.starts_with('a') && out.stdout.contains('b'),
        "{:?}",
        out.stdout
    );
}

#[test]
fn hundred_megabytes_on_one_line_stays_bounded() {
    let env = TestEnv::new();
    let v = env.json_of("head -c 100000000 /dev/zero | tr '\\0' a");
    assert_eq!(u(&v, "total_bytes"), 100_000_000);
    assert_within_the_budget(&v);
    let output = s(&v, "output");
    assert!(output.len() <= 51200);
    assert!(!output.is_empty() && output.bytes().all(|b| b == b'a'));
    let (_, path) = artifact_of(&env, &v);
    assert_eq!(std::fs::metadata(path).unwrap().len(), 100_000_000);
}

#[test]
fn head_and_tail_apply_in_that_order() {
    Test::new()
        .run_json("seq 1 100")
        .opts(&["--head", "10", "--tail", "3"])
        .output("8\n9\n10\n")
        .run();
}

#[test]
fn head_view_notice_and_truncation() {
    let env = TestEnv::new();
    let v = env.run_json("seq 1 5000 2>&1 | head -n 20").json();
    let (id, path) = artifact_of(&env, &v);
    assert_notice_is(
        &v,
        &format!("[Showing lines 1-20 of 5000. Full: artifact://{id}]"),
    );
    assert_eq!(v["truncation"]["direction"], "head");
    assert_eq!(v["truncation"]["truncated_by"], "lines");
    assert_eq!(v["truncation"]["shown_range"], serde_json::json!([1, 20]));
    assert_eq!(std::fs::read(path).unwrap(), sh_output("seq 1 5000"));
    // Text format: stdout has exactly the lines.
    let out = env.run_text("seq 1 5000 2>&1 | head -n 20").run();
    assert_eq!(out.stdout, sh_text("seq 1 20"));
}

#[test]
fn redirect_2_1_is_not_stripped() {
    let env = TestEnv::new();
    env.run_json("seq 1 3 2>&1 | tail -n 1")
        .field("normalized_command", "seq 1 3 2>&1")
        .field("stripped", "| tail -n 1")
        .output("3\n")
        .run();
    let v = env.run_json("seq 1 3 2>&1").json();
    assert!(v["stripped"].is_null());
    assert_eq!(s(&v, "output"), "1\n2\n3\n");
}

#[test]
fn strip_head_tail_false_runs_the_pipe_as_written() {
    let v = with_output(
        Test::new(),
        "strip_head_tail = false",
        "seq 1 100 | tail -n 2",
    )
    .json();
    assert!(v["stripped"].is_null());
    assert_eq!(s(&v, "output"), "99\n100\n");
    assert!(v["artifact"].is_null(), "nothing was cut: {v:#}");
}

#[test]
fn stdout_and_stderr_are_interleaved_in_order() {
    Test::new()
        .run_json("echo out1; echo err1 >&2; echo out2; echo err2 >&2")
        .output("out1\nerr1\nout2\nerr2\n")
        .run();
}

#[test]
fn counts_without_trailing_newline() {
    let v = Test::new().run_json("printf 'a\\nb'").output("a\nb").json();
    assert_eq!(u(&v, "total_lines"), 2);
    assert_eq!(u(&v, "total_bytes"), 3);
}

#[test]
fn c1_and_other_escape_sequences_are_removed() {
    Test::new()
        .run_json("printf 'a\\302\\205b\\033(B\\033[?25l\\033[38;2;1;2;3mc\\033[0m\\n'")
        .output("abc\n")
        .run();
}

#[test]
fn ci_profile_notice_uses_its_limit() {
    let v = Test::new().run_json("seq 1 300000").profile("ci").json();
    assert!(u(&v, "output_bytes") <= 1024 * 1024);
    assert!(
        v["notices"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .is_some_and(|n| re(r"^\[Showing lines \d+-300000 of 300000 \(1\.0MB limit\)\. Full: artifact://\d+\]$").is_match(n))),
        "{:#}",
        v["notices"]
    );
}

#[test]
fn concurrent_runs_get_distinct_artifact_ids() {
    let env = TestEnv::new();
    let runs: Vec<_> = (0..6)
        .map(|_| env.run_json("seq 1 1000 2>&1 | tail -n 1").spawn())
        .collect();
    let mut ids: Vec<u64> = runs
        .into_iter()
        .map(|r| {
            let v = r.wait().json();
            artifact_of(&env, &v).0
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6, "ids: {ids:?}");
    for id in ids {
        let p = env.state_dir().join(format!("artifacts/{id}.bash.log"));
        assert_eq!(std::fs::read(p).unwrap(), sh_output("seq 1 1000"));
    }
}

#[test]
fn artifact_limits_remove_the_oldest_at_allocation() {
    let env = TestEnv::new();
    env.write(
        "p.toml",
        "[artifacts]\nmax_total_bytes = 1000000\nmax_age_days = 7\n",
    );
    let mut ids = Vec::new();
    for _ in 0..3 {
        let v = env.run_json("seq 1 100000").profile("./p.toml").json();
        ids.push(artifact_of(&env, &v));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !ids[0].1.exists(),
        "the oldest artifact should be gone: 3 × 589 KB > 1 MB"
    );
    assert!(ids[2].1.exists(), "the newest artifact must stay");

    // An artifact older than max_age_days is removed at the next allocation.
    let old = &ids[1].1;
    must_run(Command::new("touch").args(["-d", "10 days ago"]).arg(old));
    env.run_json("seq 1 10 2>&1 | tail -n 1")
        .profile("./p.toml")
        .run();
    assert!(
        !old.exists(),
        "a 10-day-old artifact survived max_age_days = 7"
    );
}

#[test]
fn ndjson_output_events_are_coalesced() {
    let out = Test::new()
        .run_text("i=0; while [ $i -lt 200 ]; do echo $i; sleep 0.003; i=$((i+1)); done")
        .opts(&["--format", "ndjson"])
        .code(0)
        .run();
    let events = out.ndjson();
    let result = events.last().unwrap();
    let n = events.iter().filter(|e| e["type"] == "output").count() as u64;
    let ms = u(result, "duration_ms");
    assert!(
        n <= ms / 50 + 2,
        "{n} output events in {ms} ms: more than one per 50 ms"
    );
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "output")
        .map(|e| e["data"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, sh_text("seq 0 199"));
}

/// The result shows exactly `want`: the line limit `limit` held.
#[track_caller]
fn assert_shows_only(v: &Value, want: &str, limit: &str) {
    let output = s(v, "output");
    let lines = output.lines().count();
    let shown = format!("{} bytes / {lines} lines shown", output.len());
    assert!(output == want, "{limit} ignored: {shown}");
}

/// Regression (fixed): with `head_bytes` set (as in the built-in `agent` profile), a tail
/// line limit (`| tail -n N` or `--tail N`) is ignored once the output overflows
/// `max_bytes`: the caller gets ~32 KB of head+tail instead of N lines.
#[test]
fn tail_limit_still_applies_when_head_bytes_is_set() {
    let env = TestEnv::new();
    let v = with_output(
        env.test(),
        "head_bytes = 1000",
        "seq 1 100000 2>&1 | tail -n 5",
    )
    .json();
    assert_shows_only(&v, "99996\n99997\n99998\n99999\n100000\n", "`| tail -n 5`");
    let v = env
        .run_json("seq 1 100000")
        .opts(&["-p", "agent", "--tail", "3"])
        .json();
    assert_shows_only(&v, "99998\n99999\n100000\n", "`--tail 3` under -p agent");
}

/// Regression (fixed): when `head_bytes` cuts inside a long line, the elision marker says
/// `[…0 lines elided…]` and the notice claims every line was shown
/// (`Showing lines 1-1 and 2-2 of 2`), although ~99 KB of line 1 are missing.
#[test]
fn head_bytes_cut_inside_a_line_is_not_reported_as_complete() {
    for cmd in [
        "head -c 100000 /dev/zero | tr '\\0' a; echo; echo last",
        "head -c 100000 /dev/zero | tr '\\0' a",
    ] {
        let v = with_output(Test::new(), "head_bytes = 1000", cmd).json();
        assert_eq!(v["truncated"], true, "{cmd}");
        let output = s(&v, "output");
        assert!(
            !output.contains("[…0 lines elided…]"),
            "{cmd}: marker claims nothing was elided"
        );
        let total = u(&v, "total_lines");
        let notice = notices(&v)
            .into_iter()
            .find(|n| n.starts_with("[Showing"))
            .unwrap_or_else(|| panic!("{cmd}: no notice"));
        let m = re(r"^\[Showing lines 1-(\d+) and (\d+)-(\d+) of (\d+)")
            .captures(&notice)
            .map(|c| {
                (1..=4)
                    .map(|i| c[i].parse::<u64>().unwrap())
                    .collect::<Vec<_>>()
            });
        if let Some(n) = m {
            let claims_all = n[1] <= n[0] + 1 && n[2] == total;
            assert!(
                !claims_all,
                "{cmd}: notice claims every line was shown: {notice}"
            );
        }
        assert!(
            u(&v, "output_lines") <= total + 1,
            "{cmd}: {} output lines from {total} lines of input",
            v["output_lines"]
        );
    }
}

/// Regression (fixed): for a head+tail ("middle") cut, `truncation.shown_range` should be
/// [first shown line, last shown line] = [1, 100000]; it is [1, <number of output
/// lines>] instead, naming a line that is not shown.
#[test]
fn middle_cut_shown_range_ends_at_the_last_shown_line() {
    let v = with_output(Test::new(), "head_bytes = 1000", "seq 1 100000").json();
    assert_eq!(v["truncation"]["direction"], "middle");
    assert_eq!(
        v["truncation"]["shown_range"],
        serde_json::json!([1, 100000]),
        "{:#}",
        v["truncation"]
    );
}

// ---------------------------------------------------------------------------------
// Exact text (issue 12): the sanitized text byte for byte, in pipes and in JSON.

/// Commands whose output the sanitizer leaves as it is, with what bash prints.
const EXACT: [&str; 8] = [
    "echo ''",
    "echo -n hi",
    "printf '\\n\\nx\\n\\n\\n'",
    "echo -e '\\n\\n\\n'",
    "true",
    "printf 'a\\n'",
    "printf '\\n\\n'",
    "printf 'a\\nb'",
];

/// What `bash -c CMD` writes to stdout (agentbash's shell here is bash too).
fn bash_output(cmd: &str) -> Vec<u8> {
    std::process::Command::new("bash")
        .args(["-c", cmd])
        .output()
        .expect("run bash")
        .stdout
}

/// Regression: in a pipe, `echo ''` printed nothing, `echo -n hi` gained a newline and
/// trailing blank lines were lost, in every profile that does not stream (the `ci`
/// profile, streaming, was exact). Now stdout is the command's bytes in every profile.
#[test]
fn a_pipe_gets_the_exact_text_in_every_profile() {
    for cmd in EXACT {
        let want = bash_output(cmd);
        for profile in ["default", "ci", "agent"] {
            let out = Test::new()
                .run_text(cmd)
                .opts(&["-q", "-p", profile, "--format", "text"])
                .code(0)
                .run();
            assert_eq!(
                out.stdout_bytes,
                want,
                "{profile}: `{cmd}` gave {:?}, bash {:?}",
                out.stdout,
                String::from_utf8_lossy(&want)
            );
        }
    }
}

/// Regression: JSON `output` was trimmed (`""` for `echo -e "\n\n\n"`, whose
/// `total_lines` was 4). Now it is the exact text, `""` when the command printed
/// nothing (`(no output)` is only in `text`), and the line counts follow one rule: a
/// line is a newline-terminated run, plus a final unterminated one.
#[test]
fn json_output_is_the_exact_text_and_lines_are_counted_on_it() {
    let env = TestEnv::new();
    let lines =
        |t: &str| t.matches('\n').count() as u64 + u64::from(!t.is_empty() && !t.ends_with('\n'));
    for cmd in EXACT {
        let want = String::from_utf8(bash_output(cmd)).expect("UTF-8");
        for profile in ["default", "ci", "agent"] {
            for format in ["json", "ndjson"] {
                let out = env
                    .run_text(cmd)
                    .opts(&["-p", profile, "--format", format])
                    .code(0)
                    .run();
                let v = if format == "json" {
                    out.json()
                } else {
                    let events = out.ndjson();
                    let live: String = events
                        .iter()
                        .filter(|e| e["type"] == "output")
                        .filter_map(|e| e["data"].as_str())
                        .collect();
                    assert_eq!(live, want, "{profile} ndjson live: `{cmd}`");
                    events.last().expect("result").clone()
                };
                assert_eq!(s(&v, "output"), want, "{profile} {format}: `{cmd}`");
                assert_eq!(u(&v, "total_lines"), lines(&want), "{profile}: `{cmd}`");
                assert_eq!(u(&v, "output_lines"), lines(&want), "{profile}: `{cmd}`");
                assert_eq!(
                    u(&v, "output_bytes"),
                    want.len() as u64,
                    "{profile}: `{cmd}`"
                );
                let text = s(&v, "text");
                if want.is_empty() {
                    assert_eq!(text, "(no output)");
                } else {
                    assert!(
                        !text.contains("(no output)"),
                        "{profile}: `{cmd}`: {text:?}"
                    );
                }
            }
        }
    }
    // The counting rule on the brief's examples.
    for (cmd, n) in [
        ("echo -n hi", 1),
        ("printf 'a\\n'", 1),
        ("printf '\\n\\n'", 2),
    ] {
        let v = env.run_json(cmd).json();
        assert_eq!(u(&v, "total_lines"), n, "{cmd}");
    }
}

/// A cut output is marked as before, and what is shown of it is still exact: the tail
/// ends as the command's output ends, and notices stay out of it (they go to stderr).
#[test]
fn a_cut_output_keeps_its_exact_end_and_uncut_output_gains_no_marker() {
    let env = TestEnv::new();
    let out = env.run_text("seq 1 100000; printf end").code(0).run();
    assert!(
        out.stdout.ends_with("99999\n100000\nend"),
        "{:?}",
        &out.stdout[out.stdout.len() - 20..]
    );
    assert_has(&out.stderr, "[Showing lines");
    let v = env.run_json("seq 1 100000").json();
    assert!(s(&v, "output").ends_with("100000\n"));
    assert!(!s(&v, "output").contains("[Showing"));
    // Uncut, with a non-zero exit: the notice is in `text` and `notices` only.
    env.run_json("printf 'a\\n\\n'; exit 3")
        .output("a\n\n")
        .field("text", "a\n\n\nCommand exited with code 3")
        .run();
}

// ---------------------------------------------------------------------------------
// Progress bars and overstrike (issue 12): a line keeps only its final state.

/// Regression: a lone CR became a line break, so a progress bar redrawn 20,000 times
/// was 20,000 lines and pushed the useful output out of the 50 KiB budget.
#[test]
fn a_progress_bar_is_one_line_and_keeps_the_useful_output() {
    let cmd = "echo 'first useful line'; \
               for i in $(seq 1 20000); do printf '\\r[%-20s] %5d' x $i; done; \
               echo; echo 'last useful line'";
    let v = Test::new()
        .run_json(cmd)
        .output("first useful line\n[x                   ] 20000\nlast useful line\n")
        .json();
    assert_eq!(u(&v, "total_lines"), 3);
    assert_eq!(v["truncated"], false);
    assert!(v["artifact"].is_null());
}

/// Regression: a lone CR did not return to the line start; CRLF is still one break.
#[test]
fn a_lone_cr_returns_to_the_line_start_and_crlf_is_a_line_break() {
    Test::new()
        .run_json("printf 'a\\r\\nabc\\rX\\nlong\\r\\033[Kok\\n10%%\\r'")
        .output("a\nXbc\nok\n10%")
        .field("total_lines", 4)
        .run();
    // The artifact keeps the raw bytes: a case of `artifact_keeps_the_raw_bytes`.
}

/// Regression: `man ls` under `--pty` showed `NNAAMMEE`: backspace overstrike (bold
/// `N\bN`, underline `_\bN`) is resolved, in print mode and in PTY mode.
#[test]
fn backspace_overstrike_is_resolved() {
    let env = TestEnv::new();
    let cmd = "printf 'N\\bNA\\bAM\\bME\\bE\\n_\\bl_\\bs x\\by\\n'";
    for mode in ["--no-pty", "--pty"] {
        let v = env.run_json(cmd).opts(&[mode]).json();
        assert_eq!(s(&v, "output"), "NAME\nls y\n", "{mode}");
    }
    // The real thing, when man and its page are installed.
    if std::process::Command::new("man")
        .args(["-w", "ls"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let v = env
            .run_json("man ls | head -n 5")
            .opts(&["--pty"])
            .env("MANPAGER", "cat")
            .env("MAN_KEEP_FORMATTING", "1")
            .json();
        let output = s(&v, "output");
        assert_has(output, "NAME");
        assert!(
            !output.contains("NNAAMMEE") && !output.contains('\u{8}'),
            "{output:?}"
        );
    } else {
        crate::support::Missing::new(
            "man or the ls(1) page is not installed",
            "apt-get install man-db coreutils, as .ci/run does",
        )
        .skip_part();
    }
}

/// A line that never ends (300 MB with CRs in it, and a bar that never prints LF) is
/// held only up to its cap: the run finishes with memory bounded and the output
/// within its budget. (The README has the peak RSS for 1 GiB.)
#[test]
fn endless_lines_with_crs_stay_bounded() {
    let cases = [
        // 300 MB, a CR every 100 MB.
        "for i in 1 2 3; do head -c 107374182 /dev/zero | tr '\\0' a; printf '\\r'; done; printf 'X'",
        // 20 MB of redraws, never an LF.
        "yes 'downloading 42%' | head -n 1000000 | tr '\\n' '\\r'",
    ];
    for cmd in cases {
        let v = Test::new().run_json(cmd).code(0).json();
        assert!(u(&v, "output_bytes") <= 51200, "{}", v["output_bytes"]);
        let output = s(&v, "output");
        assert!(!output.contains('\r'));
        if cmd.starts_with("yes") {
            assert_eq!(output, "downloading 42%");
            assert_eq!(v["truncated"], false);
        } else {
            // Each 100 MB state outgrew the line cap and was passed on; each CR
            // after it started a new line (the tail shows whole lines: `X`).
            assert_eq!(output, "X");
            assert_eq!(u(&v, "total_lines"), 4);
        }
    }
}

/// Live events (`--format ndjson`, `render.live = "stream"`) carry finished lines: a
/// bar being redrawn sends nothing until its LF, then its final state once.
#[test]
fn live_events_carry_a_progress_bar_once_finished() {
    let env = TestEnv::new();
    let cmd =
        "for i in $(seq 1 100); do printf '\\rstep %3d' $i; sleep 0.005; done; echo; echo done";
    let out = env
        .run_text(cmd)
        .opts(&["--format", "ndjson"])
        .code(0)
        .run();
    let events = out.ndjson();
    let live: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "output")
        .filter_map(|e| e["data"].as_str())
        .collect();
    assert_eq!(live.concat(), "step 100\ndone\n");
    assert!(live.iter().all(|d| !d.contains("step  99")), "{live:?}");
    // The same in a pipe with render.live = "stream".
    env.run_text(cmd)
        .profile("ci")
        .stdout("step 100\ndone\n")
        .run();
}
