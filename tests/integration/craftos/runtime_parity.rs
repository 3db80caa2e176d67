//! The emulator behaves as the real runtime does: snippets of Lua run through `exec-lua` on the
//! emulator (always) and on CraftOS-PC (when `CRAFTOS_PC` names it), each answer compared with
//! the value CraftOS-PC 2.8.2 gave, which CC: Tweaked shares (`%q` as Cobalt writes it, `fs`
//! modes, handles, errors and parent directories as CC: Tweaked's `FSAPI` / `MountWrapper`,
//! the ROM's `textutils`, `sleep` and `http` wrappers, event arguments, `http` failures and
//! their events, the watchdog's message). The expected values in [`CASES`] are what
//! CraftOS-PC printed, never edited to suit the emulator; `craftos_pc_still_answers_as_recorded`
//! checks that they still are.
//!
//! Where CraftOS-PC and CC: Tweaked disagree, [`CC_ONLY`] holds what CC: Tweaked answers (with
//! the source that says so and what CraftOS-PC answers instead); those run on the emulator
//! only, and docs/emulator.md, "The emulator against CraftOS-PC", lists them.
//!
//! Each snippet returns one string made by `show(...)` (the prelude), which writes every value
//! the same way on both runtimes (bytes outside printable ASCII as `\ddd`, tables with sorted
//! keys), so a difference in any returned value shows.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake};

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
if fs.exists("par") then fs.delete("par") end fs.makeDir("par") local BASE, WS = "http://127.0.0.1:PORT", "ws://127.0.0.1:PORT""#;

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
    (r#"return show(fs.getSize("par"))"#, r#"0"#),
    (
        r#"for _, n in ipairs({"b", "a", "C", "c", "10", "9", "_x"}) do local h = fs.open("par/" .. n, "w") h.close() end return show(table.concat(fs.list("par"), ","))"#,
        r#""10,9,C,_x,a,b,c""#,
    ),
    (
        r#"local h = fs.open("par/f", "w") h.close() return show(pcall(fs.list, "par/f"))"#,
        r#"false | "/par/f: Not a directory""#,
    ),
    (r#"return show(pcall(fs.delete, "par/none"))"#, r#"true"#),
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
    (r#"return show(pcall(error))"#, r#"false | nil"#),
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
    (
        r#"return show(pcall(function() fs.getSize("par/none") end))"#,
        r#"false | "exec:15: /par/none: No such file""#,
    ),
    (
        r#"local h = fs.open("par/f", "w") h.close() return show(pcall(function() h.write("x") end))"#,
        r#"false | "exec:15: attempt to use a closed file""#,
    ),
    (
        r#"local h = fs.open("par/f", "w") h.close() return show(pcall(h.close))"#,
        r#"false | "attempt to use a closed file""#,
    ),
    (
        r#"return show(pcall(function() sleep("x") end))"#,
        r#"false | "exec:15: bad argument #1 to 'sleep' (number expected, got string)""#,
    ),
    (
        r#"local h = fs.open("par/f", "w") h.write("abc") h.close() local r = fs.open("par/f", "r+") local t = {} for k in pairs(r) do t[#t+1] = k end table.sort(t) local a = r.read(2) r.write("Z") local p = r.seek() r.seek("set", 0) local all = r.readAll() r.close() return show(table.concat(t, ","), a, p, all)"#,
        r#""close,flush,read,readAll,readLine,seek,write,writeLine" | "ab" | 3 | "abZ""#,
    ),
    (
        r#"local r, e = fs.open("par/g", "w+") r.write("hello\nworld") r.seek("set", 0) local l = r.readLine() local rest = r.readAll() r.close() return show(e, l, rest, fs.getSize("par/g"))"#,
        r#"nil | "hello" | "world" | 11"#,
    ),
    (
        r#"local h = fs.open("par/g", "w+b") h.write(200) h.seek("set", 0) local b = h.read() h.close() return show(b)"#,
        r#"200"#,
    ),
    (
        r#"return show(fs.open("par/none", "r+"))"#,
        r#"nil | "/par/none: No such file""#,
    ),
    (
        r#"local h = fs.open("par/f", "w") local t = {} for k in pairs(h) do t[#t+1] = k end table.sort(t) h.write("abcdef") local p = h.seek("set", 2) h.write("X") h.close() local r = fs.open("par/f", "rb") local u = {} for k in pairs(r) do u[#u+1] = k end table.sort(u) local s = r.readAll() r.close() return show(table.concat(t, ","), table.concat(u, ","), p, s)"#,
        r#""close,flush,seek,write,writeLine" | "close,read,readAll,readLine,seek" | 2 | "abXdef""#,
    ),
    (
        r#"return show(fs.isReadOnly("rom"), fs.isReadOnly("/rom/x"), fs.isReadOnly("par"), fs.isReadOnly("none"), fs.getDrive("rom"), fs.getDrive("par"))"#,
        r#"true | true | false | false | "rom" | "hdd""#,
    ),
    (
        r#"return show(fs.open("rom/x", "w"))"#,
        r#"nil | "/rom/x: Access denied""#,
    ),
    (
        r#"return show(pcall(fs.makeDir, "rom/x"))"#,
        r#"false | "/rom/x: Access denied""#,
    ),
    (
        r#"return show(pcall(fs.delete, "rom"))"#,
        r#"false | "/rom: Access denied""#,
    ),
    (
        r#"return show(pcall(fs.list, "par/none"))"#,
        r#"false | "/par/none: No such file""#,
    ),
    (
        r#"return show(fs.open("par/nodir/x", "r"))"#,
        r#"nil | "/par/nodir/x: No such file""#,
    ),
    (
        r#"return show(fs.open("par", "r"))"#,
        r#"nil | "/par: Not a file""#,
    ),
    (
        r#"return show(fs.open("par", "w"))"#,
        r#"nil | "/par: Cannot write to directory""#,
    ),
    (
        r#"return show(fs.open("par", "a"))"#,
        r#"nil | "/par: Cannot write to directory""#,
    ),
    (
        r#"fs.makeDir("par/d") local a = fs.attributes("par/d") return show(fs.getSize("par/d"), a.size, a.isDir, a.isReadOnly)"#,
        r#"0 | 0 | true | false"#,
    ),
    (
        r#"return show(pcall(fs.move, "par/none", "par/y"))"#,
        r#"false | "No such file""#,
    ),
    (
        r#"fs.makeDir("par/d") return show(pcall(fs.move, "par/d", "par/d/e"))"#,
        r#"false | "Can't move a directory inside itself""#,
    ),
    (
        r#"fs.makeDir("par/d") return show(pcall(fs.copy, "par/d", "par/d/e"))"#,
        r#"false | "/par/d: Can't copy a directory inside itself""#,
    ),
    (
        r#"return show(pcall(fs.move, "rom", "par/r"))"#,
        r#"false | "Access denied""#,
    ),
    (
        r#"return show(pcall(fs.copy, "par", "rom/x"))"#,
        r#"false | "/rom/x: Access denied""#,
    ),
    (
        r#"return show(pcall(fs.copy, "par/none", "par/y"))"#,
        r#"false | "/par/none: No such file""#,
    ),
    (
        r#"local h = fs.open("par/a", "w") h.close() h = fs.open("par/b", "w") h.close() return show(pcall(fs.move, "par/a", "par/b"))"#,
        r#"false | "File exists""#,
    ),
    (
        r#"return show(fs.exists("../x"), fs.combine("a", "..", ".."), fs.getDir(""), fs.getName("/a/b.lua"), fs.getDir("/a/b/c"), fs.getDir("a/.."))"#,
        r#"false | ".." | ".." | "b.lua" | "a/b" | "..""#,
    ),
    (
        r#"return show(fs.getCapacity("rom"), fs.getFreeSpace("rom"))"#,
        r#"nil | 0"#,
    ),
    (
        r#"return show(http.checkURL("http://127.0.0.1/"), http.checkURL("nope"))"#,
        r#"true | false | "Must specify http or https""#,
    ),
    (
        r#"return show(http.websocket("http://127.0.0.1:1/"))"#,
        r#"false | "Invalid scheme 'http'""#,
    ),
    (
        r#"return show(pcall(http.get))"#,
        r#"false | "bad argument #1 (string expected, got nil)""#,
    ),
    (
        r#"return show(pcall(http.get, {url = BASE, method = "FETCH"}))"#,
        r#"false | "Unsupported HTTP method""#,
    ),
    (
        r#"local h, e, r = http.get(BASE .. "/nothing-here") return show(h, e, r and r.getResponseCode(), r and r.readAll())"#,
        r#"nil | "Not Found" | 404 | """#,
    ),
    (
        r#"local h = http.get(BASE .. "/install.lua") local t = {} for k in pairs(h) do t[#t+1] = k end table.sort(t) local code, body = h.getResponseCode(), h.readAll() h.close() return show(table.concat(t, ","), code, type(load(body, "=install", "t", {})))"#,
        r#""close,getResponseCode,getResponseHeaders,read,readAll,readLine,seek" | 200 | "function""#,
    ),
    (
        r#"local h = http.get(BASE .. "/install.lua", nil, true) local b = h.read() h.close() return show(type(b))"#,
        r#""number""#,
    ),
    (
        r#"local h = http.get{url = BASE .. "/install.lua", method = "HEAD"} return show(h and h.getResponseCode(), h and h.readAll())"#,
        r#"200 | """#,
    ),
    (
        r#"local h = http.head(BASE .. "/install.lua", "") return show(h and h.getResponseCode(), h and h.readAll())"#,
        r#"200 | """#,
    ),
    (
        r#"local h, e, r = http.post(BASE .. "/install.lua", "x=1") return show(h, e, r and r.getResponseCode())"#,
        r#"nil | "Method Not Allowed" | 405"#,
    ),
    (
        r#"local ok, e = pcall(function() while true do end end) return show(ok, e)"#,
        r#"false | "exec:15: Too long without yielding""#,
    ),
    (
        r#"return show(("%5.1s|"):format("abc"), ("%c%c"):format(72, 105), ("%o"):format(8), ("%e"):format(12345.678), ("%g"):format(1e20), ("%i"):format(3))"#,
        r#""    a|" | "Hi" | "10" | "1.234568e+04" | "1e+20" | "3""#,
    ),
    (
        r#"return show(pcall(string.format, "%d", 1.5))"#,
        r#"true | "1""#,
    ),
    (
        r#"return show(("abc"):find("b", 1, true), ("a.b"):gsub("%.", "%%"), ("x"):byte(5), #("\0"):rep(3))"#,
        r#"2 | "a%b" | nil | 3"#,
    ),
    (
        r#"return show(tostring(nil), tostring(1/0), tostring(-1/0), tostring(0/0) == tostring(0/0), math.huge, tonumber("0x10"), tonumber("1e1"), tonumber(" 5 "), tonumber("5x"), tonumber("z", 36))"#,
        r#""nil" | "inf" | "-inf" | true | inf | 16 | 10 | 5 | nil | 35"#,
    ),
    (
        r#"return show(string.format("%s %s", 1, 1.0), 2^31, math.floor(2^31 + 0.5))"#,
        r#""1 1" | 2147483648 | 2147483648"#,
    ),
    (
        r#"return show(textutils.serialize({1, [3] = 3}), textutils.serialize({["end"] = 1}), textutils.serialize({["a b"] = 2}), textutils.serialize({[true] = 1}))"#,
        r#""{\10  1,\10  [ 3 ] = 3,\10}" | "{\10  [ "end" ] = 1,\10}" | "{\10  [ "a b" ] = 2,\10}" | "{\10  [ true ] = 1,\10}""#,
    ),
    (
        r#"return show(textutils.serialize({a = {b = 1}}, {compact = true}), textutils.serialize(0/0), textutils.serialize(1/0), textutils.serialize(-1/0), textutils.serialize(1.5))"#,
        r#""{a={b=1,},}" | "0/0" | "1/0" | "-1/0" | "1.5""#,
    ),
    (
        r#"local t = {} t.x = t return show(pcall(textutils.serialize, t))"#,
        r#"false | "Cannot serialize table with recursive entries""#,
    ),
    (
        r#"local s = {} return show(pcall(textutils.serialize, {s, s}), textutils.serialize({s, s}, {allow_repetitions = true}))"#,
        r#"false | "{\10  {},\10  {},\10}""#,
    ),
    (
        r#"return show(textutils.serializeJSON({a = {1, 2}}), textutils.serializeJSON("é", {unicode_strings = true}), textutils.serializeJSON("\127\31"))"#,
        r#""{"a":[1,2]}" | ""\u00E9"" | ""\u007F\u001F"""#,
    ),
    (
        r#"return show(textutils.unserializeJSON("[1,"), textutils.unserializeJSON("{a:1}"), textutils.unserializeJSON("{a:1}", {nbt_style = true}))"#,
        r#"nil | nil | {a=1}"#,
    ),
    (
        r#"return show(textutils.unserializeJSON("[]"), textutils.unserializeJSON("null", {parse_null = true}) == textutils.json_null, textutils.unserializeJSON(" 1e2 "), textutils.unserializeJSON('"\\ud83d\\ude00"'))"#,
        r#"{} | true | 100 | "\237\160\189\237\184\128""#,
    ),
    (
        r#"return show(pcall(textutils.serializeJSON, {print}))"#,
        r#"false | "Cannot serialize type function""#,
    ),
    (
        r#"return show(textutils.urlEncode("~\n"), pcall(textutils.urlEncode))"#,
        r#""%7E%0D%0A" | false | "bad argument #1 (string expected, got nil)""#,
    ),
    // Binary handles: seek returns the position, read(n) gives n bytes, nil at the end.
    (
        r#"local h = fs.open("par/p.bin", "wb") for i = 0, 255 do h.write(i) end h.close() local r = fs.open("par/p.bin", "rb") local a = r.seek("set", 250) local s = r.read(4) local b = r.seek() local t = r.read(10) local e = r.read(1) r.close() return show(a, s, b, #t, e, fs.getSize("par/p.bin"))"#,
        r#"250 | "\250\251\252\253" | 254 | 2 | nil | 256"#,
    ),
    (
        r#"local h = fs.open("par/p.bin", "wb") for i = 0, 255 do h.write(i) end h.close() local r = fs.open("par/p.bin", "rb") local s = r.read(0) local c = r.seek("cur", 10) local x = r.read() local all = r.readAll() r.close() return show(s, c, x, #all)"#,
        r#""" | 10 | 10 | 245"#,
    ),
    (
        r#"local h = fs.open("par/p.bin", "wb") for i = 0, 255 do h.write(i) end h.close() local r = fs.open("par/p.bin", "rb") local p = r.seek("end", -3) local s = r.read(100) local q = r.seek("set", 1000) local z = r.read(1) r.close() return show(p, #s, q, z)"#,
        r#"253 | 3 | 1000 | nil"#,
    ),
    // Text handles and sizes of UTF-8.
    (
        r#"local h = fs.open("par/t.txt", "w") h.write("h\195\169llo\n") h.writeLine("x") h.close() local r = fs.open("par/t.txt", "r") local l = r.readLine() local rest = r.readAll() r.close() return show(l, rest, fs.getSize("par/t.txt"))"#,
        r#""h\195\169llo" | "x\10" | 9"#,
    ),
    (
        r#"return show(string.format("%q", "a\"b\n\\"), ("%5.2f"):format(3.14159), tostring(1e100), tostring(2^53), #string.rep("ab", 3, ","))"#,
        r#"""a\"b\\10\\"" | " 3.14" | "1e+100" | "9.007199254741e+15" | 8"#,
    ),
    (
        r##"return show(select("#", ("x"):byte(1, -1)), ("abc"):sub(-2), ("a,b,,c"):find(",,", 1, true), math.floor(-0.5))"##,
        r#"1 | "bc" | 4 | -1"#,
    ),
    (
        r#"return show(pcall(fs.open, "nope/x.txt", "r"), fs.exists("nope"), fs.isDir("rom"), fs.getName("a/b.lua"), fs.combine("a", "../b"))"#,
        r#"true | false | true | "b.lua" | "b""#,
    ),
    (
        r#"return show(http.checkURL("not a url"))"#,
        r#"false | "Must specify http or https""#,
    ),
    (
        r#"return show(type(os.time()), type(os.day()), type(os.clock()))"#,
        r#""number" | "number" | "number""#,
    ),
    (
        r#"return show(type(os.time("utc")), type(os.epoch("ingame")))"#,
        r#""number" | "number""#,
    ),
    (
        r#"return show(os.date("!%Y", 0), type(os.date("*t").year))"#,
        r#""1970" | "number""#,
    ),
    (r#"return show(os.date("!%H:%M", 3600))"#, r#""01:00""#),
    (
        r#"local t = os.startTimer(-1) local e, id = os.pullEvent("timer") return show(e, id == t)"#,
        r#""timer" | true"#,
    ),
    (
        r#"return show(utf8.char(72, 228, 8364), utf8.codepoint("häx", 1, -1), utf8.len("\255"), utf8.offset("häx", 3), utf8.charpattern)"#,
        r#""H\195\164\226\130\172" | 104 | nil | 4 | "[\0-\127\194-\244][\128-\191]*""#,
    ),
    (
        r#"return show(bit32.lshift(1, 32), bit32.arshift(-1, 1), bit32.band(0xFF, -1), bit32.bnot(0), bit32.extract(0xF0, 4, 4))"#,
        r#"0 | 4294967295 | 255 | 4294967295 | 15"#,
    ),
    (
        r##"return show(getmetatable("").__index == string, select("#", table.unpack({1, nil, 3})), table.pack(1, nil).n, type(coroutine.running()))"##,
        r#"true | 3 | 2 | "thread""#,
    ),
    (
        r#"return show(pcall(setmetatable, 1, {}), pcall(rawlen, 1), rawequal("a", "a"))"#,
        r#"false | false | true"#,
    ),
    (
        r#"return show(pcall(string.format, "%y", 1))"#,
        r#"false | "invalid option '%y' to 'format'""#,
    ),
    (
        r#"return show(tostring(print):match("^function") ~= nil, tostring({}):match("^table: ") ~= nil, type(_VERSION), _VERSION)"#,
        r#"true | true | "string" | "Lua 5.2""#,
    ),
    (
        // The label is put back before the chunk yields: a label change shows on the host,
        // and the next snippets are sent to this computer by its label.
        r#"local before = os.getComputerLabel() local r = table.pack(pcall(os.setComputerLabel, 5)) os.setComputerLabel(before) return show(before ~= nil, table.unpack(r, 1, r.n))"#,
        r#"true | true"#,
    ),
    (
        r#"return show(textutils.formatTime(0.25, true), textutils.formatTime(23.999), textutils.formatTime(24))"#,
        r#""0:15" | "11:59 PM" | "12:00 PM""#,
    ),
    (
        r#"return show(textutils.serialize("\t\0\128"), textutils.serialize(2^53), textutils.serialize(-0.0), textutils.serialize(1e300))"#,
        r#"""\9\000\128"" | "9.007199254741e+15" | "-0" | "1e+300""#,
    ),
    (
        r#"return show(textutils.serializeJSON({[1] = 1, [3] = 3}), textutils.serializeJSON({}), textutils.serializeJSON(textutils.empty_json_array), pcall(textutils.serializeJSON, {[1.5] = 1}))"#,
        r#""[1,null,3]" | "{}" | "[]" | true | "[null]""#,
    ),
    (
        r#"return show(textutils.unserializeJSON("1e400"), textutils.unserializeJSON("-0"), textutils.unserializeJSON('"\\/"'), textutils.unserializeJSON("[1,]"), textutils.unserializeJSON("tru"))"#,
        r#"inf | 0 | "/" | nil | nil | "Malformed JSON at position 1: Unexpected character "t".""#,
    ),
    (
        r#"return show(select(2, textutils.unserializeJSON("[1,")), select(2, textutils.unserializeJSON("{\"a\" 1}")))"#,
        r#""Malformed JSON at position 4: Unexpected end of input." | "Malformed JSON at position 6: Unexpected "1", expected ':'.""#,
    ),
    (
        r#"return show(("abc"):find("", 10), ("abc"):find("", 4), ("abc"):sub(5), ("abc"):byte(-1), ("x"):rep(0), ("x"):rep(-1))"#,
        r#"nil | 4 | "" | 99 | "" | """#,
    ),
    (
        r#"return show(("hello world"):gsub("o", "%0%0"), pcall(string.gsub, "x", "x", "%2"))"#,
        r#""helloo woorld" | false | "invalid capture index""#,
    ),
    (
        r#"return show(("%-5d|%05.1f|%+d|% d|%x|%X|%#x"):format(3, 2.5, 4, 5, 254, 254, 255))"#,
        r#""3    |002.5|+4| 5|fe|FE|0xff""#,
    ),
    (
        r#"return show(("a1b2c3"):gsub("%d", {["1"] = "one", ["2"] = false}), ("abc"):gsub(".", function(c) if c == "b" then return nil end return c:upper() end))"#,
        r#""aoneb2c3" | "AbC" | 3"#,
    ),
    (
        r##"return show(("k=v, a=b"):match("(%w+)=(%w+)"), select("#", ("x"):match("()")), ("  trim  "):match("^%s*(.-)%s*$"), ("f(a(b)c)"):match("%b()"), ("THE (quick) fox"):find("%f[%a]%a+", 5))"##,
        r#""k" | 1 | "trim" | "(a(b)c)" | 6 | 10"#,
    ),
    (
        r#"local t = {} for w in ("one two  three"):gmatch("%S+") do t[#t+1] = w end return show(table.concat(t, "|"), ("abc"):reverse(), ("AbC"):lower(), ("AbC"):upper(), ("%a"):len())"#,
        r#""one|two|three" | "cba" | "abc" | "ABC" | 2"#,
    ),
    (
        r#"local t = {5, 2, 8, 1} table.sort(t, function(a, b) return a > b end) return show(table.concat(t, ","), table.concat({1, 2, 3}, ", ", 2, 3), table.remove({1, 2, 3}), table.remove({}), #table.pack())"#,
        r#""8,5,2,1" | "2, 3" | 3 | nil | 0"#,
    ),
    (
        r#"return show(pcall(table.concat, {1, {}, 3}))"#,
        r#"false | "invalid value (table) at index 2 in table for 'concat'""#,
    ),
    (
        r#"return show(pcall(table.sort, {3, 1, 2}, function(a, b) return true end))"#,
        r#"true"#,
    ),
    (
        r#"return show(math.max(1), math.min(2, -1), math.abs(-3), math.ceil(1.2), math.sqrt(16), math.pi > 3.14, math.fmod(-7, 3), math.modf(3.7), math.huge > 1e308, math.floor(-0.0))"#,
        r#"1 | -1 | 3 | 2 | 4 | true | -1 | 3 | true | 0"#,
    ),
    (
        r#"return show(tonumber("10", 2), tonumber("ff", 16), tonumber("8", 8), tonumber(""), tonumber("0x"), tonumber("1e"), tonumber(".5"), tonumber("5."), tonumber("inf"), tonumber("nan"))"#,
        r#"2 | 255 | nil | nil | nil | nil | 0.5 | 5 | nil | nil"#,
    ),
    (
        r#"return show(8 % 3.5, 2^0.5 > 1.41, 7 / 0, -7 / 0, 0/0 ~= 0/0, 1e308 * 10, math.floor(2^31 + 1))"#,
        r#"1 | true | inf | -inf | true | inf | 2147483649"#,
    ),
    (
        r#"for _, n in ipairs({"a.txt", "b.txt", "c.lua"}) do local h = fs.open("par/" .. n, "w") h.close() end fs.makeDir("par/d") local h = fs.open("par/d/x.txt", "w") h.close() return show(table.concat(fs.find("par/*.txt"), ","), table.concat(fs.find("par/?.lua"), ","), table.concat(fs.find("par/*/x.txt"), ","), table.concat(fs.find("par/a.txt"), ","), #fs.find("par/none"), pcall(fs.find, "../x"))"#,
        r#""par/a.txt,par/b.txt" | "par/c.lua" | "par/d/x.txt" | "par/a.txt" | 0 | false | "/../x: Invalid Path""#,
    ),
    (
        r#"return show(fs.isDriveRoot("/"), fs.isDriveRoot("rom"), fs.isDriveRoot("par"), pcall(fs.isDriveRoot))"#,
        r#"true | true | false | false | "bad argument #1 (string expected, got nil)""#,
    ),
    (
        r##"return show(#peripheral.getNames(), peripheral.isPresent("left"), peripheral.getType("left"), peripheral.getMethods("left"), peripheral.wrap("left"), peripheral.call("left", "x"), select("#", peripheral.find("modem")), peripheral.hasType("left", "modem"))"##,
        r#"0 | false | nil | nil | nil | nil | 0 | nil"#,
    ),
    (
        r#"return show(pcall(peripheral.getName, {}), pcall(peripheral.isPresent))"#,
        r#"false | false | "bad argument #1 (string expected, got nil)""#,
    ),
    (
        r#"return show(table.concat(rs.getSides(), ","), rs == redstone, rs.getInput("left"), rs.getAnalogInput("left"), rs.getBundledInput("left"), rs.testBundledInput("left", 0), type(rs.setAnalogueOutput))"#,
        r#""bottom,top,back,front,right,left" | true | false | 0 | 0 | true | "function""#,
    ),
    (
        r#"rs.setOutput("left", true) local a, b = rs.getOutput("left"), rs.getAnalogOutput("left") rs.setAnalogOutput("top", 7) local c, d = rs.getOutput("top"), rs.getAnalogOutput("top") rs.setBundledOutput("back", 5) local e = rs.getBundledOutput("back") rs.setOutput("left", false) rs.setAnalogOutput("top", 0) rs.setBundledOutput("back", 0) return show(a, b, c, d, e, rs.getOutput("LEFT"))"#,
        r#"true | 15 | true | 7 | 5 | false"#,
    ),
    (
        r#"local function e(...) return (select(2, pcall(...))) end return show(e(rs.getInput, "up"), e(rs.setAnalogOutput, "top", 16), e(rs.getOutput))"#,
        r#""bad argument #1 (unknown option up)" | "Expected number in range 0-15" | "bad argument #1 (string expected, got no value)""#,
    ),
    (
        r##"fs.makeDir("par/x/y/z") local h = fs.open("par/x/y/z/f", "w") h.write("12345") h.close() fs.copy("par/x", "par/c") fs.move("par/x", "par/m") return show(fs.exists("par/x"), fs.getSize("par/c/y/z/f"), fs.getSize("par/m/y/z/f"), table.concat(fs.list("par"), ","))"##,
        r#"false | 5 | 5 | "c,m""#,
    ),
    (
        r##"local h = fs.open("par/sp ace é", "w") h.close() return show(table.concat(fs.list("par"), ","), fs.exists("par/sp ace é"), fs.getName("par/sp ace é"))"##,
        r#""sp ace \195\169" | true | "sp ace \195\169""#,
    ),
    (
        r##"fs.makeDir("par/d") local h = fs.open("par/d/f", "w") h.close() fs.delete("par/d") return show(fs.exists("par/d"), pcall(fs.delete, "par/d"))"##,
        r#"false | true"#,
    ),
    (
        r##"local h = fs.open("par/t", "w") h.write(1.5) h.write(true == true and 2 or 0) h.writeLine(nil == nil and "x" or "y") h.close() local r = fs.open("par/t", "r") local s = r.readAll() r.close() return show(s, pcall(function() local w = fs.open("par/t", "w") w.write({}) end))"##,
        r#""1.52x\10" | false | "exec:15: bad argument #1 (string expected, got table)""#,
    ),
    (
        r##"local h = fs.open("par/t", "wb") h.write(256) h.write(-1) h.write("é") h.close() local r = fs.open("par/t", "rb") local s = r.readAll() r.close() return show(s)"##,
        r#""\0\255\195\169""#,
    ),
    (
        r##"local h = fs.open("par/t", "w") h.write("x") h.close() local r = fs.open("par/t", "r") local a, b = r.read(0), r.read(5) r.close() local r2 = fs.open("par/t", "r") local ok, e = pcall(function() local x = r2.read(-1) return x end) r2.close() return show(a, b, ok, e)"##,
        r#""" | "x" | false | "exec:15: Cannot read a negative number of characters""#,
    ),
    (
        r##"local h = fs.open("par/a:b?c", "w") h.close() return show(table.concat(fs.list("par"), ","), fs.exists("par/abc"))"##,
        r#""abc" | true"#,
    ),
    (
        r##"return show(fs.combine("a/./b", "../c"), fs.combine("a", "..."), fs.getName("a/b/"), fs.getDir("a/b/"), fs.combine("a", "b*c?"))"##,
        r#""a/c" | "a" | "b" | "a" | "a/b*c?""#,
    ),
    (
        r##"return show(fs.exists(""), fs.exists("/"), fs.isDir(""), fs.getSize(""), fs.isReadOnly(""), fs.getDrive(""))"##,
        r#"true | true | true | 0 | false | "hdd""#,
    ),
    (
        r##"local h = fs.open("par/t", "wb") h.write(1) h.close() local r = fs.open("par/t", "rb") local ok, e = pcall(r.read, -1) r.close() return show(ok, e)"##,
        r#"false | "Cannot read a negative number of bytes""#,
    ),
];

/// Websocket cases, recorded from CraftOS-PC like [`CASES`] but run there on a computer of their
/// own: CraftOS-PC counts a websocket the program closed against its limit of four ("Too many
/// websockets already open" at the fourth, the client's link being one) and, seconds after
/// three were opened and closed, stopped answering altogether, so cases after these would fail
/// for CraftOS-PC's sake (docs/emulator.md, "The emulator against CraftOS-PC").
const WS_CASES: &[(&str, &str)] = &[
    (
        r#"local ws = assert(http.websocket(WS .. "/gateway")) local t = {} for k in pairs(ws) do t[#t+1] = k end table.sort(t) local m = ws.receive(0.2) ws.close() return show(table.concat(t, ","), m, pcall(ws.send, "x"))"#,
        r#""close,receive,send" | nil | false | "attempt to use a closed file""#,
    ),
    (
        r#"local ws = assert(http.websocket(WS .. "/gateway")) ws.close() return show(pcall(ws.receive, 0.1))"#,
        r#"false | "attempt to use a closed file""#,
    ),
    (
        r#"local ws = assert(http.websocket(WS .. "/gateway")) ws.send("not json") local t = os.startTimer(3) local got = {} while true do local ev = table.pack(os.pullEvent()) if ev[1] == "websocket_message" and ev[2]:find("/gateway$") then got[#got+1] = "message " .. tostring(ev[4]) .. " " .. (ev[3]:match('"code":"([%w_]+)"') or ev[3]) elseif ev[1] == "websocket_closed" and ev[2]:find("/gateway$") then got[#got+1] = "closed " .. tostring(ev[3]) .. " " .. tostring(ev[4]) break elseif ev[1] == "timer" and ev[2] == t then got[#got+1] = "timeout" break end end pcall(ws.close) return show(table.concat(got, "; "))"#,
        r#""message false bad_hello; closed bad_hello 4000""#,
    ),
];

/// (snippet, what CC: Tweaked answers, where that comes from and what CraftOS-PC answers).
/// Run on the emulator only.
const CC_ONLY: &[(&str, &str, &str)] = &[
    (
        r#"return show(pcall(fs.open, "par/x", "q"))"#,
        r#"false | "Unsupported mode""#,
        "FSAPI.open throws MountConstants.UNSUPPORTED_MODE; CraftOS-PC: \"q: Unsupported mode\"",
    ),
    (
        r#"local h = fs.open("par/f", "a") local t = {} for k in pairs(h) do t[#t+1] = k end table.sort(t) h.close() return show(table.concat(t, ","))"#,
        r#""close,flush,write,writeLine""#,
        "FSAPI.open: WriteHandle.of(.., canSeek = false) for \"a\"; CraftOS-PC adds seek",
    ),
    (
        r#"for i = 1, 300 do os.queueEvent("q", i) end local n, last = 0, 0 local t = os.startTimer(0.2) while true do local e, a = os.pullEvent() if e == "q" then n = n + 1 last = a elseif e == "timer" and a == t then break end end return show(n, last)"#,
        r#"256 | 256"#,
        "ComputerExecutor.QUEUE_LIMIT = 256 drops later events; CraftOS-PC queues all 300",
    ),
    (
        r#"return show(fs.getDrive("par/none"), fs.getName(""), fs.getCapacity("par"))"#,
        r#"nil | "root" | 1000000"#,
        "FSAPI.getDrive is nil for a missing path, FileSystem.getName(\"\") is \"root\", the \
         disk is computerSpaceLimit (1,000,000); CraftOS-PC: \"hdd\", \"\", the host disk's size",
    ),
    (
        r#"return show(pcall(fs.getSize, "../x"))"#,
        r#"false | "/../x: Invalid Path""#,
        "FileSystem.getMount finds no mount above the root; CraftOS-PC: \"/../x: No such file\"",
    ),
    (
        r#"local h = fs.open("par/a", "w") h.close() h = fs.open("par/b", "w") h.close() return show(pcall(fs.copy, "par/a", "par/b"))"#,
        r#"false | "/par/b: File exists""#,
        "FileSystem.copy names the destination; CraftOS-PC names the source",
    ),
    (
        r#"local function e(...) return (select(2, pcall(...))) end return show(e(fs.combine), e(fs.exists), e(fs.open, "par/x"), e(os.queueEvent, {}))"#,
        r#""bad argument #1 (string expected, got no value)" | "bad argument #1 (string expected, got no value)" | "bad argument #2 (string expected, got no value)" | "bad argument #1 (string expected, got table)""#,
        "LuaValues.badArgument: \"(string expected, got no value)\"; CraftOS-PC: \"(expected string, got no value)\"",
    ),
    (
        r#"return show(http.get("nope"))"#,
        r#"nil | "Must specify http or https""#,
        "HTTPAPI.request returns false at once, so http.get returns nil, message; CraftOS-PC \
         accepts the request and fails it later with http_failure (nil, message, nil)",
    ),
    (
        r#"return show(string.format("%s|%s|%s", nil, true, 1))"#,
        r#""nil|true|1""#,
        "every Lua formats each argument with tostring; with a nil among the arguments \
         CraftOS-PC 2.8.2 loses the last one (\"nil|true|no value: 0\", and \
         string.format(\"%s|%s\", nil, 5) is \"nil|no value: 0\")",
    ),
    (
        r#"return show(pcall(rs.setOutput, "top", 1))"#,
        r#"false | "bad argument #2 (boolean expected, got number)""#,
        "RedstoneAPI.setOutput takes a boolean (IArguments.getBoolean); CraftOS-PC accepts 1",
    ),
    (
        r#"local h = fs.open("par/a:b*c?d", "w") h.close() return show(table.concat(fs.list("par"), ","), fs.combine(" a ", " b "), fs.combine("a", "b:c"), fs.combine("\\a\\b"), fs.getName("/"))"#,
        r#""abcd" | "a/b" | "a/bc" | "a/b" | "root""#,
        "FileSystem.sanitizePath drops \"*:<>?| (combine, getName and getDir keep * and ?), \
         trims each part and reads \\ as /, getName of the root is \"root\"; CraftOS-PC keeps \
         * in a file name (\"ab*cd\"), and in fs.combine keeps spaces, : and \\ (\" a / b \", \
         \"a/b:c\", \"\\a\\b\"); getName(\"/\") is \"\"",
    ),
    (
        r#"return show(http.request("nope"))"#,
        r#"false | "Must specify http or https""#,
        "HTTPAPI.request returns false, message; CraftOS-PC returns true",
    ),
];

/// Runs `cases` on `who`; returns the differences.
async fn differences(
    client: &Client,
    who: &str,
    runtime: &str,
    port: u16,
    cases: impl Iterator<Item = (&'static str, &'static str)>,
) -> Vec<String> {
    let prelude = PRELUDE.replace("PORT", &port.to_string());
    let mut diffs = Vec::new();
    for (code, want) in cases {
        let r = call(
            client,
            "exec-lua",
            json!({"traposId": who, "code": format!("{prelude}\n{code}")}),
        )
        .await;
        let d = data(&r);
        let got = d["returns"][0]["value"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("(not a string: {})", text(&r)));
        if got != want {
            diffs.push(format!("{code}\n  expected: {want}\n  {runtime}: {got}"));
        }
    }
    diffs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_answers_as_cc_does() {
    let host = support::start_host().await;
    let _c = support::emulated(&host, 1, Some("emu")).await;
    let (client, _progress) = fake::connect(&host.mcp_url(), &host.local_token).await;
    let cases = CASES
        .iter()
        .chain(WS_CASES)
        .copied()
        .chain(CC_ONLY.iter().map(|&(code, want, _)| (code, want)));
    let diffs = differences(
        &client,
        "1:emu",
        "emulator",
        host.gateway_addr.port(),
        cases,
    )
    .await;
    assert!(diffs.is_empty(), "differences:\n{}", diffs.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn craftos_pc_still_answers_as_recorded() {
    let f = support::world::World::boot(support::world::Runtime::CraftOs, &["real", "sock"]).await;
    let who = f.computer("real").trapos_id.clone();
    // The runtime is CraftOS-PC, not an emulator that happens to answer alike.
    let r = f
        .call("exec-lua", json!({"traposId": who, "code": "return _HOST"}))
        .await;
    let host = data(&r)["returns"][0]["value"].as_str().unwrap().to_owned();
    assert!(host.contains("CraftOS-PC"), "{host}");
    let port = f.host.gateway_addr.port();
    let mut diffs = differences(&f.client, &who, "CraftOS-PC", port, CASES.iter().copied()).await;
    let sock = f.computer("sock").trapos_id.clone();
    let ws = WS_CASES.iter().copied();
    diffs.extend(differences(&f.client, &sock, "CraftOS-PC", port, ws).await);
    assert!(diffs.is_empty(), "differences:\n{}", diffs.join("\n"));
}
