--- trapdesk installer: `wget run http://HOST:4444/install.lua [SECRET]`.
--
-- The gateway serves this file with `__TRAPDESK_HOST__` replaced by its
-- `host:port` and `__TRAPDESK_FILES__` by the list of client files. It
-- downloads every file into /trapdesk/ (atomically, so re-running upgrades in
-- place), installs /startup/trapdesk.lua (the player's own /startup.lua is
-- left alone), sets `sandbox.url` and `sandbox.password` (the shared secret,
-- which enrols the computer), and starts the client. A computer already
-- enrolled keeps its own secret (`trapdesk.secret`): re-running the installer
-- upgrades it without enrolling it again.

local HOST = "__TRAPDESK_HOST__"
local FILES = __TRAPDESK_FILES__
local ROOT = "/trapdesk/"
local args = { ... }

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
    print("then restart the world (or /reload) and run the installer again.")
end

local function blocked(err)
    err = tostring(err)
    return err:find("not permitted") or err:find("blocked") or err:find("Domain")
end

if not http then
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

print("Installing trapdesk from " .. HOST)
local fetched = {}
for _, path in ipairs(FILES) do
    local body, err = download(path)
    if not body then
        if blocked(err) then allowAdvice(err) else printError("Download failed: " .. tostring(err)) end
        return
    end
    fetched[path] = body
end
-- Only write once everything arrived, so a failed run leaves the old install intact.
for _, path in ipairs(FILES) do
    writeAtomic(ROOT .. path, fetched[path])
end
-- A /startup *file* (an old-style startup program) cannot hold /startup/trapdesk.lua, and
-- CC's fs.makeDir raises "File exists" on it (MountWrapper.makeDirectory): test first.
local startFile = "/startup/trapdesk.lua"
if fs.exists("/startup") and not fs.isDir("/startup") then
    printError("/startup is a file; add this line to it yourself: shell.run(\"" .. ROOT .. "startup.lua\")")
    startFile = ROOT .. "startup.lua"
else
    writeAtomic(startFile, fetched["startup.lua"] or "shell.run(\"" .. ROOT .. "startup.lua\")\n")
end
print(("Wrote %d files to %s"):format(#FILES, ROOT))

local secret = args[1]
if not secret or secret == "" then
    secret = settings.get("sandbox.password")
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
settings.save()
print("Linking to ws://" .. HOST .. "/gateway")
print("Uninstall with: " .. ROOT .. "uninstall.lua")

-- Waits for the client's first word from the host (the daemon queues `trapdesk_link`) and
-- says which it was and what to do, so that a wrong secret is not a silent prompt.
local function report()
    local timer = os.startTimer(15)
    local retried = false
    while true do
        local ev, what, detail = os.pullEvent()
        if ev == "trapdesk_link" and what == "linked" then
            print("Linked to trapdesk as " .. tostring(detail) .. ".")
            if settings.get("trapdesk.secret") then
                print("This computer has a secret of its own (trapdesk.secret); only it links this id.")
            end
            return
        elseif ev == "trapdesk_link" and what == "refused" then
            detail = tostring(detail)
            printError("trapdesk refused this computer: " .. detail)
            if detail:find("own secret", 1, true) then
                print("Another computer, or an earlier install, holds this id. If this")
                print("computer is the one, on the host run:")
                print("  trapdesk secret forget " .. os.getComputerID())
                print("(the client retries every minute and enrols again).")
            elseif detail:find("enrolment is closed", 1, true) then
                print("On the host run: trapdesk secret enrol on")
                print("(the client retries every minute).")
            elseif detail:find("auth") then
                print("The secret is wrong. In the trapdesk console press s (or run")
                print("trapdesk secret show on the host), then on this computer run:")
                print("  set sandbox.password <secret>")
                print("(the client retries every minute), or run the installer again:")
                print("  wget run http://" .. HOST .. "/install.lua <secret>")
            else
                print("Update the client: wget run http://" .. HOST .. "/install.lua")
            end
            return
        elseif ev == "trapdesk_link" and what == "retrying" and not retried then
            retried = true
            print("Not linked yet (" .. tostring(detail) .. "); retrying in the background.")
        elseif ev == "timer" and what == timer then
            print("No answer from trapdesk in 15 s; the client keeps trying.")
            print("Its log: " .. ROOT .. "daemon.log")
            return
        end
    end
end

-- Start now (a running older client is replaced: new instances stop old ones). On an
-- advanced computer the client opens its own tabs and this returns at once; otherwise the
-- startup file keeps a shell running and never returns, so the report runs beside it.
if multishell and shell.openTab then
    shell.run(startFile)
    report()
elseif parallel and parallel.waitForAll then
    parallel.waitForAll(function() shell.run(startFile) end, report)
else
    shell.run(startFile)
end
