-- setup_spec: the startup arrangement (apis/setup.lua) on the emulated computer's real fs, in
-- a folder of its own: the player's startup moves aside once, an old /startup/trapdesk.lua
-- goes, running it again wraps nothing twice, and restore gives the startup back.
if not fs then
    -- Stock Lua (tests/lua/run.sh) has no CC fs; tests/integration/lua/lua_specs.rs runs this in
    -- the emulator.
    print("SKIPPED setup_spec: needs CC's fs; it runs in the emulator (cargo test --test integration lua::lua_specs::)")
    return
end
local setup = dofile(ROOT .. "apis/setup.lua")

local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end
local function put(path, text)
    local h = fs.open(path, "w") h.write(text) h.close()
end
local function get(path)
    local h = fs.open(path, "r")
    if not h then return nil end
    local s = h.readAll() h.close()
    return s
end

local WRAPPER = setup.MARK .. "\n-- the wrapper\n"
local base = "/setup_spec"
if fs.exists(base) then fs.delete(base) end
fs.makeDir(base)

-- A player's startup.lua and an old-style client file in the startup folder.
put(base .. "/startup.lua", "print('farm')")
put(base .. "/startup/trapdesk.lua", "old client")
put(base .. "/startup/other.lua", "print('other')")
local said = setup.arrange(base, WRAPPER)
eq(get(base .. "/startup.player.lua"), "print('farm')", "the player's program moved aside")
eq(get(base .. "/startup.lua"), WRAPPER, "the wrapper is startup.lua")
eq(fs.exists(base .. "/startup/trapdesk.lua"), false, "the old client file is gone")
eq(get(base .. "/startup/other.lua"), "print('other')", "the player's other startup files stay")
eq(#said, 2, "it says what it moved and removed")
eq(setup.isWrapper(base .. "/startup.lua"), true)
eq(setup.isWrapper(base .. "/startup.player.lua"), false)

-- Again (the installer line kept in a startup program): nothing is wrapped twice.
said = setup.arrange(base, WRAPPER)
eq(#said, 0, "nothing to say the second time")
eq(fs.exists(base .. "/startup.player.2.lua"), false, "the wrapper is never moved aside")
eq(get(base .. "/startup.player.lua"), "print('farm')")

-- Restore: the player's program is startup.lua again.
setup.restore(base)
eq(get(base .. "/startup.lua"), "print('farm')", "restored")
eq(fs.exists(base .. "/startup.player.lua"), false)

-- An old-style /startup *file* is what CC runs first: it moves aside too, and the folder
-- cannot exist beside it.
fs.delete(base)
fs.makeDir(base)
put(base .. "/startup", "print('old style')")
setup.arrange(base, WRAPPER)
eq(get(base .. "/startup.player.lua"), "print('old style')")
eq(fs.exists(base .. "/startup"), false)
eq(get(base .. "/startup.lua"), WRAPPER)

-- Bad arguments are refused, naming the argument.
local ok, err = pcall(setup.arrange, base, nil)
eq(ok, false)
assert(tostring(err):find("#2", 1, true), tostring(err))
fs.delete(base)
