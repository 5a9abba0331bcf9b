//! The `agentbash` binary: parse arguments, call the library, map to an exit code.

use std::process::ExitCode;

fn main() -> ExitCode {
    agentbash::process::spawn::make_non_dumpable();
    let cli = agentbash::cli::Cli::parse_args();
    let code = agentbash::commands::dispatch(cli);
    ExitCode::from(code.clamp(0, 255) as u8)
}
