//! The physical floor, measured in the same run with the same libraries: a bare
//! tokio-tungstenite WebSocket echo and a bare HTTP/1.1 POST (axum/hyper server, reqwest
//! client, as rmcp's client uses), both in this process. Every figure of the host is reported
//! as a ratio to these, which is what carries across machines.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message as Ws;

use crate::report::Series;

/// An echo server on port 0; returns its `ws://` URL.
async fn echo_server() -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let _ = tcp.set_nodelay(true);
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                while let Some(Ok(m)) = ws.next().await {
                    if m.is_text() && ws.send(m).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    Ok(format!("ws://{addr}"))
}

/// A sized message like an exec-lua request.
const MESSAGE: &str = r#"{"type":"gateway_request","id":"h-1","request":"exec-lua","payload":{"code":"return 1","name":"=exec"},"timeout_ms":30000}"#;

/// Sequential round trips on one connection, then `in_flight` connections each doing round
/// trips until `calls` are done.
pub async fn ws_echo(
    seq: usize,
    calls: usize,
    in_flight: usize,
) -> std::io::Result<(Series, Series)> {
    let url = echo_server().await?;
    let connect = || async {
        tokio_tungstenite::connect_async_with_config(url.clone(), None, true)
            .await
            .map(|(ws, _)| ws)
            .map_err(std::io::Error::other)
    };
    let mut ws = connect().await?;
    let mut lat = Series::new("bare WebSocket echo, sequential");
    let t = Instant::now();
    for _ in 0..seq {
        let s = Instant::now();
        let ok = ws.send(Ws::Text(MESSAGE.into())).await.is_ok()
            && matches!(ws.next().await, Some(Ok(_)));
        lat.push(s.elapsed(), ok);
    }
    lat.wall = t.elapsed();
    let mut conns = Vec::new();
    for _ in 0..in_flight {
        conns.push(connect().await?);
    }
    let left = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(calls));
    let t = Instant::now();
    let workers: Vec<_> = conns
        .into_iter()
        .map(|mut ws| {
            let left = left.clone();
            tokio::spawn(async move {
                let mut out = Vec::new();
                while take(&left) {
                    let s = Instant::now();
                    let ok = ws.send(Ws::Text(MESSAGE.into())).await.is_ok()
                        && matches!(ws.next().await, Some(Ok(_)));
                    out.push((s.elapsed(), ok));
                }
                out
            })
        })
        .collect();
    let mut tp = Series::new(&format!("bare WebSocket echo, {in_flight} in flight"));
    for w in workers {
        for (d, ok) in w.await.unwrap_or_default() {
            tp.push(d, ok);
        }
    }
    tp.wall = t.elapsed();
    Ok((lat, tp))
}

/// Takes one call from the shared budget; false when none are left.
pub fn take(left: &std::sync::atomic::AtomicUsize) -> bool {
    left.fetch_update(
        std::sync::atomic::Ordering::Relaxed,
        std::sync::atomic::Ordering::Relaxed,
        |n| n.checked_sub(1),
    )
    .is_ok()
}

/// A bare POST server answering with the request's body; returns its URL.
async fn post_server() -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new().route(
        "/echo",
        axum::routing::post(|body: String| async move { body }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(format!("http://{addr}/echo"))
}

/// A JSON-RPC-sized body like an MCP `tools/call`.
const BODY: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"exec-lua","arguments":{"traposId":"1:load","code":"return 1"}}}"#;

/// Sequential POSTs on one keep-alive client, then `in_flight` at once until `calls`.
pub async fn http_post(
    seq: usize,
    calls: usize,
    in_flight: usize,
) -> std::io::Result<(Series, Series)> {
    let url = post_server().await?;
    let client = reqwest::Client::new();
    let post = |client: reqwest::Client, url: String| async move {
        match client
            .post(&url)
            .header("content-type", "application/json")
            .body(BODY)
            .send()
            .await
        {
            Ok(r) => r.bytes().await.is_ok(),
            Err(_) => false,
        }
    };
    let mut lat = Series::new("bare HTTP/1.1 POST, sequential");
    let t = Instant::now();
    for _ in 0..seq {
        let s = Instant::now();
        let ok = post(client.clone(), url.clone()).await;
        lat.push(s.elapsed(), ok);
    }
    lat.wall = t.elapsed();
    let left = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(calls));
    let t = Instant::now();
    let workers: Vec<_> = (0..in_flight)
        .map(|_| {
            let (left, client, url) = (left.clone(), client.clone(), url.clone());
            tokio::spawn(async move {
                let mut out = Vec::new();
                while take(&left) {
                    let s = Instant::now();
                    let ok = post(client.clone(), url.clone()).await;
                    out.push((s.elapsed(), ok));
                }
                out
            })
        })
        .collect();
    let mut tp = Series::new(&format!("bare HTTP/1.1 POST, {in_flight} in flight"));
    for w in workers {
        for (d, ok) in w.await.unwrap_or_default() {
            tp.push(d, ok);
        }
    }
    tp.wall = t.elapsed();
    let _ = Duration::ZERO;
    Ok((lat, tp))
}
