--- Base64 (RFC 4648, with padding) for byte strings.
--
-- File contents travel base64-encoded on the wire so that they stay
-- byte-exact. Plain arithmetic on doubles (no bit operators, no integer
-- subtype), so it runs unchanged on Cobalt and on PUC Lua 5.2.
--
-- @module base64

local base64 = {}

local floor, byte, char, sub, concat = math.floor, string.byte, string.char, string.sub, table.concat
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

-- Groups handled per slice (about 3 KB of input): each slice is joined into one string at
-- once, so a large payload holds a few hundred strings rather than one per group (CraftOS-PC
-- stalls until its watchdog fires when a table of tens of thousands of strings is held across
-- yields; see docs/lua-client.md). The optional `pause` is called after every slice; the
-- caller's pause decides whether to yield, so a slice's own time is what a hold can overrun
-- the pause's 25 ms by: 1,024 groups take about 2.5 ms on CraftOS-PC (2,048 took 5 ms, and
-- the 1 MB write's holds reached 35-65 ms on a loaded machine).
local SLICE = 1024
--
-- Each slice works on its own piece of the text (`sub`), never indexing into the whole: on
-- CraftOS-PC a substring of a large string is a view whose every `string.byte` costs the size
-- of the string it views (0.4 ms per call on 1.4 MB), so a byte loop over a decoded JSON
-- string was quadratic there (the "base64 of 150 KB never finishes" of issue 8). A piece of a
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
-- @treturn table The base64 text as a list of strings (about 4 KB each), to be joined in order.
function base64.encodeParts(s, pause)
    if type(s) ~= "string" then error("bad argument #1 (string expected, got " .. type(s) .. ")", 2) end
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
    if type(s) ~= "string" then error("bad argument #1 (string expected, got " .. type(s) .. ")", 2) end
    return concat(base64.encodeParts(s, pause))
end

--- Decode base64 text (standard or URL-safe alphabet; whitespace ignored,
-- padding optional), in pieces.
-- @tparam string s The base64 text.
-- @tparam[opt] function pause As for @{encodeParts}.
-- @treturn[1] table The bytes as a list of strings (about 3 KB each), to be joined in order.
-- @treturn[2] nil When the text is not base64.
-- @treturn[2] string Why.
function base64.decodeParts(s, pause)
    if type(s) ~= "string" then error("bad argument #1 (string expected, got " .. type(s) .. ")", 2) end
    -- Characters are checked as they are decoded (a scan of the whole text with a pattern
    -- class costs about 80 ms per MB on CraftOS-PC, in one piece). Whitespace is rare: when a
    -- character is not in the alphabet and the text has whitespace, it is stripped (one copy)
    -- and decoding starts again.
    local stripped = false
    while true do
        local parts, err = base64.decodeClean(s, pause)
        if parts then return parts end
        if stripped or err ~= "invalid base64 character" or not s:find("%s") then return nil, err end
        s, stripped = s:gsub("%s+", ""), true
    end
end

--- @{decodeParts} of text without whitespace.
function base64.decodeClean(s, pause)
    local len = #s
    while len > 0 and byte(s, len) == 61 do len = len - 1 end -- padding
    if len % 4 == 1 then
        if s:find("%s") then return nil, "invalid base64 character" end
        return nil, "invalid base64 length"
    end
    local parts = {}
    local full = len - len % 4
    local i = 1
    while i <= full do
        local stop = math.min(full, i + SLICE * 4 - 1)
        local piece = sub(s, i, stop)
        local out, n = {}, 0
        for j = 1, stop - i + 1, 4 do
            local a, b, c, d = byte(piece, j, j + 3)
            a, b, c, d = dec[a], dec[b], dec[c], dec[d]
            if not (a and b and c and d) then return nil, "invalid base64 character" end
            local v = a * 262144 + b * 4096 + c * 64 + d
            n = n + 1
            out[n] = char(floor(v / 65536), floor(v / 256) % 256, v % 256)
        end
        parts[#parts + 1] = concat(out, "", 1, n)
        i = stop + 1
        if pause then pause() end
    end
    local rest = len - full
    local a, b, c = byte(s, full + 1, full + 3)
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
-- @tparam string s The base64 text.
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
