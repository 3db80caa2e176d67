--- The startup arrangement: trapdesk's client owns `/startup.lua`, and the player's own startup
-- program lives beside it as `/startup.player.lua`.
--
-- Why: CC's `rom/startup.lua` (`findStartups`) runs `/startup.lua` (or a `/startup` file)
-- first and the files of the `/startup/` folder after it, each with `shell.run`, one after the
-- other. A player's startup that never returns (every turtle and farm program) therefore keeps
-- anything in `/startup/` from ever running. So the client's wrapper (`lua/startup.lua`) is
-- `/startup.lua`: it starts the client in the background, then runs the player's program, then
-- the `/startup/` folder, then the player's shell, as CC would have.
--
-- The installer (`install.lua`), an upgrade and the uninstaller (`uninstall.lua`) all use this
-- module, so the arrangement is made and undone in one place.
--
-- @module setup

local setup = {}

-- Argument checks: apis/expect.lua, beside this file.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"
local expect = dofile(here .. "expect.lua").expect

--- The name the player's own startup program is moved to (in the same folder as the wrapper).
setup.PLAYER = "startup.player.lua"
--- A line only the wrapper has: how a `startup.lua` is known to be trapdesk's.
setup.MARK = "-- trapdesk-startup-wrapper"
--- Where clients before the wrapper put their startup file.
setup.OLD = "startup/trapdesk.lua"

local function readAll(path)
    local h = fs.open(path, "rb")
    if not h then return nil end
    local s = h.readAll() or ""
    h.close()
    return s
end

--- Whether `path` is trapdesk's startup wrapper (it holds `setup.MARK`).
-- @tparam string path The file to look at.
-- @treturn boolean
function setup.isWrapper(path)
    expect(1, path, "string")
    if not fs.exists(path) or fs.isDir(path) then return false end
    local s = readAll(path)
    return s ~= nil and s:find(setup.MARK, 1, true) ~= nil
end

--- The startup file CC runs first in `base` (`startup`, else `startup.lua`), as
-- `shell.resolveProgram` picks it: the exact name first, then with `.lua`.
-- @tparam string base The folder (`/` or a disk's mount path).
-- @treturn string|nil Its path, when there is one.
function setup.startupNode(base)
    expect(1, base, "string")
    for _, name in ipairs({ "startup", "startup.lua" }) do
        local p = "/" .. fs.combine(base, name)
        if fs.exists(p) and not fs.isDir(p) then return p end
    end
    return nil
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

--- Makes the arrangement in `base`: the player's startup (if any, and not the wrapper) moves
-- to `startup.player.lua`, an old-style `/startup/trapdesk.lua` goes, and `startup.lua`
-- becomes the wrapper. Run again, it only refreshes the wrapper: nothing is wrapped twice.
-- @tparam string base The folder (`/`, or a disk's mount path).
-- @tparam string wrapper The wrapper's bytes (`lua/startup.lua`).
-- @treturn { string... } What was done, in lines to tell the player.
function setup.arrange(base, wrapper)
    expect(1, base, "string")
    expect(2, wrapper, "string")
    local said = {}
    local target = "/" .. fs.combine(base, "startup.lua")
    local node = setup.startupNode(base)
    if node and not setup.isWrapper(node) then
        local dest = "/" .. fs.combine(base, setup.PLAYER)
        local n = 1
        while fs.exists(dest) do
            -- A player's startup from an earlier install is already there: keep both.
            n = n + 1
            dest = "/" .. fs.combine(base, "startup.player." .. n .. ".lua")
        end
        fs.move(node, dest)
        said[#said + 1] = "Your startup program is now " .. dest .. " (it still runs at every boot)."
        if n > 1 then
            said[#said + 1] = "Only /" .. fs.combine(base, setup.PLAYER) .. " runs: merge the two yourself."
        end
    end
    local old = "/" .. fs.combine(base, setup.OLD)
    if fs.exists(old) then
        fs.delete(old)
        said[#said + 1] = "Removed the old " .. old .. " (" .. target .. " starts trapdesk now)."
    end
    local folder = "/" .. fs.combine(base, "startup")
    if fs.isDir(folder) and #fs.list(folder) == 0 then fs.delete(folder) end
    writeAtomic(target, wrapper)
    return said
end

--- Undoes the arrangement in `base`: the wrapper goes and the player's program is
-- `startup.lua` again.
-- @tparam string base The folder (`/`, or a disk's mount path).
-- @treturn { string... } What was done, in lines to tell the player.
function setup.restore(base)
    expect(1, base, "string")
    local said = {}
    local target = "/" .. fs.combine(base, "startup.lua")
    local player = "/" .. fs.combine(base, setup.PLAYER)
    if setup.isWrapper(target) then fs.delete(target) end
    local old = "/" .. fs.combine(base, setup.OLD)
    if fs.exists(old) then fs.delete(old) end
    local folder = "/" .. fs.combine(base, "startup")
    if fs.isDir(folder) and #fs.list(folder) == 0 then fs.delete(folder) end
    local file = "/" .. fs.combine(base, "startup")
    if fs.exists(player) and not fs.exists(target) and not (fs.exists(file) and not fs.isDir(file)) then
        fs.move(player, target)
        said[#said + 1] = "Your startup program is " .. target .. " again."
    elseif fs.exists(player) then
        said[#said + 1] = "Your startup program stays " .. player .. " (" .. target .. " exists)."
    end
    return said
end

--- The disk whose startup CC would run instead of this computer's, if any: with the setting
-- `shell.allow_disk_startup` on, CC's `rom/startup.lua` runs the first disk's startup files in
-- place of the computer's own.
-- @treturn string|nil The disk's mount path.
-- @treturn string|nil The drive's side or name.
function setup.diskStartup()
    if not settings.get("shell.allow_disk_startup") or not disk or not peripheral then return nil end
    for _, side in ipairs(peripheral.getNames()) do
        if disk.isPresent(side) and disk.hasData(side) then
            local mount = disk.getMountPath(side)
            if mount and (setup.startupNode(mount) or fs.isDir("/" .. fs.combine(mount, "startup"))) then
                if setup.isWrapper("/" .. fs.combine(mount, "startup.lua")) then return nil end
                return mount, side
            end
        end
    end
    return nil
end

--- Lines that explain a disk startup found by `setup.diskStartup` and the player's choices.
-- @tparam string mount The disk's mount path.
-- @tparam string side The drive.
-- @tparam string root The client's folder (`/trapdesk/`).
-- @treturn { string... }
function setup.explainDisk(mount, side, root)
    expect(1, mount, "string")
    expect(3, root, "string")
    return {
        "The disk in " .. tostring(side) .. " (/" .. mount .. ") has a startup program. At boot CC runs",
        "it instead of this computer's, so trapdesk would not start. Either:",
        "  set shell.allow_disk_startup false",
        "or put trapdesk's startup on that disk:",
        "  " .. root .. "apis/setup.lua disk " .. mount,
    }
end

-- Run as a program (`setup.lua disk <mount>`): put the wrapper on a disk, moving the disk's
-- own startup aside as on the computer. Loaded with dofile, `...` is empty and this is skipped.
local args = { ... }
if args[1] == "disk" and type(args[2]) == "string" and shell then
    local here = fs.getDir(fs.getDir(shell.getRunningProgram()))
    local bytes = readAll("/" .. fs.combine(here, "startup.lua"))
    if not bytes then error("cannot read /" .. fs.combine(here, "startup.lua"), 0) end
    for _, line in ipairs(setup.arrange(args[2], bytes)) do print(line) end
    print("/" .. fs.combine(args[2], "startup.lua") .. " starts trapdesk now.")
end

return setup
