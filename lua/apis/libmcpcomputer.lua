--- The client's request primitives under their old single name, for callers written before
-- the split (an older `startup.lua` recovering writes at boot, scripts that `dofile` it).
-- Everything lives in its own module beside this file:
--
-- * apis/descriptors.lua: return values as Result descriptors;
-- * apis/capture.lua: what a chunk prints and draws;
-- * apis/run.lua: running chunks and programs;
-- * apis/files.lua: files, within the disk quota.
--
-- Reading a name finds it in those modules (each loaded when first needed); setting `JOURNAL`
-- sets the files module's.
--
-- @module libmcpcomputer

local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"

-- Loaded on first use, in this order: `startup.lua` only needs `recoverWrites` at boot, and
-- loading all four there made the boot slower for nothing.
local names = { "files.lua", "run.lua", "capture.lua", "descriptors.lua" }
local loaded = {}
local function module(i)
    if not loaded[i] then loaded[i] = dofile(here .. names[i]) end
    return loaded[i]
end

return setmetatable({}, {
    __index = function(_, k)
        for i = 1, #names do
            local v = module(i)[k]
            if v ~= nil then return v end
        end
    end,
    __newindex = function(t, k, v)
        if k == "JOURNAL" then module(1).JOURNAL = v else rawset(t, k, v) end
    end,
})
