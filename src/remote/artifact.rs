//! `agentbash artifact show --target NAME ID`: a remote run's artifact, read through
//! the target page by page (rpc `artifact_read`) and written out byte for byte, as
//! `artifact show` writes a local one.

use super::Target;
use super::conn::Connection;
use base64::Engine as _;
use serde_json::json;
use std::io::Write;

/// Print the artifact `id` of `target` (with `head`/`tail` as `artifact show` takes
/// them); returns the exit code: 0, 1 when the remote has no such artifact (as
/// locally), 125 when the target cannot be reached or answers nonsense.
pub fn show(target: &Target, id: u64, head: Option<usize>, tail: Option<usize>) -> i32 {
    let conn = Connection::new(target.clone());
    let code = pages(&conn, id, head, tail);
    conn.close();
    code
}

fn pages(conn: &Connection, id: u64, head: Option<usize>, tail: Option<usize>) -> i32 {
    let stdout = std::io::stdout();
    let mut o = stdout.lock();
    let mut offset = 0u64;
    loop {
        let mut req = json!({"type": "artifact_read", "artifact": id, "offset": offset});
        if let Some(h) = head {
            req["head"] = json!(h);
        }
        if let Some(t) = tail {
            req["tail"] = json!(t);
        }
        let serde_json::Value::Object(req) = req else {
            return crate::exit::FAILURE;
        };
        let answer = match conn.call(req, &mut |_| {}, None) {
            Ok(a) => a,
            Err(e) => {
                crate::render::report_error(e);
                return crate::exit::FAILURE;
            }
        };
        if answer["success"] != true {
            crate::render::report_error(format!(
                "[target {}] {}",
                conn.target.name,
                answer["error"]
                    .as_str()
                    .unwrap_or("the artifact could not be read")
            ));
            return 1;
        }
        let data = &answer["data"];
        let bytes = match data["data"]
            .as_str()
            .map(|b| base64::engine::general_purpose::STANDARD.decode(b))
        {
            Some(Ok(b)) => b,
            _ => {
                crate::render::report_error(format!(
                    "[target {}] the answer to artifact_read carries no readable data",
                    conn.target.name
                ));
                return crate::exit::FAILURE;
            }
        };
        // A closed pipe is "nobody is listening", not an error.
        if o.write_all(&bytes).is_err() {
            return 0;
        }
        let next = data["next"].as_u64().unwrap_or(offset);
        if data["more"] != true {
            let _ = o.flush();
            return 0;
        }
        if next <= offset {
            crate::render::report_error(format!(
                "[target {}] artifact://{id} changed while it was read (removed by gc?)",
                conn.target.name
            ));
            return crate::exit::FAILURE;
        }
        offset = next;
    }
}
