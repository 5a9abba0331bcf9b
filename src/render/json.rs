//! `--format json` (one object) and `--format ndjson` (a stream of tagged events).

use super::{Renderer, Start, out};
use crate::pipeline::Event;
use crate::result::RunResult;
use serde_json::json;

pub struct JsonRenderer {
    pub ndjson: bool,
}

fn line(v: &serde_json::Value) {
    out(&format!("{v}\n"));
}

impl Renderer for JsonRenderer {
    fn event(&mut self, event: Event<'_>) {
        if !self.ndjson {
            return;
        }
        match event {
            Event::Start(plan) => self.start(&Start::of(plan)),
            Event::Output(data) => line(&json!({"type": "output", "data": data})),
            Event::Stderr(data) => line(&json!({"type": "stderr", "data": data})),
            Event::Notice(message) => line(&json!({"type": "notice", "message": message})),
        }
    }

    fn start(&mut self, s: &Start) {
        if !self.ndjson {
            return;
        }
        line(&json!({
            "type": "start",
            "command": s.command,
            "normalized_command": s.normalized_command,
            "profile": s.profile,
            "cwd": s.cwd,
            "mode": s.mode,
            "timeout_s": s.timeout_s,
        }));
    }

    fn finish(&mut self, result: &RunResult) {
        let mut v =
            serde_json::to_value(result).unwrap_or_else(|e| json!({"error": e.to_string()}));
        if self.ndjson
            && let Some(o) = v.as_object_mut()
        {
            let mut tagged = serde_json::Map::new();
            tagged.insert("type".into(), json!("result"));
            tagged.extend(std::mem::take(o));
            v = serde_json::Value::Object(tagged);
            line(&v);
        } else {
            line(&v);
        }
    }
}
