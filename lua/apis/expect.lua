--- Argument checks for the client's APIs: CC's own `cc.expect` module where the ROM has it
-- (`/rom/modules/main/cc/expect.lua`: CC: Tweaked, CraftOS-PC), else a stand-in for its
-- `expect` with the same wording ("bad argument #1 (string expected, got table)"; CC's also
-- names the function when it can). The emulator's ROM has no modules, and stock Lua under
-- tests/lua has no ROM at all. There is no `require` on every runtime, hence `dofile`.
--
-- Load it from beside the file that checks (see any file in apis/):
--     local expect = dofile(here .. "expect.lua").expect

local ok, mod = pcall(dofile, "/rom/modules/main/cc/expect.lua")
if ok and type(mod) == "table" and mod.expect then return mod end

local select, type, concat = select, type, table.concat

--- Returns `value` when its type is one of `...`; else raises at the caller's caller.
local function expect(index, value, ...)
    local t = type(value)
    for i = 1, select("#", ...) do if t == select(i, ...) then return value end end
    error(("bad argument #%d (%s expected, got %s)"):format(index, concat({ ... }, " or "), t), 3)
end

return { expect = expect }
