--- trapdesk startup, installed as /startup/trapdesk.lua.
--
-- Starts the daemon (servers/sandbox.lua), the mcp-computer-server and the
-- screen server (servers/screen.lua, the terminal mirror) in the
-- background while the player keeps a working shell. On an advanced computer
-- (multishell with shell.openTab) each gets its own tab and this file returns
-- at once. Otherwise it runs them beside a nested shell, and never returns
-- while that shell is open (CC runs the remaining startup files first only if
-- they come before this one). The nested shell starts once the client has
-- heard from the host (or after 5 s), so the "trapdesk: linked as ..." line
-- comes above its first prompt; from then on the background programs draw on
-- a hidden terminal, so nothing they print lands on the player's prompt. Does
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
-- ending the scheduler below, which would take the player's shell with it.
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

-- Once the player's shell runs, the background programs draw on a terminal of their own that
-- nobody sees: a line they print ("trapdesk: ...") would land on the player's prompt, and the
-- shell's read() would never know to redraw it. Everything they say is in daemon.log too.
local function hiddenTerm(parent)
    if window and window.create then
        local w, h = parent.getSize()
        return window.create(parent, 1, 1, w, h, false)
    end
    -- No window API: a terminal that keeps its cursor and discards what is drawn.
    local x, y, blink = 1, 1, false
    local t = {}
    for k, f in pairs(parent) do
        if type(f) == "function" then
            if k:match("^get") or k:match("^is") or k:match("^native") then t[k] = f else t[k] = function() end end
        end
    end
    function t.getCursorPos() return x, y end
    function t.setCursorPos(a, b) x, y = math.floor(a), math.floor(b) end
    function t.getCursorBlink() return blink end
    function t.setCursorBlink(b) blink = b and true or false end
    function t.write(s) x = x + #tostring(s) end
    function t.blit(s) x = x + #s end
    return t
end

-- How long the player's shell waits for the client's first word from the host, so that the
-- "linked as" line (or why not) is printed above the first prompt instead of over it.
local FIRST_WORD = 5

local parent = term.current()
local procs = { { co = coroutine.create(background), term = parent } }
local shellProc
local phase = "linking" -- linking | ready | shell
local waitTimer = os.startTimer(FIRST_WORD)

-- Each program draws on its own terminal while it runs, as multishell does for its tabs.
local function resume(p, ev)
    if p.filter ~= nil and p.filter ~= ev[1] and ev[1] ~= "terminate" then return end
    local prev = term.redirect(p.term)
    local ok, f = coroutine.resume(p.co, table.unpack(ev, 1, ev.n))
    p.term = term.current()
    term.redirect(prev)
    if not ok then error(f, 0) end
    p.filter = f
end

local ev = { n = 0 }
while true do
    for _, p in ipairs(procs) do
        if coroutine.status(p.co) ~= "dead" then resume(p, ev) end
    end
    if shellProc and coroutine.status(shellProc.co) == "dead" then return end
    if phase == "linking" and (ev[1] == "trapdesk_link" or ev[1] == "timer" and ev[2] == waitTimer) then
        -- One more round first: whoever else waits on the same event (the installer's report)
        -- prints its lines before the prompt appears.
        phase = "ready"
        os.queueEvent("trapdesk_shell_start")
    elseif phase == "ready" and ev[1] == "trapdesk_shell_start" then
        phase = "shell"
        local _, y = parent.getCursorPos()
        procs[1].term = hiddenTerm(parent)
        procs[1].term.setCursorPos(1, y)
        shellProc = { co = coroutine.create(playerShell), term = parent }
        procs[#procs + 1] = shellProc
        resume(shellProc, { n = 0 })
        if coroutine.status(shellProc.co) == "dead" then return end
    end
    ev = table.pack(os.pullEventRaw())
end
