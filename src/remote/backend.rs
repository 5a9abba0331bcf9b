//! `agentbash mcp --target NAME`: the MCP server's [`Backend`] carried out on a
//! target. Each tool call becomes an rpc request over the one connection; the local
//! profile's guard and interceptor judge a command (and a job's) before it travels.

use super::conn::{CallError, Connection};
use super::run::{bash_request, result_of};
use crate::config::profile::LoadedProfile;
use crate::pipeline::{RunRequest, refused_before_running};
use crate::process::CancelToken;
use crate::result::RunResult;
use crate::server::backend::{Backend, BashCall, BashOutcome};
use serde_json::{Map, Value, json};
use std::path::PathBuf;

pub struct RemoteBackend {
    pub conn: Connection,
    /// The profile whose guard and interceptor run here first.
    pub local: LoadedProfile,
    pub invoking_dir: PathBuf,
}

/// A call as the local refusal check sees it (the remote decides the rest): the
/// caller's tools, with the server's own on top, as the local engine would declare
/// them to the interceptor.
pub fn local_request(
    call: &BashCall,
    local: &LoadedProfile,
    invoking_dir: &std::path::Path,
) -> RunRequest {
    let mut req = RunRequest::new(call.command.clone());
    req.invoking_dir = invoking_dir.to_path_buf();
    req.cwd = call.cwd.as_ref().map(Into::into);
    req.timeout = call.timeout;
    req.head = call.head;
    req.tail = call.tail;
    req.env = call
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    req.session = call.session.clone();
    req.mode = crate::request::ModeChoice::Print;
    req.approver = call.approver.clone();
    let mut tools = call.tools.clone();
    if !call.server_tools.is_empty() {
        let mut t = tools.unwrap_or_else(|| local.profile.interceptor.tools.clone());
        t.extend(call.server_tools.iter().cloned());
        tools = Some(t);
    }
    req.tools = tools;
    req
}

/// The refusal of a job's command by the local guard (the interceptor's job routing
/// does not apply to starting a job), as the text a caller reads.
pub fn job_refusal(
    command: &str,
    local: &LoadedProfile,
    invoking_dir: &std::path::Path,
) -> Option<String> {
    let mut req = RunRequest::new(command);
    req.invoking_dir = invoking_dir.to_path_buf();
    req.tools = Some(Vec::new());
    refused_before_running(&req, local, &CancelToken::new()).map(|r| r.text)
}

impl RemoteBackend {
    fn local_request(&self, call: &BashCall) -> RunRequest {
        local_request(call, &self.local, &self.invoking_dir)
    }

    /// Forward a request; the answer's `data`, or the error a tool call shows.
    fn forward(
        &self,
        request: Map<String, Value>,
        cancel: Option<&CancelToken>,
    ) -> Result<Value, String> {
        match self.conn.call(request, &mut |_| {}, cancel) {
            Ok(a) if a["success"] == true => Ok(a["data"].clone()),
            Ok(a) => Err(a["error"]
                .as_str()
                .unwrap_or("the target refused the request")
                .to_string()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// A result as the MCP server answers it (as the local engine answers one).
fn outcome(r: RunResult) -> Result<BashOutcome, String> {
    if let Some(e) = &r.error {
        return Err(e.clone());
    }
    let is_error =
        r.job.is_none() && (r.exit_code != Some(0) || r.timed_out || r.blocked.is_some());
    Ok(BashOutcome {
        text: r.text.clone(),
        result: serde_json::to_value(&r).map_err(|e| e.to_string())?,
        is_error,
    })
}

impl Backend for RemoteBackend {
    fn approval(&self, call: &BashCall) -> Option<crate::request::Question> {
        let mut req = self.local_request(call);
        req.session = None;
        let plan = crate::pipeline::plan_run(&req, &self.local);
        (plan.approval.decision == crate::config::approval::Decision::Ask).then(|| {
            plan.approval
                .question(&plan.shown_command, None, &plan.secrets)
        })
    }

    fn check(&self, call: &BashCall) -> Result<(), String> {
        self.local_request(call)
            .validate()
            .map_err(|e| e.to_string())
    }

    fn bash(
        &self,
        call: BashCall,
        on_progress: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<BashOutcome, String> {
        let mut req = self.local_request(&call);
        // This side's policy asks first, the target's may ask the same: asked once.
        req.approver = super::AskedOnce::wrap(call.approver.as_ref());
        if let Some(refused) = refused_before_running(&req, &self.local, cancel) {
            return outcome(refused);
        }
        let mut request = bash_request(&req)?;
        if let Some(s) = &call.sandbox {
            request.insert("sandbox".into(), json!(s));
        }
        let answer = self.conn.call_asking(
            request,
            &mut |e| {
                if e["type"] == "output"
                    && let Some(t) = e["data"].as_str()
                {
                    on_progress(t);
                }
            },
            cancel,
            req.approver.as_ref(),
        );
        match answer {
            Ok(response) => outcome(result_of(&response)?),
            Err(CallError::Connect(e)) => Err(e.to_string()),
            Err(CallError::Dropped(m)) => Err(m),
        }
    }

    fn max_concurrent(&self) -> usize {
        self.local.profile.server.max_concurrent
    }

    fn not_started(&self, call: BashCall) -> Result<BashOutcome, String> {
        let req = self.local_request(&call);
        outcome(crate::pipeline::not_started(
            &req,
            &self.local,
            libc::SIGINT,
            format!(
                "[Cancelled while queued behind {} (server.max_concurrent = {}); the command did not start]",
                crate::output::notice::count(self.max_concurrent() as u64, "busy run"),
                self.max_concurrent()
            ),
        ))
    }

    fn read_artifact(
        &self,
        id: &str,
        offset: usize,
        limit: Option<usize>,
    ) -> Result<String, String> {
        let mut req = json!({"type": "read_artifact", "artifact": id, "offset": offset});
        if let Some(l) = limit {
            req["limit"] = json!(l);
        }
        let Value::Object(req) = req else {
            return Err("internal: request is not an object".into());
        };
        let data = self.forward(req, None)?;
        Ok(data["text"].as_str().unwrap_or_default().to_string())
    }

    fn job(&self, kind: &str, args: Value) -> Result<Value, String> {
        let Value::Object(mut request) = args else {
            return Err(format!(
                "invalid {kind} request: the arguments must be an object"
            ));
        };
        // A job's command is judged here first, like a run's (by the guard: the
        // interceptor's job routing does not apply to starting a job).
        if kind == "job_start"
            && let Some(command) = request.get("command").and_then(Value::as_str)
            && let Some(refused) = job_refusal(command, &self.local, &self.invoking_dir)
        {
            return Err(refused);
        }
        request.insert("type".into(), json!(kind));
        self.forward(request, None)
    }

    fn describe(&self) -> String {
        let remote = self
            .conn
            .hello()
            .and_then(|h| h["description"].as_str().map(str::to_string))
            .unwrap_or_default();
        format!(
            "Commands run on target `{}` (through `{}`), not on this machine.\n{remote}",
            self.conn.target.name,
            self.conn.target.shown_transport()
        )
    }
}
