//! `trapdesk pause` and `trapdesk resume`: a command of the person's own, asked of the running
//! host over its control channel (`control_client` finds the host and asks; this file is the
//! command's flags, exit codes and words).

use super::control_client;
use super::remote::{ClientArgs, Failure, exit};

/// `trapdesk pause` (`pause` true) and `trapdesk resume`, over the control channel of the host
/// the client flags name.
///
/// # Errors
/// Exit code 3 when no host answers or it refuses the local token; 2 for a bad `--connect`.
pub async fn pause(a: &ClientArgs, pause: bool) -> Result<(), Failure> {
    let data_dir = a
        .data_dir
        .clone()
        .or_else(trapdesk_core::config::default_data_dir)
        .ok_or_else(|| Failure::new(exit::USAGE, "no home directory: pass --data-dir"))?;
    let url = control_client::target(a.connect.as_deref(), &data_dir)
        .map_err(|e| Failure::new(exit::UNREACHABLE, e.to_string()))?;
    let base = control_client::base_of(&url).ok_or_else(|| {
        Failure::new(
            exit::USAGE,
            format!("--connect {url:?} is not an http:// or https:// URL"),
        )
    })?;
    let what = if pause { "pause" } else { "resume" };
    let r: crate::control::PauseAnswer = control_client::tell(&base, &data_dir, what)
        .await
        .map_err(|e| Failure::new(exit::UNREACHABLE, e.to_string()))?;
    if a.json {
        println!("{}", serde_json::to_string(&r).unwrap_or_default());
        return Ok(());
    }
    match (pause, r.already) {
        (true, false) => println!(
            "agents stopped: their calls that run code, type or write are refused with `paused` ({} ended now); reads go on. `trapdesk resume` lets them run again.",
            r.stopped
        ),
        (true, true) => {
            println!("agents were already stopped; `trapdesk resume` lets them run again.")
        }
        (false, false) => println!("agents may run code, type and write again."),
        (false, true) => println!("agents were not stopped; nothing changed."),
    }
    Ok(())
}
