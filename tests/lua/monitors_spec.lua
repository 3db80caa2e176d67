-- monitors_spec: the monitors' shadows (apis/peripherals.lua over apis/mirror.lua), the
-- `peripherals` and `turtle` answers, and servers/screen.lua serving them, against a fake world:
-- fake peripherals under a copy of CC's rom/apis/peripheral.lua logic (`call`, `wrap`,
-- `getNames`, `hasType` over the native API, wired modems included; CC: Tweaked's
-- projects/core/src/main/resources/data/computercraft/lua/rom/apis/peripheral.lua).
local json = dofile(ROOT .. "apis/json.lua")
local mirror = dofile(ROOT .. "apis/mirror.lua")
local shadows = dofile(ROOT .. "apis/peripherals.lua")

local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end

-- The world ---------------------------------------------------------------------

local nativeCalls, hasTypeCalls = 0, 0

--- A fake monitor: 10 x 4 cells at scale 1 (more at a smaller scale), a cursor and colours.
-- It draws nothing: the record is what the specs read.
local function fakeMonitor()
    local m = { x = 1, y = 1, scale = 1, tc = 1, bc = 32768, blink = false }
    local function size() return math.floor(10 / m.scale), math.floor(4 / m.scale) end
    local function colour(c)
        if type(c) ~= "number" or c < 1 or c > 32768 or 2 ^ math.floor(math.log(c, 2) + 0.5) ~= c then
            error("Invalid colour", 0)
        end
        return c
    end
    m.methods = {
        write = function(s) m.x = m.x + #tostring(s) end,
        blit = function(s, f, b)
            if #s ~= #f or #s ~= #b then error("Arguments must be the same length", 0) end
            m.x = m.x + #s
        end,
        clear = function() end, clearLine = function() end, scroll = function() end,
        setCursorPos = function(x, y) m.x, m.y = math.floor(x), math.floor(y) end,
        getCursorPos = function() return m.x, m.y end,
        setCursorBlink = function(b) m.blink = b end, getCursorBlink = function() return m.blink end,
        setTextColour = function(c) m.tc = colour(c) end, getTextColour = function() return m.tc end,
        setBackgroundColour = function(c) m.bc = colour(c) end, getBackgroundColour = function() return m.bc end,
        getPaletteColour = function() return 0.5, 0.5, 0.5 end, setPaletteColour = function() end,
        isColour = function() return true end,
        getSize = size,
        setTextScale = function(s)
            if type(s) ~= "number" or s < 0.5 or s > 5 then error("Expected number in range 0.5-5", 0) end
            m.scale = s
        end,
        getTextScale = function() return m.scale end,
    }
    m.methods.setTextColor, m.methods.getTextColor = m.methods.setTextColour, m.methods.getTextColour
    m.methods.setBackgroundColor = m.methods.setBackgroundColour
    return m
end

local top, mon0 = fakeMonitor(), fakeMonitor()
local items = { [1] = { name = "minecraft:dirt", count = 3 }, [5] = { name = "minecraft:stone", count = 64 } }
local remote = {
    monitor_0 = { types = { "monitor" }, methods = mon0.methods },
    ["minecraft:chest_0"] = { types = { "minecraft:chest", "inventory" }, methods = {
        size = function() return 27 end, list = function() return items end } },
}
local hub = {
    isWireless = function() return false end, getNameLocal = function() return "computer_7" end,
    getNamesRemote = function() local t = {} for n in pairs(remote) do t[#t + 1] = n end table.sort(t) return t end,
    isPresentRemote = function(n) return remote[n] ~= nil end,
    getTypeRemote = function(n) return table.unpack(remote[n].types) end,
    hasTypeRemote = function(n, t) for _, x in ipairs(remote[n].types) do if x == t then return true end end return false end,
    getMethodsRemote = function(n) local t = {} for k in pairs(remote[n].methods) do t[#t + 1] = k end return t end,
    callRemote = function(n, m, ...) return remote[n].methods[m](...) end,
}
local sidesAttached = {
    top = { types = { "monitor" }, methods = top.methods },
    back = { types = { "modem", "peripheral_hub" }, methods = hub },
    left = { types = { "drive" }, methods = {
        isDiskPresent = function() return true end,
        getDiskLabel = function() error("the label cannot be read", 0) end,
        getDiskID = function() return 4 end, getMountPath = function() return "disk" end,
        getAudioTitle = function() return false end } },
    right = { types = { "modem" }, methods = { isWireless = function() return true end } },
    bottom = { types = { "printer" }, methods = { getPaperLevel = function() return 12 end,
        getInkLevel = function() return 3 end } },
}
local SIDES = { "bottom", "top", "back", "front", "right", "left" }

local native = {
    isPresent = function(n) return sidesAttached[n] ~= nil end,
    getType = function(n) return table.unpack(sidesAttached[n].types) end,
    hasType = function(n, t)
        hasTypeCalls = hasTypeCalls + 1
        for _, x in ipairs(sidesAttached[n].types) do if x == t then return true end end
        return false
    end,
    getMethods = function(n) local t = {} for k in pairs(sidesAttached[n].methods) do t[#t + 1] = k end return t end,
    call = function(n, m, ...)
        nativeCalls = nativeCalls + 1
        local d = sidesAttached[n]
        if not d then error("No peripheral attached", 0) end
        if not d.methods[m] then error("No such method " .. m, 0) end
        return d.methods[m](...)
    end,
}

-- The peripheral API as CC's rom builds it on the native one (same checks, same error levels):
-- CC's own cc.expect where the runtime has it (as rom/apis/peripheral.lua loads it, line 97).
local okE, E = pcall(dofile, "/rom/modules/main/cc/expect.lua")
local expect = okE and type(E) == "table" and E.expect or function(i, v, t1)
    if type(v) ~= t1 then error(("bad argument #%d (expected %s, got %s)"):format(i, t1, type(v)), 3) end
end
local peripheral = {}
local function hubFor(name)
    for _, side in ipairs(SIDES) do
        if native.isPresent(side) and native.hasType(side, "peripheral_hub")
            and native.call(side, "isPresentRemote", name) then return side end
    end
end
function peripheral.getNames()
    local results = {}
    for _, side in ipairs(SIDES) do
        if native.isPresent(side) then
            results[#results + 1] = side
            if native.hasType(side, "peripheral_hub") then
                for _, n in ipairs(native.call(side, "getNamesRemote")) do results[#results + 1] = n end
            end
        end
    end
    return results
end
function peripheral.getType(name)
    expect(1, name, "string")
    if native.isPresent(name) then return native.getType(name) end
    local side = hubFor(name)
    if side then return native.call(side, "getTypeRemote", name) end
end
function peripheral.hasType(name, t)
    expect(1, name, "string") expect(2, t, "string")
    if native.isPresent(name) then return native.hasType(name, t) end
    local side = hubFor(name)
    if side then return native.call(side, "hasTypeRemote", name, t) end
end
function peripheral.getMethods(name)
    expect(1, name, "string")
    if native.isPresent(name) then return native.getMethods(name) end
    local side = hubFor(name)
    if side then return native.call(side, "getMethodsRemote", name) end
end
function peripheral.call(name, method, ...)
    expect(1, name, "string") expect(2, method, "string")
    if native.isPresent(name) then return native.call(name, method, ...) end
    local side = hubFor(name)
    if side then return native.call(side, "callRemote", name, method, ...) end
end
-- rom's wrap: each method calls the global peripheral.call when it runs.
function peripheral.wrap(name)
    local methods = peripheral.getMethods(name)
    if not methods then return nil end
    local result = {}
    for _, method in ipairs(methods) do
        result[method] = function(...) return peripheral.call(name, method, ...) end
    end
    return result
end

-- What the program sees does not change -------------------------------------------

-- The same function, called before and after the hook, must see the same values and errors.
-- (Not a tail call: the error of a bad argument names the caller, this function's line.)
local function probe(...)
    local r = table.pack(peripheral.call(...))
    return table.unpack(r, 1, r.n)
end
local function outcome(...) return table.pack(pcall(probe, ...)) end
local before = {
    outcome(nil, "getSize"), outcome("top", 7), outcome("top", "nope"), outcome("left", "getDiskLabel"),
    outcome("left", "getDiskID"), outcome("top", "getSize"), outcome("top", "setTextColour", 3),
    outcome("monitor_0", "getCursorPos"), outcome("nowhere", "write", "x"),
}

local original = peripheral.call
shadows.install(peripheral, nil, mirror)
assert(peripheral.call ~= original, "hooked")
local after = {
    outcome(nil, "getSize"), outcome("top", 7), outcome("top", "nope"), outcome("left", "getDiskLabel"),
    outcome("left", "getDiskID"), outcome("top", "getSize"), outcome("top", "setTextColour", 3),
    outcome("monitor_0", "getCursorPos"), outcome("nowhere", "write", "x"),
}
for i, b in ipairs(before) do
    local a = after[i]
    eq(a.n, b.n, "case " .. i .. ": as many results")
    for k = 1, b.n do eq(a[k], b[k], "case " .. i .. ": result " .. k) end
end
assert(tostring(after[1][2]):find("monitors_spec.lua", 1, true), "an argument error names the caller: " .. tostring(after[1][2]))

-- A peripheral that is not a monitor costs one lookup: its kind is asked once.
hasTypeCalls = 0
for _ = 1, 5 do peripheral.call("left", "getDiskID") end
eq(hasTypeCalls, 0, "the kind of a name is cached")
local n0 = nativeCalls
peripheral.call("left", "getDiskID")
eq(nativeCalls, n0 + 1, "one native call per call, as without the hook")

-- Drawing through every path ---------------------------------------------------------

local rec = shadows.record("top")
assert(rec, "top is a monitor")
eq(shadows.record("left"), false, "left is not")
local f = shadows.take("top", true)
eq(f.monitor, "top") eq(f.width, 10) eq(f.height, 4) eq(f.scale, 1) eq(f.full, true)
eq(f.rows[1].known, "0000000000", "nothing drawn since the start: every cell unknown")

peripheral.call("top", "setCursorPos", 2, 1)
peripheral.call("top", "write", "hi")
local text, fg, _, known = rec.rows()
eq(text[1]:sub(2, 3), "hi", "peripheral.call draws on the record")
eq(known[1], "0110000000", "the cells written are known")

local mon = peripheral.wrap("top")
mon.setCursorPos(1, 2)
mon.setTextColour(16384)
mon.blit("abc", "123", "fff")
text, fg, _, known = rec.rows()
eq(text[2]:sub(1, 3), "abc", "wrap draws on the record") eq(fg[2]:sub(1, 3), "123")
eq(known[2], "1110000000")
assert(not pcall(mon.blit, "ab", "1", "ff"), "a bad blit raises as it did")
eq(text[2]:sub(1, 3), "abc", "and records nothing")

-- term.redirect(mon): CC's term API calls the redirect target's functions, the wrapped ones.
local term = {}
function term.redirect(t) local old = term.target term.target = t return old end
for _, k in ipairs({ "write", "setCursorPos", "clearLine" }) do term[k] = function(...) return term.target[k](...) end end
term.redirect(mon)
term.setCursorPos(5, 3)
term.write("R")
text, _, _, known = rec.rows()
eq(text[3]:sub(5, 5), "R", "term.redirect(wrapped) draws on the record")
term.clearLine()
_, _, _, known = rec.rows()
eq(known[3], "1111111111", "clearLine knows its row")

local u = shadows.take("top", false)
eq(u.full, false) eq(u.monitor, "top") eq(u.scale, nil, "scale only when full or changed")
eq(#u.rows, 3, "three rows changed")
eq(u.rows[3].known, nil, "a row all known carries no mask")
eq(u.rows[1].known, "0110000000")

-- clear knows every cell; scroll moves knowledge with the text, the new rows known.
mon.clear()
_, _, _, known = rec.rows()
for y = 1, 4 do eq(known[y], "1111111111", "clear knows row " .. y) end
local fr = shadows.take("top", true)
for _, r in ipairs(fr.rows) do eq(r.known, nil, "no mask once all is known") end
rec.forget(top.x, top.y) -- every cell unknown again (as after another computer's drawing)
mon.setCursorPos(1, 4)
mon.write("low")
mon.scroll(2)
text, _, _, known = rec.rows()
eq(text[2]:sub(1, 3), "low", "scroll moves the text")
eq(known[2], "1110000000", "and what is known with it")
eq(known[1], "0000000000")
eq(known[3], "1111111111", "new rows are known") eq(known[4], "1111111111")

-- setTextScale: the size follows and, as CC: Tweaked clears a monitor whose size changes
-- (ServerMonitor.rebuild), every cell is blank and known; the frame is whole with the new scale.
shadows.take("top", false)
mon.setTextScale(0.5)
text, _, _, known = rec.rows()
eq(#text, 8, "rows at scale 0.5")
eq(text[2], (" "):rep(20), "cleared")
eq(known[2], ("1"):rep(20), "and known") eq(known[8], ("1"):rep(20))
mon.setTextScale(0.5)
eq(#(rec.rows()), 8, "the same scale again changes nothing")
local sf = shadows.take("top", false)
eq(sf.full, true, "a resize sends a whole frame") eq(sf.width, 20) eq(sf.scale, 0.5)
-- Another program (or computer) changing the scale: monitor_resize.
top.scale = 1
shadows.event("monitor_resize", "top")
eq(#(rec.rows()), 4, "monitor_resize re-reads the size")
eq(shadows.take("top", false).scale, 1)

-- A shared monitor: another computer moved the cursor; the next frame knows nothing.
mon.clear()
shadows.take("top", false)
top.x, top.y = 9, 3 -- drawn by someone else
local sh = shadows.take("top", false)
assert(sh, "the forgetting is sent")
for _, r in ipairs(sh.rows) do eq(r.known, "0000000000", "row " .. r.y .. " unknown") end
eq(sh.cursor.x, 9, "the cursor is where it really is")
eq(shadows.take("top", false), nil, "once")

-- A remote monitor over the wired modem is shadowed under its network name.
local m0 = peripheral.wrap("monitor_0")
m0.setCursorPos(1, 1)
m0.write("net")
eq((shadows.record("monitor_0").rows())[1]:sub(1, 3), "net")

-- Detach drops the record; re-attached, the monitor starts unknown again.
local topDevice = sidesAttached.top
sidesAttached.top = nil
shadows.event("peripheral_detach", "top")
eq(shadows.take("top", true), nil, "no monitor there now")
eq(shadows.size("top"), nil)
sidesAttached.top = topDevice
shadows.event("peripheral", "top")
local again = shadows.take("top", true)
eq(again.rows[1].known, "0000000000", "a re-attached monitor starts unknown")
local w, h = shadows.size("top")
eq(w, 10) eq(h, 4)

-- Peripherals ----------------------------------------------------------------------

local list = shadows.list()
local byName, names = {}, {}
for _, e in ipairs(list) do byName[e.name] = e names[#names + 1] = e.name end
eq(table.concat(names, ","), "back,bottom,left,minecraft:chest_0,monitor_0,right,top", "sorted, every name")
eq(byName.back.types[2], "peripheral_hub")
eq(byName.back.state.wireless, false) eq(byName.back.state.localName, "computer_7")
eq(table.concat(byName.back.state.remote, ","), "minecraft:chest_0,monitor_0")
eq(byName.right.state.wireless, true) eq(byName.right.state.remote, nil)
eq(byName["minecraft:chest_0"].via, "back", "reached over the wired modem on back")
eq(byName.left.via, nil)
eq(byName["minecraft:chest_0"].state.size, 27) eq(byName["minecraft:chest_0"].state.used, 2)
local drive = byName.left.state
eq(drive.disk, true) eq(drive.id, 4) eq(drive.mountPath, "disk")
eq(drive.label, nil, "a read that fails is left out") eq(drive.audio, nil, "false: not a music disc")
eq(byName.top.state.width, 10) eq(byName.top.state.height, 4) eq(byName.top.state.scale, 1) eq(byName.top.state.colour, true)
eq(byName.bottom.state.paper, 12) eq(byName.bottom.state.ink, 3)
local encoded = json.encode(list)
assert(encoded:find('"methods":[', 1, true), "methods are a JSON array")
local methods = byName.left.methods
table.sort(methods)
eq(methods[1], "getAudioTitle")

-- Turtle -------------------------------------------------------------------------

local turtle = {
    getFuelLevel = function() return "unlimited" end, getFuelLimit = function() return "unlimited" end,
    getSelectedSlot = function() return 5 end,
    getItemDetail = function(i) return items[i] and { name = items[i].name, count = items[i].count } end,
}
local t = shadows.turtle(turtle)
eq(t.fuel, "unlimited") eq(t.fuelLimit, "unlimited") eq(t.selected, 5)
eq(#t.slots, 16, "sixteen slots")
eq(t.slots[1].name, "minecraft:dirt") eq(t.slots[1].count, 3) eq(t.slots[2].count, 0) eq(t.slots[2].name, nil)
eq(t.slots[16].slot, 16)
eq(shadows.turtle(turtle, false).slots, nil, "slots:false leaves them out")

shadows.uninstall()
eq(peripheral.call, original, "the original is back")
local n1 = nativeCalls
peripheral.call("top", "write", "x")
eq(nativeCalls, n1 + 1, "uninstalled: the original again")

-- The screen server ------------------------------------------------------------------

local queued, timers = {}, 0
local function take(name)
    for i, ev in ipairs(queued) do
        if ev[1] == name then table.remove(queued, i) return ev end
    end
end
-- parallel.waitForAny as CC's: every coroutine gets the events it waits for.
local parallel = { waitForAny = function(...)
    local cos = {}
    for i, fn in ipairs({ ... }) do cos[i] = { co = coroutine.create(fn) } end
    local ev = { n = 0 }
    while true do
        for _, c in ipairs(cos) do
            if c.filter == nil or c.filter == ev[1] then
                local ok, filter = coroutine.resume(c.co, table.unpack(ev, 1, ev.n))
                if not ok then error(filter, 0) end
                if coroutine.status(c.co) == "dead" then return end
                c.filter = filter
            end
        end
        ev = table.pack(coroutine.yield())
    end
end }
local fakeTerm = {}
for k, v in pairs(fakeMonitor().methods) do fakeTerm[k] = v end -- a 10 x 4 terminal will do
-- The modules screen.lua loads (libsandbox) use the global os: it is the stub too, until the end.
local realOs = os
os = setmetatable({
    queueEvent = function(...) queued[#queued + 1] = table.pack(...) end,
    pullEventRaw = function(filter) return coroutine.yield(filter) end,
    startTimer = function() timers = timers + 1 return timers end, cancelTimer = function() end,
    epoch = function() return 1733000000000 end, getComputerID = function() return 7 end,
}, { __index = realOs })
local env = setmetatable({
    shell = {}, keys = { enter = 28 }, parallel = parallel, peripheral = peripheral, turtle = turtle,
    term = { native = function() return fakeTerm end }, os = os,
}, { __index = _G })
env._G = env -- no client's shared table here (rawget(_G, "trapdeskClient"))
local abs = ROOT:sub(1, 1) == "/" and ROOT or (io.popen("pwd"):read("*l") .. "/" .. ROOT)
local co = coroutine.create(assert(loadfile(abs .. "servers/screen.lua", "t", env)))
local function feed(...) local ok, e = coroutine.resume(co, ...) assert(ok, tostring(e)) end
feed()
local serve = take("trapdesk_serve")
local owner = serve[2]
eq(table.concat(serve[3], ","), "input,screen,peripherals,turtle", "peripherals and, on a turtle, turtle")
local rid = 0
local function request(kind, payload)
    rid = rid + 1
    feed("trapdesk_request", owner, "1/r" .. rid, kind, payload, 30000)
    local r = take("trapdesk_respond")
    assert(r, kind .. " answered")
    local body = type(r[4]) == "table" and table.concat(r[4]) or r[4]
    return r[3], json.decode(body)
end

local ok, frame = request("screen", '{"monitor":"top"}')
eq(ok, true) eq(frame.monitor, "top") eq(frame.scale, 1) eq(frame.watching, false)
eq(frame.rows[1].known, "0000000000", "the server's own shadow starts unknown")
ok, frame = request("screen", '{"monitor":"nowhere"}')
eq(ok, false) eq(frame.code, "not_found") eq(frame.message, "no monitor nowhere on this computer")
ok, frame = request("screen", '{"monitor":"left"}')
eq(frame.code, "not_found", "a drive is no monitor")
ok, frame = request("screen", '{"monitor":""}')
eq(frame.code, "not_found", "an empty name is no monitor, not the terminal")
ok, frame = request("screen", '{"monitor":5}')
eq(frame.code, "bad_request") eq(frame.message, "monitor must be a string")

-- Watching is per display: the monitor's updates carry its name; the terminal sends nothing.
ok, frame = request("screen", '{"monitor":"top","watch":true}')
eq(frame.watching, true)
ok, frame = request("screen", '{}')
eq(frame.watching, false, "the terminal is not watched") eq(frame.monitor, nil) eq(frame.rows[1].known, nil)
queued = {}
feed("trapdesk_screen_tick")
peripheral.call("top", "setCursorPos", 1, 1)
peripheral.call("top", "write", "seen")
fakeTerm.write("term") -- the terminal changes too, unwatched
feed("timer", timers)
local upd = take("trapdesk_screen")
assert(upd, "an update of the watched monitor")
local um = json.decode(upd[2])
eq(um.type, "screen") eq(um.monitor, "top") eq(um.rows[1].text:sub(1, 4), "seen")
eq(take("trapdesk_screen"), nil, "nothing for the unwatched terminal")
feed("timer", timers)
eq(take("trapdesk_screen"), nil, "nothing changed, nothing sent")
ok, frame = request("screen", '{"monitor":"top","watch":false}')
eq(frame.watching, false)
-- Nobody watches: the pending tick starts no other.
local lastTimer = timers
feed("timer", timers)
eq(timers, lastTimer, "no timer while nothing is watched")
-- The terminal watched alone: its updates carry no monitor.
ok, frame = request("screen", '{"watch":true}')
eq(frame.watching, true)
queued = {}
feed("trapdesk_screen_tick")
eq(timers, lastTimer + 1, "watching the terminal starts the ticks")
fakeTerm.setCursorPos(1, 2)
fakeTerm.write("tty")
peripheral.call("top", "write", "unwatched")
feed("timer", timers)
upd = take("trapdesk_screen")
assert(upd, "an update of the watched terminal")
um = json.decode(upd[2])
eq(um.monitor, nil) eq(um.rows[1].y, 2) eq(um.rows[1].text:sub(1, 3), "tty")
eq(take("trapdesk_screen"), nil, "nothing for the unwatched monitor")
request("screen", '{"watch":false}')

-- Touch.
local function input(payload)
    queued = {}
    local okI, body = request("input", payload)
    return okI, body, take("monitor_touch")
end
local okT, body, ev = input('{"monitor":"top","steps":[{"touch":{"x":3,"y":4}}]}')
eq(okT, true) eq(body.events, 1)
eq(ev[2], "top") eq(ev[3], 3) eq(ev[4], 4)
local function refused(payload, code, message)
    local okR, b, e = input(payload)
    eq(okR, false, payload) eq(b.code, code, payload) eq(e, nil, "nothing queued for " .. payload)
    if message then eq(b.message, message) end
end
refused('{"steps":[{"touch":{"x":1,"y":1}}]}', "bad_request", "steps[1].touch needs monitor")
refused('{"monitor":"top","steps":[{"text":"hi"}]}', "bad_request", "steps[1]: only touch steps go to a monitor")
refused('{"monitor":"top","steps":[{"key":"enter"}]}', "bad_request")
refused('{"monitor":"top","steps":[{"touch":{"x":11,"y":1}}]}', "bad_request", "steps[1].touch.x must be an integer within 1..10")
refused('{"monitor":"top","steps":[{"touch":{"x":1,"y":0}}]}', "bad_request", "steps[1].touch.y must be an integer within 1..4")
refused('{"monitor":"top","steps":[{"touch":{"x":1.5,"y":1}}]}', "bad_request")
refused('{"monitor":"top","steps":[{"touch":{"x":"1","y":1}}]}', "bad_request")
refused('{"monitor":"top","steps":[{"touch":{"x":1,"y":1}},{"touch":{"x":1,"y":9}}]}', "bad_request")
refused('{"monitor":"nowhere","steps":[{"touch":{"x":1,"y":1}}]}', "not_found", "no monitor nowhere on this computer")

-- Peripherals and turtle through the server.
local okP, p = request("peripherals", '{}')
eq(okP, true) eq(#p.peripherals, 7) eq(p.peripherals[1].name, "back")
local okU, tu = request("turtle", '{}')
eq(okU, true) eq(#tu.slots, 16) eq(tu.fuel, "unlimited")
okU, tu = request("turtle", '{"slots":false}')
eq(tu.slots, nil)
okU, tu = request("turtle", '{"slots":1}')
eq(okU, false) eq(tu.message, "slots must be a boolean")
os = realOs
print("monitors_spec: ok")
