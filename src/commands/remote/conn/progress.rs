//! Live output: progress notifications routed to the call whose token they carry, passed on
//! while the call waits for its answer, and the rest of it once the answer came.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;
use tokio::sync::mpsc;

use super::super::Failure;
use super::Reply;

/// Progress routes: a call's token → where its output goes. Progress that arrives before
/// the call registered its token (the token is only known once the request is sent) waits in
/// `early`.
#[derive(Default)]
pub(super) struct Routes {
    pub(super) live: HashMap<ProgressToken, mpsc::UnboundedSender<String>>,
    pub(super) early: HashMap<ProgressToken, Vec<String>>,
}

pub(super) type SharedRoutes = Arc<Mutex<Routes>>;

pub(super) struct Handler {
    pub(super) name: &'static str,
    pub(super) routes: SharedRoutes,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(self.name, env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        let Some(text) = params.message else { return };
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        match routes.live.get(&params.progress_token) {
            Some(tx) => {
                // The call may have ended already; late output is then dropped.
                let _ = tx.send(text);
            }
            None => routes
                .early
                .entry(params.progress_token)
                .or_default()
                .push(text),
        }
    }
}
/// A call's progress route, forgotten when the call ends however it ends.
pub(super) struct Route<'a> {
    pub(super) routes: &'a SharedRoutes,
    pub(super) token: ProgressToken,
    pub(super) rx: mpsc::UnboundedReceiver<String>,
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        routes.live.remove(&self.token);
        routes.early.remove(&self.token);
    }
}

/// Passes output on until the answer comes: `Err` with what `stop` gave when it came first,
/// `Err(None)` when the deadline did.
pub(super) async fn wait<R>(
    mut response: std::pin::Pin<&mut impl std::future::Future<Output = R>>,
    deadline: Option<Duration>,
    stop: impl std::future::Future<Output = Failure>,
    rx: &mut mpsc::UnboundedReceiver<String>,
    on_output: &mut impl FnMut(&str),
) -> Result<R, Option<Failure>> {
    let mut stop = std::pin::pin!(stop);
    let sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let mut sleep = std::pin::pin!(sleep);
    loop {
        tokio::select! {
            biased;
            Some(text) = rx.recv() => on_output(&text),
            r = &mut response => return Ok(r),
            f = &mut stop => return Err(Some(f)),
            () = &mut sleep => return Err(None),
        }
    }
}

/// The output the answer holds that did not stream: the answer's own captured output says
/// how much is missing when it holds all of it; otherwise waits briefly for the rest.
pub(super) async fn rest_of_output(
    reply: &Reply,
    streamed: &str,
    rx: &mut mpsc::UnboundedReceiver<String>,
    on_output: &mut impl FnMut(&str),
) {
    let full = reply.data.get("output").and_then(Value::as_str);
    let truncated = reply.data.get("outputTruncated").and_then(Value::as_bool) == Some(true);
    match full.and_then(|f| f.strip_prefix(streamed)) {
        Some(rest) if !truncated && !streamed.is_empty() => {
            if !rest.is_empty() {
                on_output(rest);
            }
        }
        _ if !streamed.is_empty() => {
            while let Ok(Some(text)) =
                tokio::time::timeout(Duration::from_millis(200), rx.recv()).await
            {
                on_output(&text);
            }
        }
        // Nothing streamed (the host does not stream this call): the captured output is
        // all there is.
        _ => {
            if let Some(f) = full
                && !f.is_empty()
            {
                on_output(f);
            }
        }
    }
}
