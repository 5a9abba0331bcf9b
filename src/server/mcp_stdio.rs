//! The MCP server's stdio framing: a line filter between the client and `rmcp`.
//!
//! `rmcp` drops a line that is not JSON, or longer than its limit, without a word (on
//! purpose: a reply to garbage can start an error storm between two confused peers).
//! A client that sent a broken request then waits forever. So every line from stdin
//! passes through [`filter_input`] first: JSON goes on to `rmcp` unchanged, anything
//! else is answered here with a JSON-RPC error (`id: null`), and the server keeps
//! serving. A line is never held in memory beyond [`MAX_LINE`].
//!
//! Both `rmcp` and the filter write to stdout, so neither writes it directly:
//! [`write_output`] owns stdout and writes whole lines only, `rmcp`'s (read from a
//! pipe) and the filter's (from a channel), never one inside the other.

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

// The longest line accepted is the rpc server's, the same as `rmcp`'s.
use super::lines::{Input, LineBuilder, MAX_LINE};

/// JSON-RPC: the line is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: not a valid request (here: longer than [`MAX_LINE`]).
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the method's parameters are invalid (here: a `tools/call` whose
/// `arguments` is not an object, which `rmcp` would answer as an unknown method).
const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC error line with `id: null` (no id can be read from a broken line).
fn error_line(code: i64, message: String) -> Vec<u8> {
    error_line_for(&serde_json::Value::Null, code, message)
}

fn error_line_for(id: &serde_json::Value, code: i64, message: String) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

/// What a client line is.
fn verdict(line: &[u8]) -> Result<(), Vec<u8>> {
    let text = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    // Most lines are requests: one pass reads what the filter needs and checks the
    // JSON; anything else (a batch, a broken line) is checked on its own.
    let Ok(probe) = serde_json::from_slice::<Probe>(text) else {
        return match serde_json::from_slice::<serde::de::IgnoredAny>(text) {
            Ok(_) => Ok(()),
            Err(e) => Err(error_line(PARSE_ERROR, format!("Parse error: {e}"))),
        };
    };
    match probe.params.and_then(|p| p.arguments) {
        Some(Shape::Other(what)) if probe.method.as_deref() == Some("tools/call") => {
            Err(error_line_for(
                &probe.id.unwrap_or_default(),
                INVALID_PARAMS,
                format!("Invalid params: `arguments` of tools/call must be an object, not {what}"),
            ))
        }
        _ => Ok(()),
    }
}

/// The parts of a request the filter looks at; the rest is skipped, not kept.
#[derive(serde::Deserialize)]
struct Probe {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<ProbeParams>,
}

#[derive(serde::Deserialize)]
struct ProbeParams {
    #[serde(default)]
    arguments: Option<Shape>,
}

/// What kind of JSON value `arguments` is (an object, or what else), read without
/// keeping it.
enum Shape {
    /// An object, or null (no arguments).
    Object,
    Other(&'static str),
}

impl<'de> serde::Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Kind;
        impl<'de> serde::de::Visitor<'de> for Kind {
            type Value = Shape;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Shape, A::Error> {
                use serde::de::IgnoredAny;
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Shape::Object)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<Shape, A::Error> {
                while s.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Shape::Other("an array"))
            }
            fn visit_unit<E>(self) -> Result<Shape, E> {
                Ok(Shape::Object)
            }
            fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
                Ok(Shape::Other("a string"))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
                Ok(Shape::Other("a boolean"))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
                Ok(Shape::Other("a number"))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
                Ok(Shape::Other("a number"))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
                Ok(Shape::Other("a number"))
            }
        }
        d.deserialize_any(Kind)
    }
}

/// Copy client lines from `input` to `to_rmcp`, answering the ones `rmcp` would drop
/// on `errors`. Returns at EOF (or a read error), dropping `to_rmcp`, which `rmcp`
/// then sees as the end of its input.
pub async fn filter_input<R, W>(input: R, mut to_rmcp: W, errors: mpsc::Sender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut lines = LineBuilder::new(MAX_LINE);
    loop {
        let (consumed, got, at_end) = {
            let buf = match input.fill_buf().await {
                Ok(buf) => buf,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => &[],
            };
            if buf.is_empty() {
                (0, lines.finish(), true)
            } else {
                let (used, got) = lines.feed(buf);
                (used, got, false)
            }
        };
        input.consume(consumed);
        let answer = match got {
            None | Some(Input::Eof) => Ok(None),
            Some(Input::TooLong(n, _)) => Err(error_line(
                INVALID_REQUEST,
                format!(
                    "Invalid Request: the line is {n} bytes, more than the limit of {MAX_LINE} bytes; it was skipped"
                ),
            )),
            Some(Input::Line(line)) if line.iter().all(u8::is_ascii_whitespace) => Ok(None),
            Some(Input::Line(line)) => verdict(&line).map(|()| Some(line)),
        };
        match answer {
            Ok(Some(mut line)) => {
                line.push(b'\n');
                if to_rmcp.write_all(&line).await.is_err() {
                    return;
                }
            }
            Ok(None) => {}
            Err(reply) => {
                if errors.send(reply).await.is_err() {
                    return;
                }
            }
        }
        if at_end {
            let _ = to_rmcp.shutdown().await;
            return;
        }
    }
}

/// Own `output` (stdout): write `rmcp`'s lines, read from `from_rmcp`, and the
/// filter's error lines, each whole. Ends when `rmcp` closes its side.
pub async fn write_output<R, W>(
    mut from_rmcp: R,
    mut errors: mpsc::Receiver<Vec<u8>>,
    mut output: W,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut pending: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut errors_open = true;
    loop {
        tokio::select! {
            read = from_rmcp.read_buf(&mut pending) => {
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if let Some(last) = memchr::memrchr(b'\n', &pending) {
                    if output.write_all(&pending[..=last]).await.is_err() {
                        return;
                    }
                    pending.drain(..=last);
                    if output.flush().await.is_err() {
                        return;
                    }
                }
            }
            // Only between rmcp's lines, never inside one.
            reply = errors.recv(), if errors_open && pending.is_empty() => {
                match reply {
                    Some(line) => {
                        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                            return;
                        }
                    }
                    None => errors_open = false,
                }
            }
        }
    }
    if !pending.is_empty() {
        let _ = output.write_all(&pending).await;
    }
    while let Ok(line) = errors.try_recv() {
        let _ = output.write_all(&line).await;
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_passes() {
        assert!(verdict(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_ok());
        assert!(verdict(b"\xef\xbb\xbf[1]").is_ok());
        for bad in [&b"not json"[..], b"{\"a\":", b"\xff\xfe"] {
            let reply = verdict(bad).err().unwrap_or_default();
            let v: serde_json::Value = serde_json::from_slice(&reply).unwrap_or_default();
            assert_eq!(v["error"]["code"], PARSE_ERROR, "{v}");
            assert_eq!(v["id"], serde_json::Value::Null);
        }
    }
}
