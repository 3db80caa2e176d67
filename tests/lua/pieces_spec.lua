-- pieces_spec: JSON and base64 decoded from a text in pieces (a request that came in
-- fragments) give what the joined text gives.
local json = dofile(ROOT .. "apis/json.lua")
local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end
local function deepEq(a, b, path)
    path = path or "value"
    if type(a) ~= type(b) then error(path .. ": " .. type(a) .. " vs " .. type(b), 2) end
    if type(a) ~= "table" then if a ~= b then error(path .. ": " .. tostring(a) .. " vs " .. tostring(b), 2) end return end
    for k, v in pairs(a) do deepEq(v, b[k], path .. "." .. tostring(k)) end
    for k in pairs(b) do if a[k] == nil then error(path .. "." .. tostring(k) .. " missing", 2) end end
end

-- A text cut into pieces at random places (pieces of 0 to 40 bytes, some empty) decodes to the
-- same value as the whole text, raw members and errors included.
local function cut(text)
    local pieces, i = {}, 1
    while i <= #text do
        local n = math.random(0, 40)
        pieces[#pieces + 1] = text:sub(i, i + n - 1)
        i = i + n
    end
    if math.random() < 0.3 then table.insert(pieces, math.random(1, #pieces + 1), "") end
    return pieces
end
math.randomseed(8)
local bytes = {}
for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
bytes = table.concat(bytes)
local texts = {
    json.encode({ type = "gateway_request", id = "a1", request = "write-file", timeout_ms = 1500,
        payload = { path = "x/y.bin", content = bytes:rep(3), encoding = "base64", n = -12.5e-3, list = { 1, true, false, json.null, "\"]}" } } }),
    '  { "a" : [ 1 , 2.5e+10 , -3 ] , "b" : { } , "c" : "\\ud83d\\ude00\\u00e9\\n\\"" , "payload" : null }  ',
    '[' .. ('"\\\\x\\u0041",'):rep(200) .. '123456789012345678901234567890123456789]',
    '"' .. ("x"):rep(300) .. '\\ud83d\\ude00' .. ("y"):rep(10) .. '"',
    "true", "null", "-0.25", '{"payload":{"k":"\\\\"},"z":[["]"]]}',
}
-- 2,700 decodes are seconds of work on a loaded machine: on a computer (CC or the emulator)
-- the spec yields now and then, as any long CC program must, so that the 7 s watchdog ("Too
-- long without yielding") measures the spec's fairness, not the machine's load.
local function breathe()
    if os.queueEvent and os.pullEvent then
        os.queueEvent("pieces_spec")
        os.pullEvent("pieces_spec")
    end
end
for t, text in ipairs(texts) do
    local whole, rawWhole = json.decode(text, nil, "payload")
    for round = 1, 300 do
        if round % 25 == 0 then breathe() end
        local pieces = cut(text)
        local v, raw = json.decode(pieces, nil, "payload")
        deepEq(v, whole, "text " .. t .. " round " .. round)
        if type(raw) == "table" then raw = table.concat(raw) end
        eq(raw, rawWhole, "raw of text " .. t .. " round " .. round)
    end
end
-- Errors point at the same byte, however the text is cut.
for _, bad in ipairs({ '{"a": [1, 2,, 3]}', '{"a": "unterminated', '{"a": 1} x', '["\\q"]', '[1, tru]' }) do
    local _, whole = pcall(json.decode, bad)
    for _ = 1, 50 do
        local ok, err = pcall(json.decode, cut(bad))
        eq(ok, false, bad)
        eq(err, whole, "error for " .. bad)
    end
end
-- chunks: the named top-level string comes as a json.chunks list of the text's own pieces.
do
    local content = ("QUJD"):rep(5000) -- 20,000 bytes, no escapes
    local text = json.encode({ path = "p", content = content, other = "o" })
    local pieces = {}
    for i = 1, #text, 4096 do pieces[#pieces + 1] = text:sub(i, i + 4095) end
    local v = json.decode(pieces, nil, { chunks = { content = true } })
    eq(getmetatable(v.content), json.chunks_mt, "a chunks list")
    eq(table.concat(v.content), content)
    assert(#v.content >= 4, #v.content .. " pieces")
    eq(v.other, "o") eq(v.path, "p")
    local w = json.decode(text, nil, { chunks = { content = true } })
    eq(table.concat(w.content), content, "from one string too")
    local x = json.decode('{"content":"a\\nb","inner":{"content":"c"}}', nil, { chunks = { content = true } })
    eq(table.concat(x.content), "a\nb") eq(x.inner.content, "c", "only a top-level member")
    eq(json.decode('{"content":5}', nil, { chunks = { content = true } }).content, 5, "not a string: as it is")
end
-- The pause is called between pieces.
do
    local calls = 0
    local text = json.encode({ content = ("z"):rep(100000) })
    local pieces = {}
    for i = 1, #text, 1000 do pieces[#pieces + 1] = text:sub(i, i + 999) end
    json.decode(pieces, function() calls = calls + 1 end)
    assert(calls >= 99, "paused " .. calls .. " times")
end
print("pieces: ok")
local base64 = dofile(ROOT .. "apis/base64.lua")
-- base64 of a text in pieces, cut anywhere (inside groups and inside the padding).
for len = 0, 40 do
    local t = {}
    for i = 1, len do t[i] = string.char(math.random(0, 255)) end
    local plain = table.concat(t)
    local coded = base64.encode(plain)
    for _ = 1, 30 do
        local got, err = base64.decode(cut(coded))
        if got ~= plain then error("length " .. len .. ": " .. tostring(err)) end
        local nopad = coded:gsub("=", "")
        eq(base64.decode(cut(nopad)), plain, "no padding, length " .. len)
        eq(base64.decode(cut(coded:sub(1, 2) .. " \n" .. coded:sub(3))), plain, "whitespace, length " .. len)
    end
end
assert(base64.decode({ "Zm9", "v!" }) == nil, "invalid characters in pieces are refused")
eq(select(2, base64.decode({ "Zm9v", "Y" })), "invalid base64 length")
eq(base64.decode({}), "", "no pieces")
print("base64 pieces: ok")
