--- trapdesk installer: `wget run http://HOST:4444/install.lua [SECRET]`.
--
-- The gateway serves this file with `__TRAPDESK_HOST__` replaced by its
-- `host:port`, `__TRAPDESK_FILES__` by the list of client files and
-- `__TRAPDESK_VERSION__` by the client's version (a hash of those files). It
-- downloads every file into /trapdesk/ (all of them before writing any, so a
-- failed run leaves the old install as it was), makes the startup arrangement
-- (apis/setup.lua: /startup.lua becomes trapdesk's wrapper and the player's
-- own startup program moves to /startup.player.lua), sets `sandbox.url` and
-- `sandbox.password` (the shared secret, which enrols the computer), and
-- starts the client. A computer already enrolled keeps its own secret
-- (`trapdesk.secret`). Run again (by hand, or from a startup program that kept
-- the installer line) it upgrades in place and never starts a second client.
-- Given a secret other than the one set, it offers it (`trapdesk.offered_secret`)
-- and the client links again at once: the host's answer decides whether it
-- replaces `sandbox.password` (servers/sandbox.lua, `settleOffer`).
-- `install.lua --upgrade` (what the running client does when the host serves a
-- newer client) only writes the files and the arrangement, and returns
-- true, or nil and why not.

local HOST = "__TRAPDESK_HOST__"
local FILES = __TRAPDESK_FILES__
local VERSION = "__TRAPDESK_VERSION__"
local ROOT = "/trapdesk/"
local args = { ... }
local UPGRADE = args[1] == "--upgrade"

local function allowAdvice(err)
    local host = HOST:match("^%[?([^%]]-)%]?:%d+$") or HOST:match("^[^:]+") or HOST
    local port = HOST:match(":(%d+)$")
    printError("CC: Tweaked refused to contact " .. HOST .. " (" .. tostring(err) .. ").")
    print("Private and loopback addresses are blocked by default. In the world folder, edit")
    print("serverconfig/computercraft-server.toml and add, BEFORE the")
    print('rule with host = "$private":')
    print("")
    print("  [[http.rules]]")
    print('  host = "' .. host .. '"')
    -- Only trapdesk's port: without it, every local service is open to every computer.
    if port then print("  port = " .. port) end
    print('  action = "allow"')
    print("")
    -- CC: Tweaked watches its config file and applies a saved change at once (Forge's config
    -- tracker, Fabric's FabricConfigFile); /reload reloads data packs, not this file.
    print("and save it (CC: Tweaked applies the change at once; no restart")
    print("needed), then run the installer again.")
end

local function blocked(err)
    err = tostring(err)
    return err:find("not permitted") or err:find("blocked") or err:find("Domain")
end

if not http then
    if UPGRADE then return nil, "the http API is disabled" end
    printError("The http API is disabled on this server (http.enabled in computercraft-server.toml).")
    return
end

local function download(path)
    local url = "http://" .. HOST .. "/lua/" .. path
    local ok, why = http.checkURL and http.checkURL(url)
    if http.checkURL and not ok then return nil, why end
    local res, err = http.get({ url = url, binary = true })
    if not res then return nil, err end
    local body = res.readAll() or ""
    local code = res.getResponseCode and res.getResponseCode() or 200
    res.close()
    if code ~= 200 then return nil, "HTTP " .. code .. " for " .. url end
    return body
end

local function writeAtomic(path, bytes)
    local tmp = path .. ".new"
    local h, err = fs.open(tmp, "wb")
    if not h then error("cannot write " .. tmp .. ": " .. tostring(err), 0) end
    h.write(bytes)
    h.close()
    if fs.exists(path) then fs.delete(path) end
    fs.move(tmp, path)
end

local function installedVersion()
    local h = fs.open(ROOT .. "version", "r")
    if not h then return nil end
    local v = (h.readAll() or ""):gsub("%s+$", "")
    h.close()
    return v
end

-- The secret given, and whether it is offered: another secret is set already, and it replaces
-- that one only once the host accepts it, so a mistyped secret never loses one that worked.
local given = not UPGRADE and args[1] ~= "" and args[1] or nil
local stored = settings.get("sandbox.password")
local offer = given ~= nil and stored ~= nil and given ~= stored

--- The state the client's daemon last told (`bus.link` in servers/sandbox.lua), if it runs.
local function linkState()
    local bus = rawget(_G, "trapdeskClient")
    return type(bus) == "table" and type(bus.link) == "table" and bus.link or nil
end

-- The secret argument of an installer line: `install.lua SECRET` (typed, or in one string
-- given to `shell.run`), or `"…install.lua", "SECRET"` (the words given to `shell.run` apart).
local SECRET_AFTER = {
    "(install%.lua%s+)([^%s\"'%]%)]+)",
    "(install%.lua[\"']%s*,%s*[\"'])([^\"']*)([\"'])",
}

--- Rewrites the installer line a player kept in their startup programs (`/startup.player.lua`
-- and the files of `/startup/`) to carry `secret`, so that the next boot runs the
-- installer with the secret the host accepted, not with the one it replaced. Only a line that
-- names `install.lua` changes, and in it only the word after it (a flag such as `--upgrade`
-- stays).
-- @tparam string secret The secret the host accepted.
-- @treturn { string... } The files changed.
local function readAll(path)
    local h = fs.open(path, "rb")
    if not h then return nil end
    local text = h.readAll() or ""
    h.close()
    return text
end

local function rewriteInstallLines(secret)
    local files = { "/startup.player.lua" }
    local folder = "/startup"
    if fs.isDir(folder) then
        for _, name in ipairs(fs.list(folder)) do files[#files + 1] = "/" .. fs.combine(folder, name) end
    end
    local changed = {}
    for _, path in ipairs(files) do
        local text = fs.exists(path) and not fs.isDir(path) and readAll(path)
        if text and text:find("install.lua", 1, true) then
            local out = text:gsub("[^\n]+", function(line)
                if not line:find("install.lua", 1, true) then return nil end
                for _, rule in ipairs(SECRET_AFTER) do
                    line = line:gsub(rule, function(head, word, tail)
                        if word:sub(1, 1) == "-" then return nil end
                        return head .. secret .. (tail or "")
                    end)
                end
                return line
            end)
            if out ~= text then
                writeAtomic(path, out)
                changed[#changed + 1] = path
            end
        end
    end
    return changed
end

-- Waits for the client's next word from the host and says which it was and what to do, so that
-- a wrong secret is not a silent prompt. The word is `bus.link` (servers/sandbox.lua, `tell`),
-- looked at whenever an event comes: its `trapdesk_link` event where this runs beside the
-- client (the first install), a timer of its own where it runs in the player's shell, from
-- which the client's events are withheld (lua/startup.lua).
local function report()
    local seen = linkState()
    local deadline = os.startTimer(15)
    local poll = os.startTimer(0.2)
    local retried = false
    while true do
        local ev, what = os.pullEvent()
        local state = linkState()
        if state and state ~= seen then
            seen = state
            local offered = state.offer
            local detail = tostring(state.detail)
            if state.what == "linked" then
                print("Linked to trapdesk as " .. detail .. ".")
                if offered == "stored" then
                    print("The secret given is stored (sandbox.password).")
                    for _, path in ipairs(rewriteInstallLines(given)) do
                        print("The install line in " .. path .. " carries it now.")
                    end
                end
                if settings.get("trapdesk.secret") then
                    print("This computer has a secret of its own (trapdesk.secret); only it links this id.")
                end
                return
            elseif state.what == "refused" then
                printError("trapdesk refused this computer: " .. detail)
                if offered == "refused" then
                    print("The secret given was refused; the one set before is kept.")
                end
                if detail:find("own secret", 1, true) then
                    print("Another computer, or an earlier install, holds this id. If this")
                    print("computer is the one, on the host run:")
                    print("  trapdesk secret forget " .. os.getComputerID())
                    print("(the client retries every minute and enrols again).")
                elseif detail:find("enrolment is closed", 1, true) then
                    print("On the host run: trapdesk secret enrol on")
                    print("(the client retries every minute).")
                elseif detail:find("wrong secret", 1, true) then
                    -- Lines of at most 51 columns: a computer's screen, so none wraps.
                    print("The secret is wrong. In the trapdesk console press")
                    print("s (or run trapdesk secret show on the host), then")
                    print("on this computer run:")
                    print("  set sandbox.password <secret>")
                    print("(the client retries every minute), or run the")
                    print("installer again with it, which links at once:")
                    print("  wget run http://" .. HOST .. "/install.lua <secret>")
                elseif detail:find("auth", 1, true) then
                    print("The host's log says why.")
                else
                    print("Update the client: wget run http://" .. HOST .. "/install.lua")
                end
                return
            elseif state.what == "retrying" and not retried then
                retried = true
                print("Not linked yet (" .. detail .. "); retrying in the background.")
            end
        end
        if ev == "timer" and what == deadline then
            print("No answer from trapdesk in 15 s; the client keeps trying.")
            print("Its log: " .. ROOT .. "daemon.log")
            return
        elseif ev == "timer" and what == poll then
            poll = os.startTimer(0.2)
        end
    end
end

-- The client already runs on this computer (its startup wrapper sets the marker): this run
-- only brings the files up to date, and a running client of the same version is left alone.
local running = _G.trapdeskClient ~= nil
local current = running and not UPGRADE and installedVersion() == VERSION
local ownLinks = settings.get("trapdesk.secret") ~= nil and (linkState() or {}).what == "linked"
if current and (not offer or ownLinks) then
    print("trapdesk is installed and running (" .. VERSION .. "); nothing to do.")
    -- Linked with its own secret, the computer needs no shared secret: nothing is tried.
    if offer then print("This computer links with its own secret (trapdesk.secret): the secret given is not needed, and not stored.") end
    return
end

if current then
    -- The same client runs: only the secret is new. The daemon links again at once to try it.
    print("trapdesk is installed and running (" .. VERSION .. ").")
    print("Trying the secret given; it replaces the one set once the host accepts it.")
    settings.set("trapdesk.offered_secret", given)
    settings.save()
    os.queueEvent("trapdesk_relink")
    report()
    return
end

if not UPGRADE then print("Installing trapdesk from " .. HOST) end
local fetched = {}
for _, path in ipairs(FILES) do
    local body, err = download(path)
    if not body then
        if UPGRADE then return nil, "download of " .. path .. " failed: " .. tostring(err) end
        if blocked(err) then allowAdvice(err) else printError("Download failed: " .. tostring(err)) end
        return
    end
    fetched[path] = body
end
-- Only write once everything arrived, so a failed run leaves the old install intact.
for _, path in ipairs(FILES) do
    writeAtomic(ROOT .. path, fetched[path])
end
writeAtomic(ROOT .. "version", VERSION .. "\n")
-- The arrangement: /startup.lua is the wrapper and the player's startup moves beside it. CC
-- runs /startup.lua before the /startup/ folder, so this is the one place where the client
-- starts even beside a player's startup that never returns (apis/setup.lua).
local setup = dofile(ROOT .. "apis/setup.lua")
local said = setup.arrange("/", fetched["startup.lua"])
if UPGRADE then return true end
for _, line in ipairs(said) do print(line) end
print(("Wrote %d files to %s"):format(#FILES, ROOT))

local secret = given
if offer then
    secret = nil
elseif not secret then
    secret = stored
    if secret then
        print("Keeping the secret already set.")
    elseif settings.get("trapdesk.secret") then
        print("Keeping this computer's own secret.")
    else
        write("Secret (shown by trapdesk secret show): ")
        secret = read("*")
    end
end
settings.set("sandbox.url", "ws://" .. HOST .. "/gateway")
if secret then settings.set("sandbox.password", secret) end
if offer then settings.set("trapdesk.offered_secret", given) end
settings.save()
if offer then print("Trying the secret given; it replaces the one set once the host accepts it.") end
print("Linking to ws://" .. HOST .. "/gateway")
print("Uninstall with: " .. ROOT .. "uninstall.lua")


-- A label is how people and agents tell computers apart (the traposId is id:label). It is not
-- needed to keep the id: CC: Tweaked's dropped computer item carries its id with or without a
-- label (ComputerBlock.getItem -> ComputerItem.create(id, label)).
if not os.getComputerLabel() then
    print("Tip: name this computer (label set <name>); trapdesk")
    print("shows it as " .. os.getComputerID() .. ":<name>.")
end

local mount, side = setup.diskStartup()
if mount then
    for _, line in ipairs(setup.explainDisk(mount, side, ROOT)) do printError(line) end
end

if running then
    -- The client runs already: start its programs again from the new files.
    os.queueEvent("trapdesk_restart")
    print("trapdesk updated; the running client restarts from the new files.")
    if offer then report() end
    return
end

-- Start now, as a reboot would (the player's startup program runs too). The wrapper keeps the
-- player's shell running and never returns while it is open, so the report runs beside it.
-- The player's shell runs inside it from now on: its `exit` shuts the computer down, as `exit`
-- at the prompt the installer was typed at would have (lua/startup.lua).
local function start() shell.run("/startup.lua") end
if parallel and parallel.waitForAll then
    parallel.waitForAll(start, report)
else
    start()
end
