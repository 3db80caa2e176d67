-- trapdesk-startup-wrapper
--
-- THIS IS TRAPDESK'S STARTUP FILE. YOUR OWN STARTUP PROGRAM IS NOW startup.player.lua:
--   edit startup.player.lua
-- It runs at every boot; /trapdesk/uninstall.lua puts it back.
--
-- Why a wrapper: CC's rom/startup.lua runs /startup.lua first and the startup/ folder only after
-- it returns, so a startup program that never returns (a farm, a turtle's loop) would keep
-- trapdesk from ever starting.
--
-- What it does: starts the daemon (servers/sandbox.lua), the mcp-computer-server and the screen
-- server in the background, in a scheduler of its own (no multishell tabs: the player's shell
-- keeps the whole screen on every kind of computer), and runs the player's part in one coroutine
-- beside them. That coroutine is resumed only with the player's events: the client's internal
-- `trapdesk_*` events, the timers the client started and its own socket's `websocket_*`
-- events are withheld, so the client wakes the player's programs as little as possible.
-- Runs only the player's own program (and returns) when the setting `sandbox.url` is unset,
-- or when the client already runs (this file run a second time).
-- Ending the player's shell (`exit`) shuts the computer down, as ending CC's top-level shell does.

-- The one place that does not follow apis/root.lua: this file is how the client is found (the
-- installed wrapper is /startup.lua, outside the client's folder), so it looks for the client
-- beside itself (a copy in a test directory or on a disk) and else takes the installed one.
local ROOT = "/trapdesk/"
local BASE = "/"
do
    local prog = shell and shell.getRunningProgram and shell.getRunningProgram()
    if type(prog) == "string" then
        local dir = fs.getDir(prog)
        BASE = "/" .. dir
        -- Run from the client's own folder (tests, a copy): its files are beside this one.
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

local setup = dofile(ROOT .. "apis/setup.lua")

--- The player's own startup program.
local function playerProgram()
    local own = "/" .. fs.combine(BASE, setup.PLAYER)
    if fs.exists(own) and not fs.isDir(own) then shell.run(own) end
end

--- The player's part, in CC's order: their startup program, then the startup/ folder's files.
local function playerStartups()
    playerProgram()
    local folder = "/" .. fs.combine(BASE, "startup")
    if fs.isDir(folder) then
        for _, name in ipairs(fs.list(folder)) do
            local p = fs.combine(folder, name)
            if not fs.isDir(p) then shell.run("/" .. p) end
        end
    end
end

-- One client per computer, however often this file runs: a marker in the computer's one _G.
-- Returning, only the player's own program runs here: at boot CC goes on with the startup/
-- folder itself.
if not settings.get("sandbox.url") or _G.trapdeskClient then
    playerProgram()
    return
end

local DAEMON = ROOT .. "servers/sandbox.lua"
local SERVER = ROOT .. "servers/mcp-computer-server.lua"
local SCREEN = ROOT .. "servers/screen.lua"

-- The client's socket is to `sandbox.url` (plus a query the daemon adds); its websocket_*
-- events (CC names the URL as their first parameter) are the client's. HTTP events are not
-- withheld: a player's program may fetch from the same host (the installer line kept in a
-- startup program does), and the client's own HTTP is rare (an upgrade).
local clientSocket = (settings.get("sandbox.url") or ""):match("^[^?#]*")
-- The daemon dials 127.0.0.1 for localhost (servers/sandbox.lua, connect).
local clientSocket127 = clientSocket:gsub("^(wss?://)localhost([:/])", "%1127.0.0.1%2")
local function isClientSocket(url)
    if type(url) ~= "string" then return false end
    local base = url:match("^[^?#]*")
    return base == clientSocket or base == clientSocket127
end

local clientTimers = {}

--- Whether the player's coroutine is resumed with `ev`.
local function forPlayer(ev)
    local name = ev[1]
    if type(name) ~= "string" then return true end
    if name:sub(1, 9) == "trapdesk_" then return false end
    if name == "timer" or name == "alarm" then
        if clientTimers[ev[2]] then
            clientTimers[ev[2]] = nil
            return false
        end
        return true
    end
    if name:sub(1, 10) == "websocket_" then return not isClientSocket(ev[2]) end
    return true
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

local parent = term.current()
local procs = {}

local phase = "linking" -- linking | ready | player

-- The one hidden terminal the client's programs share once the player's shell runs (nobody
-- sees it, so they may share it): passing an event from one of them to the next then needs no
-- term.redirect, which walks every function of the native terminal each time (CC's
-- rom/apis/term.lua, term.redirect).
local hidden

local function spawn(name, fn, client)
    -- Once the player's shell runs, a client program started later draws nowhere either.
    local t = client and phase == "player" and hidden or parent
    local p = { name = name, co = coroutine.create(fn), term = t, client = client }
    procs[#procs + 1] = p
    return p
end

-- The client's programs start again from the files on disk (after an upgrade): a new instance
-- stops the one before it (each queues `trapdesk_stop` for its own name when it starts).
local function startClient()
    -- Keep a program that ends (stopped by a newer instance, or crashed) from ending the
    -- scheduler, which would take the player's shell with it.
    for _, path in ipairs({ DAEMON, SERVER, SCREEN }) do
        spawn(path, function()
            local ok, err = pcall(shell.run, path)
            if not ok then printError("trapdesk: " .. tostring(err)) end
        end, true)
    end
end

local nativeStartTimer, nativeSetAlarm = os.startTimer, os.setAlarm
local function clientStartTimer(...)
    local id = nativeStartTimer(...)
    clientTimers[id] = true
    return id
end
local function clientSetAlarm(...)
    local id = nativeSetAlarm(...)
    clientTimers[id] = true
    return id
end

-- Each program draws on its own terminal while it runs, as multishell does for its tabs. While
-- a client program runs, the timers it starts are marked as the client's (os is one table for
-- every program on the computer, so it is swapped only for the length of the resume).
-- The terminal is redirected only when the program's differs from the one current, and is
-- left as the program left it: the wrapper itself draws only through explicit redirects.
local function resume(p, ev)
    if p.filter ~= nil and p.filter ~= ev[1] and ev[1] ~= "terminate" then return end
    if term.current() ~= p.term then term.redirect(p.term) end
    if p.client then os.startTimer, os.setAlarm = clientStartTimer, clientSetAlarm end
    local ok, f = coroutine.resume(p.co, table.unpack(ev, 1, ev.n))
    os.startTimer, os.setAlarm = nativeStartTimer, nativeSetAlarm
    p.term = term.current()
    if not ok then error(f, 0) end
    p.filter = f
end

--- An upgrade the daemon asked for (`trapdesk_upgrade`, when the host serves another client):
-- the installer, fetched from the host and run with `--upgrade`, writes the new files
-- all-or-nothing and the startup arrangement; then the background programs start again from
-- the new files. Each version is tried once per boot, so a failing one does not loop.
local tried = {}
local function upgrade(version)
    local why
    if tried[version] then return end
    tried[version] = true
    local base = (settings.get("sandbox.url") or ""):match("^wss?://([^/?#]+)")
    if not base then
        why = "sandbox.url names no host"
    elseif not http then
        why = "the http API is disabled"
    else
        local url = "http://" .. base:gsub("^localhost", "127.0.0.1") .. "/install.lua"
        local res, err = http.get(url)
        if not res then
            why = "cannot fetch " .. url .. ": " .. tostring(err)
        else
            local src = res.readAll() or ""
            res.close()
            local fn, lerr = load(src, "@install.lua", "t", setmetatable({ shell = shell }, { __index = _G }))
            if not fn then
                why = "the host's installer does not load: " .. tostring(lerr)
            else
                local ok, done, derr = pcall(fn, "--upgrade")
                if not ok then why = tostring(done) elseif not done then why = tostring(derr) end
            end
        end
    end
    local log = fs.open(ROOT .. "daemon.log", "a")
    if log then
        log.writeLine(why and ("upgrade to " .. tostring(version) .. " not done: " .. why)
            or ("upgraded to " .. tostring(version) .. "; the client starts again"))
        log.close()
    end
    if not why then startClient() end
end

-- How long the player's shell waits for the client's first word from the host, so that the
-- "linked as" line (or why not) is printed above the first prompt instead of over it.
local FIRST_WORD = 5

_G.trapdeskClient = { root = ROOT }
startClient()
local playerProc
local waitTimer = nativeStartTimer(FIRST_WORD)
clientTimers[waitTimer] = true
local upgrading = false

--- The player's shell. CC's shell prints `os.version()` first, and CC's own top-level shell
-- already did (at boot, above the startup programs; or before the prompt the installer was typed
-- at): this one runs with that first line left out, so the banner shows once, as without
-- trapdesk. It is the shell `shell.run("shell")` would run, with the same parent shell.
local function playerShell()
    local path, first = shell.resolveProgram("shell"), true
    if not path then return shell.run("shell") end
    os.run({ shell = shell, multishell = multishell, print = function(...)
        local banner = first and ... == os.version()
        first = false
        if not banner then return print(...) end
    end }, "/" .. path)
end

local function player()
    playerStartups()
    playerShell()
end

local function run()
    local ev = { n = 0 }
    while true do
        local toPlayer = forPlayer(ev)
        for _, p in ipairs(procs) do
            if coroutine.status(p.co) ~= "dead" then
                if p == playerProc then
                    if toPlayer then resume(p, ev) end
                elseif ev[1] ~= "terminate" then
                    -- Ctrl+T is the player's: it stops their program, never the client.
                    resume(p, ev)
                end
            end
        end
        if playerProc and coroutine.status(playerProc.co) == "dead" then return end
        -- Dead programs leave the list, so a restarted client does not grow it.
        for i = #procs, 1, -1 do
            if coroutine.status(procs[i].co) == "dead" then table.remove(procs, i) end
        end
        if ev[1] == "trapdesk_upgrade" and not upgrading then
            upgrading = true
            spawn("upgrade", function()
                -- An error here must not end the scheduler (and the player's shell with it).
                local ok, err = pcall(upgrade, ev[2])
                if not ok then printError("trapdesk: upgrade: " .. tostring(err)) end
                upgrading = false
            end, true)
            resume(procs[#procs], { n = 0 })
        elseif ev[1] == "trapdesk_restart" then
            -- The installer, run again by hand or from a startup program, wrote new files.
            startClient()
        elseif ev[1] == "disk" then
            local mount, side = setup.diskStartup()
            if mount then
                local t = playerProc and playerProc.term or parent
                local prev = term.redirect(t)
                for _, line in ipairs(setup.explainDisk(mount, side, ROOT)) do printError(line) end
                term.redirect(prev)
            end
        end
        if phase == "linking" and (ev[1] == "trapdesk_link" or ev[1] == "timer" and ev[2] == waitTimer) then
            -- One more round first: whoever else waits on the same event (the installer's report)
            -- prints its lines before the prompt appears.
            phase = "ready"
            os.queueEvent("trapdesk_shell_start")
        elseif phase == "ready" and ev[1] == "trapdesk_shell_start" then
            phase = "player"
            local _, y = parent.getCursorPos()
            hidden = hiddenTerm(parent)
            hidden.setCursorPos(1, y)
            for _, p in ipairs(procs) do p.term = hidden end
            playerProc = spawn("player", player, false)
            playerProc.term = parent
            resume(playerProc, { n = 0 })
            if coroutine.status(playerProc.co) == "dead" then return end
        end
        ev = table.pack(os.pullEventRaw())
    end
end

local ok, err = pcall(run)
_G.trapdeskClient = nil
os.startTimer, os.setAlarm = nativeStartTimer, nativeSetAlarm
term.redirect(parent)
if not ok then printError("trapdesk: " .. tostring(err)) end
-- The player's shell ended (`exit`): CC shuts the computer down when its top-level shell ends,
-- and this shell is the player's top-level one, also when the installer typed at the prompt
-- started it (the shell that prompt belonged to waits under it and is never seen again).
if ok then os.shutdown() end
