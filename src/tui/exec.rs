//! Carrying out [`Intent`]s against the session. Requests run in their own tasks that hold the
//! ticket until the outcome (dropping it would cancel); outcomes reach the screen through the
//! session's output rings like anybody's, so nothing here draws.

use serde_json::Value;
use tokio::sync::mpsc;

use super::app::{AppMsg, Intent};
use crate::session::{Origin, RequestSpec, Session};

/// Starts what an intent asks for. Failures to start become notices.
pub fn execute(session: &Session, intent: Intent, msg_tx: &mpsc::UnboundedSender<AppMsg>) {
    let notice = |text: String| {
        // The app is gone only when the loop is, and then nobody needs the notice.
        let _ = msg_tx.send(AppMsg::Notice { text, error: true });
    };
    match intent {
        Intent::Start {
            targets,
            kind,
            payload,
            deadline,
        } => {
            let mut started = 0;
            for target in &targets {
                // The person's runs have no deadline unless one was asked for with `t`.
                let spec = RequestSpec::new(kind.clone(), payload.clone());
                let spec = match deadline {
                    Some(d) => spec.timeout(Some(d)),
                    None => spec.without_deadline(),
                };
                match session.start(target, spec, Origin::Person) {
                    Ok(ticket) => {
                        started += 1;
                        tokio::spawn(async move {
                            // The outcome is shown from the output ring; the ticket is kept
                            // here only so the request is not cancelled.
                            let _ = ticket.wait().await;
                        });
                    }
                    Err(e) => notice(format!("{target}: {e}")),
                }
            }
            if started > 1 {
                let _ = msg_tx.send(AppMsg::Notice {
                    text: format!("sent {kind} to {started} computers"),
                    error: false,
                });
            }
        }
        Intent::Answer(request_id, answer) => {
            if let Err(e) = session.answer(&request_id, answer) {
                notice(e.to_string());
            }
        }
        Intent::ReloadPolicy => {
            let msg = match session.reload_policy() {
                Ok(()) => AppMsg::Notice {
                    text: "policy reloaded".to_owned(),
                    error: false,
                },
                Err(e) => AppMsg::Notice {
                    text: format!("policy not reloaded (the old one stays): {e}"),
                    error: true,
                },
            };
            let _ = msg_tx.send(msg);
        }
        Intent::Complete { target, dir } => {
            let session = session.clone();
            let tx = msg_tx.clone();
            tokio::spawn(async move {
                let spec =
                    RequestSpec::new("list-files", serde_json::json!({ "path": dir })).quiet();
                let msg = match session.request(&target, spec, Origin::Person).await {
                    Ok(v) if v.get("ok").and_then(Value::as_bool) != Some(false) => {
                        let entries = v
                            .get("entries")
                            .and_then(Value::as_array)
                            .map(|list| {
                                list.iter()
                                    .filter_map(|e| {
                                        let name = e.get("name")?.as_str()?.to_owned();
                                        let dir = e.get("dir").and_then(Value::as_bool);
                                        Some((name, dir == Some(true)))
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        AppMsg::Completion { dir, entries }
                    }
                    Ok(v) => AppMsg::Notice {
                        text: format!(
                            "list-files {dir:?}: {}",
                            v.get("error").and_then(Value::as_str).unwrap_or("failed")
                        ),
                        error: true,
                    },
                    Err(e) => AppMsg::Notice {
                        text: format!("list-files {dir:?}: {e}"),
                        error: true,
                    },
                };
                let _ = tx.send(msg);
            });
        }
        Intent::Cancel(id) => match session.cancel_by(&id, &crate::session::Origin::Person) {
            Ok(()) => {
                let _ = msg_tx.send(AppMsg::Notice {
                    text: format!("cancelling {id}"),
                    error: false,
                });
            }
            Err(e) => notice(e.to_string()),
        },
        Intent::Input { target, steps } => {
            match session.start_input(&target, steps, Origin::Person) {
                Ok(ticket) => {
                    let tx = msg_tx.clone();
                    tokio::spawn(async move {
                        if let Err(e) = ticket.wait().await {
                            let _ = tx.send(AppMsg::Notice {
                                text: format!("input to {target}: {e}"),
                                error: true,
                            });
                        }
                    });
                }
                Err(e) => notice(format!("input to {target}: {e}")),
            }
        }
        Intent::Quit => {}
    }
}
