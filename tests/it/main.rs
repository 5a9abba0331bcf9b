//! The integration test binary: every module runs the real `agentbash` binary.

mod bad_input;
mod display;
mod ecosystem;
mod env;
mod guard;
mod intercept;
mod layout;
mod lift;
mod mcp;
mod output;
mod profiles;
mod pty;
mod redact;
mod reliability;
mod rpc;
mod run_basic;
mod sandbox;
mod scripts;
mod session;
mod snapshot;
mod support;
mod teardown;
mod terminal;
mod tmux;
mod trust;
mod trusted_files;
