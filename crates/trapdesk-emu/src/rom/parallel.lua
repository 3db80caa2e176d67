-- parallel: run functions as coroutines side by side, each getting the events its filter asks
-- for (and `terminate`), until one (waitForAny) or all (waitForAll) have finished.
local parallel = {}

local function run(fns, need_all)
    local cos, filters = {}, {}
    for i, f in ipairs(fns) do
        if type(f) ~= "function" then error("bad argument #" .. i .. " (function expected, got " .. type(f) .. ")", 3) end
        cos[i] = coroutine.create(f)
    end
    local n, alive = #cos, #cos
    if n == 0 then return nil end
    local ev = { n = 0 }
    while true do
        for i = 1, n do
            local co = cos[i]
            if co and (filters[i] == nil or filters[i] == ev[1] or ev[1] == "terminate") then
                local r = table.pack(coroutine.resume(co, table.unpack(ev, 1, ev.n)))
                if not r[1] then error(r[2], 0) end
                filters[i] = r[2]
                if coroutine.status(co) == "dead" then
                    cos[i] = nil
                    alive = alive - 1
                    if not need_all or alive == 0 then return i end
                end
            end
        end
        ev = table.pack(coroutine.yield())
    end
end

--- Runs the functions until any one finishes; returns its index.
function parallel.waitForAny(...) return run({ ... }, false) end

--- Runs the functions until all have finished.
function parallel.waitForAll(...) run({ ... }, true) end

return parallel
