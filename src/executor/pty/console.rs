//! The console: the interactive viewport. The outer terminal goes raw, the command's
//! screen (kept by a `vt100` parser) is drawn in a bordered box below the cursor,
//! changed rows only, at most ~60 times a second, and the terminal is given back as
//! it was, by `Drop` or, on a panic, by a hook installed once per process.

use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::num::NonZeroU16;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::termios::{SetArg, Termios, cfmakeraw, tcgetattr, tcsetattr};
use nix::unistd::isatty;
use unicode_width::UnicodeWidthChar;

use super::engine::PtyError;
use crate::config::kill_key::KillKey;
use crate::process::spawn;

/// Minimum time between two frames (~60 fps).
const FRAME_INTERVAL: Duration = Duration::from_millis(16);

/// The outer terminal's settings while a viewport is up, for the panic hook.
static SAVED_TERMINAL: Mutex<Option<Termios>> = Mutex::new(None);

/// Rows from the real cursor to the viewport's last row, so that the panic
/// hook can put its message below the viewport instead of over it.
static ROWS_BELOW_CURSOR: AtomicU16 = AtomicU16::new(0);

fn saved_terminal() -> std::sync::MutexGuard<'static, Option<Termios>> {
    SAVED_TERMINAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Restores the terminal before the panic message is printed (in raw mode it
/// would be garbled), whether or not unwinding later runs `Console::drop`.
pub(super) fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // try_lock: never deadlock inside a panic.
            let saved = match SAVED_TERMINAL.try_lock() {
                Ok(mut guard) => guard.take(),
                Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner().take(),
                Err(std::sync::TryLockError::WouldBlock) => None,
            };
            if let Some(termios) = saved {
                restore_termios(&termios);
                let mut out = String::from("\x1b[0m\x1b[?25h");
                let below = ROWS_BELOW_CURSOR.load(Ordering::Relaxed);
                if below > 0 {
                    let _ = write!(out, "\x1b[{below}B");
                }
                out.push_str("\r\n");
                let _ = write_stdout(out.as_bytes());
            }
            previous(info);
        }));
    });
}

fn restore_termios(termios: &Termios) {
    // Nothing better to do if this fails: the terminal is probably gone.
    let _ = tcsetattr(io::stdin().as_fd(), SetArg::TCSANOW, termios);
}

/// Writes all of `bytes` to stdout, bypassing Rust's buffered (and locked)
/// `Stdout`, which a panic hook must not touch.
fn write_stdout(mut bytes: &[u8]) -> io::Result<()> {
    let stdout = io::stdout();
    while !bytes.is_empty() {
        match nix::unistd::write(stdout.as_fd(), bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::POLLOUT)];
                let _ = poll(&mut fds, PollTimeout::from(50u16));
            }
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}

/// Rows and columns of the outer terminal (24 × 80 when it cannot say).
fn outer_size() -> (u16, u16) {
    spawn::window_size(std::io::stdout().as_fd())
        .filter(|&(rows, cols)| rows > 0 && cols > 0)
        .unwrap_or((24, 80))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    /// Viewport rows including the header and footer lines.
    height: u16,
    width: u16,
    inner_rows: u16,
    inner_cols: u16,
}

impl Layout {
    /// 80% of the terminal's rows (at least 5, at most all), full width.
    fn for_terminal((rows, cols): (u16, u16)) -> Self {
        let height = u16::try_from(u32::from(rows) * 4 / 5).unwrap_or(u16::MAX);
        let height = height.max(5).min(rows).max(3);
        let width = cols.max(3);
        Layout {
            height,
            width,
            inner_rows: height - 2,
            inner_cols: width - 2,
        }
    }
}

fn non_zero(value: u16) -> NonZeroU16 {
    NonZeroU16::new(value).unwrap_or(NonZeroU16::MIN)
}

/// The outer terminal while a viewport is up: raw mode, the command's screen
/// and what is currently drawn. Dropping it restores the terminal.
pub(super) struct Console {
    parser: vt100::Parser,
    outer: (u16, u16),
    layout: Layout,
    title: String,
    footer: String,
    state: String,
    running: bool,
    /// Viewport row the real cursor is on, to find the top again.
    cursor_row: u16,
    dirty: bool,
    force_full: bool,
    last_draw: Option<Instant>,
    /// What each viewport row shows now, so unchanged rows are skipped.
    drawn: Vec<String>,
    line: String,
    frame: String,
}

impl Console {
    pub(super) fn enter(title: &str, kill_key: KillKey) -> Result<Self, PtyError> {
        let stdin = io::stdin();
        let stdout = io::stdout();
        for (fd, name) in [(stdin.as_fd(), "stdin"), (stdout.as_fd(), "stdout")] {
            match isatty(fd) {
                Ok(true) => {}
                Ok(false) => {
                    let message = format!("{name} is not a terminal");
                    return Err(PtyError::NotATerminal(io::Error::other(message)));
                }
                Err(errno) => return Err(PtyError::NotATerminal(errno.into())),
            }
        }
        let saved = tcgetattr(stdin.as_fd()).map_err(|e| PtyError::RawMode(e.into()))?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        ROWS_BELOW_CURSOR.store(0, Ordering::Relaxed);
        // Text still in Rust's buffer must land before the viewport does.
        let _ = stdout.lock().flush();
        // Saved before switching so that a panic from here on restores it.
        *saved_terminal() = Some(saved);
        if let Err(errno) = tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &raw) {
            saved_terminal().take();
            return Err(PtyError::RawMode(errno.into()));
        }
        let outer = outer_size();
        let layout = Layout::for_terminal(outer);
        let title = crate::display::escape_controls(title).into_owned();
        let mut console = Console {
            parser: vt100::Parser::new(non_zero(layout.inner_rows), non_zero(layout.inner_cols), 0),
            outer,
            layout,
            title,
            footer: format!(" {kill_key} force-kill · input forwarded "),
            state: "running".to_string(),
            running: true,
            cursor_row: 0,
            dirty: true,
            force_full: true,
            last_draw: None,
            drawn: Vec::new(),
            line: String::new(),
            frame: String::new(),
        };
        let mut reserve = String::new();
        console.reserve(&mut reserve);
        let _ = write_stdout(reserve.as_bytes());
        console.draw(Instant::now());
        Ok(console)
    }

    pub(super) fn inner_size(&self) -> (u16, u16) {
        (self.layout.inner_rows, self.layout.inner_cols)
    }

    /// Makes room for the viewport below the cursor (scrolling once if the
    /// cursor is near the bottom) and leaves the cursor on its top-left cell.
    fn reserve(&mut self, out: &mut String) {
        let below = self.layout.height - 1;
        out.push_str("\x1b[?25l\r");
        for _ in 0..below {
            out.push('\n');
        }
        if below > 0 {
            let _ = write!(out, "\x1b[{below}A");
        }
        self.cursor_row = 0;
        self.force_full = true;
        self.dirty = true;
    }

    /// Where the program has its cursor: zero-based (row, col) of its screen.
    pub(super) fn cursor(&self) -> (u16, u16) {
        self.parser.screen().cursor_position()
    }

    /// The program asked for application cursor keys (DECCKM).
    pub(super) fn application_cursor(&self) -> bool {
        self.parser.screen().application_cursor()
    }

    pub(super) fn process(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
        self.dirty = true;
    }

    /// Follows a change of the outer terminal's size. Returns the new inner
    /// size for the PTY.
    pub(super) fn follow_resize(&mut self) -> Option<(u16, u16)> {
        let outer = outer_size();
        if outer == self.outer {
            return None;
        }
        let mut out = String::from("\x1b[?25l");
        if outer.1 < self.outer.1 {
            // A narrower terminal may re-wrap the old full-width lines, and no
            // relative move finds the viewport again: start on a clean screen.
            out.push_str("\x1b[H\x1b[2J");
        } else {
            out.push('\r');
            if self.cursor_row > 0 {
                let _ = write!(out, "\x1b[{}A", self.cursor_row);
            }
            out.push_str("\x1b[J");
        }
        self.outer = outer;
        self.layout = Layout::for_terminal(outer);
        self.reserve(&mut out);
        let _ = write_stdout(out.as_bytes());
        self.parser.screen_mut().set_size(
            non_zero(self.layout.inner_rows),
            non_zero(self.layout.inner_cols),
        );
        Some(self.inner_size())
    }

    pub(super) fn next_frame(&self) -> Option<Instant> {
        if !self.dirty {
            return None;
        }
        Some(
            self.last_draw
                .map_or_else(Instant::now, |t| t + FRAME_INTERVAL),
        )
    }

    pub(super) fn draw_if_due(&mut self, now: Instant) {
        if self.next_frame().is_some_and(|due| now >= due) {
            self.draw(now);
        }
    }

    /// Draws the viewport in place: up to its top, each changed row, then the
    /// cursor where the inner program has it.
    fn draw(&mut self, now: Instant) {
        self.last_draw = Some(now);
        self.dirty = false;
        let Layout {
            height,
            width,
            inner_rows,
            inner_cols,
        } = self.layout;
        let screen = self.parser.screen();
        self.frame.clear();
        self.frame.push_str("\x1b[?25l\r");
        if self.cursor_row > 0 {
            let _ = write!(self.frame, "\x1b[{}A", self.cursor_row);
        }
        self.drawn.resize(usize::from(height), String::new());
        for row in 0..height {
            self.line.clear();
            if row == 0 {
                let label = header_label(&self.title, &self.state, width);
                border_line(&mut self.line, '┌', '┐', &label, width);
            } else if row == height - 1 {
                border_line(&mut self.line, '└', '┘', &self.footer, width);
            } else {
                render_row(screen, row - 1, inner_cols, &mut self.line);
            }
            let slot = &mut self.drawn[usize::from(row)];
            if self.force_full || *slot != self.line {
                self.frame.push('\r');
                self.frame.push_str(&self.line);
                std::mem::swap(slot, &mut self.line);
            }
            if row + 1 < height {
                // CUD never scrolls, unlike a newline.
                self.frame.push_str("\x1b[B");
            }
        }
        self.force_full = false;
        let (cursor_row, cursor_col) = screen.cursor_position();
        if self.running
            && !screen.hide_cursor()
            && cursor_row < inner_rows
            && cursor_col < inner_cols
        {
            let target = cursor_row + 1;
            let up = height - 1 - target;
            if up > 0 {
                let _ = write!(self.frame, "\x1b[{up}A");
            }
            let _ = write!(self.frame, "\x1b[{}G\x1b[?25h", cursor_col + 2);
            self.cursor_row = target;
        } else {
            self.cursor_row = height - 1;
        }
        ROWS_BELOW_CURSOR.store(height - 1 - self.cursor_row, Ordering::Relaxed);
        // A terminal that cannot be written to cannot be drawn on; the run
        // itself goes on and its output still reaches the caller.
        let _ = write_stdout(self.frame.as_bytes());
    }

    /// Draws the final frame with `state` in the header and hands the
    /// terminal back.
    pub(super) fn finish(&mut self, state: &str) {
        self.state = state.to_string();
        self.running = false;
        self.draw(Instant::now());
        self.leave();
    }

    /// Puts the cursor below the viewport, shows it and restores the
    /// terminal's settings. Idempotent, and a no-op after the panic hook ran.
    fn leave(&mut self) {
        let Some(saved) = saved_terminal().take() else {
            return;
        };
        let mut out = String::new();
        let down = self.layout.height - 1 - self.cursor_row.min(self.layout.height - 1);
        if down > 0 {
            let _ = write!(out, "\x1b[{down}B");
        }
        out.push_str("\r\n\x1b[0m\x1b[?25h");
        let _ = write_stdout(out.as_bytes());
        restore_termios(&saved);
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.leave();
    }
}

fn display_width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `text` cut to `max` columns, with `…` when something was cut.
fn fit(text: &str, max: usize) -> String {
    if display_width(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// ` Console <title> [<state>] `, the title shortened first when narrow.
fn header_label(title: &str, state: &str, width: u16) -> String {
    let budget = usize::from(width).saturating_sub(3);
    let fixed = display_width(" Console  [] ") + display_width(state);
    let title = fit(title, budget.saturating_sub(fixed));
    format!(" Console {title} [{state}] ")
}

/// `┌─ label ───┐` (or └ ┘) exactly `width` columns wide.
fn border_line(out: &mut String, left: char, right: char, label: &str, width: u16) {
    let inner = usize::from(width).saturating_sub(3);
    let label = fit(label, inner);
    out.push(left);
    out.push('─');
    out.push_str("\x1b[1m");
    out.push_str(&label);
    out.push_str("\x1b[0m");
    for _ in display_width(&label)..inner {
        out.push('─');
    }
    out.push(right);
}

/// The attributes a cell is drawn with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pen {
    fg: vt100::Color,
    bg: vt100::Color,
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
    inverse: bool,
}

impl Pen {
    fn of(cell: &vt100::Cell) -> Self {
        Pen {
            fg: cell.fgcolor(),
            bg: cell.bgcolor(),
            bold: cell.bold(),
            dim: cell.dim(),
            italic: cell.italic(),
            underline: cell.underline(),
            inverse: cell.inverse(),
        }
    }

    /// One SGR that resets and then sets everything this pen has.
    fn write_sgr(&self, out: &mut String) {
        out.push_str("\x1b[0");
        for (on, code) in [
            (self.bold, ";1"),
            (self.dim, ";2"),
            (self.italic, ";3"),
            (self.underline, ";4"),
            (self.inverse, ";7"),
        ] {
            if on {
                out.push_str(code);
            }
        }
        write_color(out, self.fg, 30, 90, 38);
        write_color(out, self.bg, 40, 100, 48);
        out.push('m');
    }
}

fn write_color(out: &mut String, color: vt100::Color, base: u8, bright: u8, extended: u8) {
    let _ = match color {
        vt100::Color::Default => Ok(()),
        vt100::Color::Idx(n) if n < 8 => write!(out, ";{}", base + n),
        vt100::Color::Idx(n) if n < 16 => write!(out, ";{}", bright + n - 8),
        vt100::Color::Idx(n) => write!(out, ";{extended};5;{n}"),
        vt100::Color::Rgb(r, g, b) => write!(out, ";{extended};2;{r};{g};{b}"),
    };
}

/// `│cells│` for one row of the inner screen, exactly `cols + 2` columns.
fn render_row(screen: &vt100::Screen, row: u16, cols: u16, out: &mut String) {
    out.push('│');
    let mut pen = Pen::default();
    for col in 0..cols {
        match screen.cell(row, col) {
            Some(cell) if cell.is_wide_continuation() => {}
            Some(cell) => {
                let cell_pen = Pen::of(cell);
                if cell_pen != pen {
                    cell_pen.write_sgr(out);
                    pen = cell_pen;
                }
                if cell.has_contents() {
                    out.push_str(cell.contents());
                } else {
                    out.push(' ');
                }
            }
            None => out.push(' '),
        }
    }
    if pen != Pen::default() {
        out.push_str("\x1b[0m");
    }
    out.push('│');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewport_is_80_percent_of_the_rows_but_at_least_5() {
        let height = |rows| Layout::for_terminal((rows, 80)).height;
        assert_eq!(height(30), 24);
        assert_eq!(height(50), 40);
        assert_eq!(height(6), 5);
        assert_eq!(height(4), 4);
        assert_eq!(height(1), 3);
        let layout = Layout::for_terminal((30, 100));
        assert_eq!((layout.inner_rows, layout.inner_cols), (22, 98));
    }

    fn visible_width(line: &str) -> usize {
        let mut plain = String::new();
        let mut in_escape = false;
        for c in line.chars() {
            match (in_escape, c) {
                (false, '\x1b') => in_escape = true,
                (true, c) if c.is_ascii_alphabetic() => in_escape = false,
                (true, _) => {}
                (false, c) => plain.push(c),
            }
        }
        display_width(&plain)
    }

    #[test]
    fn border_lines_are_exactly_as_wide_as_the_terminal() {
        for width in [3u16, 10, 24, 40, 80, 200] {
            for title in [
                "ls",
                "cargo test --workspace -- --nocapture",
                "日本語のコマンド",
            ] {
                let mut line = String::new();
                border_line(
                    &mut line,
                    '┌',
                    '┐',
                    &header_label(title, "running", width),
                    width,
                );
                assert_eq!(
                    visible_width(&line),
                    usize::from(width),
                    "{title} at {width}"
                );
            }
        }
        let mut line = String::new();
        border_line(&mut line, '┌', '┐', &header_label("make", "exit 0", 40), 40);
        assert!(line.contains(" Console make [exit 0] "), "{line}");
    }

    #[test]
    fn rows_are_drawn_cell_for_cell() {
        let mut parser = vt100::Parser::new(non_zero(2), non_zero(10), 0);
        parser.process("日本\x1b[31mred\x1b[0m!".as_bytes());
        let mut line = String::new();
        render_row(parser.screen(), 0, 10, &mut line);
        assert_eq!(visible_width(&line), 12, "{line:?}");
        assert!(line.starts_with("│日本\x1b[0;31mred\x1b[0m!"), "{line:?}");
    }
}
