--- trapdesk uninstaller: stops the client, puts the player's own startup program back as
-- /startup.lua (apis/setup.lua), removes /trapdesk and the settings (the shared secret and the
-- computer's own, so a reinstall enrols it afresh once the host forgets it).

local ROOT = "/trapdesk/"
os.queueEvent("trapdesk_stop", "daemon", "uninstall")
os.queueEvent("trapdesk_stop", "mcp-computer-server", "uninstall")
os.queueEvent("trapdesk_stop", "screen-server", "uninstall")
local ok, setup = pcall(dofile, ROOT .. "apis/setup.lua")
if ok and type(setup) == "table" then
    for _, line in ipairs(setup.restore("/")) do print(line) end
else
    -- An install too broken to load its own module: remove only what is certainly the client's.
    if fs.exists("/startup/trapdesk.lua") then fs.delete("/startup/trapdesk.lua") end
    printError("trapdesk: " .. tostring(setup))
end
if fs.exists("/trapdesk") then fs.delete("/trapdesk") end
settings.unset("sandbox.url")
settings.unset("sandbox.password")
settings.unset("trapdesk.secret")
settings.save()
print("trapdesk removed (the link closes now).")
