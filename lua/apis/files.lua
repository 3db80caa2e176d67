--- Files for the standard requests: atomic writes within the computer's disk quota, reads in
-- pages, moves, deletes, folders, checksums and listings (docs/protocol.md, "Payloads").
--
-- Every function returns a plain result table (`{ok, …, error?}`) rather than raising: the
-- server sends it as the answer.
--
-- @module files

local lib = {}

local array_mt = { __jsontype = "array" }
local function array(t) return setmetatable(t or {}, array_mt) end

-- Argument checks: apis/expect.lua, beside this file.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"
local expect = dofile(here .. "expect.lua").expect

-- A failed write's answer. "Out of space" raised part-way (CC's h.write past the quota, or a
-- short file found by writeChecked) gets the same code as a refusal made beforehand.
local function fail(err)
    local e = tostring(err)
    return { ok = false, error = e, bytes = 0, code = e:find("Out of space", 1, true) and "no_space" or nil }
end

-- A write replaces a file in steps, any of which a crash (the server stopping, the computer
-- unloaded, kill -9 of an emulator) can interrupt:
--   1. a journal entry naming the file goes into `lib.JOURNAL` (a file whose last byte is "\n"
--      once complete);
--   2. the new content goes to `.NAME.trapdesk-new` beside the file;
--   3. the old file is renamed to `.NAME.trapdesk-old` (CC's fs.move refuses to replace a file,
--      so there is no single atomic replace);
--   4. the new one is renamed to NAME;
--   5. the old one and the journal entry are deleted.
-- `recoverWrite` finishes or undoes an interrupted write so that NAME holds the old content
-- (interrupted in 1-2) or the new one (3-5), never a mix and never nothing: between 3 and 4
-- NAME is missing, and only the journal says so. `recoverWrites` runs at boot (startup.lua)
-- and every write runs `recoverWrite` on its own path first.

--- Where writes in progress are journalled (one file per write).
lib.JOURNAL = "/trapdesk/journal"

local function sidecars(path)
    local dir, name = fs.getDir(path), fs.getName(path)
    return fs.combine(dir, "." .. name .. ".trapdesk-new"), fs.combine(dir, "." .. name .. ".trapdesk-old")
end

--- Finish or undo an interrupted write of `path` (see above); true when `path` is consistent.
-- @tparam string path The file.
-- @treturn boolean Whether no interrupted write is left behind.
-- @treturn[opt] string Why not.
function lib.recoverWrite(path)
    expect(1, path, "string")
    path = fs.combine(path, "")
    local new, old = sidecars(path)
    local ok, err = pcall(function()
        if fs.exists(old) and not fs.isDir(old) then
            if fs.exists(path) then
                -- Interrupted after step 4: the new file is in place.
                fs.delete(old)
            elseif fs.exists(new) then
                -- Between steps 3 and 4: the new content is complete (step 2 ended before 3).
                fs.move(new, path)
                fs.delete(old)
            else
                fs.move(old, path)
            end
        end
        -- Interrupted in step 2 (or before 3): the old file was never touched.
        if fs.exists(new) and not fs.isDir(new) then fs.delete(new) end
    end)
    if not ok then return false, tostring(err) end
    return true
end

--- Recover every write the journal names (at boot, before anything reads the files).
-- @treturn number How many interrupted writes were found.
function lib.recoverWrites()
    local dir = lib.JOURNAL
    if not fs.isDir(dir) then return 0 end
    local n = 0
    for _, entry in ipairs(fs.list(dir)) do
        local full = fs.combine(dir, entry)
        local h = fs.open(full, "rb")
        local text = h and h.readAll() or ""
        if h then h.close() end
        -- A torn entry (no final newline) was cut in step 1: nothing else was touched.
        local path = text:match("^(.-)\n$")
        if path and path ~= "" then
            n = n + 1
            lib.recoverWrite(path)
        end
        pcall(fs.delete, full)
    end
    return n
end

local function journal(path)
    local dir = lib.JOURNAL
    if not fs.isDir(dir) then pcall(fs.makeDir, dir) end
    local entry
    repeat
        entry = fs.combine(dir, tostring(math.random(1, 0x7fffffff)))
    until not fs.exists(entry)
    local h, err = fs.open(entry, "wb")
    if not h then return nil, err or ("Cannot write /" .. entry) end
    local ok, werr = pcall(h.write, path .. "\n")
    pcall(h.close)
    if not ok then
        pcall(fs.delete, entry)
        return nil, werr
    end
    return entry
end

-- Steps 3-5 (the complete new content is in `new`). A failure that is not a crash puts the
-- old file back.
local function swap(path, new, old)
    local ok, err = pcall(function()
        if fs.exists(path) then fs.move(path, old) end
        fs.move(new, path)
        if fs.exists(old) then fs.delete(old) end
    end)
    if not ok then
        pcall(function()
            if fs.exists(old) and not fs.exists(path) then fs.move(old, path) end
            if fs.exists(new) then fs.delete(new) end
        end)
    end
    return ok, err
end

-- Bytes per write call when a write's content comes in many small pieces.
local WRITE_PIECE = 65536

-- Writes `pieces` to the handle in order. Small pieces (base64 decodes 1.5 KB at a time) are
-- gathered into writes of up to WRITE_PIECE: one runtime call per piece would be ~700 writes
-- for 1 MB (and as many kill points in tests/integration/craftos/torn_files.rs, each a CraftOS-PC reboot).
local function writePieces(h, pieces, pause)
    local buf, n, size = {}, 0, 0
    local function flush()
        if n > 0 then h.write(n == 1 and buf[1] or table.concat(buf, "", 1, n)) end
        buf, n, size = {}, 0, 0
    end
    for i = 1, #pieces do
        local p = pieces[i]
        if #p >= WRITE_PIECE then
            flush()
            h.write(p)
        elseif p ~= "" then
            n, size = n + 1, size + #p
            buf[n] = p
            if size >= WRITE_PIECE then flush() end
        end
        if pause then pause() end
    end
    flush()
end

-- A put of several pieces (src/client/transfer.rs) appends them to a hidden part file beside
-- its target, `.NAME.XXXXXXXX.trapdesk-part`, and then moves the whole part over the target
-- with @{moveInto}. The part is never read until complete and only the journalled move puts it
-- in place, so an interrupted piece can tear the part (which the put then deletes) but never
-- the target: its pieces are written in place, each costing its own bytes. Journalled like any
-- other file, every append would copy the whole part so far (a put of N pieces writing
-- N(N+1)/2 pieces of bytes: 593 KB for a 200 KB file, 8.9 MB for 1 MiB).
local PART_NAME = "^%..+%.%x%x%x%x%x%x%x%x%.trapdesk%-part$"

--- Whether `path` names a put's part file (written in place, not journalled).
-- @tparam string path The file.
-- @treturn boolean
function lib.isPartFile(path)
    expect(1, path, "string")
    return fs.getName(path):match(PART_NAME) ~= nil
end

-- Runs `write(h)`, closes `h`, and checks that `file` now holds `want` bytes: CraftOS-PC drops
-- what does not fit on a full disk without an error (found by tests/integration/craftos/resilience.rs), so
-- only the size on disk tells. `name` is the file the error names. Returns ok, error.
local function writeChecked(h, file, want, name, write)
    local ok, werr = pcall(write, h)
    local cok, cerr = pcall(h.close)
    if ok and not cok then ok, werr = false, cerr end
    if ok then
        local sok, got = pcall(fs.getSize, file)
        if not sok or got ~= want then
            ok, werr = false, ("Out of space: wrote %s of %d bytes of /%s"):format(
                sok and tostring(got) or "none", want, name)
        end
    end
    return ok, werr
end

-- The disk quota ------------------------------------------------------------------

-- CC: Tweaked counts every file and every folder as at least this many bytes
-- (MountConstants.MINIMUM_FILE_SIZE; WritableFileMount.java adds it per folder made and per
-- file opened, and `max(size, 500)` per file), and a write past the quota raises "Out of
-- space" from `h.write`, part-way through. Hence the checks below, made before anything is
-- touched.
lib.MIN_FILE_SIZE = 500

local function cost(size) return size > lib.MIN_FILE_SIZE and size or lib.MIN_FILE_SIZE end

--- Free bytes on the drive that holds `path` (its nearest existing folder is asked: CraftOS-PC
-- answers only for paths that exist), or nil where the runtime does not say.
-- @tparam string path A file or folder, existing or not.
-- @treturn number|nil
function lib.freeSpace(path)
    expect(1, path, "string")
    if not fs.getFreeSpace then return nil end
    local dir = fs.combine(path, "")
    while dir ~= "" and not fs.exists(dir) do dir = fs.getDir(dir) end
    local ok, n = pcall(fs.getFreeSpace, dir == "" and "/" or dir)
    -- CC answers "unlimited" for a drive without a quota.
    if ok and type(n) == "number" then return n end
    return nil
end

-- Folders that a write of `path` creates: 500 bytes each.
local function missingDirs(path)
    local n, dir = 0, fs.getDir(path)
    while dir ~= "" and not fs.exists(dir) do
        n = n + 1
        dir = fs.getDir(dir)
    end
    return n
end

--- What a write of `size` bytes to `path` costs the disk, in bytes beyond what is used now:
-- the journalled way (the new copy beside the old file, a journal entry, and the journal's
-- folder if missing) and in place (the file's own growth). Missing parent folders count in
-- both.
-- @tparam string path The file.
-- @tparam number size Bytes written.
-- @tparam[opt] boolean append Added to the end of the existing content.
-- @treturn number Bytes needed for the journalled write.
-- @treturn number Bytes needed for a write in place.
function lib.spaceNeeded(path, size, append)
    expect(1, path, "string")
    expect(2, size, "number")
    path = fs.combine(path, "")
    local MIN = lib.MIN_FILE_SIZE
    local dirs = missingDirs(path) * MIN
    local exists = fs.exists(path) and not fs.isDir(path)
    local old = exists and fs.getSize(path) or 0
    local total = append and old + size or size
    local journalDir = fs.isDir(lib.JOURNAL) and 0 or MIN
    local journalled = dirs + cost(total) + MIN + journalDir
    -- Opening a file for writing truncates it first (its content is freed); appending keeps it.
    local inPlace = math.max(0, dirs + cost(total) - (exists and cost(old) or 0))
    return journalled, inPlace
end

-- The refusal of a write that does not fit: what it needs and what is free, and, for a file
-- that exists, whether writing over it would fit.
local function noSpace(path, need, free, inPlaceNeed, inPlace)
    local replace = fs.exists(path)
    if replace and not inPlace and inPlaceNeed <= free then
        return { ok = false, bytes = 0, code = "no_space_to_replace", needed = need, free = free,
            needed_in_place = inPlaceNeed,
            error = ("Out of space: replacing /%s keeps the old file until the new one is complete, "
                .. "which needs %d bytes; %d are free. Writing in place (inPlace) needs %d but is not "
                .. "atomic: an interrupted write leaves the file torn."):format(path, need, free, inPlaceNeed) }
    end
    return { ok = false, bytes = 0, code = "no_space", needed = need, free = free,
        error = ("Out of space: writing /%s needs %d bytes; %d are free"):format(path, need, free) }
end

-- The in-place write: create, truncate or append to the file itself, and check its size. A
-- put's part files are always written so; other files only when the caller asks.
local function writeInPlace(path, pieces, size, append, pause)
    local oldSize = 0
    if append and fs.exists(path) then oldSize = fs.getSize(path) end
    local h, err = fs.open(path, oldSize > 0 and "ab" or "wb")
    if not h then return fail(err or ("Cannot write /" .. path)) end
    local ok, werr = writeChecked(h, path, oldSize + size, path, function(f)
        writePieces(f, pieces, pause)
    end)
    if not ok then
        -- A part that missed bytes must never be appended to again nor moved: delete it, so
        -- that a later append starts a file of the wrong size that the move's caller can tell.
        if lib.isPartFile(path) then pcall(fs.delete, path) end
        return fail(werr)
    end
    return { ok = true, bytes = size }
end

--- Write bytes to a file atomically: after a crash at any point the file holds its old
-- content or the new one (see the steps above). A put's part file (@{isPartFile}) is the
-- exception: it is written in place, see above; so is any file with `opts.inPlace`.
--
-- Before anything is touched the computer's free space is checked (@{spaceNeeded}): a write
-- that cannot fit is refused with `code = "no_space"`; a replace that fits only in place
-- with `code = "no_space_to_replace"` unless `opts.inPlace`. Both say `needed` and `free`.
-- @tparam string path The file.
-- @tparam string|table bytes The content: a string, or a list of strings written one after
-- another (a large payload decoded in pieces is never joined in memory).
-- @tparam[opt] boolean append Add to the end of the existing content (copied into the temp
-- file in pieces of 64 KiB).
-- @tparam[opt] function pause Called between pieces (see apis/pace.lua).
-- @tparam[opt] table opts `inPlace`: write over the file itself, giving up atomicity;
-- `track`: a table that holds, while the new copy is being written, its open handle, its
-- path and the journal entry (`handle`, `new`, `entry`), for @{abandonWrite}.
-- @treturn table `{ok, bytes, error?, code?, needed?, free?}`.
function lib.writeFile(path, bytes, append, pause, opts)
    expect(1, path, "string")
    expect(2, bytes, "string", "table")
    expect(3, append, "boolean", "nil")
    expect(4, pause, "function", "nil")
    expect(5, opts, "table", "nil")
    local inPlace = opts ~= nil and opts.inPlace == true
    local track = opts and opts.track or {}
    local pieces = type(bytes) == "table" and bytes or { bytes }
    local size = 0
    for i = 1, #pieces do
        if type(pieces[i]) ~= "string" then error("bad argument #2 (piece " .. i .. " is not a string)", 2) end
        size = size + #pieces[i]
    end
    path = fs.combine(path, "")
    if path == "" or fs.isDir(path) then return fail("Is a directory: /" .. path) end
    if fs.isReadOnly(path) then return fail("Access denied: /" .. path) end
    local rok, rerr = lib.recoverWrite(path)
    if not rok then return fail(rerr) end
    local part = lib.isPartFile(path)
    local free = lib.freeSpace(path)
    if free then
        local journalled, inPlaceNeed = lib.spaceNeeded(path, size, append)
        local need = (part or inPlace) and inPlaceNeed or journalled
        if need > free then return noSpace(path, need, free, inPlaceNeed, inPlace or part) end
    end
    local dir = fs.getDir(path)
    if dir ~= "" and not fs.isDir(dir) then
        if fs.exists(dir) then return fail("Not a directory: /" .. dir) end
        local ok, err = pcall(fs.makeDir, dir)
        if not ok then return fail(err) end
    end
    if part or inPlace then return writeInPlace(path, pieces, size, append, pause) end
    -- An append copies the old content into the new file in pieces (never read whole).
    local oldSize = 0
    if append and fs.exists(path) then oldSize = fs.getSize(path) end
    local new, old = sidecars(path)
    -- Without its journal entry a crash mid-swap could not be undone: do not start.
    local entry, jerr = journal(path)
    if not entry then return fail(jerr) end
    local function forget() pcall(fs.delete, entry) end
    local h, err = fs.open(new, "wb")
    if not h then forget() return fail(err or ("Cannot write /" .. new)) end
    track.handle, track.new, track.entry = h, new, entry
    -- Swapping in a short file would tear the old one: the size is checked first.
    local ok, werr = writeChecked(h, new, oldSize + size, path, function(f)
        if oldSize > 0 then
            local r = fs.open(path, "rb")
            if not r then error("Cannot read /" .. path, 0) end
            while true do
                local piece = r.read(65536)
                if not piece or piece == "" then break end
                f.write(piece)
                if pause then pause() end
            end
            r.close()
        end
        writePieces(f, pieces, pause)
    end)
    track.handle, track.new, track.entry = nil, nil, nil
    if not ok then pcall(fs.delete, new) forget() return fail(werr) end
    ok, werr = swap(path, new, old)
    forget()
    if not ok then return fail(werr) end
    return { ok = true, bytes = size }
end

--- Undo a journalled write that will never be resumed (its request was cancelled, or the link
-- dropped, while it paused): close the new copy, delete it and the journal entry, so the old
-- file stays as it was with nothing beside it. Only the new copy's writing pauses (the swap
-- never yields), so a write abandoned at a pause never got to step 3.
-- @tparam table track The `opts.track` given to @{writeFile}.
function lib.abandonWrite(track)
    expect(1, track, "table")
    if not track.new then return end
    if track.handle then pcall(track.handle.close) end
    pcall(fs.delete, track.new)
    if track.entry then pcall(fs.delete, track.entry) end
    track.handle, track.new, track.entry = nil, nil, nil
end

--- Move a complete file (the pieces of a put, say) over `path`, with the same guarantee as
-- @{writeFile}: after a crash at any point `path` holds its old content or `from`'s.
-- @tparam string from The complete file.
-- @tparam string path The target.
-- @treturn table `{ok, error?}`.
function lib.moveInto(from, path)
    expect(1, from, "string")
    expect(2, path, "string")
    from, path = fs.combine(from, ""), fs.combine(path, "")
    if path == "" or fs.isDir(path) then return fail("Is a directory: /" .. path) end
    if not fs.exists(from) or fs.isDir(from) then return fail("No such file: /" .. from) end
    local rok, rerr = lib.recoverWrite(path)
    if not rok then return fail(rerr) end
    local new, old = sidecars(path)
    local entry, jerr = journal(path)
    if not entry then return fail(jerr) end
    local ok, err = pcall(fs.move, from, new)
    if ok then ok, err = swap(path, new, old) end
    pcall(fs.delete, entry)
    if not ok then return fail(err) end
    return { ok = true }
end

--- Read a file, or one page of it, as bytes.
-- @tparam string path The file.
-- @tparam[opt] number offset First byte (0-based) of the page.
-- @tparam[opt] number length Most bytes in the page.
-- @treturn table `{ok, content, bytes, offset, total, error?}` (content is raw bytes; total is
-- the file's size).
function lib.readFile(path, offset, length)
    expect(1, path, "string")
    expect(2, offset, "number", "nil")
    expect(3, length, "number", "nil")
    if not fs.exists(path) then return { ok = false, error = "No such file: " .. path, content = "", bytes = 0 } end
    if fs.isDir(path) then return { ok = false, error = "Is a directory: " .. path, content = "", bytes = 0 } end
    local h, err = fs.open(path, "rb")
    if not h then return { ok = false, error = err or ("Cannot open " .. path), content = "", bytes = 0 } end
    if offset == nil and length == nil then
        local content = h.readAll() or ""
        h.close()
        return { ok = true, content = content, bytes = #content, offset = 0, total = #content }
    end
    -- A page costs its own size: seek to it and read only it.
    local total = fs.getSize(path)
    offset = math.min(offset or 0, total)
    length = math.min(length or (total - offset), total - offset)
    local content = ""
    if length > 0 then
        if offset > 0 then
            if h.seek then
                h.seek("set", offset)
            else
                -- No seek on this runtime: skip in reads of bounded size.
                local left = offset
                while left > 0 do
                    local n = math.min(left, 65536)
                    h.read(n)
                    left = left - n
                end
            end
        end
        content = h.read(length) or ""
    end
    h.close()
    return { ok = true, content = content, bytes = #content, offset = offset, total = total }
end

-- Moves, deletes, directories and checksums -----------------------------------

-- A refusal's `code`, from the words CC (and the checks below) use for it, so that a caller
-- can tell the cases apart without reading the message: the path leaves the computer
-- (`bad_path`), nothing there (`not_found`), something in the way (`exists`), a read-only
-- mount such as /rom (`read_only`), a full disk (`no_space`), a directory where a file was
-- meant or the other way round (`is_dir`, `not_dir`), a directory with files in it
-- (`not_empty`). CC's own words: FileSystem.java and FileSystemException in CC: Tweaked.
local CODES = {
    { "Invalid Path", "bad_path" }, { "No such file", "not_found" }, { "No such directory", "not_found" },
    { "File exists", "exists" }, { "Access denied", "read_only" }, { "Out of space", "no_space" },
    { "Is a directory", "is_dir" }, { "Not a directory", "not_dir" }, { "Directory not empty", "not_empty" },
}

local function codeOf(err)
    for _, c in ipairs(CODES) do
        if err:find(c[1], 1, true) then return c[2] end
    end
end

local function refuse(err)
    err = tostring(err)
    return { ok = false, error = err, code = codeOf(err) }
end

-- `..` past the root: CC refuses it in every fs call, each in words of its own (or, for
-- fs.exists, with a plain false), so the requests below refuse it first and all alike.
local function escapes(path)
    local p = fs.combine(path, "")
    return p == ".." or p:sub(1, 3) == "../", p
end

local function invalid(path) return refuse("Invalid Path: " .. path) end

--- Move a file or directory. An existing file at `to` is replaced only with `overwrite`,
-- and then with @{moveInto}'s guarantee (never a target that is gone or torn); a directory at
-- `to` is never replaced. Missing parent directories of `to` are created.
-- @tparam string from What to move.
-- @tparam string to Where to.
-- @tparam[opt] boolean overwrite Replace a file at `to`.
-- @treturn table `{ok, error?}`.
function lib.moveFile(from, to, overwrite)
    expect(1, from, "string")
    expect(2, to, "string")
    expect(3, overwrite, "boolean", "nil")
    local badFrom, f = escapes(from)
    local badTo, t = escapes(to)
    if badFrom then return invalid(from) end
    if badTo then return invalid(to) end
    if f == "" or t == "" then return refuse("Access denied: /") end
    -- A write interrupted on either path is finished first, so neither is missing by accident.
    for _, p in ipairs({ f, t }) do
        local rok, rerr = lib.recoverWrite(p)
        if not rok then return refuse(rerr) end
    end
    if not fs.exists(f) then return refuse("No such file: /" .. f) end
    if f == t then return { ok = true } end
    if fs.exists(t) then
        if fs.isDir(t) then return refuse("Is a directory: /" .. t) end
        if not overwrite then return refuse("File exists: /" .. t) end
        if fs.isDir(f) then return refuse("Is a directory: /" .. f) end
        local r = lib.moveInto(f, t)
        return { ok = r.ok, error = r.error, code = r.error and codeOf(r.error) or nil }
    end
    local dir = fs.getDir(t)
    if dir ~= "" and not fs.isDir(dir) then
        if fs.exists(dir) then return refuse("Not a directory: /" .. dir) end
        local ok, err = pcall(fs.makeDir, dir)
        if not ok then return refuse(err) end
    end
    local ok, err = pcall(fs.move, f, t)
    if not ok then return refuse(err) end
    return { ok = true }
end

--- Delete a file or an empty directory; a path that does not exist is already deleted.
-- A directory with anything in it is refused: one request never removes a whole tree.
-- @tparam string path What to delete.
-- @treturn table `{ok, deleted, error?}` (`deleted` false when there was nothing).
function lib.deleteFile(path)
    expect(1, path, "string")
    local bad, p = escapes(path)
    if bad then return invalid(path) end
    if p == "" then return refuse("Access denied: /") end
    local rok, rerr = lib.recoverWrite(p)
    if not rok then return refuse(rerr) end
    if not fs.exists(p) then return { ok = true, deleted = false } end
    if fs.isDir(p) then
        local lok, names = pcall(fs.list, p)
        if not lok then return refuse(names) end
        if #names > 0 then return refuse("Directory not empty: /" .. p) end
    end
    local ok, err = pcall(fs.delete, p)
    if not ok then return refuse(err) end
    return { ok = true, deleted = true }
end

--- Make a directory and any missing parents; one that exists already is fine.
-- @tparam string path The directory.
-- @treturn table `{ok, created, error?}`.
function lib.makeDir(path)
    expect(1, path, "string")
    local bad, p = escapes(path)
    if bad then return invalid(path) end
    if fs.isDir(p) then return { ok = true, created = false } end
    if fs.exists(p) then return refuse("File exists: /" .. p) end
    local ok, err = pcall(fs.makeDir, p)
    if not ok then return refuse(err) end
    return { ok = true, created = true }
end

local crcTable
local function crcTableOf()
    if crcTable then return crcTable end
    local t = {}
    for i = 0, 255 do
        local c = i
        for _ = 1, 8 do
            if bit32.band(c, 1) == 1 then
                c = bit32.bxor(bit32.rshift(c, 1), 0xEDB88320)
            else
                c = bit32.rshift(c, 1)
            end
        end
        t[i] = c
    end
    crcTable = t
    return t
end

--- The IEEE CRC-32 of `bytes` (zlib's `crc32`), continued from `crc` for bytes in pieces.
-- @tparam string bytes The bytes.
-- @tparam[opt] number crc The CRC of the bytes before these (0 for none).
-- @treturn number The CRC, 0 to 2^32 - 1.
function lib.crc32(bytes, crc)
    expect(1, bytes, "string")
    expect(2, crc, "number", "nil")
    local t = crcTableOf()
    local band, bxor, rshift, byte = bit32.band, bit32.bxor, bit32.rshift, string.byte
    local c = bxor(crc or 0, 0xFFFFFFFF)
    for i = 1, #bytes do
        c = bxor(rshift(c, 8), t[band(bxor(c, byte(bytes, i)), 0xFF)])
    end
    return bxor(c, 0xFFFFFFFF)
end

-- When `p` was last changed (ms since the epoch, fs.attributes' `modified`) and whether it is
-- read-only; nil where the runtime does not say (fs.attributes came with CC: Tweaked 1.87).
local function stamp(p)
    local ok, a = pcall(function() return fs.attributes and fs.attributes(p) end)
    local modified = ok and type(a) == "table" and (a.modified or a.modification) or nil
    if type(modified) ~= "number" then modified = nil end
    local rok, ro = pcall(fs.isReadOnly, p)
    if not rok or type(ro) ~= "boolean" then ro = nil end
    return modified, ro
end

--- What is at `path`: whether it exists, its size, whether it is a directory, when it was
-- last modified, whether it is read-only, and a file's CRC-32 (read in pieces of 16 KiB, with
-- `pause` between them).
-- @tparam string path The file or directory.
-- @tparam[opt] function pause Called between pieces (see apis/pace.lua).
-- @treturn table `{ok, exists, size, isDir, modified?, readOnly?, crc32?, error?}`.
function lib.fileInfo(path, pause)
    expect(1, path, "string")
    expect(2, pause, "function", "nil")
    local bad, p = escapes(path)
    if bad then return invalid(path) end
    if not fs.exists(p) then return { ok = true, exists = false, size = 0, isDir = false } end
    local modified, readOnly = stamp(p)
    if fs.isDir(p) then
        return { ok = true, exists = true, size = 0, isDir = true, modified = modified, readOnly = readOnly }
    end
    local h, err = fs.open(p, "rb")
    if not h then return refuse(err or ("Cannot open /" .. p)) end
    local crc, size = 0, 0
    while true do
        local piece = h.read(16384)
        if not piece or piece == "" then break end
        crc = lib.crc32(piece, crc)
        size = size + #piece
        if pause then pause() end
    end
    h.close()
    return { ok = true, exists = true, size = size, isDir = false, crc32 = crc, modified = modified,
        readOnly = readOnly }
end

--- List a directory.
-- @tparam string path The directory.
-- @treturn table `{ok, entries = {{name, dir, size}...}, error?}`, sorted by name.
function lib.listFiles(path)
    expect(1, path, "string")
    if not fs.isDir(path) then
        return { ok = false, error = (fs.exists(path) and "Not a directory: " or "No such directory: ") .. path,
            entries = array() }
    end
    local ok, names = pcall(fs.list, path)
    if not ok then return { ok = false, error = tostring(names), entries = array() } end
    table.sort(names)
    local entries = array()
    for i, name in ipairs(names) do
        local full = fs.combine(path, name)
        local dir = fs.isDir(full)
        entries[i] = { name = name, dir = dir, size = dir and 0 or fs.getSize(full) }
    end
    return { ok = true, entries = entries }
end

return lib
