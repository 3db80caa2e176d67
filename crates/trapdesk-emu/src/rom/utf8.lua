-- utf8: Lua 5.3's library, which Cobalt offers and PUC Lua 5.2 lacks.
local utf8 = { charpattern = "[\0-\x7F\xC2-\xF4][\x80-\xBF]*" }
local floor = math.floor

local function encode(c)
    if c < 0 or c > 0x7FFFFFFF then error("value out of range", 3) end
    if c < 0x80 then return string.char(c) end
    if c < 0x800 then return string.char(0xC0 + floor(c / 0x40), 0x80 + c % 0x40) end
    if c < 0x10000 then
        return string.char(0xE0 + floor(c / 0x1000), 0x80 + floor(c / 0x40) % 0x40, 0x80 + c % 0x40)
    end
    return string.char(0xF0 + floor(c / 0x40000), 0x80 + floor(c / 0x1000) % 0x40,
        0x80 + floor(c / 0x40) % 0x40, 0x80 + c % 0x40)
end

-- The code point at byte i and the index after it, or nil when the bytes there are not UTF-8.
local function decode(s, i)
    local c = s:byte(i)
    if not c then return nil end
    if c < 0x80 then return c, i + 1 end
    local n, min
    if c >= 0xF0 and c < 0xF8 then n, c, min = 3, c - 0xF0, 0x10000
    elseif c >= 0xE0 then n, c, min = 2, c - 0xE0, 0x800
    elseif c >= 0xC0 then n, c, min = 1, c - 0xC0, 0x80
    else return nil end
    for j = 1, n do
        local b = s:byte(i + j)
        if not b or b < 0x80 or b >= 0xC0 then return nil end
        c = c * 0x40 + (b - 0x80)
    end
    if c < min or c > 0x10FFFF or (c >= 0xD800 and c <= 0xDFFF) then return nil end
    return c, i + n + 1
end

local function pos(i, len)
    if i >= 0 then return i end
    if -i > len then return 0 end
    return len + i + 1
end

function utf8.char(...)
    local out = {}
    for i = 1, select("#", ...) do out[i] = encode((select(i, ...))) end
    return table.concat(out)
end

function utf8.codepoint(s, i, j)
    i = pos(i or 1, #s)
    j = pos(j or i, #s)
    local out = {}
    while i <= j do
        local c, nxt = decode(s, i)
        if not c then error("invalid UTF-8 code", 2) end
        out[#out + 1] = c
        i = nxt
    end
    return table.unpack(out)
end

function utf8.len(s, i, j)
    i = pos(i or 1, #s)
    j = pos(j or -1, #s)
    local n = 0
    while i <= j do
        local c, nxt = decode(s, i)
        if not c then return nil, i end
        n, i = n + 1, nxt
    end
    return n
end

local function is_cont(s, i)
    local b = s:byte(i)
    return b and b >= 0x80 and b < 0xC0
end

function utf8.offset(s, n, i)
    i = pos(i or (n >= 0 and 1 or #s + 1), #s)
    if is_cont(s, i) and n ~= 0 then error("initial position is a continuation byte", 2) end
    if n == 0 then
        while i > 1 and is_cont(s, i) do i = i - 1 end
        return i
    elseif n > 0 then
        n = n - 1
        while n > 0 and i <= #s do
            repeat i = i + 1 until not is_cont(s, i)
            n = n - 1
        end
    else
        while n < 0 and i > 1 do
            repeat i = i - 1 until i <= 1 or not is_cont(s, i)
            n = n + 1
        end
    end
    if n == 0 then return i end
    return nil
end

function utf8.codes(s)
    return function(str, i)
        if i > 0 then
            local _, nxt = decode(str, i)
            i = nxt or i + 1
        else
            i = 1
        end
        if i > #str then return nil end
        local c = decode(str, i)
        if not c then error("invalid UTF-8 code", 2) end
        return i, c
    end, s, 0
end

return utf8
