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

local function encodeString(s)
    return '"' .. s:gsub('[%c"\\\128-\255]', escapes) .. '"'
end
json.encodeString = encodeString

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

local encodeValue

local function encodeTable(t, out, seen)
    if seen[t] then error("cannot encode a cyclic table as JSON", 0) end
    seen[t] = true
    local isArr, n = json.isArray(t)
    if isArr then
        out[#out + 1] = "["
        for i = 1, n do
            if i > 1 then out[#out + 1] = "," end
            local v = t[i]
            if v == nil then out[#out + 1] = "null" else encodeValue(v, out, seen) end
        end
        out[#out + 1] = "]"
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
        out[#out + 1] = "{"
        for i, k in ipairs(keys) do
            if i > 1 then out[#out + 1] = "," end
            out[#out + 1] = encodeKey(k)
            out[#out + 1] = ":"
            encodeValue(t[k], out, seen)
        end
        out[#out + 1] = "}"
    end
    seen[t] = nil
end

encodeValue = function(v, out, seen)
    local tv = type(v)
    if v == nil or v == json.null then
        out[#out + 1] = "null"
    elseif tv == "boolean" then
        out[#out + 1] = v and "true" or "false"
    elseif tv == "number" then
        out[#out + 1] = encodeNumber(v)
    elseif tv == "string" then
        out[#out + 1] = encodeString(v)
    elseif tv == "table" then
        encodeTable(v, out, seen)
    else
        error("cannot encode a " .. tv .. " as JSON", 0)
    end
end

--- Encode a value as ASCII-only JSON text.
-- @param v A nil, boolean, number, string, table or @{null}.
-- @treturn string The JSON text.
-- @throws On functions, threads, userdata, cycles or bad keys.
function json.encode(v)
    local out = {}
    encodeValue(v, out, {})
    return concat(out)
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

local function decodeStringAt(s, pos)
    -- pos is just after the opening quote.
    local parts, start = {}, pos
    while true do
        local at = find(s, '["\\]', pos)
        if not at then decodeError(s, start, "unterminated string") end
        if at > pos then parts[#parts + 1] = sub(s, pos, at - 1) end
        if byte(s, at) == 34 then return concat(parts), at + 1 end
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
            parts[#parts + 1] = cp < 0x100 and char(cp) or utf8Bytes(cp)
        elseif simple[e] then
            parts[#parts + 1] = simple[e]
            pos = at + 2
        else
            decodeError(s, at, "bad escape")
        end
    end
end

local decodeValue

local function decodeArray(s, pos, depth)
    local t, n = json.array(), 0
    pos = skip(s, pos)
    if sub(s, pos, pos) == "]" then return t, pos + 1 end
    while true do
        local v
        v, pos = decodeValue(s, pos, depth)
        n = n + 1
        t[n] = v
        pos = skip(s, pos)
        local c = sub(s, pos, pos)
        if c == "]" then return t, pos + 1 end
        if c ~= "," then decodeError(s, pos, "expected ',' or ']'") end
        pos = pos + 1
    end
end

local function decodeObject(s, pos, depth)
    local t = {}
    pos = skip(s, pos)
    if sub(s, pos, pos) == "}" then return t, pos + 1 end
    while true do
        pos = skip(s, pos)
        if sub(s, pos, pos) ~= '"' then decodeError(s, pos, "expected a string key") end
        local k
        k, pos = decodeStringAt(s, pos + 1)
        pos = skip(s, pos)
        if sub(s, pos, pos) ~= ":" then decodeError(s, pos, "expected ':'") end
        local v
        v, pos = decodeValue(s, pos + 1, depth)
        t[k] = v
        pos = skip(s, pos)
        local c = sub(s, pos, pos)
        if c == "}" then return t, pos + 1 end
        if c ~= "," then decodeError(s, pos, "expected ',' or '}'") end
        pos = pos + 1
    end
end

decodeValue = function(s, pos, depth)
    pos = skip(s, pos)
    local c = sub(s, pos, pos)
    if c == '"' then return decodeStringAt(s, pos + 1) end
    if c == "{" or c == "[" then
        if depth >= 512 then decodeError(s, pos, "nested too deeply") end
        if c == "{" then return decodeObject(s, pos + 1, depth + 1) end
        return decodeArray(s, pos + 1, depth + 1)
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
-- @return The value; `null` is @{null}, arrays carry the array marker.
-- @throws A "JSON: ... at byte N" message on invalid text.
function json.decode(s)
    if type(s) ~= "string" then error("bad argument #1 (string expected, got " .. type(s) .. ")", 2) end
    local v, pos = decodeValue(s, 1, 0)
    pos = skip(s, pos)
    if pos <= #s then decodeError(s, pos, "trailing data") end
    return v
end

return json
