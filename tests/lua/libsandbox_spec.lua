-- libsandbox_spec: the serve scheduler (concurrency, output, cancel, stop) with
-- os.queueEvent/os.pullEventRaw stubbed; no CC needed.
local queued = {}
local realOs = os
os = setmetatable({
    queueEvent = function(...) queued[#queued + 1] = table.pack(...) end,
    pullEventRaw = function(filter) return coroutine.yield(filter) end,
    epoch = function() return 1733000000000 end,
    getComputerID = function() return 7 end,
}, { __index = realOs })

local sandbox = dofile(ROOT .. "apis/libsandbox.lua")
local json = sandbox.json

local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end
local function take(name)
    for i, ev in ipairs(queued) do
        if ev[1] == name then table.remove(queued, i) return ev end
    end
end

local function handler(req)
    req.output("out", "start " .. req.payload.n .. "\n")
    req.output("out", "more\n")
    local _, id = coroutine.yield("timer")
    req.output("err", "woke " .. tostring(id) .. "\n")
    if req.payload.fail then error("boom") end
    return true, { n = req.payload.n, returns = json.array() }
end

local co = coroutine.create(function()
    sandbox.serve({ "exec-lua" }, handler, { name = "test", onCancel = function() return { output = "so far" } end })
    return "stopped"
end)
local function feed(...)
    local ok, res = coroutine.resume(co, ...)
    assert(ok, tostring(res))
    return res
end

feed()
local stop = take("trapdesk_stop")
eq(stop[2], "test")
local serve = take("trapdesk_serve")
local owner = serve[2]
eq(serve[3][1], "exec-lua")

-- Two requests run at once; one timer wakes both (each waits for "timer").
feed("trapdesk_request", owner, "1/h-1", "exec-lua", '{"n":1}', 30000)
feed("trapdesk_request", owner, "1/h-2", "exec-lua", '{"n":2}', 30000)
feed("trapdesk_request", "someone-else", "1/h-9", "exec-lua", '{"n":9}', 30000)
local out1 = take("trapdesk_output")
eq(out1[2], "1/h-1") eq(out1[3], "out") eq(out1[4], "start 1\nmore\n", "output coalesced per resume")
eq(take("trapdesk_output")[2], "1/h-2")
eq(take("trapdesk_output"), nil, "requests for another owner are ignored")
feed("key", 28) -- not a timer: nobody wakes
eq(take("trapdesk_respond"), nil)
feed("timer", 5)
local e1, r1 = take("trapdesk_output"), take("trapdesk_respond")
eq(e1[3], "err") eq(e1[4], "woke 5\n")
eq(r1[2], "1/h-1") eq(r1[3], true) eq(r1[4], '{"n":1,"returns":[]}', "empty array survives as JSON text")
local r2 = take("trapdesk_respond")
eq(r2[2], "1/h-2") eq(r2[3], true)

-- A handler that raises is answered internal; the server goes on.
feed("trapdesk_request", owner, "1/h-3", "exec-lua", '{"n":3,"fail":true}', 30000)
feed("timer", 6)
local r3 = take("trapdesk_respond")
eq(r3[3], false) assert(json.decode(r3[4]).code == "internal", "internal error")
assert(json.decode(r3[4]).message:find("boom"), "message kept")

-- Bad payload JSON is bad_request, answered in the request's first run: its answer ends it at
-- the daemon, with no "accepted" beside it (one event fewer per short request).
queued = {}
feed("trapdesk_request", owner, "1/h-4", "exec-lua", "{nope", 30000)
eq(json.decode(take("trapdesk_respond")[4]).code, "bad_request")
eq(take("trapdesk_alive"), nil, "answered at once: no accepted")

-- Cancel abandons the handler at its yield, with onCancel's fields.
queued = {}
feed("trapdesk_request", owner, "1/h-5", "exec-lua", '{"n":5}', 30000)
feed("trapdesk_cancel", "1/h-5")
local r5 = take("trapdesk_respond")
eq(r5[2], "1/h-5") eq(r5[3], false)
local err = json.decode(r5[4])
eq(err.code, "cancelled") eq(err.output, "so far")
feed("timer", 7)
eq(take("trapdesk_respond"), nil, "a cancelled handler never answers")

-- Every request is accepted (CC may drop events: the daemon hands it over again until it is);
-- a request handed over again is not run twice, and the server says how a request stands.
do
    local function alive(id)
        for i, ev in ipairs(queued) do
            if ev[1] == "trapdesk_alive" and ev[2] == id then table.remove(queued, i) return ev[3] end
        end
    end
    queued = {}
    feed("trapdesk_request", owner, "1/h-10", "exec-lua", '{"n":10}', 30000)
    eq(alive("1/h-10"), "accepted")
    take("trapdesk_output")
    feed("trapdesk_request", owner, "1/h-10", "exec-lua", '{"n":10}', 30000)
    eq(alive("1/h-10"), "accepted", "accepted again")
    eq(take("trapdesk_output"), nil, "but not started twice")
    feed("trapdesk_probe", owner, "1/h-10")
    eq(alive("1/h-10"), "running")
    feed("trapdesk_probe", "someone-else", "1/h-10")
    eq(alive("1/h-10"), nil, "asks for another owner are not answered")
    feed("timer", 8)
    eq(take("trapdesk_respond")[2], "1/h-10")
    eq(take("trapdesk_respond"), nil, "answered once")
    queued = {}
    feed("trapdesk_probe", owner, "1/h-10")
    eq(alive("1/h-10"), "done", "its answer went before this")
    feed("trapdesk_request", owner, "1/h-10", "exec-lua", '{"n":10}', 30000)
    eq(alive("1/h-10"), "accepted")
    eq(alive("1/h-10"), "done", "handed over after its answer: not run again")
    eq(take("trapdesk_output"), nil)
    feed("trapdesk_probe", owner, "1/h-77")
    eq(alive("1/h-77"), "unknown")
end

-- Daemon restart: announce again. Another instance of "test": stop, unserve.
feed("trapdesk_daemon_up")
eq(take("trapdesk_serve")[2], owner)
feed("trapdesk_request", owner, "1/h-6", "exec-lua", '{"n":6}', 30000)
local res = feed("trapdesk_stop", "test", "newer")
eq(res, "stopped")
local r6 = take("trapdesk_respond")
eq(r6[2], "1/h-6") eq(json.decode(r6[4]).code, "internal")
local unserve = take("trapdesk_serve")
eq(unserve[2], owner) eq(#unserve[3], 0)

-- A payload in pieces (a message that came in fragments) is decoded from its pieces; members
-- named in `chunks` reach the handler as json.chunks lists, never joined (runs of 4 KiB and
-- more stay the strings they are).
queued = {}
local seen
co = coroutine.create(function()
    sandbox.serve({ "write-file" }, function(req)
        seen = req.payload
        return true, { ok = true }
    end, { name = "pieces", chunks = { content = true } })
end)
feed()
local owner2 = take("trapdesk_serve")[2]
local content = string.rep("QUJD", 15000)
local text = json.encode({ path = "a.bin", content = content })
local pieces = {}
for i = 1, #text, 5000 do pieces[#pieces + 1] = text:sub(i, i + 4999) end
feed("trapdesk_request", owner2, "1/h-7", "write-file", pieces, 30000)
local r7 = take("trapdesk_respond")
eq(r7[2], "1/h-7") eq(r7[3], true)
eq(seen.path, "a.bin")
eq(getmetatable(seen.content), json.chunks_mt, "content is a chunks list")
eq(table.concat(seen.content), content)
assert(#seen.content >= 12, "in the pieces it came in: " .. #seen.content)

os = realOs
print("libsandbox_spec: ok")
