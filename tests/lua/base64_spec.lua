-- base64_spec: base64 of byte strings.
local base64 = dofile(ROOT .. "apis/base64.lua")

local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end

-- RFC 4648 test vectors.
local vectors = { [""] = "", f = "Zg==", fo = "Zm8=", foo = "Zm9v", foob = "Zm9vYg==",
    fooba = "Zm9vYmE=", foobar = "Zm9vYmFy" }
for plain, coded in pairs(vectors) do
    eq(base64.encode(plain), coded, "encode " .. plain)
    eq(base64.decode(coded), plain, "decode " .. coded)
end

-- All 256 bytes, at every alignment.
local all = {}
for i = 0, 255 do all[#all + 1] = string.char(i) end
all = table.concat(all)
for cut = 0, 3 do
    local s = all:sub(cut + 1)
    local coded = base64.encode(s)
    assert(not coded:find("[^%w%+/=]"), "alphabet only")
    eq(#coded % 4, 0, "padded length")
    eq(base64.decode(coded), s, "all bytes from offset " .. cut)
end

-- Random data of many lengths.
math.randomseed(42)
for len = 0, 200 do
    local t = {}
    for i = 1, len do t[i] = string.char(math.random(0, 255)) end
    local s = table.concat(t)
    eq(base64.decode(base64.encode(s)), s, "random length " .. len)
end

-- Lenient decoding: whitespace, missing padding, URL-safe alphabet.
eq(base64.decode("Zm9v\nYmFy"), "foobar")
eq(base64.decode("Zm9vYg"), "foob")
eq(base64.decode("-_8="), base64.decode("+/8="))
assert(base64.decode("Zm9v!") == nil, "invalid characters are refused")
assert(base64.decode("Z") == nil, "a length of 1 mod 4 is refused")

print("base64_spec: ok")

-- A large payload calls `pause` every few kilobytes both ways, and the result is unchanged.
do
    local big = string.rep(all, 400) -- 102400 bytes
    local calls = 0
    local coded = base64.encode(big, function() calls = calls + 1 end)
    eq(coded, base64.encode(big), "encode with pause")
    assert(calls >= 10, "encode paused " .. calls .. " times")
    calls = 0
    eq(base64.decode(coded, function() calls = calls + 1 end), big, "decode with pause")
    assert(calls >= 10, "decode paused " .. calls .. " times")
    -- In pieces: few strings, joined to the same bytes; whitespace and padding as before.
    local parts = base64.encodeParts(big)
    assert(#parts >= 10 and #parts < #big / 1000, #parts .. " pieces")
    eq(table.concat(parts), coded)
    local back = base64.decodeParts(coded)
    assert(#back >= 10 and #back < #big / 1000, #back .. " pieces")
    eq(table.concat(back), big)
    eq(base64.decode(coded:sub(1, 100) .. "\n " .. coded:sub(101)), base64.decode(coded), "whitespace ignored")
end
eq(select(2, base64.decode("Zg==Zg==")), "invalid base64 character", "padding inside")
eq(base64.decode("Zg"), "f", "padding optional")
