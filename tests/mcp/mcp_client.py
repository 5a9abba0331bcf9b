#!/usr/bin/env python3
"""Drive an agentbash MCP server with the official MCP Python SDK (`pip install mcp`).

Usage: mcp_client.py [--toolbox | --only NAME] SERVER_COMMAND [ARGS...]
   e.g. mcp_client.py agentbash mcp --profile default
        mcp_client.py --only session agentbash mcp --profile agent   (the checks whose name has NAME)
        mcp_client.py --toolbox agentbash mcp --toolbox --profile files

The same checks run twice, over stdio, once per way a stock client connects:
  legacy  `ClientSession.initialize()` — the initialize handshake most clients use;
  auto    `mcp.Client` default (SDK 2.x): probes `server/discover`, falls back to initialize.
Checks: server identity, tool list and schemas, `bash` text/structured content/isError,
progress notifications, `read_artifact`, a session keeping ten state changes in a row,
numeric arguments sent as strings (as the
MCP inspector's CLI sends them), tool errors for bad input, client
cancellation (the command's process must die) and that the server keeps serving; the
job tools (bash with background, job_status, job_wait, job_output, job_send, job_stop,
job_list).
With MCP_CHECKS=agent-jobs (a server on a profile extending `agent` with
jobs.background_after = 1), the checks of `run_agent_job_checks` instead.
With MCP_CHECKS=approval (a server on a profile whose approval policy asks before
`touch`), the checks of `run_approval_checks`: the elicitation callback answers each
question (accept, accept with `remember`, decline), over both handshakes, and a client
without the callback is refused; the touched files, in the working directory, say
what ran.

With --toolbox the checks are the file tools' instead (read, grep, glob, edit, write):
run from the server's workspace, under a profile with sandbox workspace-write,
deny_read = ["~/.secrets"] and the variable DEPLOY_TOKEN redacted, whose value is in
the environment as TOOLBOX_SECRET. Fixtures are made in the working directory and
in $HOME.

Ends with the line `N passed, M failed`; exit status 0 only when nothing failed.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable

import anyio

try:
    import mcp
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError as error:  # pragma: no cover - reported to the caller
    print(f"cannot import the MCP Python SDK (pip install mcp): {error}", file=sys.stderr)
    sys.exit(2)

BASH_PARAMS = ["command", "timeout", "cwd", "head", "tail", "env", "session"]


def field(obj: Any, snake: str, camel: str) -> Any:
    """SDK 2.x uses snake_case attributes, 1.x camelCase."""
    if hasattr(obj, snake):
        return getattr(obj, snake)
    return getattr(obj, camel)


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def structured(result: Any) -> dict[str, Any]:
    value = field(result, "structured_content", "structuredContent")
    assert isinstance(value, dict), f"structured content is not an object: {value!r}"
    return value


def is_error(result: Any) -> bool:
    return bool(field(result, "is_error", "isError"))


def read_timeout(seconds: float) -> Any:
    """SDK 2.x takes seconds as a float, 1.x a timedelta."""
    if hasattr(mcp, "Client"):
        return seconds
    from datetime import timedelta

    return timedelta(seconds=seconds)


def server_params(argv: list[str]) -> StdioServerParameters:
    # Keep the caller's environment (the SDK passes only a safe subset by default) so a
    # server under test sees e.g. AGENTBASH_* settings and a temp HOME.
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))


@asynccontextmanager
async def legacy_client(argv: list[str]) -> AsyncIterator[tuple[Any, Any]]:
    async with stdio_client(server_params(argv)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            yield session, init


@asynccontextmanager
async def auto_client(argv: list[str]) -> AsyncIterator[tuple[Any, Any]]:
    async with mcp.Client(server_params(argv)) as client:
        yield client, client


class Suite:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def skip(self, label: str, why: str) -> None:
        self.skipped += 1
        print(f"skip {label}: {why}", flush=True)

    async def check(self, label: str, body: Callable[[], Awaitable[None]]) -> None:
        started = time.monotonic()
        try:
            with anyio.fail_after(60):
                await body()
        except Exception:  # noqa: BLE001 - every failure is reported, none aborts the run
            self.failed += 1
            print(f"FAIL {label}", flush=True)
            traceback.print_exc(file=sys.stdout)
        else:
            self.passed += 1
            print(f"ok   {label} ({time.monotonic() - started:.2f}s)", flush=True)


async def run_checks(suite: Suite, mode: str, client: Any, info: Any, only: str | None) -> None:
    def label(name: str) -> str:
        return f"[{mode}] {name}"

    async def server_identity() -> None:
        server_info = field(info, "server_info", "serverInfo")
        assert server_info is not None, "no serverInfo"
        assert server_info.name == "agentbash", server_info
        assert server_info.version, server_info

    async def tools_listed() -> None:
        listing = await client.list_tools()
        tools = {tool.name: tool for tool in listing.tools}
        assert set(tools) == {"bash", "read_artifact", "job_status", "job_wait", "job_output", "job_send", "job_stop", "job_list"}, sorted(tools)
        bash_schema = field(tools["bash"], "input_schema", "inputSchema")
        properties = bash_schema["properties"]
        for name in BASH_PARAMS:
            assert name in properties, f"bash schema lacks {name}: {sorted(properties)}"
            assert properties[name].get("description"), f"bash.{name} has no description"
        assert bash_schema.get("required") == ["command"], bash_schema.get("required")
        assert properties["env"].get("additionalProperties") == {"type": "string"}, properties["env"]
        assert tools["bash"].description, "bash has no description"
        read_schema = field(tools["read_artifact"], "input_schema", "inputSchema")
        for name in ["id", "offset", "limit"]:
            assert read_schema["properties"][name].get("description"), f"read_artifact.{name}"

    async def echo_hi() -> None:
        result = await client.call_tool("bash", {"command": "echo hi"})
        assert "hi" in text_of(result), text_of(result)
        assert is_error(result) is False, result
        data = structured(result)
        assert data["exit_code"] == 0, data
        assert "hi" in data["text"], data

    async def exit_3() -> None:
        result = await client.call_tool("bash", {"command": "echo before; exit 3"})
        assert is_error(result) is True, result
        assert structured(result)["exit_code"] == 3, structured(result)
        assert "before" in text_of(result), text_of(result)

    async def env_and_cwd() -> None:
        with tempfile.TemporaryDirectory() as directory:
            result = await client.call_tool(
                "bash",
                {"command": 'echo "$GREETING from $(pwd)"', "cwd": directory, "env": {"GREETING": "hello"}},
            )
            assert not is_error(result), text_of(result)
            assert f"hello from {os.path.realpath(directory)}" in text_of(result), text_of(result)

    async def progress() -> None:
        updates: list[tuple[float, float | None, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            updates.append((value, total, message))

        result = await client.call_tool(
            "bash",
            {"command": "for i in 1 2 3 4 5; do echo tick $i; sleep 0.25; done"},
            progress_callback=on_progress,
        )
        assert not is_error(result), text_of(result)
        assert "tick 5" in text_of(result), text_of(result)
        assert len(updates) >= 1, "no progress notification"
        values = [value for value, _, _ in updates]
        assert values == sorted(values) and len(set(values)) == len(values), values
        messages = "".join(message or "" for _, _, message in updates)
        assert "tick 1" in messages, updates

    async def a_lifted_tail_reports_the_producers_failure() -> None:
        result = await client.call_tool(
            "bash", {"command": "perl -e 'print STDERR \"warn\\n\"; print \"$_\\n\" for 1..50; exit 4' | tail -n 2"}
        )
        assert is_error(result), text_of(result)
        data = structured(result)
        assert data["exit_code"] == 4 and data["stripped"] == "| tail -n 2", data
        assert data["output"] == "warn\n49\n50\n", data
        assert data["artifact"], data
        assert "Exit code is perl's; the stripped `| tail -n 2` would have returned 0" in text_of(result), text_of(result)

    async def read_artifact() -> None:
        result = await client.call_tool("bash", {"command": "seq 1 500", "tail": 5})
        assert not is_error(result), text_of(result)
        data = structured(result)
        assert data["truncated"] is True, data
        artifact = data["artifact"]
        assert artifact and artifact["url"].startswith("artifact://"), data
        assert artifact["url"] in text_of(result), text_of(result)
        page = await client.call_tool("read_artifact", {"id": artifact["url"], "offset": 10, "limit": 3})
        assert not is_error(page), text_of(page)
        assert text_of(page).split("\n")[:3] == ["11", "12", "13"], text_of(page)
        assert "Next: offset=13" in text_of(page), text_of(page)
        bare = await client.call_tool("read_artifact", {"id": int(artifact["id"]), "limit": 1})
        assert text_of(bare).split("\n")[0] == "1", text_of(bare)
        past = await client.call_tool("read_artifact", {"id": artifact["url"], "offset": 900})
        assert "past the end" in text_of(past), text_of(past)

    async def numbers_as_strings() -> None:
        # What the MCP inspector's CLI sends: every argument as a string.
        result = await client.call_tool("bash", {"command": "seq 1 50", "head": "2", "timeout": "9"})
        assert not is_error(result), text_of(result)
        data = structured(result)
        assert data["output"] == "1\n2\n" and data["timeout_s"] == 9, data
        page = await client.call_tool("read_artifact", {"id": data["artifact"]["url"], "offset": "48", "limit": "5"})
        assert text_of(page).split("\n")[:2] == ["49", "50"], text_of(page)
        bad = await client.call_tool("bash", {"command": "true", "head": "ten"})
        assert is_error(bad) is True, bad
        assert "`head` must be a whole number" in text_of(bad), text_of(bad)

    async def calls_run_concurrently() -> None:
        results: dict[int, Any] = {}

        async def run(index: int) -> None:
            results[index] = await client.call_tool("bash", {"command": f"sleep 1; echo call {index}"})

        started = time.monotonic()
        async with anyio.create_task_group() as group:
            for index in range(3):
                group.start_soon(run, index)
        elapsed = time.monotonic() - started
        assert elapsed < 2.5, f"3 calls of 1 s took {elapsed:.2f}s: they did not overlap"
        for index in range(3):
            assert f"call {index}" in text_of(results[index]), text_of(results[index])

    async def backend_error_is_tool_error() -> None:
        result = await client.call_tool("bash", {"command": "true", "cwd": "/no/such/dir/agentbash"})
        assert is_error(result) is True, result
        assert "does not exist" in text_of(result), text_of(result)

    async def bad_arguments_are_tool_errors() -> None:
        result = await client.call_tool("bash", {"command": "true", "timeout_s": 5})
        assert is_error(result) is True, result
        assert "unknown field `timeout_s`" in text_of(result), text_of(result)
        result = await client.call_tool("read_artifact", {"id": "../etc/passwd"})
        assert is_error(result) is True, result
        assert "invalid artifact id" in text_of(result), text_of(result)

    async def unknown_tool_is_protocol_error() -> None:
        try:
            result = await client.call_tool("no_such_tool", {})
        except Exception as error:  # noqa: BLE001 - SDK-version-specific error type
            assert "unknown tool" in str(error), error
        else:
            raise AssertionError(f"expected a protocol error, got {result!r}")

    async def cancellation_kills_the_command() -> None:
        with tempfile.TemporaryDirectory() as directory:
            pid_file = os.path.join(directory, "pid")
            started = time.monotonic()
            try:
                # A read timeout makes the SDK send notifications/cancelled.
                await client.call_tool(
                    "bash",
                    {"command": f"echo $$ > {pid_file}; sleep 30; echo survived"},
                    read_timeout_seconds=read_timeout(1.5),
                )
            except Exception:  # noqa: BLE001 - the timeout error type varies by SDK version
                pass
            else:
                raise AssertionError("the call was not cut off by the read timeout")
            assert time.monotonic() - started < 10
            pid = int(open(pid_file).read().strip())
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
                await anyio.sleep(0.05)
            assert not os.path.exists(f"/proc/{pid}"), f"process {pid} still runs after cancellation"
        # And the server still serves.
        result = await client.call_tool("bash", {"command": "echo still here"})
        assert "still here" in text_of(result), text_of(result)

    async def background_job() -> None:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        started = await client.call_tool(
            "bash",
            {"command": f"python3 -m http.server {port}", "background": True, "ready_port": port, "name": f"web-{mode}"},
        )
        assert not is_error(started), text_of(started)
        job = structured(started)["job"]
        assert job["state"] == "ready", job
        assert job["url"] == f"job://{job['id']}", job
        fetched = await client.call_tool("bash", {"command": f"curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/"})
        assert text_of(fetched).strip().startswith("200"), text_of(fetched)
        output = await client.call_tool("job_output", {"job": job["url"], "cursor": 0, "wait": 2})
        data = structured(output)
        assert "GET / HTTP" in data["output"], data
        assert data["cursor"] == data["next"] > 0, data
        status = structured(await client.call_tool("job_status", {"job": job["id"]}))
        assert status["state"] == "ready" and status["log_path"], status
        listed = structured(await client.call_tool("job_list", {}))
        assert any(j["id"] == job["id"] and j["state"] == "ready" for j in listed["jobs"]), listed
        stopped = await client.call_tool("job_stop", {"job": f"web-{mode}"})
        assert structured(stopped)["job"]["state"] == "killed", structured(stopped)
        assert not os.path.exists(f"/proc/{job['pid']}") or open(f"/proc/{job['pid']}/stat").read().split(") ")[1][0] == "Z"

    async def a_background_launch_is_routed_to_the_job_tool() -> None:
        result = await client.call_tool("bash", {"command": "nohup sleep 100 &"})
        assert is_error(result), text_of(result)
        assert "background: true" in text_of(result), text_of(result)
        blocked = structured(result)["blocked"]
        assert blocked["kind"] == "interceptor" and blocked["tool"] == "job", blocked
        assert set(blocked) == {"rule", "tool", "message", "kind"}, blocked

    async def a_guard_refusal_says_so() -> None:
        # Resolves to `/` for the guard; were it ever run, rm refuses `..` and the
        # directory does not exist.
        result = await client.call_tool("bash", {"command": "rm -rf /no-such-dir-agentbash/.."})
        assert is_error(result), text_of(result)
        assert text_of(result).startswith("Refused: "), text_of(result)
        blocked = structured(result)["blocked"]
        assert blocked == {
            "rule": "guard:delete",
            "tool": None,
            "message": "`rm` would recursively delete /",
            "kind": "guard",
        }, blocked

    async def job_send_to_a_stdin_job() -> None:
        started = structured(await client.call_tool("bash", {"command": "cat", "background": True, "stdin": True}))
        job = started["job"]["id"]
        sent = await client.call_tool("job_send", {"job": job, "text": "echo me\n", "wait_ms": 3000})
        assert not is_error(sent), text_of(sent)
        assert structured(sent)["output"] == "echo me\n", structured(sent)
        data = structured(await client.call_tool("job_output", {"job": job, "wait": 5}))
        assert data["output"] == "echo me\n", data
        await client.call_tool("job_stop", {"job": job})

    async def job_wait_for_a_job_to_end() -> None:
        started = structured(await client.call_tool("bash", {"command": "echo done; exit 4", "background": True}))
        job = started["job"]["url"]
        waited = await client.call_tool("job_wait", {"job": job, "timeout": 20})
        data = structured(waited)
        assert data["timed_out"] is False and data["job"]["exit_code"] == 4, data
        assert "done" in text_of(waited), text_of(waited)
        running = structured(await client.call_tool("bash", {"command": "sleep 60", "background": True}))
        data = structured(await client.call_tool("job_wait", {"job": running["job"]["id"], "timeout": 0.2}))
        assert data["timed_out"] is True and data["job"]["state"] == "running", data
        await client.call_tool("job_stop", {"job": running["job"]["id"]})
        finished = structured(await client.call_tool("job_list", {"all": True}))
        assert any(j["url"] == job for j in finished["jobs"]), finished

    async def session_keeps_ten_state_changes() -> None:
        # Each call checks what the one before it changed, then changes one more thing:
        # a directory, a variable, a function, an alias, a virtualenv, `cd` away and
        # back, ... (the same steps as tests/it/sandbox_state.rs).
        # Over a live shell under the profile's sandbox, every change must be saved.
        session = f"state-{mode}-{os.getpid()}"
        steps = [
            ("true", "mkdir -p sub && cd sub"),
            ('[ "${PWD##*/}" = sub ]', "export FOO=1"),
            ('[ "$FOO" = 1 ]', "greet() { echo hello-$1; }"),
            ('[ "$(greet x)" = hello-x ]', "alias ll='echo aliased'"),
            ('[ "$(ll)" = aliased ]', "python3 -m venv --without-pip .venv && . .venv/bin/activate"),
            ('[ "$(command -v python)" = "$PWD/.venv/bin/python" ]', "export BACK=$PWD BAR=2; cd /tmp"),
            ('[ "$PWD" = /tmp ] && [ "$BAR" = 2 ]', 'cd "$BACK"'),
            ('[ "${PWD##*/}" = sub ]', "unset FOO"),
            ('[ -z "${FOO+set}" ]', "deactivate"),
            ('[ -z "${VIRTUAL_ENV-}" ] && [ "$(command -v python)" != "$PWD/.venv/bin/python" ]', "counter=10"),
            ('[ "$counter" = 10 ]', "true"),
        ]
        for n, (check, change) in enumerate(steps):
            command = f"if {check}; then echo ok-{n}; else echo BAD-{n}; fi; {change}"
            result = await client.call_tool("bash", {"command": command, "session": session})
            text = text_of(result)
            assert f"ok-{n}" in text, f"step {n} ({check!r}) did not see the change before it:\n{text}"
            assert not is_error(result), text
            assert "not saved" not in text, text

    async def job_tools_mask_secrets() -> None:
        # Needs a profile whose output.redact names *TOKEN* (the built-in `agent` does).
        secret = f"mcp-secret-value-{os.getpid()}"
        started = await client.call_tool(
            "bash",
            {"command": "echo \"token: $CHECK_TOKEN\"; sleep 30", "background": True,
             "env": {"CHECK_TOKEN": secret}, "name": f"masked-{mode}"},
        )
        job = structured(started)["job"]["id"]
        output = await client.call_tool("job_output", {"job": job, "wait": 5})
        listed = await client.call_tool("job_list", {})
        stopped = await client.call_tool("job_stop", {"job": job})
        for result in [started, output, listed, stopped]:
            shown = text_of(result) + repr(structured(result))
            assert secret not in shown, shown
        assert "token: [REDACTED:CHECK_TOKEN]" in structured(output)["output"], structured(output)

    # Checks that need a particular profile: run only when `--only` names them.
    if only:
        for name, body in [("job tools mask secrets", job_tools_mask_secrets)]:
            if only in name:
                await suite.check(label(name), body)

    async def no_file_tools_without_the_toolbox() -> None:
        try:
            result = await client.call_tool("read", {"path": "x"})
        except Exception as error:  # noqa: BLE001 - SDK-version-specific error type
            assert "unknown tool `read`" in str(error) and "--toolbox" in str(error), error
        else:
            raise AssertionError(f"expected a protocol error, got {result!r}")

    for name, body in [
        ("no file tools without --toolbox", no_file_tools_without_the_toolbox),
        ("bash background: a server started, read and stopped", background_job),
        ("session keeps ten state changes", session_keeps_ten_state_changes),
        ("background launches point at bash background", a_background_launch_is_routed_to_the_job_tool),
        ("a guard refusal is blocked with kind guard", a_guard_refusal_says_so),
        ("job_send to a stdin job", job_send_to_a_stdin_job),
        ("job_wait for a job to end", job_wait_for_a_job_to_end),
        ("server identity", server_identity),
        ("tools/list: both tools, every bash parameter described", tools_listed),
        ("bash `echo hi`", echo_hi),
        ("bash `exit 3` is an error", exit_3),
        ("bash env and cwd", env_and_cwd),
        ("progress notifications while running", progress),
        ("read_artifact by url and by number", read_artifact),
        ("a stdout-only | tail is lifted: the producer's exit code", a_lifted_tail_reports_the_producers_failure),
        ("numeric arguments sent as strings", numbers_as_strings),
        ("three calls run concurrently", calls_run_concurrently),
        ("backend error becomes a tool error", backend_error_is_tool_error),
        ("bad arguments become tool errors", bad_arguments_are_tool_errors),
        ("unknown tool is a protocol error", unknown_tool_is_protocol_error),
    ]:
        if only and only not in name:
            continue
        await suite.check(label(name), body)
    name = "client cancellation kills the command"
    if only and only not in name:
        return
    if hasattr(mcp, "Client"):
        await suite.check(label(name), cancellation_kills_the_command)
    else:
        suite.skip(label(name), "SDK 1.x does not send notifications/cancelled when a call times out")


async def run_agent_job_checks(suite: Suite, mode: str, client: Any, info: Any) -> None:
    """For a server on a profile that extends `agent` with `jobs.background_after = 1`
    (MCP_CHECKS=agent-jobs): calls handed to a job keep their sandbox, calls that end in
    time leave no job behind, and the `bash` tool tells the model about idle_timeout."""

    def label(name: str) -> str:
        return f"[{mode}] {name}"

    async def description_states_idle_timeout() -> None:
        listing = await client.list_tools()
        bash = next(tool for tool in listing.tools if tool.name == "bash")
        assert "without `timeout` that neither prints nor uses CPU for 60s is stopped" in bash.description, bash.description

    async def calls_that_end_in_time_leave_no_job() -> None:
        for i in range(7):
            result = await client.call_tool("bash", {"command": f"echo call {i}"})
            data = structured(result)
            assert data["output"] == f"call {i}\n" and "job" not in data, data
            assert data["sandbox"]["mode"] == "workspace-write", data
        listed = structured(await client.call_tool("job_list", {"all": True}))
        assert not [j for j in listed["jobs"] if j["command"].startswith("echo call")], listed

    async def a_handed_off_call_keeps_its_sandbox() -> None:
        with tempfile.TemporaryDirectory(prefix="agentbash-outside-") as outside:
            probe = os.path.join(outside, "probe")
            result = await client.call_tool("bash", {"command": f"touch {probe}; sleep 30"})
            data = structured(result)
            assert not is_error(result), text_of(result)
            assert data["job"]["url"].startswith("job://"), data
            assert data["sandbox"]["mode"] == "workspace-write", data
            if data["sandbox"]["engine"] != "none" and not os.path.exists(probe):
                assert "[sandbox: writing" in text_of(result), text_of(result)
            await client.call_tool("job_stop", {"job": data["job"]["url"]})

    for name, body in [
        ("bash description states jobs.idle_timeout", description_states_idle_timeout),
        ("calls that end within background_after leave no job", calls_that_end_in_time_leave_no_job),
        ("a handed-off call keeps the sandbox object and notice", a_handed_off_call_keeps_its_sandbox),
    ]:
        await suite.check(label(name), body)


FILE_TOOL_PARAMS = {
    "read": (["path", "offset", "limit"], ["path"]),
    "grep": (["pattern", "path", "glob", "case_insensitive", "context", "output_mode", "limit"], ["pattern"]),
    "glob": (["pattern", "path", "limit"], ["pattern"]),
    "edit": (["path", "old_string", "new_string", "replace_all"], ["new_string", "old_string", "path"]),
    "write": (["path", "content"], ["content", "path"]),
}


def blocks(result: Any, kind: str) -> list[Any]:
    return [block for block in result.content if getattr(block, "type", None) == kind]


async def run_toolbox_checks(suite: Suite, mode: str, client: Any, info: Any) -> None:
    work = os.getcwd()
    home = os.environ["HOME"]
    secret = os.environ["TOOLBOX_SECRET"]
    base = os.path.join(work, f"t-{mode}")
    os.makedirs(base, exist_ok=True)
    rel = lambda name: f"t-{mode}/{name}"  # noqa: E731 - paths relative to the server's directory

    def put(name: str, data: bytes) -> str:
        path = os.path.join(base, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(data)
        return path

    def label(name: str) -> str:
        return f"[{mode}] toolbox: {name}"

    async def tools_listed() -> None:
        listing = await client.list_tools()
        tools = {tool.name: tool for tool in listing.tools}
        assert set(tools) == {"bash", "read_artifact", "job_status", "job_wait", "job_output", "job_send", "job_stop", "job_list", *FILE_TOOL_PARAMS}, sorted(tools)
        for name, (params, required) in FILE_TOOL_PARAMS.items():
            schema = field(tools[name], "input_schema", "inputSchema")
            for param in params:
                assert schema["properties"][param].get("description"), f"{name}.{param} has no description"
            assert sorted(schema.get("required", [])) == required, (name, schema.get("required"))
            description = tools[name].description or ""
            assert "deny_read" in description, (name, description)
            if name in ("edit", "write"):
                assert "Sandbox workspace-write" in description, (name, description)
        assert "~/.secrets" in (tools["read"].description or ""), tools["read"].description

    async def read_pages() -> None:
        put("lines.txt", "".join(f"row {n}\n" for n in range(1, 2501)).encode())
        first = await client.call_tool("read", {"path": rel("lines.txt")})
        assert not is_error(first), text_of(first)
        assert text_of(first).startswith("     1\trow 1\n     2\trow 2\n"), text_of(first)[:80]
        data = structured(first)
        assert data["lines"] == 2000 and data["next_offset"] == 2000 and data["kind"] == "text", {k: v for k, v in data.items() if k != "content"}
        # Numbers as strings, as the MCP inspector's CLI sends them.
        last = await client.call_tool("read", {"path": rel("lines.txt"), "offset": "2000", "limit": "1000"})
        data = structured(last)
        assert data["lines"] == 500 and data["next_offset"] is None and data["total_lines"] == 2500, {k: v for k, v in data.items() if k != "content"}
        assert text_of(last).startswith("  2001\trow 2001\n"), text_of(last)[:40]

    async def image_content() -> None:
        import base64

        png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(64))
        put("pixel.png", png)
        result = await client.call_tool("read", {"path": rel("pixel.png")})
        assert not is_error(result), text_of(result)
        images = blocks(result, "image")
        assert len(images) == 1, result.content
        assert field(images[0], "mime_type", "mimeType") == "image/png", images[0]
        assert base64.b64decode(images[0].data) == png
        assert structured(result)["kind"] == "image", structured(result)

    async def binary_described() -> None:
        put("archive.zip", b"PK\x03\x04" + b"\x00" * 64 + b"HIDDEN-PAYLOAD")
        result = await client.call_tool("read", {"path": rel("archive.zip")})
        assert not is_error(result), text_of(result)
        assert "binary file (ZIP archive" in text_of(result), text_of(result)
        assert "HIDDEN-PAYLOAD" not in text_of(result) and not blocks(result, "image")

    async def grep_and_glob() -> None:
        put("src/a.py", b"import os\nprint('needle')\n")
        put("src/b.py", b"needle = 1\n")
        put("docs/c.md", b"no match here\n")
        found = await client.call_tool("grep", {"pattern": "needle", "path": rel("src"), "output_mode": "lines"})
        assert not is_error(found), text_of(found)
        assert text_of(found) == f"{rel('src/a.py')}:2:print('needle')\n{rel('src/b.py')}:1:needle = 1\n", text_of(found)
        assert structured(found)["matched_files"] == 2, structured(found)
        listed = await client.call_tool("glob", {"pattern": "**/*.py", "path": base})
        assert sorted(structured(listed)["files"]) == [rel("src/a.py"), rel("src/b.py")], structured(listed)

    async def edit_keeps_bytes() -> None:
        path = put("crlf.txt", b"\xef\xbb\xbfone\r\ntwo \xe9\r\nthree\r\n")
        result = await client.call_tool("edit", {"path": rel("crlf.txt"), "old_string": "three", "new_string": "3\n4", "replace_all": "false"})
        assert not is_error(result), text_of(result)
        assert open(path, "rb").read() == b"\xef\xbb\xbfone\r\ntwo \xe9\r\n3\r\n4\r\n"
        assert structured(result)["line_endings"] == "crlf", structured(result)

    async def edit_refusals() -> None:
        path = put("twice.txt", b"same\nsame\n")
        ambiguous = await client.call_tool("edit", {"path": rel("twice.txt"), "old_string": "same", "new_string": "other"})
        assert is_error(ambiguous) is True, ambiguous
        assert "matches 2 times" in text_of(ambiguous), text_of(ambiguous)
        missing = await client.call_tool("edit", {"path": rel("twice.txt"), "old_string": "absent", "new_string": "x"})
        assert is_error(missing) is True and "(0 matches)" in text_of(missing), text_of(missing)
        assert open(path, "rb").read() == b"same\nsame\n"

    async def deny_read() -> None:
        secrets = os.path.join(home, ".secrets")
        os.makedirs(secrets, exist_ok=True)
        with open(os.path.join(secrets, f"key-{mode}"), "w") as out:
            out.write("needle TOP-SECRET-CONTENT\n")
        direct = await client.call_tool("read", {"path": f"~/.secrets/key-{mode}"})
        assert is_error(direct) is True, direct
        assert "deny_read" in text_of(direct) and "TOP-SECRET" not in text_of(direct), text_of(direct)
        for tool, arguments in [
            ("grep", {"pattern": "needle", "path": home, "output_mode": "lines"}),
            ("glob", {"pattern": "**/*", "path": home}),
        ]:
            wide = await client.call_tool(tool, arguments)
            assert not is_error(wide), text_of(wide)
            shown = text_of(wide) + repr(structured(wide))
            assert "TOP-SECRET" not in shown and ".secrets" not in shown and f"key-{mode}" not in shown, shown

    async def write_outside_refused() -> None:
        outside = os.path.join(os.path.dirname(work), f"outside-{mode}.txt")
        result = await client.call_tool("write", {"path": outside, "content": "x"})
        assert is_error(result) is True, result
        assert "[sandbox workspace-write: writing" in text_of(result), text_of(result)
        assert not os.path.exists(outside)
        created = await client.call_tool("write", {"path": rel("new/dir/file.txt"), "content": "hello\n"})
        assert not is_error(created), text_of(created)
        assert structured(created) == {"path": rel("new/dir/file.txt"), "created": True, "size": 6, "lines": 1}, structured(created)

    async def redaction() -> None:
        put("app.env", f"DEPLOY_TOKEN={secret}\n".encode())
        for tool, arguments in [
            ("read", {"path": rel("app.env")}),
            ("grep", {"pattern": "DEPLOY", "path": rel("app.env"), "output_mode": "lines"}),
        ]:
            result = await client.call_tool(tool, arguments)
            shown = text_of(result) + repr(structured(result))
            assert secret not in shown, shown
            assert "[REDACTED:DEPLOY_TOKEN]" in text_of(result), text_of(result)

    async def bash_routes_to_the_file_tools() -> None:
        put("notes.txt", b"hi\n")
        result = await client.call_tool("bash", {"command": f"cat {rel('notes.txt')}"})
        assert is_error(result) is True, text_of(result)
        assert "Use the `read` tool" in text_of(result), text_of(result)
        assert structured(result)["blocked"]["tool"] == "read", structured(result)["blocked"]
        searched = await client.call_tool("bash", {"command": "grep -rn hi ."})
        assert "`grep` tool" in text_of(searched), text_of(searched)

    for name, body in [
        ("tools/list: the five file tools, every parameter described", tools_listed),
        ("read pages with next_offset", read_pages),
        ("read of an image is image content", image_content),
        ("read of a binary describes it", binary_described),
        ("grep lines and glob", grep_and_glob),
        ("edit keeps CRLF, BOM and non-UTF-8 bytes", edit_keeps_bytes),
        ("edit refuses ambiguous and missing matches with the count", edit_refusals),
        ("deny_read: refused by name, skipped by wider searches", deny_read),
        ("write outside the workspace is refused", write_outside_refused),
        ("file contents are redacted", redaction),
        ("bash `cat` is routed to read", bash_routes_to_the_file_tools),
    ]:
        await suite.check(label(name), body)


def elicitation_callback(asked: list[Any], answers: list[str]) -> Callable[..., Any]:
    """An elicitation callback that records each question in `asked` and answers with
    the next of `answers` ("once", "always", "decline"; "decline" when none is left)."""
    import mcp.types as types

    async def on_elicit(context: Any, params: Any) -> Any:
        asked.append(params)
        answer = answers.pop(0) if answers else "decline"
        if answer == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"remember": answer == "always"})

    return on_elicit


async def run_approval_checks(suite: Suite, argv: list[str]) -> None:
    """The approval policy's questions, put to this client's user by elicitation."""
    asked: list[Any] = []
    answers: list[str] = []
    on_elicit = elicitation_callback(asked, answers)

    @asynccontextmanager
    async def legacy() -> AsyncIterator[Any]:
        async with stdio_client(server_params(argv)) as (read, write):
            async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
                await session.initialize()
                yield session

    @asynccontextmanager
    async def auto() -> AsyncIterator[Any]:
        async with mcp.Client(server_params(argv), elicitation_callback=on_elicit) as client:
            yield client

    def ran(name: str) -> bool:
        return os.path.exists(os.path.join(os.getcwd(), name))

    async def checks(mode: str, client: Any) -> None:
        session = f"mcp-{mode}"

        async def accept_once() -> None:
            asked.clear()
            answers[:] = ["once"]
            name = f"{mode}-once.txt"
            result = await client.call_tool("bash", {"command": f"cd . && touch {name}"})
            assert not is_error(result), text_of(result)
            assert ran(name), f"{name} was not made"
            assert len(asked) == 1, asked
            message = asked[0].message
            assert f"$ cd . && touch {name}" in message and f"touch {name}  (rule `touch` asks)" in message, message
            schema = field(asked[0], "requested_schema", "requestedSchema")
            schema = schema if isinstance(schema, dict) else schema.model_dump(by_alias=True, exclude_none=True)
            assert list(schema["properties"]) == ["remember"], schema
            assert schema["properties"]["remember"]["type"] == "boolean", schema
            notices = structured(result)["notices"]
            assert any("Approved once by the MCP client's user" in n for n in notices), notices

        async def decline_refuses() -> None:
            asked.clear()
            answers[:] = ["decline"]
            name = f"{mode}-declined.txt"
            result = await client.call_tool("bash", {"command": f"touch {name}"})
            assert is_error(result) is True, text_of(result)
            assert not ran(name), f"{name} was made"
            blocked = structured(result)["blocked"]
            assert blocked["kind"] == "approval" and blocked["rule"] == "touch", blocked
            assert "declined it" in text_of(result), text_of(result)

        async def remember_for_the_session() -> None:
            asked.clear()
            answers[:] = ["always"]
            first = f"{mode}-always.txt"
            result = await client.call_tool("bash", {"command": f"touch {first}", "session": session})
            assert not is_error(result), text_of(result)
            assert ran(first) and len(asked) == 1, asked
            description = field(asked[0], "requested_schema", "requestedSchema")
            description = description if isinstance(description, dict) else description.model_dump(by_alias=True, exclude_none=True)
            assert f"session {session}" in description["properties"]["remember"]["description"], description
            # The session's next `touch` is not asked about.
            second = f"{mode}-remembered.txt"
            result = await client.call_tool("bash", {"command": f"touch {second}", "session": session})
            assert not is_error(result), text_of(result)
            assert ran(second) and len(asked) == 1, asked

        for name, body in [
            ("approval: accept runs it once", accept_once),
            ("approval: decline refuses it", decline_refuses),
            ("approval: accept with remember, for the session", remember_for_the_session),
        ]:
            await suite.check(f"[{mode}] {name}", body)

    modes: list[tuple[str, Callable[[], Any]]] = [("legacy", legacy)]
    if hasattr(mcp, "Client"):
        modes.append(("auto", auto))
    for mode, connect in modes:
        try:
            async with connect() as client:
                await checks(mode, client)
        except Exception:  # noqa: BLE001 - a failed connection is one failure
            suite.failed += 1
            print(f"FAIL [{mode}] connect or shutdown", flush=True)
            traceback.print_exc(file=sys.stdout)

    async def without_elicitation() -> None:
        async with stdio_client(server_params(argv)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("bash", {"command": "touch no-elicitation.txt"})
                assert is_error(result) is True, text_of(result)
                assert not ran("no-elicitation.txt")
                text = text_of(result)
                assert "needs approval (rule `touch` asks)" in text, text
                assert "did not declare the elicitation capability" in text, text

    await suite.check("[legacy] approval: a client without elicitation is refused, naming the rule", without_elicitation)


async def run_approval_target_checks(suite: Suite, argv: list[str]) -> None:
    """A remote target's approval questions (MCP_CHECKS=approval-target: `mcp --target`
    whose target's policy asks before `touch`): put to this client's user by
    elicitation on the legacy handshake; on 2026-07-28, which asks only before a call
    runs, refused with the reason."""
    asked: list[Any] = []
    answers: list[str] = []
    on_elicit = elicitation_callback(asked, answers)

    def ran(name: str) -> bool:
        return os.path.exists(os.path.join(os.getcwd(), name))

    async def legacy_accept_and_decline() -> None:
        async with stdio_client(server_params(argv)) as (read, write):
            async with ClientSession(read, write, elicitation_callback=on_elicit) as client:
                await client.initialize()
                answers[:] = ["once"]
                result = await client.call_tool("bash", {"command": "touch target-once.txt"})
                assert not is_error(result), text_of(result)
                assert ran("target-once.txt")
                assert len(asked) == 1, asked
                assert "touch target-once.txt  (rule `touch` asks)" in asked[0].message, asked[0].message
                asked.clear()
                answers[:] = ["decline"]
                result = await client.call_tool("bash", {"command": "touch target-declined.txt"})
                assert is_error(result) is True, text_of(result)
                assert not ran("target-declined.txt")
                assert len(asked) == 1 and "declined it" in text_of(result), text_of(result)

    await suite.check("[legacy] approval through a target: accept runs it, decline refuses it", legacy_accept_and_decline)

    async def modern_is_told_why() -> None:
        asked.clear()
        async with mcp.Client(server_params(argv), elicitation_callback=on_elicit) as client:
            result = await client.call_tool("bash", {"command": "touch target-modern.txt"})
            assert is_error(result) is True, text_of(result)
            assert not ran("target-modern.txt")
            assert not asked, asked
            assert "came up only once the call ran" in text_of(result), text_of(result)

    if hasattr(mcp, "Client"):
        await suite.check("[auto] approval through a target: refused, saying why it could not be asked", modern_is_told_why)


async def main(argv: list[str]) -> int:
    toolbox = argv[:1] == ["--toolbox"]
    if toolbox:
        argv = argv[1:]
    only = None
    if argv[:1] == ["--only"] and len(argv) > 2:
        only, argv = argv[1], argv[2:]
    if os.environ.get("MCP_CHECKS") in ("approval", "approval-target"):
        suite = Suite()
        if os.environ.get("MCP_CHECKS") == "approval":
            await run_approval_checks(suite, argv)
        else:
            await run_approval_target_checks(suite, argv)
        print(f"{suite.passed} passed, {suite.failed} failed", flush=True)
        return 0 if suite.failed == 0 else 1
    if toolbox:
        checks = run_toolbox_checks
    elif os.environ.get("MCP_CHECKS") == "agent-jobs":
        checks = run_agent_job_checks
    else:
        checks = run_checks
    suite = Suite()
    modes: list[tuple[str, Callable[[list[str]], Any]]] = [("legacy", legacy_client)]
    if hasattr(mcp, "Client"):
        modes.append(("auto", auto_client))
    else:
        print("note: this SDK has no mcp.Client; only the legacy handshake is exercised", flush=True)
    for mode, connect in modes:
        try:
            async with connect(argv) as (client, info):
                print(f"connected ({mode}): protocol {getattr(client, 'protocol_version', None) or field(info, 'protocol_version', 'protocolVersion')}", flush=True)
                if checks is run_checks:
                    await run_checks(suite, mode, client, info, only)
                else:
                    await checks(suite, mode, client, info)
        except Exception:  # noqa: BLE001 - a failed connection is one failure, not a crash
            suite.failed += 1
            print(f"FAIL [{mode}] connect or shutdown", flush=True)
            traceback.print_exc(file=sys.stdout)
    skipped = f", {suite.skipped} skipped" if suite.skipped else ""
    print(f"{suite.passed} passed, {suite.failed} failed{skipped}", flush=True)
    return 0 if suite.failed == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, sys.argv[1:]))
