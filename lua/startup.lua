--- trapdesk startup, installed as /startup/trapdesk.lua.
--
-- Starts the daemon (servers/sandbox.lua), the mcp-computer-server and the
-- screen server (servers/screen.lua, the terminal mirror) in the
-- background while the player keeps a working shell. On an advanced computer
-- (multishell with shell.openTab) each gets its own tab and this file returns
-- at once. Otherwise it runs them beside a nested shell with
-- parallel.waitForAny, and never returns while that shell is open (CC runs the
-- remaining startup files first only if they come before this one). Does
-- nothing when the setting `sandbox.url` is unset.

local ROOT = "/trapdesk/"
do
    -- Run from somewhere else (tests, a disk): use the directory this file is in,
    -- unless it is the installed copy in /startup.
    local prog = shell and shell.getRunningProgram and shell.getRunningProgram()
    if type(prog) == "string" and fs.getName(prog) == "startup.lua" then
        local dir = fs.getDir(prog)
        if fs.exists(fs.combine(dir, "servers/sandbox.lua")) then ROOT = dir == "" and "/" or "/" .. dir .. "/" end
    end
end

-- Before anything reads a file: finish or undo any write-file a crash interrupted, so every
-- file holds its old content or the new one (apis/libmcpcomputer.lua, "A write replaces").
do
    local ok, lib = pcall(dofile, ROOT .. "apis/libmcpcomputer.lua")
    if ok and type(lib) == "table" and lib.recoverWrites then
        lib.JOURNAL = ROOT .. "journal"
        pcall(lib.recoverWrites)
    end
end

if not settings.get("sandbox.url") then return end

local DAEMON = ROOT .. "servers/sandbox.lua"
local SERVER = ROOT .. "servers/mcp-computer-server.lua"
local SCREEN = ROOT .. "servers/screen.lua"

if multishell and shell.openTab then
    local d = shell.openTab(DAEMON)
    local s = shell.openTab(SERVER)
    local m = shell.openTab(SCREEN)
    if d and multishell.setTitle then multishell.setTitle(d, "trapdesk") end
    if s and multishell.setTitle then multishell.setTitle(s, "mcp") end
    if m and multishell.setTitle then multishell.setTitle(m, "screen") end
    return
end

-- Keep a program that ends (stopped by a newer instance, or crashed) from
-- ending the waitForAny below, which would take the player's shell with it.
local function background()
    local ok, err = pcall(parallel.waitForAll,
        function() shell.run(DAEMON) end,
        function() shell.run(SERVER) end,
        function() shell.run(SCREEN) end)
    if not ok then printError("trapdesk: " .. tostring(err)) end
    while true do coroutine.yield("trapdesk_never") end
end

local function playerShell()
    shell.run("shell")
end

-- The background programs start first, so that the screen server's mirror is recording before
-- the player's shell draws its first prompt.
if parallel and parallel.waitForAny then
    parallel.waitForAny(background, playerShell)
else
    -- No parallel API: a minimal round robin with the same semantics.
    local cos = { coroutine.create(background), coroutine.create(playerShell) }
    local filters, ev = {}, { n = 0 }
    while true do
        for i, co in ipairs(cos) do
            if filters[i] == nil or filters[i] == ev[1] or ev[1] == "terminate" then
                local ok, f = coroutine.resume(co, table.unpack(ev, 1, ev.n))
                if not ok then error(f, 0) end
                if coroutine.status(co) == "dead" then return end
                filters[i] = f
            end
        end
        ev = table.pack(os.pullEventRaw())
    end
end
