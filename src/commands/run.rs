//! `agentbash run` and `agentbash explain`.

use crate::cli::{FormatArg, ModeArg, RunArgs, StderrArg};
use crate::config::profile::Format;
use crate::pipeline::{RunRequest, execute};
use crate::process::CancelToken;
use crate::render::json::JsonRenderer;
use crate::render::text::TextRenderer;
use crate::render::{Renderer, err, out};
use crate::request::ModeChoice;
use std::io::IsTerminal;
use std::sync::OnceLock;

static SIGNAL_TOKEN: OnceLock<CancelToken> = OnceLock::new();

extern "C" fn on_signal(sig: libc::c_int) {
    if let Some(t) = SIGNAL_TOKEN.get() {
        t.cancel(sig);
    }
}

/// SIGINT/SIGTERM/SIGHUP cancel the run (teardown, then exit 128+N).
pub fn install_signal_handlers(token: &CancelToken) {
    let _ = SIGNAL_TOKEN.set(token.clone());
    // The handler only does an atomic compare-exchange.
    crate::process::signals::on_stop_signals(on_signal);
}

/// `word` as one shell word: as it is when it needs no quoting, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/:@%+=,-".contains(&b));
    if plain {
        word.to_string()
    } else {
        crate::display::quote(word)
    }
}

pub fn run(args: RunArgs, explain: bool) -> i32 {
    let cwd = match std::env::current_dir() {
        Ok(c) => c,
        Err(e) => {
            err(&format!(
                "agentbash: the current directory is not accessible: {e}\n"
            ));
            return crate::exit::FAILURE;
        }
    };
    let profile_spec = args.profile.clone().unwrap_or_else(|| "default".into());
    let profile = match crate::Lookup::new(&cwd).load(&profile_spec) {
        Ok(p) => p,
        Err(e) => {
            crate::render::report_error(&e);
            return crate::exit::FAILURE;
        }
    };
    // `explain` shows them in its own output.
    if !explain {
        super::warn_profile(&profile);
    }
    // `--target NAME`: the command goes there (docs/REMOTE.md); this profile still
    // judges it first.
    let target = match args.target.as_deref().map(super::load_target).transpose() {
        Ok(t) => t,
        Err(code) => return code,
    };
    let stdout_tty = std::io::stdout().is_terminal();
    let req = request(&args, &cwd, explain, stdout_tty);
    let format = match (args.format, args.json, profile.profile.render.format) {
        (_, true, _) => FormatArg::Json,
        (Some(f), _, _) => f,
        (None, _, Format::Json) => FormatArg::Json,
        (None, _, Format::Ndjson) => FormatArg::Ndjson,
        (None, _, Format::Text) => FormatArg::Text,
    };
    if explain {
        return super::explain::explain(&req, &profile, format, target.as_ref());
    }
    if args.stream && format == FormatArg::Json {
        err(
            "agentbash: --stream writes text as it is produced; for JSON, --format ndjson streams output events\n",
        );
        return crate::exit::USAGE;
    }
    let live = if args.stream {
        crate::config::profile::Live::Stream
    } else {
        profile.profile.render.live
    };
    let mut req = req;
    req.live_output =
        format == FormatArg::Ndjson || stdout_tty || live == crate::config::profile::Live::Stream;
    // Only the collapsed preview hides lines (streamed output was all shown).
    let preview = crate::pipeline::Preview::for_profile(&profile.profile.render);
    req.preview = (format == FormatArg::Text
        && stdout_tty
        && !args.expand
        && !args.quiet
        && live != crate::config::profile::Live::Stream)
        .then_some(preview);
    // `artifact show` reads the default profile's store unless told otherwise.
    let profile_flag = match (&target, args.profile.as_deref()) {
        (Some(t), _) => format!(" --target {}", shell_word(&t.name)),
        (None, None | Some("default")) => String::new(),
        (None, Some(p)) => format!(" -p {}", shell_word(p)),
    };
    if target.is_none() {
        crate::process::teardown::set_exclusive_process();
    }
    let token = CancelToken::new();
    install_signal_handlers(&token);
    let p = &profile.profile;
    let mut renderer = renderer(
        &args,
        format,
        p,
        stdout_tty,
        live,
        preview,
        &profile_flag,
        &cwd,
    );
    let result = match &target {
        Some(t) => crate::remote::run::run(t, &req, &profile, &token, renderer.as_mut()),
        None => execute(&req, &profile, &token, &mut |e| renderer.event(e)),
    };
    renderer.finish(&result);
    let _ = out;
    result.agentbash_exit
}

/// The request `run` (or `explain`) makes of its arguments.
fn request(args: &RunArgs, cwd: &std::path::Path, explain: bool, stdout_tty: bool) -> RunRequest {
    let stdin_tty = std::io::stdin().is_terminal();
    let separate = args.stderr == Some(StderrArg::Separate);
    RunRequest {
        command: crate::request::command_from_words(&args.command),
        invoking_dir: cwd.to_path_buf(),
        cwd: args.cwd.clone(),
        timeout: args.timeout,
        head: args.head,
        tail: args.tail,
        mode: match args.mode() {
            // Only print mode can keep stderr apart (a terminal is one stream).
            ModeArg::Auto if separate => ModeChoice::Print,
            ModeArg::Auto => ModeChoice::Auto,
            ModeArg::Print => ModeChoice::Print,
            ModeArg::Pty => ModeChoice::Pty,
        },
        tools: args.tools.clone(),
        no_intercept: args.no_intercept,
        env: args.env.clone(),
        session: args.session.clone(),
        stdin: args.stdin,
        stdin_tty,
        stdout_tty,
        live_output: true,
        preview: None,
        stderr_separate: separate,
        sandbox: args.sandbox.map(crate::cli::SandboxArg::mode),
        // On a terminal, the person there answers what the approval policy asks.
        approver: (stdin_tty && stdout_tty && !explain).then(|| {
            crate::request::ApproverRef(std::sync::Arc::new(
                crate::render::prompt::TerminalApprover,
            ))
        }),
    }
}

/// The renderer the format and the terminal call for.
#[allow(clippy::too_many_arguments)]
fn renderer(
    args: &RunArgs,
    format: FormatArg,
    p: &crate::config::profile::Profile,
    stdout_tty: bool,
    live: crate::config::profile::Live,
    preview: crate::pipeline::Preview,
    profile_flag: &str,
    cwd: &std::path::Path,
) -> Box<dyn Renderer> {
    let github = std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true")
        && p.render.ci_annotations != crate::config::profile::CiAnnotations::Never
        || p.render.ci_annotations == crate::config::profile::CiAnnotations::Always;
    match format {
        FormatArg::Json => Box::new(JsonRenderer { ndjson: false }),
        FormatArg::Ndjson => Box::new(JsonRenderer { ndjson: true }),
        FormatArg::Text => Box::new(TextRenderer::new(
            stdout_tty,
            crate::render::color_enabled(args.color, stdout_tty),
            args.quiet,
            args.expand,
            live,
            preview,
            crate::display::escape_controls(profile_flag).into_owned(),
            cwd.display().to_string(),
            github,
        )),
    }
}
