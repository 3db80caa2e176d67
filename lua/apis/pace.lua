--- Long work in slices, and a meter of how long the client holds the computer.
--
-- CC: Tweaked stops a computer whose code runs about 7 s without yielding ("Too long without
-- yielding"), and while the client computes nothing else on the computer runs. So every long
-- loop of the client (base64, JSON both ways, fragments, output) calls a *pause* function
-- every few kilobytes; once @{SLICE_MS} have passed since the last yield, the pause queues an
-- event of its own (`trapdesk_slice` with a token unique to the pause) and waits for it, so the
-- computer pulls every event queued meanwhile. CC drops events beyond 256 queued ones, so a
-- timer backs the token up and the token is queued again when it is late (@{RETRY_S}). It
-- waits for its own token only:
--
-- - inside a coroutine run by libsandbox's scheduler (a request's handler), it yields with no
--   filter (its backing timer must reach it) and skips what is not its own; the scheduler sees
--   every event, so nothing is lost;
-- - in a program's own loop (the daemon), @{new}'s `keep` gets every other event pulled while
--   waiting, and the program handles them afterwards in order;
-- - in CC every coroutine sees every event, so no event of the player's programs is taken.
--
-- The meter (test and benchmark only): when the global table `trapdesk_measure` exists (an
-- `exec-lua` creates it), each metered program records under its name the longest time it held
-- the computer between two of its yields (`max_ms`), how many pauses yielded (`slices`) and how
-- many events it handled (`events`). Without that table it costs one global lookup per yield.
--
-- @module pace

local pace = {}

--- Milliseconds of work between two yields.
pace.SLICE_MS = 25
--- The event a pause queues and waits for.
pace.EVENT = "trapdesk_slice"
--- Seconds after which a pause that has not seen its token asks again (the token was dropped
-- from a full event queue).
pace.RETRY_S = 0.5

local counter = 0

-- `sys` is the `os` table to use: the caller's own (a program may run in an environment with
-- its own `os`, as the specs do); by default the global one.
local function now(sys)
    sys = sys or os
    if sys.epoch then return sys.epoch("utc") end
    return sys.clock() * 1000
end
pace.now = now

local function record(name)
    local m = rawget(_G, "trapdesk_measure")
    if type(m) ~= "table" then return nil end
    local r = m[name]
    if type(r) ~= "table" then
        r = { max_ms = 0, slices = 0, events = 0 }
        m[name] = r
    end
    return r
end

--- A meter for one program: `meter.pull(...)` is `os.pullEventRaw(...)` that records the time
-- the program held the computer since its previous yield.
-- @tparam string name The program's name in `trapdesk_measure`.
-- @tparam[opt] table sys The `os` table (default: the global one).
-- @treturn table The meter.
function pace.meter(name, sys)
    sys = sys or os
    local meter = { name = name, sys = sys }
    local back -- when the last yield returned
    function meter.pull(...)
        local r = record(name)
        if r and back then
            local held = now(sys) - back
            if held > r.max_ms then r.max_ms = held end
        end
        local ev = table.pack(sys.pullEventRaw(...))
        back = now(sys)
        if r then r.events = r.events + 1 end
        return table.unpack(ev, 1, ev.n)
    end
    return meter
end

--- A pause function: call it often; it yields once @{SLICE_MS} passed since the last yield.
-- @tparam[opt] table opts `keep(event)` (the program's own loop: it gets every other event
-- pulled while waiting, packed; without it the pause yields from the current coroutine with
-- the filter @{EVENT}), `meter` (from @{meter}: its pull is used and the slices counted there),
-- `name` (where slices are counted when there is no meter), `sys` (the `os` table; default:
-- the meter's, else the global one).
-- @treturn function The pause.
-- Queue `event` with `token` and wait until it comes back. CC keeps at most 256 queued events
-- and drops the rest (ComputerExecutor.java, `QUEUE_LIMIT`): the token may never arrive. A
-- timer backs it up; a timer's event is queued only when it fires, and may be dropped too, so
-- once it is due every event pulled re-queues the token and starts a new timer. Right after a
-- pull the queue has room, so a re-queued token is kept. `keep` (and `pull`): the program's
-- own loop, which gets every other event; without it, yield from the current coroutine with
-- no filter (a filter would hide the backing timer) and skip what is not ours.
local function await(sys, event, token, keep, pull)
    local timer, due
    local timers = {}
    local function ask()
        sys.queueEvent(event, token)
        if sys.startTimer then
            timer = sys.startTimer(pace.RETRY_S)
            timers[timer] = true
            due = now(sys) + pace.RETRY_S * 1000
        end
    end
    ask()
    local function ours(ev)
        if ev[1] == event and ev[2] == token then return true end
        if ev[1] == "timer" and timers[ev[2]] then
            -- Our timer came before our token: the token was dropped; ask again.
            ask()
            return "timer"
        end
        if due and now(sys) >= due then ask() end
        return false
    end
    if keep then
        pull = pull or sys.pullEventRaw
        while true do
            local ev = table.pack(pull())
            local mine = ours(ev)
            if mine == true then break end
            if not mine then keep(ev) end
        end
    else
        while true do
            local ev = table.pack(coroutine.yield())
            if ours(ev) == true then break end
        end
    end
    if sys.cancelTimer then for t in pairs(timers) do sys.cancelTimer(t) end end
end

function pace.new(opts)
    opts = opts or {}
    local keep, meter = opts.keep, opts.meter
    local name = opts.name or (meter and meter.name)
    local sys = opts.sys or (meter and meter.sys) or os
    local last = now(sys)
    return function()
        if now(sys) - last < pace.SLICE_MS then return end
        counter = counter + 1
        await(sys, pace.EVENT, counter .. "-" .. tostring(last), keep, meter and meter.pull)
        local r = name and record(name)
        if r then r.slices = r.slices + 1 end
        last = now(sys)
    end
end

--- Queue `event` with a token of its own and wait, inside a coroutine, until it comes back:
-- every event queued before it has then been handled by every program. The token is backed
-- by a timer and queued again when late, as a pause's is, so a full queue never makes this
-- wait for good.
-- @tparam string event The event's name.
-- @tparam[opt] table sys The `os` table (default: the global one).
function pace.roundTrip(event, sys)
    counter = counter + 1
    await(sys or os, event, "r" .. counter)
end

return pace
