//! A real terminal for end-to-end tests of interactive programs, driven through
//! tmux (`send-keys`, `capture-pane`, `resize-window`).
//!
//! Each [`TmuxTerminal`] runs its own tmux server on a unique socket (`-L`) in a
//! private temporary directory (`TMUX_TMPDIR`), so tests run in parallel without
//! seeing each other's panes, and kills that server when dropped. Panes stay after
//! their program exits (`remain-on-exit`) so the final screen and the exit status
//! can be read. The server (and so the pane's program) gets exactly the
//! environment the [`TmuxBuilder`] describes: the test process's own, minus the
//! removed variables, plus the set ones. Nothing here knows about agentbash: give
//! it any argv.
//!
//! tmux must be installed (`.ci/run` installs it); without it every test using the
//! harness fails with a message saying so rather than passing vacuously.

#![allow(dead_code)] // not every test uses every probe

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How often the `wait_*` methods look at the pane again.
const POLL: Duration = Duration::from_millis(50);

static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// How to start a [`TmuxTerminal`]: argv, size, environment, working directory.
pub struct TmuxBuilder {
    argv: Vec<OsString>,
    cols: u16,
    rows: u16,
    set: Vec<(OsString, OsString)>,
    remove: Vec<OsString>,
    cwd: Option<PathBuf>,
    config: Vec<String>,
}

impl TmuxBuilder {
    /// Adds a line to the server's config (e.g. `set -g set-clipboard on`), in force
    /// before the program starts.
    pub fn config(mut self, line: &str) -> Self {
        self.config.push(line.to_string());
        self
    }

    /// The terminal size (default 100×30).
    pub fn size(mut self, cols: u16, rows: u16) -> Self {
        self.cols = cols;
        self.rows = rows;
        self
    }

    /// Sets a variable in the program's environment.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.set
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Removes a variable from the program's environment.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.remove.push(key.as_ref().to_owned());
        self
    }

    /// The program's working directory (default: the test's).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Starts the program in a detached terminal.
    pub fn start(self) -> io::Result<TmuxTerminal> {
        if self.argv.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty argv"));
        }
        let id = NEXT_ID.fetch_add(1, Ordering::SeqCst);
        let dir = tempfile::Builder::new().prefix("tmux-it-").tempdir()?;
        // Set in the config, not afterwards: a fast program could exit (and its
        // pane vanish) before a later set-option runs; and a status line
        // appearing or disappearing later would resize the pane.
        let config = dir.path().join("tmux.conf");
        let mut text =
            "set -g remain-on-exit on\nset -g status off\nset -g history-limit 10000\n".to_string();
        for line in &self.config {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(&config, text)?;
        let terminal = TmuxTerminal {
            socket: format!("it-{}-{id}", std::process::id()),
            config,
            tmpdir: dir,
            target: "test".into(),
            set: self.set,
            remove: self.remove,
        };
        let mut command = terminal.command();
        command.args(["new-session", "-d", "-s", &terminal.target]);
        command.args(["-x", &self.cols.to_string(), "-y", &self.rows.to_string()]);
        if let Some(cwd) = &self.cwd {
            command.arg("-c").arg(cwd);
        }
        command.args(&self.argv);
        let output = command.output().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot run tmux ({e}); install it (.ci/run does) to run these tests"),
            )
        })?;
        check(output, "new-session")?;
        Ok(terminal)
    }
}

/// One tmux server with one session and one pane running the program.
pub struct TmuxTerminal {
    socket: String,
    config: PathBuf,
    /// Holds the config and the server's socket; removed on drop.
    tmpdir: tempfile::TempDir,
    target: String,
    set: Vec<(OsString, OsString)>,
    remove: Vec<OsString>,
}

impl TmuxTerminal {
    /// Describes a terminal running `argv`.
    pub fn builder<S: AsRef<OsStr>>(argv: &[S]) -> TmuxBuilder {
        TmuxBuilder {
            argv: argv.iter().map(|a| a.as_ref().to_owned()).collect(),
            cols: 100,
            rows: 30,
            set: Vec::new(),
            remove: Vec::new(),
            cwd: None,
            config: Vec::new(),
        }
    }

    /// A tmux client command for this terminal's server. The first one starts the
    /// server, which keeps this environment for the panes it creates.
    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.env_remove("TMUX").env_remove("TMUX_PANE");
        for key in &self.remove {
            command.env_remove(key);
        }
        for (key, value) in &self.set {
            command.env(key, value);
        }
        command
            .env("TMUX_TMPDIR", self.tmpdir.path())
            .arg("-L")
            .arg(&self.socket)
            .arg("-f")
            .arg(&self.config);
        // tmux refuses to start without a usable TERM in some environments.
        command.env("TERM", "xterm-256color");
        command
    }

    fn tmux(&self, args: &[&str]) -> io::Result<String> {
        let output = self.command().args(args).output()?;
        let what = args.first().copied().unwrap_or("tmux");
        check(output, what)
    }

    /// Sends tmux key names: `"Enter"`, `"Escape"`, `"Up"`, `"C-c"`, `"M-x"`.
    pub fn send_keys(&self, keys: &[&str]) -> io::Result<()> {
        let mut args = vec!["send-keys", "-t", &self.target];
        args.extend_from_slice(keys);
        self.tmux(&args).map(drop)
    }

    /// Types `text` literally (no key-name interpretation).
    pub fn send_text(&self, text: &str) -> io::Result<()> {
        self.tmux(&["send-keys", "-t", &self.target, "-l", text])
            .map(drop)
    }

    /// The visible screen, one line per row, attributes dropped.
    pub fn capture_pane(&self) -> io::Result<String> {
        self.tmux(&["capture-pane", "-p", "-t", &self.target])
    }

    /// The scrollback history followed by the visible screen.
    pub fn capture_all(&self) -> io::Result<String> {
        self.tmux(&["capture-pane", "-p", "-S", "-", "-t", &self.target])
    }

    /// Waits until the visible screen contains `text`; returns that screen.
    pub fn wait_for(&self, text: &str, timeout: Duration) -> Result<String, String> {
        self.wait_until(timeout, |screen| screen.contains(text))
            .map_err(|e| format!("waiting for {text:?}: {e}"))
    }

    /// Waits until the history or the visible screen contains `text`: for output
    /// that may already have scrolled away.
    pub fn wait_for_in_history(&self, text: &str, timeout: Duration) -> Result<String, String> {
        let started = Instant::now();
        loop {
            let all = self.capture_all().map_err(|e| e.to_string())?;
            if all.contains(text) {
                return Ok(all);
            }
            if started.elapsed() >= timeout {
                return Err(format!(
                    "waiting for {text:?} timed out after {timeout:?}; history and screen:\n{all}"
                ));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until `ready` holds for the visible screen; returns that screen. The
    /// error shows the last screen seen, which is what a failing test needs to be
    /// understood.
    pub fn wait_until(
        &self,
        timeout: Duration,
        ready: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let started = Instant::now();
        loop {
            let screen = self.capture_pane().map_err(|e| e.to_string())?;
            if ready(&screen) {
                return Ok(screen);
            }
            if started.elapsed() >= timeout {
                return Err(format!("timed out after {timeout:?}; screen:\n{screen}"));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Resizes the terminal (the program gets SIGWINCH).
    pub fn resize(&self, cols: u16, rows: u16) -> io::Result<()> {
        self.tmux(&[
            "resize-window",
            "-t",
            &self.target,
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ])
        .map(drop)
    }

    /// The pane's title (what OSC 0/2 from the program sets).
    pub fn pane_title(&self) -> io::Result<String> {
        let title = self.tmux(&["display-message", "-p", "-t", &self.target, "#{pane_title}"])?;
        Ok(title.trim_end_matches('\n').to_string())
    }

    /// The contents of every paste buffer, concatenated (with `set-clipboard on`, an
    /// OSC 52 clipboard write from the program lands in one). Empty when there are none.
    pub fn buffers(&self) -> io::Result<String> {
        let names = self.tmux(&["list-buffers", "-F", "#{buffer_name}"])?;
        let mut all = String::new();
        for name in names.lines().filter(|n| !n.is_empty()) {
            all.push_str(&self.tmux(&["show-buffer", "-b", name])?);
            all.push('\n');
        }
        Ok(all)
    }

    /// The pid of the pane's program.
    pub fn pane_pid(&self) -> io::Result<i32> {
        let pid = self.tmux(&["display-message", "-p", "-t", &self.target, "#{pane_pid}"])?;
        pid.trim()
            .parse()
            .map_err(|e| io::Error::other(format!("pane_pid {pid:?}: {e}")))
    }

    /// The program's exit status once it has exited (`None` while it runs).
    pub fn exit_status(&self) -> io::Result<Option<i32>> {
        let status = self.tmux(&[
            "display-message",
            "-p",
            "-t",
            &self.target,
            "#{pane_dead} #{pane_dead_status}",
        ])?;
        let mut fields = status.split_whitespace();
        match (fields.next(), fields.next()) {
            (Some("1"), Some(code)) => Ok(code.parse().ok()),
            _ => Ok(None),
        }
    }

    /// Waits for the program to exit; returns its exit status.
    pub fn wait_exit(&self, timeout: Duration) -> Result<i32, String> {
        let started = Instant::now();
        loop {
            if let Some(code) = self.exit_status().map_err(|e| e.to_string())? {
                return Ok(code);
            }
            if started.elapsed() >= timeout {
                let screen = self.capture_pane().unwrap_or_default();
                return Err(format!(
                    "program still running after {timeout:?}; screen:\n{screen}"
                ));
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for TmuxTerminal {
    fn drop(&mut self) {
        // Hangs up the pane's program too; an error means the server is gone.
        let _ = self.command().arg("kill-server").output();
    }
}

fn check(output: Output, what: &str) -> io::Result<String> {
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(io::Error::other(format!(
            "tmux {what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}
