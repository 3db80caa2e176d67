--- The screen server: the terminal mirror (apis/mirror.lua), the monitors' shadows
-- (apis/peripherals.lua), input as the player's, and what is attached to the computer.
--
-- Serves these request types through the daemon (docs/protocol.md "Screen"):
--  - `screen` {watch?: bool, monitor?: name}: answers the whole screen (a frame) of the
--    terminal, or of that monitor's shadow, and starts (watch true) or stops (watch false)
--    live updates of that display. While watched, changed rows go to the host as `screen`
--    messages at most 20 times a second, merged when the display changes faster. Nothing is
--    sent while nobody watches, and a relink (the daemon says it is up again) stops watching
--    until the host asks.
--  - `input` {steps: [{text} | {key} | {paste} | {touch}], monitor?}: queues `char`, `key`,
--    `key_up` and `paste` events as the keyboard would, or `monitor_touch` for a touch on the
--    monitor, in order, a few at a time so that
--    CC's 256-event queue never overflows; `terminate`, `reboot` and `shutdown`
--    act as holding ctrl+T, ctrl+R and ctrl+S. With `request_id` (a running exec-lua or
--    run-file request) the events go to that request alone, each wrapped in a
--    `trapdesk_input` event that libsandbox's scheduler unwraps for it: the shell and
--    other programs never see them.
--  - `peripherals`: every peripheral with its types, methods and a short state.
--  - `turtle` (on a turtle only): fuel, selected slot and the 16 slots.
--
-- Usage: screen.lua (normally started by startup.lua).

-- The client's root directory: the rule is apis/root.lua's, found beside servers/.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/servers/"
local root = dofile(here .. "../apis/root.lua")(shell)
local sandbox = dofile(root .. "apis/libsandbox.lua")
local mirror = dofile(root .. "apis/mirror.lua")
local shadows = dofile(root .. "apis/peripherals.lua")
local json = sandbox.json
local pace = sandbox.pace

local EVERY = 0.05 -- seconds between updates while watched: at most 20 a second
local MAX_TEXT = 4096 -- characters of `text` per request
local MAX_PASTE = 512 -- bytes of a paste (CC's own clipboard limit)
local BATCH = 16 -- events queued before waiting for them to be handled

local native = term.native()
local rec = mirror.install(native)
-- Every program's peripheral calls from now on: the monitors' shadows start here.
shadows.install(peripheral, rawget(_G, "trapdeskClient"), mirror)
-- display (false: the terminal, else a monitor's name) -> the link it was watched on (the
-- daemon's link number, as the request's local id begins), while watched
local watched = {}
local timer
local power

local function badRequest(message) return false, { code = "bad_request", message = message } end
local function notFound(m) return false, { code = "not_found", message = "no monitor " .. m .. " on this computer" } end

--- A frame of the terminal (`m` false or nil) or of monitor `m`: whole (`full`) or the changes
-- (nil when none, or when no monitor `m` is attached now).
local function frame(m, full)
    local msg
    if m then
        msg = shadows.take(m, full)
    else
        rec.checkSize()
        msg = rec.take(full)
    end
    if msg then msg.type = "screen" end
    return msg
end

-- Keys -------------------------------------------------------------------------

local ALIAS = { ctrl = "leftCtrl", control = "leftCtrl", alt = "leftAlt", shift = "leftShift", ["return"] = "enter",
    ["0"] = "zero", ["1"] = "one", ["2"] = "two", ["3"] = "three", ["4"] = "four", ["5"] = "five",
    ["6"] = "six", ["7"] = "seven", ["8"] = "eight", ["9"] = "nine", semicolon = "semiColon" }
local DIGIT = { zero = "0", one = "1", two = "2", three = "3", four = "4", five = "5", six = "6", seven = "7",
    eight = "8", nine = "9" }
local HELD = { terminate = "t", reboot = "r", shutdown = "s" }

local function keyCode(name)
    local n = ALIAS[name:lower()] or name
    if type(keys[n]) == "number" then return keys[n], n end
    local lower = n:lower()
    for k, v in pairs(keys) do
        if type(v) == "number" and type(k) == "string" and k:lower() == lower then return v, k end
    end
    -- CC: Tweaked spells it "semicolon", CraftOS-PC's older table "semiColon".
    if lower == "semicolon" then
        for _, k in ipairs({ "semicolon", "semiColon" }) do if keys[k] then return keys[k], k end end
    end
end

--- The events of one key name such as "enter", "ctrl+s", "shift+tab", "f5"; nil, why when unknown.
local function keyEvents(spec)
    local parts = {}
    for p in spec:gmatch("[^+]+") do parts[#parts + 1] = p end
    if #parts == 0 or spec:sub(-1) == "+" and spec ~= "+" then return nil, "unknown key name " .. spec end
    local base = parts[#parts]
    local mods, ctrl, alt, shift = {}, false, false, false
    for i = 1, #parts - 1 do
        local m = parts[i]:lower()
        local code = m == "ctrl" and keyCode("leftCtrl") or m == "alt" and keyCode("leftAlt")
            or m == "shift" and keyCode("leftShift") or nil
        if not code then return nil, "unknown modifier " .. parts[i] .. " in " .. spec .. " (ctrl, alt, shift)" end
        ctrl, alt, shift = ctrl or m == "ctrl", alt or m == "alt", shift or m == "shift"
        mods[#mods + 1] = code
    end
    local evs = {}
    local held = #parts == 1 and HELD[base:lower()]
    if held then
        local c, t = keyCode("leftCtrl"), keyCode(held)
        evs[#evs + 1] = { "key", c, false }
        evs[#evs + 1] = { "key", t, false }
        evs[#evs + 1] = { "key", t, true }
        if base:lower() == "terminate" then evs[#evs + 1] = { "terminate" } else power = base:lower() end
        evs[#evs + 1] = { "key_up", t }
        evs[#evs + 1] = { "key_up", c }
        return evs
    end
    local code, name = keyCode(base)
    if not code then return nil, "unknown key name " .. base end
    for _, m in ipairs(mods) do evs[#evs + 1] = { "key", m, false } end
    evs[#evs + 1] = { "key", code, false }
    if not ctrl and not alt then
        local ch
        if #name == 1 and name:match("%a") then ch = shift and name:upper() or name
        elseif DIGIT[name] and not shift then ch = DIGIT[name]
        elseif name == "space" then ch = " " end
        if ch then evs[#evs + 1] = { "char", ch } end
    end
    evs[#evs + 1] = { "key_up", code }
    for i = #mods, 1, -1 do evs[#evs + 1] = { "key_up", mods[i] } end
    return evs
end

--- The host sends text as UTF-8; CC's characters are bytes (Latin-1), so U+0080..U+00FF
-- become the one byte they stand for.
local function fromUtf8(s)
    return (s:gsub("[\194\195][\128-\191]", function(c)
        return string.char((c:byte(1) - 192) * 64 + c:byte(2) - 128)
    end))
end

local function textEvents(text, evs)
    text = fromUtf8(text)
    for i = 1, #text do
        local c = text:sub(i, i)
        if c == "\n" then
            local code = keyCode("enter")
            evs[#evs + 1] = { "key", code, false }
            evs[#evs + 1] = { "key_up", code }
        elseif c == "\t" then
            local code = keyCode("tab")
            evs[#evs + 1] = { "key", code, false }
            evs[#evs + 1] = { "key_up", code }
        elseif c ~= "\r" then
            evs[#evs + 1] = { "char", c }
        end
    end
end

local function queueAll(evs, requestId)
    local n = 0
    for _, e in ipairs(evs) do
        if requestId then
            os.queueEvent("trapdesk_input", requestId, table.unpack(e))
        else
            os.queueEvent(table.unpack(e))
        end
        n = n + 1
        if n % BATCH == 0 then
            -- Every program gets each event before the next one; once our marker comes back,
            -- everything queued before it has been handled, and the queue has room again.
            -- A marker dropped from a full queue is queued again (apis/pace.lua).
            pace.roundTrip("trapdesk_input_step")
        end
    end
    return n
end

-- Requests ---------------------------------------------------------------------

local handlers = {}

--- The payload's `monitor`: nil (the terminal), a name, or false and the refusal.
local function monitorOf(p)
    local m = p.monitor
    if m == nil or m == json.null then return nil end
    if type(m) ~= "string" then return false, badRequest("monitor must be a string") end
    return m
end

handlers.screen = function(req)
    local p = req.payload
    if type(p) ~= "table" then return badRequest("screen needs an object payload") end
    if p.watch ~= nil and p.watch ~= json.null and type(p.watch) ~= "boolean" then
        return badRequest("watch must be a boolean")
    end
    local m, a, b = monitorOf(p)
    if m == false then return a, b end
    local msg = frame(m, true)
    if not msg then return notFound(m) end
    m = m or false
    if p.watch == true then
        watched[m] = tostring(req.id):match("^(%d+)/") or true
    elseif p.watch == false then
        watched[m] = nil
    end
    msg.watching = watched[m] ~= nil
    os.queueEvent("trapdesk_screen_tick")
    return true, msg
end

handlers.input = function(req)
    local p = req.payload
    if type(p) ~= "table" or type(p.steps) ~= "table" then return badRequest("input needs a steps array") end
    local requestId = p.request_id
    if requestId == json.null then requestId = nil end
    if requestId ~= nil and type(requestId) ~= "string" then return badRequest("request_id must be a string") end
    local m, a, b = monitorOf(p)
    if m == false then return a, b end
    local evs = {}
    power = nil
    for i, step in ipairs(p.steps) do
        local at = "steps[" .. i .. "]"
        if type(step) ~= "table" then return badRequest(at .. " must be an object") end
        local t = step.touch
        if t ~= nil then
            -- A touch is CC's monitor_touch(side, x, y) for a cell of the monitor as it is now.
            if not m then return badRequest(at .. ".touch needs monitor") end
            local size = { shadows.size(m) }
            if not size[1] then return notFound(m) end
            if type(t) ~= "table" then return badRequest(at .. ".touch must be an object {x, y}") end
            for k, c in ipairs({ "x", "y" }) do
                local v = t[c]
                if type(v) ~= "number" or v % 1 ~= 0 or v < 1 or v > size[k] then
                    return badRequest(("%s.touch.%s must be an integer within 1..%d"):format(at, c, size[k]))
                end
            end
            evs[#evs + 1] = { "monitor_touch", m, t.x, t.y }
        elseif m then
            return badRequest(at .. ": only touch steps go to a monitor")
        elseif type(step.text) == "string" then
            local n = #fromUtf8(step.text)
            if n > MAX_TEXT then
                return badRequest(("steps[%d].text is %d characters; at most %d"):format(i, n, MAX_TEXT))
            end
            textEvents(step.text, evs)
        elseif type(step.key) == "string" then
            local more, why = keyEvents(step.key)
            if not more then return badRequest("steps[" .. i .. "].key: " .. why) end
            for _, e in ipairs(more) do evs[#evs + 1] = e end
        elseif type(step.paste) == "string" then
            local n = #fromUtf8(step.paste)
            if n > MAX_PASTE then
                return badRequest(("steps[%d].paste is %d characters; at most %d"):format(i, n, MAX_PASTE))
            end
            evs[#evs + 1] = { "paste", fromUtf8(step.paste) }
        else
            return badRequest(at .. " needs a string text, key or paste, or a touch")
        end
    end
    local pending = power
    power = nil
    -- Reboot and shutdown act on the whole computer, never on one request.
    if pending and requestId then return badRequest(pending .. " acts on the computer, not on one request: leave request_id out") end
    local n = queueAll(evs, requestId)
    if pending then os.queueEvent("trapdesk_screen_power", pending) end
    return true, { ok = true, events = n }
end

handlers.peripherals = function() return true, { peripherals = shadows.list() } end

local types = { "input", "screen", "peripherals" }
if turtle then
    types[4] = "turtle"
    handlers.turtle = function(req)
        local s = type(req.payload) == "table" and req.payload.slots
        if s ~= nil and s ~= false and s ~= true then return badRequest("slots must be a boolean") end
        return true, shadows.turtle(turtle, s)
    end
end

local function serve()
    sandbox.serve(types, function(req)
        local h = handlers[req.type]
        if not h then return false, { code = "unknown_type", message = "not served here: " .. tostring(req.type) } end
        return h(req)
    end, { name = "screen-server" })
end

local timerDue = 0 -- os.epoch("utc") when the frame timer fires

local function updates()
    while true do
        local ev, a = os.pullEventRaw()
        if ev == "timer" and a == timer then
            timer = nil
            for m in pairs(watched) do
                local msg = frame(m, false)
                if msg then os.queueEvent("trapdesk_screen", json.encode(msg)) end
            end
        elseif ev == "term_resize" then
            -- A resize sends a whole frame at the next tick (checkSize marks it full).
            rec.checkSize()
        elseif ev == "trapdesk_screen_resync" then
            rec.full = true
            rec.changed = true
            shadows.resync()
        elseif ev == "trapdesk_daemon_up" then
            -- A new link (`a`, its number; none when the daemon started): the host asks again
            -- when someone watches, so the watches of earlier links end. One asked on this
            -- link stays: its request can come (handed over directly) before this event, and
            -- ending it would leave the host's view frozen on that first frame.
            for m, link in pairs(watched) do
                if a == nil or link ~= tostring(a) then watched[m] = nil end
            end
        elseif ev == "trapdesk_screen_power" then
            -- Give the daemon time to send the answer first.
            sleep(0.5)
            if a == "reboot" then os.reboot() else os.shutdown() end
        elseif ev == "trapdesk_stop" and a == "screen-server" then
            -- serve() ends too; the new instance wraps the originals again.
        end
        -- A frame timer whose event was dropped from a full queue (CC keeps 256) would stop
        -- the updates for good: 1 s past its time, any event starts a new one.
        if timer and os.epoch("utc") > timerDue + 1000 then timer = nil end
        shadows.event(ev, a)
        if next(watched) ~= nil and not timer then
            timer = os.startTimer(EVERY)
            timerDue = os.epoch("utc") + EVERY * 1000
        end
    end
end

local ok, err = pcall(parallel.waitForAny, serve, updates)
mirror.uninstall(native, rec)
shadows.uninstall()
if not ok then error(err, 0) end
