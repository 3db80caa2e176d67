-- pace_spec: a pause whose token CC dropped (its queue holds 256 events) asks again and never
-- waits for good; os stubbed, no CC needed.
local pace = dofile(ROOT .. "apis/pace.lua")
local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end

local now, timers, queued, drop = 0, 0, {}, false
local sys = {
    epoch = function() return now end,
    queueEvent = function(...) if not drop then queued[#queued + 1] = table.pack(...) end end,
    startTimer = function() timers = timers + 1 return timers end,
    cancelTimer = function() end,
    pullEventRaw = function() return coroutine.yield() end,
}

-- 1. The program's own loop (`keep`): the token is dropped; the backing timer asks again.
local kept = {}
local pause = pace.new({ sys = sys, keep = function(ev) kept[#kept + 1] = ev[1] end })
local co = coroutine.create(function() pause() return "done" end)
now = 100
drop = true
assert(coroutine.resume(co))
drop = false
eq(#queued, 0, "the token was dropped")
assert(coroutine.resume(co, "key", 30))
eq(#queued, 0, "before the timer, nothing asked again")
local ok, res = coroutine.resume(co, "timer", timers)
assert(ok, res)
eq(#queued, 1, "the timer asks again")
local token = queued[1]
eq(token[1], pace.EVENT)
ok, res = coroutine.resume(co, table.unpack(token, 1, token.n))
eq(res, "done", "the token came: the pause returns")
eq(kept[1], "key", "other events are kept, the pause's own are not")
eq(#kept, 1)

-- 2. The timer dropped too: once it is due, any event pulled asks again.
queued, kept = {}, {}
co = coroutine.create(function() pause() return "done" end)
now = 200
drop = true
assert(coroutine.resume(co))
drop = false
now = 200 + pace.RETRY_S * 1000
assert(coroutine.resume(co, "websocket_message", "x"))
eq(#queued, 1, "due: asked again on the next event")
token = queued[1]
ok, res = coroutine.resume(co, table.unpack(token, 1, token.n))
eq(res, "done")

-- 3. Inside libsandbox's scheduler (no `keep`): no filter, so the timer reaches it.
queued = {}
local p2 = pace.new({ sys = sys })
co = coroutine.create(function() p2() return "done" end)
now = now + 1000
drop = true
local _, filter = coroutine.resume(co)
drop = false
eq(filter, nil, "yields with no filter")
coroutine.resume(co, "timer", timers)
token = queued[1]
ok, res = coroutine.resume(co, table.unpack(token, 1, token.n))
eq(res, "done")
-- 4. A round trip (screen.lua's input steps) whose marker was dropped asks again.
queued = {}
co = coroutine.create(function() pace.roundTrip("trapdesk_input_step", sys) return "done" end)
drop = true
assert(coroutine.resume(co))
drop = false
eq(#queued, 0)
coroutine.resume(co, "timer", timers)
eq(#queued, 1, "asked again")
eq(queued[1][1], "trapdesk_input_step")
ok, res = coroutine.resume(co, table.unpack(queued[1], 1, queued[1].n))
eq(res, "done")
print("pace_spec: ok")
