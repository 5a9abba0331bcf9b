//! agentbash: run shell commands the way coding agents and CI jobs need them run.
//!
//! The engine is this library; the `agentbash` binary is a thin layer over it. A Rust
//! agent harness can build a request, run it with streaming callbacks and get the
//! same result `agentbash run --json` prints, without spawning agentbash:
//!
//! ```
//! use agentbash::{CancelToken, Event, Lookup, RunRequest, execute};
//!
//! let profile = Lookup::new(".").load("default").expect("built-in profile");
//! let mut request = RunRequest::new("echo hello; echo world >&2; exit 3");
//! request.head = Some(10);
//! let mut streamed = String::new();
//! let result = execute(&request, &profile, &CancelToken::new(), &mut |event| {
//!     if let Event::Output(text) = event {
//!         streamed.push_str(text);
//!     }
//! });
//! assert_eq!(result.exit_code, Some(3));
//! assert_eq!(result.output, "hello\nworld\n");
//! assert!(streamed.contains("world"));
//! assert!(result.text.contains("Command exited with code 3"));
//! ```

pub mod children;
pub mod cli;
pub mod commands;
pub mod config;
pub mod display;
pub mod executor;
pub mod exit;
pub mod fsguard;
pub mod ids;
pub mod jobs;
pub mod netproxy;
pub mod output;
pub mod paths;
pub mod pipeline;
pub mod process;
pub mod remote;
pub mod render;
pub mod request;
pub mod result;
pub mod sandbox;
pub mod server;
pub mod shell;
pub mod toolbox;

// `skip!` and the slowness factor of the test suite, shared with tests/it.
#[cfg(test)]
#[path = "../tests/it/harness.rs"]
mod harness;

pub use config::profile::{LoadedProfile, Lookup, Profile};
pub use pipeline::{Event, Plan, RequestError, RunRequest, execute, plan};
pub use process::CancelToken;
pub use result::RunResult;
