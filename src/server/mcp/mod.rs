//! `agentbash mcp`: a Model Context Protocol server on stdio (docs/PROTOCOL.md).
//!
//! Stock MCP clients (desktop, IDE and CLI agents) get `bash`, whose text content is
//! the result's `text` and whose structured content is the whole result (with
//! `background: true`, it starts a job instead), `read_artifact`, which pages through
//! the full output of a run that was cut, and the job tools `job_status`, `job_wait`,
//! `job_output`, `job_send`, `job_stop` and `job_list`; with the toolbox (`--toolbox`,
//! `mcp.toolbox`), the file tools `read`, `grep`, `glob`, `edit` and `write`
//! (`crate::toolbox`), under the same sandbox, guard and redaction as `bash`. The
//! interceptor routes a `bash` command only to a tool that exists: this server's own,
//! or one the call declares.
//! This module speaks the protocol (through the official SDK, `rmcp`) and nothing
//! else: running commands is the [`Backend`]'s job, on a blocking thread.
//!
//! Three things the protocol gives us that a plain call would not:
//! - progress: when the client put a `progressToken` in `_meta`, the output is sent
//!   as `notifications/progress` (message = new output) while the command runs;
//! - cancellation: `notifications/cancelled` for a request sets that run's cancel flag;
//! - EOF on stdin (the client went away) sets every running call's cancel flag, so
//!   the server exits promptly instead of waiting for long commands. SIGTERM, SIGINT
//!   and SIGHUP are handled as that same EOF: every call is cancelled and answered,
//!   and the server exits 0, as `agentbash rpc` does;
//! - elicitation: a command the approval policy asks about is put to the person
//!   behind a client that declared the `elicitation` capability, as a form with one
//!   boolean, `remember` — through an `elicitation/create` request on protocols before
//!   2026-07-28, and as an `input_required` result the client answers by calling
//!   again on 2026-07-28 and later (which forbid server-to-client requests).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;

use super::backend::Backend;
use super::mcp_stdio;

mod approval;
mod args;
mod handler;
mod progress;
mod tools;

pub use handler::McpServer;

const BASH_TOOL: &str = "bash";
const READ_ARTIFACT_TOOL: &str = "read_artifact";
/// The job tools, each answered by [`Backend::job`] with the request of the same name.
const JOB_TOOLS: [&str; 6] = [
    "job_status",
    "job_wait",
    "job_output",
    "job_send",
    "job_stop",
    "job_list",
];
/// What this server offers for background launches, declared to the interceptor so
/// its background rules point at `bash` with `background: true`.
const OWN_TOOL_FOR_BACKGROUND: &str = "job";
/// The file tools, served with the toolbox.
const FILE_TOOLS: [&str; 5] = crate::toolbox::TOOLS;

/// A progress message carries at most this much of the newest output: progress is for
/// watching a run, the result carries the output, and a client that reads slowly must
/// not make the server hold (or send) megabytes.
const PROGRESS_MESSAGE_MAX_BYTES: usize = 16 * 1024;

/// How long a finished call waits for its last progress notifications to be written
/// before answering anyway (a client that stopped reading must not wedge the call).
const PROGRESS_DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Serve MCP on stdin/stdout until the client closes stdin, or a stop signal
/// (SIGTERM, SIGINT, SIGHUP) arrives; then cancel and answer every call, and return.
///
/// Must run inside a Tokio runtime with IO enabled (`enable_all`). Only protocol
/// messages are written to stdout; diagnostics go to stderr.
pub async fn serve_stdio(backend: Arc<dyn Backend>) -> anyhow::Result<()> {
    let (closed, _) = watch::channel(false);
    let server = McpServer::new(backend, closed.clone())?;
    // Installed before anything runs: from here on a stop signal never kills us.
    let stop = stop_signals()?;
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    // stdin → line filter → rmcp → one writer of whole lines → stdout.
    let (to_rmcp, rmcp_in) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (errors, error_lines) = tokio::sync::mpsc::channel(16);
    // A stop signal ends the filter, which drops rmcp's input: rmcp sees EOF, and
    // the shutdown is the one EOF on stdin makes.
    let filter = tokio::spawn(async move {
        tokio::select! {
            () = mcp_stdio::filter_input(stdin, to_rmcp, errors) => {}
            () = stop => {}
        }
    });
    let writer = tokio::spawn(mcp_stdio::write_output(from_rmcp, error_lines, stdout));
    let transport = (EofSignal::new(rmcp_in, closed), rmcp_out);
    let served = match server.serve(transport).await {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|error| anyhow::anyhow!("MCP server task failed: {error}")),
        // The client went away before (or while) initializing: nothing to clean up.
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(error) => Err(anyhow::anyhow!("MCP initialization failed: {error}")),
    };
    // rmcp has closed its output: let the last lines reach stdout.
    filter.abort();
    let _ = tokio::time::timeout(PROGRESS_DRAIN_TIMEOUT, writer).await;
    served
}

/// Resolves at the first SIGTERM, SIGINT or SIGHUP.
fn stop_signals() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    // tokio's handlers are this process's code: the commands it spawns reset them.
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        crate::process::signals::note_handler(sig);
    }
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut hangup = signal(SignalKind::hangup())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
            _ = hangup.recv() => {}
        }
    })
}

/// Buffer of each in-process pipe around rmcp.
const PIPE_BYTES: usize = 64 * 1024;

/// The input request key of the approval question in an `input_required` result.
const APPROVAL_INPUT: &str = "approval";

/// Stdin that announces its EOF (or a read error) on a watch channel, so running
/// calls can be cancelled as soon as the client has gone.
struct EofSignal<R> {
    inner: R,
    closed: watch::Sender<bool>,
}

impl<R> EofSignal<R> {
    fn new(inner: R, closed: watch::Sender<bool>) -> Self {
        Self { inner, closed }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EofSignal<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let wants_bytes = buf.remaining() > 0;
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        let at_end = match &poll {
            Poll::Ready(Ok(())) => wants_bytes && buf.filled().len() == before,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if at_end {
            this.closed.send_replace(true);
        }
        poll
    }
}

#[cfg(test)]
mod tests {
    use super::args::{BashArgs, ReadArtifactArgs, parse_arguments};
    use super::progress::{ProgressBuffer, keep_tail};
    use super::tools::tool_definitions;
    use super::*;
    use crate::server::backend::BashCall;
    use crate::server::engine::DEFAULT_ARTIFACT_LINES;
    use rmcp::model::JsonObject;

    fn args(value: serde_json::Value) -> Option<JsonObject> {
        match value {
            serde_json::Value::Object(map) => Some(map),
            _ => None,
        }
    }

    #[test]
    fn bash_schema_describes_every_parameter() -> anyhow::Result<()> {
        let tools = tool_definitions("profile line")?;
        let bash = tools
            .iter()
            .find(|tool| tool.name == BASH_TOOL)
            .ok_or_else(|| anyhow::anyhow!("no bash tool"))?;
        let properties = bash
            .input_schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .ok_or_else(|| anyhow::anyhow!("no properties"))?;
        for name in [
            "command", "timeout", "cwd", "head", "tail", "env", "session",
        ] {
            let description = properties
                .get(name)
                .and_then(|p| p.get("description"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default();
            assert!(!description.is_empty(), "{name} has no description");
        }
        assert_eq!(
            bash.input_schema.get("required"),
            Some(&serde_json::json!(["command"]))
        );
        assert!(
            bash.description
                .as_deref()
                .is_some_and(|d| d.contains("profile line"))
        );
        Ok(())
    }

    #[test]
    fn read_artifact_states_its_real_page_size() -> anyhow::Result<()> {
        let tools = tool_definitions("")?;
        let read = tools
            .iter()
            .find(|tool| tool.name == READ_ARTIFACT_TOOL)
            .ok_or_else(|| anyhow::anyhow!("no read_artifact tool"))?;
        let limit = &read.input_schema["properties"]["limit"];
        assert_eq!(limit["default"], serde_json::json!(DEFAULT_ARTIFACT_LINES));
        let page = format!("Default {DEFAULT_ARTIFACT_LINES} ");
        assert!(
            limit["description"]
                .as_str()
                .is_some_and(|d| d.contains(&page))
        );
        Ok(())
    }

    #[test]
    fn artifact_ids_accept_numbers_and_urls() {
        let cases = [
            (serde_json::json!({"id": 3}), Some("3")),
            (serde_json::json!({"id": "3"}), Some("3")),
            (serde_json::json!({"id": "artifact://12"}), Some("12")),
            (serde_json::json!({"id": " artifact://7 "}), Some("7")),
            (serde_json::json!({"id": "artifact://"}), None),
            (serde_json::json!({"id": "../etc/passwd"}), None),
            (serde_json::json!({"id": -1}), None),
            (serde_json::json!({"id": true}), None),
            (serde_json::json!({}), None),
        ];
        for (input, expected) in cases {
            let resolved =
                parse_arguments::<ReadArtifactArgs>(READ_ARTIFACT_TOOL, args(input.clone()))
                    .and_then(|a| a.id.resolve());
            assert_eq!(resolved.ok().as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn argument_errors_name_the_problem() {
        let missing = parse_arguments::<BashArgs>(BASH_TOOL, args(serde_json::json!({})));
        let message = missing.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("missing field `command`"), "{message}");

        let unknown = parse_arguments::<BashArgs>(
            BASH_TOOL,
            args(serde_json::json!({"command": "true", "timeout_s": 3})),
        );
        let message = unknown.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("unknown field `timeout_s`"), "{message}");

        let bad_env = parse_arguments::<BashArgs>(
            BASH_TOOL,
            args(serde_json::json!({"command": "true", "env": {"A": 1}})),
        );
        assert!(bad_env.is_err());

        let bad_id = parse_arguments::<ReadArtifactArgs>(
            READ_ARTIFACT_TOOL,
            args(serde_json::json!({"id": [1]})),
        );
        let message = bad_id.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("artifact://3"), "{message}");
    }

    #[test]
    fn numbers_may_come_as_strings() -> anyhow::Result<()> {
        let parsed: BashArgs = parse_arguments(
            BASH_TOOL,
            args(serde_json::json!({"command": "ls", "timeout": "5", "head": " 10 ", "tail": 3})),
        )?;
        assert_eq!(
            (parsed.timeout, parsed.head, parsed.tail),
            (Some(5), Some(10), Some(3))
        );
        // Negative, like the CLI's --timeout: clamped with a notice naming it.
        for timeout in [serde_json::json!(-5), serde_json::json!(" -5")] {
            let parsed: BashArgs = parse_arguments(
                BASH_TOOL,
                args(serde_json::json!({"command": "ls", "timeout": timeout})),
            )?;
            assert_eq!(parsed.timeout, Some(-5));
        }
        let parsed: ReadArtifactArgs = parse_arguments(
            READ_ARTIFACT_TOOL,
            args(serde_json::json!({"id": "3", "offset": "3", "limit": "20"})),
        )?;
        assert_eq!((parsed.offset, parsed.limit), (Some(3), Some(20)));
        for (field, value) in [
            ("timeout", serde_json::json!("five")),
            ("timeout", serde_json::json!(1.5)),
            ("timeout", serde_json::json!("-")),
            ("head", serde_json::json!("1.5")),
            ("tail", serde_json::json!(true)),
        ] {
            let mut call = serde_json::json!({"command": "ls"});
            call[field] = value.clone();
            let message = parse_arguments::<BashArgs>(BASH_TOOL, args(call))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                message.contains(&format!("`{field}` must be a whole number")),
                "{field}={value}: {message}"
            );
        }
        Ok(())
    }

    #[test]
    fn nulls_mean_defaults() -> anyhow::Result<()> {
        let parsed: BashArgs = parse_arguments(
            BASH_TOOL,
            args(serde_json::json!({"command": "ls", "timeout": null, "env": null})),
        )?;
        let call = BashCall::from(parsed);
        assert_eq!(call.command, "ls");
        assert_eq!(call.timeout, None);
        assert!(call.env.is_empty());
        Ok(())
    }

    #[test]
    fn progress_keeps_the_newest_output_on_a_char_boundary() {
        let mut text = "é".repeat(10);
        keep_tail(&mut text, 5);
        assert!(text.starts_with('…'));
        assert!(text.ends_with("éé"));
        assert!(text.len() <= 5 + '…'.len_utf8() + 1);

        let buffer = ProgressBuffer::default();
        buffer.push("a");
        buffer.push("");
        buffer.push("bc");
        buffer.finish();
        assert_eq!(buffer.take(), ("abc".to_owned(), 3, true));
    }
}
