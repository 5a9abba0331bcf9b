//! The tool definitions `tools/list` returns: names, descriptions and input schemas of
//! `bash`, `read_artifact`, the job tools and the file tools.

use std::sync::Arc;

use rmcp::handler::server::common::schema_for_input;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};

use super::args::{
    BashArgs, JobListArgs, JobOutputArgs, JobSendArgs, JobStatusArgs, JobStopArgs, JobWaitArgs,
    ReadArtifactArgs,
};
use super::{BASH_TOOL, READ_ARTIFACT_TOOL};
use crate::server::engine::DEFAULT_ARTIFACT_LINES;

pub(super) fn tool_definitions(profile_description: &str) -> anyhow::Result<Vec<Tool>> {
    let bash_schema = schema_for_input::<BashArgs>()
        .map_err(|error| anyhow::anyhow!("bash tool schema: {error}"))?;
    let read_schema = with_defaults(
        schema_for_input::<ReadArtifactArgs>()
            .map_err(|error| anyhow::anyhow!("read_artifact tool schema: {error}"))?
            .as_ref(),
        &[
            ("offset", serde_json::json!(0)),
            ("limit", serde_json::json!(DEFAULT_ARTIFACT_LINES)),
        ],
    );

    // The backend's description says how this server runs commands (shell,
    // timeouts, how much output is kept, where the rest goes), once each.
    let mut bash_description = String::from(
        "Run a shell command and return its output (stdout and stderr interleaved) and exit \
         status. The structured result has exit_code, timed_out, truncated, artifact and more.",
    );
    let profile_description = profile_description.trim();
    if !profile_description.is_empty() {
        bash_description.push('\n');
        bash_description.push_str(profile_description);
    }

    let job_tool = |name: &'static str,
                    title: &'static str,
                    description: &'static str,
                    schema: Result<Arc<JsonObject>, String>,
                    read_only: bool|
     -> anyhow::Result<Tool> {
        let schema = schema.map_err(|error| anyhow::anyhow!("{name} tool schema: {error}"))?;
        Ok(Tool::new(name, description, schema)
            .with_title(title)
            .with_annotations(
                ToolAnnotations::new()
                    .read_only(read_only)
                    .destructive(!read_only)
                    .idempotent(read_only)
                    .open_world(false),
            ))
    };
    let str_err = |e: &dyn std::fmt::Display| e.to_string();
    let jobs = [
        job_tool(
            "job_status",
            "A background job's state",
            "The record of a background job started with `bash` and `background: true`: state (running, ready, exited, killed, timed_out, lost), exit_code, pid, cursor (where new output will start), log_path, and its sandbox.",
            schema_for_input::<JobStatusArgs>().map_err(|e| str_err(&e)),
            true,
        )?,
        job_tool(
            "job_wait",
            "Wait for a background job to end",
            "Wait until a background job ends (at most `timeout` seconds, default 60) and answer with its exit_code and last lines; `timed_out: true` when it still runs.",
            schema_for_input::<JobWaitArgs>().map_err(|e| str_err(&e)),
            true,
        )?,
        job_tool(
            "job_output",
            "Read a background job's output",
            "Read the output of a background job started with `bash` and `background: true`: from `cursor` (the `next` of the previous answer; exact, nothing lost or repeated), waiting up to `wait` seconds for new output; or its last `tail` lines; or, for a `pty` job, its `screen` as text rows.",
            schema_for_input::<JobOutputArgs>().map_err(|e| str_err(&e)),
            true,
        )?,
        job_tool(
            "job_send",
            "Type into a background job",
            "Send `text` and then `keys` (Enter, Tab, Esc, Up, Down, C-c, ...) to a background job started with `pty: true` (a REPL, a full-screen program) or `stdin: true`; answers with what it printed in the next `wait_ms` (default 500).",
            schema_for_input::<JobSendArgs>().map_err(|e| str_err(&e)),
            false,
        )?,
        job_tool(
            "job_stop",
            "Stop a background job",
            "Stop a background job and its whole process tree (TERM, then KILL after a grace period); answers with its last output.",
            schema_for_input::<JobStopArgs>().map_err(|e| str_err(&e)),
            false,
        )?,
        job_tool(
            "job_list",
            "List background jobs",
            "List the running background jobs (with `all: true`, finished ones too): id, name, state (running, ready, exited, killed, timed_out, lost), pid and command.",
            schema_for_input::<JobListArgs>().map_err(|e| str_err(&e)),
            true,
        )?,
    ];
    let mut tools = vec![
        Tool::new(BASH_TOOL, bash_description, bash_schema)
            .with_title("Run a shell command")
            .with_annotations(
                ToolAnnotations::new()
                    .read_only(false)
                    .destructive(true)
                    .idempotent(false)
                    .open_world(true),
            ),
        Tool::new(
            READ_ARTIFACT_TOOL,
            format!(
                "Read lines of an artifact: the complete output of a `bash` run whose shown \
                 output was cut (named artifact://N in the notice). `offset` is the 0-based \
                 first line (default 0), `limit` the number of lines (default \
                 {DEFAULT_ARTIFACT_LINES})."
            ),
            read_schema,
        )
        .with_title("Read a saved command output")
        .with_annotations(
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        ),
    ];
    tools.extend(jobs);
    Ok(tools)
}

/// The file tools' definitions; `reads` and `writes` say what this profile's sandbox
/// lets them read and write.
pub(super) fn file_tool_definitions(
    (reads, writes): &(String, String),
) -> anyhow::Result<Vec<Tool>> {
    use crate::toolbox::args::{
        EditArgs, GLOB_DEFAULT_RESULTS, GREP_DEFAULT_RESULTS, GlobArgs, GrepArgs, READ_PAGE_LINES,
        ReadArgs, WriteArgs,
    };
    let policy = |writing: bool| {
        let mut lines: Vec<&str> = vec![reads.trim()];
        if writing {
            lines.push(writes.trim());
        }
        lines.retain(|l| !l.is_empty());
        lines.join(" ")
    };
    let with_policy = |text: String, writing: bool| {
        let policy = policy(writing);
        if policy.is_empty() {
            text
        } else {
            format!("{text}\n{policy}")
        }
    };
    let schema = |name: &str, s: Result<Arc<JsonObject>, String>| {
        s.map_err(|error| anyhow::anyhow!("{name} tool schema: {error}"))
    };
    let str_err = |e: &dyn std::fmt::Display| e.to_string();
    let annotations = |read_only: bool, idempotent: bool| {
        ToolAnnotations::new()
            .read_only(read_only)
            .destructive(!read_only)
            .idempotent(idempotent)
            .open_world(false)
    };
    let defaults = |schema: Arc<JsonObject>, values: &[(&str, serde_json::Value)]| {
        with_defaults(&schema, values)
    };
    use serde_json::json;
    let page = READ_PAGE_LINES;
    let budget = crate::toolbox::TIME_BUDGET.as_secs();
    Ok(vec![
        Tool::new(
            "read",
            with_policy(format!(
                "Read a text file as numbered lines (as `cat -n` numbers them), at most {page} lines per call: `offset` is the 0-based first line, and while lines are left the answer gives `next_offset`. Long lines are cut with a marker. Images (PNG, JPEG, GIF, WebP) come back as images; other binary files are described (type, size), never dumped. Paths are absolute or relative to the server's directory."
            ), false),
            defaults(
                schema("read", schema_for_input::<ReadArgs>().map_err(|e| str_err(&e)))?,
                &[("offset", json!(0)), ("limit", json!(READ_PAGE_LINES))],
            ),
        )
        .with_title("Read a file")
        .with_annotations(annotations(true, true)),
        Tool::new(
            "grep",
            with_policy(format!(
                "Search file contents for a regular expression (ripgrep's engine, in-process) in a file or a directory tree. Skips what ripgrep skips: files ignored by .gitignore (inside a git work tree) or .ignore, `.git`, binary files. `output_mode`: `files` (default, the matching files), `lines` (`path:line:text`, with `context` lines around) or `count` (matching lines per file). At most `limit` results (default 500) and {budget} s of searching: the answer says when it stopped early."
            ), false),
            defaults(
                schema("grep", schema_for_input::<GrepArgs>().map_err(|e| str_err(&e)))?,
                &[
                    ("case_insensitive", json!(false)),
                    ("context", json!(0)),
                    ("output_mode", json!("files")),
                    ("limit", json!(GREP_DEFAULT_RESULTS)),
                ],
            ),
        )
        .with_title("Search file contents")
        .with_annotations(annotations(true, true)),
        Tool::new(
            "glob",
            with_policy(format!(
                "Find files by path pattern under a directory, newest first: `**/*.rs` (any depth), `src/*.ts` (one level), `*.{{json,toml}}`. Ignore-aware like `grep`. At most `limit` paths (default 500, the newest) and {budget} s of walking: the answer says when more matched."
            ), false),
            defaults(
                schema("glob", schema_for_input::<GlobArgs>().map_err(|e| str_err(&e)))?,
                &[("limit", json!(GLOB_DEFAULT_RESULTS))],
            ),
        )
        .with_title("Find files by name")
        .with_annotations(annotations(true, true)),
        Tool::new(
            "edit",
            with_policy(
                "Replace an exact piece of a file: `old_string` must occur exactly once (or set `replace_all`); a missing or ambiguous match is refused with the count, and nothing changes. Line endings (CRLF), a byte-order mark and bytes that are not UTF-8 are kept. `read` the file first: old_string is the text without the line numbers."
                    .to_string(),
                true,
            ),
            defaults(
                schema("edit", schema_for_input::<EditArgs>().map_err(|e| str_err(&e)))?,
                &[("replace_all", json!(false))],
            ),
        )
        .with_title("Edit a file")
        .with_annotations(annotations(false, false)),
        Tool::new(
            "write",
            with_policy(
                "Create a file, or replace one whole, with `content`; missing parent directories are created. A replaced file keeps its mode and is swapped in atomically."
                    .to_string(),
                true,
            ),
            (*schema("write", schema_for_input::<WriteArgs>().map_err(|e| str_err(&e)))?).clone(),
        )
        .with_title("Write a file")
        .with_annotations(annotations(false, true)),
    ])
}

/// `schema` with each named property's `default` set (schemars writes `null` for an
/// optional argument, which tells a client nothing about what it gets).
pub(super) fn with_defaults(
    schema: &JsonObject,
    defaults: &[(&str, serde_json::Value)],
) -> JsonObject {
    let mut schema = schema.clone();
    if let Some(properties) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        for (name, value) in defaults {
            if let Some(property) = properties
                .get_mut(*name)
                .and_then(serde_json::Value::as_object_mut)
            {
                property.insert("default".into(), value.clone());
            }
        }
    }
    schema
}
