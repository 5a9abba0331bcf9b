//! The one place for byte-size formatting, counts with their unit ("1 second",
//! "3 processes") and the notices built from them.

use crate::process::KilledProcess;

/// `n` and its unit, singular for exactly one: `count(1, "second")` is "1 second",
/// `count(2, "process")` is "2 processes". Every count printed with a unit uses it.
pub fn count(n: u64, unit: &str) -> String {
    if n == 1 {
        return format!("1 {unit}");
    }
    let es = ["s", "x", "z", "sh", "ch"]
        .iter()
        .any(|e| unit.ends_with(e));
    format!("{n} {unit}{}", if es { "es" } else { "s" })
}

/// Background processes shown in a notice; the rest are counted.
const SHOWN_PROCESSES: usize = 5;

/// What a caller does instead of leaving a process behind, said wherever one was
/// stopped: the CLI, rpc and MCP callers each have their way to start a job.
pub const KEEP_RUNNING_HINT: &str = "To keep a process running, start it as a job: `agentbash job start …` (MCP: `bash` with `background: true`; rpc: `job_start`)";

/// The notice naming the background processes a run stopped, and how to keep one
/// running next time: after the command ended (`stopped_run` false: they outlived
/// it), or with a timed-out or cancelled command.
pub fn background_killed(killed: &[KilledProcess], stopped_run: bool) -> Option<String> {
    if killed.is_empty() {
        return None;
    }
    let mut list: Vec<String> = killed
        .iter()
        .take(SHOWN_PROCESSES)
        .map(|k| format!("{} (pid {})", short_command(&k.command), k.pid))
        .collect();
    if killed.len() > SHOWN_PROCESSES {
        list.push(format!("and {} more", killed.len() - SHOWN_PROCESSES));
    }
    let what = count(killed.len() as u64, "background process");
    let list = list.join("; ");
    Some(if stopped_run {
        format!("[Also stopped {what} the command had left running: {list}. {KEEP_RUNNING_HINT}]")
    } else {
        format!("[Stopped {what} the command left running: {list}. {KEEP_RUNNING_HINT}]")
    })
}

/// A command line for one line of a notice: the program by its name, not its path,
/// on one line, at most 80 characters.
fn short_command(command: &str) -> String {
    let flat = command.split_whitespace().collect::<Vec<_>>().join(" ");
    let (program, rest) = flat.split_once(' ').unwrap_or((&flat, ""));
    let program = match program.rsplit_once('/') {
        Some((_, name)) if !name.is_empty() => name,
        _ => program,
    };
    let line = if rest.is_empty() {
        program.to_string()
    } else {
        format!("{program} {rest}")
    };
    if line.chars().count() > 80 {
        line.chars().take(79).collect::<String>() + "…"
    } else {
        line
    }
}

/// `51200` → `50.0KB` (1024-based, one decimal).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1}{}", UNITS[unit])
}

/// Where the full output is, for the end of a notice.
pub fn full_ref(artifact_url: Option<&str>) -> String {
    match artifact_url {
        Some(u) => format!(". Full: {u}"),
        None => ". Full output not saved".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sizes() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(1536), "1.5KB");
        assert_eq!(format_size(1 << 30), "1.0GB");
        assert_eq!(format_size(5 * 1024 * 1024 + 1), "5.0MB");
    }

    #[test]
    fn counts() {
        assert_eq!(count(1, "second"), "1 second");
        assert_eq!(count(0, "second"), "0 seconds");
        assert_eq!(count(2, "line"), "2 lines");
        assert_eq!(count(1, "process"), "1 process");
        assert_eq!(count(3, "background process"), "3 background processes");
    }

    #[test]
    fn background_notice_names_the_first_five() {
        let k = |pid, command: &str| KilledProcess {
            pid,
            command: command.into(),
        };
        assert_eq!(background_killed(&[], false), None);
        let hint = KEEP_RUNNING_HINT;
        assert_eq!(
            background_killed(&[k(12345, "/usr/bin/python3 -m http.server 8765")], false),
            Some(format!(
                "[Stopped 1 background process the command left running: python3 -m http.server 8765 (pid 12345). {hint}]"
            ))
        );
        let many: Vec<_> = (1..=7).map(|p| k(p, "sleep 9")).collect();
        assert_eq!(
            background_killed(&many, true),
            Some(format!(
                "[Also stopped 7 background processes the command had left running: sleep 9 (pid 1); sleep 9 (pid 2); sleep 9 (pid 3); sleep 9 (pid 4); sleep 9 (pid 5); and 2 more. {hint}]"
            ))
        );
        let odd = k(9, "bash -c 'a\nb'");
        assert_eq!(
            background_killed(&[odd], true),
            Some(format!(
                "[Also stopped 1 background process the command had left running: bash -c 'a b' (pid 9). {hint}]"
            ))
        );
    }
}
