//! Resources and completions through rmcp's own client over Streamable HTTP, against emulated
//! computers running the real Lua client: the templates, `resources/list`, files read as
//! text or blob with the traposId in either form, the screen as rows, the errors, and
//! completions of `traposId` and `path` that give nothing, and ask no one, where the policy
//! does not let the agent read. The reads and a path completion run on CraftOS-PC too (a real
//! CC runtime; ignored without `CRAFTOS_PC`, see `tests/integration/support/craftos.rs`).
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake, world};

use std::collections::HashMap;

use base64::Engine as _;
use fake::{Agent, Client, call, data, text};
use rmcp::ServiceExt;
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompletionContext, ErrorCode, ReadResourceRequestParams,
    Reference, ResourceContents,
};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use support::{TestHost, emulated, start_host};
use trapdesk::policy::Policy;

const FILES: &str = "trapdesk://computer/{traposId}/files/{+path}";
const SCREEN: &str = "trapdesk://computer/{traposId}/screen";
const MONITOR: &str = "trapdesk://computer/{traposId}/monitor/{monitor}/screen";

async fn agent(host: &TestHost, name: &str) -> Client {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let a = Agent {
        name: name.into(),
        progress: tx,
    };
    let transport = StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            host.mcp_url(),
        )
        .auth_header(host.local_token.clone()),
    );
    a.serve(transport).await.unwrap()
}

async fn read(client: &Client, uri: &str) -> Result<Vec<ResourceContents>, rmcp::ErrorData> {
    match client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
    {
        Ok(r) => Ok(r.contents),
        Err(rmcp::ServiceError::McpError(e)) => Err(e),
        Err(other) => panic!("{uri}: {other}"),
    }
}

async fn read_text(client: &Client, uri: &str) -> (String, Option<String>) {
    let contents = read(client, uri).await.unwrap();
    assert_eq!(contents.len(), 1, "{contents:?}");
    match &contents[0] {
        ResourceContents::TextResourceContents {
            uri: u,
            text,
            mime_type,
            ..
        } => {
            assert_eq!(u, uri);
            (text.clone(), mime_type.clone())
        }
        other => panic!("{uri}: not text: {other:?}"),
    }
}

async fn complete(
    client: &Client,
    template: &str,
    name: &str,
    value: &str,
    trapos_id: Option<&str>,
) -> Vec<String> {
    let mut params = CompleteRequestParams::new(
        Reference::for_resource(template),
        ArgumentInfo::new(name, value),
    );
    if let Some(t) = trapos_id {
        let args = HashMap::from([("traposId".to_owned(), t.to_owned())]);
        params = params.with_context(CompletionContext::with_arguments(args));
    }
    client.complete(params).await.unwrap().completion.values
}

async fn write(client: &Client, path: &str, content: Value) {
    let mut args = json!({"traposId": "miner", "path": path});
    args.as_object_mut()
        .unwrap()
        .extend(content.as_object().unwrap().clone());
    let r = call(client, "write-file", args).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_list_and_reads_of_files_and_screens() {
    let host = start_host().await;
    let (_a, _b) = tokio::join!(
        emulated(&host, 1, Some("miner")),
        emulated(&host, 2, Some("farm/north"))
    );
    let client = agent(&host, "resource-agent").await;

    let caps = &client.peer_info().unwrap().capabilities;
    assert!(
        caps.resources.is_some() && caps.completions.is_some(),
        "{caps:?}"
    );
    let templates = client.list_all_resource_templates().await.unwrap();
    let uris: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(uris, [FILES, SCREEN, MONITOR]);
    // Each linked computer's screen is listed, a label's `/` percent-encoded.
    let listed: Vec<String> = client
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    assert_eq!(
        listed,
        [
            "trapdesk://computer/1:miner/screen",
            "trapdesk://computer/2:farm%2Fnorth/screen"
        ]
    );

    // A text file, its traposId in every form, its path percent-encoded or not.
    write(
        &client,
        "docs/a b.txt",
        json!({"content": "grüße ☃\nline 2\n"}),
    )
    .await;
    for uri in [
        "trapdesk://computer/1:miner/files/docs/a%20b.txt",
        "trapdesk://computer/1%3Aminer/files/docs/a%20b.txt",
        "trapdesk://computer/1%3aMINER/files/docs/a b.txt",
        "trapdesk://computer/miner/files/docs/a%20b.txt",
        "trapdesk://computer/1/files/docs/a%20b.txt",
    ] {
        let (t, mime) = read_text(&client, uri).await;
        assert_eq!(t, "grüße ☃\nline 2\n", "{uri}");
        assert_eq!(mime.as_deref(), Some("text/plain"), "{uri}");
    }
    write(&client, "prog.lua", json!({"content": "print('hi')\n"})).await;
    let (_, mime) = read_text(&client, "trapdesk://computer/1:miner/files/prog.lua").await;
    assert_eq!(mime.as_deref(), Some("text/x-lua"));

    // Bytes that are not UTF-8 come as a blob, exact.
    let blob: Vec<u8> = (0..=255u8).rev().collect();
    let b64 = base64::engine::general_purpose::STANDARD;
    write(
        &client,
        "blob.bin",
        json!({"content": b64.encode(&blob), "encoding": "base64"}),
    )
    .await;
    let contents = read(&client, "trapdesk://computer/1:miner/files/blob.bin")
        .await
        .unwrap();
    match &contents[0] {
        ResourceContents::BlobResourceContents {
            blob: got,
            mime_type,
            ..
        } => {
            assert_eq!(b64.decode(got).unwrap(), blob);
            assert_eq!(mime_type.as_deref(), Some("application/octet-stream"));
        }
        other => panic!("not a blob: {other:?}"),
    }

    // The screen reads as read-screen's rows, one per line; the label's `/` either way.
    let r = call(&client, "read-screen", json!({"traposId": "farm/north"})).await;
    let rows: Vec<String> = data(&r)["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect();
    for uri in [
        "trapdesk://computer/2:farm%2Fnorth/screen",
        "trapdesk://computer/2:farm/north/screen",
    ] {
        let (screen, mime) = read_text(&client, uri).await;
        assert_eq!(screen, rows.join("\n"), "{uri}");
        assert_eq!(mime.as_deref(), Some("text/plain"));
    }
    assert!(rows.iter().any(|r| !r.is_empty()), "{rows:?}");

    // Each read is recorded like a tool call, on the computer it resolved to.
    let log = data(&call(&client, "session-log", json!({"kind": "resources/read"})).await);
    let reads = log["events"].as_array().unwrap();
    assert_eq!(reads.len(), 9, "{reads:#?}");
    for e in reads {
        assert_eq!(e["who"], "resource-agent");
        assert_eq!(e["status"], "ok", "{e}");
    }
    assert!(reads.iter().any(|e| e["traposId"] == "1:miner"));
    assert!(reads.iter().any(|e| e["traposId"] == "2:farm/north"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_reads_are_json_rpc_errors_that_say_why() {
    let host = start_host().await;
    let _a = emulated(&host, 1, Some("miner")).await;
    let client = agent(&host, "resource-agent").await;

    let not_found = ErrorCode::RESOURCE_NOT_FOUND;
    let e = read(&client, "trapdesk://computer/9:nobody/screen")
        .await
        .unwrap_err();
    assert_eq!(e.code, not_found, "{e:?}");
    assert!(e.message.contains("1:miner"), "names what is linked: {e:?}");
    let e = read(&client, "trapdesk://computer/miner/files/nope.txt")
        .await
        .unwrap_err();
    assert_eq!(e.code, not_found, "{e:?}");
    assert!(e.message.contains("nope.txt"), "{e:?}");
    let e = read(&client, "trapdesk://computer/miner/files/rom")
        .await
        .unwrap_err();
    assert_eq!(e.code, not_found, "a folder: {e:?}");
    let e = read(&client, "file:///etc/passwd").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{e:?}");
    assert!(e.message.contains("trapdesk://computer/"), "{e:?}");

    // A policy refusal is its own error, with the policy's code.
    host.session
        .set_policy(Policy::from_toml("[policy.default]\nagent = { read = \"deny\" }\n").unwrap());
    for uri in [
        "trapdesk://computer/miner/screen",
        "trapdesk://computer/miner/files/startup.lua",
    ] {
        let e = read(&client, uri).await.unwrap_err();
        assert_eq!(e.code, ErrorCode(-32003), "{uri}: {e:?}");
        assert!(e.message.starts_with("refused by policy"), "{e:?}");
        assert_eq!(e.data.as_ref().unwrap()["code"], "denied", "{e:?}");
    }
    let log = data(&call(&client, "session-log", json!({"kind": "resources/read"})).await);
    let statuses: Vec<&str> = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.len(), 6, "{log}");
    assert!(
        statuses.iter().all(|s| *s != "ok" && *s != "running"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_of_ids_and_paths() {
    let host = start_host().await;
    let (_a, _b, _c) = tokio::join!(
        emulated(&host, 1, Some("miner")),
        emulated(&host, 2, Some("Farm")),
        emulated(&host, 12, Some("mill"))
    );
    let client = agent(&host, "completing-agent").await;

    for template in [FILES, SCREEN] {
        assert_eq!(
            complete(&client, template, "traposId", "", None).await,
            ["1:miner", "2:Farm", "12:mill"]
        );
        assert_eq!(
            complete(&client, template, "traposId", "1", None).await,
            ["1:miner", "12:mill"]
        );
        // Case is ignored; a `:` may come percent-encoded.
        assert_eq!(
            complete(&client, template, "traposId", "2:f", None).await,
            ["2:Farm"]
        );
        assert_eq!(
            complete(&client, template, "traposId", "1%3AM", None).await,
            ["1:miner"]
        );
    }

    write(&client, "progs/alpha.lua", json!({"content": "x"})).await;
    write(&client, "progs/Beta.lua", json!({"content": "x"})).await;
    write(&client, "prog.txt", json!({"content": "x"})).await;
    let mut got = complete(&client, FILES, "path", "pro", Some("1:miner")).await;
    got.sort();
    assert_eq!(got, ["prog.txt", "progs/"]);
    assert_eq!(
        complete(&client, FILES, "path", "progs/b", Some("miner")).await,
        ["progs/Beta.lua"]
    );
    assert_eq!(
        complete(&client, FILES, "path", "/progs/A", Some("1%3Aminer")).await,
        ["/progs/alpha.lua"]
    );
    // Nothing to complete from: no computer given, an unknown one, a missing folder, another
    // reference.
    assert!(
        complete(&client, FILES, "path", "pro", None)
            .await
            .is_empty()
    );
    assert!(
        complete(&client, FILES, "path", "pro", Some("9:none"))
            .await
            .is_empty()
    );
    assert!(
        complete(&client, FILES, "path", "nope/x", Some("miner"))
            .await
            .is_empty()
    );
    assert!(
        complete(&client, SCREEN, "path", "", Some("miner"))
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_under_ask_or_deny_give_nothing_and_ask_no_one() {
    let host = start_host().await;
    let (_a, _b) = tokio::join!(
        emulated(&host, 1, Some("miner")),
        emulated(&host, 2, Some("farm"))
    );
    let client = agent(&host, "completing-agent").await;
    let _approver = host.session.attach_approver();
    // Reads of the miner are asked for; the farm's are allowed.
    host.session.set_policy(
        Policy::from_toml("[[policy.rule]]\ncomputer = \"*miner\"\nagent = { read = \"ask\" }\n")
            .unwrap(),
    );
    let requests_before = host.session.recent(10_000).len();
    assert_eq!(
        complete(&client, SCREEN, "traposId", "", None).await,
        ["2:farm"]
    );
    assert!(
        complete(&client, FILES, "path", "", Some("1:miner"))
            .await
            .is_empty()
    );
    assert!(
        !complete(&client, FILES, "path", "", Some("farm"))
            .await
            .is_empty()
    );
    assert!(host.session.approvals().is_empty(), "no approval raised");
    assert!(host.session.pending().is_empty());
    // Only the farm's listing ran: nothing at all was tried on the miner.
    let tried_on_miner = host.session.recent(10_000)[requests_before..]
        .iter()
        .any(|e| e.trapos_id.as_deref() == Some("1:miner"));
    assert!(!tried_on_miner);

    host.session
        .set_policy(Policy::from_toml("[policy.default]\nagent = { read = \"deny\" }\n").unwrap());
    assert!(
        complete(&client, SCREEN, "traposId", "", None)
            .await
            .is_empty()
    );
    assert!(
        complete(&client, FILES, "path", "", Some("farm"))
            .await
            .is_empty()
    );
    assert!(host.session.approvals().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_mebibyte_reads_in_one_resource_and_more_is_refused() {
    let host = start_host().await;
    // More than a default computer's disk holds, as a server's `computer_space_limit` allows.
    let raised = |s: trapdesk::emu::ComputerSpec| s.with_disk_space(4_000_000);
    let _c = support::emulated_with(&host, 5, Some("store"), raised).await;
    let client = agent(&host, "resource-agent").await;
    let root = host.dir.path().join("computers/5");
    let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
    let fits: String = line.repeat((1 << 20) / line.len());
    std::fs::write(root.join("fits.txt"), &fits).unwrap();
    let (got, _) = read_text(&client, "trapdesk://computer/5:store/files/fits.txt").await;
    assert_eq!(got.len(), fits.len());
    assert!(got == fits, "the text came back changed");

    std::fs::write(root.join("big.txt"), fits.repeat(2)).unwrap();
    let e = read(&client, "trapdesk://computer/store/files/big.txt")
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{e:?}");
    assert_eq!(e.data.as_ref().unwrap()["code"], "too_large", "{e:?}");
    assert!(e.message.contains("read-file"), "says what to do: {e:?}");
}

/// Reads of text, bytes, a file larger than one websocket frame, the screen, and a path
/// completion, on one runtime.
async fn reads_and_completion_on(rt: world::Runtime) {
    let w = world::World::boot(rt, &["miner"]).await;
    let r = w
        .call(
            "write-file",
            json!({"traposId": "miner", "path": "docs/a b.txt", "content": "grüße ☃\n"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let (t, _) = read_text(
        &w.client,
        "trapdesk://computer/1%3Aminer/files/docs/a%20b.txt",
    )
    .await;
    assert_eq!(t, "grüße ☃\n");

    // Bytes, and more than CC's 131072-byte websocket frames: the answer comes in fragments.
    let blob: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 256) as u8).collect();
    std::fs::write(w.files("miner").join("blob.bin"), &blob).unwrap();
    let contents = read(&w.client, "trapdesk://computer/1:miner/files/blob.bin")
        .await
        .unwrap();
    match &contents[0] {
        ResourceContents::BlobResourceContents { blob: got, .. } => {
            let got = base64::engine::general_purpose::STANDARD
                .decode(got)
                .unwrap();
            assert!(got == blob, "{} bytes back of {}", got.len(), blob.len());
        }
        other => panic!("not a blob: {other:?}"),
    }

    let r = w.call("read-screen", json!({"traposId": "miner"})).await;
    let rows: Vec<String> = data(&r)["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect();
    let (screen, _) = read_text(&w.client, "trapdesk://computer/1:miner/screen").await;
    assert_eq!(screen, rows.join("\n"));

    assert_eq!(
        complete(&w.client, FILES, "path", "docs/", Some("miner")).await,
        ["docs/a b.txt"]
    );
}

world::on_both_runtimes!(reads_and_completion: reads_and_completion_on);
