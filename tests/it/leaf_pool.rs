//! The pool of run leaves (src/process/cgroup/pool.rs): the first leaf of an agentbash
//! process is taken from the pool when a free one is there and given back empty, so
//! one-run CLIs do not make and remove a group each; a leaf in use, one that holds a
//! process, and one that was ever killed through `cgroup.kill` are never taken.
//!
//! Each test starts its agentbash processes in a cgroup of its own (a shell moves
//! itself there and execs agentbash), so their parent group — and their pool — is the
//! test's alone, whatever else the suite runs at the same time.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::{
    Missing, TestEnv, bin, cgroup2_mount, is_root, needs_root, nonce, scaled, skip,
    wait_for_cmdline,
};

fn no_run_groups() -> Missing {
    needs_root("a run cgroup (a writable cgroup v2 tree)")
}

/// A cgroup beside the test process for the agentbash processes of one test.
struct OwnGroup {
    dir: PathBuf,
}

impl OwnGroup {
    /// `None` where this process's cgroup v2 group is not known.
    fn new(mount: &Path) -> Option<OwnGroup> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let own = own.lines().find_map(|l| l.strip_prefix("0::"))?;
        let dir = mount
            .join(own.trim_start_matches('/'))
            .join(format!("abtest-{}", nonce()));
        std::fs::create_dir(&dir).ok()?;
        Some(OwnGroup { dir })
    }

    /// `agentbash ARGS`, started in this group.
    fn agentbash(&self, env: &TestEnv, args: &[&str]) -> crate::support::Cmd {
        let script = format!(
            "echo 0 > '{}' && exec \"$@\"",
            self.dir.join("cgroup.procs").display()
        );
        let bin = bin();
        let mut all = vec!["-c", script.as_str(), "sh", bin.to_str().expect("utf-8")];
        all.extend_from_slice(args);
        env.program("sh", &all)
    }

    /// The group `agentbash run -q -- cat /proc/self/cgroup` ran in, and its code.
    fn group_of_a_run(&self, env: &TestEnv, before: &str) -> (PathBuf, Option<i32>) {
        let cmd = format!("{before}cat /proc/self/cgroup");
        let out = self.agentbash(env, &["run", "-q", "--", &cmd]).run();
        let line = out.stdout.lines().find_map(|l| l.strip_prefix("0::"));
        let group = line.unwrap_or_else(|| panic!("no cgroup v2 line: {:?}", out.stdout));
        (PathBuf::from(group), out.status.code())
    }

    /// The parent group of the runs of agentbash processes started here.
    fn parent(&self) -> PathBuf {
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        self.dir.join(format!("agentbash-user-{uid}"))
    }

    /// The leaves in the parent now, by name.
    fn leaves(&self) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.parent()) else {
            return Vec::new();
        };
        let mut names: Vec<String> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        names.sort();
        names
    }
}

impl Drop for OwnGroup {
    fn drop(&mut self) {
        let deadline = Instant::now() + scaled(Duration::from_secs(5));
        for leaf in self.leaves() {
            remove_groups(&self.parent().join(leaf), deadline);
        }
        let _ = std::fs::remove_dir(self.parent());
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Remove the group `dir` and the groups under it (a run may have made some), each
/// once its processes (if any, on their way out) are gone or `deadline` passes.
fn remove_groups(dir: &Path, deadline: Instant) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_groups(&e.path(), deadline);
            }
        }
    }
    while std::fs::remove_dir(dir).is_err() && dir.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The leaf name of a group path (`…/agentbash-user-0/pool-…`).
fn leaf(group: &Path) -> String {
    group
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string()
}

macro_rules! own_group {
    () => {{
        if !is_root() {
            skip!(no_run_groups());
        }
        let Some(mount) = cgroup2_mount() else {
            skip!(no_run_groups());
        };
        let Some(group) = OwnGroup::new(&mount) else {
            skip!(no_run_groups());
        };
        group
    }};
}

/// One run after another: the second takes the leaf the first gave back; it is a
/// leaf of the kept parent, and empty between runs.
#[test]
fn the_next_run_takes_the_leaf_the_last_one_gave_back() {
    let group = own_group!();
    let env = TestEnv::new();
    let (first, code) = group.group_of_a_run(&env, "");
    assert_eq!(code, Some(0));
    assert!(leaf(&first).starts_with("pool-"), "{first:?}");
    let on_disk = group.parent().join(leaf(&first));
    let events = std::fs::read_to_string(on_disk.join("cgroup.events")).expect("kept");
    assert!(
        events.lines().any(|l| l == "populated 0"),
        "given back with a process in it: {events}"
    );
    let (second, code) = group.group_of_a_run(&env, "");
    assert_eq!(code, Some(0));
    assert_eq!(first, second, "the free leaf was not taken");
    assert_eq!(
        group.leaves(),
        vec![leaf(&first)],
        "one leaf for runs in turn"
    );
}

/// A leaf in use is not taken by a run at the same time, nor one that holds a
/// process (here one the test put there), nor one marked as killed.
#[test]
fn a_leaf_in_use_or_holding_a_process_is_not_taken() {
    let group = own_group!();
    let env = TestEnv::new();
    // Made by a first run, then held by a long one.
    let (pooled, _) = group.group_of_a_run(&env, "");
    let tag = nonce();
    let long = group
        .agentbash(&env, &["run", "-q", "--", &format!("sleep 30.{tag}")])
        .spawn();
    assert!(
        wait_for_cmdline(&format!("sleep 30.{tag}"), Duration::from_secs(10)),
        "the long run never started"
    );
    let (meanwhile, code) = group.group_of_a_run(&env, "");
    assert_eq!(code, Some(0));
    assert_ne!(meanwhile, pooled, "a leaf in use was taken");
    long.signal(libc::SIGTERM);
    let _ = long.wait();
    // A free-looking leaf that holds a process: never taken.
    let held = group.parent().join(format!("pool-{:0>16}", nonce()));
    std::fs::create_dir(&held).expect("a pooled leaf");
    // Killed and reaped however the test ends, so the leaf can go with `group`.
    struct Sleeper(std::process::Child);
    impl Drop for Sleeper {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let sleeper = Sleeper(
        std::process::Command::new("sleep")
            .arg(format!("31.{tag}"))
            .spawn()
            .expect("sleep"),
    );
    std::fs::write(held.join("cgroup.procs"), sleeper.0.id().to_string()).expect("join");
    let mut taken = Vec::new();
    for _ in 0..3 {
        let (g, code) = group.group_of_a_run(&env, "");
        assert_eq!(code, Some(0));
        taken.push(leaf(&g));
    }
    drop(sleeper);
    assert!(
        !taken.contains(&leaf(&held)),
        "a leaf with a process in it was taken: {taken:?}"
    );
}

/// A run that ends by `cgroup.kill` (a command that ignores SIGTERM past its grace)
/// does not give its leaf back: the kernel would kill every process cloned into it
/// from then on. The next run gets another leaf and runs.
#[test]
fn a_killed_leaf_is_never_taken_again() {
    let group = own_group!();
    let env = TestEnv::new();
    let out = group
        .agentbash(
            &env,
            &[
                "run",
                "--timeout",
                "1",
                "--",
                "cat /proc/self/cgroup; trap '' TERM; sleep 20",
            ],
        )
        .run();
    out.assert_code(124);
    let killed = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no cgroup line: {:?}", out.stdout));
    for _ in 0..2 {
        let (next, code) = group.group_of_a_run(&env, "echo ran; ");
        assert_eq!(code, Some(0), "a run after the killed one failed");
        assert_ne!(next, killed, "the killed leaf was taken again");
    }
    assert!(
        !group.leaves().contains(&leaf(&killed)),
        "the killed leaf stayed: {:?}",
        group.leaves()
    );
}

/// A pooled leaf marked as killed (dated to the epoch) and empty is removed by the
/// next agentbash process, and never taken.
#[test]
fn an_empty_leaf_marked_as_killed_is_removed() {
    let group = own_group!();
    let env = TestEnv::new();
    let (pooled, _) = group.group_of_a_run(&env, "");
    let dir = group.parent().join(leaf(&pooled));
    std::fs::File::open(&dir)
        .and_then(|f| f.set_modified(std::time::UNIX_EPOCH))
        .expect("mark");
    let (next, code) = group.group_of_a_run(&env, "");
    assert_eq!(code, Some(0));
    assert_ne!(next, pooled, "a leaf marked as killed was taken");
    assert!(!dir.exists(), "a leaf marked as killed stayed");
}

/// SIGKILL of an agentbash whose run is in a pooled leaf: its watchdog ends the run
/// and removes the leaf; a leaf it gave back before is left alone.
#[test]
fn the_watchdog_ends_a_run_in_a_pooled_leaf_and_spares_one_given_back() {
    let group = own_group!();
    let env = TestEnv::new();
    let tag = nonce();
    let run = group
        .agentbash(
            &env,
            &[
                "run",
                "--",
                &format!("cat /proc/self/cgroup; setsid sleep 40.{tag} & exec sleep 41.{tag}"),
            ],
        )
        .spawn();
    for n in ["40", "41"] {
        assert!(
            wait_for_cmdline(&format!("sleep {n}.{tag}"), Duration::from_secs(10)),
            "sleep {n} never started"
        );
    }
    crate::support::wait_for_watchdog(run.pid());
    let leaves = group.leaves();
    run.signal(libc::SIGKILL);
    let _ = run.wait();
    let left = crate::support::procs_with_cmdline(&format!(".{tag}"), Duration::from_secs(2));
    assert!(left.is_empty(), "outlived a SIGKILLed agentbash: {left:?}");
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while leaves.iter().any(|l| group.parent().join(l).exists()) {
        assert!(Instant::now() < deadline, "its leaf stayed: {leaves:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A run that lasted long enough for a watchdog, then gave its leaf back: the
    // leaf is still there after that agentbash has exited, and taken by the next run.
    let (given, code) = group.group_of_a_run(&env, "sleep 0.3; ");
    assert_eq!(code, Some(0));
    std::thread::sleep(Duration::from_millis(300));
    let (next, code) = group.group_of_a_run(&env, "");
    assert_eq!(code, Some(0));
    assert_eq!(next, given, "the watchdog took a leaf given back");
}

/// The one-run CLI with a sandbox in its own PID namespace does not wait for the
/// sandbox's init to leave the run's leaf (it leaves once the kernel has taken the
/// namespaces apart), yet nothing of the run outlives agentbash: its processes are
/// gone when it has exited, the init leaves the leaf by itself, and the leaf is then
/// either removed (by the watchdog, or the next agentbash) or empty for the next run
/// (a pooled one).
#[test]
fn a_sandboxed_one_run_leaves_nothing_of_its_run_behind() {
    let group = own_group!();
    let env = TestEnv::new();
    let profile = env.write(
        "ns.toml",
        "extends = \"default\"\n[shell]\nsnapshot = false\n[sandbox]\nmode = \"workspace-write\"\nengine = \"namespaces\"\n",
    );
    let tag = nonce();
    let cmd = format!(
        "sleep 300.{tag} & setsid sleep 301.{tag} & setsid env -i sleep 302.{tag} & echo started"
    );
    let out = group
        .agentbash(
            &env,
            &[
                "run",
                "--json",
                "-p",
                profile.to_str().expect("utf-8"),
                "--",
                &cmd,
            ],
        )
        .run();
    let v = out.json();
    if v["sandbox"]["engine"] != "namespaces" {
        skip!(Missing::new(
            "user and PID namespaces for the sandbox",
            "run the suite where unprivileged namespaces are allowed, or as root"
        ));
    }
    assert!(crate::support::s(&v, "output").contains("started"), "{v}");
    // At once: what the run started is gone with agentbash.
    let left = crate::support::procs_with_cmdline(&format!(".{tag}"), Duration::ZERO);
    assert!(left.is_empty(), "outlived its run: {left:?}");
    // Its leaves, if still there, empty by themselves (the init exits). None may be
    // left: a leaf not given back at once (its init still in it) is its watchdog's,
    // which removes it when agentbash exits.
    let leaves = group.leaves();
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    for name in &leaves {
        let dir = group.parent().join(name);
        while std::fs::read_to_string(dir.join("cgroup.events"))
            .is_ok_and(|e| e.lines().any(|l| l == "populated 1"))
        {
            assert!(Instant::now() < deadline, "{name} still holds a process");
            std::thread::sleep(Duration::from_millis(10));
        }
        // Old enough for the next agentbash to remove it, if it is not pooled.
        if !name.starts_with("pool-") {
            let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
            std::fs::File::open(&dir)
                .and_then(|f| f.set_modified(an_hour_ago))
                .expect("age");
        }
    }
    let (next, code) = group.group_of_a_run(&env, "");
    assert_eq!(code, Some(0));
    for name in &leaves {
        let dir = group.parent().join(name);
        if name.starts_with("pool-") {
            // Given back, it is the next run's; not given back (the init was still in
            // it), its watchdog marked and removed it, or the next run did.
            assert!(
                leaf(&next) == *name || !dir.exists(),
                "{name} stayed, and the next run took {next:?}"
            );
        } else {
            assert!(!dir.exists(), "{name} was left for good");
        }
    }
}

/// A run that made a group under its own leaf (as a nested agentbash does) does not
/// give the leaf back: the next run gets another one.
#[test]
fn a_leaf_with_a_group_under_it_is_not_given_back() {
    let group = own_group!();
    let env = TestEnv::new();
    let mount = cgroup2_mount().expect("known above");
    let sub = format!(
        "mkdir \"{}$(sed -n 's/^0:://p' /proc/self/cgroup)/nested\" && ",
        mount.display()
    );
    let (first, code) = group.group_of_a_run(&env, &sub);
    assert_eq!(code, Some(0));
    assert!(leaf(&first).starts_with("pool-"), "{first:?}");
    let (second, code) = group.group_of_a_run(&env, "");
    assert_eq!(code, Some(0));
    assert_ne!(first, second, "a leaf with a group under it was given back");
}

/// A SIGKILLed agentbash's pooled leaf that emptied before its watchdog's turn, and
/// that another agentbash took meanwhile, is that agentbash's: the watchdog does not
/// mark, kill or remove it. Here the test takes the leaf's lock, as a taker would,
/// while the watchdog is stopped; once the lock is let go, the next run takes the leaf.
#[test]
fn the_watchdog_leaves_alone_a_pooled_leaf_another_agentbash_took() {
    let group = own_group!();
    let env = TestEnv::new();
    let tag = nonce();
    let run = group
        .agentbash(&env, &["run", "--", &format!("exec sleep 42.{tag}")])
        .spawn();
    assert!(
        wait_for_cmdline(&format!("sleep 42.{tag}"), Duration::from_secs(10)),
        "the run never started"
    );
    let watchdog = crate::support::wait_for_watchdog(run.pid());
    // Stopped only once it has closed what it inherited (the leaf's descriptor among
    // them, which shares agentbash's lock): it names itself a moment before.
    let inherited = || {
        std::fs::read_dir(format!("/proc/{watchdog}/fd")).map_or(0, |rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) > Some(3))
                .count()
        })
    };
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while inherited() > 0 {
        assert!(
            Instant::now() < deadline,
            "the watchdog kept agentbash's descriptors"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let leaves = group.leaves();
    let [name] = leaves.as_slice() else {
        panic!("not one leaf: {leaves:?}");
    };
    assert!(name.starts_with("pool-"), "{name}");
    let dir = group.parent().join(name);
    // SAFETY: signals to the watchdog of the agentbash this test started.
    unsafe { libc::kill(watchdog, libc::SIGSTOP) };
    run.signal(libc::SIGKILL);
    let _ = run.wait();
    // The run's sleep (this test's, and the only process in the leaf) ends too.
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).expect("cgroup.procs");
    for pid in procs.lines().filter_map(|p| p.parse::<i32>().ok()) {
        // SAFETY: a process of this test's run, by pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while !std::fs::read_to_string(dir.join("cgroup.events"))
        .is_ok_and(|e| e.lines().any(|l| l == "populated 0"))
    {
        assert!(Instant::now() < deadline, "the leaf never emptied");
        std::thread::sleep(Duration::from_millis(10));
    }
    let taker = std::fs::File::open(&dir).expect("open the leaf");
    // SAFETY: flock on a descriptor of ours.
    let locked = unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&taker),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };
    assert_eq!(locked, 0, "the leaf's lock was still held");
    // SAFETY: as above.
    unsafe { libc::kill(watchdog, libc::SIGCONT) };
    let ended = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    while !ended(watchdog) {
        assert!(Instant::now() < deadline, "the watchdog never ended");
        std::thread::sleep(Duration::from_millis(10));
    }
    let modified = std::fs::metadata(&dir).and_then(|m| m.modified());
    assert!(
        modified.as_ref().is_ok_and(|t| *t != std::time::UNIX_EPOCH),
        "the watchdog marked or removed a leaf another agentbash held: {modified:?}"
    );
    drop(taker);
    let (next, code) = group.group_of_a_run(&env, "");
    assert_eq!(code, Some(0));
    assert_eq!(leaf(&next), *name, "the leaf was not taken again");
}
