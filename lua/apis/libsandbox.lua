--- The in-OS library for serving and making trapdesk requests.
--
-- Load it with `dofile` (it returns a table and sets no global):
--
--     local sandbox = dofile("/trapdesk/apis/libsandbox.lua")
--
-- It owns no socket. The daemon (`servers/sandbox.lua`) holds the one
-- WebSocket and talks to programs through `os.queueEvent` events (see
-- @{EVENTS}). Payloads travel inside events as JSON text rather than tables,
-- because CC copies event tables through Java: metatables (the JSON null and
-- empty-array markers) would be lost.
--
-- @module libsandbox

local sandbox = {}

--- The events between this library and the daemon. `id` is the daemon's
-- local request id (opaque to programs).
--
-- Daemon to programs:
--  - `trapdesk_daemon_up(link)`: the daemon started (no `link`) or linked (`link`, the link's
--    number, as request ids begin); servers announce again.
--  - `trapdesk_request(owner, id, type, payload_json, timeout_ms, blob)`: a host request for
--    `owner`; `payload_json` is the JSON text, a string or a list of strings (pieces of a message
--    that came in fragments, read in order as one text); `blob`, when the request's content came
--    in binary frames (a write-file's), the list of its raw pieces, in order.
--  - `trapdesk_cancel(id)`: the host cancelled request `id` (or the link dropped).
--  - `trapdesk_probe(owner, id)`: does `owner` still run request `id`? (see `trapdesk_alive`)
--  - `trapdesk_host_response(rid, ok, json)`: answer to @{request}; json is the payload or the error
--    (JSON text: a string or a list of strings, as above).
--
-- Programs to the daemon:
--  - `trapdesk_serve(owner, types)`: `owner` now serves exactly `types` (a list; empty = stopped).
--  - `trapdesk_respond(id, ok, json, blob)`: the answer; json is the payload (ok) or
--    `{code, message, ...}`; `blob`, a string of raw bytes the daemon sends in binary frames
--    before the answer (a read-file page asked for as binary).
--  - `trapdesk_alive(id, state)`: how request `id` stands: "accepted" (the server got its
--    `trapdesk_request` and the request is still running; sent for each, duplicates too; a
--    request answered in its first run gets its answer instead), "running", "done" (answered: the
--    answer went before this event) or "unknown". CC drops events beyond 256 queued ones, so
--    the daemon hands a request over again until it is accepted and asks about it until
--    answered; a request whose events were dropped fails as `lost` within seconds.
--  - `trapdesk_output(id, stream, text)`: live output of request `id` (`stream` is "out" or "err").
--  - `trapdesk_host_request(rid, type, payload_json, timeout_ms)`: a request to the host.
--  - `trapdesk_input(host_id, event, ...)`: `event, ...` for the job of host request `host_id`
--    alone (servers/screen.lua queues it for `input` aimed at a request).
--
-- Either way:
--  - `trapdesk_stop(kind, instance)`: every `kind` program ("daemon", or a
--    server's name) other than `instance` stops. A new instance sends it on start, so
--    re-running the installer replaces the running client in place.
sandbox.EVENTS = {
    daemon_up = "trapdesk_daemon_up", request = "trapdesk_request", cancel = "trapdesk_cancel",
    probe = "trapdesk_probe", alive = "trapdesk_alive",
    host_response = "trapdesk_host_response", serve = "trapdesk_serve", respond = "trapdesk_respond",
    output = "trapdesk_output", host_request = "trapdesk_host_request", stop = "trapdesk_stop",
    input = "trapdesk_input",
}
local E = sandbox.EVENTS

-- Its siblings are found from its own chunk name, as every module of the client finds them
-- (apis/root.lua states the rule), falling back to the installed location.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"
local json = dofile(here .. "json.lua")
local expect = dofile(here .. "expect.lua").expect
sandbox.json = json
local pace = dofile(here .. "pace.lua")
sandbox.pace = pace

local counter = 0
local function uniqueId(prefix)
    counter = counter + 1
    local id = os.getComputerID and os.getComputerID() or 0
    return ("%s%d-%d-%d-%d"):format(prefix, id, os.epoch and os.epoch("utc") or 0, counter, math.random(1, 0x7fffffff))
end

-- Under the startup wrapper (startup.lua) the client's programs share one table,
-- `_G.trapdeskClient`: the daemon puts its entry points there (`daemon.respond`,
-- `daemon.output`) and each server its own (`servers[owner]`), so a request and its answer go
-- between them as plain calls, with no `trapdesk_request`/`trapdesk_respond` event that every
-- coroutine on the computer would be resumed for. Without the wrapper (or before
-- the daemon is up) the events below carry them as before.
local function bus()
    local c = rawget(_G, "trapdeskClient")
    return type(c) == "table" and c or nil
end
sandbox.bus = bus

--- Hand `kind` ("respond" or "output") to the daemon: a call when it is reachable, else its event.
local function toDaemon(kind, ...)
    local b = bus()
    local d = b and b.daemon
    if type(d) == "table" and d[kind] then return d[kind](...) end
    os.queueEvent(E[kind], ...)
end

local function encodeOr(value, fallback)
    local ok, text = pcall(json.encode, value)
    if ok then return text end
    return json.encode(fallback(text))
end

--- Answer a request.
-- @tparam string id The request id (from the request table).
-- @tparam boolean ok `true` for a payload, `false` for a dispatch failure.
-- @tparam table payload The payload, or the error `{code, message, output?}`.
function sandbox.respond(id, ok, payload)
    if ok then
        toDaemon("respond", id, true, encodeOr(payload == nil and {} or payload, function(err)
            return { ok = false, error = "response could not be encoded: " .. err }
        end))
    else
        if type(payload) ~= "table" then payload = { code = "internal", message = tostring(payload) } end
        toDaemon("respond", id, false, encodeOr(payload, function(err)
            return { code = "internal", message = "error could not be encoded: " .. err }
        end))
    end
end

--- Send live output for a request.
-- @tparam string id The request id.
-- @tparam string stream "out" or "err".
-- @tparam string text The text.
function sandbox.output(id, stream, text)
    toDaemon("output", id, stream, text)
end

--- Ask the host something (computer_request), waiting for the answer.
-- Events other than the answer are discarded while waiting, as with any
-- blocking CC call.
-- @tparam string type The request type.
-- @tparam[opt] table payload The payload.
-- @tparam[opt] number timeout Seconds (default 30).
-- @treturn boolean ok
-- @treturn table The payload, or the error `{code, message}`.
function sandbox.request(type_, payload, timeout)
    expect(1, type_, "string")
    timeout = timeout or 30
    local rid = uniqueId("r")
    os.queueEvent(E.host_request, rid, type_, json.encode(payload or {}), timeout * 1000)
    local timer = os.startTimer(timeout)
    -- The timer's event may be dropped from a full queue (CC keeps 256): past the deadline,
    -- any event ends the wait as the timer would have.
    local deadline = os.epoch("utc") + timeout * 1000
    while true do
        local ev, a, b, c = os.pullEvent()
        if ev == E.host_response and a == rid then
            os.cancelTimer(timer)
            local ok, value = pcall(json.decode, c)
            if not ok then return false, { code = "internal", message = value } end
            return b == true, value
        elseif ev == "timer" and a == timer or os.epoch("utc") > deadline + 1000 then
            os.cancelTimer(timer)
            return false, { code = "timeout", message = "no answer within " .. timeout .. " s" }
        end
    end
end

--- Serve request types, running each request in its own coroutine.
--
-- Blocks until another instance with the same `opts.name` starts (or the
-- daemon asks it to stop). The scheduler passes every event (except
-- `terminate`) to each running handler whose yield filter matches it, so
-- handlers may `sleep`, pull events and use `parallel`; several run at once.
--
-- `handler(req)` gets `{id, type, payload, timeout_ms, blob, output = function(stream, text)}`
-- (`blob`: the raw pieces of content that came in binary frames, or nil) and returns
-- `true, payload[, blob]` or `false, {code, message}`; a returned `blob` (a string, or a list
-- of strings: parts 0, 1, …) goes to the host as raw bytes before the answer. A handler that
-- raises is answered `internal`. On `cancel` the handler is abandoned at its
-- next yield and answered `cancelled`, with the fields `opts.onCancel(req)`
-- returns merged into the error.
-- @tparam string|table types One type or a list.
-- @tparam function handler The handler.
-- @tparam[opt] table opts `name` (one instance per name), `onCancel`, `chunks` (a set of
-- payload member names whose string values the handler gets as `json.chunks` lists: a large
-- text in the pieces it came in, never joined; see `json.decode`).
function sandbox.serve(types, handler, opts)
    expect(1, types, "string", "table")
    expect(2, handler, "function")
    if type(types) == "string" then types = { types } end
    opts = opts or {}
    local owner = uniqueId("s")
    local name = opts.name or owner
    local jobs, order = {}, {} -- id -> job; order keeps start order for fairness
    -- Ids answered lately (a ring of DONE_KEPT): a request handed over again, or asked about,
    -- after its answer went is told "done", never run twice.
    local DONE_KEPT = 64
    local done, doneRing, doneAt = {}, {}, 0
    local serving = {}
    for _, t in ipairs(types) do serving[t] = true end

    local function announce() os.queueEvent(E.serve, owner, types) end

    local function flush(job)
        local buf = job.out
        if #buf == 0 then return end
        job.out = {}
        -- One event per run of one stream; a run of one text goes as it is (a 1 MB print is
        -- not copied again here).
        local function send(stream, parts)
            sandbox.output(job.req.id, stream, #parts == 1 and parts[1] or table.concat(parts))
        end
        local stream, parts = buf[1][1], {}
        for _, piece in ipairs(buf) do
            if piece[1] ~= stream then
                send(stream, parts)
                stream, parts = piece[1], {}
            end
            parts[#parts + 1] = piece[2]
        end
        send(stream, parts)
    end

    local function remove(id)
        if jobs[id] then
            doneAt = doneAt % DONE_KEPT + 1
            if doneRing[doneAt] then done[doneRing[doneAt]] = nil end
            doneRing[doneAt], done[id] = id, true
        end
        jobs[id] = nil
        for i = #order, 1, -1 do if order[i] == id then table.remove(order, i) end end
    end

    -- Each job draws on its own terminal (a handler may redirect it, as the exec server does to
    -- capture a chunk's drawing): it is made current while the job runs and the one before
    -- is restored after, as multishell does for each tab.
    local hasTerm = type(term) == "table" and term.redirect and term.current
    local function step(job, ...)
        local before = hasTerm and term.current()
        if hasTerm and job.term then term.redirect(job.term) end
        local res = table.pack(coroutine.resume(job.co, ...))
        if hasTerm then
            job.term = term.current()
            if job.term ~= before then term.redirect(before) end
        end
        flush(job)
        if coroutine.status(job.co) == "dead" then
            remove(job.req.id)
            if not res[1] then
                sandbox.respond(job.req.id, false, { code = "internal", message = tostring(res[2]) })
            else
                local answer = res[2]
                local parts = answer.parts
                -- One piece goes as a string; more as the list (the daemon fragments from it).
                toDaemon("respond", job.req.id, answer.ok, #parts == 1 and parts[1] or parts, answer.blob)
            end
        else
            job.filter = res[2]
        end
    end

    -- The job's coroutine: decodes the payload, runs the handler, encodes the answer, all in
    -- slices (apis/pace.lua), so a large payload never holds the computer for long; the answer
    -- comes back as a list of JSON pieces that goes to the daemon as it is.
    local function body(payloadJson, req)
        local pause = pace.new({ name = name })
        local ok, payload = pcall(json.decode, payloadJson or "{}", pause, { chunks = opts.chunks })
        payloadJson = nil
        if not ok then
            return { ok = false, parts = json.encodeParts({ code = "bad_request",
                message = "payload is not JSON: " .. tostring(payload) }) }
        end
        req.payload = payload
        local res = table.pack(handler(req))
        req.blob = nil -- written by now; let the pieces go
        local value = res[2]
        if res[1] then
            if value == nil then value = {} end
            local eok, parts = pcall(json.encodeParts, value, pause)
            local blob = res[3]
            if type(blob) ~= "string" and type(blob) ~= "table" then blob = nil end
            if eok then return { ok = true, parts = parts, blob = blob } end
            return { ok = true, parts = json.encodeParts({ ok = false, error = "response could not be encoded: " .. parts }) }
        end
        if type(value) ~= "table" then value = { code = "internal", message = tostring(value) } end
        local eok, parts = pcall(json.encodeParts, value, pause)
        if eok then return { ok = false, parts = parts } end
        return { ok = false, parts = json.encodeParts({ code = "internal", message = "error could not be encoded: " .. parts }) }
    end

    local function start(id, type_, payloadJson, timeout_ms, blob)
        local job = { out = {} }
        job.req = {
            id = id, type = type_, timeout_ms = timeout_ms, blob = type(blob) == "table" and blob or nil,
            output = function(stream, text) job.out[#job.out + 1] = { stream, text } end,
        }
        job.co = coroutine.create(body)
        jobs[id] = job
        order[#order + 1] = id
        step(job, payloadJson, job.req)
    end

    -- The job a host request id names. Jobs are known by the daemon's local id, the link's
    -- number, "/" and the host's id (servers/sandbox.lua), so the host's id is the part after
    -- the last "/".
    local function inputTarget(hostId)
        if type(hostId) ~= "string" then return nil end
        for _, id in ipairs(order) do
            if id == hostId or id:sub(-#hostId - 1) == "/" .. hostId then return id end
        end
    end

    local function cancel(id)
        local job = jobs[id]
        if not job then return end
        remove(id)
        flush(job)
        local err = { code = "cancelled", message = "cancelled by the host" }
        if opts.onCancel then
            local ok, extra = pcall(opts.onCancel, job.req)
            if ok and type(extra) == "table" then for k, v in pairs(extra) do err[k] = v end end
        end
        sandbox.respond(id, false, err)
    end

    -- The daemon's direct hand-over (see `bus`): the job starts at once, in the daemon's turn
    -- for the event that brought the request (`heard`: that frame's text). It must not be
    -- given that same event when this loop gets it next, as a job started by a
    -- `trapdesk_request` never sees that event (the snapshot below).
    local shared = bus()
    if shared then
        shared.servers = shared.servers or {}
        shared.servers[owner] = function(id, type_, payloadJson, timeout_ms, blob, heard)
            if done[id] or jobs[id] then return end
            start(id, type_, payloadJson, timeout_ms, blob)
            if jobs[id] then jobs[id].skip = heard end
        end
    end

    os.queueEvent(E.stop, name, owner)
    announce()
    local meter = pace.meter(name)
    local ok, err = pcall(function()
        while true do
            local ev = table.pack(meter.pull())
            local kind = ev[1]
            -- Snapshot first: a handler started by this very event must not see it.
            local ids = { table.unpack(order) }
            if kind == E.request and ev[2] == owner then
                local id = ev[3]
                -- Accepted only once the job has started: its first run (a chunk, up to its
                -- first yield) then finds the event queue as the player's own code would, with
                -- no event of ours in it. An accept dropped meanwhile is made good by the
                -- daemon's next hand-over.
                if done[id] then
                    os.queueEvent(E.alive, id, "accepted")
                    os.queueEvent(E.alive, id, "done")
                elseif not jobs[id] then
                    start(id, ev[4], ev[5], ev[6], ev[7])
                    -- A request answered in its first run (`return 1`) needs no "accepted": its
                    -- answer, queued already, ends it at the daemon, and one dropped from a full
                    -- queue is found by the hand-over that follows ("done" above). One event
                    -- fewer for every short request, and for every program that wakes on it.
                    if jobs[id] then os.queueEvent(E.alive, id, "accepted") end
                else
                    os.queueEvent(E.alive, id, "accepted")
                end
            elseif kind == E.probe and ev[2] == owner then
                local id = ev[3]
                os.queueEvent(E.alive, id, jobs[id] and "running" or done[id] and "done" or "unknown")
            elseif kind == E.cancel then
                cancel(ev[2])
            elseif kind == E.daemon_up then
                announce()
            elseif kind == E.stop and ev[2] == name and ev[3] ~= owner then
                return
            elseif kind == E.input then
                -- Input aimed at one request (servers/screen.lua): the event inside goes to
                -- that job alone, as if typed (`terminate` too: it stops the chunk).
                local job = jobs[inputTarget(ev[2])]
                if job and (job.filter == nil or job.filter == ev[3] or ev[3] == "terminate") then
                    step(job, table.unpack(ev, 3, ev.n))
                end
            end
            -- The wrapper of input for one request is nobody else's event.
            if kind ~= "terminate" and kind ~= E.input then
                for _, id in ipairs(ids) do
                    local job = jobs[id] -- nil when it finished or was cancelled meanwhile
                    local heard = job and job.skip
                    if heard ~= nil then job.skip = nil end
                    if job and (job.filter == nil or job.filter == kind)
                        and not (heard ~= nil and kind == "websocket_message" and ev[3] == heard) then
                        step(job, table.unpack(ev, 1, ev.n))
                    end
                end
            end
        end
    end)
    if shared and shared.servers then shared.servers[owner] = nil end
    -- Whatever ended the loop, tell the daemon, and fail what was running.
    for _, id in ipairs({ table.unpack(order) }) do
        remove(id)
        sandbox.respond(id, false, { code = "internal", message = "server stopped" })
    end
    os.queueEvent(E.serve, owner, {})
    if not ok then error(err, 0) end
end

return sandbox
