//! The integration test binary: every module runs the real `agentbash` binary.

mod bad_input;
mod env;
mod output;
mod profiles;
mod run_basic;
mod support;
mod teardown;
