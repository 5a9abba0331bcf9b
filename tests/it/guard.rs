//! The guard: a table of catastrophic forms it must refuse and look-alikes it must let
//! through (judged by the library, nothing run), then the binary end to end — explain,
//! rules test, and a run against a protected directory the test creates.
//!
//! Nothing here ever runs a destructive command for real: refused forms are only
//! judged, and the one `run` that would delete something targets a temp directory.

use crate::support::*;
use agentbash::pipeline::guard::{Context, check};
use std::collections::BTreeMap;
use std::path::Path;

const PROTECTED: &[&str] = &[
    "/", "~", "~/.ssh", "~/.gnupg", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64",
    "/opt", "/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/var",
];

fn table_env() -> BTreeMap<String, String> {
    [
        ("HOME", "/home/agent"),
        ("PROJ", "/work/proj"),
        ("TMPDIR", "/tmp/abc"),
        ("PATH", "/usr/bin:/bin"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn verdict(cmd: &str) -> agentbash::pipeline::guard::Verdict {
    let env = table_env();
    let protected: Vec<String> = PROTECTED.iter().map(|s| s.to_string()).collect();
    check(
        cmd,
        &Context {
            env: &env,
            cwd: Path::new("/work/proj"),
            protected: &protected,
        },
    )
}

const REFUSED: &[&str] = &[
    // The forms the issue names.
    "rm -rf /",
    "rm -rf / --no-preserve-root",
    "rm -fr /*",
    "rm -r -f \"/\"",
    "sudo rm -rf /",
    "\\rm -rf ~",
    "rm -rf $HOME",
    "rm -rf \"$EMPTY/\"*",
    "rm -rf /usr/../",
    "cd / && rm -rf *",
    "rm -rf ~/",
    "find / -delete",
    "find ~ -exec rm -rf {} +",
    "chmod -R 777 /",
    "chown -R x /etc",
    "mv /usr /tmp/x",
    "dd if=/dev/zero of=/dev/sda",
    "mkfs.ext4 /dev/vda1",
    "rm -rf ~/*",
    "bash -c 'rm -rf /'",
    "(rm -rf /)",
    "> /dev/sda",
    ":(){ :|:& };:",
    "kill -9 -1",
    // Quoting and expansion.
    "rm -rf \"$EMPTY/\"",
    "rm -rf ${EMPTY}/",
    "rm -rf \"${HOME}\"",
    "rm -rf '/'",
    "rm -rf $'/'",
    "rm -rf /\\usr",
    "rm -rf \"/usr/\"",
    "rm -rf ${EMPTY:-/}",
    "rm -rf $HOME/",
    "rm -rf ~root",
    "unset HOME; rm -rf \"$HOME/\"",
    "D=\"/ /tmp\"; rm -rf $D",
    // Options and spellings.
    "rm --recursive --force /",
    "rm -Rf /etc",
    "rm -rf //",
    "rm -rf /./",
    "rm -rf /etc/..",
    "rm -rf -- /",
    "/bin/rm -rf /",
    "\"rm\" -rf /",
    "rm -rf /etc/",
    "rm -rf /var",
    "rm -rf /home",
    "rm -rf ~/.ssh",
    "rm -rf /u*",
    "rm -rf ../../../../../../../../",
    "rm -f ~/*",
    "rm /etc/*",
    // Earlier assignments and directory changes.
    "X=/; rm -rf $X",
    "X=/ && rm -rf \"$X\"",
    "export D=/usr; rm -rf $D",
    "cd ~ && rm -rf *",
    "cd /etc; rm -rf ./*",
    // Wrappers.
    "env rm -rf /",
    "env -i rm -rf /usr",
    "command rm -rf /",
    "nice -n 10 rm -rf /",
    "time rm -rf /",
    "timeout 5 rm -rf /",
    "timeout -s KILL 5 rm -rf /",
    "echo / | xargs rm -rf /",
    "xargs rm -rf / < list",
    "sudo -u root rm -rf /etc",
    "sudo -E env X=1 rm -rf ~",
    "nohup rm -rf / &",
    "ionice -c3 rm -rf /",
    "stdbuf -o0 rm -rf /",
    "setsid rm -rf /",
    "busybox rm -rf /",
    // Structure.
    "{ rm -rf /; }",
    "if true; then rm -rf /; fi",
    "for i in 1; do rm -rf ~; done",
    "true && rm -rf /usr",
    "echo hi; rm -rf /",
    "sh -c \"rm -rf /\"",
    "bash -lc 'rm -rf ~'",
    "sudo sh -c 'rm -rf /etc'",
    "bash -c \"cd / && rm -rf *\"",
    "eval \"rm -rf /\"",
    "echo $(rm -rf /)",
    "echo `rm -rf /`",
    // find, permissions, moves.
    "find / -type f -delete",
    "find ~ -delete",
    "find $HOME -mindepth 1 -delete",
    "find / -exec rm {} \\;",
    "chmod -R 000 ~",
    "chown -R nobody:nogroup /usr",
    "chgrp -R staff /",
    "chmod 000 /",
    "chmod -R a-x /usr/*",
    "mv ~ /tmp/home",
    "mv /etc /etc.bak",
    "mv /* /tmp/",
    "mv -t /tmp /usr",
    "rsync -a --delete empty/ /",
    // Disks.
    "dd if=/dev/urandom of=/dev/nvme0n1 bs=1M",
    "sudo dd of=/dev/sdb if=x.img",
    "mkfs -t ext4 /dev/sdb1",
    "mkswap /dev/sda2",
    "wipefs -a /dev/sda",
    "shred -n 3 /dev/sda",
    "cat /dev/zero > /dev/sda",
    "echo x >> /dev/vdb",
    "cp disk.img /dev/sdc",
    "tee /dev/sda < img",
    // Every process.
    "bomb(){ bomb|bomb& }; bomb",
    "kill -KILL -1",
    "kill -s KILL -1",
    "kill -- -1",
    "sudo kill -9 -1",
    "kill -1 -1",
];

const ALLOWED: &[&str] = &[
    // The look-alikes the issue names.
    "rm -rf build/",
    "rm -rf ./node_modules",
    "rm -rf /tmp/x",
    "rm -rf \"$HOME/.cache/pip\"",
    "find . -name '*.o' -delete",
    "chmod -R u+w src",
    "echo \"rm -rf /\"",
    "git rm -r --cached .",
    "docker run --rm -v /:/host img true",
    // Deleting what is not protected.
    "rm -rf target",
    "rm -rf ~/.cache/*",
    "rm -rf /tmp/*",
    "rm -rf \"$TMPDIR/x\"",
    "rm -f /etc/nginx/sites-enabled/default",
    "rm -rf /usr/local/lib/foo",
    "rm -rf /var/tmp/build",
    "rm -rf $PROJ/dist",
    "cd /tmp && rm -rf *",
    "cd build && rm -rf *",
    "rm -rf ~/projects/old",
    "rm -rf node_modules package-lock.json",
    "rm -rf .git/hooks/pre-commit",
    "rm -rf ~/.ssh.bak",
    "rm -rf \"$(mktemp -d)\"",
    "find / -name '*.pyc' -delete",
    "find . -type f -delete",
    "find ~ -name node_modules -prune",
    "find / -name x",
    // Permissions and moves that stay small.
    "chmod -R 755 ./dist",
    "chmod 644 /etc/hosts",
    "chown -R me: ~/project",
    "chmod +x script.sh",
    "mv /tmp/a /tmp/b",
    "mv build/out /usr/local/bin/tool",
    "mv ~/.bashrc ~/.bashrc.bak",
    "rsync -a --delete src/ /tmp/mirror/",
    "rsync -av / backup:/srv/",
    // Disks read, images written, harmless devices.
    "dd if=/dev/zero of=disk.img bs=1M count=10",
    "dd if=/dev/sda of=backup.img",
    "mkfs.ext4 disk.img",
    "echo hi > /dev/null",
    "make 2>/dev/null",
    "echo x > /dev/stderr",
    "cat /dev/sda | head -c 512 | xxd",
    "cp a.txt /dev/null",
    "truncate -s 0 log.txt",
    "tee /tmp/log",
    // Signals to one process or job.
    "kill -9 1234",
    "kill -1 1234",
    "kill -1",
    "kill %1",
    // Functions that are not bombs, and text that only mentions danger.
    "f(){ echo hi; }; f",
    "fib(){ fib $1; }",
    "printf 'rm -rf /\\n'",
    "grep -r \"rm -rf /\" .",
    "echo '$(rm -rf /)'",
    "cat <<EOF\nrm -rf /\nEOF",
    "# rm -rf /",
    "command -v rm",
    "which rm",
    "man rm",
    "rm --help",
    "sudo apt-get remove -y foo",
    "git clean -fdx",
    "cargo clean",
    "npm run clean",
    "ls /",
];

/// The guard's whole verdict on `cmd` (structural check and the built-in `guard`
/// pack's deny rules), in the table's context.
fn plan(cmd: &str) -> agentbash::pipeline::guard::GuardPlan {
    use agentbash::config::rules::RuleSet;
    use std::sync::{Arc, OnceLock};
    static GUARD_PACK: OnceLock<Arc<RuleSet>> = OnceLock::new();
    let pack = GUARD_PACK
        .get_or_init(|| match RuleSet::load(&["guard".to_string()], None) {
            Ok(set) => Arc::new(set),
            Err(e) => panic!("guard pack: {e}"),
        })
        .clone();
    let env = table_env();
    let protected: Vec<String> = PROTECTED.iter().map(|s| s.to_string()).collect();
    agentbash::pipeline::guard::GuardPlan::decide(
        cmd,
        &Context {
            env: &env,
            cwd: Path::new("/work/proj"),
            protected: &protected,
        },
        |_| Some(Ok(pack)),
    )
}

/// tests/corpus/guard.tsv: (line, family, refuse?, command).
fn guard_table() -> Vec<(usize, String, bool, String)> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/guard.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut family = String::new();
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(name) = line
            .strip_prefix("# == ")
            .and_then(|l| l.strip_suffix(" =="))
        {
            family = name.to_string();
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (kind, cmd) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("guard.tsv line {}: no tab", n + 1));
        let refuse = match kind {
            "refuse" => true,
            "allow" => false,
            other => panic!(
                "guard.tsv line {}: `{other}` is neither refuse nor allow",
                n + 1
            ),
        };
        rows.push((n + 1, family.clone(), refuse, cmd.replace('\u{2424}', "\n")));
    }
    rows
}

#[test]
fn guard_table_refuses_every_form_and_passes_every_look_alike() {
    let rows = guard_table();
    let refused = rows.iter().filter(|r| r.2).count();
    let allowed = rows.len() - refused;
    assert!(
        refused >= 400 && allowed >= 200,
        "{refused} refused, {allowed} allowed rows"
    );
    let mut families: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    let mut wrong = Vec::new();
    for (line, family, refuse, cmd) in &rows {
        if *refuse {
            *families.entry(family).or_default() += 1;
        }
        let p = plan(cmd);
        match (&p.refused, refuse) {
            (None, true) => wrong.push(format!(
                "line {line} [{family}] passes: {cmd:?}\n    {}",
                p.describe().join("\n    ")
            )),
            (Some(r), false) => wrong.push(format!(
                "line {line} [{family}] refused ({}): {cmd:?}: {}",
                r.rule, r.reason
            )),
            _ => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    // Every family of the table has refused forms.
    let empty: Vec<&String> = rows
        .iter()
        .map(|r| &r.1)
        .filter(|f| !families.contains_key(f.as_str()))
        .collect();
    assert!(
        empty.is_empty(),
        "families without a refused form: {empty:?}"
    );
}

#[test]
fn table_refuses_every_catastrophic_form() {
    assert!(REFUSED.len() >= 70, "{} refused cases", REFUSED.len());
    let missed: Vec<&str> = REFUSED
        .iter()
        .copied()
        .filter(|c| verdict(c).refused.is_none())
        .collect();
    assert!(missed.is_empty(), "not refused: {missed:#?}");
}

#[test]
fn table_lets_every_look_alike_through() {
    assert!(ALLOWED.len() >= 50, "{} allowed cases", ALLOWED.len());
    let wrong: Vec<(&str, String)> = ALLOWED
        .iter()
        .copied()
        .filter_map(|c| verdict(c).refused.map(|r| (c, r.reason)))
        .collect();
    assert!(wrong.is_empty(), "refused: {wrong:#?}");
}

#[test]
fn refusal_names_the_resolved_target() {
    let v = verdict("rm -rf \"$EMPTY/\"");
    let r = v.refused.expect("refused");
    assert_eq!(r.rule, "guard:delete");
    assert_has(&r.reason, "recursively delete /");
    let t = &v.checked[0].targets[0];
    assert_eq!(t.resolved.as_deref(), Some("/"));
    let v = verdict("cd / && rm -rf *");
    assert!(
        v.refused
            .expect("refused")
            .reason
            .contains("every entry of /")
    );
    let v = verdict("rm -rf /usr/../");
    assert_eq!(v.checked[0].targets[0].resolved.as_deref(), Some("/"));
}

/// Hostile shapes get a verdict, the right one, and each in bounded time: 20,000
/// commands are all checked and a refusal at the end is still seen; 60 nested
/// subshells or groups and `bash -c` nested to the documented depth (8) are seen into,
/// 500 are refused unread;
/// huge globs and 50,000 `f()` definitions are judged for what they are (nothing
/// protected). The time cap only catches a blow-up (a hang), it is no benchmark.
#[test]
fn guard_never_panics_and_stays_linear() {
    let cap = scaled(std::time::Duration::from_secs(5));
    let timed = |cmd: &str| {
        let started = std::time::Instant::now();
        let v = verdict(cmd);
        let took = started.elapsed();
        assert!(
            took < cap,
            "guard took {took:?} on {}…",
            cmd.chars().take(60).collect::<String>()
        );
        v
    };
    // The rule and the refused path: the first word of the first target ("/usr,
    // which holds …"); "" when the command passes.
    let refused = |v: &agentbash::pipeline::guard::Verdict| {
        v.refused
            .as_ref()
            .map_or((String::new(), String::new()), |r| {
                let target = r
                    .targets
                    .first()
                    .map_or("", |t| t.split([',', ' ']).next().unwrap_or_default());
                (r.rule.clone(), target.to_string())
            })
    };
    let quote = |c: &str| format!("'{}'", c.replace('\'', "'\\''"));
    let mut nested = "rm -rf /".to_string();
    for _ in 0..8 {
        nested = quote(&nested);
        nested = format!("bash -c {nested}");
    }
    let shapes = [
        (
            "rm -rf x; ".repeat(20_000) + "rm -rf /",
            "guard:delete",
            "/",
        ),
        // Deeper than the parser goes: refused as unreadable, naming the program.
        (
            "( ".repeat(500) + "rm -rf /" + &")".repeat(500),
            "guard:unparsed",
            "rm",
        ),
        (
            "{ ".repeat(500) + "rm -rf ~; " + &"}; ".repeat(500),
            "guard:unparsed",
            "rm",
        ),
        // `((…))` is bash's arithmetic command: it fails to evaluate, nothing runs.
        ("(".repeat(500) + "rm -rf /" + &")".repeat(500), "", ""),
        (nested, "guard:delete", "/"),
        (
            "echo $(".repeat(8) + "rm -rf /usr" + &")".repeat(8),
            "guard:delete",
            "/usr",
        ),
    ];
    for (cmd, rule, target) in &shapes {
        let v = timed(cmd);
        assert_eq!(
            refused(&v),
            (rule.to_string(), target.to_string()),
            "{}…: {:?}",
            cmd.chars().take(60).collect::<String>(),
            v.refused
        );
    }
    // Nested deeper than the parser follows (500 levels), a destructive program in
    // it is refused unread.
    for deep in [
        "( ".repeat(500) + "rm -rf /" + &" )".repeat(500),
        "{ ".repeat(500) + "rm -rf ~; " + &"}; ".repeat(500),
    ] {
        let v = timed(&deep);
        assert_eq!(
            v.refused.as_ref().map(|r| r.rule.as_str()),
            Some("guard:unparsed"),
            "{:?}",
            v.refused
        );
    }
    // Every one of 20,000 commands is checked, not the first few.
    let v = timed(&"rm -rf x; ".repeat(20_000));
    assert_eq!((v.refused.is_none(), v.checked.len()), (true, 20_000));
    // Globs that can match no protected entry, however long.
    for glob in [
        format!("rm -rf /{}", "*a".repeat(20_000)),
        format!("rm -rf /{}b", "*a".repeat(100)),
    ] {
        let v = timed(&glob);
        assert!(v.refused.is_none(), "{:?}", v.refused);
        assert_eq!(v.checked.len(), 1);
    }
    // Balanced quotes make this `bash -c "bash -c … -c rm" -rf /`: no deletion.
    let v = timed(&("bash -c '".repeat(50) + "rm -rf /"));
    assert!(v.refused.is_none(), "{:?}", v.refused);
    let v = timed(&"f() ".repeat(50_000));
    assert!(v.refused.is_none(), "{:?}", v.refused);
    // Unterminated fragments: a verdict, no panic, nothing refused.
    for s in [
        "$(",
        "`",
        "${",
        "'",
        "\"",
        "((",
        "<<",
        ":(){",
        "kill",
        "find / -exec",
    ] {
        assert!(timed(s).refused.is_none(), "{s}");
    }
}

/// A profile protecting a directory the test owns: the directory and the profile's path.
fn protecting(t: &TestEnv) -> (std::path::PathBuf, String) {
    let precious = t.work().join("precious");
    std::fs::create_dir_all(precious.join("inner")).expect("mkdir");
    std::fs::write(precious.join("inner/data"), "keep").expect("write");
    let profile = t.write(
        "guarded.toml",
        format!(
            "[guard]\nprotected = [\"/\", \"~\", {:?}]\n",
            precious.display().to_string()
        ),
    );
    (precious, profile.display().to_string())
}

#[test]
fn run_refuses_a_protected_directory_whatever_the_caller_declared() {
    let t = TestEnv::new();
    let (precious, p) = protecting(&t);
    let target = precious.display().to_string();
    for extra in [
        vec![],
        vec!["--no-intercept"],
        vec!["--tools", ""],
        vec!["--tools", "read,write"],
    ] {
        let mut args = vec!["run", "-p", &p];
        args.extend(extra.iter().copied());
        let cmd = format!("rm -rf {target}");
        args.extend(["--", &cmd]);
        let out = t.run(&args);
        out.assert_code(77);
        // Like an interceptor block, the refusal is what the command's output
        // would have been: on stdout.
        assert!(
            out.stdout
                .starts_with("Refused: `rm` would recursively delete")
                && out.stdout.contains(&target)
                && out.stdout.contains(&format!("Original command: {cmd}")),
            "{}",
            out.stdout
        );
        assert!(
            precious.join("inner/data").exists(),
            "the directory is gone"
        );
    }
    // Through a variable, a cd and a wrapper too; JSON says who refused and why.
    let cmd = format!("cd {target}/.. && D=precious; sudo -n env X=1 rm -rf \"$D\"");
    let j = t.run_json(&cmd).profile(&p).code(77).json();
    assert_eq!(j["blocked"]["rule"], "guard:delete");
    assert!(j["blocked"]["tool"].is_null());
    assert!(s(&j, "text").starts_with("Refused: "), "{j}");
    assert!(j["exit_code"].is_null(), "nothing ran: {j}");
    assert!(precious.join("inner/data").exists());
    // A sibling is not protected: the same command on it runs.
    let scratch = t.work().join("scratch");
    std::fs::create_dir_all(&scratch).expect("mkdir");
    t.run_text(format!("rm -rf {}", scratch.display()))
        .profile(&p)
        .code(0)
        .run();
    assert!(!scratch.exists());
}

/// The families an outside review used to delete a protected directory (issue 24),
/// each run for real against a protected directory the test owns: every one is
/// refused (exit 77, nothing run) and the directory is still there. A sibling that is
/// not protected is deleted by the same forms, so the test fails if they stop parsing.
#[test]
fn run_refuses_every_bypass_family_on_a_protected_directory() {
    let t = TestEnv::new();
    let (precious, p) = protecting(&t);
    let d = precious.display().to_string();
    let parent = precious.parent().expect("parent").display().to_string();
    let forms = [
        format!("rm --recur {d}"),
        format!("rm -rf {parent}/{{precious,nothing}}"),
        format!("rm${{IFS}}-rf${{IFS}}{d}"),
        format!("for x in {d}; do rm -rf \"$x\"; done"),
        format!("function f {{ rm -rf {d}; }}; f"),
        format!("trap 'rm -rf {d}' EXIT"),
        format!("exec -c rm -rf {d}"),
        format!("coproc rm -rf {d}"),
        format!("bash <<< 'rm -rf {d}'"),
        format!("set -- {d}; rm -rf \"$1\""),
        format!("arr=({d}); rm -rf \"${{arr[@]}}\""),
        format!("P={d}X; rm -rf ${{P%X}}"),
        format!("rm -rf $'{d}'"),
        format!("cd {parent}/.. && cd {parent} && cd - && cd - && rm -rf ~+/precious"),
        format!("cd {parent} && cd {d}/inner && rm -rf ~-/precious"),
        format!("env --chdir={parent} rm -rf precious"),
        format!("flock {parent}/lock rm -rf {d}"),
        format!("strace -o /dev/null rm -rf {d}"),
        format!("script -qc 'rm -rf {d}' /dev/null"),
        format!("busybox rm -rf {d}"),
        format!("echo {d} | xargs rm -rf"),
        format!("find {d} -name '*' -exec rm -rf {{}} +"),
        format!("rm -rf {d} \"unterminated"),
    ];
    for cmd in &forms {
        let out = t.run_text(cmd).profile(&p).code(77).run();
        assert!(out.stdout.starts_with("Refused: "), "{cmd}\n{}", out.stdout);
        assert!(
            precious.join("inner/data").exists(),
            "{cmd} deleted the directory"
        );
    }
    // The same forms on a directory that is not protected do run.
    let scratch = t.work().join("scratch");
    for cmd in [
        "rm --recur {s}",
        "for x in {s}; do rm -rf \"$x\"; done",
        "bash <<< 'rm -rf {s}'",
        "set -- {s}; rm -rf \"$1\"",
    ] {
        std::fs::create_dir_all(scratch.join("inner")).expect("mkdir");
        let cmd = cmd.replace("{s}", &scratch.display().to_string());
        t.run_text(&cmd).profile(&p).code(0).run();
        assert!(!scratch.exists(), "{cmd} did not run");
    }
}

#[test]
fn explain_shows_the_guard_verdict_and_targets() {
    let t = TestEnv::new();
    let out = t.run(&[
        "explain",
        "--",
        "rm -rf \"$EMPTY_GUARD_VAR/\" --no-preserve-root",
    ]);
    out.assert_code(0);
    assert_has(&out.stdout, "guard:");
    assert_has(&out.stdout, "REFUSED");
    assert_has(&out.stdout, "-> /");
    let out = t.run(&["explain", "--format", "json", "--", "rm -rf ~/"]);
    let j = out.json();
    assert_eq!(j["guard"]["refused"]["rule"], "guard:delete", "{j}");
    let home = t.home().display().to_string();
    assert_eq!(j["guard"]["checked"][0]["targets"][0]["resolved"], home);
    let out = t.run(&["explain", "--format", "json", "--", "rm -rf build"]);
    let j = out.json();
    assert!(j["guard"]["refused"].is_null(), "{j}");
    assert_eq!(j["guard"]["checked"][0]["check"], "delete");
}

#[test]
fn rules_test_reports_the_guard() {
    let t = TestEnv::new();
    let out = t.run(&["rules", "test", "--", "dd if=/dev/zero of=/dev/sda"]);
    assert_has(&out.stdout, "guard:   REFUSED");
    assert_has(&out.stdout, "/dev/sda");
    let out = t.run(&["rules", "test", "--", "shutdown -h now"]);
    assert_has(&out.stdout, "guard:   REFUSED by rule `power`");
    let out = t.run(&["rules", "test", "--", "ls -la"]);
    assert_has(&out.stdout, "guard:   passes");
}

/// `rules check guard` runs every example of the shipped pack (counted from the file
/// itself), and a copy with one example made wrong fails, naming it.
#[test]
fn guard_pack_examples_pass_rules_check() {
    let pack =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/guard.toml"))
            .expect("read rules/guard.toml");
    let parsed: toml::Table = toml::from_str(&pack).expect("rules/guard.toml is TOML");
    let rules = parsed["rule"].as_array().expect("[[rule]]");
    let examples: usize = rules
        .iter()
        .map(|r| {
            ["match", "not_match"]
                .iter()
                .filter_map(|k| r.get("examples")?.get(*k)?.as_array().map(Vec::len))
                .sum::<usize>()
        })
        .sum();
    assert!(examples > 0, "the guard pack has no examples");
    let t = TestEnv::new();
    let out = t.run(&["rules", "check", "guard"]);
    out.assert_code(0);
    assert_eq!(
        out.stdout.trim(),
        format!("guard: {} rule(s), {examples} example(s): ok", rules.len()),
        "{}",
        out.stdout
    );
    // The control: `sudo reboot now` is one the `power` rule must match.
    assert!(pack.contains("examples.not_match = [\n  \"echo reboot\","));
    let broken = t.write(
        "broken-guard.toml",
        pack.replacen(
            "examples.not_match = [\n  \"echo reboot\",",
            "examples.not_match = [\n  \"sudo reboot now\",",
            1,
        ),
    );
    let out = t.run(&["rules", "check", &broken.display().to_string()]);
    out.assert_code(1);
    assert_has(&out.stdout, "1 failure(s)");
    assert_has(
        &out.stdout,
        "rule `power`: examples.not_match \"sudo reboot now\"",
    );
}

#[test]
fn deny_rules_refuse_whatever_the_tools_and_others_cannot_disable_them() {
    let t = TestEnv::new();
    let deny = r#"
[[rule]]
id = "no-prod-db"
pattern = '\bpsql\b.*\bprod\b'
keywords = ["psql"]
action = "deny"
message = "Never connect to the production database from an agent."
examples.match = ["psql -h prod.db"]
examples.not_match = ["psql -h localhost"]
"#;
    t.write("deny.toml", deny);
    let profile = t.write(
        "p.toml",
        "[guard]\nrules = [\"guard\", \"deny.toml\"]\n[interceptor]\nenabled = false\n",
    );
    let p = profile.display().to_string();
    let out = t
        .run_text("psql -h prod.example")
        .opts(&["-p", &p, "--no-intercept"])
        .code(77)
        .run();
    assert_starts_with(
        &out.stdout,
        "Refused: Never connect to the production database from an agent.",
    );
    let out = t.run(&[
        "rules",
        "check",
        &t.work().join("deny.toml").display().to_string(),
    ]);
    out.assert_code(0);
    // Keywords let a pack skip compiling; a match example without one is a wrong
    // keyword list, and `rules check` says so: the same rule, keyed on `mysql`.
    let bad = t.write(
        "bad-keywords.toml",
        deny.replace(r#"keywords = ["psql"]"#, r#"keywords = ["mysql"]"#),
    );
    let out = t.run(&["rules", "check", &bad.display().to_string()]);
    out.assert_code(1);
    assert_has(&out.stdout, "none of the rule's keywords");
    // A deny rule in an interceptor pack applies without its tool being declared.
    let profile = t.write(
        "q.toml",
        "[interceptor]\nrules = [\"deny.toml\"]\ntools = [\"read\"]\n",
    );
    let q = profile.display().to_string();
    t.run_text("psql -h prod.example")
        .profile(&q)
        .code(77)
        .run();
    // An invalid guard pack never runs anything.
    let profile = t.write("r.toml", "[guard]\nrules = [\"missing.toml\"]\n");
    let r = profile.display().to_string();
    t.run_text("echo should-not-run")
        .profile(&r)
        .code(125)
        .stdout_lacks("should-not-run")
        .run();
}

/// `guard.enabled = false` in a profile is the one switch: with it the very command
/// the guard refused runs and deletes the (temp) directory; without it, no flag gets
/// it through.
#[test]
fn guard_can_be_switched_off_only_by_a_profile() {
    let t = TestEnv::new();
    let (precious, on) = protecting(&t);
    let off = t.write(
        "off.toml",
        format!(
            "[guard]\nenabled = false\nprotected = [{:?}]\n",
            precious.display().to_string()
        ),
    );
    let off = off.display().to_string();
    let cmd = format!("rm -rf {}", precious.display());
    let out = t.run(&["explain", "-p", &off, "--", &cmd]);
    assert_has(&out.stdout, "guard       off");
    let out = t.run(&["explain", "-p", &on, "--", &cmd]);
    assert_has(&out.stdout, "REFUSED");
    // On, the flags a caller has do not switch it off.
    t.run_text(&cmd)
        .opts(&["-p", &on, "--no-intercept", "--tools", ""])
        .code(77)
        .run();
    assert!(precious.join("inner/data").exists(), "the guard let it run");
    // Off, the same command runs: it deletes the directory.
    let out = t
        .run_text(&cmd)
        .profile(&off)
        .code(0)
        .stdout_lacks("Refused")
        .run();
    assert!(
        !precious.exists(),
        "with the guard off the command ran: {out:?}"
    );
}

#[test]
fn rpc_requests_are_guarded_whatever_tools_they_declare() {
    let t = TestEnv::new();
    let (precious, p) = protecting(&t);
    let req = serde_json::json!({
        "id": "1", "type": "bash", "tools": [],
        "command": format!("rm -rf {}", precious.display()),
    });
    let out = t.cmd(&["rpc", "-p", &p]).stdin(format!("{req}\n")).run();
    let line = out.stdout.lines().next().expect("a response");
    let v: serde_json::Value = serde_json::from_str(line).expect("json");
    assert_eq!(v["data"]["blocked"]["rule"], "guard:delete", "{v}");
    assert!(s(&v["data"], "text").starts_with("Refused: "), "{v}");
    assert!(precious.join("inner/data").exists());
}

/// One refusal shape everywhere (issue 22, item 10): the JSON of `run`, of `explain`
/// and the rpc `data` carry `blocked: {rule, tool, message, kind}`, `kind` saying who
/// refused — the guard (structural check or `deny` rule) or the interceptor.
#[test]
fn every_refusal_says_who_refused_in_one_shape() {
    let t = TestEnv::new();
    let (precious, p) = protecting(&t);
    let guarded = format!("rm -rf {}", precious.display());
    let want_guard = serde_json::json!({
        "rule": "guard:delete", "tool": null, "kind": "guard",
        "message": format!("`rm` would recursively delete {}", precious.display()),
    });
    let read_message = "Use the `read` tool instead of cat/head/tail/less/bat/nl. It provides better context and handles binary files.";
    let want_interceptor = serde_json::json!({
        "rule": "read", "tool": "read", "kind": "interceptor", "message": read_message,
    });
    for (tools, cmd, want) in [
        ("", guarded.as_str(), &want_guard),
        ("read", "cat notes.txt", &want_interceptor),
    ] {
        let tools = format!("--tools={tools}");
        let run = t.run_json(cmd).opts(&["-p", &p, &tools]).code(77).run();
        assert_eq!(run.json()["blocked"], *want, "run {cmd}");
        let explain = t.explain_json(cmd).opts(&["-p", &p, &tools]).code(0).run();
        assert_eq!(explain.json()["blocked"], *want, "explain {cmd}");
    }
    let v = t.explain_json("echo fine").profile(&p).json();
    assert!(v["blocked"].is_null(), "{v:#}");
    let requests = [
        serde_json::json!({"id": "g", "type": "bash", "command": guarded}),
        serde_json::json!({"id": "i", "type": "bash", "command": "cat notes.txt", "tools": ["read"]}),
    ];
    let lines: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let out = t.cmd(&["rpc", "-p", &p]).stdin(lines).run();
    for line in out.stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("json");
        let want = if v["id"] == "g" {
            &want_guard
        } else {
            &want_interceptor
        };
        assert_eq!(v["data"]["blocked"], *want, "{v}");
    }
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);
    assert!(precious.join("inner/data").exists());
}

/// A `deny` rule refuses whatever the caller's tools (issue 22, item 11), also when
/// it sits in an `[interceptor]` pack and the caller declared no tools: it was
/// silently skipped then, as no routing rule could apply. It is the guard's kind.
#[test]
fn a_deny_rule_in_an_interceptor_pack_applies_without_tools() {
    let t = TestEnv::new();
    t.write(
        "pack.toml",
        r#"[[rule]]
id = "no-deploy"
action = "deny"
pattern = '^deploy-prod\b'
message = "Deploying to production is for people"
examples.match = ["deploy-prod now"]
examples.not_match = ["echo deploy-prod"]
"#,
    );
    let p = t
        .write(
            "p.toml",
            "[interceptor]\nrules = [\"default\", \"./pack.toml\"]\ntools = []\n",
        )
        .display()
        .to_string();
    // The command would leave a mark if it ran.
    let cmd = "deploy-prod now; touch ran";
    for tools in [None, Some("--tools="), Some("--tools=read")] {
        let mut args = vec!["run", "--json", "-p", &p];
        args.extend(tools);
        args.extend(["--", cmd]);
        let out = t.run(&args);
        out.assert_code(77);
        let v = out.json();
        assert_eq!(
            v["blocked"],
            serde_json::json!({"rule": "no-deploy", "tool": null, "kind": "guard",
                "message": "Deploying to production is for people"}),
            "{tools:?}: {v:#}"
        );
        assert!(s(&v, "text").starts_with("Refused: Deploying to production is for people."));
        assert!(!t.work().join("ran").exists(), "{tools:?}: the command ran");
    }
    // Over rpc too, with the profile's (empty) tools.
    let req = serde_json::json!({"id": "1", "type": "bash", "command": cmd});
    let out = t.cmd(&["rpc", "-p", &p]).stdin(format!("{req}\n")).run();
    let v: serde_json::Value =
        serde_json::from_str(out.stdout.lines().next().expect("a response")).expect("json");
    assert_eq!(v["data"]["blocked"]["kind"], "guard", "{v}");
    assert!(!t.work().join("ran").exists(), "rpc: the command ran");
    // Explain and rules test say it refuses whatever the tools.
    let out = t.run(&["explain", "-p", &p, "--", cmd]);
    assert_has(
        &out.stdout,
        "REFUSE by deny rule no-deploy (whatever the caller's tools)",
    );
    // A command it does not match runs.
    t.run_text("true").profile(&p).run().assert_code(0);
}

/// `bash -c` nested past the depth the guard follows: what it cannot read it does not
/// wave through. A destructive program named in the unread string refuses (exit 77,
/// `guard:too-complex`), run for real against a protected directory the test owns.
/// The control is the same nesting around a harmless command, which runs (unread, a
/// delete of any target is refused: the guard cannot tell the targets apart).
#[test]
fn a_destructive_command_nested_too_deep_to_read_is_refused() {
    let t = TestEnv::new();
    let (precious, p) = protecting(&t);
    let nest = |inner: &str, depth: usize| {
        (0..depth).fold(inner.to_string(), |cmd, _| {
            format!("bash -c '{}'", cmd.replace('\'', "'\\''"))
        })
    };
    let delete = format!("rm -rf {}", precious.display());
    // Within the depth it reads, the target is judged as usual.
    let out = t.run_text(nest(&delete, 8)).profile(&p).run();
    assert_eq!(out.code(), Some(77), "{}{}", out.stdout, out.stderr);
    for depth in [9, 10] {
        let out = t.run_text(nest(&delete, depth)).profile(&p).run();
        assert_eq!(
            out.code(),
            Some(77),
            "{depth}: {}{}",
            out.stdout,
            out.stderr
        );
        assert_has(&out.stdout, "too large for the guard to follow");
        assert!(
            precious.join("inner/data").exists(),
            "depth {depth} deleted it"
        );
        let explained = t.run(&["explain", "--format", "json", "--", &nest(&delete, depth)]);
        let refused = &explained.json()["guard"]["refused"];
        assert_eq!(refused["rule"], "guard:too-complex", "{refused}");
    }
    let out = t.run_text(nest("echo deep", 10)).profile(&p).code(0).run();
    assert_eq!(out.stdout, "deep\n");
}
