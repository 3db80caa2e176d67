//! The emulator behaves as the real runtime does: snippets of Lua run through `exec-lua` on the
//! emulator (always) and on CraftOS-PC (when `CRAFTOS_PC` names it), each answer compared with
//! the value CraftOS-PC 2.8.2 gave, which CC: Tweaked shares (`%q` as Cobalt writes it, `fs`
//! errors and parent directories as CC: Tweaked's `MountWrapper`, the ROM's `textutils`, event
//! arguments, `http` failures and their events). Where CraftOS-PC and CC: Tweaked disagree the
//! snippet is left out and the difference is listed in docs/lua-client.md.
//!
//! Each snippet returns one string made by `show(...)` (the prelude), which writes every value
//! the same way on both runtimes (bytes outside printable ASCII as `\ddd`, tables with sorted
//! keys), so a difference in any returned value shows.
#![allow(clippy::unwrap_used, clippy::panic)]

mod support;

#[path = "support/mcp_fake.rs"]
mod fake;

#[path = "support/craftos.rs"]
mod craftos;

use fake::{Client, call, data, text};
use serde_json::json;

/// Defines `show(...)` and starts each snippet with an empty `par/` directory.
const PRELUDE: &str = r#"local function ser(v, d)
  d = d or 0
  local t = type(v)
  if t == "string" then return '"' .. v:gsub('[^ -~]', function(c) return "\\" .. c:byte() end) .. '"' end
  if t == "number" then if v == math.floor(v) and math.abs(v) < 2^53 then return ("%d"):format(v) end return tostring(v) end
  if t ~= "table" then return t == "function" and "fn" or tostring(v) end
  if d > 2 then return "{...}" end
  local keys = {} for k in pairs(v) do keys[#keys+1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local o = {} for _, k in ipairs(keys) do o[#o+1] = tostring(k) .. "=" .. ser(v[k], d + 1) end
  return "{" .. table.concat(o, ",") .. "}"
end
local function show(...) local r = table.pack(...) local o = {} for i = 1, r.n do o[i] = ser(r[i]) end return table.concat(o, " | ") end
if fs.exists("par") then fs.delete("par") end fs.makeDir("par")"#;

/// (snippet, what CraftOS-PC answered).
const CASES: &[(&str, &str)] = &[
    (
        r#"return show(string.format("%q", "a\0b\1c\r\t\127\200\n\"\\"))"#,
        r#"""a\000b\1c\r\9\127\200\\10\"\\"""#,
    ),
    (
        r#"return show(string.format("%q", "\0001"), ("%s|%q"):format("x", "y"))"#,
        r#"""\0001"" | "x|"y"""#,
    ),
    (
        r#"local h = fs.open("par/new/x.txt", "w") local ok = h ~= nil if h then h.close() end return show(ok, fs.isDir("par/new"))"#,
        r#"true | true"#,
    ),
    (
        r#"local ok, e = pcall(fs.open, "par/x", "q") return show(ok, tostring(e):find("Unsupported mode") ~= nil)"#,
        r#"false | true"#,
    ),
    (
        r#"return show(fs.open("par/none.txt", "r"))"#,
        r#"nil | "/par/none.txt: No such file""#,
    ),
    (
        r#"return show(pcall(fs.getSize, "par/none"))"#,
        r#"false | "/par/none: No such file""#,
    ),
    (
        r#"return show(fs.getSize("par"))"#,
        r#"0"#,
    ),
    (
        r#"for _, n in ipairs({"b", "a", "C", "c", "10", "9", "_x"}) do local h = fs.open("par/" .. n, "w") h.close() end return show(table.concat(fs.list("par"), ","))"#,
        r#""10,9,C,_x,a,b,c""#,
    ),
    (
        r#"local h = fs.open("par/f", "w") h.close() return show(pcall(fs.list, "par/f"))"#,
        r#"false | "/par/f: Not a directory""#,
    ),
    (
        r#"return show(pcall(fs.delete, "par/none"))"#,
        r#"true"#,
    ),
    (
        r#"local h = fs.open("par/f", "w") h.close() return show(pcall(fs.makeDir, "par/f"))"#,
        r#"false | "/par/f: File exists""#,
    ),
    (
        r#"local h = fs.open("par/f", "w") h.write("a") h.close() local r = fs.open("par/f", "r") r.close() return show(pcall(r.readAll))"#,
        r#"false | "attempt to use a closed file""#,
    ),
    (
        r#"local h = fs.open("par/e", "w") h.close() local r = fs.open("par/e", "r") local a, b, c = r.readAll(), r.readLine(), r.read() r.close() return show(a, b, c)"#,
        r#""" | nil | nil"#,
    ),
    (
        r#"local h = fs.open("par/t", "w") h.write("ab\r\nc\n") h.close() local r = fs.open("par/t", "r") local a, b, c, d = r.read(), r.readLine(), r.readLine(), r.readLine() r.close() return show(a, b, c, d)"#,
        r#""a" | "b" | "c" | nil"#,
    ),
    (
        r#"local h = fs.open("par/t", "w") h.write("x\ny") h.close() local r = fs.open("par/t", "r") local a, b = r.readLine(true), r.readLine(true) r.close() return show(a, b)"#,
        r#""x\10" | "y""#,
    ),
    (
        r#"local h = fs.open("par/a", "w") h.write("a") h.close() h = fs.open("par/a", "a") h.write("bc") h.writeLine("d") h.write(5) h.close() local r = fs.open("par/a", "r") local s = r.readAll() r.close() return show(s)"#,
        r#""abcd\105""#,
    ),
    (
        r#"local h = fs.open("par/a", "w") h.write("x") h.close() local a = fs.attributes("par/a") return show(a.size, a.isDir, a.isReadOnly, type(a.created), type(a.modified), type(a.modification))"#,
        r#"1 | false | false | "number" | "number" | "number""#,
    ),
    (
        r#"return show(pcall(fs.attributes, "par/none"))"#,
        r#"false | "/par/none: No such file""#,
    ),
    (
        r#"return show(fs.getName("a/b/"), fs.getDir("a/b"), fs.getDir("a"), fs.getDir("/"), fs.combine("a/", "/b", "c"), fs.combine("/"))"#,
        r#""b" | "a" | "" | ".." | "a/b/c" | """#,
    ),
    (
        r#"return show(textutils.serialize({1, 2, a = "x"}), textutils.serialize("a\nb"), textutils.serialize({}))"#,
        r#""{\10  1,\10  2,\10  a = "x",\10}" | ""a\\10b"" | "{}""#,
    ),
    (
        r#"return show(textutils.serializeJSON({1, 2, a = "x"}), textutils.serializeJSON("\200\0\n"), textutils.serializeJSON({}), textutils.serializeJSON(1.5))"#,
        r#""{"a":"x"}" | ""\u00C8\u0000\n"" | "{}" | "1.5""#,
    ),
    (
        r#"return show(textutils.unserializeJSON('{"a":[1,2,null],"b":"\\u00e9"}'))"#,
        r#"{a={1=1,2=2},b="\195\169"}"#,
    ),
    (
        r#"return show(textutils.unserialize("{1, a = 'x'}"), textutils.unserialize("nope("))"#,
        r#"{1=1,a="x"} | nil"#,
    ),
    (
        r#"return show(textutils.formatTime(13.5, true), textutils.formatTime(13.5), textutils.formatTime(0, false))"#,
        r#""13:30" | "1:30 PM" | "12:00 AM""#,
    ),
    (
        r#"return show(textutils.urlEncode("a b&c/é"))"#,
        r#""a+b%26c%2F%C3%83%C2%A9""#,
    ),
    (
        r#"return show(pcall(textutils.serialize, {f = print}))"#,
        r#"false | "Cannot serialize type function""#,
    ),
    (
        r#"return show(pcall(error))"#,
        r#"false | nil"#,
    ),
    (
        r#"return show(pcall(nil))"#,
        r#"false | "attempt to call a nil value""#,
    ),
    (
        r#"return show(select(2, pcall(function() local t = nil return t.x end)))"#,
        r#""exec:15: attempt to index local 't' (a nil value)""#,
    ),
    (
        r#"return show(select(2, pcall(function() return 1 + {} end)))"#,
        r#""exec:15: attempt to perform arithmetic on a table value""#,
    ),
    (
        r#"return show(select(2, pcall(function() return #nil end)))"#,
        r#""exec:15: attempt to get length of a nil value""#,
    ),
    (
        r#"return show(select(2, pcall(function() return ("x") < 1 end)))"#,
        r#""exec:15: attempt to compare string with number""#,
    ),
    (
        r#"return show(load("return +"))"#,
        r#"nil | "[string "return +"]:1: unexpected symbol near '+'""#,
    ),
    (
        r#"return show(load("x =", "=named"))"#,
        r#"nil | "named:1: unexpected symbol near <eof>""#,
    ),
    (
        r#"return show(("x"):rep(3, "-"), ("%5s|%-5s|"):format("ab", "cd"), ("%5.1f"):format(2.25), ("%x"):format(255))"#,
        r#""x-x-x" | "   ab|cd   |" | "  2.2" | "ff""#,
    ),
    (
        r#"return show(tostring(-0.0), tostring(0.1 + 0.2), tostring(100 / 3), tostring(1e15), tostring(2^63), tostring(1e100))"#,
        r#""-0" | "0.3" | "33.333333333333" | "1e+15" | "9.2233720368548e+18" | "1e+100""#,
    ),
    (
        r#"return show(math.floor(-0.5), math.fmod(7, 3), 7 % -3, -7 % 3, math.max(1, 5, 3))"#,
        r#"-1 | 1 | -2 | 2 | 5"#,
    ),
    (
        r#"os.queueEvent("probe", 1, "two", {3}, nil, true) return show(os.pullEvent("probe"))"#,
        r#""probe" | 1 | "two" | {1=3} | nil | true"#,
    ),
    (
        r#"return show(http.checkURL("ftp://x"))"#,
        r#"false | "Invalid protocol 'ftp'""#,
    ),
    (
        r#"return show(http.websocket("ws://127.0.0.1:1/"))"#,
        r#"false | "Connection refused""#,
    ),
    (
        r#"local ok = http.websocketAsync("ws://127.0.0.1:1/x") return show(ok, os.pullEvent("websocket_failure"))"#,
        r#"true | "websocket_failure" | "ws://127.0.0.1:1/x" | "Connection refused""#,
    ),
    (
        r#"local ok = http.request("http://127.0.0.1:1/") return show(ok, os.pullEvent("http_failure"))"#,
        r#"true | "http_failure" | "http://127.0.0.1:1/" | "Connection refused""#,
    ),
    (
        r#"return show(http.get("http://127.0.0.1:1/"))"#,
        r#"nil | "Connection refused" | nil"#,
    ),
    (
        r#"return show(pcall(sleep, "x"))"#,
        r#"false | "bad argument #1 (number expected, got string)""#,
    ),
    (
        r#"return show(os.startTimer(0) ~= os.startTimer(0), type(os.clock()), type(os.epoch("utc")), os.epoch("utc") > 1e12)"#,
        r#"true | "number" | "number" | true"#,
    ),
    (
        r#"local h = fs.open("par/a", "wb") h.write(65) h.write("BC") h.close() return show(fs.getSize("par/a"))"#,
        r#"3"#,
    ),
];

/// Runs every case on `who`; returns the differences.
async fn differences(client: &Client, who: &str, runtime: &str) -> Vec<String> {
    let mut diffs = Vec::new();
    for (code, want) in CASES {
        let r = call(
            client,
            "exec-lua",
            json!({"traposId": who, "code": format!("{PRELUDE}\n{code}")}),
        )
        .await;
        let d = data(&r);
        let got = d["returns"][0]["value"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("(not a string: {})", text(&r)));
        if got != *want {
            diffs.push(format!("{code}\n  expected: {want}\n  {runtime}: {got}"));
        }
    }
    diffs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_answers_as_cc_does() {
    let host = support::start_host().await;
    let _c = support::emulated(&host, 1, Some("emu")).await;
    let (client, _progress) = fake::connect(&host.mcp_url()).await;
    let diffs = differences(&client, "1:emu", "emulator").await;
    assert!(diffs.is_empty(), "differences:\n{}", diffs.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn craftos_pc_still_answers_as_recorded() {
    let Some(f) = craftos::Fleet::boot("craftos_pc_still_answers_as_recorded", &["real"]).await
    else {
        return;
    };
    let who = f.computer("real").trapos_id.clone();
    let diffs = differences(&f.client, &who, "CraftOS-PC").await;
    assert!(diffs.is_empty(), "differences:\n{}", diffs.join("\n"));
}
