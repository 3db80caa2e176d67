//! The HTTP client of trapdesk's own MCP clients (`mcp-stdio`, the CLI): rmcp's reqwest client,
//! with a refusal that has no `id` answered to the request that drew it.
//!
//! A server that refuses a body before reading its id (an oversized one: this host answers
//! 413 with a JSON-RPC error whose `id` is null, as JSON-RPC 2.0 section 5 says) cannot name
//! the request. The MCP Python SDK pairs such an error with the request it just posted; rmcp
//! 3.11's service drops id-less errors (`service.rs`, "received id-less peer error"), so the
//! call would wait forever. This client gives the error the posted request's id.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::SseError;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use rmcp::transport::{StreamableHttpClientTransport, streamable_http_client};
use sse_stream::Sse;

type Headers = HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>;
type Posted = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

/// rmcp's reqwest client that answers id-less errors to the request posted.
#[derive(Clone, Default)]
pub struct Client(reqwest::Client);

/// A transport for `config` over [`Client`].
pub fn transport(
    config: streamable_http_client::StreamableHttpClientTransportConfig,
) -> StreamableHttpClientTransport<Client> {
    StreamableHttpClientTransport::with_client(Client::default(), config)
}

/// The error gets the id of `sent` when it has none and `sent` is a request.
fn paired(sent_id: Option<rmcp::model::RequestId>, posted: Posted) -> Posted {
    match (posted, sent_id) {
        (Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(mut e), s)), Some(id))
            if e.id.is_none() =>
        {
            e.id = Some(id);
            Ok(StreamableHttpPostResponse::Json(
                ServerJsonRpcMessage::Error(e),
                s,
            ))
        }
        (posted, _) => posted,
    }
}

fn request_id(m: &ClientJsonRpcMessage) -> Option<rmcp::model::RequestId> {
    match m {
        ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

impl StreamableHttpClient for Client {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Posted {
        let id = request_id(&message);
        let posted = self
            .0
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        paired(id, posted)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Posted {
        let id = request_id(&message);
        let posted = self
            .0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        paired(id, posted)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Posted {
        let id = request_id(&message);
        let posted = self
            .0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        paired(id, posted)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
