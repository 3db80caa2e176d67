--- The client's root directory (with a trailing slash), from the path of the server that runs
-- (`shell.getRunningProgram()`, nil without a shell): the directory above its `servers/`, so a
-- copy run from a disk or a test directory uses its own files; else the installed /trapdesk/.
--
-- Each server loads it from beside its own directory:
--     local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/servers/"
--     local root = dofile(here .. "../apis/root.lua")(shell)

--- `fs.getDir` on a path as `shell.getRunningProgram` gives it (no leading slash), without
-- needing `fs` (tests/lua loads this under stock Lua).
local function getDir(p) return p:match("^(.*)/[^/]*$") or "" end

return function(shell)
    if shell and shell.getRunningProgram then
        local prog = shell.getRunningProgram()
        if type(prog) == "string" and prog:find("servers/[^/]*$") then
            local dir = getDir(getDir(prog))
            return dir == "" and "/" or "/" .. dir .. "/"
        end
    end
    return "/trapdesk/"
end
