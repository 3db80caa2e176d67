--- trapdesk uninstaller: stops the client, removes /trapdesk,
-- /startup/trapdesk.lua and the settings (the shared secret and the
-- computer's own, so a reinstall enrols it afresh once the host forgets it).

os.queueEvent("trapdesk_stop", "daemon", "uninstall")
os.queueEvent("trapdesk_stop", "mcp-computer-server", "uninstall")
os.queueEvent("trapdesk_stop", "screen-server", "uninstall")
for _, path in ipairs({ "/trapdesk", "/startup/trapdesk.lua" }) do
    if fs.exists(path) then fs.delete(path) end
end
if fs.isDir("/startup") and #fs.list("/startup") == 0 then fs.delete("/startup") end
settings.unset("sandbox.url")
settings.unset("sandbox.password")
settings.unset("trapdesk.secret")
settings.save()
print("trapdesk removed (the link closes now).")
