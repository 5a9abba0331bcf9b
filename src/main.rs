//! The `agentbash` binary: parse arguments, call the library, map to an exit code.

use std::process::ExitCode;

fn main() -> ExitCode {
    agentbash::process::spawn::make_non_dumpable();
    // Every handler the binary installs is noted (`on_stop_signals`, the MCP
    // server's tokio handlers): its commands reset just those.
    agentbash::process::signals::every_handler_is_noted();
    if let Some(dir) = agentbash::jobs::supervise::requested() {
        return ExitCode::from(agentbash::jobs::supervise::main(&dir).clamp(0, 255) as u8);
    }
    let cli = agentbash::cli::Cli::parse_args();
    let code = agentbash::commands::dispatch(cli);
    ExitCode::from(code.clamp(0, 255) as u8)
}
