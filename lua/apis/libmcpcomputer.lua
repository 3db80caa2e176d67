--- Protocol-agnostic primitives behind the standard request types.
--
-- Runs Lua with captured output, converts return values into the
-- descriptors of docs/protocol.md ("Payloads"), and reads, writes and lists files.
-- Nothing here knows about sockets, events or JSON: the server turns these
-- Lua tables into payloads. Arrays are marked with a metatable whose
-- `__jsontype` is `"array"`, which `json.lua` honours, so that an empty
-- `returns` is still written as `[]`.
--
-- Loading needs no CC API (`fs` and `os.epoch` are only touched inside
-- functions), so the pure parts run under plain Lua 5.2 in the specs.
--
-- @module libmcpcomputer

local lib = {}

--- Limits of a Result (docs/protocol.md, "Payloads").
lib.MAX_OUTPUT = 65536
lib.MAX_DEPTH = 8
lib.MAX_ENTRIES = 1000

local floor, huge = math.floor, math.huge
local byte, find = string.byte, string.find
local select, tostring, type, pairs, ipairs = select, tostring, type, pairs, ipairs
local array_mt = { __jsontype = "array" }
local function array(t) return setmetatable(t or {}, array_mt) end

-- Argument checks: apis/expect.lua, beside this file.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"
local expect = dofile(here .. "expect.lua").expect

local function now_ms()
    if os.epoch then return os.epoch("utc") end
    return os.clock() * 1000
end

-- Descriptors -----------------------------------------------------------------

--- Plain name of a non-finite number: "inf", "-inf" or "nan".
local function nonFinite(n)
    if n ~= n then return "nan" end
    if n == huge then return "inf" end
    if n == -huge then return "-inf" end
end

local function isArray(t)
    local n, max = 0, 0
    for k in pairs(t) do
        if type(k) ~= "number" or k < 1 or k ~= floor(k) then return false end
        n = n + 1
        if k > max then max = k end
    end
    return n > 0 and n == max, n
end

local function keyString(k)
    if type(k) == "string" then return k end
    if type(k) == "number" and k == floor(k) and k > -2 ^ 53 and k < 2 ^ 53 then
        return ("%.0f"):format(k)
    end
    return tostring(k)
end

-- Converts the contents of table t (at depth `depth`) into plain JSON-able
-- tables. `state` holds the entry budget, the tables on the current path
-- (for cycles) and the truncated flag.
local plain
local function inner(v, depth, state)
    local tv = type(v)
    if tv == "string" or tv == "boolean" then return v end
    if tv == "number" then
        local nf = nonFinite(v)
        if nf then return { type = "number", repr = nf } end
        return v
    end
    if tv == "table" then
        if state.path[v] then return { type = "cycle" } end
        if depth > lib.MAX_DEPTH then
            state.truncated = true
            return { type = "table", repr = tostring(v), truncated = true }
        end
        return plain(v, depth, state)
    end
    return { type = tv, repr = tostring(v) }
end

plain = function(t, depth, state)
    state.path[t] = true
    local out
    local arr, n = isArray(t)
    if arr then
        out = array()
        for i = 1, n do
            if state.entries >= lib.MAX_ENTRIES then state.truncated = true break end
            state.entries = state.entries + 1
            out[i] = inner(t[i], depth + 1, state)
        end
    else
        out = {}
        for k, v in pairs(t) do
            if state.entries >= lib.MAX_ENTRIES then state.truncated = true break end
            state.entries = state.entries + 1
            out[keyString(k)] = inner(v, depth + 1, state)
        end
    end
    state.path[t] = nil
    return out
end

--- Describe one Lua value (docs/protocol.md, "Payloads").
--
-- nil, booleans, finite numbers and strings become `{type, value}`; tables
-- `{type="table", value, truncated}` with plain JSON inside (arrays for keys
-- exactly 1..n); functions, threads, userdata and non-finite numbers
-- `{type, repr}`. A nil is `{type="nil"}`.
-- @param v Any value.
-- @treturn table The descriptor.
function lib.describe(v)
    local tv = type(v)
    if tv == "nil" then return { type = "nil" } end
    if tv == "boolean" or tv == "string" then return { type = tv, value = v } end
    if tv == "number" then
        local nf = nonFinite(v)
        if nf then return { type = "number", repr = nf } end
        return { type = "number", value = v }
    end
    if tv == "table" then
        local state = { entries = 0, path = {}, truncated = false }
        local value = plain(v, 1, state)
        return { type = "table", value = value, truncated = state.truncated }
    end
    return { type = tv, repr = tostring(v) }
end

--- Describe a list of values, nils kept in place.
-- @tparam table t The values, packed (`t.n` is their count).
-- @treturn table An array of descriptors.
-- @treturn number The count.
function lib.describeAll(t)
    local out = array()
    local n = t.n or #t
    for i = 1, n do out[i] = lib.describe(t[i]) end
    return out, n
end

-- Output capture ------------------------------------------------------------

--- The marker put where output was left out (the host recognises it and replaces it with
-- one that says how to read the rest).
function lib.cutMarker(n)
    return ("\n[… trapdesk cut %d bytes of output here …]\n"):format(n)
end

-- Newlines in a text: plain searches (no copy of the text, as `gsub` makes), or one `gsub`
-- when lines are short enough that searching one by one costs more.
local function countNewlines(text)
    local n, at, most = 0, find(text, "\n", 1, true), #text / 32 + 16
    while at do
        n = n + 1
        if n > most then
            local _, all = text:gsub("\n", "")
            return all
        end
        at = find(text, "\n", at + 1, true)
    end
    return n
end
lib.countNewlines = countNewlines

--- A capture of what a chunk prints.
--
-- `capture.print`, `capture.write` and `capture.printError` behave like CC's
-- globals (print joins its arguments with tabs and ends with "\n";
-- printError prints the same way on stream "err"), but append to the
-- capture instead of drawing. `onOutput(stream, text)` sees every piece as it
-- is produced. The kept text is at most `limit` bytes: its head and its tail
-- (the end is what a reader needs most), with a marker between them saying how
-- many bytes were left out; the totals count everything.
-- @tparam[opt] function onOutput Called with (stream, text) for each piece.
-- @tparam[opt] number limit Bytes kept (default @{MAX_OUTPUT}).
-- @treturn table The capture.
function lib.newCapture(onOutput, limit)
    limit = limit or lib.MAX_OUTPUT
    local headLimit = floor(limit / 2)
    local tailLimit = limit - headLimit
    local head, headSize = {}, 0
    local tail, tailSize = {}, 0
    local bytes, newlines, endsOpen = 0, 0, false
    local cap = {}

    -- A large text is passed over as few times as possible (a chunk printing 1 MB at once
    -- pays for every pass in one go): newlines are counted with plain searches, only the last
    -- `tailLimit` bytes of a long text are cut out for the tail, and the text itself goes on to
    -- `onOutput` as it came.
    local function emit(stream, text)
        local len = #text
        if len == 0 then return 0 end
        bytes = bytes + len
        local n = countNewlines(text)
        newlines = newlines + n
        endsOpen = byte(text, len) ~= 10
        local from = 1 -- the first byte not kept in the head
        if headSize < headLimit then
            local room = headLimit - headSize
            if len <= room then
                head[#head + 1] = text
                headSize = headSize + len
                from = len + 1
            else
                head[#head + 1] = text:sub(1, room)
                headSize = headLimit
                from = room + 1
            end
        end
        local rest = len - from + 1
        if rest >= tailLimit then
            -- Nothing kept before survives this text: keep only its own end.
            local t = text:sub(len - tailLimit + 1)
            tail, tailSize = { t }, #t
        elseif rest > 0 then
            tail[#tail + 1] = from == 1 and text or text:sub(from)
            tailSize = tailSize + rest
            -- Keep at most twice the tail's share, so that a long run does not pile up.
            if tailSize > 2 * tailLimit then
                local t = table.concat(tail):sub(-tailLimit)
                tail, tailSize = { t }, #t
            end
        end
        if onOutput then onOutput(stream, text) end
        return n
    end
    cap.emit = emit

    function cap.write(text)
        expect(1, text, "string", "number")
        return emit("out", tostring(text))
    end

    local function joined(...)
        local n = select("#", ...)
        if n == 1 then return tostring((...)) .. "\n" end -- one copy, not two
        local t = {}
        for i = 1, n do t[i] = tostring((select(i, ...))) end
        return table.concat(t, "\t") .. "\n"
    end

    function cap.print(...)
        return emit("out", joined(...))
    end

    function cap.printError(...)
        return emit("err", joined(...))
    end

    --- The kept text and whether anything was left out.
    function cap.text()
        local t = table.concat(tail)
        if #t > tailLimit then t = t:sub(-tailLimit) end
        local cut = bytes - headSize - #t
        if cut <= 0 then return table.concat(head) .. t, false end
        return table.concat(head) .. lib.cutMarker(cut) .. t, true
    end

    --- Totals: bytes produced, lines produced (an unfinished last line counts), bytes kept.
    function cap.totals()
        local t = tailSize > tailLimit and tailLimit or tailSize
        return bytes, newlines + ((bytes > 0 and endsOpen) and 1 or 0), headSize + t
    end

    return cap
end

--- The output fields of a Result: the kept text and the true totals.
local function outputFields(cap, result)
    local output, truncated = cap.text()
    local bytes, lines, kept = cap.totals()
    result.output, result.output_truncated = output, truncated
    result.output_bytes, result.output_lines = bytes, lines
    if truncated then result.output_kept_bytes = kept end
    return result
end
lib.outputFields = outputFields

--- A terminal that draws into a capture, for @{term.redirect} while a chunk runs.
--
-- Everything a chunk draws through any API (`term.write`, the global `print`
-- of a program it runs with `shell.run`, `os.run` or `dofile`, `printError`,
-- `blit`) becomes text of the capture, as CC's own multishell gives each tab
-- its own terminal. Moving to the next row is a newline; scrolling is one per
-- row; other cursor moves end the current line when something is on it. Text
-- drawn in red (how `printError` draws on a colour terminal) goes to the
-- "err" stream.
-- @tparam table cap A capture from @{newCapture}.
-- @tparam[opt] table parent The terminal it stands in for (its size is reported).
-- @treturn table A terminal object.
function lib.newTerm(cap, parent)
    local w, h = 51, 19
    if parent and parent.getSize then
        local ok, a, b = pcall(parent.getSize)
        if ok and type(a) == "number" and type(b) == "number" then w, h = a, b end
    end
    local RED, WHITE, BLACK = 0x4000, 0x1, 0x8000
    local x, y, fg, bg, blink = 1, 1, WHITE, BLACK, false
    local lineOpen = false
    local t = {}
    local function stream() return fg == RED and "err" or "out" end
    local function newline()
        cap.emit(stream(), "\n")
        lineOpen = false
    end
    function t.write(text)
        text = tostring(text)
        if text == "" then return end
        cap.emit(stream(), text)
        lineOpen = true
        x = x + #text
    end
    function t.blit(text, _, _) t.write(text) end
    function t.setCursorPos(nx, ny)
        nx, ny = floor(tonumber(nx) or x), floor(tonumber(ny) or y)
        if ny == y + 1 or (ny ~= y and lineOpen) then newline() end
        x, y = nx, ny
    end
    function t.getCursorPos() return x, y end
    function t.scroll(n)
        n = tonumber(n) or 0
        -- The text moves up; the cursor stays on its row, as on a real terminal.
        for _ = 1, n do newline() end
    end
    function t.clear() if lineOpen then newline() end end
    function t.clearLine() end
    function t.getSize() return w, h end
    function t.setCursorBlink(b) blink = b and true or false end
    function t.getCursorBlink() return blink end
    function t.isColour() return true end
    function t.setTextColour(c) fg = c end
    function t.getTextColour() return fg end
    function t.setBackgroundColour(c) bg = c end
    function t.getBackgroundColour() return bg end
    function t.setPaletteColour() end
    function t.getPaletteColour(c)
        if parent and parent.getPaletteColour then return parent.getPaletteColour(c) end
        return 1, 1, 1
    end
    t.isColor, t.setTextColor, t.getTextColor = t.isColour, t.setTextColour, t.getTextColour
    t.setBackgroundColor, t.getBackgroundColor = t.setBackgroundColour, t.getBackgroundColour
    t.setPaletteColor, t.getPaletteColor = t.setPaletteColour, t.getPaletteColour
    return t
end

-- Running code --------------------------------------------------------------

--- Make the environment a chunk runs in: print/write/printError captured,
-- everything else (term.* too) read through to `base`.
local function makeEnv(cap, base)
    -- The chunk gets its own `os` (reading through to the real one), so a chunk that redefines
    -- `os.pullEvent` or `os.queueEvent` changes them for itself, not for the client's own loops
    -- which share the computer's global `os` table.
    local env = {
        print = cap.print, write = cap.write, printError = cap.printError,
        os = setmetatable({}, { __index = base.os }),
    }
    return setmetatable(env, { __index = base })
end

local function errorResult(cap, started, message, traceback, value)
    return outputFields(cap, {
        ok = false, error = message, traceback = traceback, error_value = value,
        returns = array(), n = 0, duration_ms = now_ms() - started,
    })
end

--- A value as the console shows it: strings quoted, tables as `{a=1, 2}`.
function lib.render(v, depth)
    depth = depth or 0
    local tv = type(v)
    if tv == "string" then return (("%q"):format(v):gsub("\\\n", "\\n")) end
    if tv ~= "table" then return tostring(v) end
    local mt = getmetatable(v)
    if type(mt) == "table" and mt.__tostring then
        local ok, s = pcall(tostring, v)
        if ok then return s end
    end
    if depth >= 3 then return "{…}" end
    local parts, count = {}, 0
    local arr, n = isArray(v)
    if arr then
        for i = 1, n do
            count = count + 1
            if count > 8 then parts[#parts + 1] = "…" break end
            parts[#parts + 1] = lib.render(v[i], depth + 1)
        end
    else
        local keys = {}
        for k in pairs(v) do keys[#keys + 1] = k end
        table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
        for _, k in ipairs(keys) do
            count = count + 1
            if count > 8 then parts[#parts + 1] = "…" break end
            local key = (type(k) == "string" and k:match("^[%a_][%w_]*$")) and k or ("[" .. lib.render(k, depth + 1) .. "]")
            parts[#parts + 1] = key .. "=" .. lib.render(v[k], depth + 1)
        end
    end
    return "{" .. table.concat(parts, ", ") .. "}"
end

--- A traceback without the frames of the client that ran the chunk: everything after
-- the chunk's own outermost frame is ours, not the caller's.
function lib.cutTraceback(tb, label)
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
        elseif line:find("apis/libmcpcomputer%.lua") or line:find("apis/libsandbox%.lua")
            or line:find("mcp%-computer%-server%.lua") or line:find("in function 'xpcall'")
            or line:find("in function <[^>]*xpcall") then
            break
        end
        out[#out + 1] = line
    end
    return table.concat(out, "\n")
end

local function run(fn, args, cap, started, label)
    local traceback, value
    local function handler(err)
        if type(err) ~= "string" then
            value = lib.describe(err)
            local ok, s = pcall(lib.render, err)
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
    if not res[1] then return errorResult(cap, started, res[2], traceback, value) end
    local values = table.pack(table.unpack(res, 2, res.n))
    local returns, n = lib.describeAll(values)
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
-- @tparam[opt] table opts `capture` (from @{newCapture}), `onOutput`, `env` (the base environment).
-- @treturn table The Result.
function lib.executeLua(code, name, opts)
    expect(1, code, "string")
    expect(2, name, "string", "nil")
    opts = opts or {}
    local started = now_ms()
    local cap = opts.capture or lib.newCapture(opts.onOutput)
    local env = makeEnv(cap, opts.env or _ENV)
    local fn, err = load(code, name or "=exec", "t", env)
    if not fn then return errorResult(cap, started, err) end
    return run(fn, { n = 0 }, cap, started, labelOf(name or "=exec"))
end

--- Run a file with arguments, in the same captured environment.
-- The chunk name is `"@" .. path`, so errors read `path:3: ...`; `args` are
-- passed as varargs and as the global `arg` (`arg[0]` = path).
-- @tparam string path The file.
-- @tparam[opt] table args String arguments.
-- @tparam[opt] table opts As for @{executeLua}.
-- @treturn table The Result.
function lib.runFile(path, args, opts)
    expect(1, path, "string")
    expect(2, args, "table", "nil")
    opts = opts or {}
    local started = now_ms()
    local cap = opts.capture or lib.newCapture(opts.onOutput)
    args = args or {}
    local packed = { n = 0 }
    for i = 1, #args do packed[i] = tostring(args[i]); packed.n = i end
    if fs.isDir(path) then return errorResult(cap, started, "Is a directory: " .. path) end
    local h = fs.open(path, "rb")
    if not h then return errorResult(cap, started, "File not found: " .. path) end
    local src = h.readAll() or ""
    h.close()
    local env = makeEnv(cap, opts.env or _ENV)
    local arg = { [0] = path }
    for i = 1, packed.n do arg[i] = packed[i] end
    env.arg = arg
    local fn, err = load(src, "@" .. path, "t", env)
    if not fn then return errorResult(cap, started, err) end
    return run(fn, packed, cap, started, path)
end

-- Files -----------------------------------------------------------------------

local function fail(err) return { ok = false, error = tostring(err), bytes = 0 } end

-- A write replaces a file in steps, any of which a crash (the server stopping, the computer
-- unloaded, kill -9 of an emulator) can interrupt:
--   1. a journal entry naming the file goes into `lib.JOURNAL` (a file whose last byte is "\n"
--      once complete);
--   2. the new content goes to `.NAME.trapdesk-new` beside the file;
--   3. the old file is renamed to `.NAME.trapdesk-old` (CC's fs.move refuses to replace a file,
--      so there is no single atomic replace);
--   4. the new one is renamed to NAME;
--   5. the old one and the journal entry are deleted.
-- `recoverWrite` finishes or undoes an interrupted write so that NAME holds the old content
-- (interrupted in 1-2) or the new one (3-5), never a mix and never nothing: between 3 and 4
-- NAME is missing, and only the journal says so. `recoverWrites` runs at boot (startup.lua)
-- and every write runs `recoverWrite` on its own path first.

--- Where writes in progress are journalled (one file per write).
lib.JOURNAL = "/trapdesk/journal"

local function sidecars(path)
    local dir, name = fs.getDir(path), fs.getName(path)
    return fs.combine(dir, "." .. name .. ".trapdesk-new"), fs.combine(dir, "." .. name .. ".trapdesk-old")
end

--- Finish or undo an interrupted write of `path` (see above); true when `path` is consistent.
-- @tparam string path The file.
-- @treturn boolean Whether no interrupted write is left behind.
-- @treturn[opt] string Why not.
function lib.recoverWrite(path)
    path = fs.combine(path, "")
    local new, old = sidecars(path)
    local ok, err = pcall(function()
        if fs.exists(old) and not fs.isDir(old) then
            if fs.exists(path) then
                -- Interrupted after step 4: the new file is in place.
                fs.delete(old)
            elseif fs.exists(new) then
                -- Between steps 3 and 4: the new content is complete (step 2 ended before 3).
                fs.move(new, path)
                fs.delete(old)
            else
                fs.move(old, path)
            end
        end
        -- Interrupted in step 2 (or before 3): the old file was never touched.
        if fs.exists(new) and not fs.isDir(new) then fs.delete(new) end
    end)
    if not ok then return false, tostring(err) end
    return true
end

--- Recover every write the journal names (at boot, before anything reads the files).
-- @treturn number How many interrupted writes were found.
function lib.recoverWrites()
    local dir = lib.JOURNAL
    if not fs.isDir(dir) then return 0 end
    local n = 0
    for _, entry in ipairs(fs.list(dir)) do
        local full = fs.combine(dir, entry)
        local h = fs.open(full, "rb")
        local text = h and h.readAll() or ""
        if h then h.close() end
        -- A torn entry (no final newline) was cut in step 1: nothing else was touched.
        local path = text:match("^(.-)\n$")
        if path and path ~= "" then
            n = n + 1
            lib.recoverWrite(path)
        end
        pcall(fs.delete, full)
    end
    return n
end

local function journal(path)
    local dir = lib.JOURNAL
    if not fs.isDir(dir) then pcall(fs.makeDir, dir) end
    local entry
    repeat
        entry = fs.combine(dir, tostring(math.random(1, 0x7fffffff)))
    until not fs.exists(entry)
    local h, err = fs.open(entry, "wb")
    if not h then return nil, err or ("Cannot write /" .. entry) end
    local ok, werr = pcall(h.write, path .. "\n")
    pcall(h.close)
    if not ok then
        pcall(fs.delete, entry)
        return nil, werr
    end
    return entry
end

-- Steps 3-5 (the complete new content is in `new`). A failure that is not a crash puts the
-- old file back.
local function swap(path, new, old)
    local ok, err = pcall(function()
        if fs.exists(path) then fs.move(path, old) end
        fs.move(new, path)
        if fs.exists(old) then fs.delete(old) end
    end)
    if not ok then
        pcall(function()
            if fs.exists(old) and not fs.exists(path) then fs.move(old, path) end
            if fs.exists(new) then fs.delete(new) end
        end)
    end
    return ok, err
end

-- Bytes per write call when a write's content comes in many small pieces.
local WRITE_PIECE = 65536

-- Writes `pieces` to the handle in order. Small pieces (base64 decodes 1.5 KB at a time) are
-- gathered into writes of up to WRITE_PIECE: one runtime call per piece would be ~700 writes
-- for 1 MB (and as many kill points in tests/torn_files.rs, each a CraftOS-PC reboot).
local function writePieces(h, pieces, pause)
    local buf, n, size = {}, 0, 0
    local function flush()
        if n > 0 then h.write(n == 1 and buf[1] or table.concat(buf, "", 1, n)) end
        buf, n, size = {}, 0, 0
    end
    for i = 1, #pieces do
        local p = pieces[i]
        if #p >= WRITE_PIECE then
            flush()
            h.write(p)
        elseif p ~= "" then
            n, size = n + 1, size + #p
            buf[n] = p
            if size >= WRITE_PIECE then flush() end
        end
        if pause then pause() end
    end
    flush()
end

-- A put of several pieces (src/client/transfer.rs) appends them to a hidden part file beside
-- its target, `.NAME.XXXXXXXX.trapdesk-part`, and then moves the whole part over the target
-- with @{moveInto}. The part is never read until complete and only the journalled move puts it
-- in place, so an interrupted piece can tear the part (which the put then deletes) but never
-- the target: its pieces are written in place, each costing its own bytes. Journalled like any
-- other file, every append would copy the whole part so far (a put of N pieces writing
-- N(N+1)/2 pieces of bytes: 593 KB for a 200 KB file, 8.9 MB for 1 MiB).
local PART_NAME = "^%..+%.%x%x%x%x%x%x%x%x%.trapdesk%-part$"

--- Whether `path` names a put's part file (written in place, not journalled).
-- @tparam string path The file.
-- @treturn boolean
function lib.isPartFile(path)
    return fs.getName(path):match(PART_NAME) ~= nil
end

-- Runs `write(h)`, closes `h`, and checks that `file` now holds `want` bytes: CraftOS-PC drops
-- what does not fit on a full disk without an error (found by tests/resilience.rs), so
-- only the size on disk tells. `name` is the file the error names. Returns ok, error.
local function writeChecked(h, file, want, name, write)
    local ok, werr = pcall(write, h)
    local cok, cerr = pcall(h.close)
    if ok and not cok then ok, werr = false, cerr end
    if ok then
        local sok, got = pcall(fs.getSize, file)
        if not sok or got ~= want then
            ok, werr = false, ("Out of space: wrote %s of %d bytes of /%s"):format(
                sok and tostring(got) or "none", want, name)
        end
    end
    return ok, werr
end

-- The in-place write of a part file: create (or append to) it, and check its size.
local function writePart(path, pieces, size, append, pause)
    local oldSize = 0
    if append and fs.exists(path) then oldSize = fs.getSize(path) end
    local h, err = fs.open(path, oldSize > 0 and "ab" or "wb")
    if not h then return fail(err or ("Cannot write /" .. path)) end
    local ok, werr = writeChecked(h, path, oldSize + size, path, function(f)
        writePieces(f, pieces, pause)
    end)
    -- A part that missed bytes must never be appended to again nor moved: delete it, so that
    -- a later append starts a file of the wrong size that the move's caller can tell.
    if not ok then pcall(fs.delete, path) return fail(werr) end
    return { ok = true, bytes = size }
end

--- Write bytes to a file atomically: after a crash at any point the file holds its old
-- content or the new one (see the steps above). A put's part file (@{isPartFile}) is the
-- exception: it is written in place, see above.
-- @tparam string path The file.
-- @tparam string|table bytes The content: a string, or a list of strings written one after
-- another (a large payload decoded in pieces is never joined in memory).
-- @tparam[opt] boolean append Add to the end of the existing content (copied into the temp
-- file in pieces of 64 KiB).
-- @tparam[opt] function pause Called between pieces (see apis/pace.lua).
-- @treturn table `{ok, bytes, error?}`.
function lib.writeFile(path, bytes, append, pause)
    expect(1, path, "string")
    expect(2, bytes, "string", "table")
    local pieces = type(bytes) == "table" and bytes or { bytes }
    local size = 0
    for i = 1, #pieces do
        if type(pieces[i]) ~= "string" then error("bad argument #2 (piece " .. i .. " is not a string)", 2) end
        size = size + #pieces[i]
    end
    path = fs.combine(path, "")
    if path == "" or fs.isDir(path) then return fail("Is a directory: /" .. path) end
    if fs.isReadOnly(path) then return fail("Access denied: /" .. path) end
    local dir = fs.getDir(path)
    if dir ~= "" and not fs.isDir(dir) then
        if fs.exists(dir) then return fail("Not a directory: /" .. dir) end
        local ok, err = pcall(fs.makeDir, dir)
        if not ok then return fail(err) end
    end
    if lib.isPartFile(path) then return writePart(path, pieces, size, append, pause) end
    local rok, rerr = lib.recoverWrite(path)
    if not rok then return fail(rerr) end
    -- An append copies the old content into the new file in pieces (never read whole).
    local oldSize = 0
    if append and fs.exists(path) then oldSize = fs.getSize(path) end
    local new, old = sidecars(path)
    -- Without its journal entry a crash mid-swap could not be undone: do not start.
    local entry, jerr = journal(path)
    if not entry then return fail(jerr) end
    local function forget() pcall(fs.delete, entry) end
    local h, err = fs.open(new, "wb")
    if not h then forget() return fail(err or ("Cannot write /" .. new)) end
    -- Swapping in a short file would tear the old one: the size is checked first.
    local ok, werr = writeChecked(h, new, oldSize + size, path, function(f)
        if oldSize > 0 then
            local r = fs.open(path, "rb")
            if not r then error("Cannot read /" .. path, 0) end
            while true do
                local piece = r.read(65536)
                if not piece or piece == "" then break end
                f.write(piece)
                if pause then pause() end
            end
            r.close()
        end
        writePieces(f, pieces, pause)
    end)
    if not ok then pcall(fs.delete, new) forget() return fail(werr) end
    ok, werr = swap(path, new, old)
    forget()
    if not ok then return fail(werr) end
    return { ok = true, bytes = size }
end

--- Move a complete file (the pieces of a put, say) over `path`, with the same guarantee as
-- @{writeFile}: after a crash at any point `path` holds its old content or `from`'s.
-- @tparam string from The complete file.
-- @tparam string path The target.
-- @treturn table `{ok, error?}`.
function lib.moveInto(from, path)
    expect(1, from, "string")
    expect(2, path, "string")
    from, path = fs.combine(from, ""), fs.combine(path, "")
    if path == "" or fs.isDir(path) then return fail("Is a directory: /" .. path) end
    if not fs.exists(from) or fs.isDir(from) then return fail("No such file: /" .. from) end
    local rok, rerr = lib.recoverWrite(path)
    if not rok then return fail(rerr) end
    local new, old = sidecars(path)
    local entry, jerr = journal(path)
    if not entry then return fail(jerr) end
    local ok, err = pcall(fs.move, from, new)
    if ok then ok, err = swap(path, new, old) end
    pcall(fs.delete, entry)
    if not ok then return fail(err) end
    return { ok = true }
end

--- Read a file, or one page of it, as bytes.
-- @tparam string path The file.
-- @tparam[opt] number offset First byte (0-based) of the page.
-- @tparam[opt] number length Most bytes in the page.
-- @treturn table `{ok, content, bytes, offset, total, error?}` (content is raw bytes; total is
-- the file's size).
function lib.readFile(path, offset, length)
    expect(1, path, "string")
    expect(2, offset, "number", "nil")
    expect(3, length, "number", "nil")
    if not fs.exists(path) then return { ok = false, error = "No such file: " .. path, content = "", bytes = 0 } end
    if fs.isDir(path) then return { ok = false, error = "Is a directory: " .. path, content = "", bytes = 0 } end
    local h, err = fs.open(path, "rb")
    if not h then return { ok = false, error = err or ("Cannot open " .. path), content = "", bytes = 0 } end
    if offset == nil and length == nil then
        local content = h.readAll() or ""
        h.close()
        return { ok = true, content = content, bytes = #content, offset = 0, total = #content }
    end
    -- A page costs its own size: seek to it and read only it.
    local total = fs.getSize(path)
    offset = math.min(offset or 0, total)
    length = math.min(length or (total - offset), total - offset)
    local content = ""
    if length > 0 then
        if offset > 0 then
            if h.seek then
                h.seek("set", offset)
            else
                -- No seek on this runtime: skip in reads of bounded size.
                local left = offset
                while left > 0 do
                    local n = math.min(left, 65536)
                    h.read(n)
                    left = left - n
                end
            end
        end
        content = h.read(length) or ""
    end
    h.close()
    return { ok = true, content = content, bytes = #content, offset = offset, total = total }
end

-- Moves, deletes, directories and checksums -----------------------------------

local function refuse(err) return { ok = false, error = tostring(err) } end

-- `..` past the root: CC refuses it in every fs call, each in words of its own (or, for
-- fs.exists, with a plain false), so the requests below refuse it first and all alike.
local function escapes(path)
    local p = fs.combine(path, "")
    return p == ".." or p:sub(1, 3) == "../", p
end

local function invalid(path) return refuse("Invalid Path: " .. path) end

--- Move a file or directory. An existing file at `to` is replaced only with `overwrite`,
-- and then with @{moveInto}'s guarantee (never a target that is gone or torn); a directory at
-- `to` is never replaced. Missing parent directories of `to` are created.
-- @tparam string from What to move.
-- @tparam string to Where to.
-- @tparam[opt] boolean overwrite Replace a file at `to`.
-- @treturn table `{ok, error?}`.
function lib.moveFile(from, to, overwrite)
    expect(1, from, "string")
    expect(2, to, "string")
    expect(3, overwrite, "boolean", "nil")
    local badFrom, f = escapes(from)
    local badTo, t = escapes(to)
    if badFrom then return invalid(from) end
    if badTo then return invalid(to) end
    if f == "" or t == "" then return refuse("Access denied: /") end
    -- A write interrupted on either path is finished first, so neither is missing by accident.
    for _, p in ipairs({ f, t }) do
        local rok, rerr = lib.recoverWrite(p)
        if not rok then return refuse(rerr) end
    end
    if not fs.exists(f) then return refuse("No such file: /" .. f) end
    if f == t then return { ok = true } end
    if fs.exists(t) then
        if fs.isDir(t) then return refuse("Is a directory: /" .. t) end
        if not overwrite then return refuse("File exists: /" .. t) end
        if fs.isDir(f) then return refuse("Is a directory: /" .. f) end
        local r = lib.moveInto(f, t)
        return { ok = r.ok, error = r.error }
    end
    local dir = fs.getDir(t)
    if dir ~= "" and not fs.isDir(dir) then
        if fs.exists(dir) then return refuse("Not a directory: /" .. dir) end
        local ok, err = pcall(fs.makeDir, dir)
        if not ok then return refuse(err) end
    end
    local ok, err = pcall(fs.move, f, t)
    if not ok then return refuse(err) end
    return { ok = true }
end

--- Delete a file or an empty directory; a path that does not exist is already deleted.
-- A directory with anything in it is refused: one request never removes a whole tree.
-- @tparam string path What to delete.
-- @treturn table `{ok, deleted, error?}` (`deleted` false when there was nothing).
function lib.deleteFile(path)
    expect(1, path, "string")
    local bad, p = escapes(path)
    if bad then return invalid(path) end
    if p == "" then return refuse("Access denied: /") end
    local rok, rerr = lib.recoverWrite(p)
    if not rok then return refuse(rerr) end
    if not fs.exists(p) then return { ok = true, deleted = false } end
    if fs.isDir(p) then
        local lok, names = pcall(fs.list, p)
        if not lok then return refuse(names) end
        if #names > 0 then return refuse("Directory not empty: /" .. p) end
    end
    local ok, err = pcall(fs.delete, p)
    if not ok then return refuse(err) end
    return { ok = true, deleted = true }
end

--- Make a directory and any missing parents; one that exists already is fine.
-- @tparam string path The directory.
-- @treturn table `{ok, created, error?}`.
function lib.makeDir(path)
    expect(1, path, "string")
    local bad, p = escapes(path)
    if bad then return invalid(path) end
    if fs.isDir(p) then return { ok = true, created = false } end
    if fs.exists(p) then return refuse("File exists: /" .. p) end
    local ok, err = pcall(fs.makeDir, p)
    if not ok then return refuse(err) end
    return { ok = true, created = true }
end

local crcTable
local function crcTableOf()
    if crcTable then return crcTable end
    local t = {}
    for i = 0, 255 do
        local c = i
        for _ = 1, 8 do
            if bit32.band(c, 1) == 1 then
                c = bit32.bxor(bit32.rshift(c, 1), 0xEDB88320)
            else
                c = bit32.rshift(c, 1)
            end
        end
        t[i] = c
    end
    crcTable = t
    return t
end

--- The IEEE CRC-32 of `bytes` (zlib's `crc32`), continued from `crc` for bytes in pieces.
-- @tparam string bytes The bytes.
-- @tparam[opt] number crc The CRC of the bytes before these (0 for none).
-- @treturn number The CRC, 0 to 2^32 - 1.
function lib.crc32(bytes, crc)
    expect(1, bytes, "string")
    expect(2, crc, "number", "nil")
    local t = crcTableOf()
    local band, bxor, rshift, byte = bit32.band, bit32.bxor, bit32.rshift, string.byte
    local c = bxor(crc or 0, 0xFFFFFFFF)
    for i = 1, #bytes do
        c = bxor(rshift(c, 8), t[band(bxor(c, byte(bytes, i)), 0xFF)])
    end
    return bxor(c, 0xFFFFFFFF)
end

--- What is at `path`: whether it exists, its size, whether it is a directory, and a file's
-- CRC-32 (read in pieces of 16 KiB, with `pause` between them).
-- @tparam string path The file or directory.
-- @tparam[opt] function pause Called between pieces (see apis/pace.lua).
-- @treturn table `{ok, exists, size, isDir, crc32?, error?}`.
function lib.fileInfo(path, pause)
    expect(1, path, "string")
    expect(2, pause, "function", "nil")
    local bad, p = escapes(path)
    if bad then return invalid(path) end
    if not fs.exists(p) then return { ok = true, exists = false, size = 0, isDir = false } end
    if fs.isDir(p) then return { ok = true, exists = true, size = 0, isDir = true } end
    local h, err = fs.open(p, "rb")
    if not h then return refuse(err or ("Cannot open /" .. p)) end
    local crc, size = 0, 0
    while true do
        local piece = h.read(16384)
        if not piece or piece == "" then break end
        crc = lib.crc32(piece, crc)
        size = size + #piece
        if pause then pause() end
    end
    h.close()
    return { ok = true, exists = true, size = size, isDir = false, crc32 = crc }
end

--- List a directory.
-- @tparam string path The directory.
-- @treturn table `{ok, entries = {{name, dir, size}...}, error?}`, sorted by name.
function lib.listFiles(path)
    expect(1, path, "string")
    if not fs.isDir(path) then
        return { ok = false, error = (fs.exists(path) and "Not a directory: " or "No such directory: ") .. path,
            entries = array() }
    end
    local ok, names = pcall(fs.list, path)
    if not ok then return { ok = false, error = tostring(names), entries = array() } end
    table.sort(names)
    local entries = array()
    for i, name in ipairs(names) do
        local full = fs.combine(path, name)
        local dir = fs.isDir(full)
        entries[i] = { name = name, dir = dir, size = dir and 0 or fs.getSize(full) }
    end
    return { ok = true, entries = entries }
end

return lib
