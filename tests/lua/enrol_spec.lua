-- enrol_spec: the daemon's enrolment (docs/protocol.md "Enrolment") against stubbed CC APIs:
-- the hello says enrol and carries the shared secret until the computer has its own; a
-- welcome's secret is saved before `enrolled` is sent (and dropped again when saving fails);
-- a refused own secret is followed, a second later, by one try with the shared secret.
local json = dofile(ROOT .. "apis/json.lua")
local sent, queued, timers, delays, opened = {}, {}, 0, {}, nil
local realOs = os
local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end
local store = { ["sandbox.url"] = "ws://127.0.0.1:4444/gateway", ["sandbox.password"] = "shared-secret" }
local saves, saveOk = 0, true
local env = setmetatable({
    shell = { getRunningProgram = function() return ROOT .. "servers/sandbox.lua" end },
    fs = { getDir = function(p) return (p:match("^(.*)/[^/]*$") or "") end,
        exists = function() return false end, open = function() return nil end, getSize = function() return 0 end,
        delete = function() end },
    settings = {
        get = function(k) return store[k] end,
        set = function(k, v) store[k] = v end,
        unset = function(k) store[k] = nil end,
        save = function() saves = saves + 1 return saveOk end,
    },
    http = { websocketAsync = function(u) opened = u return true end },
    os = setmetatable({
        queueEvent = function(...) queued[#queued + 1] = table.pack(...) end,
        pullEventRaw = function(f) return coroutine.yield(f) end,
        startTimer = function(d) timers = timers + 1 delays[timers] = d return timers end,
        epoch = function() return 1733000000000 end, getComputerID = function() return 7 end,
        getComputerLabel = function() return "miner" end, clock = realOs.clock,
    }, { __index = realOs }),
    print = function() end, _HOST = "ComputerCraft 1.113.0 (test)",
}, { __index = _G })
local abs = ROOT:sub(1, 1) == "/" and ROOT or (io.popen("pwd"):read("*l") .. "/" .. ROOT)
env.shell.getRunningProgram = function() return abs:sub(2) .. "servers/sandbox.lua" end
local fn = assert(loadfile(ROOT .. "servers/sandbox.lua", "t", env))
local co = coroutine.create(fn)
local handle = { send = function(t) sent[#sent + 1] = t end, close = function() end }
local function feed(...) local ok, e = coroutine.resume(co, ...) assert(ok, tostring(e)) end
local function take() return json.decode(table.remove(sent, 1)) end
local function types()
    local t = {}
    while #sent > 0 do t[#t + 1] = take().type end
    return table.concat(t, ",")
end
local conn = 0
--- Opens the next connection (after the retry timer, when one is due) and returns its hello.
local function connect(retry)
    if retry then feed("timer", retry) end
    conn = conn + 1
    local url = "ws://127.0.0.1:4444/gateway?c=" .. conn
    eq(opened, url, "connection " .. conn)
    feed("websocket_success", url, handle)
    return take(), url
end
local function lastTimer() return timers, delays[timers] end
local function refusedWith()
    for i = #queued, 1, -1 do
        if queued[i][1] == "trapdesk_link" then return queued[i][2], queued[i][3] end
    end
end

feed()
-- 1. No own secret yet: the shared one, and enrol.
local hello, url = connect()
eq(hello.type, "hello") eq(hello.enrol, true) eq(hello.secret, "shared-secret")
-- 2. The welcome enrols: saved, then `enrolled` (before `serve`).
feed("websocket_message", url, '{"type":"welcome","protocol":1,"trapos_id":"7:miner","heartbeat_ms":15000,"max_message":131072,"secret":"own-secret-1"}')
eq(store["trapdesk.secret"], "own-secret-1") eq(saves, 1)
eq(types(), "enrolled,limit,serve")
-- 3. A drop and a reconnect: the own secret from now on.
feed("websocket_closed", url, "gone", 1006)
local t = lastTimer()
hello, url = connect(t)
eq(hello.secret, "own-secret-1", "own secret after enrolling") eq(hello.enrol, true)
-- 4. The host forgot us: own secret refused; a second later, the shared one.
feed("websocket_message", url, '{"type":"error","code":"auth_failed","message":"wrong secret"}')
feed("websocket_closed", url, "auth_failed", 4001)
local t2, d2 = lastTimer()
assert(d2 >= 0.75 and d2 <= 1.25, "retried a second later, not " .. tostring(d2))
eq(select(1, refusedWith()), "retrying")
hello, url = connect(t2)
eq(hello.secret, "shared-secret", "the shared secret after the own one was refused")
-- 5. Refused too (another computer holds the id): the host's reason reaches the player and
-- the installer, and the next try, a minute later, is with the own secret again.
feed("websocket_message", url, '{"type":"error","code":"auth_failed","message":"computer 7 is enrolled with its own secret; the shared secret no longer links it; on the host: trapdesk secret forget 7"}')
feed("websocket_closed", url, "auth_failed", 4001)
local what, detail = refusedWith()
eq(what, "refused")
assert(detail:find("trapdesk secret forget 7", 1, true), detail)
local t3, d3 = lastTimer()
assert(d3 >= 45, "a minute's retry, not " .. tostring(d3))
hello, url = connect(t3)
eq(hello.secret, "own-secret-1", "back to the own secret")
-- 6. A welcome with a secret that cannot be saved: dropped again, no `enrolled`.
saveOk = false
feed("websocket_message", url, '{"type":"welcome","protocol":1,"trapos_id":"7:miner","heartbeat_ms":15000,"max_message":131072,"secret":"own-secret-2"}')
eq(store["trapdesk.secret"], "own-secret-1", "an unsaved secret is not kept")
eq(types(), "limit,serve")
feed("trapdesk_stop", "daemon", "spec")
print("enrolment: ok")
