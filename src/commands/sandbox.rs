//! `agentbash sandbox check`: what the kernel sandbox can enforce here, probed for
//! real, so a user learns before a run whether `[sandbox]` will hold.

use crate::cli::SandboxCommand;

pub fn command(c: SandboxCommand) -> i32 {
    match c {
        SandboxCommand::Check { json } => {
            let report = crate::sandbox::check();
            if json {
                match serde_json::to_string_pretty(&report) {
                    Ok(text) => crate::render::out(&format!("{text}\n")),
                    Err(e) => {
                        crate::render::report_error(format!("cannot encode the report: {e}"));
                        return crate::exit::FAILURE;
                    }
                }
            } else {
                crate::render::out(&report.to_string());
            }
            0
        }
    }
}
