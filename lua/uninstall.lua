--- trapdesk uninstaller: puts the player's own startup program back as /startup.lua
-- (apis/setup.lua), removes /trapdesk and the settings (the shared secret and the computer's
-- own, so a reinstall enrols it afresh once the host forgets it), then stops the client.
--
-- The daemon and the screen server stop first (the daemon notes its stop in
-- /trapdesk/daemon.log, which would bring the folder back); the mcp-computer-server last, once
-- everything is done and before anything is printed: run from the client itself (an exec-lua
-- chunk), this runs in it, and printing may yield.

local ROOT = "/trapdesk/"
local function stop(who) os.queueEvent("trapdesk_stop", who, "uninstall") end
stop("daemon")
stop("screen-server")
-- A timer, not a queued event of our own: the startup wrapper withholds trapdesk_* events from
-- the player's programs, and this may run in the player's shell.
sleep(0.2)
local ok, setup = pcall(dofile, ROOT .. "apis/setup.lua")
local said = { "trapdesk: " .. tostring(setup) }
if ok and type(setup) == "table" then
    said = setup.restore("/")
elseif fs.exists("/startup/trapdesk.lua") then
    -- An install too broken to load its own module: remove only what is certainly the client's.
    fs.delete("/startup/trapdesk.lua")
end
if fs.exists("/trapdesk") then fs.delete("/trapdesk") end
-- The offered secret too: one given to the installer that the host had not yet taken.
for _, k in ipairs({ "sandbox.url", "sandbox.password", "trapdesk.secret", "trapdesk.offered_secret" }) do
    settings.unset(k)
end
settings.save()
stop("mcp-computer-server")
for _, line in ipairs(said) do print(line) end
print("trapdesk removed (the link closes now).")
