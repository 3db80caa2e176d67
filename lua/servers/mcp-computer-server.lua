--- The mcp-computer-server: serves exec-lua, run-file, write-file, read-file,
-- list-files, move-file, delete-file, make-dir and file-info through the daemon
-- (see apis/libsandbox.lua).
--
-- Each request runs in its own coroutine under libsandbox's scheduler, so
-- two chunks that each `sleep(1)` finish together after about a second, and
-- live output streams while a chunk runs. A chunk that errors is answered
-- with a Result whose `ok` is false; the server carries on.
--
-- "Too long without yielding": CC: Tweaked raises it as an ordinary error
-- inside the running chunk after about 7 s without a yield; executeLua's
-- xpcall catches it like any error, so the chunk is answered and the server
-- keeps going. If the code still does not yield (say it catches that error in
-- a loop), CC shuts the whole computer down 1.5 s later; with the startup
-- file installed it relinks after the reboot. Cancel cannot stop such a
-- chunk: it takes effect at the chunk's next yield.
--
-- Usage: mcp-computer-server.lua (normally started by startup.lua).

-- The client's root directory: the rule is apis/root.lua's, found beside servers/.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/servers/"
local root = dofile(here .. "../apis/root.lua")(shell)
local sandbox = dofile(root .. "apis/libsandbox.lua")
local captures = dofile(root .. "apis/capture.lua")
local run = dofile(root .. "apis/run.lua")
local files = dofile(root .. "apis/files.lua")
local base64 = dofile(root .. "apis/base64.lua")
-- Interrupted writes are journalled here; startup.lua recovers them at boot.
files.JOURNAL = root .. "journal"

local pace = dofile(root .. "apis/pace.lua")

-- Large payloads (base64 both ways, the JSON of requests and answers) run in slices: every
-- ~25 ms of work the request lets the computer pull events (apis/pace.lua), so it never nears
-- CC's "Too long without yielding" watchdog and the player's programs keep running. The pause
-- yields to libsandbox's scheduler for an event of its own, so no event is taken from anyone.
local function pacer() return pace.new({ name = "mcp-computer-server" }) end

local function badRequest(message) return false, { code = "bad_request", message = message } end

-- Chunks see this program's environment (shell, require, ...) behind
-- their own print/write/printError.
local chunkEnv = _ENV

local handlers = {}

-- The chunk's output: its own print/write/printError, and everything drawn on its terminal
-- (programs it runs with shell.run, os.run or dofile print there). The terminal is this
-- request's alone: libsandbox's scheduler makes it current only while the chunk runs, as
-- multishell does for each tab.
local function capture(req)
    req.capture = captures.newCapture(req.output)
    if term and term.redirect and term.current then
        req.term = captures.newTerm(req.capture, term.current())
        term.redirect(req.term)
    end
end

-- On a binary link (the host asks with `binary: true`) returned strings of 1 KiB or more go
-- to the host as raw bytes after the answer's JSON is made (docs/protocol.md, "Binary
-- frames"): the parts kept here, numbered from 0, travel beside the answer.
local function blobsFor(p)
    if p.binary ~= true then return nil end
    local parts = {}
    return parts, function(s)
        parts[#parts + 1] = s
        return #parts - 1
    end
end

handlers["exec-lua"] = function(req)
    local p = req.payload
    if type(p) ~= "table" or type(p.code) ~= "string" then return badRequest("exec-lua needs a string code") end
    if p.name ~= nil and type(p.name) ~= "string" then return badRequest("name must be a string") end
    capture(req)
    local parts, blob = blobsFor(p)
    local result = run.executeLua(p.code, p.name, { capture = req.capture, env = chunkEnv,
        pause = pacer(), chunks = sandbox.json.chunks, blob = blob })
    return true, result, parts and parts[1] and parts or nil
end

handlers["run-file"] = function(req)
    local p = req.payload
    if type(p) ~= "table" or type(p.path) ~= "string" then return badRequest("run-file needs a string path") end
    local args = {}
    if type(p.args) == "table" then
        for i, a in ipairs(p.args) do
            if type(a) ~= "string" and type(a) ~= "number" then return badRequest("args must be strings") end
            args[i] = tostring(a)
        end
    elseif p.args ~= nil and p.args ~= sandbox.json.null then
        return badRequest("args must be an array of strings")
    end
    capture(req)
    local parts, blob = blobsFor(p)
    local result = run.runFile(p.path, args, { capture = req.capture, env = chunkEnv,
        pause = pacer(), chunks = sandbox.json.chunks, blob = blob })
    return true, result, parts and parts[1] and parts or nil
end

handlers["write-file"] = function(req)
    local p = req.payload
    -- content comes as a json.chunks list (see `chunks` below): the pieces of the request's
    -- text, never joined into one string.
    local chunked = type(p) == "table" and type(p.content) == "table" and getmetatable(p.content) == sandbox.json.chunks_mt
    local binary = type(p) == "table" and p.encoding == "binary"
    if type(p) ~= "table" or type(p.path) ~= "string" or not (type(p.content) == "string" or chunked or binary) then
        return badRequest("write-file needs a string path and content")
    end
    local inPlace = p.in_place
    if inPlace == sandbox.json.null then inPlace = nil end
    if inPlace ~= nil and type(inPlace) ~= "boolean" then return badRequest("in_place must be a boolean") end
    local bytes = p.content
    local encoding = p.encoding
    local pause = pacer()
    if encoding == "binary" then
        -- The content came before the request as raw bytes in binary frames (docs/protocol.md,
        -- "Binary frames"): its pieces are written as they are, with no decoding at all.
        bytes = req.blob or {}
        local size = 0
        for i = 1, #bytes do size = size + #bytes[i] end
        if type(p.bytes) == "number" and p.bytes ~= size then
            return true, { ok = false, bytes = 0, error = ("content incomplete: %d of %d bytes came (a piece was dropped on the computer); nothing was written"):format(size, p.bytes) }
        end
    elseif encoding == nil or encoding == sandbox.json.null or encoding == "base64" then
        local err
        -- Decoded in pieces and written piece by piece: the bytes are never joined in memory.
        bytes, err = base64.decodeParts(p.content, pause)
        if not bytes then return true, { ok = false, bytes = 0, error = "content is not base64: " .. err } end
        p.content = nil -- the text is no longer needed; let it go before writing
    elseif encoding ~= "text" then
        return badRequest("encoding must be base64, text or binary")
    end
    -- What the write has open, so that a cancel (or a dropped link) that abandons it at a pause
    -- can undo it at once (onCancel below) rather than leave the new copy until the next boot.
    req.write = {}
    return true, files.writeFile(p.path, bytes, p.append == true, pause, { inPlace = inPlace == true, track = req.write })
end

handlers["read-file"] = function(req)
    local p = req.payload
    if type(p) ~= "table" or type(p.path) ~= "string" then return badRequest("read-file needs a string path") end
    local offset, length = p.offset, p.length
    if offset == sandbox.json.null then offset = nil end
    if length == sandbox.json.null then length = nil end
    if offset ~= nil and (type(offset) ~= "number" or offset < 0 or offset % 1 ~= 0) then
        return badRequest("offset must be a whole number of bytes")
    end
    if length ~= nil and (type(length) ~= "number" or length < 0 or length % 1 ~= 0) then
        return badRequest("length must be a whole number of bytes")
    end
    local r = files.readFile(p.path, offset, length)
    -- A failed read (a folder, no such file) answers its error alone, no empty content.
    if not r.ok then return true, { ok = false, error = r.error } end
    if p.binary == true then
        -- Asked for as raw bytes (docs/protocol.md, "Binary frames"): the page goes to the daemon
        -- as the string read, and on in binary frames; nothing here touches its bytes.
        local content = r.content or ""
        r.content, r.encoding = nil, "binary"
        return true, r, content
    end
    -- The base64 text stays in pieces; the JSON encoder writes them as one string.
    r.content = sandbox.json.chunks(base64.encodeParts(r.content or "", pacer()))
    r.encoding = "base64"
    return true, r
end

handlers["list-files"] = function(req)
    local p = req.payload
    if type(p) ~= "table" or type(p.path) ~= "string" then return badRequest("list-files needs a string path") end
    return true, files.listFiles(p.path)
end

handlers["move-file"] = function(req)
    local p = req.payload
    if type(p) ~= "table" or type(p.from) ~= "string" or type(p.to) ~= "string" then
        return badRequest("move-file needs string from and to")
    end
    local overwrite = p.overwrite
    if overwrite == sandbox.json.null then overwrite = nil end
    if overwrite ~= nil and type(overwrite) ~= "boolean" then return badRequest("overwrite must be a boolean") end
    return true, files.moveFile(p.from, p.to, overwrite)
end

handlers["delete-file"] = function(req)
    local p = req.payload
    if type(p) ~= "table" or type(p.path) ~= "string" then return badRequest("delete-file needs a string path") end
    return true, files.deleteFile(p.path)
end

handlers["make-dir"] = function(req)
    local p = req.payload
    if type(p) ~= "table" or type(p.path) ~= "string" then return badRequest("make-dir needs a string path") end
    return true, files.makeDir(p.path)
end

handlers["file-info"] = function(req)
    local p = req.payload
    if type(p) ~= "table" or type(p.path) ~= "string" then return badRequest("file-info needs a string path") end
    return true, files.fileInfo(p.path, pacer())
end

local types = {}
for name in pairs(handlers) do types[#types + 1] = name end
table.sort(types)

-- The payload fields that name a path on this computer, by request type.
local pathFields = {
    ["run-file"] = { "path" }, ["write-file"] = { "path" }, ["read-file"] = { "path" },
    ["list-files"] = { "path" }, ["delete-file"] = { "path" }, ["make-dir"] = { "path" },
    ["file-info"] = { "path" }, ["move-file"] = { "from", "to" },
}

--- Whether a path climbs above the root: a ".." with no folder left to cancel, counted as
-- CC's FileSystem.sanitizePath does ("." and "..." and longer runs of dots stay in place).
-- Done here rather than with fs.combine: CraftOS-PC's combine drops such a "..", CC: Tweaked's
-- keeps it, and the answer must not depend on the runtime.
local function climbsOut(path)
    local depth = 0
    for part in path:gsub("\\", "/"):gmatch("[^/]+") do
        part = part:match("^%s*(.-)%s*$")
        if part == ".." then
            if depth == 0 then return true end
            depth = depth - 1
        elseif part ~= "" and not part:match("^%.+$") then
            depth = depth + 1
        end
    end
    return false
end

--- A path that leaves the computer's root ("/../x", "a/../../x") as the dispatch error
-- `bad_path`, before any handler touches it. CC: Tweaked keeps such a path's leading ".." when
-- it cleans it (FileSystem.sanitizePath) and then finds no mount for it: "Invalid Path"
-- (FileSystem.getMount), which some calls raise as errors and others answer as a missing
-- file; either read as a fault of the host (`internal`) or said nothing of the cause.
local function badPath(req)
    local fields, p = pathFields[req.type], req.payload
    if not fields or type(p) ~= "table" then return nil end
    for _, k in ipairs(fields) do
        local path = p[k]
        if type(path) == "string" then
            if climbsOut(path) then
                return { code = "bad_path", message = ("%s: %s is outside the computer's root"):format(k, path) }
            end
        end
    end
end

-- A chunk's own os.reboot()/os.shutdown() (apis/run.lua) ends the chunk with a Result that
-- says so and queues `trapdesk_power`; the computer reboots or shuts down half a second later,
-- once the daemon has sent that answer (as the screen server waits for its reboot key).
local function powerAfterAnswer()
    while true do
        local _, what = os.pullEvent("trapdesk_power")
        sleep(0.5)
        if what == "shutdown" then os.shutdown() else os.reboot() end
    end
end

local function serve() sandbox.serve(types, function(req)
    local h = handlers[req.type]
    if not h then return false, { code = "unknown_type", message = "not served here: " .. tostring(req.type) } end
    local bad = badPath(req)
    if bad then return false, bad end
    return h(req)
end, {
    name = "mcp-computer-server",
    -- A write's content (1.3 MB of base64 for the 1,000,000 bytes of a default disk) is decoded
    -- from its pieces.
    chunks = { content = true },
    onCancel = function(req)
        if req.write then files.abandonWrite(req.write) end
        if req.capture then
            local f = captures.outputFields(req.capture, {})
            return { output = f.output, output_truncated = f.output_truncated,
                output_bytes = f.output_bytes, output_lines = f.output_lines }
        end
    end,
}) end

parallel.waitForAny(serve, powerAfterAnswer)
