--- The client's root directory (with a trailing slash): the one rule for where the client's
-- files are, which every part of it follows.
--
-- A file of the client finds its siblings from its own chunk name (`dofile` names a chunk
-- "@path" on CC: Tweaked, CraftOS-PC, the emulator and PUC Lua), so a copy run from a disk or
-- a test directory uses its own files. This module applies that rule to itself: the root is
-- the folder above the `apis/` that holds this file. Only where a chunk has no such name
-- (loaded some other way) does it fall back to the running server's path
-- (`shell.getRunningProgram()`, the folder above its `servers/`), then to the installed
-- /trapdesk/.
--
-- Each server loads it from beside its own directory:
--     local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/servers/"
--     local root = dofile(here .. "../apis/root.lua")(shell)

--- `fs.getDir` on a path as `shell.getRunningProgram` gives it (no leading slash), without
-- needing `fs` (tests/lua loads this under stock Lua).
local function getDir(p) return p:match("^(.*)/[^/]*$") or "" end

-- A folder as a root: `..` resolved where `fs` can (a server loads this file as
-- ".../servers/../apis/root.lua"), one trailing slash.
local function asRoot(dir)
    if fs and fs.combine then
        local absolute = dir:sub(1, 1) == "/"
        dir = fs.combine(dir, "")
        if dir == "" then return absolute and "/" or "" end
        return (absolute and "/" or "") .. dir .. "/"
    end
    return dir
end

local source = debug and debug.getinfo and debug.getinfo(1, "S").source or ""
local own = source:match("^@(.*)apis/root%.lua$")

--- The client's root.
-- @tparam[opt] table shell The running shell (only asked when this file's chunk name does
-- not say where it is).
-- @treturn string The root, ending in "/".
return function(shell)
    if own then return asRoot(own) end
    if shell and shell.getRunningProgram then
        local prog = shell.getRunningProgram()
        if type(prog) == "string" and prog:find("servers/[^/]*$") then
            local dir = getDir(getDir(prog))
            return dir == "" and "/" or "/" .. dir .. "/"
        end
    end
    return "/trapdesk/"
end
