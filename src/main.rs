//! The `trapdesk` binary: parses the command line, starts the async runtime and runs the
//! command ([`trapdesk::commands::run`]). Everything else lives in the library.

use std::process::ExitCode;

use clap::Parser;
use trapdesk::commands::{self, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("trapdesk: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(commands::run(cli));
    // Dropping a runtime waits for every blocking task without bound (a terminal read, an
    // emulated computer's Lua thread); none of them holds anything to save by now.
    rt.shutdown_timeout(std::time::Duration::from_millis(500));
    commands::exit_code(result)
}
