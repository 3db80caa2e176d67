-- daemon_spec: servers/sandbox.lua against stubbed CC APIs (http, os events, settings).
local json = dofile(ROOT .. "apis/json.lua")
local sent, queued, timers, opened = {}, {}, 0, nil
local nowMs, saved, timerAfter = 1733000000000, {}, {}
-- The frame limit of the rule that allows the host (CC raises "Message is too large" above it).
local ruleLimit = math.huge
local realOs = os
local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end
local env = setmetatable({
    shell = { getRunningProgram = function() return ROOT .. "servers/sandbox.lua" end },
    fs = { getDir = function(p) return (p:match("^(.*)/[^/]*$") or "") end,
        exists = function() return false end, open = function() return nil end, getSize = function() return 0 end,
        delete = function() end },
    -- localhost: the daemon must connect to 127.0.0.1 (CraftOS-PC drops a localhost URL's path).
    settings = { get = function(k) return ({ ["sandbox.url"] = "ws://localhost:4444/gateway",
        ["sandbox.password"] = "s3cret" })[k] or saved[k] end,
        set = function(k, v) saved[k] = v end, save = function() return true end },
    http = { websocketAsync = function(u) opened = u return true end },
    os = setmetatable({
        queueEvent = function(...) queued[#queued + 1] = table.pack(...) end,
        pullEventRaw = function(f) return coroutine.yield(f) end,
        startTimer = function(s) timers = timers + 1 timerAfter[timers] = s return timers end,
        epoch = function() return nowMs end, getComputerID = function() return 7 end,
        getComputerLabel = function() end, clock = realOs.clock,
    }, { __index = realOs }),
    print = function() end, _HOST = "ComputerCraft 1.113.0 (test)",
}, { __index = _G })
-- The daemon computes its root as "/" .. dir: run it from an absolute ROOT.
local abs = ROOT:sub(1, 1) == "/" and ROOT or (io.popen("pwd"):read("*l") .. "/" .. ROOT)
env.shell.getRunningProgram = function() return abs:sub(2) .. "servers/sandbox.lua" end
local fn = assert(loadfile(ROOT .. "servers/sandbox.lua", "t", env))
local co = coroutine.create(fn)
-- Receipts (`received`) are kept apart: the checks below read the other frames in order.
local receipts = {}
local handle = { send = function(t)
    if #t > ruleLimit then error("Message is too large", 2) end
    local r = t:match('^{"id":"([^"]*)","type":"received"}$')
    if r then receipts[#receipts + 1] = r else sent[#sent + 1] = t end
end, close = function() end }
local function feed(...) local ok, e = coroutine.resume(co, ...) assert(ok, tostring(e)) end
local function last() return json.decode(table.remove(sent, 1)) end

feed()
local url = "ws://127.0.0.1:4444/gateway?c=1"
eq(opened, url, "connects to 127.0.0.1 with a unique query")
feed("websocket_success", url, handle)
local hello = last()
eq(hello.type, "hello") eq(hello.protocol, 1) eq(hello.computer_id, 7) eq(hello.label, json.null)
eq(hello.secret, "s3cret") eq(hello.max_message, 131072) eq(hello.client, "trapdesk-lua/0.2.0")
eq(json.encode(hello.serves), "[]")
feed("trapdesk_serve", "owner1", { "exec-lua" })
feed("websocket_message", url, '{"type":"welcome","protocol":1,"trapos_id":"7:","heartbeat_ms":15000,"max_message":2048}')
-- The probe of the rule's limit: a `limit` message as large as the host takes, which goes.
local probe = table.remove(sent, 1)
eq(#probe, 2048, "the probe is padded to the size it tries")
eq(json.decode(probe).type, "limit") eq(json.decode(probe).max_message, 2048)
local serve = last()
eq(serve.type, "serve") eq(serve.types[1], "exec-lua")
feed("websocket_message", url, '{"type":"ping","t":1733000000123}')
local pong = last() eq(pong.type, "pong") eq(pong.t, 1733000000123)
feed("websocket_message", url, '{"type":"gateway_request","id":"h-1","request":"ping","payload":{}}')
local r = last() eq(r.id, "h-1") eq(r.ok, true) eq(r.payload.pong, true)
eq(r.payload.status, nil, "a plain ping has no status")
-- ping {status:true}: peripherals, monitors, and a turtle's fuel (docs/protocol.md, "Screen").
env.peripheral = { getNames = function() return { "top", "left", "monitor_3" } end,
    hasType = function(n, t) return t == "monitor" and n ~= "left" end,
    getType = function(n) return n == "left" and "modem" or "monitor" end }
env.turtle = { getFuelLevel = function() return "unlimited" end, getFuelLimit = function() return "unlimited" end,
    getSelectedSlot = function() return 2 end }
feed("websocket_message", url, '{"type":"gateway_request","id":"h-1s","request":"ping","payload":{"status":true}}')
r = last() eq(r.id, "h-1s") eq(r.payload.pong, true)
eq(r.payload.status.peripherals, 3) eq(table.concat(r.payload.status.monitors, ","), "monitor_3,top")
eq(r.payload.status.fuel, "unlimited") eq(r.payload.status.fuelLimit, "unlimited") eq(r.payload.status.selected, 2)
eq(r.payload.status.types.left, "modem") eq(r.payload.status.types.top, "monitor") eq(r.payload.status.types.monitor_3, "monitor")
env.turtle = nil
env.peripheral.getNames = function() return {} end
feed("websocket_message", url, '{"type":"gateway_request","id":"h-1t","request":"ping","payload":{"status":true}}')
r = last()
eq(r.payload.status.peripherals, 0) eq(r.payload.status.fuel, nil, "no fuel but on a turtle")
assert(json.encode(r.payload.status):find('"monitors":[]', 1, true), "no monitors: an empty array")
env.peripheral = nil
feed("websocket_message", url, '{"type":"gateway_request","id":"h-2","request":"nope","payload":{}}')
r = last() eq(r.ok, false) eq(r.error.code, "unknown_type")
-- Routed request, output then a large answer fragmented to the host's 2048.
queued = {}
feed("websocket_message", url, '{"type":"gateway_request","id":"h-3","request":"exec-lua","payload":{"code":"x"}}')
local req
for _, ev in ipairs(queued) do if ev[1] == "trapdesk_request" then req = ev end end
eq(req[2], "owner1") eq(req[4], "exec-lua") eq(json.decode(req[5]).code, "x")
eq(receipts[#receipts], "h-3", "a routed request is receipted at once")
feed("trapdesk_output", req[3], "out", "hi\n")
-- The answer comes as a list of JSON pieces (libsandbox encodes in slices): fragments are cut
-- across the pieces.
local big = string.rep("\255\"ab", 6000)
local answerParts = json.encodeParts({ ok = true, output = big })
assert(#answerParts > 1, "a large answer is encoded in pieces")
feed("trapdesk_respond", req[3], true, answerParts)
local out = last() eq(out.type, "output") eq(out.id, "h-3") eq(out.text, "hi\n")
local parts = {}
while #sent > 0 do
    local raw = table.remove(sent, 1)
    assert(#raw <= 2048, "fragment frame within the host's limit: " .. #raw)
    local f = json.decode(raw)
    eq(f.type, "fragment") eq(f.seq, #parts)
    parts[#parts + 1] = f.data
    if f.last then break end
end
local whole = json.decode(table.concat(parts))
eq(whole.type, "computer_response") eq(whole.id, "h-3") eq(whole.payload.output, big)
-- Incoming fragments are reassembled.
local msg = json.encode({ type = "gateway_request", id = "h-4", request = "ping", payload = {} })
feed("websocket_message", url, json.encode({ type = "fragment", mid = "m1", seq = 0, last = false, data = msg:sub(1, 20) }))
feed("websocket_message", url, json.encode({ type = "fragment", mid = "m1", seq = 1, last = true, data = msg:sub(21) }))
r = last() eq(r.id, "h-4") eq(r.payload.pong, true)
-- A flood of output goes out at most 64 frames per flush, the answer queued behind it.
queued = {}
feed("websocket_message", url, '{"type":"gateway_request","id":"h-5","request":"exec-lua","payload":{"code":"y"}}')
for _, ev in ipairs(queued) do if ev[1] == "trapdesk_request" then req = ev end end
local flood = string.rep("z", 64 * 4096 + 10)
-- In uneven pieces, as a chunk's resumes produce them: frames are cut across them.
local at = 1
for _, n in ipairs({ 1, 4095, 4097, 3, 70000, #flood }) do
    if at <= #flood then feed("trapdesk_output", req[3], "out", flood:sub(at, at + n - 1)) at = at + n end
end
feed("trapdesk_respond", req[3], true, json.encode({ ok = true }))
local texts, batches, answer = {}, 0, nil
while not answer do
    batches = batches + 1
    assert(#sent <= 64, "one flush sends at most 64 frames, sent " .. #sent)
    while #sent > 0 do
        local m = last()
        assert(#json.encode(m) <= 2048, "output frames never need fragments")
        if m.type == "output" then
            assert(not answer, "output after the answer")
            texts[#texts + 1] = m.text
        else
            eq(m.type, "computer_response") eq(m.id, "h-5") answer = m
        end
    end
    if not answer then feed("timer", timers) end -- the flush timer the daemon started
    assert(batches < 100, "the answer never came")
end
eq(table.concat(texts), flood, "all output, in order, before the answer")
assert(batches > 1, "a flood is spread over several flushes")
-- A fragmented request goes on to its program as the pieces of its payload's text (never joined).
do
    queued = {}
    local payload = json.encode({ code = string.rep("x", 100) .. '"\\' })
    local whole = '{"type":"gateway_request","id":"h-8","request":"exec-lua","payload":' .. payload .. '}'
    local seq = 0
    for i = 1, #whole, 30 do
        feed("websocket_message", url, json.encode({ type = "fragment", mid = "m8", seq = seq,
            last = i + 30 > #whole, data = whole:sub(i, i + 29) }))
        seq = seq + 1
    end
    local got
    for _, ev in ipairs(queued) do if ev[1] == "trapdesk_request" then got = ev end end
    assert(got, "the request reached its program")
    eq(type(got[5]), "table", "the payload's text in pieces")
    assert(#got[5] > 1, #got[5] .. " pieces")
    eq(table.concat(got[5]), payload)
    feed("trapdesk_respond", got[3], true, "{}")
    sent = {}
end
-- CC drops events beyond 256 queued ones: a request its server never accepts is handed over
-- again, then fails as `lost`, within seconds.
local function tick(ms)
    nowMs = nowMs + ms
    local id = 0
    for t, after in pairs(timerAfter) do if after == 1 and t > id then id = t end end
    timerAfter[id] = nil
    feed("timer", id)
end
local function requests(id)
    local n = 0
    for _, ev in ipairs(queued) do if ev[1] == "trapdesk_request" and ev[3] == id then n = n + 1 end end
    return n
end
do
    queued = {}
    feed("websocket_message", url, '{"type":"gateway_request","id":"h-9","request":"exec-lua","payload":{}}')
    local id = queued[#queued][3]
    eq(requests(id), 1)
    tick(2100) eq(requests(id), 2, "handed over again after 2 s")
    tick(2100) eq(requests(id), 3, "and again")
    eq(#sent, 0, "no answer yet")
    tick(2100)
    local lost = last()
    eq(lost.id, "h-9") eq(lost.ok, false) eq(lost.error.code, "lost")
    assert(lost.error.message:find("256 queued events", 1, true), lost.error.message)
    -- An accepted request whose answer was dropped: the server says "done" when asked.
    queued = {}
    feed("websocket_message", url, '{"type":"gateway_request","id":"h-10","request":"exec-lua","payload":{}}')
    id = queued[#queued][3]
    feed("trapdesk_alive", id, "accepted")
    tick(2100) eq(requests(id), 1, "an accepted request is not handed over again")
    tick(3000)
    local probe
    for _, ev in ipairs(queued) do if ev[1] == "trapdesk_probe" then probe = ev end end
    assert(probe, "asked whether it still runs") eq(probe[3], id)
    feed("trapdesk_alive", id, "running")
    eq(#sent, 0, "still running: no answer")
    feed("trapdesk_alive", id, "done")
    lost = last()
    eq(lost.id, "h-10") eq(lost.error.code, "lost")
    assert(lost.error.message:find("answer was dropped", 1, true), lost.error.message)
end
-- A label set on the computer goes to the host within a tick.
do
    env.os.getComputerLabel = function() return "miner" end
    tick(1000)
    local m = last() eq(m.type, "label") eq(m.label, "miner")
    tick(1000) eq(#sent, 0, "told once")
    -- The tick timer's event dropped from a full queue: the next event, 1 s after it was due,
    -- runs the tick and starts the timer again.
    env.os.getComputerLabel = function() return "digger" end
    local before = timers
    nowMs = nowMs + 2500
    feed("websocket_message", url, '{"type":"ping","t":5}')
    local m2 = last() eq(m2.type, "label", "the overdue tick ran first") eq(m2.label, "digger")
    eq(last().type, "pong")
    assert(timers > before and timerAfter[timers] == 1, "the tick timer started again")
    env.os.getComputerLabel = function() end
end
-- Detached runs outlive a dropped link: not cancelled, their output kept (bounded) and their
-- answers held, named in the next hello, sent after its welcome; a cancel on the new link
-- finds them by their wire id.
do
    local function start(id, extra)
        queued = {}
        feed("websocket_message", url, '{"type":"gateway_request","id":"' .. id .. '","request":"exec-lua","payload":{}' .. extra .. '}')
        local local_ = queued[#queued][3]
        feed("trapdesk_alive", local_, "accepted")
        return local_
    end
    local done = start("h-30", ',"detach":{"by":"bot"}')
    local going = start("h-32", ',"detach":{"by":"bot"}')
    local ordinary = start("h-31", "")
    -- Output still waiting for the flush when the link drops counts too.
    feed("trapdesk_output", going, "out", string.rep("b", 40000))
    sent, queued = {}, {}
    feed("websocket_closed", url, "gone", 1006)
    local retry = timers
    local cancelled = {}
    for _, ev in ipairs(queued) do if ev[1] == "trapdesk_cancel" then cancelled[ev[2]] = true end end
    assert(cancelled[ordinary], "an ordinary request ends with its link")
    assert(not cancelled[done] and not cancelled[going], "detached runs go on")
    -- Unlinked: one coalesced piece larger than what is kept, then a line, then the answer.
    feed("trapdesk_output", done, "out", string.rep("a", 39999) .. "\n")
    feed("trapdesk_output", done, "out", "tail\n")
    feed("trapdesk_respond", done, true, json.encode({ ok = true, n = 0 }))
    eq(#sent, 0, "nothing is sent while unlinked")
    feed("timer", retry)
    local url2 = "ws://127.0.0.1:4444/gateway?c=2"
    eq(opened, url2)
    feed("websocket_success", url2, handle)
    local hello2 = last()
    eq(hello2.type, "hello")
    local named = {}
    for _, r in ipairs(hello2.detached) do named[r.id] = r end
    eq(named["h-30"].status, "finished") eq(named["h-30"].by, "bot") eq(named["h-30"].request, "exec-lua")
    eq(named["h-30"].dropped_bytes, 40005 - 32768, "the oldest bytes past 32 KiB are dropped and counted")
    eq(named["h-32"].status, "running") eq(named["h-32"].dropped_bytes, 40000 - 32768)
    eq(named["h-31"], nil, "an ordinary request is not named")
    feed("websocket_message", url2, '{"type":"welcome","protocol":1,"trapos_id":"7:","heartbeat_ms":15000,"max_message":1048576}')
    local text, other, answer, rounds = {}, {}, nil, 0
    while not answer do
        while #sent > 0 do
            local m = last()
            if m.type == "output" and m.id == "h-30" then text[#text + 1] = m.text
            elseif m.type == "output" then eq(m.id, "h-32") other[#other + 1] = m.text
            elseif m.type == "computer_response" then eq(m.id, "h-30") answer = m end
        end
        -- Output goes in slices (apis/pace.lua): the pause waits for the event it queued.
        if not answer then
            local ev = queued[#queued]
            queued = {}
            if ev then feed(table.unpack(ev, 1, ev.n)) else feed("timer", timers) end
        end
        rounds = rounds + 1
        assert(rounds < 100, "the held answer never came")
    end
    text = table.concat(text)
    eq(#text, 32768, "what was kept goes after the welcome")
    eq(#table.concat(other), 32768, "the newest of what waited at the drop")
    assert(text:sub(-5) == "tail\n", "the newest output is kept")
    assert(answer and answer.ok and answer.payload.ok, "the held answer follows its output")
    queued = {}
    feed("websocket_message", url2, '{"type":"cancel","id":"h-32"}')
    eq(queued[#queued][1], "trapdesk_cancel") eq(queued[#queued][2], going, "found by its wire id")
    -- The close below is for this link now.
    url = url2
end
-- Close: reconnect scheduled with a new URL.
queued = {}
feed("websocket_closed", url, "bye", 1006)
-- Under a rule with max_websocket_message = 16384: the probe halves from 131072 until a
-- frame goes, the host is told, the limit is kept, and large answers go in fragments under it.
do
    ruleLimit = 16384
    env.os.getComputerLabel = function() return "miner" end
    sent, queued = {}, {}
    local co2 = coroutine.create(assert(loadfile(ROOT .. "servers/sandbox.lua", "t", env)))
    local function feed2(...) local ok, e = coroutine.resume(co2, ...) assert(ok, tostring(e)) end
    feed2()
    url = "ws://127.0.0.1:4444/gateway?c=1"
    feed2("websocket_success", url, handle)
    eq(last().type, "hello")
    feed2("websocket_message", url, '{"type":"welcome","protocol":1,"trapos_id":"7:miner","heartbeat_ms":15000,"max_message":1048576}')
    local probe = table.remove(sent, 1)
    eq(#probe, 16384, "the largest probe that went")
    eq(json.decode(probe).max_message, 16384)
    eq(saved["trapdesk.max_message"], 16384, "kept for the next boots")
    eq(last().type, "serve")
    feed2("trapdesk_serve", "owner2", { "exec-lua" })
    sent, queued = {}, {}
    feed2("websocket_message", url, '{"type":"gateway_request","id":"h-20","request":"exec-lua","payload":{}}')
    local rq
    for _, ev in ipairs(queued) do if ev[1] == "trapdesk_request" then rq = ev end end
    feed2("trapdesk_respond", rq[3], true, json.encode({ big = string.rep("q", 100000) }))
    local n = 0
    while #sent > 0 do
        local raw = table.remove(sent, 1)
        assert(#raw <= 16384, "every frame within the rule: " .. #raw)
        n = n + 1
    end
    assert(n > 6, "the answer went in fragments: " .. n)
end
print("daemon_spec: ok")
