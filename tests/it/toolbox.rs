//! The file tools over rpc (`read`, `grep`, `glob`, `edit`, `write` requests), against
//! the real binary: what each answers, and that each obeys the profile's sandbox,
//! guard and redaction as `bash` does — symlinks resolved first, `deny_read` refused
//! by name and skipped silently by a wider search, writes kept to the workspace,
//! protected paths refused. Everything destructive is tried on temporary directories
//! the test made; every refusal is checked to have changed nothing.

use crate::support::{LiveServer, TestEnv, assert_has, assert_lacks, mode_of};
use serde_json::{Value, json};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

/// A value redaction must mask (`output.redact = ["*TOKEN*"]`, set by the profile).
const SECRET: &str = "tok-8f3a9c2e71d4";

/// An rpc server under profile `files`: workspace-write over the test's work dir,
/// `deny_read` on `~/.secrets` and `private/`, `<root>/keep` protected, the secret
/// redacted. `mode` replaces the sandbox mode.
struct Files {
    env: TestEnv,
    rpc: LiveServer,
    next: u64,
}

impl Files {
    fn start() -> Files {
        Files::with_mode("workspace-write")
    }

    fn with_mode(mode: &str) -> Files {
        let env = TestEnv::new();
        let keep = env.root().join("keep");
        std::fs::create_dir_all(&keep).expect("keep dir");
        env.user_profile(
            "files",
            &format!(
                "extends = \"default\"\n\
                 [sandbox]\nmode = \"{mode}\"\ndeny_read = [\"~/.secrets\", \"private\"]\n\
                 [guard]\nprotected = [\"/\", \"~\", \"/etc\", \"{}\"]\n\
                 [env]\nset = {{ DEPLOY_TOKEN = \"{SECRET}\" }}\n\
                 [output]\nredact = [\"*TOKEN*\"]\n",
                keep.display()
            ),
        );
        let rpc = env.rpc(&["-p", "files"]);
        Files { env, rpc, next: 0 }
    }

    /// The whole response to a `kind` request with `args`.
    fn ask(&mut self, kind: &str, args: Value) -> Value {
        self.next += 1;
        let mut req = args;
        req["id"] = json!(format!("f{}", self.next));
        req["type"] = json!(kind);
        let answer = self.rpc.ask(req.clone());
        assert_eq!(answer["command"], kind, "{answer}");
        answer
    }

    /// `data` of a successful answer.
    #[track_caller]
    fn ok(&mut self, kind: &str, args: Value) -> Value {
        let answer = self.ask(kind, args.clone());
        assert_eq!(answer["success"], true, "{kind} {args}: {answer}");
        answer
    }

    /// The error of a refused request.
    #[track_caller]
    fn refused(&mut self, kind: &str, args: Value) -> String {
        let answer = self.ask(kind, args.clone());
        assert_eq!(answer["success"], false, "{kind} {args}: {answer}");
        answer["error"].as_str().expect("an error").to_string()
    }

    fn work(&self) -> std::path::PathBuf {
        self.env.work()
    }
}

fn text(answer: &Value) -> &str {
    answer["text"].as_str().unwrap_or_default()
}

#[test]
fn read_pages_a_file_numbered_as_cat_n_does() {
    let mut f = Files::start();
    let lines: String = (1..=4500).map(|n| format!("line {n}\n")).collect();
    f.env.write("big.txt", &lines);
    let first = f.ok("read", json!({"path": "big.txt"}));
    let data = &first["data"];
    assert_eq!(data["kind"], "text");
    assert_eq!(
        (data["offset"].as_u64(), data["lines"].as_u64()),
        (Some(0), Some(2000))
    );
    assert_eq!(data["next_offset"], 2000, "{data}");
    assert_eq!(
        data["total_lines"],
        Value::Null,
        "not counted past the page"
    );
    // Exactly what `cat -n` prints for those lines.
    let cat = crate::support::sh_text(&format!(
        "cat -n {} | head -n 2000",
        f.work().join("big.txt").display()
    ));
    assert_eq!(data["content"].as_str(), Some(cat.as_str()));
    assert!(
        text(&first).ends_with("Lines 1-2000; more follow. Next: offset=2000]"),
        "{}",
        &text(&first)[text(&first).len() - 80..]
    );

    let second = f.ok("read", json!({"path": "big.txt", "offset": 2000}));
    assert!(
        second["data"]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("  2001\tline 2001\n"))
    );
    let last = f.ok(
        "read",
        json!({"path": "big.txt", "offset": "4000", "limit": "2000"}),
    );
    let data = &last["data"];
    assert_eq!(data["lines"], 500);
    assert_eq!(data["next_offset"], Value::Null, "the last page: {data}");
    assert_eq!(data["total_lines"], 4500);
    assert!(!text(&last).contains("Next:"));

    let small = f.ok("read", json!({"path": "big.txt", "offset": 9, "limit": 2}));
    assert_eq!(
        small["data"]["content"],
        "    10\tline 10\n    11\tline 11\n"
    );
    let past = f.ok("read", json!({"path": "big.txt", "offset": 9000}));
    assert_eq!(
        text(&past),
        "[big.txt has 4500 lines; offset 9000 is past the end]"
    );
    let capped = f.ok("read", json!({"path": "big.txt", "limit": 5000}));
    assert_eq!(capped["data"]["lines"], 2000, "limit is capped at a page");
    assert!(text(&capped).contains("limit 5000 is more than a page"));

    // A file of /proc says it is empty (size 0) and is not.
    let status = f.ok("read", json!({"path": "/proc/self/status", "limit": 3}));
    assert_has(text(&status), "     1\tName:");
    f.env.write("empty.txt", "");
    assert_eq!(
        text(&f.ok("read", json!({"path": "empty.txt"}))),
        "(empty.txt is empty)"
    );

    let missing = f.refused("read", json!({"path": "nope.txt"}));
    assert_has(&missing, "nope.txt: does not exist");
    std::fs::create_dir_all(f.work().join("dir")).expect("dir");
    let dir = f.refused("read", json!({"path": "dir"}));
    assert_has(&dir, "is a directory: use `glob`");
    let bad = f.refused("read", json!({"path": "big.txt", "limit": 0}));
    assert_has(&bad, "`limit` must be at least 1");
}

#[test]
fn read_returns_images_and_describes_other_binaries_without_dumping_them() {
    use base64::Engine as _;
    let mut f = Files::start();
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend((0..200u8).collect::<Vec<_>>());
    f.env.write("pic.png", &png);
    let answer = f.ok("read", json!({"path": "pic.png"}));
    assert_eq!(answer["data"]["kind"], "image", "{answer}");
    assert_eq!(answer["data"]["mime_type"], "image/png");
    assert_eq!(answer["image"]["mime_type"], "image/png");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(answer["image"]["data"].as_str().expect("base64"))
        .expect("valid base64");
    assert_eq!(decoded, png, "the image is the file's bytes");

    let mut elf = b"\x7fELF\x02\x01\x01\0".to_vec();
    elf.extend(std::iter::repeat_n(b'\0', 100_000));
    elf.extend(b"MARKER-INSIDE-THE-BINARY");
    f.env.write("tool.bin", &elf);
    let answer = f.ok("read", json!({"path": "tool.bin"}));
    assert_eq!(answer["data"]["kind"], "binary");
    assert_eq!(answer["data"]["size"], elf.len());
    assert_eq!(answer["data"]["description"], "ELF executable or library");
    assert!(answer["image"].is_null());
    let whole = answer.to_string();
    assert!(
        !whole.contains("MARKER-INSIDE"),
        "a binary is described, never dumped"
    );
    assert_has(
        text(&answer),
        "binary file (ELF executable or library, 97.7KB); not shown",
    );
}

/// A 1 GB file (sparse: a few thousand lines of text, then a hole) pages without
/// being loaded: the server's peak memory stays far below the file's size.
#[test]
fn a_page_of_a_1_gb_file_is_read_without_loading_the_file() {
    let mut f = Files::start();
    let path = f.work().join("huge.log");
    let head: String = (1..=3000).map(|n| format!("event {n}\n")).collect();
    std::fs::write(&path, &head).expect("write");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|file| file.set_len(1 << 30))
        .expect("extend to 1 GiB");
    let answer = f.ok(
        "read",
        json!({"path": "huge.log", "offset": 1000, "limit": 50}),
    );
    let data = &answer["data"];
    assert_eq!(data["size"], 1u64 << 30);
    assert_eq!(data["lines"], 50);
    assert_eq!(data["next_offset"], 1050);
    assert!(
        data["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("  1001\tevent 1001\n"))
    );
    let peak_kib: u64 = std::fs::read_to_string(format!("/proc/{}/status", f.rpc.pid()))
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    assert!(
        peak_kib < 200 * 1024,
        "the server peaked at {peak_kib} KiB reading a page of 1 GiB"
    );
}

fn git_init(dir: &Path) {
    let out = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git init: {out:?}");
}

#[test]
fn grep_answers_with_files_lines_or_counts_and_skips_what_gitignore_ignores() {
    let mut f = Files::start();
    git_init(&f.work());
    f.env.write(".gitignore", "build/\n");
    f.env.write(
        "src/main.rs",
        "fn main() {\n    let needle = 1;\n    other();\n}\n",
    );
    f.env.write(
        "src/lib.rs",
        "// NEEDLE in caps\npub fn x() {}\n// needle again\n",
    );
    f.env.write("build/out.txt", "needle in an ignored dir\n");
    f.env.write(".github/ci.yml", "run: needle\n");
    f.env.write("blob.bin", b"needle\0binary");

    let files = f.ok("grep", json!({"pattern": "needle"}));
    assert_eq!(
        files["data"]["files"],
        json!([".github/ci.yml", "src/lib.rs", "src/main.rs"]),
        "{files}"
    );
    assert_eq!(text(&files), ".github/ci.yml\nsrc/lib.rs\nsrc/main.rs\n");
    assert_eq!(files["data"]["truncated"], false);

    let lines = f.ok(
        "grep",
        json!({"pattern": "needle", "path": "src", "output_mode": "lines", "case_insensitive": true}),
    );
    assert_eq!(
        text(&lines),
        "src/lib.rs:1:// NEEDLE in caps\nsrc/lib.rs:3:// needle again\nsrc/main.rs:2:    let needle = 1;\n"
    );
    assert_eq!(
        lines["data"]["matches"][0],
        json!({"path": "src/lib.rs", "line": 1, "text": "// NEEDLE in caps", "context": false})
    );

    let context = f.ok(
        "grep",
        json!({"pattern": "let needle", "output_mode": "lines", "context": "1", "glob": "*.rs"}),
    );
    assert_eq!(
        text(&context),
        "src/main.rs-1-fn main() {\nsrc/main.rs:2:    let needle = 1;\nsrc/main.rs-3-    other();\n"
    );

    let counts = f.ok(
        "grep",
        json!({"pattern": "needle", "output_mode": "count", "case_insensitive": "true"}),
    );
    assert_eq!(
        counts["data"]["counts"],
        json!([{"path": ".github/ci.yml", "count": 1}, {"path": "src/lib.rs", "count": 2}, {"path": "src/main.rs", "count": 1}])
    );

    let none = f.ok("grep", json!({"pattern": "absent-word"}));
    assert!(
        text(&none).starts_with("No matches for /absent-word/ in ."),
        "{}",
        text(&none)
    );
    let bad = f.refused("grep", json!({"pattern": "("}));
    assert_has(&bad, "not a valid regular expression");
}

#[test]
fn glob_lists_matching_files_newest_first() {
    let mut f = Files::start();
    git_init(&f.work());
    f.env.write(".gitignore", "target/\n");
    let now = std::time::SystemTime::now();
    for (name, age) in [
        ("src/old.rs", 300),
        ("src/new.rs", 10),
        ("src/mid.rs", 100),
        ("src/deep/x.rs", 200),
    ] {
        let path = f.env.write(name, "x\n");
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_modified(now - std::time::Duration::from_secs(age))
            .expect("mtime");
    }
    f.env.write("target/gen.rs", "x\n");
    f.env.write("README.md", "x\n");
    let all = f.ok("glob", json!({"pattern": "**/*.rs"}));
    assert_eq!(
        all["data"]["files"],
        json!(["src/new.rs", "src/mid.rs", "src/deep/x.rs", "src/old.rs"]),
        "{all}"
    );
    let one_level = f.ok("glob", json!({"pattern": "*.rs", "path": "src"}));
    assert_eq!(
        one_level["data"]["files"],
        json!(["src/new.rs", "src/mid.rs", "src/old.rs"])
    );
    let capped = f.ok("glob", json!({"pattern": "src/**/*.rs", "limit": 2}));
    assert_eq!(capped["data"]["files"], json!(["src/new.rs", "src/mid.rs"]));
    assert_eq!(
        (
            capped["data"]["matched"].as_u64(),
            capped["data"]["truncated_by"].as_str()
        ),
        (Some(4), Some("limit"))
    );
    assert_has(text(&capped), "[Showing the 2 newest of 4 matching files");
    let none = f.ok("glob", json!({"pattern": "*.nothing"}));
    assert_eq!(text(&none), "No files match *.nothing under ..");
}

#[test]
fn edit_keeps_line_endings_the_byte_order_mark_and_bytes_that_are_not_utf8() {
    let mut f = Files::start();
    let original = b"\xef\xbb\xbfname = caf\xe9\r\nold line\r\nkeep \xff\xfe me\r\n".to_vec();
    let path = f.env.write("win.ini", &original);
    let answer = f.ok(
        "edit",
        json!({"path": "win.ini", "old_string": "old line\nkeep", "new_string": "new line\nsecond new\nkeep"}),
    );
    assert_eq!(answer["data"]["line_endings"], "crlf", "{answer}");
    assert_eq!(answer["data"]["bom"], true);
    assert_eq!(answer["data"]["first_line"], 2);
    assert_eq!(
        std::fs::read(&path).expect("read"),
        b"\xef\xbb\xbfname = caf\xe9\r\nnew line\r\nsecond new\r\nkeep \xff\xfe me\r\n".to_vec()
    );
    assert!(text(&answer).starts_with("Edited win.ini: replaced 1 occurrence (first at line 2).\n     1\tname = caf\u{fffd}\n     2\tnew line\n"), "{}", text(&answer));

    let lf = f.env.write("unix.txt", "a = 1\nb = 1\nc = 2\n");
    let all = f.ok("edit", json!({"path": "unix.txt", "old_string": "= 1", "new_string": "= 9\n# was 1", "replace_all": true}));
    assert_eq!(all["data"]["replacements"], 2);
    assert_eq!(
        std::fs::read_to_string(&lf).expect("read"),
        "a = 9\n# was 1\nb = 9\n# was 1\nc = 2\n"
    );
}

#[test]
fn edit_refuses_a_missing_or_ambiguous_match_with_the_count_and_changes_nothing() {
    let mut f = Files::start();
    let path = f.env.write("dup.txt", "x = 1\ny = 1\nz = 1\n");
    let ambiguous = f.refused(
        "edit",
        json!({"path": "dup.txt", "old_string": "= 1", "new_string": "= 2"}),
    );
    assert_has(
        &ambiguous,
        "old_string matches 3 times in dup.txt, nothing was changed",
    );
    assert_has(&ambiguous, "set replace_all");
    let missing = f.refused(
        "edit",
        json!({"path": "dup.txt", "old_string": "w = 1", "new_string": "w = 2"}),
    );
    assert_has(&missing, "old_string was not found in dup.txt (0 matches)");
    let numbered = f.refused(
        "edit",
        json!({"path": "dup.txt", "old_string": "     1\tx = 1", "new_string": "x"}),
    );
    assert_has(&numbered, "line numbers");
    let same = f.refused(
        "edit",
        json!({"path": "dup.txt", "old_string": "x", "new_string": "x"}),
    );
    assert_has(&same, "the same");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "x = 1\ny = 1\nz = 1\n"
    );
    let absent = f.refused(
        "edit",
        json!({"path": "new.txt", "old_string": "a", "new_string": "b"}),
    );
    assert_has(&absent, "use `write` to create one");
}

#[test]
fn write_creates_parents_and_replaces_a_file_keeping_its_mode() {
    let mut f = Files::start();
    let created = f.ok(
        "write",
        json!({"path": "a/b/c.txt", "content": "one\ntwo\n"}),
    );
    assert_eq!(
        created["data"],
        json!({"path": "a/b/c.txt", "created": true, "size": 8, "lines": 2})
    );
    assert_eq!(text(&created), "Created a/b/c.txt (8B, 2 lines).");
    let script = f.env.write("run.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).expect("chmod");
    let replaced = f.ok(
        "write",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho new\n"}),
    );
    assert_eq!(replaced["data"]["created"], false);
    assert_eq!(
        std::fs::read_to_string(&script).expect("read"),
        "#!/bin/sh\necho new\n"
    );
    let mode = mode_of(&script);
    assert_eq!(mode, 0o750, "the mode is kept");
    let leftovers: Vec<_> = std::fs::read_dir(f.work())
        .expect("list")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".agentbash-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn deny_read_is_refused_by_name_and_skipped_silently_by_wider_searches() {
    let mut f = Files::start();
    let secrets = f.env.home().join(".secrets");
    std::fs::create_dir_all(&secrets).expect("secrets dir");
    std::fs::write(secrets.join("id_key"), "needle PRIVATE-KEY-BYTES\n").expect("key");
    f.env.write("private/notes.txt", "needle PRIVATE-NOTES\n");
    f.env.write("public.txt", "needle public\n");
    symlink(secrets.join("id_key"), f.work().join("key-link")).expect("link");

    for path in ["~/.secrets/id_key", "private/notes.txt", "key-link"] {
        let error = f.refused("read", json!({"path": path}));
        assert!(
            error.contains("is hidden by [sandbox] deny_read"),
            "{path}: {error}"
        );
        assert_lacks(&error, "PRIVATE");
    }
    let error = f.refused("grep", json!({"pattern": "needle", "path": "~/.secrets"}));
    assert_has(&error, "deny_read (~/.secrets)");

    let home = f.env.home().display().to_string();
    let wide = [
        f.ask(
            "grep",
            json!({"pattern": "needle", "path": home, "output_mode": "lines"}),
        ),
        f.ask("grep", json!({"pattern": "needle", "output_mode": "lines"})),
        f.ask("glob", json!({"pattern": "**/*", "path": home})),
        f.ask("glob", json!({"pattern": "**/*"})),
    ];
    for answer in &wide {
        assert_eq!(answer["success"], true, "{answer}");
        let shown = answer.to_string();
        for hidden in ["PRIVATE", "id_key", ".secrets", "notes.txt"] {
            assert!(!shown.contains(hidden), "{hidden} leaked: {shown}");
        }
    }
    assert_eq!(text(&wide[1]), "public.txt:1:needle public\n");
    let error = f.refused("write", json!({"path": "private/new.txt", "content": "x"}));
    assert_has(&error, "deny_read");
    assert!(!f.work().join("private/new.txt").exists());
}

#[test]
fn writes_outside_the_workspace_are_refused_with_the_sandbox_notice() {
    let mut f = Files::start();
    let outside = f.env.root().join("outside.txt");
    let error = f.refused("write", json!({"path": outside, "content": "x"}));
    assert!(
        error.starts_with(&format!(
            "[sandbox workspace-write: writing {} was refused",
            outside.display()
        )),
        "{error}"
    );
    assert_has(&error, "add the path to [sandbox] writable");
    assert!(!outside.exists());
    std::fs::create_dir_all(f.work().join(".git/hooks")).expect("hooks");
    for path in [
        ".git/hooks/pre-commit",
        ".git/config",
        ".agentbash/profiles/x.toml",
    ] {
        let error = f.refused("write", json!({"path": path, "content": "x"}));
        assert!(
            error.contains("stays read-only in the sandbox"),
            "{path}: {error}"
        );
        assert!(!f.work().join(path).exists(), "{path} was written");
    }
    let state = f.env.state_dir().join("x");
    let error = f.refused("write", json!({"path": state, "content": "x"}));
    assert_has(&error, "writing");
    assert!(!state.exists());

    let mut ro = Files::with_mode("read-only");
    let path = ro.env.write("doc.txt", "a\n");
    let error = ro.refused(
        "edit",
        json!({"path": "doc.txt", "old_string": "a", "new_string": "b"}),
    );
    assert_has(&error, "[sandbox read-only: writing doc.txt was refused");
    assert_has(&error, "mode = \"workspace-write\"");
    assert_eq!(std::fs::read_to_string(path).expect("read"), "a\n");
    assert_eq!(
        ro.ok("read", json!({"path": "doc.txt"}))["data"]["lines"],
        1
    );
}

#[test]
fn a_protected_path_is_refused_naming_guard_protected_even_with_the_sandbox_off() {
    let mut f = Files::with_mode("off");
    let keep = f.env.root().join("keep");
    let file = keep.join("data.txt");
    std::fs::write(&file, "precious\n").expect("write");
    let error = f.refused("write", json!({"path": file, "content": "gone"}));
    assert!(
        error.contains(&format!(
            "is inside {} (protected by guard.protected)",
            keep.display()
        )),
        "{error}"
    );
    assert!(
        error.contains(&format!(
            "remove \"{}\" from guard.protected",
            keep.display()
        )),
        "{error}"
    );
    let error = f.refused(
        "edit",
        json!({"path": file, "old_string": "precious", "new_string": "gone"}),
    );
    assert_has(&error, "guard.protected");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "precious\n");
    // `/` and `~` protect only themselves: the sandbox is off, so this may be written.
    let outside = f.env.root().join("scratch.txt");
    f.ok("write", json!({"path": outside, "content": "fine\n"}));
    let home_file = f.env.home().join("notes.txt");
    f.ok("write", json!({"path": "~/notes.txt", "content": "fine\n"}));
    assert!(home_file.exists());
}

#[test]
fn symbolic_links_cannot_lead_a_write_out_of_the_workspace() {
    let mut f = Files::start();
    let outside = f.env.root().join("outside");
    std::fs::create_dir_all(&outside).expect("outside dir");
    std::fs::write(outside.join("target.txt"), "original\n").expect("target");
    // A link to a file outside, a link as a parent directory, a dangling link.
    symlink(outside.join("target.txt"), f.work().join("file-link")).expect("link");
    symlink(&outside, f.work().join("dir-link")).expect("link");
    symlink(outside.join("created.txt"), f.work().join("dangling")).expect("link");
    let attempts = [
        (
            "write",
            json!({"path": "file-link", "content": "overwritten"}),
        ),
        (
            "edit",
            json!({"path": "file-link", "old_string": "original", "new_string": "edited"}),
        ),
        (
            "write",
            json!({"path": "dir-link/new/deep.txt", "content": "x"}),
        ),
        ("write", json!({"path": "dangling", "content": "x"})),
    ];
    for (kind, args) in attempts {
        let error = f.refused(kind, args.clone());
        assert!(
            error.contains("[sandbox workspace-write: writing"),
            "{args}: {error}"
        );
        assert!(
            error.contains("(a link to "),
            "the real target is named: {error}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("target.txt")).expect("read"),
        "original\n"
    );
    assert!(!outside.join("new").exists() && !outside.join("created.txt").exists());
    // A link that stays inside the workspace is fine, and writes its target.
    f.env.write("real.txt", "a\n");
    symlink(f.work().join("real.txt"), f.work().join("inner-link")).expect("link");
    f.ok("write", json!({"path": "inner-link", "content": "b\n"}));
    assert_eq!(
        std::fs::read_to_string(f.work().join("real.txt")).expect("read"),
        "b\n"
    );
    assert!(
        std::fs::symlink_metadata(f.work().join("inner-link"))
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
}

#[test]
fn secrets_in_files_are_redacted_as_in_bash_output() {
    let mut f = Files::start();
    f.env.write(
        "config.env",
        format!("API=https://x\nDEPLOY_TOKEN={SECRET}\n"),
    );
    for (kind, args) in [
        ("read", json!({"path": "config.env"})),
        ("grep", json!({"pattern": "DEPLOY", "output_mode": "lines"})),
        ("grep", json!({"pattern": SECRET, "output_mode": "lines"})),
    ] {
        let answer = f.ok(kind, args);
        let shown = answer.to_string();
        assert_lacks(&shown, SECRET);
        assert_has(&shown, "DEPLOY_TOKEN=[REDACTED:DEPLOY_TOKEN]");
    }
    // Writing the mask back says what it did.
    let answer = f.ok(
        "edit",
        json!({"path": "config.env", "old_string": "API=https://x", "new_string": "API=[REDACTED:DEPLOY_TOKEN]"}),
    );
    assert_has(
        text(&answer),
        "the file now has the mask text there, not the secret",
    );
}

/// 100,000 files, each with a match: the answer comes, capped, and says so. The files
/// are hard links to a few (a link costs a directory entry, not an inode and a block:
/// the tree is made and removed in seconds even on a busy disk); to the walk and the
/// search each path is a file of its own.
#[test]
fn grep_and_glob_over_100k_files_answer_capped_and_say_so() {
    let mut f = Files::start();
    let big = f.work().join("big");
    let sources = f.env.root().join("sources");
    std::fs::create_dir_all(&sources).expect("sources dir");
    for d in 0..1000 {
        let dir = big.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir).expect("dir");
        // 10,000 links per inode at most (ext4 allows 65,000).
        let source = sources.join(format!("s{}.txt", d / 100));
        if d % 100 == 0 {
            std::fs::write(&source, "alpha\nneedle here\nomega\n").expect("source");
        }
        for n in 0..100 {
            std::fs::hard_link(&source, dir.join(format!("f{n:02}.txt"))).expect("link");
        }
    }
    let files = f.ok("grep", json!({"pattern": "needle", "path": "big"}));
    let data = &files["data"];
    assert_eq!(data["truncated"], true, "{}", text(&files));
    assert_eq!(data["truncated_by"], "limit");
    assert_eq!(data["files"].as_array().map(Vec::len), Some(500));
    assert!(
        text(&files)
            .contains("[Search stopped early (more results than `limit`): showing 500 files"),
        "{}",
        &text(&files)[text(&files).len() - 200..]
    );

    let lines = f.ok(
        "grep",
        json!({"pattern": "needle", "path": "big", "output_mode": "lines", "limit": 5000}),
    );
    assert_eq!(
        lines["data"]["matches"].as_array().map(Vec::len),
        Some(5000)
    );
    assert_eq!(lines["data"]["truncated"], true);

    let none = f.ok(
        "grep",
        json!({"pattern": "absent", "path": "big", "glob": "d00*/*.txt"}),
    );
    assert_eq!(none["data"]["searched_files"], 1000, "{none}");

    let glob = f.ok("glob", json!({"pattern": "**/*.txt", "path": "big"}));
    assert_eq!(glob["data"]["files"].as_array().map(Vec::len), Some(500));
    assert_eq!(glob["data"]["truncated_by"], "limit");
}

/// The MCP server routes `bash` commands only to tools that exist: with the toolbox
/// (on in `agent`), `cat` is answered "use `read`" and `read` is there; without it,
/// `cat` runs, whatever tools the profile lists for other callers.
#[test]
fn mcp_routes_a_command_only_to_a_tool_that_exists() {
    let env = TestEnv::new();
    env.write("notes.txt", "hello from notes\n");
    let tool_names = |server: &mut LiveServer| -> Vec<String> {
        let listing = server.mcp_request(2, "tools/list", json!({}));
        listing["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_string())
            .collect()
    };

    let mut without = LiveServer::mcp(&env, &["-p", "agent", "--no-toolbox"]);
    assert!(!tool_names(&mut without).contains(&"read".to_string()));
    let ran = without.call_tool(3, "bash", json!({"command": "cat notes.txt"}));
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(
        ran["structuredContent"]["output"], "hello from notes\n",
        "{ran}"
    );
    // A tool the call declares is still routed to.
    let declared = without.call_tool(
        4,
        "bash",
        json!({"command": "cat notes.txt", "tools": ["read"]}),
    );
    assert_eq!(
        declared["structuredContent"]["blocked"]["tool"], "read",
        "{declared}"
    );

    let mut with = LiveServer::mcp(&env, &["-p", "agent"]);
    let names = tool_names(&mut with);
    for tool in ["read", "grep", "glob", "edit", "write"] {
        assert!(
            names.contains(&tool.to_string()),
            "{tool} missing: {names:?}"
        );
    }
    let blocked = with.call_tool(3, "bash", json!({"command": "cat notes.txt"}));
    assert_eq!(blocked["isError"], true, "{blocked}");
    assert_eq!(
        blocked["structuredContent"]["blocked"]["tool"], "read",
        "{blocked}"
    );
    let read = with.call_tool(4, "read", json!({"path": "notes.txt"}));
    assert_eq!(
        read["content"][0]["text"], "     1\thello from notes\n",
        "{read}"
    );
    let mut on_default = LiveServer::mcp(&env, &["--toolbox"]);
    assert!(tool_names(&mut on_default).contains(&"edit".to_string()));
}

/// One request, two protocols: the rpc `data` is the MCP `structuredContent`, the rpc
/// `text` the MCP text, a refusal the same message.
#[test]
fn the_file_tools_answer_alike_over_mcp_and_rpc() {
    let mut f = Files::start();
    f.env.write("a/one.txt", "alpha\nbeta\n");
    let mut mcp = LiveServer::mcp(&f.env, &["--toolbox", "-p", "files"]);
    let calls = [
        ("read", json!({"path": "a/one.txt"})),
        ("grep", json!({"pattern": "beta", "output_mode": "lines"})),
        ("glob", json!({"pattern": "**/*.txt"})),
        ("read", json!({"path": "a/none.txt"})),
        (
            "write",
            json!({"path": "/etc/agentbash-never-written", "content": "x"}),
        ),
    ];
    for (n, (tool, args)) in calls.into_iter().enumerate() {
        let over_mcp = mcp.call_tool(10 + n as u64, tool, args.clone());
        let over_rpc = f.ask(tool, args.clone());
        if over_rpc["success"] == true {
            assert_eq!(over_mcp["isError"], false, "{over_mcp}");
            assert_eq!(
                over_mcp["structuredContent"], over_rpc["data"],
                "{tool} {args}"
            );
            assert_eq!(
                over_mcp["content"][0]["text"], over_rpc["text"],
                "{tool} {args}"
            );
        } else {
            assert_eq!(over_mcp["isError"], true, "{over_mcp}");
            assert_eq!(
                over_mcp["content"][0]["text"], over_rpc["error"],
                "{tool} {args}"
            );
        }
    }
    assert!(!Path::new("/etc/agentbash-never-written").exists());
}

/// A linked worktree's gitdir (and a submodule's) holds config and hooks git runs: the
/// tools keep them read-only as the kernel sandbox does.
#[test]
fn a_worktree_or_submodule_gitdir_stays_read_only() {
    let mut f = Files::start();
    let work = f.work();
    for inner in [
        ".git/worktrees/wt/config",
        ".git/worktrees/wt/hooks/post-checkout",
        ".git/modules/sub/hooks/pre-commit",
        ".git/modules/sub/config",
    ] {
        std::fs::create_dir_all(work.join(inner).parent().expect("parent")).expect("dirs");
        let error = f.refused("write", json!({"path": inner, "content": "evil\n"}));
        assert!(
            error.contains("stays read-only in the sandbox"),
            "{inner}: {error}"
        );
        assert!(!work.join(inner).exists(), "{inner}");
    }
    // Elsewhere in .git (objects, refs) the tools may write, as git itself does.
    f.ok(
        "write",
        json!({"path": ".git/worktrees/wt/HEAD", "content": "ref: x\n"}),
    );
}

/// Started in the home directory with no workspace named, `workspace-write` would open
/// everything: the tools write nothing, as the kernel sandbox runs nothing.
#[test]
fn a_server_started_in_home_writes_nothing_without_a_named_workspace() {
    let env = TestEnv::new();
    env.user_profile(
        "wide",
        "extends = \"default\"\n[sandbox]\nmode = \"workspace-write\"\n",
    );
    let mut rpc = LiveServer::start_cmd(env.cmd(&["rpc", "-p", "wide"]).current_dir(env.home()));
    let answer = rpc.ask(json!({"id": "w", "type": "write", "path": "notes.txt", "content": "x"}));
    assert_eq!(answer["success"], false, "{answer}");
    let error = answer["error"].as_str().unwrap_or_default();
    assert_has(error, "which is no sandbox at all");
    assert!(!env.home().join("notes.txt").exists());
    let read = rpc.ask(json!({"id": "r", "type": "read", "path": "missing-is-fine"}));
    assert!(
        read["error"]
            .as_str()
            .is_none_or(|e| !e.contains("no sandbox")),
        "{read}"
    );
}
