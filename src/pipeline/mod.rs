//! The run pipeline (docs/ARCHITECTURE.md), top to bottom. [`plan`] decides:
//! validate → mode → normalize → intercept → timeout → env → shell → state → cwd →
//! guard → approval → artifact dir and secrets; [`execute`] refuses what the plan
//! refused, asks a person what the approval policy asks about, then prepares the
//! state, spawns through an executor, tears down and shapes the result.
//!
//! [`plan`] makes every decision without side effects (it is what `explain` shows;
//! `plan.rs`); [`execute`] carries a plan out (`run.rs`) and shapes the
//! [`crate::result::RunResult`] (`shape.rs`); `job.rs` prepares jobs with the same
//! stages. Each decision stage has a module of its own.

pub mod approval;
pub mod guard;
pub mod intercept;
mod job;
pub mod normalize;
mod plan;
mod run;
pub mod sandbox;
mod shape;
pub mod stages;
pub mod terminal;

pub use crate::request::{Preview, RequestError, RunRequest};
pub use job::{JobLaunch, JobRefusal, JobRun, idle_limit, job_launch, job_refusal};
pub use plan::{Execution, Plan, plan, plan_run};
pub use run::{execute, execute_with, refused_before_running};
pub use shape::{failed, not_started};

/// Streaming callbacks while a run is under way.
pub enum Event<'a> {
    Start(&'a Plan),
    /// Sanitized output text, coalesced (at most one event per 50 ms).
    Output(&'a str),
    /// The command's stderr under [`RunRequest::stderr_separate`], like `Output`.
    Stderr(&'a str),
    Notice(&'a str),
}
