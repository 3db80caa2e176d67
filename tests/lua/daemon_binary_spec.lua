-- daemon_binary_spec: servers/sandbox.lua's binary frames (docs/protocol.md, "Binary frames")
-- against stubbed CC APIs: the hello offers them, blobs from the host reach the server as their
-- raw pieces, a blob answer and output go out as binary frames within the limit.
local json = dofile(ROOT .. "apis/json.lua")
local sent, queued, opened = {}, {}, nil
local realOs = os
local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end
local timers = 0
local env = setmetatable({
    shell = {},
    fs = { getDir = function(p) return (p:match("^(.*)/[^/]*$") or "") end,
        exists = function() return false end, open = function() return nil end, getSize = function() return 0 end,
        delete = function() end },
    settings = { get = function(k) return ({ ["sandbox.url"] = "ws://127.0.0.1:4444/gateway",
        ["sandbox.password"] = "s3cret" })[k] end,
        set = function() end, save = function() return true end, unset = function() end },
    http = { websocketAsync = function(u) opened = u return true end },
    os = setmetatable({
        queueEvent = function(...) queued[#queued + 1] = table.pack(...) end,
        pullEventRaw = function(f) return coroutine.yield(f) end,
        startTimer = function() timers = timers + 1 return timers end,
        epoch = function() return 1733000000000 end, getComputerID = function() return 7 end,
        getComputerLabel = function() end, clock = realOs.clock,
    }, { __index = realOs }),
    print = function() end, _HOST = "ComputerCraft 1.113.0 (test)",
}, { __index = _G })
local abs = ROOT:sub(1, 1) == "/" and ROOT or (io.popen("pwd"):read("*l") .. "/" .. ROOT)
env.shell.getRunningProgram = function() return abs:sub(2) .. "servers/sandbox.lua" end
local co = coroutine.create(assert(loadfile(ROOT .. "servers/sandbox.lua", "t", env)))
local LIMIT = 2048
-- Frames as CC sends them: text or binary, never over the rule's limit.
local handle = { send = function(t, binary)
    if #t > LIMIT then error("Message is too large", 2) end
    if not t:match('^{"id":"[^"]*","type":"received"}$') then sent[#sent + 1] = { t, binary == true } end
end, close = function() end }
local function feed(...) local ok, e = coroutine.resume(co, ...) assert(ok, tostring(e)) end
local function take() return table.remove(sent, 1) end

feed()
local url = opened
feed("websocket_success", url, handle)
local hello = json.decode(take()[1])
eq(hello.binary, true, "a runtime from CC: Tweaked 1.109 on offers binary frames")
feed("trapdesk_serve", "owner1", { "write-file", "read-file" })
feed("websocket_message", url, '{"type":"welcome","protocol":1,"trapos_id":"7:","heartbeat_ms":15000,"max_message":2048,"binary":true}')
eq(json.decode(take()[1]).type, "limit")
eq(json.decode(take()[1]).type, "serve")

-- A write's content: two blob pieces of raw bytes, then the request naming it. The server gets
-- the pieces as they came.
local one, two = "\0\255\n\"x", ("\200"):rep(1000)
feed("websocket_message", url, '{"id":"h-1","last":false,"seq":0,"type":"blob"}\n' .. one, true)
feed("websocket_message", url, '{"id":"h-1","last":true,"seq":1,"type":"blob"}\n' .. two, true)
queued = {}
feed("websocket_message", url, '{"type":"gateway_request","id":"h-1","request":"write-file","payload":{"path":"a","encoding":"binary","bytes":1004}}')
local req
for _, ev in ipairs(queued) do if ev[1] == "trapdesk_request" then req = ev end end
eq(req[4], "write-file")
eq(type(req[7]), "table", "the blob goes with the request")
eq(#req[7], 2) eq(req[7][1], one) eq(req[7][2], two)
feed("trapdesk_respond", req[3], true, '{"ok":true,"bytes":1004}')
local answer = take()
eq(answer[2], false, "the answer is text")
eq(json.decode(answer[1]).payload.bytes, 1004)

-- A read's page as a blob: cut into binary frames within the limit, then the answer.
queued = {}
feed("websocket_message", url, '{"type":"gateway_request","id":"h-2","request":"read-file","payload":{"path":"a","binary":true}}')
for _, ev in ipairs(queued) do if ev[1] == "trapdesk_request" then req = ev end end
eq(req[7], nil, "no blob came for this request")
local page = {}
for i = 0, 4999 do page[#page + 1] = string.char(i % 256) end
page = table.concat(page)
feed("trapdesk_respond", req[3], true, '{"ok":true,"encoding":"binary","bytes":5000}', page)
local got, seq = {}, 0
while sent[1] and sent[1][2] do
    local f = take()[1]
    assert(#f <= LIMIT, "a frame over the limit")
    local nl = f:find("\n", 1, true)
    local head = json.decode(f:sub(1, nl - 1))
    eq(head.type, "blob") eq(head.id, "h-2") eq(head.part, 0) eq(head.seq, seq)
    got[#got + 1] = f:sub(nl + 1)
    seq = seq + 1
    eq(head.last, not (sent[1] and sent[1][2]), "only the last piece says last")
end
eq(table.concat(got), page, "the page's bytes, in order")
assert(seq >= 3, "5000 bytes take several frames of 2048")
eq(json.decode(take()[1]).payload.encoding, "binary", "the answer follows its blob")

-- Live output goes as a binary frame of its raw bytes.
queued = {}
feed("websocket_message", url, '{"type":"gateway_request","id":"h-3","request":"write-file","payload":{}}')
for _, ev in ipairs(queued) do if ev[1] == "trapdesk_request" then req = ev end end
feed("trapdesk_output", req[3], "out", "h\233\0\n")
feed("timer", timers)
local out = take()
eq(out[2], true, "output is a binary frame")
eq(out[1], '{"id":"h-3","stream":"out","type":"output"}\nh\233\0\n')
