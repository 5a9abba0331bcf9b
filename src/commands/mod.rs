//! Each subcommand as a function returning the process exit code, so the
//! binary stays a few lines and every command can be driven from tests.

pub mod artifact;
pub mod explain;
pub mod job;
pub mod profile;
pub mod rules;
pub mod run;
pub mod sandbox;
pub mod session;
pub mod snapshot;
pub mod trust;

use crate::cli::{Cli, Command};
use crate::render::err;

pub fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(args) => run::run(args.0, false),
        Command::Explain(args) => run::run(args.0, true),
        Command::Profile(c) => profile::command(c.0),
        Command::Artifact(c) => artifact::command(c.0),
        Command::Completions { shell } => {
            crate::render::out(&crate::cli::generated::completions(shell));
            0
        }
        Command::Man => {
            crate::render::out(&crate::cli::generated::man_page());
            0
        }
        Command::Rules(c) => rules::command(c.0),
        Command::Rpc(a) => server(a.0, None),
        Command::Mcp(a) => server(a.0.server.clone(), Some(a.0.toolbox())),
        Command::Session(c) => session::command(c.0),
        Command::Snapshot(c) => snapshot::command(c.0),
        Command::Trust(a) => trust::command(a.0),
        Command::Sandbox(c) => sandbox::command(c.0),
        Command::Job(c) => job::command(c.0),
    }
}

/// Load a profile for a management command, printing the error on failure.
pub fn load_profile(spec: Option<&str>) -> Result<crate::LoadedProfile, i32> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let p = crate::Lookup::new(cwd)
        .load(spec.unwrap_or("default"))
        .map_err(|e| {
            crate::render::report_error(&e);
            crate::exit::FAILURE
        })?;
    warn_profile(&p);
    Ok(p)
}

/// The target of profile `name` (`--target NAME`), printing the error on failure
/// (exit 125).
pub fn load_target(name: &str) -> Result<crate::remote::Target, i32> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    crate::remote::Target::load(name, &cwd).map_err(|e| {
        crate::render::report_error(&e);
        crate::exit::FAILURE
    })
}

/// Say on stderr what the profile lookup left out (untrusted project profiles).
pub fn warn_profile(p: &crate::LoadedProfile) {
    for w in &p.warnings {
        err(&format!("agentbash: warning: {w}\n"));
    }
}

/// `agentbash rpc` (`mcp: None`) / `agentbash mcp` (`Some(toolbox)`: `--toolbox`,
/// `--no-toolbox` or neither).
pub fn server(args: crate::cli::ServerArgs, mcp: Option<Option<bool>>) -> i32 {
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let profile = match load_profile(args.profile.as_deref()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if let Some(name) = &args.target {
        let target = match load_target(name) {
            Ok(t) => t,
            Err(code) => return code,
        };
        let conn = crate::remote::conn::Connection::new(target);
        if mcp.is_none() {
            return crate::remote::proxy::serve(conn, profile, cwd);
        }
        if let Err(e) = conn.connect() {
            crate::render::report_error(e);
            return crate::exit::FAILURE;
        }
        let backend = crate::remote::backend::RemoteBackend {
            conn,
            local: profile,
            invoking_dir: cwd,
        };
        return serve_mcp(std::sync::Arc::new(backend), || {}, || {});
    }
    let mut engine = crate::server::engine::Engine::new(profile, cwd);
    engine.profile_spec = args.profile.clone().unwrap_or_else(|| "default".into());
    let Some(toolbox) = mcp else {
        return crate::server::rpc::serve(engine);
    };
    engine.mcp_toolbox = toolbox.unwrap_or(engine.profile.profile.mcp.toolbox);
    let engine = std::sync::Arc::new(engine);
    let (closing, stop) = (
        std::sync::Arc::clone(&engine),
        std::sync::Arc::clone(&engine),
    );
    serve_mcp(
        engine,
        move || closing.close(),
        move || stop.stop_owned_jobs(),
    )
}

/// The MCP server on stdio over `backend`; `closing` runs once it stopped serving
/// (before the runtime is shut down), `after` once the runtime is gone.
fn serve_mcp(
    backend: std::sync::Arc<dyn crate::server::backend::Backend>,
    closing: impl FnOnce(),
    after: impl FnOnce(),
) -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            err(&format!("agentbash: cannot start the async runtime: {e}\n"));
            return crate::exit::FAILURE;
        }
    };
    let served = runtime.block_on(crate::server::mcp::serve_stdio(backend));
    // A run that ignores cancellation must not keep the process alive after EOF.
    closing();
    runtime.shutdown_timeout(std::time::Duration::from_secs(3));
    after();
    match served {
        Ok(()) => 0,
        Err(e) => {
            crate::render::report_error(format!("{e:#}"));
            crate::exit::FAILURE
        }
    }
}
