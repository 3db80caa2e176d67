-- The `turtle` API of a turtle and the `pocket` API of a pocket computer, as CC: Tweaked's
-- TurtleAPI and PocketAPI offer them, over the emulator's natives (crates/trapdesk-emu/src/device.rs,
-- crates/trapdesk-emu/src/turtle.rs). Returns { turtle = ..., pocket = ... }, one of them nil.
local ndevice, nturtle = ...
local pack, unpack, type, error, yield = table.pack, table.unpack, type, error, coroutine.yield

-- Errors of a Java method carry no position ("Slot number 17 out of range").
local function arg_error(i, wanted, v)
    error(("bad argument #%d (%s expected, got %s)"):format(i, wanted, type(v)), 0)
end

-- IArguments.getInt / optInt: a finite number, truncated toward zero.
local function int(i, v, optional)
    if v == nil and optional then return nil end
    if type(v) ~= "number" then arg_error(i, "number", v) end
    if v ~= v or v == math.huge or v == -math.huge then
        error(("bad argument #%d (number expected, got %s)"):format(i, tostring(v)), 0)
    end
    return v >= 0 and math.floor(v) or math.ceil(v)
end

-- TurtleAPI.checkSlot / checkCount.
local function slot_arg(i, v, optional)
    local n = int(i, v, optional)
    if n ~= nil and (n < 1 or n > 16) then error("Slot number " .. n .. " out of range", 0) end
    return n
end
local function count_arg(i, v)
    local n = int(i, v, true)
    if n ~= nil and (n < 0 or n > 64) then error("Item count " .. n .. " out of range", 0) end
    return n
end

-- MethodResult.pullEvent: wait in this coroutine for the answer with our id; `terminate`
-- raises, every other event is passed over (and lost to this coroutine, as on CC).
local function await(event, id)
    while true do
        local ev = pack(yield(event))
        if ev[1] == "terminate" then error("Terminated", 0) end
        if ev[1] == event and ev[2] == id and type(ev[3]) == "boolean" then return ev end
    end
end

-- A `mainThread = true` method: its answer arrives as `task_complete` at the next tick.
local function task(...)
    local ev = await("task_complete", ndevice.task(...))
    if not ev[3] then error(ev[4], 0) end
    return unpack(ev, 4, ev.n)
end

local api = {}

if nturtle then
    local turtle = {}
    -- TurtleBrain.executeCommand: queued, answered by `turtle_response`.
    local function command(name, a, b)
        local id, refused = ndevice.issue(name, a, b)
        if not id then return false, refused end
        local ev = await("turtle_response", id)
        return unpack(ev, 3, ev.n)
    end
    for _, name in ipairs({ "forward", "back", "up", "down", "turnLeft", "turnRight",
        "detect", "detectUp", "detectDown", "inspect", "inspectUp", "inspectDown",
        "compare", "compareUp", "compareDown" }) do
        turtle[name] = function() return command(name) end
    end
    for _, name in ipairs({ "drop", "dropUp", "dropDown", "suck", "suckUp", "suckDown" }) do
        turtle[name] = function(count) return command(name, count_arg(1, count)) end
    end
    -- dig/attack take an optional side ("left" or "right").
    for _, name in ipairs({ "dig", "digUp", "digDown", "attack", "attackUp", "attackDown" }) do
        turtle[name] = function(side)
            if side ~= nil then
                if type(side) ~= "string" then arg_error(1, "string", side) end
                local s = side:lower()
                if s ~= "left" and s ~= "right" then
                    error("bad argument #1 (unknown option " .. side .. ")", 0)
                end
            end
            return command(name)
        end
    end
    function turtle.select(slot) return command("select", slot_arg(1, slot)) end
    function turtle.refuel(count)
        local n = int(1, count, true)
        if n ~= nil and n < 0 then error("Refuel count " .. n .. " out of range", 0) end
        return command("refuel", n)
    end
    function turtle.transferTo(slot, count)
        local s = slot_arg(1, slot)
        return command("transferTo", s, count_arg(2, count))
    end
    function turtle.getFuelLevel() return nturtle.getFuelLevel() end
    function turtle.getFuelLimit() return nturtle.getFuelLimit() end
    function turtle.getSelectedSlot() return nturtle.getSelectedSlot() end
    function turtle.getItemCount(slot) return nturtle.getItemCount(slot_arg(1, slot, true)) end
    function turtle.getItemSpace(slot) return nturtle.getItemSpace(slot_arg(1, slot, true)) end
    function turtle.getItemDetail(slot, detailed)
        local s = slot_arg(1, slot, true)
        if detailed ~= nil and type(detailed) ~= "boolean" then arg_error(2, "boolean", detailed) end
        -- The detailed form reads the slot on the main thread (a tick later).
        if detailed then task() end
        return nturtle.getItemDetail(s, detailed)
    end
    api.turtle = turtle
end

if ndevice.kind == "pocket" then
    -- PocketAPI, held by a player with no upgrade in their inventory and none equipped.
    local pocket = {}
    function pocket.equipBack() return task(false, "Cannot find a valid upgrade") end
    function pocket.unequipBack() return task(false, "Nothing to unequip") end
    api.pocket = pocket
end

return api
