//! One contract for results, arguments and errors, through a real MCP client (rmcp over
//! Streamable HTTP) against computers running the real Lua client: text blocks an agent reads
//! (never the JSON again) and a budget spent once; unknown arguments refused by name with one
//! code; camelCase fields; the error stream kept apart; paths refused with `bad_path`; names
//! that ignore case and take a bare id as a number. What touches the client runs on CraftOS-PC
//! too (ignored without `CRAFTOS_PC`, see `tests/integration/support/craftos.rs`).
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use crate::support::world::on_both_runtimes;
use fake::{data, largest_block, text};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use world::{Runtime, World};

/// No field name of the result, of its `error` or of the objects in its lists has a `_`.
fn assert_camel(d: &Value) {
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut all = keys(d);
    all.extend(keys(&d["error"]));
    for v in d.as_object().into_iter().flat_map(|m| m.values()) {
        for item in v.as_array().into_iter().flatten() {
            all.extend(keys(item));
        }
    }
    assert!(all.iter().all(|k| !k.contains('_')), "snake_case in {d}");
}

/// What touches the Lua client, on either runtime.
async fn client_contract(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;

    // The error stream kept apart: `errorOutput` holds what printError wrote, `output` keeps
    // it in its place; the text block has both as sections, not the JSON again.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "print('a') printError('oops') print('b') return 42, {k = 'v'}"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&r);
    assert_eq!(d["output"], "a\noops\nb\n", "{d}");
    assert_eq!(d["errorOutput"], "oops\n", "{d}");
    assert_camel(&d);
    assert!(d["durationMs"].is_number() && d["outputBytes"] == 9, "{d}");
    let t = text(&r);
    assert!(
        t.ends_with(
            "\n\n[returned]\n42\n{\"k\":\"v\"}\n\n[in structuredContent: output, errorOutput]\n"
        ),
        "{t}"
    );
    assert!(!t.contains("\"ok\"") && !t.contains("durationMs"), "{t}");
    // Nothing on the error stream: no errorOutput.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "print('x')"}),
        )
        .await;
    assert!(data(&r).get("errorOutput").is_none(), "{}", data(&r));

    // A Lua error: the text has the traceback.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "local function f() error('kaput') end f()"}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(t.starts_with("Lua failed: exec:1: kaput"), "{t}");
    assert!(
        t.contains("\n[traceback]\nexec:1: kaput\nstack traceback:"),
        "{t}"
    );

    // Paths outside the root: bad_path for every file tool, never internal.
    let escapes = [
        (
            "write-file",
            json!({"path": "/../escape.txt", "content": "x"}),
        ),
        ("read-file", json!({"path": "/../escape.txt"})),
        ("list-files", json!({"path": ".."})),
        ("delete-file", json!({"path": "a/../../escape.txt"})),
        ("make-dir", json!({"path": "../up"})),
        ("file-info", json!({"path": "/../escape.txt"})),
        (
            "move-file",
            json!({"from": "startup.lua", "to": "../escape.txt"}),
        ),
        ("run-file", json!({"path": "../escape.lua"})),
    ];
    for (tool, mut args) in escapes {
        args["traposId"] = json!("miner");
        let r = w.call(tool, args).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {}", text(&r));
        let d = data(&r);
        assert_eq!(d["error"]["code"], "bad_path", "{tool}: {d}");
        assert!(
            text(&r).starts_with("bad_path: ") && text(&r).contains("outside the computer's root"),
            "{tool}: {}",
            text(&r)
        );
    }

    // A folder read as a file: a clean error, no empty content beside it.
    let r = w
        .call("read-file", json!({"traposId": "miner", "path": "rom"}))
        .await;
    assert_eq!(r.is_error, Some(true));
    let d = data(&r);
    assert_eq!(d["error"]["code"], "is_dir", "{d}");
    assert!(
        d["error"]["message"]
            .as_str()
            .unwrap()
            .contains("directory"),
        "{d}"
    );
    for k in ["content", "bytes", "encoding"] {
        assert!(d.get(k).is_none(), "{k} beside the error: {d}");
    }

    // A 20 KB program reads in one call; the text block is its header and where it is.
    let program: String = (0..2000)
        .map(|i| format!("print(\"line {i}\") -- a \"quoted\" comment\n"))
        .collect::<String>()[..20_000]
        .to_owned();
    let r = w
        .call(
            "write-file",
            json!({"traposId": "miner", "path": "prog.lua", "content": program}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let r = w
        .call(
            "read-file",
            json!({"traposId": "miner", "path": "prog.lua"}),
        )
        .await;
    let d = data(&r);
    assert_eq!(d["nextOffset"], Value::Null, "{}", text(&r));
    assert!(
        d["content"].as_str().unwrap() == program,
        "the content differs"
    );
    assert!(
        text(&r) == "prog.lua: 20000 bytes (utf8)\n\n[in structuredContent: content]",
        "the text is not the header and where the content is: {:?}",
        &text(&r)[..200.min(text(&r).len())]
    );
    assert!(largest_block(&r) <= 24 * 1024, "{}", largest_block(&r));
}

on_both_runtimes!(client_contract);

/// Unknown arguments are refused by name, for every tool, with the one code for bad
/// arguments; every input schema says `additionalProperties: false`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_arguments_are_refused_by_name_everywhere() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    let tools = w.client.list_all_tools().await.unwrap();
    assert!(tools.len() >= 16, "{}", tools.len());
    for tool in tools {
        let name = tool.name.to_string();
        assert_eq!(
            tool.input_schema.get("additionalProperties"),
            Some(&json!(false)),
            "{name}"
        );
        let mut args = serde_json::Map::new();
        args.insert("timeOut".into(), json!(5000));
        let r = w
            .client
            .call_tool(CallToolRequestParams::new(name.clone()).with_arguments(args))
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true), "{name}: {}", text(&r));
        let d = data(&r);
        assert_eq!(d["error"]["code"], "invalid_arguments", "{name}: {d}");
        assert_eq!(d["field"], "timeOut", "{name}: {d}");
        assert!(text(&r).contains("timeOut"), "{name}: {}", text(&r));
    }
}

/// Names: a label in any case, a bare id as a JSON number (as the MCP Inspector sends it), in
/// `computers` too; labels that differ only in case are listed together when one name
/// matches both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_ignore_case_and_take_numbers() {
    let w = World::boot(Runtime::Emulator, &["miner", "farm", "Farm"]).await;
    for target in [json!("1:MINER"), json!("MINER"), json!(1)] {
        let r = w
            .call(
                "exec-lua",
                json!({"traposId": target, "code": "return os.getComputerID()"}),
            )
            .await;
        assert_eq!(r.is_error, Some(false), "{target}: {}", text(&r));
        assert_eq!(data(&r)["traposId"], "1:miner");
    }
    let r = w
        .call(
            "exec-lua-many",
            json!({"computers": [1, "2"], "code": "return 1"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["computers"], 2);
    let r = w
        .call("exec-lua", json!({"traposId": "FARM", "code": "return 1"}))
        .await;
    let d = data(&r);
    assert_eq!(d["error"]["code"], "ambiguous_computer", "{d}");
    assert_eq!(d["matches"], json!(["2:farm", "3:Farm"]), "{d}");
    assert!(text(&r).contains("2:farm, 3:Farm"), "{}", text(&r));
}

/// The budget is spent once: a shortened read says so and how to read on; output beyond the
/// budget keeps head and tail with a marker; the larger block stays inside the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_is_spent_once_and_cuts_are_said() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "local f = fs.open('big.txt', 'w') for i = 1, 10000 do f.write(('%09d\\n'):format(i)) end f.close()"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let r = w
        .call(
            "read-file",
            json!({"traposId": "miner", "path": "big.txt", "length": 100_000}),
        )
        .await;
    let d = data(&r);
    let next = d["nextOffset"].as_u64().unwrap();
    // More than the 8,796 bytes a piece was when the text repeated the JSON.
    assert!(next > 20_000 && next < 100_000, "{next}");
    let first = text(&r).lines().next().unwrap().to_owned();
    assert!(
        first.contains("fewer than asked: cut to fit one result")
            && first.ends_with(&format!("read on with offset {next}")),
        "{first}"
    );
    assert!(largest_block(&r) <= 24 * 1024, "{}", largest_block(&r));

    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "for i = 1, 5000 do print(('row %05d'):format(i)) end printError('bad') return 'done'"}),
        )
        .await;
    let t = text(&r);
    let out = data(&r)["output"].as_str().unwrap().to_owned();
    assert!(largest_block(&r) <= 24 * 1024, "{}", largest_block(&r));
    assert!(out.starts_with("row 00001\n"), "{}", &out[..300]);
    assert!(out.contains("bytes of output cut here; read all of it with computer-output"));
    assert!(out.contains("row 05000\nbad\n"), "the tail is kept");
    assert_eq!(data(&r)["errorOutput"], "bad\n");
    assert_eq!(data(&r)["outputTruncated"], true);
    // The output goes once (in structuredContent); the cut is said in the first line too.
    let first = t.lines().next().unwrap_or_default();
    assert!(first.contains("computer-output"), "{first}");
    assert!(!t.contains("row 00001"), "{t}");

    // A page the budget shortened says so, and how to read on.
    let rid = data(&r)["requestId"].as_str().unwrap().to_owned();
    let r = w
        .call(
            "computer-output",
            json!({"traposId": "miner", "requestId": rid, "lines": 2000}),
        )
        .await;
    let d = data(&r);
    let shown = d["times"].as_array().unwrap().len();
    let first = text(&r).lines().next().unwrap().to_owned();
    assert!(shown < 2000, "{shown}");
    assert!(
        first.contains(&format!(
            "({} more of those asked did not fit one result: read them with before)",
            2000 - shown
        )),
        "{first}"
    );
    assert!(largest_block(&r) <= 24 * 1024, "{}", largest_block(&r));
    // The page holds the lines' text once, the error line marked by its index.
    let r = w
        .call(
            "computer-output",
            json!({"traposId": "miner", "requestId": rid, "lines": 2}),
        )
        .await;
    let d = data(&r);
    assert_eq!(d["output"], "row 05000\nbad\n", "{d}");
    assert_eq!(d["err"], json!([1]), "{d}");
    assert!(!text(&r).contains("row 05000"), "{}", text(&r));
}
