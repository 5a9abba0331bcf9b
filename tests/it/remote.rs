//! Remote targets (docs/REMOTE.md): `--target NAME` over real transports — a local
//! argv (`agentbash rpc` in another state directory), a namespace
//! (`unshare … agentbash rpc`, standing in for a container), a real OpenSSH server on
//! 127.0.0.1 that the test starts with keys of its own, and fake transports that
//! break the handshake.

use crate::support::{
    LiveServer, TestEnv, assert_has, bin, descendants, processes, s, tool_error_text,
    wait_for_cmdline,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether `probe` runs and succeeds; when not, the test says so and skips (or
/// fails, under `AGENTBASH_REQUIRE_ALL=1`).
fn available(what: &str, probe: &[&str]) -> bool {
    let ok = Command::new(probe[0])
        .args(&probe[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        crate::harness::skipped(
            &format!(
                "{what} is not available here (`{}` failed)",
                probe.join(" ")
            ),
            "install it from the distribution's packages, as .ci/run does",
        );
    }
    ok
}

/// The remote side's own hermetic home, config and state, and the `env` words that
/// give them to the remote `agentbash rpc` (tagged, so the test's cleanup finds its
/// processes too).
struct RemoteSide {
    dir: tempfile::TempDir,
}

impl RemoteSide {
    fn new() -> RemoteSide {
        let dir = tempfile::Builder::new()
            .prefix("agentbash-remote-")
            .tempdir()
            .expect("temp dir");
        for sub in ["home", "state", "config/agentbash", "cache"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("dirs");
        }
        RemoteSide { dir }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state/agentbash")
    }

    fn env_words(&self, env: &TestEnv) -> Vec<String> {
        let r = self.dir.path();
        vec![
            format!("HOME={}", r.join("home").display()),
            format!("XDG_CONFIG_HOME={}", r.join("config").display()),
            format!("XDG_STATE_HOME={}", r.join("state").display()),
            format!("XDG_CACHE_HOME={}", r.join("cache").display()),
            format!("AGENTBASH_STATE_DIR={}", self.state().display()),
            format!(
                "AGENTBASH_CONFIG_DIR={}",
                r.join("config/agentbash").display()
            ),
            format!("PATH={}", std::env::var("PATH").unwrap_or_default()),
            format!("{}={}", crate::support::TAG_VAR, env.tag),
        ]
    }

    /// `env VAR=… agentbash rpc`: the remote agentbash as a plain local argv.
    fn argv(&self, env: &TestEnv) -> Vec<String> {
        let mut v = vec!["env".to_string()];
        v.extend(self.env_words(env));
        v.push(bin().display().to_string());
        v.push("rpc".into());
        v
    }

    /// Run agentbash as the remote side would (its own state), e.g. `session list`.
    fn agentbash(&self, env: &TestEnv, args: &[&str]) -> crate::support::Output {
        let mut words: Vec<String> = self.env_words(env);
        words.push(bin().display().to_string());
        words.extend(args.iter().map(|a| a.to_string()));
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        env.program("env", &words).run()
    }
}

/// A user profile `NAME` whose `[target]` transport is `argv` (plus `extra` TOML).
fn target_profile(env: &TestEnv, name: &str, argv: &[String], extra: &str) {
    let dir = env.config_dir().join("profiles");
    std::fs::create_dir_all(&dir).expect("profiles dir");
    let transport = toml::Value::Array(
        argv.iter()
            .map(|w| toml::Value::String(w.clone()))
            .collect(),
    );
    std::fs::write(
        dir.join(format!("{name}.toml")),
        format!("[target]\ntransport = {transport}\n{extra}"),
    )
    .expect("write profile");
}

/// An executable script in the test's root.
fn script(env: &TestEnv, name: &str, body: &str) -> String {
    let p = env.root().join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).expect("write script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    p.display().to_string()
}

/// A JSON result without what differs between two runs of one command.
fn comparable(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("duration_ms");
        if let Some(a) = o.get_mut("artifact").and_then(Value::as_object_mut) {
            a.remove("path");
        }
    }
    v
}

/// `args` run locally and with `--target NAME` give the same stdout, stderr and
/// exit code (JSON compared field by field, durations and artifact paths aside).
#[track_caller]
fn same_as_local(env: &TestEnv, target: &str, args: &[&str]) {
    let local = env.run(args);
    let mut remote_args = vec![args[0], "--target", target];
    remote_args.extend(&args[1..]);
    let remote = env.run(&remote_args);
    assert_eq!(
        remote.code(),
        local.code(),
        "{args:?}: exit codes differ\nremote stderr: {}",
        remote.stderr
    );
    let json = args.contains(&"--json") || args.contains(&"ndjson");
    if json {
        let lines = |o: &crate::support::Output| -> Vec<Value> {
            o.ndjson().into_iter().map(comparable).collect()
        };
        assert_eq!(lines(&remote), lines(&local), "{args:?}");
    } else {
        assert_eq!(remote.stdout, local.stdout, "{args:?}: stdout");
    }
    assert_eq!(remote.stderr, local.stderr, "{args:?}: stderr");
}

/// The cases every transport must render exactly as a local run.
const CASES: &[&[&str]] = &[
    &["run", "--", "echo out; echo err >&2"],
    &["run", "--", "echo partial; exit 3"],
    &["run", "-t", "1", "--", "echo start; sleep 5"],
    &["run", "--head", "2", "--", "seq 10"],
    &["run", "--json", "--", "echo out; exit 4"],
    &["run", "--json", "-t", "1", "--", "sleep 5"],
    &[
        "run",
        "--format",
        "ndjson",
        "-t",
        "200000",
        "--",
        "echo a; exit 2",
    ],
];

#[test]
fn a_local_argv_target_renders_exactly_as_a_local_run() {
    let env = TestEnv::new();
    let remote = RemoteSide::new();
    target_profile(&env, "box", &remote.argv(&env), "");
    for case in CASES {
        same_as_local(&env, "box", case);
    }
}

/// Output cut to the retention budget: the same preview and notice, and the
/// artifact (kept on the remote side) read back through the target.
#[test]
fn a_cut_output_keeps_its_artifact_on_the_remote_side_and_artifact_show_reads_it() {
    let env = TestEnv::new();
    let remote = RemoteSide::new();
    target_profile(&env, "box", &remote.argv(&env), "");
    same_as_local(&env, "box", &["run", "--", "seq 100000"]);
    same_as_local(&env, "box", &["run", "--json", "--", "seq 200000"]);
    let v = env
        .run_json("seq 1500000")
        .opts(&["--target", "box"])
        .code(0)
        .json();
    let id = v["artifact"]["id"]
        .as_u64()
        .expect("an artifact")
        .to_string();
    let path = PathBuf::from(s(&v["artifact"], "path"));
    assert!(
        path.starts_with(remote.state()),
        "kept remotely: {}",
        path.display()
    );
    // The whole artifact (over 4 MiB: several pages), byte for byte.
    let shown = env.run_ok(&["artifact", "show", "--target", "box", &id]);
    assert_eq!(shown.stdout_bytes, std::fs::read(&path).expect("artifact"));
    env.test()
        .args(&["artifact", "show", "--target", "box", &id, "--tail", "2"])
        .stdout("1499999\n1500000\n")
        .run();
    env.test()
        .args(&[
            "artifact", "show", "--target", "box", "--head", "3", "--tail", "1", &id,
        ])
        .stdout("3\n")
        .run();
    // Not here: this side has no such artifact.
    env.run(&["artifact", "show", &id]).assert_code(1);
    let missing = env
        .test()
        .args(&["artifact", "show", "--target", "box", "999"])
        .code(1)
        .run();
    assert!(
        missing
            .stderr
            .contains("[target box] no artifact artifact://999"),
        "{}",
        missing.stderr
    );
}

#[test]
fn sessions_and_jobs_live_on_the_remote_side() {
    let env = TestEnv::new();
    let remote = RemoteSide::new();
    target_profile(&env, "box", &remote.argv(&env), "");
    let dir = env.root().join("elsewhere");
    std::fs::create_dir_all(&dir).expect("dir");
    let first = format!("cd {} && export FLAVOUR=remote", dir.display());
    env.run_text(&first)
        .opts(&["--target", "box", "-s", "s1"])
        .run()
        .assert_code(0);
    let second = env
        .run_text("echo $FLAVOUR $PWD")
        .opts(&["--target", "box", "-s", "s1"])
        .code(0)
        .run();
    assert_eq!(second.stdout, format!("remote {}\n", dir.display()));
    let listed = |o: crate::support::Output| o.stdout.contains("s1");
    assert!(listed(remote.agentbash(&env, &["session", "list"])));
    assert!(!listed(env.run(&["session", "list"])), "no session here");

    // A job started through the target runs there, listed there and not here.
    let mut rpc = env.rpc(&["--target", "box"]);
    let sleep = format!("sleep 300.{}", crate::support::nonce());
    let started = rpc.ask(json!({"id": "j", "type": "job_start", "command": sleep}));
    assert_eq!(started["success"], true, "{started}");
    let listed = rpc.ask(json!({"id": "l", "type": "job_list"}));
    assert_eq!(
        listed["data"]["jobs"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    let here = env.run(&["job", "list", "--json"]);
    assert_eq!(here.json()["jobs"], json!([]), "no job here");
    let stopped =
        rpc.ask(json!({"id": "s", "type": "job_stop", "job": started["data"]["job"]["id"]}));
    assert_eq!(stopped["success"], true, "{stopped}");
}

/// The transport is a script that leaves a marker when it starts: a command the
/// local guard or interceptor refuses never starts it.
#[test]
fn the_local_guard_and_interceptor_refuse_before_anything_travels() {
    let env = TestEnv::new();
    let remote = RemoteSide::new();
    let marker = env.root().join("transport-started");
    let argv: Vec<String> = remote.argv(&env).iter().map(|w| format!("'{w}'")).collect();
    let transport = script(
        &env,
        "marked.sh",
        &format!("touch '{}'\nexec {}", marker.display(), argv.join(" ")),
    );
    target_profile(&env, "box", &[transport], "");
    let protected = env.root().join("protected");
    std::fs::create_dir_all(&protected).expect("dir");
    env.write(
        ".agentbash/guard.toml",
        format!("[guard]\nprotected = [\"{}\"]\n", protected.display()),
    );
    let guard = env.work_path(".agentbash/guard.toml");
    let refused = env
        .run_json(format!("rm -rf {}", protected.display()))
        .opts(&["--target", "box", "-p", &guard])
        .code(77)
        .run();
    assert!(
        refused.json()["blocked"]["rule"]
            .as_str()
            .unwrap_or("")
            .starts_with("guard"),
        "{}",
        refused.stdout
    );
    env.run_text("cat notes.txt")
        .opts(&["--target", "box", "--tools", "read"])
        .code(77)
        .run();
    assert!(
        !marker.exists(),
        "the transport started for a refused command"
    );
    assert!(protected.exists());
    env.run_text("true")
        .opts(&["--target", "box"])
        .run()
        .assert_code(0);
    assert!(
        marker.exists(),
        "the transport starts for a command that may go"
    );
}

/// A namespace (new mount and PID namespaces, as a container has) stands in for a
/// container: the same results, and the command sees the namespace's own PIDs.
#[test]
fn a_namespace_transport_stands_in_for_a_container() {
    if !available(
        "unshare (mount + PID namespaces)",
        &[
            "unshare",
            "--mount",
            "--pid",
            "--fork",
            "--mount-proc",
            "true",
        ],
    ) {
        return;
    }
    let env = TestEnv::new();
    let remote = RemoteSide::new();
    let mut argv: Vec<String> = ["unshare", "--mount", "--pid", "--fork", "--mount-proc"]
        .iter()
        .map(|w| w.to_string())
        .collect();
    argv.extend(remote.argv(&env));
    target_profile(&env, "ctr", &argv, "");
    for case in &CASES[..3] {
        same_as_local(&env, "ctr", case);
    }
    let pid = env
        .run_text("echo $$")
        .opts(&["--target", "ctr", "-q"])
        .code(0)
        .run();
    let n: u32 = pid.stdout.trim().parse().expect("a pid");
    assert!(n < 100, "the command's pid {n} is the namespace's own");
}

fn handshake_fails(env: &TestEnv, body: &str, extra: &str) -> String {
    let fake = script(env, "fake.sh", body);
    target_profile(env, "fake", &[fake], extra);
    target_refused(env, "fake")
}

/// `agentbash run --target TARGET -- true`, which must fail before it runs (exit
/// 125): its stderr.
#[track_caller]
fn target_refused(env: &TestEnv, target: &str) -> String {
    let out = env.run_text("true").opts(&["--target", target]).code(125);
    out.run().stderr
}

#[test]
fn a_transport_speaking_another_protocol_is_refused_naming_both_versions() {
    let env = TestEnv::new();
    let err = handshake_fails(
        &env,
        r#"read line
echo '{"id":"hello","type":"response","command":"hello","success":true,"data":{"protocol":99,"version":"9.9.9","capabilities":[]}}'
sleep 10"#,
        "",
    );
    assert_has(&err, "protocol 99");
    assert!(
        err.contains(&format!("protocol {}", agentbash::server::PROTOCOL)),
        "{err}"
    );
    // rpc and mcp refuse to start on it too.
    let rpc = env.cmd(&["rpc", "--target", "fake"]).stdin("").run();
    rpc.assert_code(125);
    assert_has(&rpc.stderr, "protocol 99");
    let mcp = env.cmd(&["mcp", "--target", "fake"]).stdin("").run();
    mcp.assert_code(125);
}

#[test]
fn a_transport_answering_garbage_nothing_or_dying_is_a_clear_error() {
    let env = TestEnv::new();
    let err = handshake_fails(&env, "echo 'Welcome to the build host!'\nsleep 10", "");
    assert_has(&err, "did not answer the handshake with rpc");
    assert_has(&err, "Welcome to the build host!");
    let err = handshake_fails(&env, "sleep 30", "connect_timeout = 1\n");
    assert_has(&err, "no answer to the handshake within 1 s");
    let err = handshake_fails(
        &env,
        "echo 'ssh: connect to host nowhere: Connection refused' >&2\nexit 255",
        "",
    );
    assert_has(&err, "ended before it answered the handshake");
    assert!(
        err.contains("Connection refused"),
        "the transport's stderr: {err}"
    );
    let err = handshake_fails(&env, "exec /nonexistent/agentbash-nowhere", "");
    assert_has(&err, "[target fake:");
    target_profile(
        &env,
        "gone",
        &["no-such-transport-anywhere".to_string()],
        "",
    );
    assert_has(
        target_refused(&env, "gone"),
        "cannot start the transport `no-such-transport-anywhere`",
    );
}

#[test]
fn target_configuration_errors_name_the_profile_and_key() {
    let env = TestEnv::new();
    let dir = env.config_dir().join("profiles");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("plain.toml"), "description = \"no target\"\n").expect("write");
    assert_has(
        target_refused(&env, "plain"),
        "--target plain: the profile has no [target] transport",
    );
    target_refused(&env, "missing-profile");
    std::fs::write(dir.join("empty.toml"), "[target]\ntransport = [\"\"]\n").expect("write");
    let empty = env.run(&["profile", "check", "empty"]);
    assert!(
        empty.stderr.contains("target.transport") || empty.stdout.contains("target.transport"),
        "{empty:?}"
    );
    assert!(
        format!("{}{}", empty.stdout, empty.stderr).contains("must not be empty"),
        "{empty:?}"
    );
    std::fs::write(
        dir.join("typed.toml"),
        "[target]\ntransport = [\"ssh\", 22]\n",
    )
    .expect("write");
    let typed = target_refused(&env, "typed");
    assert_has(&typed, "target.transport");
    assert_has(&typed, "an array of strings");
}

#[test]
fn explain_names_the_target_and_sends_nothing() {
    let env = TestEnv::new();
    let marker = env.root().join("transport-started");
    let transport = script(&env, "never.sh", &format!("touch '{}'", marker.display()));
    target_profile(&env, "box", std::slice::from_ref(&transport), "");
    let text = env.run_ok(&["explain", "--target", "box", "--", "echo hi"]);
    assert_has(&text.stdout, "\ntarget      box: the command runs there");
    let json = env.explain_json("echo hi").opts(&["--target", "box"]).run();
    assert_eq!(json.json()["target"]["transport"], json!([transport]));
    assert!(!marker.exists(), "explain started the transport");
}

/// One `rpc --target` client, many requests, one transport process.
#[test]
fn rpc_through_a_target_multiplexes_one_transport_and_reconnects_after_a_drop() {
    let env = TestEnv::new();
    let remote = RemoteSide::new();
    target_profile(&env, "box", &remote.argv(&env), "");
    let mut rpc = env.rpc(&["--target", "box"]);
    let hello = rpc.ask(json!({"id": "h", "type": "hello"}));
    assert_eq!(
        hello["data"]["protocol"],
        agentbash::server::PROTOCOL,
        "{hello}"
    );
    assert_eq!(hello["data"]["target"]["name"], "box");
    // `env` execs the remote agentbash: the transport process is that agentbash.
    concurrent_requests(&mut rpc, "box", "agentbash");
    dropped_transport(&env, &mut rpc, "box", "agentbash");
}

/// 100 requests sent at once over one transport, each answered correctly.
fn concurrent_requests(rpc: &mut LiveServer, name: &str, transport_program: &str) {
    const N: usize = 100;
    let started = Instant::now();
    for i in 0..N {
        rpc.send(
            json!({"id": format!("r{i}"), "type": "bash", "command": format!("echo $(({i} * 3))")}),
        );
    }
    let ids: Vec<String> = (0..N).map(|i| format!("r{i}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let answers = rpc.responses(&ids);
    for (i, data) in answers.iter().enumerate() {
        assert_eq!(data["output"], format!("{}\n", i * 3), "r{i}: {data}");
    }
    assert_eq!(
        transports(rpc.pid(), transport_program).len(),
        1,
        "one transport process for target {name}"
    );
    eprintln!(
        "{N} concurrent requests over one {transport_program} transport: {:?}",
        started.elapsed()
    );
}

/// The transport processes of a client: its children running `program`.
fn transports(client: i32, program: &str) -> Vec<i32> {
    let all = processes();
    descendants(client)
        .into_iter()
        .filter(|&pid| {
            crate::support::parent_of(pid) == Some(client)
                && all.iter().any(|p| {
                    p.pid == pid
                        && p.cmdline
                            .split(' ')
                            .next()
                            .is_some_and(|w| w.ends_with(program))
                })
        })
        .collect()
}

/// Kill the transport mid-request: the request is answered with the drop, and the
/// next request starts a new transport.
fn dropped_transport(env: &TestEnv, rpc: &mut LiveServer, name: &str, transport_program: &str) {
    let _ = env;
    let mut sleeps = Vec::new();
    for id in ["long", "longer"] {
        let sleep = format!("sleep 60.{}", crate::support::nonce());
        rpc.send(json!({"id": id, "type": "bash", "command": sleep}));
        sleeps.push(sleep);
    }
    // The run has started once the remote is busy with it: wait for the transport.
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        if let Some(&p) = transports(rpc.pid(), transport_program).first() {
            break p;
        }
        assert!(Instant::now() < deadline, "no transport process");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Both commands run on the target: the drop ends requests in flight.
    for sleep in &sleeps {
        assert!(
            wait_for_cmdline(sleep, Duration::from_secs(20)),
            "`{sleep}` never started on the target"
        );
    }
    // SAFETY: kill(2) on the transport this test's client started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let mut answered = Vec::new();
    while answered.len() < 2 {
        let m = rpc
            .try_next(Duration::from_secs(20))
            .expect("answers after the drop");
        if m["type"] == "response" {
            answered.push(m);
        }
    }
    for long in &answered {
        assert_eq!(long["success"], false, "{long}");
        assert_eq!(long["error_kind"], "failed", "{long}");
        assert!(
            s(long, "error").starts_with(&format!("[target {name}: the connection ended]")),
            "{long}"
        );
        assert_eq!(long["data"]["exit_code"], 125, "{long}");
        assert_eq!(long["data"]["error"], long["error"], "{long}");
    }
    let again = rpc.ask(json!({"id": "again", "type": "bash", "command": "echo reconnected"}));
    assert_eq!(again["data"]["output"], "reconnected\n", "{again}");
    assert_ne!(transports(rpc.pid(), transport_program), vec![pid]);
}

/// `mcp --target`: the official Python MCP client's checks, through a target.
#[test]
fn mcp_through_a_target_passes_the_python_sdk_client() {
    if !available("the MCP Python SDK", &["python3", "-c", "import mcp"]) {
        return;
    }
    let env = TestEnv::new();
    let remote = RemoteSide::new();
    target_profile(&env, "box", &remote.argv(&env), "");
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/mcp_client.py");
    // The whole client suite takes longer than one invocation's hang cap (as in
    // mcp.rs, it is not capped).
    let out = env
        .program(
            "python3",
            &[
                &client.display().to_string(),
                &bin().display().to_string(),
                "mcp",
                "--target",
                "box",
            ],
        )
        .into_command()
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    assert!(
        out.status.success(),
        "the Python MCP client failed through a target:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_has(&summary, " passed, 0 failed");
}

/// A real OpenSSH server on 127.0.0.1, started by the test on a free port with host
/// and user keys of its own, killed (by pid) when the test ends.
struct Sshd {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
    user: String,
}

const SSHD: &str = "/usr/sbin/sshd";

impl Sshd {
    fn start() -> Option<Sshd> {
        if !Path::new(SSHD).exists() {
            crate::harness::skipped(
                &format!("{SSHD} is not installed"),
                "apt-get install openssh-server openssh-client, as .ci/run does",
            );
            return None;
        }
        if !available("ssh and ssh-keygen", &["ssh", "-V"]) {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("agentbash-sshd-")
            .tempdir()
            .expect("temp dir");
        let d = dir.path();
        for key in ["host_key", "id"] {
            let ok = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key))
                .status()
                .expect("ssh-keygen");
            assert!(ok.success(), "ssh-keygen {key}");
        }
        std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).expect("authorized_keys");
        let user = String::from_utf8(
            Command::new("id")
                .arg("-un")
                .output()
                .expect("id -un")
                .stdout,
        )
        .expect("user name")
        .trim()
        .to_string();
        // sshd insists on its privilege separation directory (made by the package's
        // service scripts, which do not run in a container). It stays: other tests'
        // sshd may be using it, and it is what the service would have made (on /run,
        // emptied at boot).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let port = free_port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "ListenAddress 127.0.0.1\nPort {port}\nHostKey {hk}\nPidFile {pid}\nAuthorizedKeysFile {ak}\n\
                 StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nUsePAM no\nUseDNS no\n\
                 LogLevel ERROR\n",
                hk = d.join("host_key").display(),
                pid = d.join("sshd.pid").display(),
                ak = d.join("authorized_keys").display(),
            ),
        )
        .expect("sshd_config");
        let log = std::fs::File::create(d.join("sshd.log")).expect("log");
        let mut command = Command::new(SSHD);
        command
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // If the test process is killed (a timeout, ^C) before `Drop` runs, sshd goes
        // with the thread that started it rather than listening on for ever.
        // SAFETY: prctl is async-signal-safe and touches no memory of ours.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().expect("start sshd");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "sshd exited ({status}): {}",
                    std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
                );
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("sshd does not listen on {port} (killed)");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Sshd {
            child,
            dir,
            port,
            user,
        })
    }

    /// `ssh … user@127.0.0.1 cd WORK && env … agentbash rpc`.
    fn transport(&self, env: &TestEnv, remote: &RemoteSide) -> Vec<String> {
        let mut v: Vec<String> = [
            "ssh",
            "-T",
            "-p",
            &self.port.to_string(),
            "-i",
            &self.dir.path().join("id").display().to_string(),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "LogLevel=ERROR",
            &format!("{}@127.0.0.1", self.user),
            "cd",
            &env.work().display().to_string(),
            "&&",
        ]
        .iter()
        .map(|w| w.to_string())
        .collect();
        v.extend(remote.argv(env));
        v
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the sshd this test started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[test]
fn an_ssh_target_renders_as_local_persists_sessions_and_survives_a_drop() {
    let Some(sshd) = Sshd::start() else { return };
    let env = TestEnv::new();
    let remote = RemoteSide::new();
    target_profile(&env, "build-host", &sshd.transport(&env, &remote), "");
    for case in &CASES[..6] {
        same_as_local(&env, "build-host", case);
    }
    same_as_local(&env, "build-host", &["run", "--", "seq 100000"]);
    let cut = env
        .run_json("seq 100000")
        .opts(&["--target", "build-host"])
        .run();
    let id = cut.json()["artifact"]["id"]
        .as_u64()
        .expect("artifact")
        .to_string();
    env.test()
        .args(&[
            "artifact",
            "show",
            "--target",
            "build-host",
            &id,
            "--tail",
            "1",
        ])
        .stdout("100000\n")
        .run();
    env.run_text("export SEEN=over-ssh")
        .opts(&["--target", "build-host", "-s", "w"])
        .run()
        .assert_code(0);
    env.run_text("echo $SEEN")
        .opts(&["--target", "build-host", "-s", "w"])
        .stdout("over-ssh\n")
        .run();
    assert!(
        remote
            .agentbash(&env, &["session", "list"])
            .stdout
            .contains('w'),
        "the session lives remotely"
    );
    assert!(
        !env.run(&["session", "list"]).stdout.contains('w'),
        "and not here"
    );

    let mut rpc = env.rpc(&["--target", "build-host"]);
    concurrent_requests(&mut rpc, "build-host", "ssh");
    dropped_transport(&env, &mut rpc, "build-host", "ssh");
}

/// The profile the Kubernetes manifests give the pods' agentbash is a valid one.
#[test]
fn the_kubernetes_manifests_profile_passes_profile_check() {
    let env = TestEnv::new();
    let yaml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/k8s/profile.yaml"),
    )
    .expect("deploy/k8s/profile.yaml");
    let body: String = yaml
        .split("  pod.toml: |\n")
        .nth(1)
        .expect("a pod.toml entry")
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with("    "))
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    assert_has(&body, "[sandbox]");
    let path = env.root().join("pod.toml");
    std::fs::write(&path, body).expect("write");
    env.run_ok(&["profile", "check", &path.display().to_string()]);
}

#[test]
fn what_a_remote_run_cannot_do_is_a_usage_error_and_nothing_travels() {
    let env = TestEnv::new();
    let marker = env.root().join("transport-started");
    let transport = script(&env, "never.sh", &format!("touch '{}'", marker.display()));
    target_profile(&env, "box", &[transport], "");
    for (flag, word) in [("--pty", "--pty"), ("--stdin", "--stdin")] {
        let out = env
            .run_text("true")
            .opts(&["--target", "box", flag])
            .code(2)
            .run();
        assert_has(
            &out.stderr,
            format!("{word} is not available with --target"),
        );
    }
    env.run_text("true")
        .opts(&["--target", "box", "--stderr", "separate"])
        .code(2)
        .run();
    assert!(!marker.exists());
}

/// Ctrl-C on `run --target` aborts the remote run (the transport is not killed by
/// the terminal's signal): answered as cancelled, exit 130, nothing left running.
#[test]
fn an_interrupted_remote_run_is_aborted_there_and_answers_cancelled() {
    let env = TestEnv::new();
    let remote = RemoteSide::new();
    target_profile(&env, "box", &remote.argv(&env), "");
    let sleep = format!("sleep 77.{}", crate::support::nonce());
    let running = env
        .run_text(format!("echo started; {sleep}"))
        .opts(&["--target", "box"])
        .own_process_group()
        .spawn();
    assert!(
        crate::support::wait_for_cmdline(&sleep, Duration::from_secs(15)),
        "the remote run did not start"
    );
    // As a terminal's Ctrl-C does: the signal goes to the client's whole process group.
    // SAFETY: kill(2) on the process group this test started.
    unsafe { libc::kill(-running.pid(), libc::SIGINT) };
    let out = running.wait();
    out.assert_code(130);
    assert_eq!(out.stdout, "started\n");
    assert_has(&out.stderr, "[Command cancelled]");
    assert!(
        crate::support::procs_with_cmdline(&sleep, Duration::from_secs(5)).is_empty(),
        "the remote command still runs"
    );
}

// ---------------------------------------------------------------------------
// Approval through a target (docs/REMOTE.md, Approval)

/// Target `box`: a local argv whose agentbash runs profile `appr` (its `touch` asks,
/// `approval.timeout` 60 s), with the remote side's own state.
fn asking_target(env: &TestEnv) -> RemoteSide {
    let remote = RemoteSide::new();
    let profiles = remote.dir.path().join("config/agentbash/profiles");
    std::fs::create_dir_all(&profiles).expect("profiles dir");
    std::fs::write(profiles.join("appr.toml"), crate::approval::POLICY).expect("profile");
    let mut argv = remote.argv(env);
    argv.extend(["-p".to_string(), "appr".to_string()]);
    target_profile(env, "box", &argv, "");
    remote
}

/// `touch FILE` (in the working directory) run with `opts` in a terminal, `answer`
/// typed if asked: the file's path and what the terminal showed.
fn touch_in_terminal(
    env: &TestEnv,
    opts: &str,
    file: &str,
    answer: &str,
) -> (std::path::PathBuf, String) {
    let path = env.work().join(file);
    let command = format!("touch {}", path.display());
    let shown = crate::approval::run_in_terminal(env, opts, &command, Some(answer));
    (path, shown)
}

/// The target's question is put to the person at this side's terminal; `y` runs it
/// there, `n` refuses it. When this side's policy asks the same question first, the
/// person is asked once, not twice.
#[test]
fn a_targets_question_is_asked_on_the_local_terminal() {
    let env = TestEnv::new();
    let _remote = asking_target(&env);
    let (yes, shown) = touch_in_terminal(&env, "--target box", "remote-yes.txt", "y");
    assert!(
        shown.contains("agentbash: approval needed before this runs")
            && shown.contains(&format!("touch {}  (rule `touch` asks)", yes.display())),
        "{shown}"
    );
    assert_has(&shown, "ab-exit=0");
    assert!(yes.exists());

    let (no, shown) = touch_in_terminal(&env, "--target box", "remote-no.txt", "n");
    assert_has(&shown, "ab-exit=77");
    assert_has(&shown, "declined it");
    assert!(!no.exists());

    // This side's policy is the same: its question comes first, the target's same
    // one is answered with it (a second question would leave the line waiting).
    env.user_profile("appr", crate::approval::POLICY);
    let (both, shown) = touch_in_terminal(&env, "-p appr --target box", "remote-both.txt", "y");
    assert_has(&shown, "ab-exit=0");
    assert_eq!(
        shown.matches("approval needed before this runs").count(),
        1,
        "{shown}"
    );
    assert!(both.exists());
}

/// With no terminal here, the target is told no one can be asked, and its
/// `approval.unattended` decides at once (not after its 60 s `approval.timeout`).
#[test]
fn with_no_one_to_ask_here_the_targets_unattended_decides_at_once() {
    let env = TestEnv::new();
    let _remote = asking_target(&env);
    let file = env.work().join("remote-unattended.txt");
    let v = env
        .run_json(format!("touch {}", file.display()))
        .opts(&["--target", "box"])
        .code(77)
        .json();
    assert_eq!(v["blocked"]["kind"], "approval", "{v}");
    let text = s(&v, "text");
    assert!(
        text.contains(
            "no one can be asked here (the client of target box has no one to ask either"
        ) && text.contains("approval.unattended = \"deny\" refuses it"),
        "{text}"
    );
    assert!(!file.exists());
}

/// `rpc --target`: the target's question reaches the rpc client as an
/// `approval_request` about the client's own request id, and its `approve` goes back.
#[test]
fn rpc_through_a_target_passes_the_targets_question_to_its_client() {
    let env = TestEnv::new();
    let _remote = asking_target(&env);
    let mut rpc = env.rpc(&["--target", "box"]);
    let yes = env.work().join("rpc-remote-yes.txt");
    let no = env.work().join("rpc-remote-no.txt");
    rpc.send(json!({"id": "y", "type": "bash", "command": format!("touch {}", yes.display())}));
    let q = next_question(&rpc);
    assert_eq!(q["request"], "y", "{q}");
    assert_eq!(q["rule"], "touch", "{q}");
    assert!(!yes.exists());
    let (ack, r) = rpc.approve(
        json!({"id": q["id"], "type": "approve", "decision": "allow"}),
        "y",
    );
    assert_eq!(ack["success"], true, "{ack}");
    let r = &r["data"];
    assert_eq!(r["exit_code"], 0, "{r}");
    assert!(yes.exists());

    rpc.send(json!({"id": "n", "type": "bash", "command": format!("touch {}", no.display())}));
    let q = next_question(&rpc);
    assert_eq!(q["request"], "n", "{q}");
    rpc.send(json!({"id": q["id"], "type": "approve", "decision": "deny"}));
    let r = &rpc.responses(&["n"])[0];
    assert_eq!(r["blocked"]["kind"], "approval", "{r}");
    assert!(!no.exists());
}

fn next_question(server: &LiveServer) -> Value {
    loop {
        let m = server.next(crate::support::scaled(Duration::from_secs(30)));
        if m["type"] == "approval_request" {
            return m;
        }
    }
}

/// `mcp --target` with a client that cannot elicit: the target's question is
/// answered "no one can be asked" with the client's reason, and refused at once.
#[test]
fn mcp_through_a_target_without_elicitation_refuses_with_the_reason() {
    let env = TestEnv::new();
    let _remote = asking_target(&env);
    let file = env.work().join("mcp-remote.txt");
    let mut server = LiveServer::mcp(&env, &["--target", "box"]);
    let result = server.call_tool(
        2,
        "bash",
        json!({"command": format!("touch {}", file.display())}),
    );
    let text = tool_error_text(&result);
    assert_has(text, "needs approval (rule `touch` asks)");
    assert_has(
        text,
        "the MCP client did not declare the elicitation capability",
    );
    assert!(!file.exists());
}

/// `mcp --target` through the official Python client (`tests/mcp/mcp_client.py`,
/// MCP_CHECKS=approval-target): on the legacy handshake the target's question is
/// elicited (accept runs it, decline refuses it); on 2026-07-28, which asks only
/// before a call runs, it is refused saying why it could not be put.
#[test]
fn mcp_through_a_target_elicits_the_targets_question() {
    let env = TestEnv::new();
    let _remote = asking_target(&env);
    crate::mcp::python_client_checks_on(
        &env,
        "approval-target",
        &["--target", "box"],
        &[("MCP_CHECKS", "approval-target")],
    );
}
