//! The small decision stages of the pipeline (timeout, mode), each a pure
//! function of its inputs so `explain` can show exactly what `run` will do.

use crate::config::profile::{PtyMode, TimeoutCfg};
use crate::request::{Mode, ModeChoice};

/// Timeout: requested (or the default) clamped to `[1, max]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeout {
    pub effective: u64,
    pub requested: i64,
    pub notice: Option<String>,
}

pub fn clamp_timeout(requested: Option<i64>, cfg: &TimeoutCfg) -> Timeout {
    let max = cfg.max.clamp(1, 3600);
    let req = requested.unwrap_or(cfg.default.min(i64::MAX as u64) as i64);
    let effective = req.clamp(1, max as i64) as u64;
    let notice = (effective as i64 != req).then(|| {
        format!("Timeout clamped to {effective}s (requested {req}s; allowed range 1-{max}s).")
    });
    Timeout {
        effective,
        requested: req,
        notice,
    }
}

/// Mode: print or PTY.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ModeDecision {
    pub mode: Mode,
    /// Why, for `explain`.
    pub reasons: Vec<String>,
    pub notice: Option<String>,
}

/// `needs_terminal`: the program the command starts when it is one that needs a
/// terminal (an editor, a pager, a REPL): with agentbash itself on a terminal, `auto`
/// gives it one whatever the profile's `pty.mode`.
pub fn decide_mode(
    choice: ModeChoice,
    profile_mode: PtyMode,
    no_pty_env: bool,
    stdin_tty: bool,
    stdout_tty: bool,
    needs_terminal: Option<&str>,
) -> ModeDecision {
    let mut reasons = Vec::new();
    let (mode, notice) = match choice {
        ModeChoice::Print => {
            reasons.push("print forced (--mode print / --no-pty)".into());
            (Mode::Print, None)
        }
        ModeChoice::Pty if no_pty_env => {
            reasons.push("PTY forced but AGENTBASH_NO_PTY=1 overrides it".into());
            (
                Mode::Print,
                Some(
                    "PTY requested but disabled by AGENTBASH_NO_PTY; ran without a terminal".into(),
                ),
            )
        }
        ModeChoice::Pty => {
            reasons.push("PTY forced (--mode pty / --pty)".into());
            (Mode::Pty, None)
        }
        ModeChoice::Auto => {
            let wanted = match (profile_mode, needs_terminal) {
                (PtyMode::On, _) => "profile pty.mode = \"on\"".to_string(),
                (_, Some(p)) => format!("`{p}` needs a terminal (whatever pty.mode)"),
                _ => "profile pty.mode = \"off\"".to_string(),
            };
            let checks = [
                (
                    profile_mode == PtyMode::On || needs_terminal.is_some(),
                    wanted.as_str(),
                    wanted.as_str(),
                ),
                (
                    !no_pty_env,
                    "AGENTBASH_NO_PTY is not 1",
                    "AGENTBASH_NO_PTY=1",
                ),
                (stdin_tty, "stdin is a terminal", "stdin is not a terminal"),
                (
                    stdout_tty,
                    "stdout is a terminal",
                    "stdout is not a terminal",
                ),
            ];
            let mut all = true;
            for (ok, yes, no) in checks {
                reasons.push(format!("auto: {}", if ok { yes } else { no }));
                all &= ok;
            }
            (if all { Mode::Pty } else { Mode::Print }, None)
        }
    };
    ModeDecision {
        mode,
        reasons,
        notice,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        let cfg = TimeoutCfg::default();
        assert_eq!(clamp_timeout(None, &cfg).effective, 300);
        assert_eq!(clamp_timeout(Some(5), &cfg).notice, None);
        let t = clamp_timeout(Some(99999), &cfg);
        assert_eq!(t.effective, 3600);
        assert_eq!(
            t.notice.as_deref(),
            Some("Timeout clamped to 3600s (requested 99999s; allowed range 1-3600s).")
        );
        assert_eq!(clamp_timeout(Some(0), &cfg).effective, 1);
        assert_eq!(clamp_timeout(Some(-5), &cfg).effective, 1);
    }

    #[test]
    fn modes() {
        use ModeChoice::*;
        let d = |c, p, n, i, o| decide_mode(c, p, n, i, o, None).mode;
        assert_eq!(d(Auto, PtyMode::On, false, true, true), Mode::Pty);
        assert_eq!(d(Auto, PtyMode::On, false, true, false), Mode::Print);
        assert_eq!(d(Auto, PtyMode::Off, false, true, true), Mode::Print);
        assert_eq!(d(Auto, PtyMode::On, true, true, true), Mode::Print);
        assert_eq!(d(Pty, PtyMode::Off, false, false, false), Mode::Pty);
        assert_eq!(d(Pty, PtyMode::Off, true, false, false), Mode::Print);
        assert_eq!(d(Print, PtyMode::On, false, true, true), Mode::Print);
    }
}
