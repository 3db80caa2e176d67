//! Bodies rmcp would answer in plain text, answered as the specifications say, before rmcp
//! sees them: JSON-RPC 2.0 (section 5.1: `-32700` for a body that is no JSON, `-32600` for one
//! that is no request) with the HTTP statuses of MCP's Streamable HTTP transport, and `DELETE`
//! of a session this host does not know is a 404 (rmcp 3.11 answers 415, plain text, for the
//! first two, a plain-text 413, and 202 for the last).
//!
//! Batches (a JSON array), defined by the 2025-03-26 revision only and removed in 2025-06-18,
//! are not served in any session: no MCP client sends them, and rmcp has no batch type. They
//! get a 400 with `-32600` that says to send one message per POST.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::SessionManager;
use serde_json::{Value, json};

use super::streams::Sessions;

/// What the edge needs: the body limit and the sessions (for `DELETE`).
pub struct Edge {
    pub max_body_bytes: usize,
    pub sessions: Arc<Sessions>,
}

/// A JSON-RPC error response (`id` null when the request's id is unknown) with an HTTP status.
fn refusal(status: StatusCode, id: Value, code: i64, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (status, axum::Json(body)).into_response()
}

/// Whether the request says its body is JSON (rmcp answers other types 415, rightly).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// Checks a `POST`'s body and a `DELETE`'s session, then hands the request on to rmcp.
pub async fn edge(State(edge): State<Arc<Edge>>, req: Request, next: Next) -> Response {
    if req.method() == Method::DELETE {
        return delete(&edge, req, next).await;
    }
    if req.method() != Method::POST || !is_json(req.headers()) {
        return next.run(req).await;
    }
    let limit = edge.max_body_bytes;
    let too_big = || {
        refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            Value::Null,
            -32600,
            format!(
                "request too large: its body exceeds this host's limit of {limit} bytes (max_body_bytes); send less per call, e.g. write a big file in pieces"
            ),
        )
    };
    // Read up to the limit, as rmcp did, even when Content-Length says more: a client still
    // sending its body when the answer comes may not read the answer.
    let (parts, body) = req.into_parts();
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            let why = "the request body could not be read to its end".to_owned();
            return refusal(StatusCode::BAD_REQUEST, Value::Null, -32600, why);
        };
        if bytes.len() + chunk.len() > limit {
            return too_big();
        }
        bytes.extend_from_slice(&chunk);
    }
    if let Some(refused) = refused_body(&bytes) {
        return refused;
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The answer to a body rmcp cannot take as a message, as JSON-RPC says it; `None` when it can.
/// A good body costs one typed parse, as rmcp's own; only a bad one is looked at again.
fn refused_body(bytes: &[u8]) -> Option<Response> {
    let Err(typed) = serde_json::from_slice::<ClientJsonRpcMessage>(bytes) else {
        return None;
    };
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            let why = format!("Parse error: the body is not JSON ({e})");
            return Some(refusal(StatusCode::BAD_REQUEST, Value::Null, -32700, why));
        }
    };
    if value.is_array() {
        let why = "Invalid Request: JSON-RPC batches are not served (MCP 2025-06-18 removed them): send one message per POST";
        return Some(refusal(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32600,
            why.to_owned(),
        ));
    }
    // A known method with params of the wrong shape, or no JSON-RPC message at all.
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let (code, what) = match value.get("method").and_then(Value::as_str) {
        Some(m) if value.get("params").is_some() => (-32602, format!("Invalid params for {m}")),
        _ => (-32600, "Invalid Request".to_owned()),
    };
    let why = format!("{what}: {typed}");
    Some(refusal(StatusCode::BAD_REQUEST, id, code, why))
}

/// `DELETE` of a session: 404 when it is unknown (ended, expired, or never made), else rmcp
/// ends it ([`Sessions`] cancels its running calls first).
async fn delete(edge: &Edge, req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(|s| -> rmcp::transport::streamable_http_server::SessionId { s.into() });
    if let Some(id) = id
        && !edge.sessions.has_session(&id).await.unwrap_or(false)
    {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": "not_found",
                "error_description": "no such MCP session: it ended or was never opened here"})),
        )
            .into_response();
    }
    next.run(req).await
}
