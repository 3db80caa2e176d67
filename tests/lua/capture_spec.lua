-- capture_spec: print/write/printError capture and executeLua Results.
local lib = dofile(ROOT .. "apis/libmcpcomputer.lua")
local json = dofile(ROOT .. "apis/json.lua")

local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end

-- print joins with tabs and ends with "\n", like CC's bios print.
local pieces = {}
local cap = lib.newCapture(function(stream, text) pieces[#pieces + 1] = stream .. ":" .. text end)
cap.print("a", 1, nil, true)
cap.print()
cap.write("no newline")
cap.write(5)
cap.printError("bad", "x")
eq((cap.text()), "a\t1\tnil\ttrue\n\nno newline5bad\tx\n")
eq(table.concat(pieces, "|"), "out:a\t1\tnil\ttrue\n|out:\n|out:no newline|out:5|err:bad\tx\n")
-- The error stream is kept apart too (a Result's error_output), and only when used.
eq(cap.errorText(), "bad\tx\n")
eq(lib.newCapture().errorText(), nil)
local errs = lib.newCapture(nil, 100)
errs.printError(("e"):rep(20000))
local kept = errs.errorText()
assert(#kept < lib.MAX_ERROR_OUTPUT + 100 and kept:find("trapdesk cut", 1, true), "error output keeps head and tail")
local r0 = lib.executeLua("print('a') printError('oops') return 1")
eq(r0.output, "a\noops\n") eq(r0.error_output, "oops\n")
eq(lib.executeLua("print('a')").error_output, nil, "no error_output without error output")
assert(not pcall(cap.write, {}), "write refuses tables")
eq(cap.print("x\ny"), 2, "print returns lines moved")
local tostr = setmetatable({}, { __tostring = function() return "custom" end })
cap.print(tostr)
assert((cap.text()):find("custom\n$"), "print honours __tostring")

-- Capture limit: the head and the tail are kept around a marker that says how much was
-- left out; the totals and the live callback see everything.
local live = 0
local small = lib.newCapture(function(_, t) live = live + #t end, 10)
small.write("0123456789abc")
local text, truncated = small.text()
eq(text, "01234" .. lib.cutMarker(3) .. "89abc") eq(truncated, true) eq(live, 13)
local bytes, lines, kept = small.totals()
eq(bytes, 13) eq(lines, 1) eq(kept, 10)
small.write("\nend\n")
text = small.text()
eq(text, "01234" .. lib.cutMarker(8) .. "\nend\n")
bytes, lines = small.totals()
eq(bytes, 18) eq(lines, 2)

-- executeLua: returns, output, no screen writes.
local r = lib.executeLua("print('hello', 2) write('x') return 1, nil, 'z'")
eq(r.ok, true) eq(r.output, "hello\t2\nx") eq(r.n, 3) eq(r.output_truncated, false)
eq(json.encode(r.returns), '[{"type":"number","value":1},{"type":"nil"},{"type":"string","value":"z"}]')
assert(type(r.duration_ms) == "number")
r = lib.executeLua("return")
eq(r.n, 0) eq(json.encode(r.returns), "[]")

-- Globals set by a chunk stay in its own environment.
r = lib.executeLua("leaked = 1 return leaked")
eq(r.returns[1].value, 1) eq(rawget(_G, "leaked"), nil, "no global leak")

-- Runtime errors keep the output so far and are ok=false with a traceback.
r = lib.executeLua("print('before') local x = nil; x()")
eq(r.ok, false) eq(r.output, "before\n") eq(r.n, 0) eq(json.encode(r.returns), "[]")
assert(r.error:find('exec:1:', 1, true) == 1, "error names the chunk: " .. r.error)
assert(type(r.traceback) == "string", "traceback present")
r = lib.executeLua("error({code = 1})")
eq(r.ok, false) eq(r.error, "{code=1}", "a table error reads as the console shows it")
eq(r.error_value.type, "table") eq(r.error_value.value.code, 1)
r = lib.executeLua("error(setmetatable({}, {__tostring = function() return 'custom error' end}))")
eq(r.error, "custom error")
r = lib.executeLua("error(42)")
eq(r.error, "exec:1: 42")

-- Tracebacks end at the chunk: no frame of the client that ran it.
r = lib.executeLua("local function f() error('deep') end\nf()")
assert(r.traceback:find("exec:1:", 1, true), r.traceback)
assert(r.traceback:find("exec:2:", 1, true), r.traceback)
assert(not r.traceback:find("apis/run.lua", 1, true), r.traceback)
assert(not r.traceback:find("xpcall", 1, true), r.traceback)
eq(lib.cutTraceback("boom\nstack traceback:\n\t[C]: in ?\n\texec:1: in main chunk\n\t[C]: in function 'xpcall'\n\t/trapdesk/apis/run.lua:9: in function 'run'", "exec"),
    "boom\nstack traceback:\n\t[C]: in ?\n\texec:1: in main chunk")

-- Syntax errors.
r = lib.executeLua("return +")
eq(r.ok, false) eq(r.output, "")
assert(r.error:find('exec:', 1, true) == 1, "syntax error names the chunk: " .. r.error)

-- Output cap 64 KiB in a Result: head and tail, true totals.
r = lib.executeLua("for i = 1, 10000 do print('line ' .. i) end return 'done'")
eq(r.output_truncated, true) eq(r.output_lines, 10000) eq(r.output_kept_bytes, 65536)
assert(r.output:find("^line 1\nline 2\n"), "head kept")
assert(r.output:find("line 9999\nline 10000\n$"), "tail kept")
local total = 0
for i = 1, 10000 do total = total + #("line " .. i .. "\n") end
eq(r.output_bytes, total)
assert(r.output:find(lib.cutMarker(total - 65536), 1, true), "marker states the bytes left out")
r = lib.executeLua("return 1")
eq(r.output_truncated, false) eq(r.output_bytes, 0) eq(r.output_lines, 0)

-- A capture terminal: what is drawn through term becomes lines; red is the err stream.
do
    local got = {}
    local c = lib.newCapture(function(s, t) got[#got + 1] = s .. ":" .. t end)
    local t = lib.newTerm(c)
    t.write("a") t.setCursorPos(1, 2) t.setCursorPos(1, 3) t.write("b")
    t.setTextColour(0x4000) t.write("bad") t.scroll(1) t.setCursorPos(1, 3)
    t.setTextColour(1) t.write("c")
    eq((c.text()), "a\n\nbbad\nc")
    eq(table.concat(got, "|"), "out:a|out:\n|out:\n|out:b|err:bad|err:\n|out:c")
    eq(t.getCursorPos(), 2)
    eq(select("#", t.getSize()), 2)
end

-- A row is captured as it was last seen. CC's read() clears and redraws its whole line on
-- every key (rom bios.lua, `read`: `clear()` writes blanks from where the input starts,
-- `redraw()` writes the line again); replayed here call for call, "\b" a backspace.
do
    local got = {}
    local c = lib.newCapture(function(_, s) got[#got + 1] = s end)
    local t = lib.newTerm(c)
    local function ccRead(typed)
        t.setCursorBlink(true)
        local sx, line = t.getCursorPos(), ""
        local function redraw(clear)
            local _, cy = t.getCursorPos()
            t.setCursorPos(sx, cy)
            t.write(clear and (" "):rep(#line) or line)
            t.setCursorPos(sx + #line, cy)
        end
        redraw()
        for ch in typed:gmatch(".") do
            redraw(true)
            line = ch == "\b" and line:sub(1, -2) or line .. ch
            redraw()
        end
        local _, cy = t.getCursorPos()
        t.setCursorBlink(false)
        t.setCursorPos(52, cy)
        t.setCursorPos(1, cy + 1) -- read's print(), through CC's write
        return line
    end
    c.write("What is your name? ")
    eq(got[1], "What is your name? ", "the prompt goes out while read() waits")
    eq(ccRead("Stx\beve"), "Steve")
    c.print("Hello, Steve")
    eq((c.text()), "What is your name? Steve\nHello, Steve\n")
    c.write("Again? ")
    ccRead("ab\b\b")
    eq((c.text()), "What is your name? Steve\nHello, Steve\nAgain? \n", "nothing typed, nothing kept")

    -- Text drawn over what already went out goes out again, whole, as the row ended.
    c = lib.newCapture()
    t = lib.newTerm(c)
    c.write("Progress: 10%")
    t.setCursorPos(11, 1) t.write("20%") t.setCursorPos(11, 1) t.write("30%")
    c.print()
    t.setCursorPos(5, 2) t.write("x") t.setCursorPos(1, 2) t.write("ab")
    local res = lib.outputFields(c, {})
    eq(res.output, "Progress: 10%\nProgress: 30%\nab  x", "a row still held goes out with the Result")
    eq(res.output_lines, 3)
end

-- printError goes to stream "err".
local streams = {}
r = lib.executeLua("printError('oops')", nil, { onOutput = function(s, t) streams[#streams + 1] = s .. t end })
eq(streams[1], "erroops\n") eq(r.output, "oops\n")

-- Chunks may yield (sleep, pullEvent) through the capture: run one in a coroutine.
local co = coroutine.create(function()
    return lib.executeLua("print('a') local e = coroutine.yield('timer') print(e) return e")
end)
local ok, filter = coroutine.resume(co)
eq(ok, true) eq(filter, "timer")
local ok2, res = coroutine.resume(co, "tick")
eq(ok2, true) eq(res.output, "a\ntick\n") eq(res.returns[1].value, "tick")

-- Newlines are counted without a copy of the text; dense and sparse texts count the same.
eq(lib.countNewlines(""), 0) eq(lib.countNewlines("a"), 0) eq(lib.countNewlines("\n"), 1)
eq(lib.countNewlines(("x"):rep(999) .. "\n" .. ("y"):rep(999) .. "\n"), 2, "sparse")
eq(lib.countNewlines(("ab\n"):rep(5000)), 5000, "dense: one gsub")

-- The kept head and tail match the whole output's first and last bytes, whatever the sizes
-- of the texts (a text longer than the tail's share replaces the tail with its own end).
math.randomseed(8)
for round = 1, 200 do
    local limit = math.random(0, 64)
    local c = lib.newCapture(nil, limit)
    local all, lines = {}, 0
    for i = 1, math.random(0, 12) do
        local size = ({ 0, 1, 3, 10, 31, 32, 33, 100 })[math.random(1, 8)]
        local t = {}
        for k = 1, size do t[k] = math.random() < 0.2 and "\n" or string.char(96 + (i + k) % 26) end
        t = table.concat(t)
        all[#all + 1] = t
        local ret = c.write(t)
        local _, n = t:gsub("\n", "")
        eq(ret, n, "write returns the newlines")
        lines = lines + n
    end
    all = table.concat(all)
    local head, tailShare = math.floor(limit / 2), limit - math.floor(limit / 2)
    local want = all
    if #all > limit then
        want = all:sub(1, head) .. lib.cutMarker(#all - limit) .. (tailShare > 0 and all:sub(-tailShare) or "")
    end
    local got, cut = c.text()
    eq(got, want, "round " .. round .. " (limit " .. limit .. ")")
    eq(cut, #all > limit)
    local b, l, kept = c.totals()
    eq(b, #all) eq(kept, math.min(#all, limit))
    eq(l, lines + ((#all > 0 and all:sub(-1) ~= "\n") and 1 or 0))
end

print("capture_spec: ok")
