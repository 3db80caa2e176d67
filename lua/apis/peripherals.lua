--- Monitor shadows, the peripherals list and a turtle's state (docs/protocol.md "Screen").
--
-- `install(P)` hooks `P.call` (the global `peripheral.call`, shared by every program on the
-- computer) once. CC's `peripheral.wrap` builds each method as a closure that calls the global
-- `peripheral.call` when it runs (rom/apis/peripheral.lua, `wrap`, lines 281-303 of CC:
-- Tweaked's source), so `peripheral.call`, `wrap`, `find` and `term.redirect(wrapped)` (and a
-- `window` on a monitor) all pass through the hook. For a monitor, the hook runs the drawing
-- methods through a record of apis/mirror.lua (a term-like table whose functions call the
-- original `peripheral.call(name, method, ...)`): the original runs first, so what the program
-- gets (values, errors) is what it got before, and nothing is recorded when it raises. Every
-- other call is a tail call of the original: no frame is added, so an error names the same
-- level, and it costs two type checks and one table lookup (the kind of each name is cached
-- until a `peripheral` or `peripheral_detach` event).
--
-- A record starts with every cell unknown (a monitor cannot be read back) and learns what this
-- computer draws; `take` compares the monitor's real cursor with the record's to see that
-- another computer drew on a shared monitor, and then forgets every cell.

local M = {}
local ARRAY = { __jsontype = "array" } -- a JSON array even when empty (apis/json.lua)
-- The methods of a monitor the record reads or wraps (CC: Tweaked's TermMethods and
-- MonitorPeripheral); both spellings where CC has two.
local METHODS = "write blit clear clearLine scroll setCursorPos setCursorBlink setTextColour setTextColor "
    .. "setBackgroundColour setBackgroundColor setPaletteColour setPaletteColor setTextScale getSize "
    .. "getCursorPos getCursorBlink getTextColour getBackgroundColour getPaletteColour isColour"

local P, call, hook, mirror
-- CC's own argument check, the one rom/apis/peripheral.lua's `call` uses (line 97): a tail call
-- cannot name the function in its message ("bad argument #1 to 'call'"), so the hook checks
-- first, as `call` would, from the caller's own call. Runtimes without the module skip it.
local okE, E = pcall(dofile, "/rom/modules/main/cc/expect.lua")
local check = okE and type(E) == "table" and E.expect
local kinds = {} -- name -> its record (a monitor) or false; rebuilt after attach/detach events
local recs = {}  -- monitor name -> record, kept until its monitor is detached

local function record(name)
    local k = kinds[name]
    if k ~= nil or type(name) ~= "string" then return k end
    local ok, mon = pcall(P.hasType, name, "monitor")
    k = false
    if ok and mon then
        k = recs[name]
        if not k then
            local t = {}
            for m in METHODS:gmatch("%S+") do t[m] = function(...) return call(name, m, ...) end end
            ok, k = pcall(mirror.install, t, true)
            if not ok then return false end -- detached meanwhile: asked again next time
            recs[name] = k
        end
    end
    kinds[name] = k
    return k
end
M.record = record

--- Hooks `P.call` (once: a second install of the screen server hooks the original, kept in
-- `keep`, the client's shared table). `mir` is apis/mirror.lua.
function M.install(p, keep, mir)
    P, mirror = p, mir
    keep = keep or {}
    keep.peripheralCall = keep.peripheralCall or P.call
    call = keep.peripheralCall
    hook = function(name, method, ...)
        if check and (type(name) ~= "string" or type(method) ~= "string") then
            check(1, name, "string")
            check(2, method, "string")
        end
        local k = kinds[name]
        if k == nil then k = record(name) end
        local w = k and k.wrappers[method]
        if w then return w(...) end
        return call(name, method, ...)
    end
    P.call = hook
end

--- Puts the original back, unless a newer install hooked it since.
function M.uninstall()
    if P and P.call == hook then P.call = call end
end

--- Follows `peripheral`, `peripheral_detach` and `monitor_resize` events.
function M.event(ev, name)
    if ev == "peripheral" or ev == "peripheral_detach" then
        kinds = {}
        if ev == "peripheral_detach" then recs[name] = nil end
    elseif ev == "monitor_resize" and recs[name] then
        pcall(recs[name].checkSize)
    end
end

--- Every record's next take is a whole frame.
function M.resync()
    for _, r in pairs(recs) do r.full, r.changed = true, true end
end

--- The frame of monitor `name` (nil when no monitor of that name is attached now), or nil
-- when `full` is false and nothing changed.
function M.take(name, full)
    local r = record(name)
    if not r then return nil end
    local ok, x, y = pcall(call, name, "getCursorPos")
    local rx, ry = r.cursor()
    if ok and (x ~= rx or y ~= ry) then r.forget(x, y) end
    pcall(r.checkSize)
    local msg = r.take(full)
    if msg then
        msg.monitor = name
        local okS, s = pcall(call, name, "getTextScale")
        if okS and (msg.full or s ~= r.scale) then msg.scale, r.scale = s, s end
    end
    return msg
end

--- The size of monitor `name` now, or nil when none of that name is attached.
function M.size(name)
    if record(name) then return call(name, "getSize") end
end

-- Short state by peripheral type: `r(key, method)` stores a method's first result under `key`
-- (left out when the call fails).
local STATE = {
    modem = function(r, s)
        if r("wireless", "isWireless") == false then
            r("localName", "getNameLocal")
            s.remote = setmetatable(r(nil, "getNamesRemote") or {}, ARRAY)
        end
    end,
    inventory = function(r, s)
        r("size", "size")
        local l = r(nil, "list")
        if type(l) == "table" then
            s.used = 0
            for _ in pairs(l) do s.used = s.used + 1 end
        end
    end,
    drive = function(r, s)
        if r("disk", "isDiskPresent") then
            r("label", "getDiskLabel")
            r("id", "getDiskID")
            r("mountPath", "getMountPath")
            -- false: a disk that is not a music disc.
            s.audio = r(nil, "getAudioTitle") or nil
        end
    end,
    monitor = function(r, s)
        r("scale", "getTextScale")
        r("colour", "isColour")
        s.width, s.height = r(nil, "getSize")
    end,
    printer = function(r)
        r("paper", "getPaperLevel")
        r("ink", "getInkLevel")
    end,
}

--- The answer to `peripherals`: every name of `getNames`, sorted, with its types, methods,
-- the side of the wired modem it is reached through (`via`) and for some types a short state.
function M.list()
    local names, via, out = P.getNames(), {}, setmetatable({}, ARRAY)
    table.sort(names)
    for _, n in ipairs(names) do
        if P.hasType(n, "peripheral_hub") then
            local ok, remote = pcall(P.call, n, "getNamesRemote")
            for _, r in ipairs(ok and remote or {}) do via[r] = n end
        end
    end
    for _, n in ipairs(names) do
        local e = { name = n, types = { P.getType(n) }, methods = setmetatable(P.getMethods(n) or {}, ARRAY), via = via[n] }
        for _, t in ipairs(e.types) do
            if STATE[t] then
                local s = e.state or {}
                e.state = s
                STATE[t](function(key, method)
                    local res = table.pack(pcall(P.call, n, method))
                    if not res[1] then return end
                    if key then s[key] = res[2] end
                    return table.unpack(res, 2, res.n)
                end, s)
            end
        end
        out[#out + 1] = e
    end
    return out
end

--- The answer to `turtle`: fuel, limit, selected slot and (unless `slots` is false) the 16
-- slots. CC's `getFuelLevel` answers "unlimited" when the world turns fuel off.
function M.turtle(T, slots)
    local a = { fuel = T.getFuelLevel(), fuelLimit = T.getFuelLimit(), selected = T.getSelectedSlot() }
    if slots ~= false then
        a.slots = {}
        for i = 1, 16 do
            local d = T.getItemDetail(i) or {}
            a.slots[i] = { slot = i, count = d.count or 0, name = d.name, damage = d.damage }
        end
    end
    return a
end

return M
