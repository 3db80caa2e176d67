--- Capturing what a chunk prints and draws (docs/protocol.md, "Result").
--
-- A capture keeps the head and the tail of a chunk's output with a marker between them,
-- counts everything, and hands every piece on as it comes (live `output` frames); a capture
-- terminal turns what a chunk draws into the capture's text.
--
-- Loading needs no CC API, so this runs under plain Lua 5.2 in the specs.
--
-- @module capture

local lib = {}

--- Bytes of output kept in a Result (docs/protocol.md, "Limits").
lib.MAX_OUTPUT = 65536

--- Bytes of the error stream kept apart in a Result's `error_output` (head and tail).
lib.MAX_ERROR_OUTPUT = 8192

local floor = math.floor
local byte, find = string.byte, string.find
local select, tostring, type = select, tostring, type

-- Argument checks: apis/expect.lua, beside this file.
local here = (debug and debug.getinfo and debug.getinfo(1, "S").source or ""):match("^@(.*/)[^/]*$") or "/trapdesk/apis/"
local expect = dofile(here .. "expect.lua").expect

--- The marker put where output was left out (the host recognises it and replaces it with
-- one that says how to read the rest).
function lib.cutMarker(n)
    expect(1, n, "number")
    return ("\n[… trapdesk cut %d bytes of output here …]\n"):format(n)
end

-- Newlines in a text: plain searches (no copy of the text, as `gsub` makes), or one `gsub`
-- when lines are short enough that searching one by one costs more.
local function countNewlines(text)
    local n, at, most = 0, find(text, "\n", 1, true), #text / 32 + 16
    while at do
        n = n + 1
        if n > most then
            local _, all = text:gsub("\n", "")
            return all
        end
        at = find(text, "\n", at + 1, true)
    end
    return n
end
lib.countNewlines = countNewlines

--- A capture of what a chunk prints.
--
-- `capture.print`, `capture.write` and `capture.printError` behave like CC's
-- globals (print joins its arguments with tabs and ends with "\n";
-- printError prints the same way on stream "err"), but append to the
-- capture instead of drawing. `onOutput(stream, text)` sees every piece as it
-- is produced. The kept text is at most `limit` bytes: its head and its tail
-- (the end is what a reader needs most), with a marker between them saying how
-- many bytes were left out; the totals count everything.
-- What goes to the "err" stream is also kept apart (at most @{MAX_ERROR_OUTPUT}
-- bytes, head and tail), so a Result can say what was an error and what was not.
-- @tparam[opt] function onOutput Called with (stream, text) for each piece.
-- @tparam[opt] number limit Bytes kept (default @{MAX_OUTPUT}).
-- @tparam[opt] boolean oneStream Keep no separate error stream (the error stream's own
-- capture).
-- @treturn table The capture.
function lib.newCapture(onOutput, limit, oneStream)
    expect(1, onOutput, "function", "nil")
    limit = expect(2, limit, "number", "nil") or lib.MAX_OUTPUT
    expect(3, oneStream, "boolean", "nil")
    local errCap = not oneStream and lib.newCapture(nil, lib.MAX_ERROR_OUTPUT, true) or nil
    local headLimit = floor(limit / 2)
    local tailLimit = limit - headLimit
    local head, headSize = {}, 0
    local tail, tailSize = {}, 0
    local bytes, newlines, endsOpen = 0, 0, false
    local cap = {}

    -- A large text is passed over as few times as possible (a chunk printing 1 MB at once
    -- pays for every pass in one go): newlines are counted with plain searches, only the last
    -- `tailLimit` bytes of a long text are cut out for the tail, and the text itself goes on to
    -- `onOutput` as it came.
    local function emit(stream, text)
        local len = #text
        if len == 0 then return 0 end
        bytes = bytes + len
        local n = countNewlines(text)
        newlines = newlines + n
        endsOpen = byte(text, len) ~= 10
        local from = 1 -- the first byte not kept in the head
        if headSize < headLimit then
            local room = headLimit - headSize
            if len <= room then
                head[#head + 1] = text
                headSize = headSize + len
                from = len + 1
            else
                head[#head + 1] = text:sub(1, room)
                headSize = headLimit
                from = room + 1
            end
        end
        local rest = len - from + 1
        if rest >= tailLimit then
            -- Nothing kept before survives this text: keep only its own end.
            local t = text:sub(len - tailLimit + 1)
            tail, tailSize = { t }, #t
        elseif rest > 0 then
            tail[#tail + 1] = from == 1 and text or text:sub(from)
            tailSize = tailSize + rest
            -- Keep at most twice the tail's share, so that a long run does not pile up.
            if tailSize > 2 * tailLimit then
                local t = table.concat(tail):sub(-tailLimit)
                tail, tailSize = { t }, #t
            end
        end
        if errCap and stream == "err" then errCap.emit(stream, text) end
        if onOutput then onOutput(stream, text) end
        return n
    end
    cap.emit = emit

    --- The error stream's kept text, or nil when nothing went to it.
    function cap.errorText()
        if errCap and errCap.totals() > 0 then return (errCap.text()) end
        return nil
    end

    -- Through `put`, which the capture's terminal (@{newTerm}) replaces to follow the cursor.
    cap.put = emit

    function cap.write(text)
        expect(1, text, "string", "number")
        return cap.put("out", tostring(text))
    end

    local function joined(...)
        local n = select("#", ...)
        if n == 1 then return tostring((...)) .. "\n" end -- one copy, not two
        local t = {}
        for i = 1, n do t[i] = tostring((select(i, ...))) end
        return table.concat(t, "\t") .. "\n"
    end

    function cap.print(...)
        return cap.put("out", joined(...))
    end

    function cap.printError(...)
        return cap.put("err", joined(...))
    end

    --- The kept text and whether anything was left out.
    function cap.text()
        local t = table.concat(tail)
        if #t > tailLimit then t = t:sub(-tailLimit) end
        local cut = bytes - headSize - #t
        if cut <= 0 then return table.concat(head) .. t, false end
        return table.concat(head) .. lib.cutMarker(cut) .. t, true
    end

    --- Totals: bytes produced, lines produced (an unfinished last line counts), bytes kept.
    function cap.totals()
        local t = tailSize > tailLimit and tailLimit or tailSize
        return bytes, newlines + ((bytes > 0 and endsOpen) and 1 or 0), headSize + t
    end

    return cap
end

--- The output fields of a Result: the kept text and the true totals.
local function outputFields(cap, result)
    if cap.flush then cap.flush() end -- a row its terminal still holds
    local output, truncated = cap.text()
    local bytes, lines, kept = cap.totals()
    result.output, result.output_truncated = output, truncated
    result.output_bytes, result.output_lines = bytes, lines
    if truncated then result.output_kept_bytes = kept end
    -- The error stream apart, in order within itself; `output` keeps it in its place too.
    result.error_output = cap.errorText and cap.errorText() or nil
    return result
end
lib.outputFields = outputFields

--- A terminal that draws into a capture, for @{term.redirect} while a chunk runs.
--
-- Everything a chunk draws through any API (`term.write`, the global `print`
-- of a program it runs with `shell.run`, `os.run` or `dofile`, `printError`,
-- `blit`) becomes text of the capture, as CC's own multishell gives each tab
-- its own terminal. Moving to the next row is a newline; scrolling is one per
-- row; other cursor moves end the current line when something is on it. Text
-- drawn in red (how `printError` draws on a colour terminal) goes to the
-- "err" stream. The capture's own print/write/printError draw here too, so
-- the cursor is where a program on the computer would find it.
--
-- A row is captured as it was last seen, once: text written at the row's end goes
-- out at once (a prompt is seen while its program waits), but text drawn over
-- the row, or while the cursor blinks (someone types: CC's `read` clears and
-- redraws its whole line on every key, rom `bios.lua`, `read`), waits until
-- the row is left and then goes out as the row ended, trailing blanks dropped.
-- Should the row no longer begin with what went out, it goes out again whole on
-- a line of its own. Rows over 512 bytes go out as drawn.
-- @tparam table cap A capture from @{newCapture}.
-- @tparam[opt] table parent The terminal it stands in for (its size is reported).
-- @treturn table A terminal object.
function lib.newTerm(cap, parent)
    expect(1, cap, "table")
    expect(2, parent, "table", "nil")
    local w, h = 51, 19
    if parent and parent.getSize then
        local ok, a, b = pcall(parent.getSize)
        if ok and type(a) == "number" and type(b) == "number" then w, h = a, b end
    end
    local RED, WHITE, BLACK = 0x4000, 0x1, 0x8000
    local x, y, fg, bg, blink = 1, 1, WHITE, BLACK, false
    -- The row as it looks (`row`, nil once too long to keep) and as it went out (`sent`);
    -- `open` once anything went out on it.
    local row, sent, open = "", "", false
    local emit, t = cap.emit, {}
    cap.term = t -- run.lua's print/write/printError draw through CC's own when it is not current
    local function stream() return fg == RED and "err" or "out" end
    -- `s` went out at the row's end.
    local function went(s)
        if s ~= "" then open = true end
        if row then row = #row + #s <= 512 and row .. s or nil end
        sent, x = row, x + #s
    end
    local function commit()
        if row and row ~= sent then
            local out
            if row:sub(1, #sent) == sent then
                out = row:sub(#sent + 1):gsub(" +$", "")
                row = sent .. out
            else
                row = row:gsub(" +$", "")
                out = "\n" .. row
            end
            emit(stream(), out)
            open = open or out ~= ""
            sent = row
        end
    end
    cap.flush = commit
    -- The capture's own print/write/printError: after what the row holds, and the cursor
    -- left where CC's `write` would leave it (without wrapping).
    function cap.put(st, s)
        commit()
        local n = emit(st, s)
        local at = n > 0 and find(s, "\n[^\n]*$")
        if at then row, x, y, open, s = "", 1, math.min(y + n, h), false, s:sub(at + 1) end
        went(s)
        return n
    end
    local function newline()
        commit()
        emit(stream(), "\n")
        row, sent, open = "", "", false
    end
    function t.write(s)
        s = tostring(s)
        local n = #s
        if row and (x < 1 or x + n > 513) then commit() row = nil end
        if row and (blink or row ~= sent or x ~= #row + 1) then
            row, x = (row .. (" "):rep(x - 1 - #row)):sub(1, x - 1) .. s .. row:sub(x + n), x + n
        else
            emit(stream(), s)
            went(s)
        end
    end
    function t.blit(text, _, _) t.write(text) end
    function t.setCursorPos(nx, ny)
        nx, ny = floor(tonumber(nx) or x), floor(tonumber(ny) or y)
        if ny == y + 1 or (ny ~= y and (open or row ~= "")) then newline() end
        x, y = nx, ny
    end
    function t.getCursorPos() return x, y end
    function t.scroll(n)
        n = tonumber(n) or 0
        -- The text moves up; the cursor stays on its row, as on a real terminal.
        for _ = 1, n do newline() end
    end
    function t.clear() if open or row ~= "" then newline() end end
    function t.clearLine() if row then row = (" "):rep(#row) end end
    function t.getSize() return w, h end
    function t.setCursorBlink(b) blink = b and true or false end
    function t.getCursorBlink() return blink end
    function t.isColour() return true end
    function t.setTextColour(c) fg = c end
    function t.getTextColour() return fg end
    function t.setBackgroundColour(c) bg = c end
    function t.getBackgroundColour() return bg end
    function t.setPaletteColour() end
    function t.getPaletteColour(c)
        if parent and parent.getPaletteColour then return parent.getPaletteColour(c) end
        return 1, 1, 1
    end
    t.isColor, t.setTextColor, t.getTextColor = t.isColour, t.setTextColour, t.getTextColour
    t.setBackgroundColor, t.getBackgroundColor = t.setBackgroundColour, t.getBackgroundColour
    t.setPaletteColor, t.getPaletteColor = t.setPaletteColour, t.getPaletteColour
    return t
end

return lib
