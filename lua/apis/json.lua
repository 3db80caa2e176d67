--- A small byte-safe JSON codec for the trapdesk wire.
--
-- Every JSON string on the wire is a byte string (docs/protocol.md, "Bytes on the
-- wire"): @{encode} writes ASCII-only JSON, bytes 0x80-0xFF as
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

-- Argument checks: apis/expect.lua, beside this file.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"
local expect = dofile(here .. "expect.lua").expect

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

-- The text is read through a buffer (`st.s`) over its pieces (`st.src`, the next one at
-- `st.ni`): a message that came in fragments is decoded from the fragments as they are, never
-- joined into one string, and no search runs over more than a piece and a few bytes. `st.base`
-- is how many bytes came before the buffer (for error positions). While `st.cap` is a list, the
-- text read from `st.capFrom` on is also kept there, in pieces (a raw member, see json.decode).

local function decodeError(st, pos, msg)
    error(format("JSON: %s at byte %d", msg, st.base + pos), 0)
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

--- Moves the buffer on to the next piece, keeping the unread text from `keep` on (a few bytes
-- of a token cut between two pieces; `#st.s + 1` keeps nothing, and copies nothing). Returns
-- false at the end of the text. The caller's positions become `pos - keep + 1`.
local function refill(st, keep)
    local nxt = st.src[st.ni]
    if not nxt then return false end
    st.ni = st.ni + 1
    local s = st.s
    if st.cap then
        local stop = keep - 1
        if stop >= st.capFrom then
            st.cap[#st.cap + 1] = (st.capFrom == 1 and stop == #s) and s or sub(s, st.capFrom, stop)
        end
        st.capFrom = 1
    end
    st.base = st.base + keep - 1
    if keep <= #s then st.s = sub(s, keep) .. nxt else st.s = nxt end
    st.gen = st.gen + 1
    if st.pause then st.pause() end
    return true
end

--- Makes sure the buffer holds `n` bytes from `pos` on, or all that is left; returns the
-- position in the (possibly new) buffer.
local function ensure(st, pos, n)
    while #st.s - pos + 1 < n do
        if not refill(st, pos) then break end
        pos = 1
    end
    return pos
end

--- The position of the next byte that is not whitespace (past the end: the end of the text).
local function skip(st, pos)
    while true do
        local at = find(st.s, "[^ \t\r\n]", pos)
        if at then return at end
        if not refill(st, #st.s + 1) then return #st.s + 1 end
        pos = 1
    end
end

-- Runs of text at least this long go into a string's pieces as they are; shorter ones (between
-- escapes) are joined every STEPS of them.
local BIG_RUN = 4096

--- The string starting at `pos` (just after the opening quote) and the position after it.
-- `asChunks`: the string as a @{chunks} list (pieces of the text, never joined).
local function decodeStringAt(st, pos, asChunks)
    -- Small pieces gather in `parts`, joined every STEPS into `chunks`; long runs go into
    -- `chunks` as they are (few live strings; see BUF_TOKENS).
    -- The next quote and backslash are found with two plain searches, each redone only once
    -- passed: a plain `find` runs at memory speed, while a class like '["\\]' costs about
    -- 16 ms per MB on CraftOS-PC and most of the client's hold on a 1 MB write was that scan.
    local parts, np, chunks, start, startBase = {}, 0, {}, pos, st.base
    local function flush()
        if np > 0 then
            chunks[#chunks + 1] = np == 1 and parts[1] or concat(parts, "", 1, np)
            parts, np = {}, 0
        end
    end
    local function add(piece)
        if #piece >= BIG_RUN then
            flush()
            chunks[#chunks + 1] = piece
        else
            np = np + 1
            parts[np] = piece
            if np >= STEPS then
                flush()
                if st.pause then st.pause() end
            end
        end
    end
    local s, gen = st.s, st.gen
    local q, bs = 0, 0 -- the next '"' and '\' at or after pos in s (false: none in s)
    while true do
        if q and q < pos then q = find(s, '"', pos, true) or false end
        if bs and bs < pos then bs = find(s, "\\", pos, true) or false end
        local at = (bs and (not q or bs < q)) and bs or q
        if not at then
            -- The string goes on in the next piece.
            if pos == 1 then add(s) elseif pos <= #s then add(sub(s, pos)) end
            if not refill(st, #s + 1) then error(format("JSON: unterminated string at byte %d", startBase + start), 0) end
            s, gen, pos, q, bs = st.s, st.gen, 1, 0, 0
        elseif byte(s, at) == 34 then
            if at > pos then add(sub(s, pos, at - 1)) end
            flush()
            if asChunks then return json.chunks(chunks), at + 1 end
            if #chunks == 0 then return "", at + 1 end
            if #chunks == 1 then return chunks[1], at + 1 end
            return concat(chunks), at + 1
        else
            if at > pos then add(sub(s, pos, at - 1)) end
            -- An escape is at most 12 bytes (a surrogate pair): have them in the buffer.
            at = ensure(st, at, 12)
            if st.gen ~= gen then s, gen, q, bs = st.s, st.gen, 0, 0 end
            local e = sub(s, at + 1, at + 1)
            if e == "u" then
                local hex = sub(s, at + 2, at + 5)
                if not hex:find("^%x%x%x%x$") then decodeError(st, at, "bad \\u escape") end
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
                add(cp < 0x100 and char(cp) or utf8Bytes(cp))
            elseif simple[e] then
                add(simple[e])
                pos = at + 2
            else
                decodeError(st, at, "bad escape")
            end
        end
    end
end

local decodeValue

local function decodeArray(st, pos, depth)
    local t, n = json.array(), 0
    pos = skip(st, pos)
    if sub(st.s, pos, pos) == "]" then return t, pos + 1 end
    while true do
        local v
        v, pos = decodeValue(st, pos, depth)
        n = n + 1
        t[n] = v
        pos = skip(st, pos)
        local c = sub(st.s, pos, pos)
        if c == "]" then return t, pos + 1 end
        if c ~= "," then decodeError(st, pos, "expected ',' or ']'") end
        pos = pos + 1
    end
end

-- Skips the value at pos (already past whitespace) without building it; returns the position
-- after it. Structure is checked only as far as bracket balance: the text is decoded in full
-- by whoever receives it.
local function skipValue(st, pos)
    local c = sub(st.s, pos, pos)
    if c ~= "{" and c ~= "[" and c ~= '"' then
        local _, after = decodeValue(st, pos, 0)
        return after
    end
    local depth = 0
    while true do
        local at = find(st.s, '[%[%]{}"]', pos)
        if not at then
            if not refill(st, #st.s + 1) then decodeError(st, #st.s + 1, "unexpected end") end
            pos = 1
        else
            local b = byte(st.s, at)
            if b == 34 then
                -- A string: its closing quote is the first one not escaped (as in decodeStringAt).
                pos = at + 1
                local s, q, bs = st.s, 0, 0
                while true do
                    if q and q < pos then q = find(s, '"', pos, true) or false end
                    if bs and bs < pos then bs = find(s, "\\", pos, true) or false end
                    if q and (not bs or q < bs) then pos = q + 1 break end
                    if bs then
                        -- An escape: skip the byte after the backslash, wherever it is.
                        local gen = st.gen
                        pos = ensure(st, bs, 2) + 2
                        if st.gen ~= gen then s, q, bs = st.s, 0, 0 end
                    else
                        if not refill(st, #s + 1) then decodeError(st, #s + 1, "unterminated string") end
                        s, pos, q, bs = st.s, 1, 0, 0
                    end
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
end

local function decodeObject(st, pos, depth)
    local t = {}
    pos = skip(st, pos)
    if sub(st.s, pos, pos) == "}" then return t, pos + 1 end
    while true do
        pos = skip(st, pos)
        if sub(st.s, pos, pos) ~= '"' then decodeError(st, pos, "expected a string key") end
        local k
        k, pos = decodeStringAt(st, pos + 1)
        pos = skip(st, pos)
        if sub(st.s, pos, pos) ~= ":" then decodeError(st, pos, "expected ':'") end
        if depth == 1 and st.rawKey and k == st.rawKey then
            local from = skip(st, pos + 1)
            st.cap, st.capFrom = {}, from
            pos = skipValue(st, from)
            if pos > st.capFrom then st.cap[#st.cap + 1] = sub(st.s, st.capFrom, pos - 1) end
            st.raw, st.cap = st.cap, nil
        else
            local v
            local from = skip(st, pos + 1)
            if depth == 1 and st.chunkKeys and st.chunkKeys[k] and sub(st.s, from, from) == '"' then
                v, pos = decodeStringAt(st, from + 1, true)
            else
                v, pos = decodeValue(st, from, depth)
            end
            t[k] = v
        end
        pos = skip(st, pos)
        local c = sub(st.s, pos, pos)
        if c == "}" then return t, pos + 1 end
        if c ~= "," then decodeError(st, pos, "expected ',' or '}'") end
        pos = pos + 1
    end
end

local NUMBER = "^-?%d+%.?%d*[eE]?[-+]?%d*"

decodeValue = function(st, pos, depth)
    step(st)
    pos = skip(st, pos)
    local c = sub(st.s, pos, pos)
    if c == '"' then return decodeStringAt(st, pos + 1) end
    if c == "{" or c == "[" then
        if depth >= 512 then decodeError(st, pos, "nested too deeply") end
        if c == "{" then return decodeObject(st, pos + 1, depth + 1) end
        return decodeArray(st, pos + 1, depth + 1)
    end
    -- A number or a literal may be cut between two pieces: have enough of it in the buffer.
    pos = ensure(st, pos, 32)
    local num = st.s:match(NUMBER, pos)
    while num and pos + #num > #st.s and st.src[st.ni] do
        pos = ensure(st, pos, #num + 32)
        num = st.s:match(NUMBER, pos)
    end
    if num and num ~= "" and num ~= "-" then
        local n = tonumber(num)
        if not n then decodeError(st, pos, "bad number") end
        return n, pos + #num
    end
    local s = st.s
    if sub(s, pos, pos + 3) == "true" then return true, pos + 4 end
    if sub(s, pos, pos + 4) == "false" then return false, pos + 5 end
    if sub(s, pos, pos + 3) == "null" then return json.null, pos + 4 end
    if c == "" then decodeError(st, pos, "unexpected end") end
    decodeError(st, pos, "unexpected '" .. c .. "'")
end

--- Decode JSON text.
-- @tparam string|table s The JSON text: a string, or a list of strings to be read in order as
-- one text (a message that came in fragments), never joined.
-- @tparam[opt] function pause Called every thousand values or escapes and between pieces, so
-- that a caller on a computer can yield (see apis/pace.lua) during a large text.
-- @tparam[opt] string|table opts A string is `opts.raw`. `raw`: when the text is an object
-- with this member, the member is not decoded: its JSON text is returned as the second value
-- (the daemon passes a request's payload on to the program serving it without decoding and
-- encoding it again), a string or, when it spans pieces, a list of strings. `chunks`: a set of
-- member names of a top-level object whose string values are returned as @{chunks} lists (the
-- text's pieces as they are: a 1 MB file's content is not joined into one string).
-- @return The value; `null` is @{null}, arrays carry the array marker.
-- @treturn string|table|nil The text of `raw`'s value, when asked for and present.
-- @throws A "JSON: ... at byte N" message on invalid text.
function json.decode(s, pause, opts)
    expect(1, s, "string", "table")
    local src
    if type(s) == "table" then
        src = s
        s = src[1] or ""
        for i = 1, #src do
            if type(src[i]) ~= "string" then error("bad argument #1 (piece " .. i .. " is not a string)", 2) end
        end
    else
        src = {}
    end
    if type(opts) == "string" then opts = { raw = opts } end
    opts = opts or {}
    -- On CraftOS-PC a substring of a large string (a payload passed on by the daemon) is a
    -- view that every `find` on it reads whole: join it into a string of its own first, or
    -- decoding costs its size once per token. Elsewhere this is one transient copy. Pieces
    -- (fragments) are each small.
    if #s > FLAT_ABOVE then s = concat({ s }) end
    local st = { pause = pause, n = 0, rawKey = opts.raw, chunkKeys = opts.chunks,
        s = s, src = src, ni = 2, base = 0, gen = 0 }
    local v, pos = decodeValue(st, 1, 0)
    pos = skip(st, pos)
    if pos <= #st.s then decodeError(st, pos, "trailing data") end
    local raw = st.raw
    if raw and #raw <= 1 then raw = raw[1] or "" end
    return v, raw
end

return json
