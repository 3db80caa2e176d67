--- Running Lua for a request: a chunk (`exec-lua`) or a program (`run-file`), with its
-- output captured (apis/capture.lua) and its returns described (apis/descriptors.lua).
--
-- A program gets the environment CraftOS's shell gives one (`rom/programs/shell.lua`,
-- `createShellEnv`): `shell`, `arg`, and its own `require` and `package` whose relative
-- paths start in the program's folder (`rom/modules/main/cc/require.lua`, `make`).
--
-- @module run

local lib = {}

-- Siblings are loaded from beside this file.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"
local expect = dofile(here .. "expect.lua").expect
local descriptors = dofile(here .. "descriptors.lua")
local capture = dofile(here .. "capture.lua")
local array, outputFields = descriptors.array, capture.outputFields

-- Milliseconds of real time for `duration_ms`. `os.clock` counts the server's ticks on CC:
-- Tweaked (it stretches when the server lags), `os.epoch("utc")` is the wall clock; stock Lua
-- under the specs has only `os.time`.
local function now_ms()
    if os.epoch then return os.epoch("utc") end
    return os.time() * 1000
end

-- What a chunk's own os.reboot/os.shutdown raise to end the chunk: the Result then says
-- `power`, and the server reboots or shuts down once that answer has gone
-- (servers/mcp-computer-server.lua, `trapdesk_power`), so the host reads a reboot, not a link
-- that dropped before answering.
local POWER = {}

local function powerCall(what)
    return function()
        os.queueEvent("trapdesk_power", what)
        error(setmetatable({ power = what }, POWER), 0)
    end
end

--- Make the environment a chunk runs in: print/write/printError captured, os.reboot and
-- os.shutdown answered first (above), everything else (term.* too) read through to `base`.
local function makeEnv(cap, base)
    -- print/write/printError append to the capture directly (no drawing) while the chunk's
    -- terminal is the capture's; once the chunk redirects elsewhere (a monitor, a window) they
    -- are CC's own, which draw on `term.current()` as a program on the computer would.
    local function out(k)
        return function(...)
            if cap.term and term.current() ~= cap.term then return base[k](...) end
            return cap[k](...)
        end
    end
    -- The chunk gets its own `os` (reading through to the real one), so a chunk that redefines
    -- `os.pullEvent` or `os.queueEvent` changes them for itself, not for the client's own loops
    -- which share the computer's global `os` table.
    local env = {
        print = out("print"), write = out("write"), printError = out("printError"),
        os = setmetatable({ reboot = powerCall("reboot"), shutdown = powerCall("shutdown") }, { __index = base.os }),
    }
    return setmetatable(env, { __index = base })
end

local function errorResult(cap, started, message, traceback, value)
    return outputFields(cap, {
        ok = false, error = message, traceback = traceback, error_value = value,
        returns = array(), n = 0, duration_ms = now_ms() - started,
    })
end

--- A `require` and `package` for a program in folder `dir`, as the shell makes them: the
-- ROM's `cc.require` (CC: Tweaked, CraftOS-PC, and the emulator's port of it).
-- @tparam table env The program's environment (modules are loaded into it).
-- @tparam string dir The program's folder.
-- @treturn function require
-- @treturn table package
function lib.makePackage(env, dir)
    expect(1, env, "table")
    expect(2, dir, "string")
    return dofile("/rom/modules/main/cc/require.lua").make(env, dir)
end

-- The program's `shell`: the computer's, except that `getRunningProgram` names the program
-- (as the shell's own does while it runs one), not the server that runs it.
local function programShell(shell, path)
    if type(shell) ~= "table" then return shell end
    return setmetatable({ getRunningProgram = function() return path end }, { __index = shell })
end

--- A traceback without the frames of the client that ran the chunk: everything after
-- the chunk's own outermost frame is ours, not the caller's.
-- @tparam string tb The traceback.
-- @tparam[opt] string label The chunk's name as its frames show it.
-- @treturn string
function lib.cutTraceback(tb, label)
    expect(2, label, "string", "nil")
    if type(tb) ~= "string" then return tb end
    local lines = {}
    for line in (tb .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
    local last
    if label then
        local pat = "^%s*" .. label:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0") .. ":"
        for i, line in ipairs(lines) do if line:find(pat) then last = i end end
    end
    local out = {}
    for i, line in ipairs(lines) do
        if last then
            if i > last then break end
        elseif line:find("apis/run%.lua") or line:find("apis/libsandbox%.lua")
            or line:find("mcp%-computer%-server%.lua") or line:find("in function 'xpcall'")
            or line:find("in function <[^>]*xpcall") then
            break
        end
        out[#out + 1] = line
    end
    return table.concat(out, "\n")
end

local function run(fn, args, cap, started, label, opts)
    local traceback, value, power
    local function handler(err)
        if getmetatable(err) == POWER then
            power = err.power
            return err
        end
        if type(err) ~= "string" then
            value = descriptors.describe(err)
            local ok, s = pcall(descriptors.render, err)
            err = ok and s or "(error object is not a string)"
        end
        traceback = debug and debug.traceback and debug.traceback(err, 2) or err
        traceback = lib.cutTraceback(traceback, label)
        return err
    end
    -- xpcall is yieldable in Lua 5.2 / Cobalt, so a chunk may sleep, pull
    -- events or call peripherals. CC's "Too long without yielding" is an
    -- ordinary error here and is caught like any other.
    local res = table.pack(xpcall(function() return fn(table.unpack(args, 1, args.n)) end, handler))
    if power then
        return outputFields(cap, { ok = true, returns = array(), n = 0, power = power, duration_ms = now_ms() - started })
    end
    if not res[1] then return errorResult(cap, started, res[2], traceback, value) end
    local values = table.pack(table.unpack(res, 2, res.n))
    local returns, n = descriptors.describeAll(values, { pause = opts.pause, chunks = opts.chunks, blob = opts.blob })
    return outputFields(cap, { ok = true, returns = returns, n = n, duration_ms = now_ms() - started })
end

--- The name a chunk's frames carry in a traceback.
local function labelOf(name)
    local first = name:sub(1, 1)
    if first == "=" or first == "@" then return name:sub(2) end
    return '[string "' .. name .. '"]'
end

--- Run a Lua chunk with captured output.
-- @tparam string code The source.
-- @tparam[opt] string name Chunk name (default "=exec", so errors read `exec:1:` whoever sent
-- the chunk; a name without "=" or "@" reads `[string "name"]:1:`).
-- @tparam[opt] table opts `capture` (from capture.newCapture), `onOutput`, `env` (the base
-- environment), `pause`, `chunks` and `blob` (for describing large returned strings, see
-- apis/descriptors.lua).
-- @treturn table The Result.
function lib.executeLua(code, name, opts)
    expect(1, code, "string")
    expect(2, name, "string", "nil")
    expect(3, opts, "table", "nil")
    opts = opts or {}
    local started = now_ms()
    local cap = opts.capture or capture.newCapture(opts.onOutput)
    local env = makeEnv(cap, opts.env or _ENV)
    local fn, err = load(code, name or "=exec", "t", env)
    if not fn then return errorResult(cap, started, err) end
    return run(fn, { n = 0 }, cap, started, labelOf(name or "=exec"), opts)
end

--- Run a program with arguments, in the same captured environment plus what the shell gives
-- a program: `shell` (whose `getRunningProgram` names this program), `arg` (`arg[0]` = path,
-- the arguments also passed as varargs), and `require`/`package` relative to the program's
-- folder. The chunk name is `"@" .. path`, so errors read `path:3: ...`.
-- @tparam string path The file.
-- @tparam[opt] table args String arguments.
-- @tparam[opt] table opts As for @{executeLua}.
-- @treturn table The Result.
function lib.runFile(path, args, opts)
    expect(1, path, "string")
    expect(2, args, "table", "nil")
    expect(3, opts, "table", "nil")
    opts = opts or {}
    local started = now_ms()
    local cap = opts.capture or capture.newCapture(opts.onOutput)
    args = args or {}
    local packed = { n = 0 }
    for i = 1, #args do packed[i] = tostring(args[i]); packed.n = i end
    if fs.isDir(path) then return errorResult(cap, started, "Is a directory: " .. path) end
    local h = fs.open(path, "rb")
    if not h then return errorResult(cap, started, "File not found: " .. path) end
    local src = h.readAll() or ""
    h.close()
    local base = opts.env or _ENV
    local env = makeEnv(cap, base)
    local arg = { [0] = path }
    for i = 1, packed.n do arg[i] = packed[i] end
    env.arg = arg
    env.shell = programShell(base.shell, fs.combine(path, ""))
    env.require, env.package = lib.makePackage(env, fs.getDir(path))
    local fn, err = load(src, "@" .. path, "t", env)
    if not fn then return errorResult(cap, started, err) end
    return run(fn, packed, cap, started, path, opts)
end

return lib
