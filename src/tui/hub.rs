//! The one interface between the console and the session: every call the console makes goes
//! through [`Hub`]. [`Session`] implements it in process; `commands::attach::RemoteHub`
//! implements it over the control channel (`trapdesk attach`), so the console attached to a
//! host in another process is this same console, not a second one.
//!
//! The calls are the console's own words, not the session's: the person's runs have one origin,
//! tickets are kept inside (dropping one would cancel its request), and errors arrive as the
//! text the status line shows. Reads are snapshots, answered at once (a remote hub answers
//! them from its mirror); calls that change something return a future, because over a
//! connection their outcome comes back later (in process it is ready at once).

use std::future::Future;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;

use trapdesk_core::session::screen::{Display, ScreenFrame};
use trapdesk_core::session::{
    self, Answer, Approval, ComputerInfo, OutputItem, PendingInfo, Session, ToolCall,
};
use trapdesk_proto::protocol::RequestBody;

use super::words;

/// Keeps something alive on the hub's side while held (a watched screen, the approver count);
/// dropping it lets go. Boxed so that the console's state does not depend on which hub it has.
pub type Hold = Box<dyn Send>;

/// What the console asks of the session.
pub trait Hub: Clone + Send + Sync + 'static {
    /// The name this console answers approvals under, as the other consoles say it.
    fn name(&self) -> String;
    /// The host this console is attached to, in words (`trapdesk@mc-server at
    /// 127.0.0.1:4445`); `None` in the host's own process.
    fn attached_to(&self) -> Option<String>;
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
    /// Where the policy is read from, in words: the config file, or where a file would be
    /// read from and that none is there (the defaults).
    fn policy_source(&self) -> String;
    /// The shared secret computers link with now (a rotation by another process included).
    fn secret(&self) -> String;
    /// A computer's output after cursor `after`.
    fn output_since(&self, trapos_id: &str, after: u64) -> Vec<OutputItem>;

    /// Asks for one display of the computer (its terminal or a monitor) to be mirrored while
    /// the hold lives; watching a monitor does not watch the terminal, nor the reverse.
    fn watch_screen(&self, trapos_id: &str, display: &Display) -> Option<Hold>;
    fn screen(&self, trapos_id: &str, display: &Display) -> Option<ScreenFrame>;
    /// Asks the computer for its status (peripherals, monitors, a turtle's fuel and slot)
    /// without waiting: it comes back on the computer's entry (`ComputerInfo::status`).
    fn refresh_status(&self, trapos_id: &str);

    /// Starts the person's request on one computer; the outcome arrives through its output.
    ///
    /// # Errors
    /// Why it could not start (unknown computer, full queue, the policy, shutting down).
    fn run(
        &self,
        target: &str,
        body: RequestBody,
        deadline: Option<Duration>,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static;
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
    ) -> impl Future<Output = Result<(), String>> + Send + 'static;
    /// Touches a monitor attached to a computer at a cell (1-based): the computer queues CC's
    /// `monitor_touch`. The future ends when the computer took it.
    ///
    /// # Errors
    /// Why the touch was not sent or was refused (a cell outside the monitor, a monitor not
    /// attached, a client without monitor shadows).
    fn touch(
        &self,
        target: &str,
        monitor: &str,
        x: u32,
        y: u32,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static;
    /// # Errors
    /// Why the request cannot be cancelled (unknown, or not the person's to cancel).
    fn cancel(&self, request_id: &str)
    -> impl Future<Output = Result<(), String>> + Send + 'static;
    /// Answers as [`Hub::name`]; the first answer of any console wins.
    ///
    /// # Errors
    /// When no approval of that request is waiting.
    fn answer(
        &self,
        request_id: &str,
        answer: Answer,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static;
    /// # Errors
    /// Why the config file's policy was not taken (the old one stays).
    fn reload_policy(&self) -> impl Future<Output = Result<String, String>> + Send + 'static;
    /// Stops all agents; says what the status line says.
    fn pause(&self) -> impl Future<Output = String> + Send + 'static;
    /// Lets agents run again; says what the status line says.
    fn resume(&self) -> impl Future<Output = String> + Send + 'static;
    /// Whether all agents are stopped.
    fn paused(&self) -> bool;
    /// Says the person has the computer's keyboard (attached) while the hold lives.
    fn hold_keyboard(&self, trapos_id: &str) -> Hold;
}

impl Hub for Session {
    fn name(&self) -> String {
        words::LOCAL_CONSOLE.to_owned()
    }

    fn attached_to(&self) -> Option<String> {
        None
    }

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
        words::policy_lines(self)
    }

    fn policy_source(&self) -> String {
        words::policy_source(self)
    }

    fn secret(&self) -> String {
        words::secret_now(self)
    }

    fn output_since(&self, trapos_id: &str, after: u64) -> Vec<OutputItem> {
        Session::output_since(self, trapos_id, after)
    }

    fn watch_screen(&self, trapos_id: &str, display: &Display) -> Option<Hold> {
        Session::watch_screen(self, trapos_id, display.clone())
            .ok()
            .map(|w| Box::new(w) as Hold)
    }

    fn screen(&self, trapos_id: &str, display: &Display) -> Option<ScreenFrame> {
        Session::screen(self, trapos_id, display)
    }

    fn refresh_status(&self, trapos_id: &str) {
        Session::refresh_status(self, trapos_id);
    }

    // In process every call below is done before it returns: the future is ready at once.

    fn run(
        &self,
        target: &str,
        body: RequestBody,
        deadline: Option<Duration>,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        std::future::ready(words::person_run(self, target, body, deadline))
    }

    fn list_files(
        &self,
        target: &str,
        dir: &str,
    ) -> impl Future<Output = Result<Value, String>> + Send + 'static {
        let session = self.clone();
        let (target, dir) = (target.to_owned(), dir.to_owned());
        async move { words::person_list_files(&session, &target, &dir).await }
    }

    fn input(
        &self,
        target: &str,
        steps: Vec<Value>,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        let sent = words::person_input(self, target, steps);
        async move { sent?.await }
    }

    fn touch(
        &self,
        target: &str,
        monitor: &str,
        x: u32,
        y: u32,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        let session = self.clone();
        let (target, monitor) = (target.to_owned(), monitor.to_owned());
        async move {
            session
                .send_touch(&target, &monitor, x, y, session::Origin::Person)
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        }
    }

    fn cancel(
        &self,
        request_id: &str,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        std::future::ready(words::person_cancel(self, request_id))
    }

    fn answer(
        &self,
        request_id: &str,
        answer: Answer,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        std::future::ready(words::answer_by(
            self,
            request_id,
            answer,
            words::LOCAL_CONSOLE,
        ))
    }

    fn reload_policy(&self) -> impl Future<Output = Result<String, String>> + Send + 'static {
        std::future::ready(words::reload_policy_words(self))
    }

    fn pause(&self) -> impl Future<Output = String> + Send + 'static {
        std::future::ready(words::pause_words(self))
    }

    fn resume(&self) -> impl Future<Output = String> + Send + 'static {
        std::future::ready(words::resume_words(self))
    }

    fn paused(&self) -> bool {
        Session::paused(self).is_some()
    }

    fn hold_keyboard(&self, trapos_id: &str) -> Hold {
        Box::new(Session::hold_keyboard(self, trapos_id))
    }
}
