//! Attacks on the emulator: a chunk sent with `exec-lua` to an emulated computer running the
//! real client tries every route out to the host (docs/security.md, "The emulator is a
//! sandbox"). Each test checks the host's disk, not what Lua says.

use serde_json::{Value, json};
use trapdesk::session::{Origin, RequestSpec};

use super::support::{self, TestHost};

/// Runs `code` on computer `id` through the host, as an agent's `exec-lua` does; the chunk's
/// first returned value.
async fn exec(host: &TestHost, id: u64, code: &str) -> Value {
    let v = host
        .session
        .request(
            &id.to_string(),
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code })),
            Origin::Person,
        )
        .await
        .unwrap();
    v["returns"][0]["value"].clone()
}

/// Walks every value a chunk can reach, from `_G`, the registry `debug.getregistry` gives,
/// every metatable (`getmetatable` and `debug.getmetatable` of each value, strings' included)
/// and every upvalue of every function, Lua and C alike; reports what looks like the host's
/// `io`, `os`, `package` or `debug`, and what a userdata lets through.
const WALK: &str = r#"
local seen, found, queue = {}, {}, {}
local host_names = { execute = true, popen = true, tmpname = true, getenv = true,
  rename = true, exit = true, loadlib = true, searchpath = true,
  cpath = true, stdout = true, stderr = true, stdin = true, setuservalue = true,
  upvaluejoin_c = true, collectgarbage = true, dofile_host = true }
local function push(v, path)
  if v == nil or seen[v] then return end
  local t = type(v)
  if t ~= "table" and t ~= "function" and t ~= "userdata" and t ~= "thread" then return end
  seen[v] = path
  queue[#queue + 1] = { v, path }
end
push(_G, "_G")
push(debug.getregistry(), "registry")
push(getmetatable(""), "string metatable")
local n = 0
while #queue > 0 and n < 200000 do
  n = n + 1
  local v, path = table.unpack(table.remove(queue))
  local t = type(v)
  if t == "table" then
    for k, x in next, v do
      if type(k) == "string" and host_names[k] and type(x) == "function" and debug.getinfo(x, "S").what == "C" then
        found[#found + 1] = path .. "." .. k
      end
      push(k, path .. "[key]")
      push(x, path .. "." .. tostring(k))
    end
  elseif t == "function" then
    for i = 1, 255 do
      local name, up = debug.getupvalue(v, i)
      if name == nil then break end
      push(up, path .. "^" .. tostring(name))
    end
  elseif t == "userdata" then
    if debug.getmetatable(v) ~= nil then found[#found + 1] = "metatable of userdata " .. path end
  end
  push(getmetatable(v), path .. "<mt>")
  push(debug.getmetatable(v), path .. "<dmt>")
end
-- Globals CC does not have and the host's Lua does.
for _, name in ipairs({ "collectgarbage", "module", "loadstring", "newproxy", "gcinfo" }) do
  if rawget(_G, name) ~= nil then found[#found + 1] = "global " .. name end
end
if rawget(_G, "io") and rawget(_G, "io").popen then found[#found + 1] = "io.popen" end
if package.loadlib or package.cpath or package.searchers then found[#found + 1] = "package" end
if os.execute or os.remove or os.rename or os.getenv or os.exit or os.tmpname then found[#found + 1] = "os" end
return "walked " .. n .. ": " .. (#found == 0 and "nothing" or table.concat(found, ", "))
"#;

#[tokio::test]
async fn a_chunk_walking_everything_reachable_finds_no_host_library() {
    let host = support::start_host().await;
    let _computer = support::emulated(&host, 41, None).await;
    let report = exec(&host, 41, WALK).await;
    let report = report.as_str().unwrap_or_default().to_owned();
    assert!(report.starts_with("walked "), "{report}");
    assert!(report.ends_with(": nothing"), "{report}");
}

/// Every other route: `require`/`package`, the host's `loadfile`/`dofile` of a host path, a
/// binary chunk through `load`, `__gc`, `debug.setmetatable`/`setupvalue`/`setlocal` on the
/// emulator's userdata, C functions and C frames. Each would write the marker (or crash the
/// host); the computer answers afterwards.
#[tokio::test]
async fn a_chunk_trying_every_route_out_changes_no_host_file() {
    let host = support::start_host().await;
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("marker.txt");
    std::fs::write(&marker, "host only").unwrap();
    let made = outside.path().join("made.txt");
    let _computer = support::emulated(&host, 42, None).await;
    let code = format!(
        r#"
local marker, made = [==[{marker}]==], [==[{made}]==]
local out = {{}}
local function try(name, f)
  local ok, err = pcall(f)
  out[#out + 1] = name .. "=" .. tostring(ok) .. ":" .. tostring(err)
end
local function write_with(io_lib, os_lib)
  if type(io_lib) == "table" and io_lib.open then
    local h = io_lib.open(marker, "w") if h then h:write("pwned") h:close() end
    local h2 = io_lib.open(made, "w") if h2 then h2:write("pwned") h2:close() end
  end
  if type(os_lib) == "table" and os_lib.execute then os_lib.execute("touch '" .. made .. "'") end
end
-- `require` and `package` are CC's (the shell's, over the computer's disk): no C loader.
try("require", function() local m = require("io") write_with(m, require("os")) return m.popen end)
try("package", function() return package.loadlib or package.cpath or package.loaded.os.execute end)
try("registry", function() local r = debug.getregistry() write_with(r._LOADED.io, r._LOADED.os) return r._LOADED.os end)
try("loadfile", function() return loadfile(marker) end)
try("dofile", function() return dofile(marker) end)
try("io.open host path", function() local h = io.open(marker, "w") if h then h:write("pwned") h:close() end return h end)
-- A Lua 5.2 binary chunk's header: refused before a byte of it is read as code.
try("binary load", function() return assert(load("\27LuaR\0\1\4\8\4\8\0\25\147\13\10\26\10", "b", "b")) end)
try("binary load text mode", function() return assert(load(string.rep("\27Lua", 4))) end)
try("string.dump", function() return load(string.dump(print)) end)
-- Upvalues and locals of C functions and frames. The natives (Rust) are found as upvalues
-- of the Lua wrappers around them.
local natives = {{}}
for _, lib in ipairs({{ fs, term, os, http, peripheral }}) do
  for _, f in pairs(lib) do
    if type(f) == "function" then
      for i = 1, 8 do
        local name, v = debug.getupvalue(f, i)
        if name == nil then break end
        if type(v) == "function" and debug.getinfo(v, "S").what == "C" then natives[#natives + 1] = v end
      end
    end
  end
end
try("getupvalue C", function()
  for _, f in ipairs({{ pcall, string.gsub, coroutine.resume, table.unpack(natives) }}) do
    if debug.getupvalue(f, 1) ~= nil then return "reached" end
  end
  return nil
end)
try("setupvalue C", function() return debug.setupvalue(pcall, 1, "x") or debug.setupvalue(natives[1], 1, {{}}) end)
for _, f in ipairs(natives) do
  pcall(debug.setupvalue, f, 1, "x")
  pcall(debug.upvaluejoin, f, 1, write_with, 1)
end
out[#out + 1] = "natives=" .. #natives
try("setlocal C frame", function()
  local function probe() return debug.setlocal(2, 1, "x"), debug.getlocal(2, 1) end
  return select(2, pcall(probe))
end)
try("setlocal C frame of a native", function()
  return select(2, pcall(string.gsub, "abc", "%w", function() return tostring(debug.setlocal(2, 1, {{}})) .. tostring(debug.getlocal(2, 2)) end))
end)
-- The emulator's userdata: an error from a native.
local ud
for _, f in ipairs({{ function() return term.write({{}}) end, function() return fs.open() end,
    function() return term.setCursorPos("x") end, function() return os.startTimer({{}}) end }}) do
  local ok, e = pcall(f)
  if type(e) == "userdata" then ud = e break end
end
out[#out + 1] = "userdata=" .. type(ud)
if ud then
  try("debug.setmetatable userdata", function() return debug.setmetatable(ud, {{ __index = function() end }}) end)
  try("debug.getmetatable userdata", function() return debug.getmetatable(ud) end)
  try("setmetatable userdata", function() return setmetatable(ud, {{}}) end)
  try("getmetatable userdata", function() return getmetatable(ud) end)
end
-- __gc: never run (a finaliser runs with hooks off, whenever a collection happens).
gc_ran = false
try("__gc", function()
  for i = 1, 2000 do setmetatable({{}}, {{ __gc = function() gc_ran = true write_with(io, os) end }}) end
  local big = {{}}
  for i = 1, 20000 do big[i] = {{ i }} end
  return gc_ran
end)
try("debug.setmetatable __gc", function()
  debug.setmetatable(function() end, {{ __gc = function() gc_ran = true end }})
  return true
end)
try("sethook", function() return debug.sethook(function() end, "", 1) end)
try("gethook", function() return debug.gethook() end)
out[#out + 1] = "gc_ran=" .. tostring(gc_ran)
return table.concat(out, "\n")
"#,
        marker = marker.display(),
        made = made.display()
    );
    let report = exec(&host, 42, &code).await;
    let report = report.as_str().unwrap_or_default().to_owned();
    assert!(report.contains("gc_ran=false"), "{report}");
    assert!(report.contains("binary load=false"), "{report}");
    assert!(report.contains("registry=true:nil"), "{report}");
    assert!(report.contains("getupvalue C=true:nil"), "{report}");
    assert!(report.contains("setlocal C frame=true:nil"), "{report}");
    assert!(report.contains("sethook=false"), "{report}");
    assert!(!report.contains("natives=0"), "no native reached: {report}");
    assert!(report.contains("userdata=userdata"), "{report}");
    assert!(
        report.contains("debug.getmetatable userdata=true:nil"),
        "{report}"
    );
    assert!(
        report.contains("getmetatable userdata=true:nil"),
        "{report}"
    );
    assert!(
        report.contains("debug.setmetatable userdata=false"),
        "{report}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "host only");
    assert!(!made.exists(), "{report}");
    let names: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "{report}");
    // Nothing was corrupted: the computer still runs Lua and its client still answers.
    assert_eq!(exec(&host, 42, "return 6 * 7").await, json!(42));
}

/// One chunk cannot grow the host without bound: past the computer's memory limit an
/// allocation fails with Lua's "not enough memory", which `pcall` catches, and the computer
/// runs on.
#[tokio::test]
async fn a_chunk_allocating_without_end_stops_at_the_memory_limit() {
    let host = support::start_host().await;
    let _computer = support::emulated(&host, 43, None).await;
    let code = r#"
local ok, err = pcall(function()
  local s, t = ("x"):rep(1024 * 1024), {}
  for i = 1, 1000 do t[i] = s .. i end
  return #t
end)
return tostring(ok) .. ":" .. tostring(err)
"#;
    let report = exec(&host, 43, code).await;
    let report = report.as_str().unwrap_or_default().to_owned();
    assert!(report.starts_with("false:"), "{report}");
    assert!(report.contains("not enough memory"), "{report}");
    assert_eq!(exec(&host, 43, "return 6 * 7").await, json!(42));
}

/// The host's functions the bios used to borrow (`os.date`, `os.time`) are the emulator's own
/// and still answer as Lua's do; `debug` still serves Lua code as CC's does.
#[tokio::test]
async fn cc_programs_still_get_dates_and_debug_after_the_host_libraries_are_gone() {
    let host = support::start_host().await;
    let _computer = support::emulated(&host, 44, None).await;
    let code = r#"
local t = os.date("!*t", 86400 * 365)
local f = function(a, b) local c = a + b return debug.getlocal(1, 3) end
local up = 5
local g = function() return up end
debug.setupvalue(g, 1, 6)
local info = debug.getinfo(1, "Sl")
return table.concat({ t.year, t.month, t.day, os.date("!%Y-%m-%d %H:%M", 0),
  os.time({ year = 2000, month = 1, day = 1, hour = 0 }) - os.time({ year = 1999, month = 12, day = 31, hour = 0 }),
  select(1, f(1, 2)), g(), info.what, tostring(info.currentline > 0),
  tostring(select(2, pcall(os.date, "%Ez")):find("invalid conversion") ~= nil),
  type(debug.traceback()), tostring(debug.getregistry()._LOADED.string == string) }, ",")
"#;
    let report = exec(&host, 44, code).await;
    assert_eq!(
        report,
        json!("1971,1,1,1970-01-01 00:00,86400,c,6,main,true,true,string,true"),
    );
}

/// Modes of every folder and file under `dir` that give group or others any access.
#[cfg(unix)]
fn loose_modes(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut loose = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            loose.push(format!("{} {mode:o}", path.display()));
        }
        if meta.is_dir() {
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    loose
}

/// Other users of the host read no emulated disk (each `.settings` holds the computer's
/// secrets): a fresh `--demo` disk, its folders and what its computers write are the user's
/// alone, and a disk an older version left 0755/0644 is tightened when its computer starts.
#[cfg(unix)]
#[tokio::test]
async fn another_user_of_the_host_reads_no_demo_disk() {
    use std::os::unix::fs::PermissionsExt;
    let host = support::start_host().await;
    let data = tempfile::tempdir().unwrap();
    // A disk from an older version: group and others could read it.
    let old = data.path().join("computers").join("2");
    std::fs::create_dir_all(old.join("programs")).unwrap();
    std::fs::write(old.join("programs").join("old.lua"), "print(1)").unwrap();
    for (path, mode) in [
        (data.path().join("computers"), 0o755),
        (old.clone(), 0o755),
        (old.join("programs"), 0o755),
        (old.join("programs").join("old.lua"), 0o644),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let stop = tokio_util::sync::CancellationToken::new();
    let (url, dir, token) = (host.gateway_url(), data.path().to_path_buf(), stop.clone());
    let demo = tokio::spawn(async move {
        trapdesk::emu::run_demo(1, &url, support::SECRET, &dir, token).await
    });
    support::wait_until(|| {
        host.session
            .computer("1:miner")
            .is_some_and(|c| c.online && c.serves.iter().any(|s| s == "exec-lua"))
    })
    .await;
    // What a program writes at run time is as private as what the installer wrote.
    let made = exec(
        &host,
        1,
        r#"fs.makeDir("/made/deep") local h = fs.open("/made/deep/f.txt", "w") h.write("x") h.close() return true"#,
    )
    .await;
    assert_eq!(made, json!(true));
    support::wait_until(|| host.session.computer("2:turtle").is_some_and(|c| c.online)).await;
    let loose = loose_modes(&data.path().join("computers"));
    stop.cancel();
    demo.await.unwrap().unwrap();
    assert!(loose.is_empty(), "{loose:#?}");
    assert!(data.path().join("computers/1/.settings").exists());
    assert!(data.path().join("computers/1/made/deep/f.txt").exists());
}
