--- A small byte-safe JSON codec for the trapdesk wire.
--
-- Every JSON string on the wire is a byte string (PROTOCOL.md, "Byte strings,
-- ASCII frames"): @{encode} writes ASCII-only JSON, bytes 0x80-0xFF as
-- `\u00XX`; @{decode} turns `\u0000`-`\u00FF` back into one byte, higher code
-- points into their UTF-8 bytes (surrogate pairs joined). CC's own
-- `textutils.serializeJSON` is not used because it decodes `\u00e9` as UTF-8,
-- drops numeric keys beside string keys and writes NaN as invalid JSON.
--
-- Tables: a table whose keys are exactly 1..n (n >= 1), or one marked with
-- @{array}, is a JSON array; any other table is an object (so an empty table is
-- `{}`). JSON `null` is the @{null} sentinel. Decoded arrays carry the array
-- marker, so `[]` survives a round trip. Pure Lua 5.2; no CC API is touched.
--
-- @module json

local json = {}

local floor, huge = math.floor, math.huge
local concat, format, byte, char, sub, find = table.concat, string.format, string.byte, string.char, string.sub, string.find

--- The JSON `null` value (decoding gives it; encoding writes it as `null`).
json.null = setmetatable({}, {
    __tostring = function() return "json.null" end,
    __newindex = function() error("json.null is read-only", 2) end,
})

--- The metatable that marks a table as a JSON array. Any table whose
-- metatable has `__jsontype = "array"` is treated the same way, so modules can
-- mark arrays without loading this one.
json.array_mt = { __jsontype = "array" }

--- Mark a table (default: a new empty one) as a JSON array.
-- @tparam[opt] table t The table to mark.
-- @treturn table The same table.
function json.array(t)
    return setmetatable(t or {}, json.array_mt)
end

--- Whether a table is encoded as an array.
-- @tparam table t
-- @treturn boolean
-- @treturn number The array length when it is one.
function json.isArray(t)
    local mt = getmetatable(t)
    if type(mt) == "table" and mt.__jsontype == "array" then return true, #t end
    if type(mt) == "table" and mt.__jsontype == "object" then return false end
    local n, max = 0, 0
    for k in pairs(t) do
        if type(k) ~= "number" or k < 1 or k ~= floor(k) then return false end
        n = n + 1
        if k > max then max = k end
    end
    return n > 0 and n == max, n
end

-- Encoding ------------------------------------------------------------------

local escapes = {
    ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
    ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}
for i = 0, 255 do
    local c = char(i)
    if not escapes[c] and (i < 0x20 or i >= 0x7F) then escapes[c] = format("\\u%04x", i) end
end

local ESCAPED = '[%c"\\\128-\255]'

local function encodeString(s)
    -- Most strings need no escape: then no copy is made of them.
    if not find(s, ESCAPED) then return '"' .. s .. '"' end
    return '"' .. s:gsub(ESCAPED, escapes) .. '"'
end
json.encodeString = encodeString

--- The metatable marking a list of strings as *one* JSON string (their concatenation), so a
-- large value made in pieces (base64 of a file) is written without joining the pieces first.
json.chunks_mt = { __jsontype = "chunks" }

--- Mark a list of strings as one JSON string (see @{chunks_mt}).
-- @tparam table t The pieces, in order.
-- @treturn table The same table.
function json.chunks(t)
    return setmetatable(t, json.chunks_mt)
end

--- Format a number as JSON: integers without a fraction or exponent where
-- exact, other finite numbers with the shortest of %.14g/%.17g that reads back
-- the same, non-finite numbers as `null`.
-- @tparam number n
-- @treturn string
local function encodeNumber(n)
    if n ~= n or n == huge or n == -huge then return "null" end
    if n == 0 then return "0" end
    if n == floor(n) and n > -2^63 and n < 2^63 then return format("%.0f", n) end
    local s = format("%.14g", n)
    if tonumber(s) ~= n then s = format("%.17g", n) end
    return s
end
json.encodeNumber = encodeNumber

local function encodeKey(k)
    local tk = type(k)
    if tk == "string" then return encodeString(k) end
    if tk == "number" then return '"' .. encodeNumber(k) .. '"' end
    error("cannot encode a " .. tk .. " key as JSON", 0)
end

-- The encoder's output: small tokens gather in `buf` and are joined every BUF_TOKENS into
-- `parts`; a large string goes into `parts` as it is (no copy). Joining often keeps the number
-- of live strings small, which matters on CraftOS-PC (a table of tens of thousands of strings
-- held across yields stalls it until the watchdog fires; see docs/lua-client.md).
local BUF_TOKENS = 1024
-- Strings longer than this are escaped in pieces of this size, with a pause between pieces.
local PIECE = 16384

local function newSink(pause)
    local sink = { parts = {}, buf = {}, n = 0, pause = pause }
    return sink
end

local function flushBuf(sink)
    if sink.n > 0 then
        sink.parts[#sink.parts + 1] = concat(sink.buf, "", 1, sink.n)
        sink.buf, sink.n = {}, 0
    end
end

local function put(sink, text)
    local n = sink.n + 1
    sink.buf[n] = text
    sink.n = n
    if n >= BUF_TOKENS then
        flushBuf(sink)
        if sink.pause then sink.pause() end
    end
end

local function putBig(sink, text)
    flushBuf(sink)
    sink.parts[#sink.parts + 1] = text
    if sink.pause then sink.pause() end
end

local function putString(sink, s, quote)
    local len = #s
    if len <= PIECE then
        if quote then put(sink, encodeString(s)) else put(sink, (s:gsub(ESCAPED, escapes))) end
        return
    end
    if quote then put(sink, '"') end
    for i = 1, len, PIECE do
        local piece = sub(s, i, i + PIECE - 1)
        if find(piece, ESCAPED) then piece = piece:gsub(ESCAPED, escapes) end
        putBig(sink, piece)
    end
    if quote then put(sink, '"') end
end

local encodeValue

local function encodeTable(t, sink, seen)
    if seen[t] then error("cannot encode a cyclic table as JSON", 0) end
    local mt = getmetatable(t)
    if type(mt) == "table" and mt.__jsontype == "chunks" then
        put(sink, '"')
        for i = 1, #t do
            local piece = t[i]
            if type(piece) ~= "string" then error("json.chunks holds a " .. type(piece), 0) end
            if #piece > 256 and not find(piece, ESCAPED) then putBig(sink, piece) else putString(sink, piece, false) end
        end
        put(sink, '"')
        return
    end
    seen[t] = true
    local isArr, n = json.isArray(t)
    if isArr then
        put(sink, "[")
        for i = 1, n do
            if i > 1 then put(sink, ",") end
            local v = t[i]
            if v == nil then put(sink, "null") else encodeValue(v, sink, seen) end
        end
        put(sink, "]")
    else
        local keys = {}
        for k in pairs(t) do keys[#keys + 1] = k end
        -- Sorted keys make the output deterministic (and testable).
        table.sort(keys, function(a, b)
            local ta, tb = type(a), type(b)
            if ta ~= tb then return ta < tb end
            if ta == "string" or ta == "number" then return a < b end
            return tostring(a) < tostring(b)
        end)
        put(sink, "{")
        for i, k in ipairs(keys) do
            if i > 1 then put(sink, ",") end
            put(sink, encodeKey(k))
            put(sink, ":")
            encodeValue(t[k], sink, seen)
        end
        put(sink, "}")
    end
    seen[t] = nil
end

encodeValue = function(v, sink, seen)
    local tv = type(v)
    if v == nil or v == json.null then
        put(sink, "null")
    elseif tv == "boolean" then
        put(sink, v and "true" or "false")
    elseif tv == "number" then
        put(sink, encodeNumber(v))
    elseif tv == "string" then
        putString(sink, v, true)
    elseif tv == "table" then
        encodeTable(v, sink, seen)
    else
        error("cannot encode a " .. tv .. " as JSON", 0)
    end
end

--- Encode a value as ASCII-only JSON text, in pieces.
-- @param v As for @{encode}.
-- @tparam[opt] function pause Called every thousand tokens or 16 KB of string, so that a
-- caller on a computer can yield (see apis/pace.lua) during a large value.
-- @treturn table The JSON text as a list of strings, to be joined in order.
function json.encodeParts(v, pause)
    local sink = newSink(pause)
    encodeValue(v, sink, {})
    flushBuf(sink)
    return sink.parts
end

--- Encode a value as ASCII-only JSON text.
-- @param v A nil, boolean, number, string, table, @{null} or @{chunks}.
-- @tparam[opt] function pause As for @{encodeParts}.
-- @treturn string The JSON text.
-- @throws On functions, threads, userdata, cycles or bad keys.
function json.encode(v, pause)
    local parts = json.encodeParts(v, pause)
    if #parts == 1 then return parts[1] end
    return concat(parts)
end

-- Decoding ------------------------------------------------------------------

--- The UTF-8 bytes of a code point (Lua 5.2 has no utf8.char).
local function utf8Bytes(cp)
    if cp < 0x80 then return char(cp) end
    if cp < 0x800 then return char(0xC0 + floor(cp / 0x40), 0x80 + cp % 0x40) end
    if cp < 0x10000 then
        return char(0xE0 + floor(cp / 0x1000), 0x80 + floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
    end
    return char(0xF0 + floor(cp / 0x40000), 0x80 + floor(cp / 0x1000) % 0x40,
        0x80 + floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
end
json.utf8Bytes = utf8Bytes

local simple = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

local function decodeError(s, pos, msg)
    error(format("JSON: %s at byte %d", msg, pos), 0)
end

local function skip(s, pos)
    return (find(s, "[^ \t\r\n]", pos)) or #s + 1
end

-- Texts above this size are made flat before decoding (see json.decode).
local FLAT_ABOVE = 65536

-- Decoding state per call (two coroutines may decode at once): the pause and a step count.
local STEPS = 1024

local function step(st)
    local n = st.n + 1
    if n >= STEPS then
        n = 0
        if st.pause then st.pause() end
    end
    st.n = n
end

local function decodeStringAt(s, pos, st)
    -- pos is just after the opening quote. Pieces gather in `parts`, joined every STEPS
    -- escapes into `chunks` (few live strings; see BUF_TOKENS).
    -- The next quote and backslash are found with two plain searches, each redone only once
    -- passed: a plain `find` runs at memory speed, while a class like '["\\]' costs about
    -- 16 ms per MB on CraftOS-PC and most of the client's hold on a 1 MB write was that scan.
    local parts, np, chunks, start = {}, 0, nil, pos
    local q, bs = 0, 0 -- the next '"' and '\' at or after pos (false: none left)
    while true do
        if q and q < pos then q = find(s, '"', pos, true) or false end
        if bs and bs < pos then bs = find(s, "\\", pos, true) or false end
        local at = (bs and (not q or bs < q)) and bs or q
        if not at then decodeError(s, start, "unterminated string") end
        if byte(s, at) == 34 then
            local text
            if at > pos then np = np + 1 parts[np] = sub(s, pos, at - 1) end
            if np == 1 and not chunks then
                text = parts[1]
            elseif chunks then
                chunks[#chunks + 1] = concat(parts, "", 1, np)
                text = concat(chunks)
            else
                text = concat(parts, "", 1, np)
            end
            return text, at + 1
        end
        if at > pos then np = np + 1 parts[np] = sub(s, pos, at - 1) end
        local e = sub(s, at + 1, at + 1)
        if e == "u" then
            local hex = sub(s, at + 2, at + 5)
            if not hex:find("^%x%x%x%x$") then decodeError(s, at, "bad \\u escape") end
            local cp = tonumber(hex, 16)
            pos = at + 6
            if cp >= 0xD800 and cp <= 0xDBFF then
                local lo = sub(s, pos, pos + 5):match("^\\u(%x%x%x%x)$")
                lo = lo and tonumber(lo, 16)
                if lo and lo >= 0xDC00 and lo <= 0xDFFF then
                    cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
                    pos = pos + 6
                else
                    cp = 0xFFFD -- a lone high surrogate
                end
            elseif cp >= 0xDC00 and cp <= 0xDFFF then
                cp = 0xFFFD -- a lone low surrogate
            end
            np = np + 1
            parts[np] = cp < 0x100 and char(cp) or utf8Bytes(cp)
        elseif simple[e] then
            np = np + 1
            parts[np] = simple[e]
            pos = at + 2
        else
            decodeError(s, at, "bad escape")
        end
        if np >= STEPS then
            chunks = chunks or {}
            chunks[#chunks + 1] = concat(parts, "", 1, np)
            parts, np = {}, 0
            if st.pause then st.pause() end
        end
    end
end

local decodeValue

local function decodeArray(s, pos, depth, st)
    local t, n = json.array(), 0
    pos = skip(s, pos)
    if sub(s, pos, pos) == "]" then return t, pos + 1 end
    while true do
        local v
        v, pos = decodeValue(s, pos, depth, st)
        n = n + 1
        t[n] = v
        pos = skip(s, pos)
        local c = sub(s, pos, pos)
        if c == "]" then return t, pos + 1 end
        if c ~= "," then decodeError(s, pos, "expected ',' or ']'") end
        pos = pos + 1
    end
end

-- Skips the value at pos (already past whitespace) without building it; returns the position
-- after it. Structure is checked only as far as bracket balance: the text is decoded in full
-- by whoever receives it.
local function skipValue(s, pos, st)
    local c = sub(s, pos, pos)
    if c ~= "{" and c ~= "[" and c ~= '"' then
        local _, after = decodeValue(s, pos, 0, st)
        return after
    end
    local depth = 0
    while true do
        local at = find(s, '[%[%]{}"]', pos)
        if not at then decodeError(s, pos, "unexpected end") end
        local b = byte(s, at)
        if b == 34 then
            pos = at + 1
            local q, bs = 0, 0 -- as in decodeStringAt
            while true do
                if q and q < pos then q = find(s, '"', pos, true) or false end
                if bs and bs < pos then bs = find(s, "\\", pos, true) or false end
                if not q then decodeError(s, at, "unterminated string") end
                if not bs or q < bs then pos = q + 1 break end
                pos = bs + 2
                step(st)
            end
        elseif b == 123 or b == 91 then
            depth = depth + 1
            pos = at + 1
        else
            depth = depth - 1
            pos = at + 1
        end
        if depth <= 0 then return pos end
        step(st)
    end
end

local function decodeObject(s, pos, depth, st)
    local t = {}
    pos = skip(s, pos)
    if sub(s, pos, pos) == "}" then return t, pos + 1 end
    while true do
        pos = skip(s, pos)
        if sub(s, pos, pos) ~= '"' then decodeError(s, pos, "expected a string key") end
        local k
        k, pos = decodeStringAt(s, pos + 1, st)
        pos = skip(s, pos)
        if sub(s, pos, pos) ~= ":" then decodeError(s, pos, "expected ':'") end
        local v
        if depth == 1 and st.rawKey and k == st.rawKey then
            local from = skip(s, pos + 1)
            pos = skipValue(s, from, st)
            st.raw = sub(s, from, pos - 1)
        else
            v, pos = decodeValue(s, pos + 1, depth, st)
            t[k] = v
        end
        pos = skip(s, pos)
        local c = sub(s, pos, pos)
        if c == "}" then return t, pos + 1 end
        if c ~= "," then decodeError(s, pos, "expected ',' or '}'") end
        pos = pos + 1
    end
end

decodeValue = function(s, pos, depth, st)
    step(st)
    pos = skip(s, pos)
    local c = sub(s, pos, pos)
    if c == '"' then return decodeStringAt(s, pos + 1, st) end
    if c == "{" or c == "[" then
        if depth >= 512 then decodeError(s, pos, "nested too deeply") end
        if c == "{" then return decodeObject(s, pos + 1, depth + 1, st) end
        return decodeArray(s, pos + 1, depth + 1, st)
    end
    local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if num and num ~= "" and num ~= "-" then
        local n = tonumber(num)
        if not n then decodeError(s, pos, "bad number") end
        return n, pos + #num
    end
    if sub(s, pos, pos + 3) == "true" then return true, pos + 4 end
    if sub(s, pos, pos + 4) == "false" then return false, pos + 5 end
    if sub(s, pos, pos + 3) == "null" then return json.null, pos + 4 end
    if c == "" then decodeError(s, pos, "unexpected end") end
    decodeError(s, pos, "unexpected '" .. c .. "'")
end

--- Decode JSON text.
-- @tparam string s The JSON text.
-- @tparam[opt] function pause Called every thousand values or escapes, so that a caller on a
-- computer can yield (see apis/pace.lua) during a large text.
-- @tparam[opt] string rawKey When the text is an object with this member, the member is not
-- decoded: its JSON text is returned as the second value (the daemon passes a request's
-- payload on to the program serving it without decoding and encoding it again).
-- @return The value; `null` is @{null}, arrays carry the array marker.
-- @treturn string|nil The text of `rawKey`'s value, when asked for and present.
-- @throws A "JSON: ... at byte N" message on invalid text.
function json.decode(s, pause, rawKey)
    if type(s) ~= "string" then error("bad argument #1 (string expected, got " .. type(s) .. ")", 2) end
    -- On CraftOS-PC a substring of a large string (a payload passed on by the daemon) is a
    -- view that every `find` on it reads whole: join it into a string of its own first, or
    -- decoding costs its size once per token. Elsewhere this is one transient copy.
    if #s > FLAT_ABOVE then s = concat({ s }) end
    local st = { pause = pause, n = 0, rawKey = rawKey }
    local v, pos = decodeValue(s, 1, 0, st)
    pos = skip(s, pos)
    if pos <= #s then decodeError(s, pos, "trailing data") end
    return v, st.raw
end

return json
