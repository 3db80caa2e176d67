--- The trapdesk daemon: owns the one WebSocket to the host (docs/protocol.md).
--
-- It links with `hello`/`welcome`, answers `ping` frames and `ping`
-- requests itself, routes `gateway_request`s to the programs serving them
-- (through the events of apis/libsandbox.lua), coalesces their output,
-- forwards `cancel`, fragments and reassembles large messages, and
-- reconnects after any drop with backoff (1 s doubling to 4 s, +-25 %
-- jitter), forever. Close 4001 (wrong secret) prints the host's reason and
-- retries every 60 s, re-reading the settings each time so that
-- `set sandbox.password ...` takes effect without a reboot. 4003 (protocol)
-- retries every 5 min; 4002 (replaced by another link with our id) waits 30 s.
--
-- Gated on the setting `sandbox.url`. Enrolment (docs/protocol.md): the hello
-- says `enrol = true` and carries the computer's own secret (`trapdesk.secret`)
-- when it has one, else the shared one (`sandbox.password`). A welcome that
-- carries a secret is stored in `trapdesk.secret` (settings.save) and only then
-- answered with `enrolled`. When the host refuses the own secret (it forgot the
-- binding), the next attempt, a second later, presents the shared one, which
-- enrols again if the host allows it.

local CLIENT = "trapdesk-lua/0.2.0"
-- CC's default max_websocket_message (AddressRule.WEBSOCKET_MESSAGE). The rule that allows the
-- host may set less, and Lua cannot read it: the daemon finds it by halving on "Message is too
-- large" (WebsocketHandle.send) and keeps what it found in the setting `trapdesk.max_message`.
local LIMIT = 131072
local LIMIT_FLOOR = 4096 -- below this no rule is usable; the daemon says so and keeps trying
local OUTPUT_PIECE = 4096 -- bytes of output per frame
local OUTPUT_BINARY_PIECE = 32768 -- bytes of output per binary frame (no escaping can grow it)
local OUTPUT_EVERY = 0.05 -- seconds between output flushes
local FRAME_BUDGET = 64 -- frames per flush, well under CC's 512 unsent messages per socket
-- CC keeps at most 256 queued events and drops the rest (ComputerExecutor.java, QUEUE_LIMIT):
-- a request handed to its server, or its answer, can be lost on the way. The server accepts
-- each request (`trapdesk_alive(id, "accepted")`); one not accepted is handed over again, then
-- failed; an accepted one is asked about (`trapdesk_probe`) until its answer comes.
local ACCEPT_S = 2       -- seconds before a request not accepted is handed over again
local ACCEPT_TRIES = 3   -- hand-overs before the request fails as lost
local PROBE_S = 5        -- seconds between asks whether an accepted request still runs
local PROBE_MISSES = 3   -- unanswered asks before the request fails as lost
-- A detached run (the request's `detach`) outlives a dropped link and a host restart: while
-- unlinked it keeps running, and the daemon keeps at most this many bytes of its output (the
-- newest), counting what it drops; the next hello names it (docs/protocol.md, "Detached runs").
local HELD_MAX = 32768

-- The client's root directory: the rule is apis/root.lua's, found beside servers/.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/servers/"
local root = dofile(here .. "../apis/root.lua")(shell)
local json = dofile(root .. "apis/json.lua")
local pace = dofile(root .. "apis/pace.lua")

-- Deadlines and uptimes in real seconds: os.clock counts the computer's CPU time in server
-- ticks, which stretch when the server lags.
local function clock() return os.epoch("utc") / 1000 end
local bootAt = clock() - os.clock() -- when the computer started, as near as the daemon can tell

if not settings.get("sandbox.url") then
    print("trapdesk: sandbox.url is not set; not linking")
    return
end

local instance = ("d%d-%d"):format(os.epoch("utc"), math.random(1, 0x7fffffff))

-- Logging: rare, important lines go to the screen; everything to a small log file.
local logPath = root .. "daemon.log"
local function log(msg)
    local ok = pcall(function()
        if fs.exists(logPath) and fs.getSize(logPath) > 16384 then fs.delete(logPath) end
        local h = fs.open(logPath, "a")
        if h then h.writeLine(("[%d] %s"):format(os.epoch("utc"), msg)) h.close() end
    end)
    return ok
end
local function say(msg)
    log(msg)
    print("trapdesk: " .. msg)
end

-- State -----------------------------------------------------------------------

local ws, wsUrl          -- the socket and the exact URL it was opened with
local phase = "idle"     -- idle | connecting | hello | linked
local phaseSince = 0     -- clock() when the phase began
local conn = 0           -- connection counter (unique URLs and local ids)
local backoff = 1
local retryTimer, tickTimer, flushTimer
-- When each timer is due (clock()): a timer's event is dropped like any other from a full
-- queue, and the loop it drives would stop for good. Any event pulled once one is 1 s
-- overdue runs its work and starts it again (see `overdue`).
local due = {}
local function startTimer(name, s)
    due[name] = clock() + s
    return os.startTimer(s)
end
local heartbeat = 15     -- seconds, from welcome
local lastPing = 0
local hostMax = LIMIT
-- The largest frame CC lets this socket send and receive: the rule's max_websocket_message, as
-- found (see LIMIT). `linkLabel` is the label the host knows this computer by.
local ruleMax = tonumber(settings.get("trapdesk.max_message")) or LIMIT
local linkLabel
local owners, ownerOrder = {}, {} -- owner -> list of types
local inflight = {}      -- local id -> { wire = host id, owner = owner }
local hostRequests = {}  -- wire id we sent -> libsandbox rid
local hostCounter = 0
local fragments = {}     -- mid -> { parts, next }
local midCounter = 0
local outQueue = {}      -- in order: output { id, wire, stream, text, pos } and answers { respond, wire, ok, json }
local linkedOnce = false
local sentOwn = false     -- the current hello carried trapdesk.secret
local tryShared = false   -- the own secret was just refused: present the shared one next
-- A shared secret the installer was given while another one is set (`trapdesk.offered_secret`):
-- the next hello that does not carry the own secret presents it, and it replaces
-- `sandbox.password` only once the host accepts it, so a mistyped one never loses a secret that
-- worked. `sentOffered`: the current hello carried it. `offerSaid`: what became of it, told
-- with the next link state (see `tell`).
local OFFERED = "trapdesk.offered_secret"
local sentOffered = false
local offerSaid
local hostSays            -- the message of the host's last error frame (why it refused)
local screenQueue = {}   -- `screen` messages (JSON text) waiting behind answers and output
local SCREEN_BACKLOG = 4 -- more waiting than this: drop them and ask the screen server for a whole frame

local function setPhase(p) phase, phaseSince = p, clock() end

-- The table the client's programs share under the startup wrapper (apis/libsandbox.lua, `bus`):
-- requests go to their server, and answers and output come back, as plain calls.
local bus = type(rawget(_G, "trapdeskClient")) == "table" and rawget(_G, "trapdeskClient") or nil

--- The link's state for whoever waits on it: the `trapdesk_link` event (`what`, `detail`), and
-- `bus.link` (a new table for each state; `offer` says what became of an offered secret), which the
-- installer reads when it runs inside the player's shell, where `trapdesk_*` events are
-- withheld (lua/startup.lua).
local function tell(what, detail)
    if bus then bus.link = { what = what, detail = detail, offer = offerSaid } end
    offerSaid = nil
    os.queueEvent("trapdesk_link", what, detail)
end

--- Settles an offered secret (`OFFERED`): "stored" (it is `sandbox.password` now; the installer
-- that offered it rewrites the installer line kept in the player's startup programs) or
-- "refused" (dropped; the secret set before stays). Nothing offered: nothing.
local function settleOffer(outcome)
    local offered = settings.get(OFFERED)
    if type(offered) ~= "string" then return end
    settings.unset(OFFERED)
    if outcome == "stored" then settings.set("sandbox.password", offered) end
    pcall(settings.save)
    offerSaid = outcome
end
local heard     -- the text of the websocket_message being handled (a job started by it skips it)
local daemonCo  -- the daemon's own coroutine: sending (which may pause) happens only there
local flushAsked = false

-- Binary frames (docs/protocol.md, "Binary frames"): file contents and output go as raw bytes,
-- one `ws.send(data, true)` each, with no base64 or JSON escaping on this computer. A runtime
-- can when a binary `websocket_message` brings the frame's bytes as they are and `ws.send`
-- takes its binary flag: CC: Tweaked from 1.109.0 ("websocket messages now use raw bytes",
-- rom/help/changelog.md; WebsocketHandler.channelRead0, WebsocketHandle.send), CraftOS-PC and
-- the trapdesk emulator. The setting `trapdesk.binary` set to false keeps the base64 path.
local function runtimeBinary()
    if settings.get("trapdesk.binary") == false then return false end
    local host = type(_HOST) == "string" and _HOST or ""
    if host:find("CraftOS-PC", 1, true) or host:find("trapdesk emulator", 1, true) then return true end
    local major, minor = host:match("ComputerCraft (%d+)%.(%d+)")
    major, minor = tonumber(major), tonumber(minor)
    return major ~= nil and (major > 1 or (major == 1 and minor >= 109))
end
local linkBinary = false -- this link's hello said `binary`
local hostBinary = false -- and the welcome said the host takes binary frames too
local blobs = {}         -- wire id -> { parts, next, size }: contents of requests yet to come

-- Long work (decoding a reassembled request, fragmenting a large answer) runs in slices
-- (apis/pace.lua): the pause pulls events while it waits for its own, and every other event
-- it pulls waits in `backlog`, handled next, in order, by the main loop.
local meter = pace.meter("daemon", os)
local backlog = {}
local pause = pace.new({ meter = meter, keep = function(ev) backlog[#backlog + 1] = ev end })
local function nextEvent()
    if backlog[1] then
        local ev = table.remove(backlog, 1)
        return table.unpack(ev, 1, ev.n)
    end
    return meter.pull()
end

-- Sending ---------------------------------------------------------------------

local drop -- forward

local function tooLarge(err) return tostring(err):find("Message is too large", 1, true) ~= nil end

--- Send one frame. A frame over the rule's limit is not sent and does not end the link: the
-- result is then false, "too_large".
local function sendRaw(text, binary)
    if not ws then return false end
    local ok, err = pcall(ws.send, text, binary == true)
    if not ok then
        if tooLarge(err) then return false, "too_large" end
        log("send failed: " .. tostring(err))
        drop(nil, "send failed: " .. tostring(err))
        return false
    end
    return true
end

--- The rule's limit is below `size`: halve it, keep it for the next boots, and tell the host,
-- which from then on sends no frame above it either.
local function lowerLimit(size)
    local before = ruleMax
    while ruleMax >= size and ruleMax > LIMIT_FLOOR do ruleMax = math.floor(ruleMax / 2) end
    if ruleMax == before then return false end
    log(("frames of %d bytes are too large for CC here: the limit is now %d"):format(size, ruleMax))
    settings.set("trapdesk.max_message", ruleMax)
    pcall(settings.save)
    if phase == "linked" then sendRaw('{"max_message":' .. ruleMax .. ',"type":"limit"}') end
    return true
end

--- Send one message's JSON text, given as a string or a list of pieces to be joined in
-- order, fragmenting it to the host's limit. Fragments are cut from the pieces as they are:
-- a large answer is never joined into one string here.
local sendText
sendText = function(text)
    local limit = math.min(hostMax, ruleMax)
    local pieces = type(text) == "table" and text or { text }
    local total = 0
    for i = 1, #pieces do total = total + #pieces[i] end
    if total <= limit then
        local ok, why = sendRaw(#pieces == 1 and pieces[1] or table.concat(pieces))
        -- Over the rule's limit: lower it and send again, in fragments (nothing was sent).
        if why == "too_large" and lowerLimit(total) then return sendText(text) end
        if why == "too_large" then log("a frame of " .. total .. " bytes is too large even at the floor") end
        return ok
    end
    midCounter = midCounter + 1
    local mid = json.encodeString("c" .. conn .. "-m" .. midCounter)
    -- The text is ASCII JSON; in `data` only '"' and '\' grow (to 2 bytes).
    local size = math.floor((limit - 256) / 2)
    local seq, sent = 0, 0
    local i, pos = 1, 1 -- the next byte: pieces[i], at pos
    while sent < total do
        local take, n = {}, 0
        while n < size and i <= #pieces do
            local p = pieces[i]
            local piece = p:sub(pos, pos + (size - n) - 1)
            take[#take + 1] = piece
            n = n + #piece
            pos = pos + #piece
            if pos > #p then i, pos = i + 1, 1 end
        end
        sent = sent + n
        local frame = '{"data":' .. json.encodeString(table.concat(take)) .. ',"last":'
            .. (sent >= total and "true" or "false") .. ',"mid":' .. mid .. ',"seq":' .. seq
            .. ',"type":"fragment"}'
        local ok, why = sendRaw(frame)
        if why == "too_large" and seq == 0 and lowerLimit(#frame) then return sendText(text) end
        if not ok then
            -- A later fragment cannot be too large when the first was not: the link dropped.
            return false
        end
        seq = seq + 1
        if sent < total then pause() end
    end
    return true
end

local function send(msg)
    local ok, text = pcall(json.encode, msg)
    if not ok then log("cannot encode " .. tostring(msg.type) .. ": " .. text) return false end
    return sendText(text)
end

--- Answer a request: `jsonText` is the payload (or error) as JSON text, a string or a list of
-- pieces.
local function respondRaw(wireId, ok, jsonText, blob)
    if blob then
        -- The content goes first, as raw bytes in binary frames (docs/protocol.md, "Binary
        -- frames"); the answer that names it follows. Only a request that asked for it gets a
        -- blob, and only on a binary link, so a link that changed meanwhile gets an error.
        if not hostBinary then
            jsonText = json.encode({ ok = false, error = "the page could not be sent: the link changed under it" })
        else
            local id = json.encodeString(wireId)
            local parts = type(blob) == "table" and blob or { blob }
            for k = 1, #parts do
                local bytes = parts[k]
                local total, seq, pos = #bytes, 0, 1
                local head0 = '{"id":' .. id .. ',"last":'
                local head1 = ',"part":' .. (k - 1) .. ',"seq":'
                repeat
                    local head = head0 .. 'false' .. head1 .. seq .. ',"type":"blob"}'
                    local room = math.min(hostMax, ruleMax) - #head - 1
                    local last = pos + room > total
                    if last then head = head0 .. 'true' .. head1 .. seq .. ',"type":"blob"}' end
                    local sent, why = sendRaw(head .. "\n" .. bytes:sub(pos, pos + room - 1), true)
                    if why == "too_large" and lowerLimit(#head + 1 + math.min(room, total - pos + 1))
                        and seq == 0 and k == 1 then
                        return respondRaw(wireId, ok, jsonText, blob)
                    end
                    if not sent then return false end
                    seq, pos = seq + 1, pos + room
                    if not last then pause() end
                until last
            end
        end
    end
    local head = '{"type":"computer_response","id":' .. json.encodeString(wireId)
        .. (ok and ',"ok":true,"payload":' or ',"ok":false,"error":')
    local pieces = { head }
    if type(jsonText) == "table" then
        for i = 1, #jsonText do pieces[#pieces + 1] = jsonText[i] end
    else
        pieces[2] = jsonText
    end
    pieces[#pieces + 1] = "}"
    return sendText(pieces)
end

--- Send queued output, and answers queued behind their output, in order, at most
-- FRAME_BUDGET frames per call; what is left waits for the next flush. CC: Tweaked refuses a
-- send once 512 messages wait to be written on a socket ("Too many ongoing websocket
-- messages"), so a chunk printing megabytes must not be written out in one burst.
local function flushOutput()
    -- Unlinked, output and answers wait (a detached run's, the only ones kept through a drop).
    if phase ~= "linked" then return end
    local budget = FRAME_BUDGET
    -- Small enough that an output frame never needs fragments (a byte escapes to 6 at most).
    local piece = math.min(OUTPUT_PIECE, math.floor((math.min(hostMax, ruleMax) - 256) / 6))
    if hostBinary then piece = math.min(OUTPUT_BINARY_PIECE, math.min(hostMax, ruleMax) - 256) end
    while budget > 0 and outQueue[1] and phase == "linked" do
        local o = outQueue[1]
        if o.respond then
            table.remove(outQueue, 1)
            -- A detached run's answer that did not go (the link dropped under it) waits for the
            -- next link, first in line as it was.
            if not respondRaw(o.wire, o.ok, o.json, o.blob) and o.entry then table.insert(outQueue, 1, o) end
            budget = budget - 1
        else
            -- o.parts: the texts of trapdesk_output events, in order; o.i/o.pos the next byte.
            while budget > 0 and o.i <= #o.parts do
                local take, n = {}, 0
                while n < piece and o.i <= #o.parts do
                    local p = o.parts[o.i]
                    local cut = p:sub(o.pos, o.pos + (piece - n) - 1)
                    take[#take + 1] = cut
                    n = n + #cut
                    o.pos = o.pos + #cut
                    if o.pos > #p then o.parts[o.i] = false o.i, o.pos = o.i + 1, 1 end
                end
                if hostBinary then
                    -- The text as it is: no escaping of each byte (docs/protocol.md, "Binary frames").
                    sendRaw('{"id":' .. json.encodeString(o.wire) .. ',"stream":"' .. o.stream .. '","type":"output"}\n'
                        .. table.concat(take), true)
                else
                    send({ type = "output", id = o.wire, stream = o.stream, text = table.concat(take) })
                end
                budget = budget - 1
                -- 64 frames are a lot of encoding and sending in one go (89 ms on the emulator
                -- for a 1 MB flood): pull events between frames when the slice is spent.
                pause()
            end
            if o.i > #o.parts then table.remove(outQueue, 1) end
        end
    end
    -- Screen updates never delay answers or output: they go only once those are out.
    while budget > 0 and not outQueue[1] and screenQueue[1] do
        sendText(table.remove(screenQueue, 1))
        budget = budget - 1
    end
    if (outQueue[1] or screenQueue[1]) and not flushTimer then flushTimer = startTimer("flush", OUTPUT_EVERY) end
end

local function respondError(wireId, code, message)
    respondRaw(wireId, false, json.encode({ code = code, message = message }))
end

--- Find the rule's limit on a new link: send a `limit` message padded to the size to try,
-- halving while CC refuses it as too large, from the most either side takes. The host then
-- sends no frame above the size that went. Returns false when not even LIMIT_FLOOR goes.
local function probeLimit()
    local size = math.min(LIMIT, hostMax)
    local floor = math.min(LIMIT_FLOOR, size)
    while size >= floor do
        local head = '{"max_message":' .. size .. ',"pad":"'
        local tail = '","type":"limit"}'
        local ok, why = sendRaw(head .. ("x"):rep(size - #head - #tail) .. tail)
        if ok then
            if size ~= ruleMax then
                log(("frames up to %d bytes go through (was %d)"):format(size, ruleMax))
                ruleMax = size
                settings.set("trapdesk.max_message", size)
                pcall(settings.save)
            end
            return true
        end
        if why ~= "too_large" then return true end -- the link dropped; the next link probes
        size = math.floor(size / 2)
    end
    return false
end

-- Serving ---------------------------------------------------------------------

local function servedTypes()
    local set, list = {}, json.array()
    for _, owner in ipairs(ownerOrder) do
        for _, t in ipairs(owners[owner]) do
            if not set[t] then set[t] = true list[#list + 1] = t end
        end
    end
    table.sort(list)
    return list
end

local function ownerFor(type_)
    for _, owner in ipairs(ownerOrder) do
        for _, t in ipairs(owners[owner]) do if t == type_ then return owner end end
    end
end

local function setServe(owner, types)
    local before = table.concat(servedTypes(), ",")
    if type(types) ~= "table" or #types == 0 then
        if owners[owner] then
            owners[owner] = nil
            for i = #ownerOrder, 1, -1 do if ownerOrder[i] == owner then table.remove(ownerOrder, i) end end
        end
        -- Whatever it was still running will never be answered.
        for id, entry in pairs(inflight) do
            if entry.owner == owner then
                inflight[id] = nil
                respondError(entry.wire, "internal", "the serving program stopped")
            end
        end
    else
        local clean = {}
        for _, t in ipairs(types) do if type(t) == "string" then clean[#clean + 1] = t end end
        if not owners[owner] then ownerOrder[#ownerOrder + 1] = owner end
        owners[owner] = clean
    end
    local after = servedTypes()
    if phase == "linked" and table.concat(after, ",") ~= before then
        send({ type = "serve", types = after })
    end
end

-- Incoming messages -------------------------------------------------------------

--- What `ping {status:true}` adds: how many peripherals, each one's main type, the monitors'
-- names, and on a turtle its fuel, limit and selected slot.
local function status()
    local names, mons, types = peripheral.getNames(), json.array(), {}
    for _, n in ipairs(names) do
        types[n] = peripheral.getType(n)
        if peripheral.hasType(n, "monitor") then mons[#mons + 1] = n end
    end
    table.sort(mons)
    local s = { peripherals = #names, monitors = mons, types = types }
    if turtle then s.fuel, s.fuelLimit, s.selected = turtle.getFuelLevel(), turtle.getFuelLimit(), turtle.getSelectedSlot() end
    return s
end

local function handleRequest(msg, payloadText)
    if type(msg.id) ~= "string" then log("gateway_request without a string id") return end
    -- A write's content came before it in binary frames (docs/protocol.md, "Binary frames"):
    -- its pieces go to the server as they are, a list of strings, never joined here. Taken
    -- first, so that a request answered here at once leaves nothing behind.
    local blob = blobs[msg.id]
    blobs[msg.id] = nil
    if type(msg.request) ~= "string" then
        return respondError(msg.id, "bad_request", "request must be a string")
    end
    if msg.request == "ping" then
        local pong = { pong = true, epoch_ms = os.epoch("utc"), uptime_s = clock() - bootAt }
        -- `status` (docs/protocol.md, "Screen"): a plain ping stays as light as it was.
        if type(payloadText) == "string" and payloadText:find('"status"', 1, true) then
            local ok, p = pcall(json.decode, payloadText)
            if ok and type(p) == "table" and p.status == true then pong.status = status() end
        end
        return respondRaw(msg.id, true, json.encode(pong))
    end
    local owner = ownerFor(msg.request)
    if not owner then
        return respondError(msg.id, "unknown_type", "no program on this computer serves " .. msg.request)
    end
    -- The receipt: the host fails a request with none within 10 s as lost (CC may drop the
    -- frame's websocket_message from a full event queue; docs/protocol.md, "Receipts").
    local receipt = '{"id":' .. json.encodeString(msg.id) .. ',"type":"received"}'
    local localId = conn .. "/" .. msg.id
    -- The payload goes on as the JSON text it came in (never decoded here), so a large one is
    -- not decoded and encoded again: the serving program decodes it, in slices. The text is a
    -- string, or a list of strings when the message came in fragments.
    local entry = { wire = msg.id, owner = owner, tries = 1, at = clock(), request = msg.request,
        hand = { owner, localId, msg.request, payloadText or "{}", msg.timeout_ms, blob and blob.parts or nil } }
    if type(msg.detach) == "table" then
        entry.detach, entry.by, entry.held, entry.dropped = true, msg.detach.by, 0, 0
    end
    inflight[localId] = entry
    -- A payload that came in fragments (a list of pieces) is big work for its server, done in
    -- slices of its own turns: it still goes by event, so the daemon's turn stays short.
    local direct = bus and type(payloadText) ~= "table" and type(bus.servers) == "table" and bus.servers[owner]
    if direct then
        -- Handed over by a call (apis/libsandbox.lua, `bus`): nothing can drop it, so it counts
        -- as accepted at once; the job's first run (a short request's whole run) happens now.
        entry.hand, entry.misses = nil, 0
        -- The server's code runs in the daemon's turn: whatever goes wrong there must not end
        -- the daemon (and the link with it); the request is answered instead.
        local called, err = pcall(direct, localId, msg.request, payloadText or "{}", msg.timeout_ms, blob and blob.parts or nil, heard)
        if not called then
            -- CC's abort of a chunk that would not yield (the error escaping every pcall once the
            -- computer is being shut down) is not the server's fault: it goes on up, as it would
            -- have from the server's own coroutine.
            if tostring(err):find("Too long without yielding", 1, true) then error(err, 0) end
            log("hand-over of " .. msg.id .. " failed: " .. tostring(err))
            if inflight[localId] == entry then
                inflight[localId] = nil
                return respondError(msg.id, "internal", "the request could not be handed to its server: " .. tostring(err))
            end
        end
        -- Answered already (a short request): the answer is its receipt, one frame fewer.
        if inflight[localId] == entry then sendRaw(receipt) end
    else
        sendRaw(receipt)
        os.queueEvent("trapdesk_request", table.unpack(entry.hand, 1, 6))
    end
end

--- What becomes of requests whose events CC dropped (see ACCEPT_S): called every second.
-- A request its server has not accepted is handed over again, and fails as `lost` after
-- ACCEPT_TRIES; an accepted one is asked after every PROBE_S whether it still runs; the server
-- says `done` when its answer was dropped, and no answer to PROBE_MISSES asks fails it too.
-- Each fails long before the host's own timeout, with what happened.
local function checkRequests()
    local now = clock()
    for localId, e in pairs(inflight) do
        if now - e.at >= (e.hand and ACCEPT_S or PROBE_S) then
            e.at = now
            if e.hand then
                if e.tries >= ACCEPT_TRIES then
                    inflight[localId] = nil
                    log("request " .. e.wire .. " never reached its server")
                    respondError(e.wire, "lost", ("the request never reached the program serving it on the computer "
                        .. "(handed over %d times in %d s): CC keeps at most 256 queued events and drops the rest, "
                        .. "and the computer's queue was full; try again"):format(e.tries, e.tries * ACCEPT_S))
                else
                    e.tries = e.tries + 1
                    os.queueEvent("trapdesk_request", table.unpack(e.hand, 1, 6))
                end
            elseif e.misses >= PROBE_MISSES then
                inflight[localId] = nil
                respondError(e.wire, "lost", ("the program serving the request on the computer stopped answering "
                    .. "(%d asks in %d s); its answer may have been dropped from a full event queue"):format(e.misses, e.misses * PROBE_S))
            else
                e.misses = e.misses + 1
                os.queueEvent("trapdesk_probe", e.owner, localId)
            end
        end
    end
end

--- The serving program says how a request stands (`trapdesk_alive`).
local function requestState(localId, state)
    local e = inflight[localId]
    if not e then return end
    if state == "accepted" or state == "running" then
        e.hand, e.misses, e.at = nil, 0, clock()
    elseif state == "done" or state == "unknown" then
        -- Its answer was queued before this reply and did not come: CC dropped it.
        inflight[localId] = nil
        log("request " .. e.wire .. ": answer lost (" .. state .. ")")
        respondError(e.wire, "lost", state == "done"
            and "the request ran, but its answer was dropped on the computer: CC keeps at most 256 queued events and drops the rest, and the computer's queue was full; try again"
            or "the program serving the request on the computer no longer knows it (it restarted); try again")
    end
end

-- The version of the installed client (the hash the installer wrote to `version`), "" when
-- unknown. Sent in `hello` so that the host knows this client upgrades itself (a client from
-- before that is upgraded by the host), and compared with `welcome`'s.
local function installedVersion()
    local h = fs.open(root .. "version", "r")
    local mine = h and h.readAll() or ""
    if h then h.close() end
    return (mine:gsub("%s+$", ""))
end

local handleMessage

--- A binary frame from the host: a header line of JSON, "\n", raw bytes. A `blob` is a piece of
-- the content of the request of the same id, which follows it.
local function handleBinary(frame)
    local nl = frame:find("\n", 1, true)
    local ok, head = pcall(json.decode, nl and frame:sub(1, nl - 1) or "")
    if not ok or type(head) ~= "table" or head.type ~= "blob" or type(head.id) ~= "string" or type(head.seq) ~= "number" then
        log("bad binary frame")
        return
    end
    local b = blobs[head.id]
    if head.seq == 0 then b = { parts = {}, next = 0, size = 0 } blobs[head.id] = b end
    if not b or b.next ~= head.seq then
        -- A piece went missing (CC dropped its event from a full queue): the request that
        -- follows finds its content short and says so.
        log("blob " .. head.id .. " out of order")
        if b then b.next = -1 end
        return
    end
    local body = frame:sub(nl + 1)
    b.parts[#b.parts + 1] = body
    b.next, b.size = b.next + 1, b.size + #body
    if b.size > 32 * 1024 * 1024 then blobs[head.id] = nil log("binary content too large") end
end

local function handleFragment(msg)
    if type(msg.mid) ~= "string" or type(msg.data) ~= "string" or type(msg.seq) ~= "number" then return end
    local f = fragments[msg.mid]
    if msg.seq == 0 then f = { parts = {}, next = 0, size = 0 } fragments[msg.mid] = f end
    if not f or f.next ~= msg.seq then
        log("fragment " .. msg.mid .. " out of order")
        fragments[msg.mid] = nil
        return
    end
    f.parts[#f.parts + 1] = msg.data
    f.next, f.size = f.next + 1, f.size + #msg.data
    if f.size > 32 * 1024 * 1024 then fragments[msg.mid] = nil log("fragmented message too large") return end
    if msg.last == true then
        fragments[msg.mid] = nil
        -- Decoded from the fragments as they are, never joined (json.decode reads a list of
        -- pieces, a piece at a time): the payload's text goes on as pieces of them.
        local ok, whole, payloadText = pcall(json.decode, f.parts, pause, "payload")
        f.parts = nil
        if ok and type(whole) == "table" then handleMessage(whole, payloadText) else log("bad reassembled message") end
    end
end

handleMessage = function(msg, payloadText)
    local kind = msg.type
    if kind == "ping" then
        lastPing = clock()
        send({ type = "pong", t = msg.t })
    elseif kind == "gateway_request" then
        handleRequest(msg, payloadText)
    elseif kind == "cancel" then
        local localId = conn .. "/" .. tostring(msg.id)
        if not inflight[localId] then
            -- A detached run keeps the local id of the link it came on.
            for id, e in pairs(inflight) do
                if e.detach and e.wire == msg.id then localId = id end
            end
        end
        if inflight[localId] then os.queueEvent("trapdesk_cancel", localId) end
    elseif kind == "fragment" then
        handleFragment(msg)
    elseif kind == "gateway_response" then
        local rid = hostRequests[msg.id]
        if rid then
            hostRequests[msg.id] = nil
            local body
            if msg.ok then
                body = payloadText or "{}"
            else
                body = json.encode(msg.error or { code = "internal" })
            end
            os.queueEvent("trapdesk_host_response", rid, msg.ok == true, body)
        end
    elseif kind == "welcome" and phase == "hello" then
        setPhase("linked")
        tryShared = false
        -- Linked with its own secret, the computer keeps an offered one for when the host forgets
        -- the own (it goes next then, before `sandbox.password`).
        if sentOffered then settleOffer("stored") end
        if type(msg.secret) == "string" and msg.secret ~= "" then
            -- Enrolled: our own secret from now on. `enrolled` only once it is on disk, so
            -- that the host never makes firm a secret this computer would lose at reboot.
            local before = settings.get("trapdesk.secret")
            settings.set("trapdesk.secret", msg.secret)
            local saved = settings.save()
            if saved == false then
                -- As it is on disk: the next link enrols again with the shared secret.
                if before == nil then settings.unset("trapdesk.secret") else settings.set("trapdesk.secret", before) end
                say("could not save the secret the host gave this computer (disk full?); it enrols again at the next link")
            else
                send({ type = "enrolled" })
                log("enrolled: this computer has a secret of its own (trapdesk.secret)")
            end
        end
        backoff = 1
        lastPing = clock()
        if type(msg.heartbeat_ms) == "number" and msg.heartbeat_ms > 0 then heartbeat = msg.heartbeat_ms / 1000 end
        if type(msg.max_message) == "number" and msg.max_message >= 1024 then hostMax = msg.max_message end
        hostBinary = linkBinary and msg.binary == true
        if not probeLimit() then
            say(("CC refuses even %d-byte messages to the host: raise max_websocket_message in the [[http.rules]] entry that allows it (computercraft-server.toml); retrying every 5 minutes"):format(LIMIT_FLOOR))
            drop(4003, "max_websocket_message below " .. LIMIT_FLOOR)
            return
        end
        send({ type = "serve", types = servedTypes() })
        -- The host serves another client than this one (the hash of its lua/ files, written to
        -- `version` by the installer): the startup wrapper fetches and installs it.
        if type(msg.client_version) == "string" and msg.client_version ~= "" then
            if installedVersion() ~= msg.client_version then os.queueEvent("trapdesk_upgrade", msg.client_version) end
        end
        -- What detached runs printed and answered while unlinked goes now.
        for _, e in pairs(inflight) do if e.detach then e.held = 0 end end
        flushOutput()
        -- The link's number goes with it: a request of this link can be handed to its server
        -- (the direct hand-over) before the server takes this event, and must not be undone
        -- by it (servers/screen.lua keeps a watch asked on this very link).
        os.queueEvent("trapdesk_daemon_up", conn)
        tell("linked", tostring(msg.trapos_id))
        if not linkedOnce then say("linked as " .. tostring(msg.trapos_id)) end
        linkedOnce = true
        log("linked as " .. tostring(msg.trapos_id))
    elseif kind == "error" then
        log("host error " .. tostring(msg.code) .. ": " .. tostring(msg.message))
        if phase == "hello" then hostSays = tostring(msg.message) end
    end
end

-- Connection life -----------------------------------------------------------------

local function scheduleRetry(delay)
    delay = delay * (0.75 + math.random() * 0.5)
    retryTimer = startTimer("retry", delay)
    log(("retrying in %.1f s"):format(delay))
end

--- Keeps what an unlinked detached run (`e`, local id `localId`) has waiting in `outQueue` to
-- HELD_MAX bytes: its oldest pieces go first, counted in `e.dropped` for the next hello.
local function holdBounded(e, localId)
    local idx = 1
    while e.held > HELD_MAX and outQueue[idx] do
        local o = outQueue[idx]
        local p = not o.respond and o.id == localId and o.parts[o.i]
        if not p then
            if not o.respond and o.id == localId then table.remove(outQueue, idx) else idx = idx + 1 end
        else
            local n, excess = #p - o.pos + 1, e.held - HELD_MAX
            if n > excess then
                -- One piece holds more than the excess (a run's output comes coalesced): drop
                -- its head, up to the end of a line where there is one, and keep its tail.
                local cut = p:find("\n", o.pos + excess - 1, true) or (o.pos + excess - 1)
                if cut >= #p then cut = o.pos + excess - 1 end
                n = cut - o.pos + 1
                o.pos = cut + 1
            else
                o.parts[o.i] = false
                o.i, o.pos = o.i + 1, 1
            end
            e.held, e.dropped = e.held - n, e.dropped + n
        end
    end
end

drop = function(code, reason, quiet)
    if ws then pcall(ws.close) end
    ws, wsUrl = nil, nil
    setPhase("idle")
    -- Requests of the old link: stop them; their ids mean nothing on the next one. Detached
    -- runs go on, with their output and answers kept for the next link.
    local kept, keptOut = {}, {}
    for id, e in pairs(inflight) do
        if e.detach then kept[id] = e else os.queueEvent("trapdesk_cancel", id) end
    end
    for _, o in ipairs(outQueue) do
        if (o.respond and o.entry) or (not o.respond and kept[o.id]) then keptOut[#keptOut + 1] = o end
    end
    inflight, outQueue, fragments, screenQueue, blobs = kept, keptOut, {}, {}, {}
    hostBinary = false
    -- What a detached run had waiting when the link dropped counts against what it may keep.
    for id, e in pairs(kept) do
        e.held = 0
        for _, o in ipairs(outQueue) do
            if not o.respond and o.id == id then
                for k = o.i, #o.parts do
                    if o.parts[k] then e.held = e.held + #o.parts[k] - (k == o.i and o.pos - 1 or 0) end
                end
            end
        end
        holdBounded(e, id)
    end
    for wire, rid in pairs(hostRequests) do
        os.queueEvent("trapdesk_host_response", rid, false,
            json.encode({ code = "disconnected", message = "the link to the host dropped" }))
        hostRequests[wire] = nil
    end
    log(("link down (%s): %s"):format(tostring(code), tostring(reason)))
    local says = hostSays
    hostSays = nil
    local own, offered = sentOwn, sentOffered
    sentOwn, sentOffered = false, false
    -- Relinking at once (`trapdesk_relink`): the caller connects.
    if quiet then return end
    if code == 4001 and own and not tryShared and (settings.get(OFFERED) or settings.get("sandbox.password")) then
        -- Our own secret was refused: the host lost or forgot our binding. The shared secret
        -- enrols us again if the host allows it; it decides, and says why if not.
        tryShared = true
        log("own secret refused (" .. tostring(says) .. "); trying the shared secret")
        tell("retrying", "own secret refused")
        scheduleRetry(1)
        return
    end
    -- The host refused the offered secret. Only "wrong secret" says it is not the host's: the
    -- other refusals of a shared secret (enrolled with its own, enrolment closed) are made to the
    -- right one, which is kept for when the host lets it link. A wrong one is dropped, and the
    -- secret set before goes next, a second later, as before the offer.
    local retryStored = code == 4001 and offered and not (says and (says:find("own secret", 1, true) or says:find("enrolment is closed", 1, true)))
    if code == 4001 and offered then settleOffer(retryStored and "refused" or "stored") end
    retryStored = retryStored and settings.get("sandbox.password")
    if not retryStored then tryShared = false end
    if code == 4001 or code == 4003 then
        local why = tostring(reason or code)
        if says then why = why .. ": " .. says end
        tell("refused", why)
    else
        tell("retrying", tostring(reason or code or "link down"))
    end
    if retryStored then
        scheduleRetry(1)
        return
    end
    if code == 4001 then
        if says and says ~= "wrong secret" then
            say("the host refused this computer: " .. says .. " (retrying every minute)")
        else
            say("the host refused the secret. Set it with: set sandbox.password <secret> (retrying every minute)")
        end
        scheduleRetry(60)
    elseif code == 4003 then
        if not tostring(reason):find("max_websocket_message", 1, true) then
            say("the host does not speak protocol 1; retrying every 5 minutes")
        end
        scheduleRetry(300)
    elseif code == 4002 then
        scheduleRetry(30)
    else
        scheduleRetry(backoff)
        -- At most 4 s (before the +-25 % jitter) between attempts while the host is away: a
        -- restarted host has every computer back within 5 s of listening again, however long it
        -- was down, and a refused connection costs it nothing (docs/lua-client.md, "The daemon").
        backoff = math.min(backoff * 2, 4)
    end
end

-- A turtle has the `turtle` API and a pocket computer the `pocket` API, as CC: Tweaked gives
-- them (TurtleAPI, PocketAPI); everything else is a computer.
local function device()
    if turtle then return "turtle" end
    if pocket then return "pocket" end
    return "computer"
end

-- Advanced computers, turtles and pocket computers have a colour terminal (term.isColour).
local function advanced()
    local ok, colour = pcall(function() return term.native and term.native().isColour() end)
    return ok and colour == true
end

--- The detached runs this computer kept through a dropped link, for the hello: still running,
-- or finished with the answer waiting in `outQueue`.
local function keptRuns()
    local list = json.array()
    local function add(e, status)
        list[#list + 1] = { id = e.wire, request = e.request, by = e.by, status = status, dropped_bytes = e.dropped or 0 }
    end
    for _, e in pairs(inflight) do if e.detach then add(e, "running") end end
    for _, o in ipairs(outQueue) do if o.respond and o.entry then add(o.entry, "finished") end end
    return list
end

local function opened(handle)
    ws = handle
    -- The native terminal's size: a program's redirect (a window, a monitor) is not the screen.
    local okSize, screenW, screenH = pcall(function() return (term.native and term.native() or term).getSize() end)
    if not okSize then screenW, screenH = nil, nil end
    setPhase("hello")
    hostSays = nil
    linkBinary, hostBinary, blobs = runtimeBinary(), false, {}
    local label = os.getComputerLabel()
    linkLabel = label
    local own = settings.get("trapdesk.secret")
    local offered = settings.get(OFFERED)
    sentOwn = type(own) == "string" and own ~= "" and not tryShared
    sentOffered = not sentOwn and (offered or "") ~= ""
    local secret = sentOwn and own or sentOffered and offered or tostring(settings.get("sandbox.password") or "")
    send({
        type = "hello", protocol = 1, computer_id = os.getComputerID(),
        label = label == nil and json.null or label,
        secret = secret, enrol = true,
        serves = servedTypes(), client = CLIENT, client_version = installedVersion(),
        host = _HOST or "ComputerCraft",
        -- What went through on an earlier link (safe until the probe after welcome says more).
        max_message = ruleMax,
        -- What this computer is (docs/protocol.md, "Handshake"), told once per link.
        device = device(), advanced = advanced(), command = commands ~= nil,
        screen_width = screenW, screen_height = screenH,
        -- `input` with a request_id reaches that request alone (servers/screen.lua).
        input_to_request = true,
        -- Raw bytes in binary frames both ways (docs/protocol.md, "Binary frames").
        binary = linkBinary or nil,
        detached = keptRuns(),
    })
end

local function failed(err)
    setPhase("idle")
    err = tostring(err)
    log("connect failed: " .. err)
    tell("retrying", err)
    if err:find("not permitted") or err:find("blocked") then
        say("CC refused " .. tostring(settings.get("sandbox.url")) .. " (" .. err .. "): an [[http.rules]] entry in the world's computercraft-server.toml must allow it, before the rule that denies private addresses (`trapdesk doctor` on the host prints it)")
    end
    scheduleRetry(backoff)
    backoff = math.min(backoff * 2, 4) -- at most 4 s: see `drop`
end

local function connect()
    local base = settings.get("sandbox.url")
    if type(base) ~= "string" or base == "" then scheduleRetry(30) return end
    conn = conn + 1
    hostMax = LIMIT
    ruleMax = tonumber(settings.get("trapdesk.max_message")) or LIMIT
    -- CraftOS-PC drops the path of a ws://localhost:PORT/path URL (docs/lua-client.md, "Found on
    -- CraftOS-PC"); 127.0.0.1 is the
    -- same host everywhere else, so use it.
    base = base:gsub("^(wss?://)localhost([:/])", "%1127.0.0.1%2")
    wsUrl = base .. (base:find("?", 1, true) and "&" or "?") .. "c=" .. conn
    setPhase("connecting")
    if http.websocketAsync then
        local ok, res, err = pcall(http.websocketAsync, wsUrl)
        if not ok then failed(res) elseif res == false then failed(err) end
    else
        -- Blocking variant: it discards other events while it waits; servers
        -- announce again on trapdesk_daemon_up, so nothing is lost for good.
        local ok, handle, err = pcall(http.websocket, wsUrl)
        if not ok then failed(handle) elseif not handle then failed(err) else opened(handle) end
    end
end

--- Output of request `a` (stream `b`, text `c`): from `trapdesk_output`, or called by the
-- serving program (apis/libsandbox.lua, `bus`). It waits for the next flush.
local function gotOutput(a, b, c)
    if inflight[a] and type(c) == "string" then
        local stream = b == "err" and "err" or "out"
        local last = outQueue[#outQueue]
        -- Texts are kept as they came (a list), not joined: joining in a loop copies the
        -- whole backlog of output for every new piece.
        if last and not last.respond and last.id == a and last.stream == stream then
            last.parts[#last.parts + 1] = c
        else
            outQueue[#outQueue + 1] = { id = a, wire = inflight[a].wire, stream = stream, parts = { c }, i = 1, pos = 1 }
        end
        local e = inflight[a]
        if e.detach and phase ~= "linked" then
            e.held = e.held + #c
            holdBounded(e, a)
        end
        if not flushTimer then flushTimer = startTimer("flush", OUTPUT_EVERY) end
    end
end

--- The answer to request `a`: from `trapdesk_respond`, or called by the serving program.
local function gotRespond(a, b, c, d)
    local entry = inflight[a]
    if not entry then return end
    inflight[a] = nil
    -- c is the JSON text: a string, or a list of pieces (a large answer).
    if type(c) ~= "string" and type(c) ~= "table" then c = json.encode({ code = "internal", message = "no payload" }) b = false end
    -- The answer queues behind the request's output, so output always arrives first.
    -- d: a page's raw bytes, sent in binary frames before the answer.
    outQueue[#outQueue + 1] = { respond = true, wire = entry.wire, ok = b == true, json = c,
        blob = (type(d) == "string" or type(d) == "table") and d or nil, entry = entry.detach and entry or nil }
    if coroutine.running() == daemonCo then
        flushOutput()
    elseif not flushAsked then
        -- Called from another program's coroutine (a request answered after a yield): sending
        -- may pause for events, which must be the daemon's own, so the daemon sends it in its
        -- next turn, woken by an event of its own.
        flushAsked = true
        os.queueEvent("trapdesk_flush")
    end
end

if bus then
    bus.daemon = { respond = gotRespond, output = gotOutput }
end

-- Main loop -------------------------------------------------------------------------

--- A label set on the computer (`label set`, os.setComputerLabel) goes to the host at once:
-- it is the computer's name there (`<id>:<label>`). Reading it is a field lookup in CC.
local function checkLabel()
    local label = os.getComputerLabel()
    if label == linkLabel then return end
    linkLabel = label
    log("label now " .. tostring(label))
    send({ type = "label", label = label == nil and json.null or label })
end

local function tick()
    local now = clock()
    if phase == "linked" then
        checkLabel()
        checkRequests()
    end
    if phase == "linked" and now - lastPing > 3 * heartbeat then
        drop(nil, "no ping for " .. 3 * heartbeat .. " s")
    elseif phase == "hello" and now - phaseSince > 10 then
        drop(nil, "no welcome")
    elseif phase == "connecting" and now - phaseSince > 30 then
        wsUrl = nil
        failed("connect timed out")
    end
end

--- The timers whose event CC dropped: their work runs now and they start again.
local function overdue()
    local late = clock() - 1
    if tickTimer and due.tick < late then
        log("tick timer lost; restarted")
        tick()
        tickTimer = startTimer("tick", 1)
    end
    if retryTimer and due.retry < late then
        retryTimer = nil
        if phase == "idle" then connect() end
    end
    if flushTimer and due.flush < late then
        flushTimer = nil
        flushOutput()
    end
end

os.queueEvent("trapdesk_stop", "daemon", instance)
os.queueEvent("trapdesk_daemon_up")
tickTimer = startTimer("tick", 1)
connect()

daemonCo = coroutine.running()
while true do
    local ev, a, b, c, d, e = nextEvent()
    overdue()
    if ev == "websocket_message" and a == wsUrl and ws then
        heard = b
        if c and linkBinary then
            handleBinary(b)
        elseif c then
            log("binary frame ignored")
        else
            local ok, msg, payloadText = pcall(json.decode, b, pause, "payload")
            if ok and type(msg) == "table" and type(msg.type) == "string" then
                handleMessage(msg, payloadText)
            else
                log("bad frame: " .. tostring(msg))
            end
        end
    elseif ev == "websocket_closed" and a == wsUrl then
        ws = nil
        if tooLarge(b) then
            -- CC closed the socket on a frame from the host above the rule's limit (netty's
            -- TooLongFrameException, NetworkUtils.toFriendlyError). Ask for less at once.
            lowerLimit(ruleMax)
            backoff = 1
        end
        drop(c, b)
    elseif ev == "websocket_success" and a == wsUrl and phase == "connecting" then
        opened(b)
    elseif ev == "websocket_failure" and a == wsUrl and phase == "connecting" then
        failed(b)
    elseif ev == "timer" then
        if a == tickTimer then
            tick()
            tickTimer = startTimer("tick", 1)
        elseif a == retryTimer then
            retryTimer = nil
            if phase == "idle" then connect() end
        elseif a == flushTimer then
            flushTimer = nil
            flushOutput()
        end
    elseif ev == "trapdesk_relink" then
        -- The installer was given a new secret (`OFFERED`): it is tried now, on a new link (right
        -- after the own secret, or at once when the own secret was just refused).
        if phase ~= "idle" then drop(nil, "new secret", true) end
        retryTimer = nil
        connect()
    elseif ev == "trapdesk_serve" then
        setServe(a, b)
    elseif ev == "trapdesk_alive" then
        requestState(a, b)
    elseif ev == "trapdesk_output" then
        gotOutput(a, b, c)
    elseif ev == "trapdesk_respond" then
        gotRespond(a, b, c, d)
    elseif ev == "trapdesk_flush" then
        flushAsked = false
        flushOutput()
    elseif ev == "trapdesk_screen" then
        if phase == "linked" and type(a) == "string" then
            if #screenQueue >= SCREEN_BACKLOG then
                -- The link is busy; rows of the dropped updates come again in one whole frame.
                screenQueue = {}
                os.queueEvent("trapdesk_screen_resync")
            else
                screenQueue[#screenQueue + 1] = a
                flushOutput()
            end
        end
    elseif ev == "trapdesk_host_request" then
        if phase ~= "linked" then
            os.queueEvent("trapdesk_host_response", a, false,
                json.encode({ code = "disconnected", message = "not linked to the host" }))
        else
            hostCounter = hostCounter + 1
            local wire = "c-" .. hostCounter
            hostRequests[wire] = a
            local ok, payload = pcall(json.decode, c or "{}")
            send({ type = "computer_request", id = wire, request = b, payload = ok and payload or {},
                timeout_ms = type(d) == "number" and d or nil })
        end
    elseif ev == "trapdesk_stop" and a == "daemon" and b ~= instance then
        log("stopped by " .. tostring(b))
        if bus and bus.daemon and bus.daemon.respond == gotRespond then bus.daemon = nil end
        if ws then pcall(ws.close) end
        return
    end
end
