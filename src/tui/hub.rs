//! The one interface between the console and the session: every call the console makes goes
//! through [`Hub`], so that the console can later run attached to a host in another process by
//! implementing it over a connection. [`Session`] implements it in process.
//!
//! The calls are the console's own words, not the session's: the person's runs have one origin,
//! tickets are kept inside (dropping one would cancel its request), and errors arrive as the
//! text the status line shows.

use std::future::Future;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;

use crate::protocol::Kind;
use crate::protocol::kind::ListFiles;
use crate::session::screen::ScreenFrame;
use crate::session::{
    self, Answer, Approval, ComputerInfo, Origin, OutputItem, PendingInfo, RequestSpec, Session,
    ToolCall,
};

/// Keeps something alive on the hub's side while held (a watched screen, the approver count);
/// dropping it lets go. Boxed so that the console's state does not depend on which hub it has.
pub type Hold = Box<dyn Send>;

/// What the console asks of the session.
pub trait Hub: Clone + Send + Sync + 'static {
    /// While held, the policy's `ask` goes to this console.
    fn attach_approver(&self) -> Hold;
    /// Notifications of what changed ("notify, then pull").
    fn subscribe(&self) -> broadcast::Receiver<session::Event>;

    fn computers(&self) -> Vec<ComputerInfo>;
    fn pending(&self) -> Vec<PendingInfo>;
    fn tool_calls(&self) -> Vec<ToolCall>;
    fn approvals(&self) -> Vec<Approval>;
    /// The policy in force, as the lines the F7 popup shows.
    fn policy_lines(&self) -> Vec<String>;
    /// A computer's output after cursor `after`.
    fn output_since(&self, trapos_id: &str, after: u64) -> Vec<OutputItem>;

    /// Asks for the computer's terminal to be mirrored while the hold lives.
    fn watch_screen(&self, trapos_id: &str) -> Option<Hold>;
    fn screen(&self, trapos_id: &str) -> Option<ScreenFrame>;

    /// Starts the person's request on one computer; the outcome arrives through its output.
    ///
    /// # Errors
    /// Why it could not start (unknown computer, full queue, the policy, shutting down).
    fn run(
        &self,
        target: &str,
        kind: Kind,
        payload: Value,
        deadline: Option<Duration>,
    ) -> Result<(), String>;
    /// `list-files` of `dir` on `target`, quietly (completion is not output to show).
    fn list_files(
        &self,
        target: &str,
        dir: &str,
    ) -> impl Future<Output = Result<Value, String>> + Send + 'static;
    /// Sends input to a computer's terminal; the future ends when the computer took it.
    ///
    /// # Errors
    /// Why the input could not be sent at all.
    fn input(
        &self,
        target: &str,
        steps: Vec<Value>,
    ) -> Result<impl Future<Output = Result<(), String>> + Send + 'static, String>;
    /// # Errors
    /// Why the request cannot be cancelled (unknown, or not the person's to cancel).
    fn cancel(&self, request_id: &str) -> Result<(), String>;
    /// # Errors
    /// When no approval of that request is waiting.
    fn answer(&self, request_id: &str, answer: Answer) -> Result<(), String>;
    /// # Errors
    /// Why the config file's policy was not taken (the old one stays).
    fn reload_policy(&self) -> Result<(), String>;
    /// Stops all agents; returns what the status line says.
    fn pause(&self) -> String;
    /// Lets agents run again; returns what the status line says.
    fn resume(&self) -> String;
    /// Whether all agents are stopped.
    fn paused(&self) -> bool;
    /// Says the person has the computer's keyboard (attached) while the hold lives.
    fn hold_keyboard(&self, trapos_id: &str) -> Hold;
}

impl Hub for Session {
    fn attach_approver(&self) -> Hold {
        Box::new(Session::attach_approver(self))
    }

    fn subscribe(&self) -> broadcast::Receiver<session::Event> {
        Session::subscribe(self)
    }

    fn computers(&self) -> Vec<ComputerInfo> {
        Session::computers(self)
    }

    fn pending(&self) -> Vec<PendingInfo> {
        Session::pending(self)
    }

    fn tool_calls(&self) -> Vec<ToolCall> {
        Session::tool_calls(self)
    }

    fn approvals(&self) -> Vec<Approval> {
        Session::approvals(self)
    }

    fn policy_lines(&self) -> Vec<String> {
        Session::policy(self).describe()
    }

    fn output_since(&self, trapos_id: &str, after: u64) -> Vec<OutputItem> {
        Session::output_since(self, trapos_id, after)
    }

    fn watch_screen(&self, trapos_id: &str) -> Option<Hold> {
        Session::watch_screen(self, trapos_id)
            .ok()
            .map(|w| Box::new(w) as Hold)
    }

    fn screen(&self, trapos_id: &str) -> Option<ScreenFrame> {
        Session::screen(self, trapos_id)
    }

    fn run(
        &self,
        target: &str,
        kind: Kind,
        payload: Value,
        deadline: Option<Duration>,
    ) -> Result<(), String> {
        // The person's runs have no deadline unless one was asked for with `t`.
        let spec = RequestSpec::new(kind, payload);
        let spec = match deadline {
            Some(d) => spec.timeout(Some(d)),
            None => spec.without_deadline(),
        };
        let ticket = self
            .start(target, spec, Origin::Person)
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            // The outcome is shown from the output ring; the ticket is kept here only so the
            // request is not cancelled.
            let _ = ticket.wait().await;
        });
        Ok(())
    }

    fn list_files(
        &self,
        target: &str,
        dir: &str,
    ) -> impl Future<Output = Result<Value, String>> + Send + 'static {
        let session = self.clone();
        let target = target.to_owned();
        let spec = RequestSpec::of(&ListFiles {
            path: dir.to_owned(),
        })
        .quiet();
        async move {
            session
                .request(&target, spec, Origin::Person)
                .await
                .map_err(|e| e.to_string())
        }
    }

    fn input(
        &self,
        target: &str,
        steps: Vec<Value>,
    ) -> Result<impl Future<Output = Result<(), String>> + Send + 'static, String> {
        let ticket = self
            .start_input(target, steps, Origin::Person)
            .map_err(|e| e.to_string())?;
        Ok(async move { ticket.wait().await.map(drop).map_err(|e| e.to_string()) })
    }

    fn cancel(&self, request_id: &str) -> Result<(), String> {
        self.cancel_by(request_id, &Origin::Person)
            .map_err(|e| e.to_string())
    }

    fn answer(&self, request_id: &str, answer: Answer) -> Result<(), String> {
        Session::answer(self, request_id, answer).map_err(|e| e.to_string())
    }

    fn reload_policy(&self) -> Result<(), String> {
        Session::reload_policy(self).map_err(|e| e.to_string())
    }

    fn pause(&self) -> String {
        let r = Session::pause(self, "console");
        if r.already {
            return "agents are already stopped".to_owned();
        }
        format!(
            "all agents stopped: their runs and writes are refused ({} running call(s) cancelled); reads go on",
            r.stopped
        )
    }

    fn resume(&self) -> String {
        if Session::resume(self, "console") {
            "agents may run again".to_owned()
        } else {
            "agents were not stopped".to_owned()
        }
    }

    fn paused(&self) -> bool {
        Session::paused(self).is_some()
    }

    fn hold_keyboard(&self, trapos_id: &str) -> Hold {
        Box::new(Session::hold_keyboard(self, trapos_id))
    }
}
