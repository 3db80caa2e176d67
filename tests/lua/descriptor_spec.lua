-- descriptor_spec: return values as Result descriptors (docs/protocol.md, "Payloads").
local lib = dofile(ROOT .. "apis/libmcpcomputer.lua")
local json = dofile(ROOT .. "apis/json.lua")

local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end
local function enc(v) return json.encode(v) end

-- Scalars.
eq(enc(lib.describe(nil)), '{"type":"nil"}')
eq(enc(lib.describe(true)), '{"type":"boolean","value":true}')
eq(enc(lib.describe(3)), '{"type":"number","value":3}')
eq(enc(lib.describe(2.5)), '{"type":"number","value":2.5}')
eq(enc(lib.describe("x\255")), '{"encoding":"base64","type":"string","value":"eP8="}', "bytes in base64")
eq(enc(lib.describe("caf\195\169")), '{"type":"string","value":"caf\\u00c3\\u00a9"}', "UTF-8 stays text")
eq(enc(lib.describe(math.huge)), '{"repr":"inf","type":"number"}')
eq(enc(lib.describe(-math.huge)), '{"repr":"-inf","type":"number"}')
eq(enc(lib.describe(0 / 0)), '{"repr":"nan","type":"number"}')
local f = function() end
local d = lib.describe(f)
eq(d.type, "function") eq(d.repr, tostring(f)) eq(d.value, nil)
d = lib.describe(coroutine.create(f))
eq(d.type, "thread") assert(d.repr:find("^thread"), "thread repr")
-- A userdata, where the runtime offers one (plain Lua's io.stdout; CC and the emulator have none
-- reachable from pure code).
if type(io) == "table" and type(io.stdout) == "userdata" then
    d = lib.describe(io.stdout)
    eq(d.type, "userdata") assert(type(d.repr) == "string")
end

-- Tables: arrays, objects, empty, mixed keys.
eq(enc(lib.describe({ 1, 2, "x" })), '{"truncated":false,"type":"table","value":[1,2,"x"]}')
eq(enc(lib.describe({ a = 1 })), '{"truncated":false,"type":"table","value":{"a":1}}')
eq(enc(lib.describe({})), '{"truncated":false,"type":"table","value":{}}')
eq(enc(lib.describe({ 1, 2, x = true })), '{"truncated":false,"type":"table","value":{"1":1,"2":2,"x":true}}')
eq(enc(lib.describe({ [1.5] = "a", [true] = "b" }).value), '{"1.5":"a","true":"b"}', "keys by tostring")
local tk = {}
eq(lib.describe({ [tk] = 1 }).value[tostring(tk)], 1, "table key by tostring")
eq(enc(lib.describe({ [3] = "c" }).value), '{"3":"c"}', "sparse is an object")

-- Non-plain values inside tables are descriptors.
local v = lib.describe({ f = f, inf = math.huge, n = { 1, { 2 } } }).value
eq(v.f.type, "function") eq(v.f.repr, tostring(f))
eq(enc(v.inf), '{"repr":"inf","type":"number"}')
eq(enc(v.n), "[1,[2]]")

-- Cycles; a shared (non-cyclic) table is converted twice.
local c = { name = "c" } c.self = c
d = lib.describe(c)
eq(enc(d.value), '{"name":"c","self":{"type":"cycle"}}')
local shared = { 1 }
eq(enc(lib.describe({ shared, shared }).value), "[[1],[1]]")

-- Depth limit 8.
local deep = { "leaf" }
for _ = 1, 10 do deep = { deep } end
d = lib.describe(deep)
eq(d.truncated, true, "deep table truncated")
local node, depth = d.value, 1
while type(node) == "table" and node.type == nil do node = node[1]; depth = depth + 1 end
eq(depth, 9, "eight levels of tables kept")
eq(node.type, "table") assert(node.repr, "cut table has a repr")
local eight = { "leaf" }
for _ = 1, 7 do eight = { eight } end
eq(lib.describe(eight).truncated, false, "exactly 8 levels is not truncated")

-- Entry limit 1000 for the whole value.
local big = {}
for i = 1, 1500 do big[i] = i end
d = lib.describe(big)
eq(d.truncated, true) eq(#d.value, 1000)
local nest = {}
for i = 1, 10 do local t = {} for j = 1, 150 do t[j] = j end nest[i] = t end
d = lib.describe(nest)
eq(d.truncated, true, "entry limit counts nested entries")
local count = 0
for _, t in ipairs(d.value) do count = count + 1 + #t end
assert(count <= 1000, "at most 1000 entries, got " .. count)
eq(lib.describe({ 1, 2, 3 }).truncated, false)

-- Lists of values: nil in the middle kept, count n.
local list, n = lib.describeAll(table.pack(1, nil, "x", nil))
eq(n, 4) eq(#list, 4)
eq(enc(list), '[{"type":"number","value":1},{"type":"nil"},{"type":"string","value":"x"},{"type":"nil"}]')
list, n = lib.describeAll(table.pack())
eq(n, 0) eq(enc(list), "[]", "no returns is an empty array")

-- Bytes: every byte of a string that is not valid UTF-8 survives, as base64, anywhere.
eq(enc(lib.describe("\0\255\167")), '{"encoding":"base64","type":"string","value":"AP+n"}')
eq(enc(lib.describe("")), '{"type":"string","value":""}')
for _, case in ipairs({
    { "\240\159\152\128", true, "a four-byte character" },
    { "\226\130\172 and \194\163", true, "three- and two-byte characters" },
    { "\192\128", false, "an overlong NUL" },
    { "\224\128\175", false, "an overlong slash" },
    { "\237\160\128", false, "a surrogate" },
    { "\244\144\128\128", false, "above U+10FFFF" },
    { "\226\130", false, "cut short" },
    { "\128", false, "a lone continuation byte" },
    { "ok\255", false, "0xFF after ASCII" },
}) do
    eq(lib.isUtf8(case[1]), case[2], case[3])
end
d = lib.describe({ "\255", "x", { deep = "\0\254" } })
eq(enc(d.value), '[{"encoding":"base64","type":"string","value":"/w=="},"x",{"deep":{"encoding":"base64","type":"string","value":"AP4="}}]',
    "byte strings inside tables")
-- A key that is not valid UTF-8 cannot be an object's member name: the table is its pairs.
d = lib.describe({ ["\255k"] = 1, plain = "\1" })
eq(d.value.type, "table")
eq(#d.value.entries, 2)
local seen = {}
for _, kv in ipairs(d.value.entries) do seen[enc(kv[1])] = enc(kv[2]) end
eq(seen['{"encoding":"base64","type":"string","value":"/2s="}'], "1", "the byte key and its value")
eq(seen['"plain"'], '"\\u0001"', "a text key stays text")

print("descriptor_spec: ok")
