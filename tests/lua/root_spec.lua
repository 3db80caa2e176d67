-- root_spec: apis/root.lua finds the client's root from its own chunk name, whoever loads it
-- and from wherever, without asking the shell.
local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end

local fakeShell = { getRunningProgram = function() return "elsewhere/servers/x.lua" end }
eq(dofile(ROOT .. "apis/root.lua")(), ROOT, "loaded from apis/")
eq(dofile(ROOT .. "apis/root.lua")(fakeShell), ROOT, "its own name wins over the shell's program")
if fs and fs.combine then
    -- As a server loads it: through its own folder and "..".
    eq(dofile(ROOT .. "servers/../apis/root.lua")(), ROOT, "loaded through servers/..")
end

-- Without a chunk name that says where it is: the running server's path, then /trapdesk/.
local src = assert(io and io.open and io.open(ROOT .. "apis/root.lua", "rb") or fs.open(ROOT .. "apis/root.lua", "rb"))
local text = src.readAll and src.readAll() or src:read("*a")
if src.close then pcall(src.close, src) end
local anon = assert(load(text, "=root"))()
eq(anon(fakeShell), "/elsewhere/", "from the server's path")
eq(anon(nil), "/trapdesk/", "the installed root")

print("root_spec: ok")
