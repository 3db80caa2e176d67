--- Base64 (RFC 4648, with padding) for byte strings.
--
-- File contents travel base64-encoded on the wire so that they stay
-- byte-exact. Plain arithmetic on doubles (no bit operators, no integer
-- subtype), so it runs unchanged on Cobalt and on PUC Lua 5.2.
--
-- @module base64

local base64 = {}

local floor, byte, char, concat = math.floor, string.byte, string.char, table.concat
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

-- Groups handled between two calls of the optional `pause` argument: about 6 KB of input,
-- a few milliseconds on a computer. The caller's `pause` decides whether to yield.
local SLICE = 2048

local enc, dec = {}, {}
for i = 0, 63 do
    local c = alphabet:sub(i + 1, i + 1)
    enc[i] = c
    dec[c] = i
end
dec["-"], dec["_"] = 62, 63 -- also accept the URL-safe alphabet

-- Two-character table for the top and bottom 12 bits of each 24-bit group.
local pair = {}
for i = 0, 4095 do pair[i] = enc[floor(i / 64)] .. enc[i % 64] end

--- Encode bytes as base64 text.
-- @tparam string s The bytes.
-- @tparam[opt] function pause Called every few kilobytes, so that a caller on a computer
-- can let it pull events (CC's "Too long without yielding" watchdog) during a large payload.
-- @treturn string The base64 text.
function base64.encode(s, pause)
    if type(s) ~= "string" then error("bad argument #1 (string expected, got " .. type(s) .. ")", 2) end
    local out, n = {}, 0
    local len = #s
    local full = len - len % 3
    for i = 1, full, 3 do
        local a, b, c = byte(s, i, i + 2)
        local v = a * 65536 + b * 256 + c
        n = n + 1
        out[n] = pair[floor(v / 4096)] .. pair[v % 4096]
        if pause and n % SLICE == 0 then pause() end
    end
    local rest = len - full
    if rest == 1 then
        local a = byte(s, len)
        n = n + 1
        out[n] = enc[floor(a / 4)] .. enc[(a % 4) * 16] .. "=="
    elseif rest == 2 then
        local a, b = byte(s, len - 1, len)
        local v = a * 256 + b
        n = n + 1
        out[n] = enc[floor(v / 1024)] .. enc[floor(v / 16) % 64] .. enc[(v % 16) * 4] .. "="
    end
    return concat(out)
end

--- Decode base64 text (standard or URL-safe alphabet; whitespace ignored,
-- padding optional).
-- @tparam string s The base64 text.
-- @tparam[opt] function pause As for `encode`.
-- @treturn[1] string The bytes.
-- @treturn[2] nil When the text is not base64.
-- @treturn[2] string Why.
function base64.decode(s, pause)
    if type(s) ~= "string" then error("bad argument #1 (string expected, got " .. type(s) .. ")", 2) end
    s = s:gsub("%s+", ""):gsub("=+$", "")
    if s:find("[^%w%+/%-_]") then return nil, "invalid base64 character" end
    if #s % 4 == 1 then return nil, "invalid base64 length" end
    local out, n = {}, 0
    local len = #s
    local full = len - len % 4
    for i = 1, full, 4 do
        local a, b, c, d = s:sub(i, i), s:sub(i + 1, i + 1), s:sub(i + 2, i + 2), s:sub(i + 3, i + 3)
        local v = dec[a] * 262144 + dec[b] * 4096 + dec[c] * 64 + dec[d]
        n = n + 1
        out[n] = char(floor(v / 65536), floor(v / 256) % 256, v % 256)
        if pause and n % SLICE == 0 then pause() end
    end
    local rest = len - full
    if rest == 2 then
        local v = dec[s:sub(full + 1, full + 1)] * 64 + dec[s:sub(full + 2, full + 2)]
        n = n + 1
        out[n] = char(floor(v / 16))
    elseif rest == 3 then
        local v = dec[s:sub(full + 1, full + 1)] * 4096 + dec[s:sub(full + 2, full + 2)] * 64
            + dec[s:sub(full + 3, full + 3)]
        n = n + 1
        out[n] = char(floor(v / 1024), floor(v / 4) % 256)
    end
    return concat(out)
end

return base64
