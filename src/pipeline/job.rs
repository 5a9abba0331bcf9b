//! Runs that become jobs: [`job_launch`] prepares a job's command with the same plan,
//! refusals, state, working directory and sandbox as a run's, stopped just before an
//! executor would start it; [`JobRun`] carries a foreground request out as a job
//! (`jobs.background_after`) whose output still goes through the run's sink. Kept
//! apart so that the job paths reuse the run's stages without owning them.

use super::plan::{Plan, plan_with};
use super::run::{Gathered, Sinks, Stop, approval_stage, prepare, refusal, sinks};
use super::sandbox;
use super::shape::{base_result, remember_artifact, shape};
use crate::config::profile::LoadedProfile;
use crate::executor::{End, ExecOutcome};
use crate::exit;
use crate::output::notice::count;
use crate::output::redact::Secrets;
use crate::output::sink::OutputSink;
use crate::process::CancelToken;
use crate::process::SpawnSpec;
use crate::request::Mode;
use crate::request::RunRequest;
use crate::result::RunResult;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A job's command made ready to spawn: the same plan, refusals, state, working
/// directory and sandbox as a run's, stopped right before an executor would start
/// it. Kept alive as long as the job runs (the sandbox's files, a spilled script).
pub struct JobLaunch {
    pub spec: SpawnSpec,
    /// The run marker set in the command's environment.
    pub marker: String,
    pub cwd: PathBuf,
    /// The secrets (`output.redact`) masked in all the job shows: its log, its
    /// screen, its record.
    pub secrets: Secrets,
    _state: crate::shell::state::Prepared,
    sandbox: sandbox::RunSandbox,
    _script_file: Option<tempfile::NamedTempFile>,
}

impl JobLaunch {
    /// The sandbox the job is confined by (its `sandbox` object, its notices).
    pub fn sandbox(&self) -> &sandbox::RunSandbox {
        &self.sandbox
    }

    /// What the job's network proxy has refused so far (`None` without a network
    /// allowlist): its supervisor reports each new destination in the job's output.
    pub fn network_denied(&self) -> Option<Vec<crate::sandbox::Refusal>> {
        self.sandbox.network_log().map(|log| log.snapshot())
    }

    /// The notices for `denied` (see [`sandbox::RunSandbox::network_notices`]).
    pub fn network_notices(&self, denied: &[crate::sandbox::Refusal]) -> Vec<String> {
        self.sandbox.network_notices(denied)
    }
}

/// Why a job's command did not get ready: the exit code a run would have had
/// (2 usage, 77 refused, 125 failed) and what to tell the caller.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct JobRefusal {
    pub exit: i32,
    pub message: String,
}

/// Plan `req` and carry it out up to the spawn, for a job (see [`JobLaunch`]). The
/// guard, a usage error, a bad cwd and the sandbox refuse exactly as for a run.
pub fn job_launch(req: &RunRequest, profile: &LoadedProfile) -> Result<JobLaunch, JobRefusal> {
    let plan = plan_with(req, profile, false);
    let mut g = Gathered::default();
    let unattended = RunRequest {
        approver: Some(no_one()),
        ..req.clone()
    };
    let ready = prepare(&unattended, &plan, &CancelToken::new(), &mut g, |_, _| {
        ((), false)
    })
    .map_err(|stop| JobRefusal::from(stop).masked(&plan.secrets))?;
    Ok(JobLaunch {
        spec: ready.launch.spec,
        marker: ready.launch.marker,
        cwd: ready.cwd,
        secrets: plan.secrets.clone(),
        _state: ready.state,
        sandbox: ready.sandbox,
        _script_file: ready.launch._script_file,
    })
}

/// The refusals of [`job_launch`] that need nothing prepared (usage, rule packs, the
/// guard): what a caller checks before it starts a job's supervisor, so a refused
/// command is answered at once.
pub fn job_refusal(plan: &Plan) -> Result<(), JobRefusal> {
    let mut g = Gathered::default();
    refusal(plan, &mut g)
        .map(drop)
        .map_err(|stop| JobRefusal::from(stop).masked(&plan.secrets))?;
    // A job starts with no one waiting to answer: `approval.unattended` decides.
    let unattended = RunRequest {
        approver: Some(no_one()),
        ..RunRequest::default()
    };
    approval_stage(&unattended, plan, &CancelToken::new(), &mut g)
        .map(drop)
        .map_err(|stop| JobRefusal::from(stop).masked(&plan.secrets))
}

/// Who answers a job's approval question: no one (`approval.unattended` decides).
fn no_one() -> crate::request::ApproverRef {
    crate::request::ApproverRef(std::sync::Arc::new(NoOne(
        "a job starts with no one waiting to answer; run it in the foreground to be asked",
    )))
}

/// An approver that cannot ask, and says why.
struct NoOne(&'static str);

impl crate::request::Approver for NoOne {
    fn ask(&self, _: &crate::request::Question, _: &CancelToken) -> crate::request::Answer {
        crate::request::Answer::Unavailable(self.0.to_string())
    }

    fn who(&self) -> String {
        "no one".into()
    }
}

impl JobRefusal {
    /// The message with the run's secrets masked (it may quote the command).
    fn masked(mut self, secrets: &Secrets) -> Self {
        secrets.mask_in_place(&mut self.message);
        self
    }
}

impl From<Stop> for JobRefusal {
    fn from(stop: Stop) -> Self {
        match stop {
            Stop::Fail(exit, message) => JobRefusal { exit, message },
            Stop::Refused(_, message) => JobRefusal {
                exit: exit::BLOCKED,
                message,
            },
            Stop::NotStarted(_, message) => JobRefusal {
                exit: exit::FAILURE,
                message,
            },
        }
    }
}

/// `jobs.idle_timeout` for a foreground run: only when the caller set no timeout (a
/// caller who gave one expects quiet work to take that long).
pub fn idle_limit(req: &RunRequest, p: &crate::config::profile::Profile) -> Option<Duration> {
    Some(Duration::from_secs(p.jobs.idle_timeout)).filter(|d| !d.is_zero() && req.timeout.is_none())
}

/// A foreground request carried out as a job (rpc/mcp `jobs.background_after`): what
/// the job prints goes through the run's own sink, so the answer is bounded and
/// shaped as the run's would be, whether the job ends in time or is handed off.
pub struct JobRun {
    plan: Plan,
    base: RunResult,
    sink: OutputSink,
    notices: Vec<String>,
    started: Instant,
}

impl JobRun {
    /// `None` when `req` must run in the foreground: a session, PTY mode, a refusal
    /// of any kind (the run answers it), or a timeout no longer than `after`.
    pub fn eligible(req: &RunRequest, profile: &LoadedProfile, after: Duration) -> Option<JobRun> {
        let plan = plan_with(req, profile, false);
        let mut g = Gathered::default();
        let ok = req.session.is_none()
            && !req.stdin
            && !req.stderr_separate
            // A job's log is one stream; a stdout-only lift needs stdout apart.
            && !plan.normalized.stdout_only
            && plan.mode.mode == Mode::Print
            && Duration::from_secs(plan.timeout.effective) > after
            && plan.cwd.is_ok()
            // A command the approval policy asks about is asked in the foreground.
            && plan.approval.decision != crate::config::approval::Decision::Ask
            && refusal(&plan, &mut g).is_ok();
        if !ok {
            return None;
        }
        let Sinks { out, .. } = sinks(&plan, req);
        let mut base = base_result(req, &plan);
        if let Ok(cwd) = &plan.cwd {
            base.cwd = cwd.display().to_string();
        }
        Some(JobRun {
            plan,
            base,
            sink: out,
            notices: g.notices,
            started: Instant::now(),
        })
    }

    /// Take what the job printed; `on_output` gets live text, as a run's events.
    pub fn push(&mut self, bytes: &[u8], on_output: &mut dyn FnMut(&str)) {
        self.sink.push(bytes);
        if let Some(t) = self.sink.take_pending() {
            on_output(&self.plan.secrets.mask(&t));
        }
    }

    /// The job ended (or was stopped) within the wait: the run's result. `tmpdir` is
    /// the private TMPDIR the job's supervisor made for it, when sandboxed.
    pub fn finish(self, end: End, tmpdir: Option<PathBuf>) -> RunResult {
        self.shaped(end, end, tmpdir)
    }

    /// The result shaped for `end`, with the notices the job's sandbox gives for how
    /// it ended (`ended`) and what it printed.
    fn shaped(self, end: End, ended: End, tmpdir: Option<PathBuf>) -> RunResult {
        let secrets = self.plan.secrets.clone();
        let artifact_dir = self.plan.artifact_dir.clone();
        let artifacts = self.plan.execution.artifacts.clone();
        let cwd = PathBuf::from(&self.base.cwd);
        let retained = self.sink.finish();
        let mut warnings = self.plan.rule_warnings.clone();
        let mut notices = self.notices;
        // The job's sandbox, as its supervisor prepared it (the same policy, paths
        // and TMPDIR): the same `sandbox` object and notices as the run's.
        let confined = sandbox::described(&self.plan, &cwd, tmpdir.as_deref());
        if let Ok(sandbox) = &confined {
            warnings.extend(sandbox.warnings());
            notices.extend(sandbox.denial_notice(&ended, &retained.text, &cwd));
        }
        let outcome = ExecOutcome {
            end,
            background_killed: vec![],
        };
        let mut r = shape(
            self.base,
            self.plan,
            outcome,
            retained,
            notices,
            warnings,
            self.started,
            cwd,
        );
        r.sandbox = confined.ok().and_then(|s| s.info());
        r.mask_secrets(&secrets);
        if let Some(dir) = artifact_dir
            && let Some(a) = &r.artifact
        {
            remember_artifact(&artifacts, dir, a.id, r.command.clone(), &r);
        }
        r
    }

    /// The job still runs after `after`: the output so far, and where it goes on.
    pub fn handed_off(
        self,
        after: Duration,
        job: crate::result::ContinuedAs,
        tmpdir: Option<PathBuf>,
    ) -> RunResult {
        let line = format!(
            "[Still running after {}; continues as {} — read it with job_output (cursor {}), stop it with job_stop]",
            count(after.as_secs(), "second"),
            job.url,
            job.cursor
        );
        // It has not ended: a write its sandbox refused is said as for a run that has
        // not succeeded (yet), not hidden as for one that did.
        let mut r = self.shaped(End::Exited(0), End::MissingStatus, tmpdir);
        r.exit_code = None;
        r.agentbash_exit = 0;
        let rest = match r.text.strip_prefix("(no output)") {
            Some(rest) => rest.to_string(),
            None => format!("\n{}", r.text),
        };
        r.text = format!("{line}{rest}");
        r.notices.insert(0, line.clone());
        r.annotation = Some(line);
        r.job = Some(job);
        r
    }
}
