//! A computer's first seconds: its `hello` within the deadline, checked (framing, protocol
//! version, secret, enrolment), its registration with the session and the `welcome`. Anything
//! wrong is told to the computer and closed with the protocol's code; the session logs why.

use futures_util::StreamExt;
use tokio::sync::mpsc;

use axum::extract::ws::Message as WsMessage;

use super::GatewayState;
use super::door::{Peer, Place};
use super::protocol::{
    CLOSE_AUTH_FAILED, CLOSE_BAD_HELLO, CLOSE_GOING_AWAY, CLOSE_HELLO_TIMEOUT,
    CLOSE_TRY_AGAIN_LATER, CLOSE_UNSUPPORTED_PROTOCOL, Hello, HelloError, Message,
    PROTOCOL_VERSION, wire,
};
use super::sender::Sender;
use super::socket::{SocketRx, SocketTx};
use trapdesk_core::session::{Link, Outbound};
use trapdesk_core::trust::secrets::Verdict;

/// A binding this connection made pending by enrolling its computer: confirmed when the
/// computer says `enrolled` (boxed: most links never enrol, and every idle link holds this).
pub(super) type Enrolling = Option<Box<(u64, String)>>;

/// The handshake, the session's registration and the `welcome`: the link, its outbound queue
/// and the binding it enrolled, or `None` when the computer was turned away or went away
/// (already reported).
pub(super) async fn start(
    rx: &mut impl SocketRx,
    out: &mut Sender<impl SocketTx>,
    state: &GatewayState,
    peer: Option<Peer>,
) -> Option<(Link, mpsc::Receiver<Outbound>, Enrolling)> {
    let addr = peer.as_ref().map(|p| p.addr);
    let place = peer.map(|p| p.place);
    if let Some(p) = &place {
        p.upgraded();
    }
    let accepted = match handshake(rx, out, state, place.as_deref()).await {
        Ok(a) => a,
        Err(Refused { who, why }) => {
            if let Some(why) = why {
                state.stats.refused();
                state.session.link_refused(who.as_deref(), addr, &why);
            }
            return None;
        }
    };
    let Accepted {
        hello,
        enrolled,
        upgrades_itself,
        machine,
        detached,
    } = accepted;
    // A trapdesk client too old to upgrade itself is upgraded by the host, once linked.
    let old_client = (!upgrades_itself)
        .then(|| hello.client.clone())
        .flatten()
        .filter(|c| c.starts_with(super::upgrade::CLIENT_PREFIX));
    out.limit = hello.max_message.unwrap_or(131_072).max(256) as usize;
    // File contents and output go as raw bytes both ways once the client says it can
    // (docs/protocol.md, "Binary frames"); the welcome tells it the host takes them too.
    out.binary = machine.binary == Some(true);
    // Room for every request the session may have in flight plus a cancel for each, whatever
    // `outbound_queue` says: filling it must mean the socket stopped taking messages.
    let room = state
        .settings
        .outbound_queue
        .max(2 * state.settings.max_in_flight + 8);
    let (otx, orx) = mpsc::channel(room);
    let mut link = state.session.link(&hello, otx);
    link.describe(machine);
    // Before `welcome`: the output and answers the computer kept queue behind its welcome.
    state.session.adopt(&link, detached);
    let id = hello.computer_id;
    let (secret, enrolling) = match enrolled {
        Some(e) => {
            link.holds(e.secret_sha256.clone());
            (Some(e.secret), Some(Box::new((id, e.secret_sha256))))
        }
        None => (None, None),
    };
    let welcome = Message::Welcome {
        protocol: PROTOCOL_VERSION,
        trapos_id: hello.trapos_id(),
        heartbeat_ms: state.settings.heartbeat.as_millis() as u64,
        max_message: state.settings.max_message,
        secret,
        client_version: Some(trapdesk_client::lua_files::version().to_owned()),
        binary: out.binary.then_some(true),
    };
    // The session has what it needs; the hello (its strings, the secret among them) ends with
    // this function, not kept for the link's whole life.
    drop(hello);
    if let Err(e) = out.send(&welcome).await {
        link.set_reason(format!("welcome not sent: {e}"));
        return None;
    }
    if let Some(place) = place {
        place.linked();
    }
    if let Some(client) = old_client {
        super::upgrade::push(state.session.clone(), link.trapos_id().to_owned(), client);
    }
    Some((link, orx, enrolling))
}

/// A link attempt that ended before `welcome`: who it claimed to be and why it was turned
/// away (`None` when the peer simply went away or the host is stopping: nothing to report).
struct Refused {
    who: Option<String>,
    why: Option<String>,
}

impl Refused {
    fn quiet() -> Self {
        Refused {
            who: None,
            why: None,
        }
    }

    fn because(who: Option<String>, why: impl Into<String>) -> Self {
        Refused {
            who,
            why: Some(why.into()),
        }
    }
}

/// A hello that passed, and the secret it enrolled, if it did.
struct Accepted {
    hello: Hello,
    enrolled: Option<trapdesk_core::trust::secrets::Enrolled>,
    /// Whether the client fetches a newer client by itself when `welcome` names one; a
    /// trapdesk client from before that (0.1) is upgraded by the host instead (`upgrade.rs`).
    upgrades_itself: bool,
    /// What the computer is, as its hello said.
    machine: trapdesk_proto::protocol::MachineInfo,
    /// Detached runs the computer kept through a dropped link (its hello's `detached`).
    detached: Vec<trapdesk_proto::protocol::DetachedRun>,
}

/// Runs blocking work on the secrets file off the gateway's threads.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, trapdesk_core::trust::secrets::SecretError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(e) => Err(format!("the secrets task failed: {e}")),
    }
}

/// Waits for `hello` and checks it. On any failure the computer is told why and closed.
async fn handshake(
    rx: &mut impl SocketRx,
    out: &mut Sender<impl SocketTx>,
    state: &GatewayState,
    place: Option<&Place>,
) -> Result<Accepted, Refused> {
    let text = first_frame(rx, out, state, place).await?;
    let (hello, enrol, upgrades_itself, machine, detached) = parse(&text, out).await?;
    let mut accepted = judge(hello, enrol, out, state).await?;
    accepted.upgrades_itself = upgrades_itself;
    accepted.machine = machine;
    accepted.detached = detached;
    Ok(accepted)
}

/// The first text frame, within the hello deadline (and while this connection is not pushed
/// out by newer ones waiting to link, and the host is not stopping).
async fn first_frame(
    rx: &mut impl SocketRx,
    out: &mut Sender<impl SocketTx>,
    state: &GatewayState,
    place: Option<&Place>,
) -> Result<String, Refused> {
    let deadline = tokio::time::sleep(state.settings.hello_timeout);
    tokio::pin!(deadline);
    let pushed_out = async {
        match place {
            Some(p) => p.pushed_out().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(pushed_out);
    loop {
        tokio::select! {
            biased;
            () = &mut pushed_out => {
                out.error(
                    "try_again_later",
                    "too many connections are waiting to link; this one waited longest",
                    None,
                )
                .await;
                out.close(CLOSE_TRY_AGAIN_LATER, "try_again_later").await;
                return Err(Refused::quiet());
            }
            _ = &mut deadline => {
                out.error("hello_timeout", "no hello within the deadline", None).await;
                out.close(CLOSE_HELLO_TIMEOUT, "hello_timeout").await;
                return Err(Refused::because(None, "no hello within the deadline (hello_timeout)"));
            }
            _ = state.shutdown.cancelled() => {
                out.close(CLOSE_GOING_AWAY, "host shutting down").await;
                return Err(Refused::quiet());
            }
            frame = rx.next() => match frame {
                None | Some(Err(_)) | Some(Ok(WsMessage::Close(_))) => return Err(Refused::quiet()),
                Some(Ok(WsMessage::Text(t))) => return Ok(t.to_string()),
                Some(Ok(WsMessage::Binary(_))) => {
                    out.error("bad_hello", "expected a hello text frame, got binary", None).await;
                    out.close(CLOSE_BAD_HELLO, "bad_hello").await;
                    return Err(Refused::because(None, "bad_hello: a binary frame instead of hello"));
                }
                Some(Ok(_)) => continue,
            }
        }
    }
}

/// The hello a frame holds and whether it asks to enrol; a bad or unsupported one is told and
/// closed with its code.
async fn parse(
    text: &str,
    out: &mut Sender<impl SocketTx>,
) -> Result<
    (
        Hello,
        bool,
        bool,
        trapdesk_proto::protocol::MachineInfo,
        Vec<trapdesk_proto::protocol::DetachedRun>,
    ),
    Refused,
> {
    let hello = wire::decode(text)
        .map_err(|e| HelloError::Bad(e.to_string()))
        .and_then(|v| {
            Ok((
                Hello::from_value(&v)?,
                Hello::enrol_of(&v)?,
                Hello::upgrades_itself(&v),
                Hello::machine_of(&v),
                Hello::detached_of(&v)?,
            ))
        });
    match hello {
        Ok(h) => Ok(h),
        Err(HelloError::Bad(msg)) => {
            out.error("bad_hello", msg.clone(), None).await;
            out.close(CLOSE_BAD_HELLO, "bad_hello").await;
            Err(Refused::because(None, format!("bad_hello: {msg}")))
        }
        Err(e @ HelloError::Unsupported(_)) => {
            out.error("unsupported_protocol", e.to_string(), None).await;
            out.close(CLOSE_UNSUPPORTED_PROTOCOL, "unsupported_protocol")
                .await;
            Err(Refused::because(None, format!("unsupported_protocol: {e}")))
        }
    }
}

/// The hello's secret against the stores: linked (enrolled, or its enrolment made firm), or
/// refused with `auth_failed`.
async fn judge(
    hello: Hello,
    enrol: bool,
    out: &mut Sender<impl SocketTx>,
    state: &GatewayState,
) -> Result<Accepted, Refused> {
    // Every hello's secret is checked, at once: a right one links whatever else its address
    // is doing, a wrong one is refused now (holding it open would buy nothing).
    let id = hello.computer_id;
    let label = hello.label.clone();
    let verdict = state
        .secrets
        .check(id, label.as_deref(), &hello.secret, enrol);
    let refusal = match verdict {
        Verdict::Shared | Verdict::Own { pending: false } => None,
        Verdict::Own { pending: true } => {
            // The computer has its secret (it just presented it): the binding is firm now,
            // even if its `enrolled` was lost.
            let dir = state.secrets.dir().to_owned();
            let hash = trapdesk_core::trust::hash(&hello.secret);
            if let Err(e) =
                blocking(move || trapdesk_core::trust::secrets::confirm(&dir, id, &hash)).await
            {
                tracing::warn!(computer = %hello.trapos_id(), "enrolment not made firm: {e}");
            }
            None
        }
        Verdict::Enrol => {
            let dir = state.secrets.dir().to_owned();
            let l = label.clone();
            match blocking(move || trapdesk_core::trust::secrets::enrol(&dir, id, l.as_deref()))
                .await
            {
                Ok(Ok(e)) => {
                    tracing::info!(computer = %hello.trapos_id(), "enrolled: the computer has a secret of its own (pending until it says it stored it)");
                    return Ok(Accepted {
                        hello,
                        enrolled: Some(e),
                        upgrades_itself: true,
                        machine: Default::default(),
                        detached: Vec::new(),
                    });
                }
                Ok(Err(refusal)) => Some(refusal),
                Err(e) => {
                    // The shared secret was right: link as a client that cannot enrol would,
                    // rather than turn a computer away for the host's own disk.
                    tracing::warn!(computer = %hello.trapos_id(), "not enrolled, linked with the shared secret: {e}");
                    None
                }
            }
        }
        Verdict::Refused(r) => Some(r),
    };
    if let Some(refusal) = refusal {
        // Logged by the session (`link_refused`, bounded in a flood), never the secret itself.
        out.error("auth_failed", refusal.message(), None).await;
        out.close(CLOSE_AUTH_FAILED, "auth_failed").await;
        return Err(Refused::because(Some(hello.trapos_id()), refusal.why()));
    }
    Ok(Accepted {
        hello,
        enrolled: None,
        upgrades_itself: true,
        machine: Default::default(),
        detached: Vec::new(),
    })
}
