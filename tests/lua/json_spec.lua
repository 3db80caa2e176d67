-- json_spec: the byte-safe JSON codec (docs/protocol.md, "Bytes on the wire").
-- Run with a global ROOT (the client root, ending in "/").
local json = dofile(ROOT .. "apis/json.lua")

local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end

local function deepEq(a, b, path)
    path = path or "value"
    if type(a) ~= type(b) then error(path .. ": type " .. type(a) .. " vs " .. type(b), 2) end
    if type(a) ~= "table" then
        if a ~= b then error(path .. ": " .. tostring(a) .. " vs " .. tostring(b), 2) end
        return
    end
    for k, v in pairs(a) do deepEq(v, b[k], path .. "." .. tostring(k)) end
    for k in pairs(b) do if a[k] == nil then error(path .. ": missing key " .. tostring(k), 2) end end
end

-- Scalars and number formatting.
eq(json.encode(5), "5", "integer")
eq(json.encode(10 / 2), "5", "integral double")
eq(json.encode(-3), "-3")
eq(json.encode(0), "0")
eq(json.encode(-0.0), "0", "negative zero")
eq(json.encode(2 ^ 53), "9007199254740992", "2^53 not in exponent form")
eq(json.encode(1e15), "1000000000000000")
eq(json.encode(1733000000000), "1733000000000", "epoch ms")
eq(json.encode(0.5), "0.5")
eq(json.encode(0.1), "0.1")
eq(tonumber(json.encode(1 / 3)), 1 / 3, "1/3 round trip")
eq(json.encode(0 / 0), "null", "NaN as null")
eq(json.encode(math.huge), "null", "inf as null")
eq(json.encode(-math.huge), "null", "-inf as null")
eq(json.encode(true), "true")
eq(json.encode(false), "false")
eq(json.encode(nil), "null")
eq(json.encode(json.null), "null")
eq(json.encode("a\"b\\c\n\t/"), [["a\"b\\c\n\t/"]])

-- Byte strings: every byte 0x00-0xFF survives, output is ASCII only.
local bytes = {}
for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
bytes = table.concat(bytes)
local text = json.encode(bytes)
assert(not text:find("[\128-\255]"), "encoded text must be ASCII only")
assert(not text:find("[%z\1-\31]"), "encoded text must have no raw control characters")
eq(json.decode(text), bytes, "all 256 bytes round trip")
eq(json.encode("\233"), [["\u00e9"]], "byte 0xE9 as \\u00e9")
eq(json.encode("\0"), [["\u0000"]])

-- \u00XX decodes to one byte; higher code points to UTF-8; surrogates joined.
eq(json.decode([["\u00e9"]]), "\233", "\\u00e9 is one byte")
eq(json.decode([["\u00FF\u0080"]]), "\255\128")
eq(json.decode([["\u0041"]]), "A")
eq(json.decode([["\u20ac"]]), "\226\130\172", "euro sign as UTF-8")
eq(json.decode([["\ud83d\ude00"]]), "\240\159\152\128", "surrogate pair as 4 UTF-8 bytes")
eq(json.decode([["\ud83d"]]), "\239\191\189", "lone surrogate as U+FFFD")
eq(json.decode([["\/\b\f\r"]]), "/\b\f\r")
eq(json.decode('"caf\195\169"'), "caf\195\169", "raw UTF-8 bytes pass through")

-- null and empty arrays.
eq(json.decode("null"), json.null)
local arr = json.decode("[1,null,3]")
eq(arr[2], json.null, "null kept in place in arrays")
eq(#arr, 3)
eq(json.encode(arr), "[1,null,3]")
eq(json.encode({}), "{}", "empty table is an object")
eq(json.encode(json.array()), "[]", "marked empty array")
eq(json.encode(json.decode("[]")), "[]", "decoded [] stays an array")
eq(json.encode(json.decode("{}")), "{}")
eq(json.encode({ returns = json.array(), n = 0 }), '{"n":0,"returns":[]}')
eq(json.encode(setmetatable({}, { __jsontype = "array" })), "[]", "foreign array marker")

-- Arrays vs objects, mixed keys.
eq(json.encode({ 1, 2, 3 }), "[1,2,3]")
eq(json.encode({ [1] = "a", [3] = "c" }), '{"1":"a","3":"c"}', "sparse table is an object")
eq(json.encode({ 1, 2, x = 3 }), '{"1":1,"2":2,"x":3}', "numeric keys kept beside string keys")
eq(json.encode({ [1.5] = true }), '{"1.5":true}')

-- Round trips of nested values.
local v = { type = "hello", protocol = 1, label = json.null, serves = { "exec-lua", "run-file" },
    nested = { a = { b = { c = { 1, 2, { d = "\255" } } } } }, f = 0.25, neg = -12 }
deepEq(json.decode(json.encode(v)), v)
deepEq(json.decode(' { "a" : [ 1 , 2 ] , "b" : { } } '), { a = { 1, 2 }, b = {} })
eq(json.decode("1e3"), 1000)
eq(json.decode("-0.5E-2"), -0.005)

-- Errors.
local function fails(s)
    local ok = pcall(json.decode, s)
    assert(not ok, "expected a decode error for " .. s)
end
fails("") fails("{") fails("[1,]") fails('{"a"}') fails('"abc') fails("nul") fails("1 2") fails('"\\x"')
assert(not pcall(json.encode, print), "functions cannot be encoded")
local cyc = {} cyc.self = cyc
assert(not pcall(json.encode, cyc), "cycles cannot be encoded")

-- A large string (a read-file answer) round trips quickly.
local big = string.rep(bytes, 1024)
eq(json.decode(json.encode({ content = big })).content, big, "256 KiB byte string")

-- In slices: the pause is called for a large value both ways, and the result is the same.
do
    local calls = 0
    local function pause() calls = calls + 1 end
    local value = { content = big, list = {} }
    for i = 1, 5000 do value.list[i] = { i, "v" .. i } end
    local parts = json.encodeParts(value, pause)
    assert(calls > 10, "encode paused " .. calls .. " times")
    assert(#parts > 10, "encoded in " .. #parts .. " pieces")
    -- A piece is at most 16 KiB of string escaped (6 bytes per byte at most) or 1024 tokens.
    for _, p in ipairs(parts) do assert(#p <= 6 * 16384 + 16, "a piece of " .. #p .. " bytes") end
    local text = table.concat(parts)
    eq(text, json.encode(value), "pieces join to the same text")
    calls = 0
    local back = json.decode(text, pause)
    assert(calls > 10, "decode paused " .. calls .. " times")
    eq(back.content, big, "decoded in slices")
    eq(back.list[5000][2], "v5000")
end

-- json.chunks: a list of strings written as one string, pieces not joined first.
eq(json.encode({ c = json.chunks({ "ab", "c\"", string.rep("x", 300), "\255" }) }),
    '{"c":"abc\\"' .. string.rep("x", 300) .. '\\u00ff"}', "chunks are one string")
eq(json.encode(json.chunks({})), '""', "no chunks: the empty string")

-- rawKey: the member is skipped and its text returned as it was.
do
    local v, raw = json.decode('{"type":"x","payload":{"a":[1,"]}",{"b":"\\\\"}]},"z":1}', nil, "payload")
    eq(v.type, "x") eq(v.z, 1) eq(v.payload, nil, "the raw member is not decoded")
    eq(raw, '{"a":[1,"]}",{"b":"\\\\"}]}', "its text as it came")
    local _, none = json.decode('{"type":"x"}', nil, "payload")
    eq(none, nil, "absent member")
    local _, scalar = json.decode('{"payload": null }', nil, "payload")
    eq(scalar, "null")
    local inner, deep = json.decode('{"a":{"payload":1}}', nil, "payload")
    eq(deep, nil, "only a top-level member") eq(inner.a.payload, 1)
end

print("json_spec: ok")
