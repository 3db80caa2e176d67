--- Base64 (RFC 4648, with padding) for byte strings.
--
-- File contents travel base64-encoded on the wire so that they stay
-- byte-exact. Plain arithmetic on doubles (no bit operators, no integer
-- subtype), so it runs unchanged on Cobalt and on PUC Lua 5.2.
--
-- @module base64

local base64 = {}

-- Argument checks: apis/expect.lua, beside this file.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"
local expect = dofile(here .. "expect.lua").expect

local floor, byte, char, sub, concat = math.floor, string.byte, string.char, string.sub, table.concat
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

-- Groups handled per slice (about 1.5 KB of input): each slice is joined into one string at
-- once, so a large payload holds a few hundred strings rather than one per group (CraftOS-PC
-- stalls until its watchdog fires when a table of tens of thousands of strings is held across
-- yields; see docs/lua-client.md). The optional `pause` is called after every slice; the
-- caller's pause decides whether to yield, so a slice's own time is what a hold can overrun
-- the pause's 25 ms by: 512 groups take about 1.3 ms on an idle CraftOS-PC, several times
-- that on a loaded machine (with 2,048 the 1 MB write's holds reached 35-65 ms).
local SLICE = 512
--
-- Each slice works on its own piece of the text (`sub`), never indexing into the whole: on
-- CraftOS-PC a substring of a large string is a view whose every `string.byte` costs the size
-- of the string it views (0.4 ms per call on 1.4 MB), so a byte loop over a decoded JSON
-- string was quadratic there (a base64 of 150 KB never finished within the watchdog's 7 s;
-- docs/lua-client.md, "Found on CraftOS-PC"). A piece of a
-- view costs its own size. On other runtimes `sub` copies the piece: one copy in all, in
-- slices.

local enc, dec = {}, {}
for i = 0, 63 do
    local c = alphabet:sub(i + 1, i + 1)
    enc[i] = c
    dec[c:byte()] = i
end
dec[("-"):byte()], dec[("_"):byte()] = 62, 63 -- also accept the URL-safe alphabet

-- Two-character table for the top and bottom 12 bits of each 24-bit group.
local pair = {}
for i = 0, 4095 do pair[i] = enc[floor(i / 64)] .. enc[i % 64] end

--- Encode bytes as base64 text, in pieces.
-- @tparam string s The bytes.
-- @tparam[opt] function pause Called every few kilobytes, so that a caller on a computer
-- can let it pull events (CC's "Too long without yielding" watchdog) during a large payload.
-- @treturn table The base64 text as a list of strings (about 2 KB each), to be joined in order.
function base64.encodeParts(s, pause)
    expect(1, s, "string")
    local parts = {}
    local len = #s
    local full = len - len % 3
    local i = 1
    while i <= full do
        local stop = math.min(full, i + SLICE * 3 - 1)
        -- Each slice reads its own piece of the text (see `slices` above the module's tables).
        local piece = sub(s, i, stop)
        local out, n = {}, 0
        for j = 1, stop - i + 1, 3 do
            local a, b, c = byte(piece, j, j + 2)
            local v = a * 65536 + b * 256 + c
            n = n + 1
            out[n] = pair[floor(v / 4096)] .. pair[v % 4096]
        end
        parts[#parts + 1] = concat(out, "", 1, n)
        i = stop + 1
        if pause then pause() end
    end
    local rest = len - full
    if rest == 1 then
        local a = byte(s, len)
        parts[#parts + 1] = enc[floor(a / 4)] .. enc[(a % 4) * 16] .. "=="
    elseif rest == 2 then
        local a, b = byte(s, len - 1, len)
        local v = a * 256 + b
        parts[#parts + 1] = enc[floor(v / 1024)] .. enc[floor(v / 16) % 64] .. enc[(v % 16) * 4] .. "="
    end
    return parts
end

--- Encode bytes as base64 text.
-- @tparam string s The bytes.
-- @tparam[opt] function pause As for @{encodeParts}.
-- @treturn string The base64 text.
function base64.encode(s, pause)
    expect(1, s, "string")
    return concat(base64.encodeParts(s, pause))
end

-- Whether any piece holds whitespace (only asked once decoding failed).
local function hasSpace(src)
    for i = 1, #src do
        if src[i]:find("%s") then return true end
    end
    return false
end

--- Decode base64 text (standard or URL-safe alphabet; whitespace ignored,
-- padding optional), in pieces.
-- @tparam string|table s The base64 text: a string, or a list of strings read in order as one
-- text, never joined (a write's content as the JSON decoder left it, see `json.decode`'s
-- `chunks`).
-- @tparam[opt] function pause As for @{encodeParts}.
-- @treturn[1] table The bytes as a list of strings (about 1.5 KB each), to be joined in order.
-- @treturn[2] nil When the text is not base64.
-- @treturn[2] string Why.
function base64.decodeParts(s, pause)
    expect(1, s, "string", "table")
    local src = s
    if type(s) == "string" then
        src = { s }
    else
        for i = 1, #s do
            if type(s[i]) ~= "string" then error("bad argument #1 (piece " .. i .. " is not a string)", 2) end
        end
    end
    -- Characters are checked as they are decoded (a scan of the whole text with a pattern
    -- class costs about 16 ms per MB on CraftOS-PC, in one piece). Whitespace is rare: when a
    -- character is not in the alphabet and the text has whitespace, it is stripped (one copy)
    -- and decoding starts again.
    local stripped = false
    while true do
        local parts, err = base64.decodeClean(src, pause)
        if parts then return parts end
        if stripped or err ~= "invalid base64 character" or not hasSpace(src) then return nil, err end
        local clean = {}
        for i = 1, #src do clean[i] = (src[i]:gsub("%s+", "")) end
        src, stripped = clean, true
    end
end

-- Decodes the whole groups of s[i..j] (a multiple of 4 characters) onto `parts`, a slice at a
-- time; false on a character outside the alphabet.
local function decodeGroups(s, i, j, parts, pause)
    while i <= j do
        local stop = math.min(j, i + SLICE * 4 - 1)
        -- Each slice reads its own piece of the text (see `SLICE` above).
        local piece = sub(s, i, stop)
        local out, n = {}, 0
        for k = 1, stop - i + 1, 4 do
            local a, b, c, d = byte(piece, k, k + 3)
            a, b, c, d = dec[a], dec[b], dec[c], dec[d]
            if not (a and b and c and d) then return false end
            local v = a * 262144 + b * 4096 + c * 64 + d
            n = n + 1
            out[n] = char(floor(v / 65536), floor(v / 256) % 256, v % 256)
        end
        parts[#parts + 1] = concat(out, "", 1, n)
        i = stop + 1
        if pause then pause() end
    end
    return true
end

--- @{decodeParts} of text without whitespace (a string or a list of strings).
function base64.decodeClean(src, pause)
    if type(src) == "string" then src = { src } end
    -- Padding ends the text, possibly across the last pieces: each piece's end without it.
    local n, ends, total = #src, {}, 0
    for k = 1, n do ends[k] = #src[k] end
    for k = n, 1, -1 do
        local p, e = src[k], ends[k]
        while e > 0 and byte(p, e) == 61 do e = e - 1 end
        ends[k] = e
        if e > 0 then break end
    end
    for k = 1, n do total = total + ends[k] end
    if total % 4 == 1 then
        if hasSpace(src) then return nil, "invalid base64 character" end
        return nil, "invalid base64 length"
    end
    local parts = {}
    local carry = "" -- the start of a group cut between two pieces (at most 3 characters)
    for k = 1, n do
        local p, e, from = src[k], ends[k], 1
        if carry ~= "" and e > 0 then
            local need = 4 - #carry
            if e < need then
                carry, from = carry .. p:sub(1, e), e + 1
            else
                if not decodeGroups(carry .. sub(p, 1, need), 1, 4, parts) then return nil, "invalid base64 character" end
                carry, from = "", need + 1
            end
        end
        if from <= e then
            local full = from + floor((e - from + 1) / 4) * 4 - 1
            if not decodeGroups(p, from, full, parts, pause) then return nil, "invalid base64 character" end
            if full < e then carry = sub(p, full + 1, e) end
        end
    end
    local rest = #carry
    local a, b, c = byte(carry, 1, 3)
    a, b, c = dec[a], dec[b], dec[c]
    if rest == 2 then
        if not (a and b) then return nil, "invalid base64 character" end
        parts[#parts + 1] = char(floor((a * 64 + b) / 16))
    elseif rest == 3 then
        if not (a and b and c) then return nil, "invalid base64 character" end
        local v = a * 4096 + b * 64 + c
        parts[#parts + 1] = char(floor(v / 1024), floor(v / 4) % 256)
    end
    return parts
end

--- Decode base64 text (standard or URL-safe alphabet; whitespace ignored,
-- padding optional).
-- @tparam string|table s The base64 text, as for @{decodeParts}.
-- @tparam[opt] function pause As for @{encodeParts}.
-- @treturn[1] string The bytes.
-- @treturn[2] nil When the text is not base64.
-- @treturn[2] string Why.
function base64.decode(s, pause)
    local parts, err = base64.decodeParts(s, pause)
    if not parts then return nil, err end
    return concat(parts)
end

return base64
