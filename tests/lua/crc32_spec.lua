-- crc32_spec: lib.crc32 is zlib's CRC-32 (IEEE), in pieces or whole, on Lua 5.2 with bit32
-- as CC: Tweaked's Cobalt runs it. The host compares these sums with its own (crc32fast).
local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end

local lib = dofile(ROOT .. "apis/libmcpcomputer.lua")

eq(lib.crc32(""), 0, "empty")
eq(lib.crc32("123456789"), 0xCBF43926, "check value")
eq(lib.crc32("The quick brown fox jumps over the lazy dog"), 0x414FA339, "fox")
eq(lib.crc32("\0"), 0xD202EF8D, "one zero byte")
eq(lib.crc32("\255\255\255\255"), 0xFFFFFFFF, "four 0xff bytes")

-- Every byte value once: the sum zlib gives for bytes 0..255.
local all = {}
for i = 0, 255 do all[#all + 1] = string.char(i) end
all = table.concat(all)
eq(lib.crc32(all), 0x29058C73, "bytes 0..255")

-- In pieces, the same as whole.
local c = 0
for i = 1, #all, 7 do c = lib.crc32(all:sub(i, i + 6), c) end
eq(c, 0x29058C73, "bytes 0..255 in pieces of 7")

-- Never negative: the wire carries it as a JSON number the host reads as u32.
eq(lib.crc32("a") >= 0, true, "unsigned")
eq(lib.crc32("a"), 0xE8B7BE43, "a")

local ok = pcall(lib.crc32, 5)
eq(ok, false, "a number is refused")
