-- The emulator's bios: the parts of CC: Tweaked that CC itself writes in Lua (bios.lua), in our
-- own words. It receives the native (Rust) tables, builds CC's globals from them, removes what
-- CC does not offer, loads the ROM APIs, and returns the hooks the machine needs.
local native = ...
local nterm, nfs, nos, nhttp, rom = native.term, native.fs, native.os, native.http, native.rom

local pack, unpack, select, type, error, tostring = table.pack, table.unpack, select, type, error, tostring
local yield = coroutine.yield
-- The sandbox's `load` (crates/trapdesk-emu/src/sandbox.rs): text only.
local native_load = load

_HOST = "ComputerCraft 1.113.0 (trapdesk emulator)"
_CC_DEFAULT_SETTINGS = ""

-- "Too long without yielding": the sandbox's `coroutine.create` hooks every coroutine with the
-- watchdog (crates/trapdesk-emu/src/sandbox.rs), so every coroutine, the bios's and a program's alike, is
-- watched. The error is an ordinary Lua error, so pcall catches it (as on CC); a computer that
-- still does not yield 1.5 s later is turned off.
local spawn = coroutine.create
function coroutine.wrap(f)
    local co = spawn(f)
    return function(...)
        local r = pack(coroutine.resume(co, ...))
        if not r[1] then error(r[2], 0) end
        return unpack(r, 2, r.n)
    end
end

-- What CC does not offer. (`collectgarbage`, the host's `dofile`/`loadfile`/`print`, `io`, `os`
-- and `package` never exist here: crates/trapdesk-emu/src/sandbox.rs builds the globals without them.)
string.dump = nil

-- CC's `expect` (cc.expect): "bad argument #1 to 'sleep' (number expected, got string)", the
-- name only when the caller is known and written in Lua, raised at the caller's caller.
local function expect(index, value, ...)
    local t = type(value)
    for i = 1, select("#", ...) do
        if t == select(i, ...) then return value end
    end
    local types = {}
    for i = 1, select("#", ...) do
        local name = select(i, ...)
        if name ~= "nil" then types[#types + 1] = name end
    end
    local wanted = #types <= 1 and tostring(...) or table.concat(types, ", ", 1, #types - 1) .. " or " .. types[#types]
    local ok, info = pcall(debug.getinfo, 3, "nS")
    if ok and info and info.name and info.name ~= "" and info.what ~= "C" then
        error(("bad argument #%d to '%s' (%s expected, got %s)"):format(index, info.name, wanted, t), 3)
    end
    error(("bad argument #%d (%s expected, got %s)"):format(index, wanted, t), 3)
end

-- Natives answer `true, ...` or `false, message`; this turns the latter into a string error
-- pointing at the caller, as CC's Java APIs do.
local function raising(f)
    return function(...)
        local r = pack(f(...))
        if not r[1] then error(r[2], 2) end
        return unpack(r, 2, r.n)
    end
end

function load(x, name, mode, env)
    -- Binary chunks are refused, as Cobalt cannot load them.
    if env == nil then return native_load(x, name, "t") end
    return native_load(x, name, "t", env)
end

-- `%q` as CC: Tweaked's Cobalt (and CraftOS-PC) write it: a backslash before '"', '\' and a
-- newline, "\r" for a carriage return, "\000" for NUL, every other byte as it is. PUC Lua 5.2
-- writes each control character as "\ddd" ("\0", "\13", "\9"...), so a program that builds Lua
-- source with %q read differently here than on a computer. Other conversions are the native ones.
do
    local native_format, find, gsub, sub, concat = string.format, string.find, string.gsub, string.sub, table.concat
    local quoted = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\\n", ["\r"] = "\\r", ["\0"] = "\\000" }
    local function quote(s) return '"' .. gsub(s, '["\\\n\r\0]', quoted) .. '"' end
    -- The native is called through pcall, so a bad argument reads as the native's own error
    -- at the caller ("bad argument #2 to 'format'"), not as this wrapper's ("bios.lua:NN: ...
    -- 'native_format'"); `index` is the argument's place in the caller's call.
    local function renamed(r, index)
        if type(r) ~= "string" then return r end
        return (gsub(r, "^bad argument #(%d+) to '[^']*'", function(n)
            return "bad argument #" .. (index or n) .. " to 'format'"
        end))
    end
    function string.format(fmt, ...)
        if type(fmt) ~= "string" or not find(fmt, "q", 1, true) then
            local ok, r = pcall(native_format, fmt, ...)
            if ok then return r end
            error(renamed(r), 2)
        end
        local args, out, argi, i, n = pack(...), {}, 0, 1, #fmt
        while i <= n do
            local s, e, spec = find(fmt, "%%([-+ #0]*%d*%.?%d*[%a%%])", i)
            if not s then out[#out + 1] = sub(fmt, i) break end
            out[#out + 1] = sub(fmt, i, s - 1)
            if spec == "%" then
                out[#out + 1] = "%"
            else
                argi = argi + 1
                local v = args[argi]
                if spec == "q" and type(v) == "string" then
                    out[#out + 1] = quote(v)
                else
                    local ok, r = pcall(native_format, "%" .. spec, v)
                    if not ok then error(renamed(r, argi + 1), 2) end
                    out[#out + 1] = r
                end
            end
            i = e + 1
        end
        return concat(out)
    end
end

-- Lua 5.3's table.move, which Cobalt offers.
function table.move(a1, f, e, t, a2)
    a2 = a2 or a1
    if e >= f then
        if t > e or t <= f or a1 ~= a2 then
            for i = 0, e - f do a2[t + i] = a1[f + i] end
        else
            for i = e - f, 0, -1 do a2[t + i] = a1[f + i] end
        end
    end
    return a2
end

-- os
os = {}
for k, v in pairs(nos) do os[k] = v end
-- `os.date`, `os.difftime` and `os.time(table)` are Rust's (crates/trapdesk-emu/src/clock.rs), not the C `os`.
os.date, os.difftime, os.mktime = raising(nos.date), raising(nos.difftime), nil
local ntime, mktime = nos.time, raising(nos.mktime)
function os.time(t)
    if type(t) == "table" then return mktime(t) end
    return ntime(t)
end
function os.version() return "CraftOS 1.9" end
local nqueue = nos.queueEvent
function os.queueEvent(...)
    local name = ...
    if type(name) ~= "string" and type(name) ~= "number" then
        error("bad argument #1 (string expected, got " .. (select("#", ...) < 1 and "no value" or type(name)) .. ")", 2)
    end
    return nqueue(...)
end
function os.pullEventRaw(filter) return yield(filter) end
function os.pullEvent(filter)
    local ev = pack(yield(filter))
    if ev[1] == "terminate" then error("Terminated", 0) end
    return unpack(ev, 1, ev.n)
end
local nreboot, nshutdown = nos.reboot, nos.shutdown
function os.reboot() nreboot() while true do yield() end end
function os.shutdown() nshutdown() while true do yield() end end
function os.computerID() return os.getComputerID() end
function os.computerLabel() return os.getComputerLabel() end

function sleep(t)
    expect(1, t, "number", "nil")
    local id = os.startTimer(t or 0)
    repeat local _, p = os.pullEvent("timer") until p == id
end
os.sleep = sleep

-- colours and keys
colors = {
    white = 1, orange = 2, magenta = 4, lightBlue = 8, yellow = 16, lime = 32, pink = 64,
    gray = 128, lightGray = 256, cyan = 512, purple = 1024, blue = 2048, brown = 4096,
    green = 8192, red = 16384, black = 32768,
}
function colors.combine(...) local r = 0 for i = 1, select("#", ...) do r = bit32.bor(r, (select(i, ...))) end return r end
function colors.subtract(c, ...) for i = 1, select("#", ...) do c = bit32.band(c, bit32.bnot((select(i, ...)))) end return c end
function colors.test(set, c) return bit32.band(set, c) == c end
function colors.toBlit(c) local i = math.floor(math.log(c) / math.log(2) + 0.5) return ("0123456789abcdef"):sub(i + 1, i + 1) end
function colors.fromBlit(h) local n = tonumber(h, 16) return n and 2 ^ n end
colours = {}
for k, v in pairs(colors) do colours[k] = v end
colours.grey, colours.lightGrey = colors.gray, colors.lightGray

-- CC: Tweaked's key codes (GLFW's), as its rom/apis/keys.lua names them.
keys = {
    space = 32, apostrophe = 39, comma = 44, minus = 45, period = 46, slash = 47,
    zero = 48, one = 49, two = 50, three = 51, four = 52, five = 53, six = 54, seven = 55, eight = 56, nine = 57,
    semicolon = 59, equals = 61, leftBracket = 91, backslash = 92, rightBracket = 93, grave = 96,
    enter = 257, tab = 258, backspace = 259, insert = 260, delete = 261, right = 262, left = 263, down = 264, up = 265,
    pageUp = 266, pageDown = 267, home = 268, ["end"] = 269, capsLock = 280, scrollLock = 281, numLock = 282,
    printScreen = 283, pause = 284,
    numPadDecimal = 330, numPadDivide = 331, numPadMultiply = 332, numPadSubtract = 333, numPadAdd = 334,
    numPadEnter = 335, numPadEqual = 336,
    leftShift = 340, leftCtrl = 341, leftAlt = 342, leftSuper = 343, rightShift = 344, rightCtrl = 345,
    rightAlt = 346, menu = 348,
}
for i = 0, 25 do keys[string.char(97 + i)] = 65 + i end
for i = 1, 25 do keys["f" .. i] = 289 + i end
for i = 0, 9 do keys["numPad" .. i] = 320 + i end
keys["return"] = keys.enter
function keys.getName(code) for k, v in pairs(keys) do if v == code then return k end end end

-- term, with redirection: the global table forwards to the current target.
local native_newline = nterm.__newline
nterm.__newline = nil
local current = nterm
term = {}
for k in pairs(nterm) do term[k] = function(...) return current[k](...) end end
function term.native() return nterm end
function term.current() return current end
function term.redirect(target)
    if type(target) ~= "table" then error("bad argument #1 (table expected)", 2) end
    local old = current
    current = target
    return old
end

local function new_line()
    -- Through the current target's own functions (so a wrapped native terminal sees the scroll
    -- and the cursor move); the native call only marks the line end for run_lua's capture.
    if current == nterm then native_newline() end
    local _, y = current.getCursorPos()
    local _, h = current.getSize()
    if y >= h then current.scroll(1) current.setCursorPos(1, h) else current.setCursorPos(1, y + 1) end
end

-- write: word-wraps at the screen edge, returns how many lines it moved down.
function write(text)
    expect(1, text, "string", "number")
    text = tostring(text)
    local w = term.getSize()
    local x = term.getCursorPos()
    local lines = 0
    local function nl() new_line() lines = lines + 1 x = 1 end
    while #text > 0 do
        local space = text:match("^[ \t]+")
        if space then
            term.write(space)
            x = term.getCursorPos()
            text = text:sub(#space + 1)
        end
        if text:sub(1, 1) == "\n" then
            nl()
            text = text:sub(2)
        end
        local word = text:match("^[^ \t\n]+")
        if word then
            text = text:sub(#word + 1)
            if #word > w then
                -- Longer than a line: break it wherever the edge falls.
                while #word > 0 do
                    if x > w then nl() end
                    local room = w - x + 1
                    term.write(word:sub(1, room))
                    word = word:sub(room + 1)
                    x = term.getCursorPos()
                end
            else
                if x + #word - 1 > w then nl() end
                term.write(word)
                x = term.getCursorPos()
            end
        end
    end
    return lines
end

function print(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
    return write(table.concat(parts, "\t") .. "\n")
end

function printError(...)
    local old
    if term.isColour() then old = term.getTextColour() term.setTextColour(colors.red) end
    print(...)
    if old then term.setTextColour(old) end
end

-- read: a line typed through `char`/`paste` events, ended by `key` enter, drawn as CC: Tweaked's
-- own `read` draws it (rom/bios.lua): every key clears the input and writes it again from where
-- it started, scrolled to keep the cursor on the row (the row's width read again on
-- `term_resize`); up and down go through `history`. No completion here.
function read(replace, history, complete, default)
    expect(1, replace, "string", "nil")
    expect(2, history, "table", "nil")
    expect(3, complete, "function", "nil")
    expect(4, default, "string", "nil")
    term.setCursorBlink(true)
    local line = default or ""
    local pos, scroll, hpos = #line, 0, nil
    replace = replace and replace:sub(1, 1)
    local w = term.getSize()
    local sx = term.getCursorPos()
    local function redraw(clear)
        if sx + pos - scroll >= w then scroll = sx + pos - w elseif pos < scroll then scroll = pos end
        local _, cy = term.getCursorPos()
        term.setCursorPos(sx, cy)
        local r = clear and " " or replace
        term.write(r and string.rep(r, math.max(#line - scroll, 0)) or line:sub(scroll + 1))
        term.setCursorPos(sx + pos - scroll, cy)
    end
    redraw()
    while true do
        local ev, p = os.pullEvent()
        if ev == "char" or ev == "paste" then
            redraw(true)
            line, pos = line:sub(1, pos) .. p .. line:sub(pos + 1), pos + #p
            redraw()
        elseif ev == "key" then
            if p == keys.enter or p == keys.numPadEnter then break end
            redraw(true)
            if p == keys.left and pos > 0 then pos = pos - 1
            elseif p == keys.right and pos < #line then pos = pos + 1
            elseif p == keys.home then pos = 0
            elseif p == keys["end"] then pos = #line
            elseif p == keys.backspace and pos > 0 then
                line, pos = line:sub(1, pos - 1) .. line:sub(pos + 1), pos - 1
                if scroll > 0 then scroll = scroll - 1 end
            elseif p == keys.delete then line = line:sub(1, pos) .. line:sub(pos + 2)
            elseif (p == keys.up or p == keys.down) and history then
                if p == keys.up then
                    if hpos == nil then hpos = #history > 0 and #history or nil elseif hpos > 1 then hpos = hpos - 1 end
                elseif hpos == #history then hpos = nil
                elseif hpos then hpos = hpos + 1 end
                line = hpos and history[hpos] or ""
                pos, scroll = #line, 0
            end
            redraw()
        elseif ev == "term_resize" then
            w = term.getSize()
            redraw()
        end
    end
    local _, cy = term.getCursorPos()
    term.setCursorBlink(false)
    term.setCursorPos(w + 1, cy)
    print()
    return line
end

-- fs, with CC's handle tables (callable as h.f() or h:f()). A closed handle raises "attempt
-- to use a closed file" at the caller, as a string (the natives' own check would raise mlua's
-- error object instead).
local READ = { "readAll", "readLine", "read", "seek", "close" }
local WRITE = { "write", "writeLine", "flush", "close" }
-- "w" handles can seek, "a" handles cannot; "r+"/"w+" handles read and write (CC: Tweaked 1.109).
local WRITE_SEEK = { "write", "writeLine", "flush", "seek", "close" }
local UPDATE = { "read", "readAll", "readLine", "write", "writeLine", "flush", "seek", "close" }
-- Argument checks the natives would otherwise fail with mlua's error object; each raises at
-- the handle method's caller (level 3: past the check and the method).
local HANDLE_CHECKS = {}
function HANDLE_CHECKS.write(count, v)
    local t = type(v)
    if t ~= "string" and t ~= "number" then
        error("bad argument #1 (string expected, got " .. (count < 1 and "no value" or t) .. ")", 3)
    end
end
HANDLE_CHECKS.writeLine = HANDLE_CHECKS.write
function HANDLE_CHECKS.read(_, n, binary)
    if type(n) == "number" and n < 0 then
        error("Cannot read a negative number of " .. (binary and "bytes" or "characters"), 3)
    end
end
-- Natives that answer an error message (say "Out of space") rather than raise mlua's error
-- object; the wrapper raises it as a string, at the method's caller, as CC's handles do.
local ANSWERS_ERROR = { write = true, writeLine = true }
local function handle(ud, names, binary)
    local h, closed = {}, false
    for _, name in ipairs(names) do
        local check = HANDLE_CHECKS[name]
        -- Called in tail position, so a check's level 3 is the method's caller (and invoke's
        -- own level 2).
        local function invoke(...)
            if check then check(select("#", ...), (...), binary) end
            if ANSWERS_ERROR[name] then
                local err = ud[name](ud, ...)
                if err then error(err, 2) end
                return
            end
            return ud[name](ud, ...)
        end
        local f = function(...)
            if closed then error("attempt to use a closed file", 2) end
            if (...) == h then return invoke(select(2, ...)) end
            return invoke(...)
        end
        if name == "close" then
            h.close = function(...)
                if closed then error("attempt to use a closed file", 2) end
                f(...)
                closed = true
            end
        else
            h[name] = f
        end
    end
    return h
end

-- CC: Tweaked's argument errors for a native's string arguments: "bad argument #1 (string
-- expected, got no value)" (mlua's own conversion error reads differently). Numbers are
-- accepted as strings, as CraftOS-PC does.
local function strings(f, n)
    return function(...)
        local count = select("#", ...)
        for i = 1, n do
            local v = (select(i, ...))
            if type(v) ~= "string" and type(v) ~= "number" then
                error(("bad argument #%d (string expected, got %s)"):format(i, i > count and "no value" or type(v)), 2)
            end
        end
        return f(...)
    end
end

fs = {}
local two = { move = true, copy = true }
for k, f in pairs(nfs) do fs[k] = strings(raising(f), two[k] and 2 or 1) end
local MODES = { r = READ, rb = READ, w = WRITE_SEEK, wb = WRITE_SEEK, a = WRITE, ab = WRITE,
    ["r+"] = UPDATE, ["r+b"] = UPDATE, ["w+"] = UPDATE, ["w+b"] = UPDATE }
local nopen = nfs.open
function fs.open(...)
    local path, mode = ...
    local count = select("#", ...)
    if type(path) ~= "string" then
        error("bad argument #1 (string expected, got " .. (count < 1 and "no value" or type(path)) .. ")", 2)
    end
    if type(mode) ~= "string" then
        error("bad argument #2 (string expected, got " .. (mode == nil and count < 2 and "no value" or type(mode)) .. ")", 2)
    end
    -- An unknown mode is an error, not a `nil, message` answer (FSAPI.open).
    local names = MODES[mode]
    if not names then error("Unsupported mode", 2) end
    local ok, ud = nopen(path, mode)
    if not ok then return nil, ud end
    return handle(ud, names, mode:find("b", 1, true) ~= nil)
end

-- The one ROM module served, CC's `cc.require` (rom/require.lua; the rest of /rom is empty):
-- the client gives a program its `require` and `package` with it.
local REQUIRE = "rom/modules/main/cc/require.lua"

function loadfile(path, mode, env)
    if type(mode) == "table" and env == nil then mode, env = nil, mode end
    if type(path) == "string" and fs.combine(path) == REQUIRE then
        local f = load(rom.require, "@/" .. REQUIRE, "t", env)
        return function() return f(expect) end
    end
    local h, err = fs.open(path, "r")
    if not h then return nil, err end
    local src = h.readAll()
    h.close()
    return load(src, "@/" .. fs.combine(path), "t", env)
end

function dofile(path)
    local f, err = loadfile(path, nil, _G)
    if not f then error(err, 2) end
    return f()
end

-- os.run: a program in its own environment (reading through to _G); its error is printed
-- with printError and reported as false, as CC: Tweaked's bios does.
function os.run(env, path, ...)
    if type(env) ~= "table" then error("bad argument #1 (table expected, got " .. type(env) .. ")", 2) end
    if type(path) ~= "string" then error("bad argument #2 (string expected, got " .. type(path) .. ")", 2) end
    setmetatable(env, { __index = _G })
    local f, err = loadfile(path, nil, env)
    if not f then
        printError(err)
        return false
    end
    local ok, msg = pcall(f, ...)
    if not ok then
        if msg and msg ~= "" then printError(msg) end
        return false
    end
    return true
end

-- io, over fs and the terminal (the host's io would reach the host's disk).
io = {}
function io.write(...) for i = 1, select("#", ...) do write(tostring((select(i, ...)))) end end
function io.read() return read() end
function io.open(path, mode)
    local h, err = fs.open(path, (mode or "r"):gsub("[+]", ""))
    if not h then return nil, err end
    local f = {}
    function f:read(fmt)
        fmt = fmt or "l"
        if type(fmt) == "number" then return h.read(fmt) end
        fmt = fmt:gsub("^%*", "")
        if fmt:sub(1, 1) == "a" then return h.readAll() or "" end
        if fmt:sub(1, 1) == "L" then return h.readLine(true) end
        return h.readLine()
    end
    function f:write(...) for i = 1, select("#", ...) do h.write((select(i, ...))) end return self end
    function f:lines() return function() return h.readLine() end end
    function f:flush() if h.flush then h.flush() end end
    function f:close() h.close() return true end
    return f
end
function io.lines(path)
    local f = assert(io.open(path, "r"))
    return f:lines()
end

-- http: the blocking forms pull events while they wait, as CC's do.
local nws, nreq = nhttp.websocket, nhttp.request
http = { checkURL = nhttp.checkURL }

local function wrap_ws(ud, url)
    -- Closed by the program or by the peer: send and receive raise from then on, as CC:
    -- Tweaked's WebsocketHandle does.
    local h, closed = {}, false
    local function args(first, ...) if first == h then return ... end return first, ... end
    function h.send(...)
        local msg, binary = args(...)
        if closed then error("attempt to use a closed file", 2) end
        local ok, err = ud:send(msg, binary)
        if not ok then error(err, 2) end
    end
    function h.receive(...)
        local timeout = args(...)
        if closed then error("attempt to use a closed file", 2) end
        local timer = timeout and os.startTimer(timeout)
        while true do
            local ev, u, msg, binary = os.pullEvent()
            if ev == "websocket_message" and u == url then
                if timer then os.cancelTimer(timer) end
                return msg, binary
            elseif ev == "websocket_closed" and u == url then
                closed = true
                return nil
            elseif ev == "timer" and timer and u == timer then
                return nil
            end
        end
    end
    function h.close()
        closed = true
        ud:close()
    end
    return h
end

local function wrap_response(ud, code, headers)
    local h = handle(ud, READ)
    function h.getResponseCode() return code end
    function h.getResponseHeaders() return headers end
    return h
end

-- As CC: Tweaked's rom/apis/http/http.lua: a refused URL both queues websocket_failure and
-- returns `false, err` ("true/false for legacy reasons"); success returns true.
function http.websocketAsync(url, headers)
    expect(1, url, "string")
    expect(2, headers, "table", "nil")
    local ok, err = nws(url, headers)
    if not ok then os.queueEvent("websocket_failure", url, err) end
    return ok, err
end

function http.websocket(url, headers)
    if type(url) == "table" then url, headers = url.url, url.headers end
    local ok, err = nws(url, headers)
    if not ok then return false, err end
    while true do
        local ev, u, arg = os.pullEvent()
        if ev == "websocket_success" and u == url then return arg end
        if ev == "websocket_failure" and u == url then return false, arg end
    end
end

-- Requests as CC: Tweaked's rom/apis/http/http.lua makes them: positional arguments checked
-- with `expect`, or a table { url, body, headers, binary, method, redirect } checked field by
-- field; one function per method (http.get, http.post, http.head, http.put, ...).
local methods = { GET = true, POST = true, HEAD = true, OPTIONS = true, PUT = true, DELETE = true, PATCH = true, TRACE = true }

local function check_key(options, key, ty, opt)
    local value = options[key]
    if (value ~= nil or not opt) and type(value) ~= ty then
        error(("bad field '%s' (%s expected, got %s"):format(key, ty, type(value)), 4)
    end
end

local function check_options(options, body)
    check_key(options, "url", "string")
    if body == false then check_key(options, "body", "nil") else check_key(options, "body", "string", not body) end
    check_key(options, "headers", "table", true)
    check_key(options, "method", "string", true)
    check_key(options, "redirect", "boolean", true)
    if options.method and not methods[options.method] then error("Unsupported HTTP method", 3) end
end

local function native_request(url, body, headers, binary, method)
    if type(url) == "table" then
        return nreq(url.url, url.headers, url.binary, url.method, url.body)
    end
    return nreq(url, headers, binary, method, body)
end

local function wait_response(url, ...)
    local ok, err = native_request(...)
    if not ok then return nil, err end
    while true do
        local ev, u, a, b = os.pullEvent()
        if ev == "http_success" and u == url then return a end
        if ev == "http_failure" and u == url then return nil, a, b end
    end
end

function http.request(url, body, headers, binary)
    local target = url
    if type(url) == "table" then
        check_options(url)
        target = url.url
    else
        expect(1, url, "string")
        expect(2, body, "string", "nil")
        expect(3, headers, "table", "nil")
        expect(4, binary, "boolean", "nil")
    end
    local ok, err = native_request(url, body, headers, binary)
    if not ok then os.queueEvent("http_failure", target, err) end
    return ok, err
end

function http.get(url, headers, binary)
    if type(url) == "table" then
        check_options(url, false)
        return wait_response(url.url, url)
    end
    expect(1, url, "string")
    expect(2, headers, "table", "nil")
    expect(3, binary, "boolean", "nil")
    return wait_response(url, url, nil, headers, binary)
end

for method in pairs(methods) do
    if method ~= "GET" then
        http[method:lower()] = function(url, body, headers, binary)
            if type(url) == "table" then
                check_options(url, true)
                return wait_response(url.url, url)
            end
            expect(1, url, "string")
            expect(2, body, "string")
            expect(3, headers, "table", "nil")
            expect(4, binary, "boolean", "nil")
            return wait_response(url, url, body, headers, binary, method ~= "POST" and method or nil)
        end
    end
end

-- fs.find and fs.isDriveRoot, as CC: Tweaked's rom/apis/fs.lua offers them: "*" and "?"
-- match within one path segment, results in fs.list's (sorted) order.
do
    local wild = { ["*"] = ".*", ["?"] = "." }
    local function segment_pattern(part)
        return "^" .. part:gsub("[%^%$%(%)%%%.%[%]%+%-%*%?]", function(c) return wild[c] or "%" .. c end) .. "$"
    end
    local function walk(path, parts, i, out)
        local part = parts[i]
        if not part then
            if fs.exists(path) then out[#out + 1] = path end
        elseif not part:find("[*?]") then
            walk(fs.combine(path, part), parts, i + 1, out)
        elseif fs.isDir(path) then
            local pattern = segment_pattern(part)
            for _, name in ipairs(fs.list(path)) do
                if name:find(pattern) then walk(fs.combine(path, name), parts, i + 1, out) end
            end
        end
    end
    function fs.find(pattern)
        expect(1, pattern, "string")
        pattern = fs.combine(pattern)
        if pattern == ".." or pattern:sub(1, 3) == "../" then error("/" .. pattern .. ": Invalid Path", 2) end
        if not pattern:find("[*?]") then
            if fs.exists(pattern) then return { pattern } end
            return {}
        end
        local parts = {}
        for part in pattern:gmatch("[^/]+") do parts[#parts + 1] = part end
        local out = {}
        walk("", parts, 1, out)
        return out
    end
    function fs.isDriveRoot(path)
        expect(1, path, "string")
        return fs.getDir(path) == ".." or fs.getDrive(path) ~= fs.getDrive(fs.getDir(path))
    end
end

-- peripheral, as CC: Tweaked's rom/apis/peripheral.lua builds it on the native table, which sees
-- only the six sides (peripherals/mod.rs): a peripheral with a network name is reached through
-- a wired modem's `peripheral_hub` methods. `wrap` calls the global `peripheral.call` at call
-- time, as CC's does (peripheral.lua `wrap`), so whatever replaces `peripheral.call` sees every
-- call a wrapped peripheral makes.
do
    local npn = native.peripheral
    local sides = { "bottom", "top", "back", "front", "right", "left" }
    -- The native call answers `true, ...` or `false, message`; this raises the message, a
    -- string, at the caller of whoever called this (CC's errors are strings).
    local function ncall(name, method, ...)
        local r = pack(npn.call(name, method, ...))
        if not r[1] then error(r[2], 3) end
        return unpack(r, 2, r.n)
    end
    -- The side of a wired modem that reaches `name`, if any.
    local function hub_for(name)
        for i = 1, #sides do
            local side = sides[i]
            if npn.hasType(side, "peripheral_hub") and ncall(side, "isPresentRemote", name) then return side end
        end
        return nil
    end
    local NOT_PERIPHERAL = "bad argument #1 (table is not a peripheral)"
    -- A wrapped peripheral's metatable; raised at the caller of the API function.
    local function wrapped_meta(p)
        local mt = getmetatable(p)
        if type(mt) ~= "table" or mt.__name ~= "peripheral" or type(mt.types) ~= "table" then error(NOT_PERIPHERAL, 3) end
        return mt
    end

    peripheral = {}
    function peripheral.getNames()
        local results = {}
        for i = 1, #sides do
            local side = sides[i]
            if npn.isPresent(side) then
                results[#results + 1] = side
                if npn.hasType(side, "peripheral_hub") then
                    local remote = ncall(side, "getNamesRemote")
                    for _, name in ipairs(remote) do results[#results + 1] = name end
                end
            end
        end
        return results
    end
    function peripheral.isPresent(name)
        expect(1, name, "string")
        return npn.isPresent(name) or hub_for(name) ~= nil
    end
    function peripheral.getType(p)
        expect(1, p, "string", "table")
        if type(p) == "table" then return unpack(wrapped_meta(p).types) end
        if npn.isPresent(p) then return npn.getType(p) end
        local hub = hub_for(p)
        if hub then
            local r = pack(ncall(hub, "getTypeRemote", p))
            return unpack(r, 1, r.n)
        end
        return nil
    end
    function peripheral.hasType(p, kind)
        expect(1, p, "string", "table")
        expect(2, kind, "string")
        if type(p) == "table" then return wrapped_meta(p).types[kind] ~= nil end
        if npn.isPresent(p) then return npn.hasType(p, kind) end
        local hub = hub_for(p)
        if hub then return (ncall(hub, "hasTypeRemote", p, kind)) end
        return nil
    end
    function peripheral.getMethods(name)
        expect(1, name, "string")
        if npn.isPresent(name) then return npn.getMethods(name) end
        local hub = hub_for(name)
        if hub then return (ncall(hub, "getMethodsRemote", name)) end
        return nil
    end
    function peripheral.getName(p)
        expect(1, p, "table")
        local mt = getmetatable(p)
        if type(mt) ~= "table" or mt.__name ~= "peripheral" or type(mt.name) ~= "string" then error(NOT_PERIPHERAL, 2) end
        return mt.name
    end
    function peripheral.call(name, method, ...)
        expect(1, name, "string")
        expect(2, method, "string")
        local r, line
        if npn.isPresent(name) then
            r, line = pack(npn.call(name, method, ...)), 257
        else
            local hub = hub_for(name)
            if not hub then return nil end
            r, line = pack(npn.call(hub, "callRemote", name, method, ...)), 263
        end
        -- A peripheral's error names the ROM's line that called the native method, wherever the
        -- program called from (CraftOS-PC, CC: Tweaked 1.110.2's rom/apis/peripheral.lua:
        -- "/rom/apis/peripheral.lua:257: No such method"), so a wrapper around
        -- `peripheral.call` (the client's monitor shadows) changes no message.
        if not r[1] then error("/rom/apis/peripheral.lua:" .. line .. ": " .. tostring(r[2]), 0) end
        return unpack(r, 2, r.n)
    end
    function peripheral.wrap(name)
        expect(1, name, "string")
        local methods = peripheral.getMethods(name)
        if not methods then return nil end
        local types = { peripheral.getType(name) }
        for i = 1, #types do types[types[i]] = true end
        local result = setmetatable({}, { __name = "peripheral", name = name, type = types[1], types = types })
        for _, method in ipairs(methods) do
            result[method] = function(...) return peripheral.call(name, method, ...) end
        end
        return result
    end
    function peripheral.find(kind, filter)
        expect(1, kind, "string")
        expect(2, filter, "function", "nil")
        local found = {}
        for _, name in ipairs(peripheral.getNames()) do
            if peripheral.hasType(name, kind) then
                local p = peripheral.wrap(name)
                if filter == nil or filter(name, p) then found[#found + 1] = p end
            end
        end
        return unpack(found)
    end

    -- periphemu, CraftOS-PC's API (src/apis/periphemu.cpp): create(side, type, ...) answers
    -- true, or false and why; a number side is "<type>_<n>"; remove(side) answers whether
    -- something was there. The emulator's own extension: a modem's third argument may be
    -- { wireless = true } (CraftOS-PC's modem is wired; docs/emulator.md).
    local npe = native.periphemu
    periphemu = {}
    function periphemu.create(side, kind, ...)
        if type(side) ~= "string" and type(side) ~= "number" then
            error(("bad argument #1 (expected string or number, got %s)"):format(type(side)), 2)
        end
        expect(2, kind, "string")
        if type(side) == "number" then side = ("%d"):format(side) end
        return npe.create(side, kind, ...)
    end
    function periphemu.remove(side)
        expect(1, side, "string", "number")
        return npe.remove(tostring(side))
    end
    function periphemu.names() return npe.names() end

    -- disk, as CC's rom/apis/disk.lua: each function answers for a drive, and as for an empty
    -- side (false or nil) elsewhere.
    disk = {}
    local function call_drive(name, method, ...)
        expect(1, name, "string")
        if peripheral.getType(name) ~= "drive" then return nil end
        return peripheral.call(name, method, ...)
    end
    function disk.isPresent(name) return call_drive(name, "isDiskPresent") or false end
    function disk.hasData(name) return call_drive(name, "hasData") or false end
    function disk.getMountPath(name) return call_drive(name, "getMountPath") end
    function disk.getLabel(name) return call_drive(name, "getDiskLabel") end
    function disk.setLabel(name, label) call_drive(name, "setDiskLabel", label) end
    function disk.getID(name) return call_drive(name, "getDiskID") end
    function disk.hasAudio(name) return call_drive(name, "hasAudio") or false end
    function disk.getAudioTitle(name) return call_drive(name, "getAudioTitle") end
    function disk.playAudio(name) call_drive(name, "playAudio") end
    function disk.stopAudio(name) call_drive(name, "stopAudio") end
    function disk.eject(name) call_drive(name, "ejectDisk") end
end

-- redstone: the computer's own outputs, kept here; nothing is wired to it, so every input
-- reads off (false, 0). Sides as CC: Tweaked names and orders them; arguments are checked
-- with its wording ("bad argument #1 (unknown option up)").
do
    local SIDES = { "bottom", "top", "back", "front", "right", "left" }
    local known = {}
    for _, side in ipairs(SIDES) do known[side] = true end
    local analog, bundled = {}, {}
    local function arg_error(i, wanted, count, v)
        -- Level 4: past this helper, `args` and the redstone function, at its caller.
        error(("bad argument #%d (%s expected, got %s)"):format(i, wanted, i > count and "no value" or type(v)), 4)
    end
    -- The side (argument 1) and the value (argument 2) of a call, checked.
    local function args(wanted, ...)
        local count, side, value = select("#", ...), ...
        if type(side) ~= "string" then arg_error(1, "string", count, side) end
        if not known[side:lower()] then error(("bad argument #1 (unknown option %s)"):format(side), 3) end
        if wanted and type(value) ~= wanted then arg_error(2, wanted, count, value) end
        return side:lower(), value
    end
    redstone = {}
    function redstone.getSides() return { table.unpack(SIDES) } end
    function redstone.setOutput(...)
        local side, on = args("boolean", ...)
        analog[side] = on and 15 or 0
    end
    function redstone.getOutput(...) return (analog[args(nil, ...)] or 0) > 0 end
    function redstone.getInput(...) args(nil, ...) return false end
    function redstone.setAnalogOutput(...)
        local side, level = args("number", ...)
        if level ~= level or level < 0 or level > 15 then error("Expected number in range 0-15", 2) end
        analog[side] = math.floor(level)
    end
    function redstone.getAnalogOutput(...) return analog[args(nil, ...)] or 0 end
    function redstone.getAnalogInput(...) args(nil, ...) return 0 end
    function redstone.setBundledOutput(...)
        local side, mask = args("number", ...)
        bundled[side] = mask
    end
    function redstone.getBundledOutput(...) return bundled[args(nil, ...)] or 0 end
    function redstone.getBundledInput(...) args(nil, ...) return 0 end
    function redstone.testBundledInput(...)
        local _, mask = args("number", ...)
        return bit32.band(0, mask) == mask
    end
    redstone.setAnalogueOutput = redstone.setAnalogOutput
    redstone.getAnalogueOutput = redstone.getAnalogOutput
    redstone.getAnalogueInput = redstone.getAnalogInput
    rs = redstone
end

-- The ROM APIs, each a chunk that returns its table.
local function rom_api(name)
    local f = assert(native_load(rom[name], "@/rom/apis/" .. name .. ".lua", "t", _G))
    return f()
end
utf8 = rom_api("utf8")
textutils = rom_api("textutils")
settings = rom_api("settings")
parallel = rom_api("parallel")
shell = rom_api("shell")
-- A turtle's `turtle` and a pocket computer's `pocket` (rom/device.lua); nil on a computer.
if native.device then
    local api = assert(native_load(rom.device, "@/rom/apis/device.lua", "t", _G))(native.device, native.turtle)
    turtle, pocket = api.turtle, api.pocket
end

settings.define("shell.allow_startup", { default = true, type = "boolean" })
settings.define("shell.allow_disk_startup", { default = true, type = "boolean" })

-- The startup programs under `base`, as CC's rom/startup.lua finds them: `startup.lua` (or a
-- `startup` file), then every file in a `startup` folder; nil when there are none.
local function find_startups(base)
    local path = "/" .. fs.combine(base, "startup")
    local found
    if fs.exists(path .. ".lua") and not fs.isDir(path .. ".lua") then
        found = { path .. ".lua" }
    elseif fs.exists(path) and not fs.isDir(path) then
        found = { path }
    end
    if fs.isDir(path) then
        found = found or {}
        for _, name in ipairs(fs.list(path)) do
            local file = "/" .. fs.combine(path, name)
            if not fs.isDir(file) then found[#found + 1] = file end
        end
    end
    return found
end

-- Boot as CC's shell does: settings, banner, startup files, then the prompt. A disk's startup
-- replaces the computer's (rom/startup.lua), unless `shell.allow_disk_startup` is false.
local function boot()
    term.clear()
    term.setCursorPos(1, 1)
    if fs.exists("/.settings") then settings.load("/.settings") end
    print(os.version())
    local startups
    if settings.get("shell.allow_startup") then startups = find_startups("/") end
    if settings.get("shell.allow_disk_startup") then
        for _, name in ipairs(peripheral.getNames()) do
            if disk.isPresent(name) and disk.hasData(name) then
                local found = find_startups(disk.getMountPath(name))
                if found then
                    startups = found
                    break
                end
            end
        end
    end
    for _, path in ipairs(startups or {}) do shell.run(path) end
    shell.run("shell")
end

return { boot = boot, spawn = spawn, wrap_ws = wrap_ws, wrap_response = wrap_response }
