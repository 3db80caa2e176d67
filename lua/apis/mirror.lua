--- The terminal mirror: records what the computer's own screen shows.
--
-- `mirror.install(native)` wraps the drawing functions of the native terminal
-- (`term.native()`) in place. Every window, multishell tab and redirect ends in
-- calls on that one table, so the record holds every cell the player sees:
-- character, text and background colour (blit digits), the palette, cursor and
-- blink, and the size. Each wrapper calls the original first, so the player sees
-- exactly what they saw before, and an error (a bad colour, say) is raised before
-- anything is recorded. Installing again (a new instance of the screen server)
-- wraps the originals, never a wrapper.
--
-- Cells drawn before the install are unknown and recorded as blank: the native
-- terminal has no way to read them back. The record knows which cells they are (see
-- `install`); only a monitor's shadow sends that.
--
-- Row text is sent as UTF-8 of the Latin-1 reading of each byte, so that one CC
-- character (0-255) is one character on the host whatever the byte-string rule of
-- the wire does with invalid UTF-8.

local mirror = {}

local HEX = "0123456789abcdef"
local floor = math.floor

-- The colour index CC: Tweaked uses: the highest set bit (TermMethods.parseColour and
-- getHighestBit in CC: Tweaked's projects/core/src/main/java/dan200/computercraft/core/apis/
-- TermMethods.java, lines 22-25 and 335-339), so 3 is
-- colour 1 and 6 is colour 2, where a rounded log2 would say 2 and 3. The original already
-- refused anything below 1 or above 0xFFFF.
local function bitIndex(colour)
    local n, i = floor(colour), -1
    while n >= 1 do
        n = floor(n / 2)
        i = i + 1
    end
    return i
end

local function digit(colour)
    local i = bitIndex(colour)
    return HEX:sub(i + 1, i + 1)
end

local function latin1ToUtf8(s)
    return (s:gsub("[\128-\255]", function(c)
        local b = c:byte()
        return string.char(0xC0 + floor(b / 64), 0x80 + b % 64)
    end))
end
mirror.latin1ToUtf8 = latin1ToUtf8

--- A new record of `native`'s screen, wrapping it. Returns the record.
--
-- Beside each cell's character and colours the record keeps whether it is *known*: drawn
-- through the wrappers since the install (`clear` knows every cell, `clearLine` its row,
-- `write`/`blit` the cells written, `scroll` moves knowledge with the text and the new rows
-- are known, a resize keeps what fits and the new cells are unknown). With `track` (a
-- monitor's shadow, apis/peripherals.lua) each row whose cells are not all known carries
-- `known`: one "1" (known) or "0" (unknown) per cell, and a resize clears every cell (known
-- blank), as CC: Tweaked clears a monitor whose size changes (ServerMonitor.java, `rebuild`).
function mirror.install(native, track)
    local orig = rawget(native, "__trapdeskOriginal")
    if not orig then
        orig = {}
        for k, v in pairs(native) do orig[k] = v end
        native.__trapdeskOriginal = orig
    end

    local rec = { dirty = {}, full = true, seq = 0 }
    local W, H = orig.getSize()
    -- The layers, each a list of row strings of one byte per cell: text, fg, bg and, with
    -- `track` only (it costs every write a string more), known.
    local L = { {}, {}, {}, {} }
    local NL = track and 4 or 3
    local cx, cy = orig.getCursorPos()
    local blink = orig.getCursorBlink and orig.getCursorBlink() or false
    local tc = digit(orig.getTextColour and orig.getTextColour() or 1)
    local bc = digit(orig.getBackgroundColour and orig.getBackgroundColour() or 32768)
    local palette = {}
    local isColour = orig.isColour and orig.isColour() or false

    local function readPalette(i)
        if not orig.getPaletteColour then return end
        local ok, r, g, b = pcall(orig.getPaletteColour, 2 ^ i)
        if ok and type(r) == "number" then
            palette[i + 1] = ("%02x%02x%02x"):format(floor(r * 255 + 0.5), floor(g * 255 + 0.5), floor(b * 255 + 0.5))
        end
    end
    for i = 0, 15 do readPalette(i) end

    --- Row `y` of the layers `T`: `w` blank cells in the current colours, known `k` ("1"/"0").
    -- Without `w`, the fills themselves (one cell of each layer).
    local function blank(T, y, w, k)
        local f = { " ", tc, bc, k }
        for i = 1, NL do T[i][y] = f[i]:rep(w or 1) end
    end

    local function mark(y) rec.dirty[y] = true rec.changed = true end
    local function moved() rec.changed = true rec.cursorMoved = true end

    for y = 1, H do blank(L, y, W, "0") end

    local checkSize -- forward: a draw outside the recorded size may mean the terminal grew

    --- Cells `from`..`to` of row `y` of layer `i` become `seg`.
    local function splice(i, y, from, to, seg)
        local row = L[i][y]
        L[i][y] = row:sub(1, from - 1) .. seg .. row:sub(to + 1)
    end

    local function put(s, f, b)
        local n = #s
        local y = cy
        if n > 0 and (y > H or cx + n - 1 > W) and y >= 1 then checkSize() end
        if y >= 1 and y <= H and n > 0 then
            local x1, x2 = cx, cx + n - 1
            if x2 >= 1 and x1 <= W then
                local from, to = math.max(x1, 1), math.min(x2, W)
                local a, z, m = from - x1 + 1, to - x1 + 1, to - from + 1
                splice(1, y, from, to, s:sub(a, z))
                splice(2, y, from, to, f and f:sub(a, z):lower() or tc:rep(m))
                splice(3, y, from, to, b and b:sub(a, z):lower() or bc:rep(m))
                if track then splice(4, y, from, to, ("1"):rep(m)) end
                mark(y)
            end
        end
        cx = cx + n
        moved()
    end

    local function clearRow(y)
        if y > H then checkSize() end
        if y >= 1 and y <= H then
            blank(L, y, W, "1")
            mark(y)
        end
    end

    local wrap = {}
    function wrap.write(s)
        orig.write(s)
        put(tostring(s))
    end
    function wrap.blit(s, f, b)
        orig.blit(s, f, b)
        put(s, f, b)
    end
    function wrap.clear()
        orig.clear()
        checkSize()
        for y = 1, H do clearRow(y) end
    end
    function wrap.clearLine()
        orig.clearLine()
        clearRow(cy)
    end
    function wrap.scroll(n)
        orig.scroll(n)
        n = floor(n)
        if n == 0 then return end
        local N = { {}, {}, {}, {} }
        for y = 1, H do
            local from = y + n
            if from >= 1 and from <= H then
                for i = 1, NL do N[i][y] = L[i][from] end
            else
                blank(N, y, W, "1")
            end
            rec.dirty[y] = true
        end
        L = N
        rec.changed = true
    end
    function wrap.setCursorPos(x, y)
        orig.setCursorPos(x, y)
        cx, cy = floor(x), floor(y)
        moved()
    end
    function wrap.setCursorBlink(on)
        orig.setCursorBlink(on)
        blink = on and true or false
        moved()
    end
    local function setText(c) tc = digit(c) end
    local function setBack(c) bc = digit(c) end
    for _, name in ipairs({ "setTextColour", "setTextColor" }) do
        if orig[name] then wrap[name] = function(c) orig[name](c) setText(c) end end
    end
    for _, name in ipairs({ "setBackgroundColour", "setBackgroundColor" }) do
        if orig[name] then wrap[name] = function(c) orig[name](c) setBack(c) end end
    end
    for _, name in ipairs({ "setPaletteColour", "setPaletteColor" }) do
        if orig[name] then
            wrap[name] = function(c, ...)
                orig[name](c, ...)
                readPalette(bitIndex(c))
                rec.paletteChanged = true
                rec.changed = true
            end
        end
    end
    -- A monitor's text scale changes its size in cells (CC: Tweaked's MonitorPeripheral).
    if orig.setTextScale then
        function wrap.setTextScale(s)
            orig.setTextScale(s)
            checkSize()
        end
    end
    for k, f in pairs(wrap) do
        if orig[k] then native[k] = f end
    end
    rec.wrappers = wrap

    --- Follows a resize as CC does: on a terminal what fits stays and new cells are blank in
    -- the current colours (and unknown); a monitor is cleared (ServerMonitor.java, `rebuild`,
    -- line 52: `terminal.clear()` when the size changed). The next take is a full frame.
    -- Called on `term_resize` (which only reaches the top-level programs: multishell keeps it
    -- from its tabs), before every frame, on every watched tick, and when something is drawn
    -- outside the recorded size.
    checkSize = function()
        local w, h = orig.getSize()
        if w == W and h == H then return false end
        local F = { {}, {}, {}, {} }
        blank(F, 1, nil, "0")
        for y = 1, h do
            if track or y > H then
                -- New cells are unknown; a monitor is cleared, so its cells are all known blank.
                blank(L, y, w, track and "1" or "0")
            else
                for i = 1, NL do
                    local row = L[i][y]
                    L[i][y] = w < W and row:sub(1, w) or row .. F[i][1]:rep(w - W)
                end
            end
        end
        for y = h + 1, H do for i = 1, NL do L[i][y] = nil end end
        W, H = w, h
        rec.dirty = {}
        rec.full = true
        rec.changed = true
        return true
    end
    rec.checkSize = checkSize

    --- Another computer drew on the screen (a shared monitor): every cell becomes unknown, and
    -- the cursor is where it really is (`x`, `y`).
    function rec.forget(x, y)
        for r = 1, H do
            L[4][r] = ("0"):rep(W)
            mark(r)
        end
        cx, cy = x, y
        moved()
    end

    local function rowsOf(all)
        local rows = {}
        for y = 1, H do
            if all or rec.dirty[y] then
                local k = L[4][y]
                rows[#rows + 1] = { y = y, text = latin1ToUtf8(L[1][y]), fg = L[2][y], bg = L[3][y],
                    known = track and k:find("0") and k or nil }
            end
        end
        return rows
    end

    --- The message body for the host: everything (`full`) or what changed since the last
    -- take. Returns nil when nothing changed. Resets the change marks.
    function rec.take(full)
        if not full and not rec.changed then return nil end
        full = full or rec.full
        rec.seq = rec.seq + 1
        local msg = {
            seq = rec.seq, full = full, width = W, height = H,
            cursor = { x = cx, y = cy, blink = blink },
            colour = isColour, rows = rowsOf(full),
        }
        if full or rec.paletteChanged then
            local p = {}
            for i = 1, 16 do p[i] = palette[i] or "000000" end
            msg.palette = p
        end
        rec.dirty, rec.changed, rec.full, rec.paletteChanged, rec.cursorMoved = {}, false, false, false, false
        return msg
    end

    --- The recorded rows (raw bytes: text, fg, bg, known), for tests.
    function rec.rows() return L[1], L[2], L[3], L[4] end
    function rec.cursor() return cx, cy, blink end

    return rec
end

--- Restores the original functions of `native`, unless a newer record (another instance)
-- has wrapped them since `rec` did.
function mirror.uninstall(native, rec)
    local orig = rawget(native, "__trapdeskOriginal")
    if not orig or (rec and native.write ~= rec.wrappers.write) then return end
    for k, v in pairs(orig) do native[k] = v end
    native.__trapdeskOriginal = nil
end

return mirror
