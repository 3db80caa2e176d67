-- files_spec: lib.writeFile on an in-memory disk that counts every byte written and read.
-- A put's part file costs only its own bytes per piece (a journalled append would copy the
-- whole part each time); an ordinary append still goes through the journalled temp file.
local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end

local disk = { files = {}, dirs = { [""] = true }, written = 0, read = 0, opened = {}, room = math.huge }

local function norm(p)
    local parts = {}
    for part in p:gmatch("[^/]+") do parts[#parts + 1] = part end
    return table.concat(parts, "/")
end

local function used()
    local n = 0
    for _, f in pairs(disk.files) do n = n + #f end
    return n
end

local memfs = {}
function memfs.combine(a, b) return norm(a .. "/" .. b) end
function memfs.getName(p) return norm(p):match("([^/]*)$") end
function memfs.getDir(p) return norm(p):match("^(.*)/[^/]*$") or "" end
function memfs.isDir(p) return disk.dirs[norm(p)] == true end
function memfs.exists(p) p = norm(p) return disk.files[p] ~= nil or disk.dirs[p] == true end
function memfs.isReadOnly() return false end
function memfs.makeDir(p) disk.dirs[norm(p)] = true end
function memfs.getSize(p)
    local f = disk.files[norm(p)]
    if not f then error("/" .. p .. ": No such file", 0) end
    return #f
end
function memfs.list(p)
    p = norm(p)
    local out = {}
    for name in pairs(disk.files) do
        if memfs.getDir(name) == p then out[#out + 1] = memfs.getName(name) end
    end
    return out
end
function memfs.move(a, b)
    a, b = norm(a), norm(b)
    if disk.files[b] or disk.dirs[b] then error("/" .. b .. ": File exists", 0) end
    if not disk.files[a] then error("/" .. a .. ": No such file", 0) end
    disk.files[b], disk.files[a] = disk.files[a], nil
end
function memfs.delete(p) disk.files[norm(p)] = nil end
function memfs.open(p, mode)
    p = norm(p)
    disk.opened[#disk.opened + 1] = mode .. " " .. p
    if mode == "rb" then
        local data = disk.files[p]
        if not data then return nil, "/" .. p .. ": No such file" end
        local pos = 1
        local function take(s)
            pos = pos + #s
            disk.read = disk.read + #s
            return s
        end
        return {
            read = function(n)
                if pos > #data then return nil end
                return take(data:sub(pos, pos + (n or 1) - 1))
            end,
            readAll = function() return take(data:sub(pos)) end,
            close = function() end,
        }
    elseif mode == "wb" or mode == "ab" then
        if mode == "wb" or not disk.files[p] then disk.files[p] = "" end
        return {
            -- Like CraftOS-PC on a full disk: what does not fit is dropped without an error.
            write = function(s)
                local left = disk.room - used()
                if left < #s then s = s:sub(1, math.max(left, 0)) end
                disk.files[p] = disk.files[p] .. s
                disk.written = disk.written + #s
            end,
            close = function() end,
        }
    end
    return nil, "Unsupported mode '" .. mode .. "'"
end

local env = setmetatable({ fs = memfs }, { __index = _G })
local lib = assert(loadfile(ROOT .. "apis/files.lua", "t", env))()
lib.JOURNAL = "/trapdesk/journal"

local function opened(pattern)
    for _, o in ipairs(disk.opened) do if o:find(pattern) then return o end end
end

-- Which names are part files: exactly what src/client/transfer.rs's part_name makes.
assert(lib.isPartFile(".big.bin.0a1b2c3d.trapdesk-part"))
assert(lib.isPartFile("prog/.main.lua.DEADBEEF.trapdesk-part"))
assert(lib.isPartFile("/prog/..hidden.00000000.trapdesk-part"))
assert(not lib.isPartFile("big.bin.0a1b2c3d.trapdesk-part"), "not hidden")
assert(not lib.isPartFile(".big.bin.trapdesk-part"), "no tag")
assert(not lib.isPartFile(".big.bin.1.trapdesk-part"), "short tag")
assert(not lib.isPartFile(".big.bin.0a1b2c3g.trapdesk-part"), "not hex")
assert(not lib.isPartFile(".big.bin.0a1b2c3d.trapdesk-part/x"), "inside a folder of that name")
assert(not lib.isPartFile(".0a1b2c3d.trapdesk-part"), "no target name")

-- A put of N pieces: the part is created, then appended to in place. Every byte is written
-- once and none is read back (a journalled append would write 1 + 2 + ... + N pieces).
local N, PIECE = 8, 65536
local part = "prog/.big.bin.0a1b2c3d.trapdesk-part"
local want = {}
for i = 1, N do
    local piece = string.rep(string.char(64 + i), PIECE - 1) .. "\n"
    want[i] = piece
    local r = lib.writeFile(part, piece, i > 1)
    eq(r.ok, true, "piece " .. i .. ": " .. tostring(r.error))
    eq(r.bytes, PIECE, "piece " .. i .. " bytes")
end
eq(disk.files[part], table.concat(want), "the part holds the pieces in order")
eq(disk.written, N * PIECE, "bytes written for " .. N .. " pieces")
eq(disk.read, 0, "bytes read back")
assert(not opened("trapdesk%-new"), "a part file is not written beside itself")
assert(not opened("journal"), "a part file is not journalled")
eq(lib.moveInto(part, "prog/big.bin").ok, true, "the finished part moves over the target")
eq(disk.files["prog/big.bin"], table.concat(want))

-- Pieces given as a list (as base64.decodeParts makes them) go in order, pausing between.
local pauses = 0
local r = lib.writeFile(".list.txt.00000001.trapdesk-part", { "ab", "", "cd" }, false,
    function() pauses = pauses + 1 end)
eq(r.ok, true) eq(r.bytes, 4) eq(pauses, 3, "pauses")
r = lib.writeFile(".list.txt.00000001.trapdesk-part", { "ef" }, true)
eq(r.ok, true) eq(disk.files[".list.txt.00000001.trapdesk-part"], "abcdef")

-- An ordinary append keeps docs/protocol.md's contract ("Writing files" in docs/lua-client.md): the old content and the new piece go to a
-- temp file beside the target, which then replaces it, under a journal entry.
disk.opened, disk.written, disk.read = {}, 0, 0
eq(lib.writeFile("prog/log.txt", "hello").ok, true)
eq(lib.writeFile("prog/log.txt", " world", true).ok, true)
eq(disk.files["prog/log.txt"], "hello world")
assert(opened("^wb prog/%.log%.txt%.trapdesk%-new$"), "an append writes a temp file beside the target")
assert(opened("^wb trapdesk/journal/"), "an append is journalled")
eq(disk.read, 5, "the old content is copied into the temp file")
eq(#memfs.list("trapdesk/journal"), 0, "journal entries are removed once done")

-- A full disk: the piece that does not fit fails, and the part is deleted (a put never moves
-- a short part; the next append, if any, would start a file too small for the move).
local tight = ".tight.bin.0000abcd.trapdesk-part"
eq(lib.writeFile(tight, string.rep("x", 100)).ok, true)
disk.room = used() + 60
r = lib.writeFile(tight, string.rep("y", 100), true)
eq(r.ok, false, "a piece that did not fit")
assert(r.error:find("Out of space: wrote 160 of 200 bytes", 1, true), r.error)
eq(disk.files[tight], nil, "the torn part is deleted")
eq(disk.files["prog/big.bin"], table.concat(want), "other files are untouched")
disk.room = math.huge

-- Errors before writing are the same as for any file.
disk.dirs["prog/.d.0a1b2c3d.trapdesk-part"] = true
r = lib.writeFile("prog/.d.0a1b2c3d.trapdesk-part", "x")
eq(r.ok, false) assert(r.error:find("Is a directory", 1, true), r.error)

-- The disk quota (CC: Tweaked counts each file and folder as 500 bytes at least): a write that
-- cannot fit is refused before anything is touched, saying what it needs and what is free.
local free = 10000
memfs.getFreeSpace = function() return free end
disk.opened = {}
r = lib.writeFile("q/new.txt", string.rep("a", 9500))
eq(r.ok, false) eq(r.code, "no_space")
eq(r.needed, 10500, "500 for the folder, 9500, 500 for the journal entry") eq(r.free, 10000)
assert(r.error:find("needs 10500 bytes; 10000 are free", 1, true), r.error)
eq(#disk.opened, 0, "nothing opened") eq(memfs.exists("q"), false, "no folder made")
r = lib.writeFile("q/small.txt", "x")
eq(r.ok, true, "a small file fits: " .. tostring(r.error))
-- A replace that fits only over the old file: refused unless asked to write in place.
disk.files["q2.txt"] = string.rep("o", 6000)
free = 4000
r = lib.writeFile("q2.txt", string.rep("n", 6000))
eq(r.ok, false) eq(r.code, "no_space_to_replace")
eq(r.needed, 6500) eq(r.free, 4000) eq(r.needed_in_place, 0)
assert(r.error:find("inPlace", 1, true), r.error)
eq(disk.files["q2.txt"], string.rep("o", 6000), "the old file is untouched")
-- A smaller replace that fits only in place needs nothing more in place, never less.
free = 3000
r = lib.writeFile("q2.txt", string.rep("s", 3000))
eq(r.ok, false) eq(r.code, "no_space_to_replace") eq(r.needed, 3500) eq(r.needed_in_place, 0)
free = 4000
disk.opened = {}
r = lib.writeFile("q2.txt", string.rep("n", 6000), false, nil, { inPlace = true })
eq(r.ok, true, tostring(r.error)) eq(r.bytes, 6000)
eq(disk.files["q2.txt"], string.rep("n", 6000))
assert(not opened("trapdesk%-new"), "in place: no copy beside the file")
assert(not opened("journal"), "in place: no journal entry")
-- In place still has to fit: growing by more than is free is refused too.
r = lib.writeFile("q2.txt", string.rep("m", 11000), false, nil, { inPlace = true })
eq(r.ok, false) eq(r.code, "no_space") eq(r.needed, 5000)
eq(disk.files["q2.txt"], string.rep("n", 6000), "still untouched")
memfs.getFreeSpace = nil

-- A write abandoned at a pause (its request cancelled, the link dropped) is undone at once:
-- the new copy and the journal entry go, the old file stays.
disk.files["ab.txt"] = "old"
local track = {}
local co = coroutine.create(function()
    return lib.writeFile("ab.txt", { "new ", "content" }, false, function() coroutine.yield() end, { track = track })
end)
assert(coroutine.resume(co))
eq(coroutine.status(co), "suspended", "paused mid-write")
assert(disk.files[".ab.txt.trapdesk-new"] ~= nil, "the new copy is being written")
lib.abandonWrite(track)
eq(disk.files[".ab.txt.trapdesk-new"], nil, "the new copy is gone")
eq(#memfs.list("trapdesk/journal"), 0, "the journal entry is gone")
eq(disk.files["ab.txt"], "old", "the old file is untouched")
lib.abandonWrite(track) -- twice is harmless

print("files_spec: ok")
