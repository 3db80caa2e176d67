--- The client's request primitives under their old single name, for callers written before
-- the split (an older `startup.lua` recovering writes at boot, scripts that `dofile` it).
-- Everything lives in its own module beside this file:
--
-- * apis/descriptors.lua: return values as Result descriptors;
-- * apis/capture.lua: what a chunk prints and draws;
-- * apis/run.lua: running chunks and programs;
-- * apis/files.lua: files, within the disk quota.
--
-- Reading a name finds it in those modules; setting `JOURNAL` sets the files module's.
--
-- @module libmcpcomputer

local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"
local modules = {
    dofile(here .. "files.lua"),
    dofile(here .. "run.lua"),
    dofile(here .. "capture.lua"),
    dofile(here .. "descriptors.lua"),
}
local files = modules[1]

return setmetatable({}, {
    __index = function(_, k)
        for _, m in ipairs(modules) do
            local v = m[k]
            if v ~= nil then return v end
        end
    end,
    __newindex = function(t, k, v)
        if k == "JOURNAL" then files.JOURNAL = v else rawset(t, k, v) end
    end,
})
