//! The rpc requests that read artifacts (docs/PROTOCOL.md): `read_artifact` (lines,
//! sanitized, as the MCP tool of the same name reads them) and `artifact_read` (the
//! raw bytes `agentbash artifact show` prints, in pages that fit a protocol line), so
//! a remote target's artifacts can be read from the client side.

use super::CallError;
use super::engine::Engine;
use crate::output::artifact;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::{Read, Seek};

/// Bytes one `artifact_read` page carries by default, and at most (base64 makes
/// them a third larger: well within one 16 MiB protocol line).
pub const PAGE_BYTES: usize = 4 << 20;
pub const MAX_PAGE_BYTES: usize = 8 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArtifact {
    artifact: Value,
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArtifactRead {
    artifact: Value,
    head: Option<usize>,
    tail: Option<usize>,
    #[serde(default)]
    offset: u64,
    max_bytes: Option<usize>,
}

/// `7`, `"7"` or `"artifact://7"`.
fn id_of(v: &Value) -> Result<u64, CallError> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(CallError::invalid(format!(
                "`artifact` must be an id such as 7 or \"artifact://7\", not {other}"
            )));
        }
    };
    artifact::parse_id(&text).map_err(|e| CallError::invalid(e.to_string()))
}

pub fn call(engine: &Engine, kind: &str, args: Value) -> Result<Value, CallError> {
    match kind {
        "read_artifact" => {
            let a: ReadArtifact = serde_json::from_value(args)
                .map_err(|e| CallError::invalid(format!("invalid read_artifact request: {e}")))?;
            let id = id_of(&a.artifact)?;
            if a.limit == Some(0) {
                return Err(CallError::invalid(
                    "`limit` must be at least 1 (omit it to read 2000 lines)",
                ));
            }
            let text = engine.read_artifact_lines(&id.to_string(), a.offset, a.limit)?;
            Ok(json!({"id": id, "text": text}))
        }
        "artifact_read" => {
            let a: ArtifactRead = serde_json::from_value(args)
                .map_err(|e| CallError::invalid(format!("invalid artifact_read request: {e}")))?;
            raw_page(engine, a)
        }
        other => Err(CallError::invalid(format!(
            "unknown artifact request {other:?}"
        ))),
    }
}

/// One page of the bytes `artifact show` would print: `data` (base64) is the
/// selection's bytes from `offset`, `next` where the next page starts, `more`
/// whether there is one.
fn raw_page(engine: &Engine, a: ArtifactRead) -> Result<Value, CallError> {
    let id = id_of(&a.artifact)?;
    for (name, v) in [("head", a.head), ("tail", a.tail)] {
        if v == Some(0) {
            return Err(CallError::invalid(format!(
                "`{name}` must be at least 1 (omit it to show all lines)"
            )));
        }
    }
    let max = a.max_bytes.unwrap_or(PAGE_BYTES).clamp(1, MAX_PAGE_BYTES);
    let store = engine.store();
    let path = store.path(id);
    let missing = || {
        format!(
            "no artifact {} in {}; `agentbash artifact list` on that side shows what exists",
            artifact::url(id),
            store.dir.display()
        )
    };
    if !path.is_file() {
        return Err(CallError::not_found(missing()));
    }
    let open = || {
        crate::fsguard::open(&path, u64::MAX, crate::fsguard::Links::Refuse)
            .map_err(|e| CallError::failed(format!("cannot read {}: {e}", path.display())))
    };
    let mut f = open()?;
    let range = if a.head.is_none() && a.tail.is_none() {
        let len = f
            .metadata()
            .map_err(|e| CallError::failed(e.to_string()))?
            .len();
        artifact::LineRange {
            start: 0,
            end: len,
            pad: false,
        }
    } else {
        artifact::line_range(std::io::BufReader::new(open()?), a.head, a.tail)
            .map_err(|e| CallError::failed(format!("cannot read {}: {e}", path.display())))?
    };
    let size = range.end - range.start;
    let from = range.start + a.offset.min(size);
    let want = (range.end - from).min(max as u64);
    f.seek(std::io::SeekFrom::Start(from))
        .map_err(|e| CallError::failed(format!("cannot read {}: {e}", path.display())))?;
    let mut bytes = Vec::with_capacity(want as usize);
    f.take(want)
        .read_to_end(&mut bytes)
        .map_err(|e| CallError::failed(format!("cannot read {}: {e}", path.display())))?;
    let next = a.offset.min(size) + bytes.len() as u64;
    let more = next < size;
    if !more && range.pad {
        bytes.push(b'\n');
    }
    Ok(json!({
        "id": id,
        "size": size,
        "offset": a.offset,
        "next": next,
        "more": more,
        "data": base64::engine::general_purpose::STANDARD.encode(&bytes),
    }))
}
