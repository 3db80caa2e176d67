-- The demo turtle's program: refuels from its coal when it runs low, then moves forward and
-- back, printing the fuel it spends (the emulator's world is empty: nothing is in the way).
-- Usage: programs/tunnel.lua <length>
local length = tonumber(({ ... })[1] or "")
if not length or length < 1 then
    printError("usage: programs/tunnel.lua <length>")
    return
end
local function fuel() return turtle.getFuelLevel() end
if fuel() ~= "unlimited" and fuel() < length * 2 then
    for slot = 1, 16 do
        turtle.select(slot)
        if turtle.refuel(0) then
            turtle.refuel(math.ceil((length * 2 - fuel()) / 80))
            break
        end
    end
    turtle.select(1)
end
print(("fuel %s, tunnelling %d blocks"):format(tostring(fuel()), length))
local moved = 0
for i = 1, length do
    local ok, why = turtle.forward()
    if not ok then printError("stopped: " .. why) break end
    moved = i
    print(("block %d, fuel %s"):format(i, tostring(fuel())))
end
turtle.turnLeft() turtle.turnLeft()
for _ = 1, moved do turtle.forward() end
turtle.turnLeft() turtle.turnLeft()
print("back home, fuel " .. tostring(fuel()))
return moved
