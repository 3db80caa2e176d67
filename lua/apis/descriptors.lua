--- Return values as the descriptors of a Result (docs/protocol.md, "Result descriptors").
--
-- A descriptor is a plain Lua table the server writes as JSON. Arrays are marked with a
-- metatable whose `__jsontype` is `"array"`, which `json.lua` honours, so that an empty
-- `returns` is still written as `[]`.
--
-- Every byte of a returned string survives: a string that is not valid UTF-8 is described
-- with its bytes in base64 (`{type="string", encoding="base64", value=…}`), as a value and
-- inside a table; a table with such a key is written as a list of its key/value pairs. The
-- host shows strings as UTF-8 text, which would replace every invalid byte.
--
-- Loading needs no CC API, so this runs under plain Lua 5.2 in the specs.
--
-- @module descriptors

local lib = {}

--- Limits of a described value: table depth, and entries in the whole value.
lib.MAX_DEPTH = 8
lib.MAX_ENTRIES = 1000

local floor, huge = math.floor, math.huge
local byte, find = string.byte, string.find
local tostring, type, pairs = tostring, type, pairs

-- Siblings (apis/expect.lua, apis/base64.lua) are loaded from beside this file.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"
local expect = dofile(here .. "expect.lua").expect
local base64 = dofile(here .. "base64.lua")

local array_mt = { __jsontype = "array" }
--- Mark a table as a JSON array (written `[]` even when empty).
-- @tparam[opt] table t The table (a new one when nil).
-- @treturn table `t`.
function lib.array(t)
    expect(1, t, "table", "nil")
    return setmetatable(t or {}, array_mt)
end
local array = lib.array

--- Whether `s` is valid UTF-8, by the same rules as Rust's `str::from_utf8` (which the host
-- applies): no overlong forms, no surrogates, nothing above U+10FFFF. Cobalt has `utf8.len`,
-- stock Lua 5.2 (the specs) has not, and `utf8.len` in Lua 5.3 accepts surrogates: hence a
-- check of our own. ASCII runs are skipped with one pattern search each.
-- @tparam string s The bytes.
-- @tparam[opt] function pause Called every 4096 characters above ASCII (see apis/pace.lua):
-- a large text in another script is checked one character at a time.
-- @treturn boolean
function lib.isUtf8(s, pause)
    expect(1, s, "string")
    expect(2, pause, "function", "nil")
    local i, count = find(s, "[\128-\255]"), 0
    while i do
        count = count + 1
        if pause and count % 4096 == 0 then pause() end
        local c = byte(s, i)
        local n, lo, hi = 0, 0x80, 0xBF
        if c >= 0xC2 and c <= 0xDF then n = 1
        elseif c == 0xE0 then n, lo = 2, 0xA0
        elseif c == 0xED then n, hi = 2, 0x9F
        elseif c >= 0xE1 and c <= 0xEF then n = 2
        elseif c == 0xF0 then n, lo = 3, 0x90
        elseif c == 0xF4 then n, hi = 3, 0x8F
        elseif c >= 0xF1 and c <= 0xF3 then n = 3
        else return false end
        -- The first continuation byte has the narrowed range; the rest are 0x80-0xBF.
        local b = byte(s, i + 1)
        if not b or b < lo or b > hi then return false end
        for j = i + 2, i + n do
            b = byte(s, j)
            if not b or b < 0x80 or b > 0xBF then return false end
        end
        i = find(s, "[\128-\255]", i + n + 1)
    end
    return true
end
local isUtf8 = lib.isUtf8

-- Strings longer than this are encoded in pieces with the caller's pause between them.
local LARGE = 16384
-- Returned strings of at least this many bytes go as blobs when the caller takes them.
local BLOB_MIN = 1024

--- A string's descriptor: its text, or its bytes in base64 when it is not valid UTF-8.
-- `opts.pause` paces the work on a large string; `opts.chunks` (json.chunks) keeps its base64
-- in pieces that the JSON encoder writes as one string, never joined in memory.
local function stringDescriptor(s, opts)
    local pause = opts and opts.pause
    -- On a binary link a large string goes as raw bytes (docs/protocol.md, "Binary frames"):
    -- the host checks it and writes its descriptor, so no byte of it is looked at here.
    if opts and opts.blob and #s >= BLOB_MIN then return { type = "string", blob = opts.blob(s), bytes = #s } end
    if isUtf8(s, pause) then return { type = "string", value = s } end
    if #s > LARGE and opts and opts.chunks then
        return { type = "string", encoding = "base64", value = opts.chunks(base64.encodeParts(s, pause)) }
    end
    return { type = "string", encoding = "base64", value = base64.encode(s, pause) }
end

--- Plain name of a non-finite number: "inf", "-inf" or "nan".
local function nonFinite(n)
    if n ~= n then return "nan" end
    if n == huge then return "inf" end
    if n == -huge then return "-inf" end
end

--- Whether the keys of `t` are exactly 1..n, and n.
local function isArray(t)
    local n, max = 0, 0
    for k in pairs(t) do
        if type(k) ~= "number" or k < 1 or k ~= floor(k) then return false end
        n = n + 1
        if k > max then max = k end
    end
    return n > 0 and n == max, n
end
lib.isArray = isArray

-- A key as an object member's name: strings as they are, integers in full, others by
-- `tostring` (a JSON object has string keys only).
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
    if tv == "string" then
        if isUtf8(v, state.opts.pause) then return v end
        return stringDescriptor(v, state.opts)
    end
    if tv == "boolean" then return v end
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

-- Whether any key of `t` is a string that is not valid UTF-8 (an object member's name would
-- lose its bytes).
local function hasByteKey(t)
    for k in pairs(t) do
        if type(k) == "string" and not isUtf8(k) then return true end
    end
    return false
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
    elseif hasByteKey(t) then
        -- Keys that are bytes cannot be member names: the table is its list of pairs, each
        -- key and value in the same plain form as a value (a byte key is its descriptor).
        local entries = array()
        for k, v in pairs(t) do
            if state.entries >= lib.MAX_ENTRIES then state.truncated = true break end
            state.entries = state.entries + 1
            local key = type(k) == "string" and inner(k, depth + 1, state) or keyString(k)
            entries[#entries + 1] = array({ key, inner(v, depth + 1, state) })
        end
        out = { type = "table", entries = entries }
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

--- Describe one Lua value (docs/protocol.md, "Result descriptors").
--
-- nil, booleans, finite numbers and strings become `{type, value}` (a string that is not
-- valid UTF-8 `{type="string", encoding="base64", value}`); tables
-- `{type="table", value, truncated}` with plain JSON inside (arrays for keys exactly 1..n,
-- `{type="table", entries={{k, v}…}}` for a table with a key that is not valid UTF-8);
-- functions, threads, userdata and non-finite numbers `{type, repr}`. A nil is `{type="nil"}`.
-- @param v Any value.
-- @tparam[opt] table opts `pause` (called between pieces of work on large strings, see
-- apis/pace.lua), `chunks` (json.chunks, for a large base64 value kept in pieces) and `blob`
-- (a function that keeps a string of 1 KiB or more to send as raw bytes and returns its part
-- number: the descriptor is then `{type="string", blob=K, bytes=N}`).
-- @treturn table The descriptor.
function lib.describe(v, opts)
    expect(2, opts, "table", "nil")
    opts = opts or {}
    local tv = type(v)
    if tv == "nil" then return { type = "nil" } end
    if tv == "boolean" then return { type = tv, value = v } end
    if tv == "string" then return stringDescriptor(v, opts) end
    if tv == "number" then
        local nf = nonFinite(v)
        if nf then return { type = "number", repr = nf } end
        return { type = "number", value = v }
    end
    if tv == "table" then
        local state = { entries = 0, path = {}, truncated = false, opts = opts }
        local value = plain(v, 1, state)
        return { type = "table", value = value, truncated = state.truncated }
    end
    return { type = tv, repr = tostring(v) }
end

--- Describe a list of values, nils kept in place.
-- @tparam table t The values, packed (`t.n` is their count).
-- @tparam[opt] table opts As for @{describe}.
-- @treturn table An array of descriptors.
-- @treturn number The count.
function lib.describeAll(t, opts)
    expect(1, t, "table")
    expect(2, opts, "table", "nil")
    local out = array()
    local n = t.n or #t
    for i = 1, n do out[i] = lib.describe(t[i], opts) end
    return out, n
end

--- A value as the console shows it: strings quoted, tables as `{a=1, 2}`.
-- @param v Any value.
-- @tparam[opt] number depth How deep `v` is already (tables below 3 levels are `{…}`).
-- @treturn string
function lib.render(v, depth)
    depth = expect(2, depth, "number", "nil") or 0
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

return lib
