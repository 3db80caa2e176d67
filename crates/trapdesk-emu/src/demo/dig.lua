-- A pretend mining program for the demo computers: it "digs" a shaft layer by layer, printing
-- as it goes, so that run-file with arguments, live output and cancel have something to show.
-- Usage: programs/dig.lua <depth> [shaft name]
local args = { ... }
local depth = tonumber(args[1] or "")
if not depth or depth < 1 then
    printError("usage: programs/dig.lua <depth> [shaft name]")
    return
end
local name = args[2] or "shaft"
local blocks = { "stone", "stone", "dirt", "gravel", "coal ore", "stone", "iron ore", "andesite" }
print(("Digging %q down %d layers"):format(name, depth))
local mined = {}
for layer = 1, depth do
    local block = blocks[(layer * 7) % #blocks + 1]
    mined[block] = (mined[block] or 0) + 1
    print(("layer %d: %s"):format(layer, block))
    sleep(0.5)
end
print("done")
return depth, mined
