//! rpc's `error_kind`: every `success:false` answer says what kind of failure it is
//! (docs/PROTOCOL.md), so a client acts on it without reading the message.

use crate::support::{LiveServer, TestEnv};
use serde_json::{Value, json};

/// The `error_kind` of the answer to `req`, which must have failed.
#[track_caller]
fn kind_of(rpc: &mut LiveServer, req: Value) -> String {
    let answer = rpc.ask(req.clone());
    assert_eq!(answer["success"], false, "{req}: {answer}");
    assert!(
        answer["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{answer}"
    );
    answer["error_kind"]
        .as_str()
        .unwrap_or_else(|| panic!("no error_kind: {answer}"))
        .to_string()
}

#[test]
fn every_failed_answer_names_its_kind() {
    let env = TestEnv::new();
    let outside = env.root().join("outside.txt");
    env.write("dup.txt", "a\na\n");
    env.user_profile(
        "files",
        "extends = \"default\"\n[sandbox]\nmode = \"workspace-write\"\n",
    );
    let mut rpc = LiveServer::start(&env, &["rpc", "-p", "files"]);
    let cases = [
        // The request itself is wrong.
        (json!({"id": "t", "type": "launch"}), "invalid_request"),
        (
            json!({"id": "f", "type": "bash", "command": "true", "tial": 3}),
            "invalid_request",
        ),
        (
            json!({"id": "s", "type": "bash", "command": "true", "session": "../x"}),
            "invalid_request",
        ),
        (
            json!({"id": "j", "type": "job_start", "command": "true", "name": "1"}),
            "invalid_request",
        ),
        (
            json!({"id": "e", "type": "edit", "path": "dup.txt", "old_string": "a", "new_string": "b"}),
            "invalid_request",
        ),
        // What it names is not there.
        (
            json!({"id": "a", "type": "abort_bash", "target": "nope"}),
            "not_found",
        ),
        (
            json!({"id": "js", "type": "job_status", "job": "job://4242"}),
            "not_found",
        ),
        (
            json!({"id": "r", "type": "read_artifact", "artifact": 4242}),
            "not_found",
        ),
        (
            json!({"id": "q", "type": "approve", "decision": "allow"}),
            "not_found",
        ),
        // Refused by the sandbox.
        (
            json!({"id": "w", "type": "write", "path": outside, "content": "x"}),
            "refused",
        ),
        // agentbash could not carry it out.
        (
            json!({"id": "c", "type": "bash", "command": "true", "cwd": "/nonexistent"}),
            "failed",
        ),
    ];
    for (req, want) in cases {
        assert_eq!(kind_of(&mut rpc, req.clone()), want, "{req}");
    }
    assert!(!outside.exists());
    // A failed run keeps its result beside the kind.
    let answer =
        rpc.ask(json!({"id": "c2", "type": "bash", "command": "true", "cwd": "/nonexistent"}));
    assert_eq!(answer["data"]["exit_code"], 125, "{answer}");
}
